// lowering-cli partition: what XnnpackPartitioner takes from a program and why it leaves
// the rest, as to_edge_transform_and_lower would partition it.
#include <nlohmann/json.hpp>
#include <map>
#include <ostream>

#include "app/Cli.h"
#include "app/CliCommon.h"
#include "engine/formats/OpenProgram.h"
#include "engine/lowering/Pipeline.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"

namespace lstudio::cli {
namespace {

std::string opOf(const Method& m, const Node& n) {
  return n.kind == NodeKind::Kernel && n.op >= 0 ? m.operators[n.op].fullName() : std::string(nodeKindName(n.kind));
}

std::string constantName(const Method& m, ValueId v) {
  const TensorSpec* t = m.values[v].tensorIf();
  return t && !t->fqn.empty() ? t->fqn : m.values[v].name;
}

/// The graph to_backend left: each node's operator in order, a delegate call as the values
/// it reads and writes, with its lowered module's operators and the weights it took.
nlohmann::json loweredGraph(const Method& m, std::ostream* text) {
  nlohmann::json graph = nlohmann::json::array();
  size_t calls = 0, left = 0;
  for (const Node& n : m.nodes) {
    if (n.kind != NodeKind::Delegate || n.delegate < 0) {
      graph.push_back({{"op", opOf(m, n)}});
      ++left;
      continue;
    }
    const Delegate& d = m.delegates[n.delegate];
    nlohmann::json ops = nlohmann::json::array();
    size_t weights = 0;
    if (d.original && !d.original->methods.empty()) {
      const Method& lm = d.original->methods.front();
      for (const Node& x : lm.nodes) ops.push_back(opOf(lm, x));
      for (const InputSpec& in : lm.signature.inputs) weights += in.kind != InputSpec::Kind::User;
    }
    graph.push_back({{"delegate", d.backendId}, {"name", n.name}, {"reads", n.args.size() - n.outputs.size()},
                     {"writes", n.outputs.size()}, {"weights", weights}, {"ops", ops}});
    ++calls;
    if (text)
      *text << "    " << n.name << ": " << d.backendId << ", " << ops.size() << " operators, reads "
            << n.args.size() - n.outputs.size() << " values and " << weights << " weights of its own, writes "
            << n.outputs.size() << "\n";
  }
  if (text) *text << "  after to_backend: " << calls << " delegate call(s), " << left << " node(s) left\n";
  return graph;
}

}  // namespace

int partitionCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string file, configPath, etrecord;
  std::vector<std::string> settings;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") json = true;
    else if ((a == "--config" || a == "--set" || a == "--etrecord") && i + 1 < args.size())
      (a == "--config" ? configPath : a == "--etrecord" ? etrecord : settings.emplace_back()) = args[++i];
    else if (a.empty() || a[0] == '-' || !file.empty())
      return err << "lowering-cli partition: bad argument near '" << a << "'\n" << commandUsage("partition"), kUsage;
    else file = a;
  }
  if (file.empty()) return err << "lowering-cli partition: missing FILE\n" << commandUsage("partition"), kUsage;
  auto program = openProgramFile(file);
  if (!program) return err << "error: " << program.error().message() << "\n", kBadFile;
  if (int rc = linkEtRecordArg(program.value(), etrecord, err); rc != kOk) return rc;
  auto loaded = configFor(&program.value(), configPath, settings);
  if (!loaded) return err << "error: " << loaded.error().message() << "\n", kBadFile;
  ExecutorchBackendConfig config = loaded.value();
  if (config.partitioners.empty()) config.partitioners.push_back(PartitionerSpec{});

  Pipeline pipeline(std::make_shared<const Program>(std::move(program.value())), config);
  pipeline.runTo("to_backend");
  if (pipeline.failed()) {
    const PassRecord& r = pipeline.records()[pipeline.position() - 1];
    err << "error: " << file << ": lowering failed in " << r.name;
    for (const auto& d : r.diagnostics) err << "\n  " << d.message;
    err << "\n";
    return kPassFailed;
  }
  // The program the partitioner saw, partitioned again for the constants each partition takes,
  // and the one to_backend made of it.
  std::shared_ptr<const Program> before = pipeline.snapshot(pipeline.position() - 2);
  std::shared_ptr<const Program> lowered = pipeline.current();
  nlohmann::json methods = nlohmann::json::array();
  for (const Method& m : before->methods) {
    if (m.isConstantGetter()) continue;
    XnnpackPartitioning r = partitionForXnnpack(m, config.partitioners.front());
    nlohmann::json parts = nlohmann::json::array(), left = nlohmann::json::array();
    if (!json) out << "method " << m.name << ": " << r.partitions.size() << " partition(s)\n";
    for (const XnnpackPartition& p : r.partitions) {
      nlohmann::json nodes = nlohmann::json::array(), constants = nlohmann::json::array();
      std::map<std::string, int> ops;
      for (int i : p.nodes) {
        nodes.push_back({{"index", i}, {"name", m.nodes[i].name}, {"op", opOf(m, m.nodes[i])}, {"config", r.configOf[i]}});
        ++ops[opOf(m, m.nodes[i])];
      }
      for (ValueId v : p.constants) constants.push_back(constantName(m, v));
      parts.push_back({{"tag", p.tag}, {"nodes", nodes}, {"constants", constants}});
      if (json) continue;
      out << "  " << p.tag << ": " << p.nodes.size() << " operators, " << p.constants.size() << " constants (";
      bool first = true;
      for (const auto& [op, count] : ops) out << (first ? "" : ", ") << op << " x" << count, first = false;
      out << ")\n";
      for (int i : p.nodes) out << "    " << m.nodes[i].name << "  " << opOf(m, m.nodes[i]) << "  [" << r.configOf[i] << "]\n";
    }
    size_t leftOut = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (r.partitionOf[i] >= 0) continue;
      ++leftOut;
      left.push_back({{"index", i}, {"name", m.nodes[i].name}, {"op", opOf(m, m.nodes[i])}, {"reason", r.reasonOf[i]}});
    }
    if (!json && leftOut) {
      out << "  not delegated: " << leftOut << " node(s)\n";
      for (const auto& l : left)
        out << "    " << l["name"].get<std::string>() << "  " << l["op"].get<std::string>() << ": "
            << l["reason"].get<std::string>() << "\n";
    }
    nlohmann::json graph;
    if (const Method* lm = lowered->method(m.name)) graph = loweredGraph(*lm, json ? nullptr : &out);
    methods.push_back({{"name", m.name}, {"partitions", parts}, {"not_delegated", left}, {"lowered", graph}});
  }
  if (json) out << jsonText({{"file", file}, {"methods", methods}}) << "\n";
  return kOk;
}

}  // namespace lstudio::cli
