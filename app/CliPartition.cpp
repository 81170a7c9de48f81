// lowering-cli partition: what XnnpackPartitioner takes from a program and why it leaves
// the rest, as to_edge_transform_and_lower would partition it.
#include <nlohmann/json.hpp>
#include <map>
#include <ostream>

#include "app/Cli.h"
#include "app/CliCommon.h"
#include "engine/formats/OpenProgram.h"
#include "engine/lowering/ConfigPython.h"
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

/// What one partitioner takes from a method's graph as it stands, and why it leaves the rest.
nlohmann::json partitionReport(const Method& m, const PartitionerSpec& spec, std::ostream* text) {
  XnnpackPartitioning r = partitionForXnnpack(m, spec);
  nlohmann::json parts = nlohmann::json::array(), left = nlohmann::json::array();
  if (text) *text << r.partitions.size() << " partition(s)\n";
  for (const XnnpackPartition& p : r.partitions) {
    nlohmann::json nodes = nlohmann::json::array(), constants = nlohmann::json::array();
    std::map<std::string, int> ops;
    for (int i : p.nodes) {
      nodes.push_back({{"index", i}, {"name", m.nodes[i].name}, {"op", opOf(m, m.nodes[i])}, {"config", r.configOf[i]}});
      ++ops[opOf(m, m.nodes[i])];
    }
    for (ValueId v : p.constants) constants.push_back(constantName(m, v));
    parts.push_back({{"tag", p.tag}, {"nodes", nodes}, {"constants", constants}});
    if (!text) continue;
    *text << "  " << p.tag << ": " << p.nodes.size() << " operators, " << p.constants.size() << " constants (";
    bool first = true;
    for (const auto& [op, count] : ops) *text << (first ? "" : ", ") << op << " x" << count, first = false;
    *text << ")\n";
    for (int i : p.nodes) *text << "    " << m.nodes[i].name << "  " << opOf(m, m.nodes[i]) << "  [" << r.configOf[i] << "]\n";
  }
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (r.partitionOf[i] < 0)
      left.push_back({{"index", i}, {"name", m.nodes[i].name}, {"op", opOf(m, m.nodes[i])}, {"reason", r.reasonOf[i]}});
  if (text && !left.empty()) {
    *text << "  not delegated: " << left.size() << " node(s)\n";
    for (const auto& l : left)
      *text << "    " << l["name"].get<std::string>() << "  " << l["op"].get<std::string>() << ": "
            << l["reason"].get<std::string>() << "\n";
  }
  return {{"partitions", parts}, {"not_delegated", left}};
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
  const size_t rounds = config.partitioners.size();
  pipeline.runTo(partitionRoundName("to_backend", rounds - 1));
  if (pipeline.failed()) {
    const PassRecord& r = pipeline.records()[pipeline.position() - 1];
    err << "error: " << file << ": lowering failed in " << r.name;
    for (const auto& d : r.diagnostics) err << "\n  " << d.message;
    err << "\n";
    return kPassFailed;
  }
  // Per partitioner (one to_backend round each), the program it saw, partitioned again for
  // the constants each partition takes; then the one the last to_backend made.
  std::vector<std::shared_ptr<const Program>> seen;
  for (size_t k = 0; k < rounds; ++k)
    for (size_t i = 0; i < pipeline.records().size(); ++i)
      if (pipeline.records()[i].name == partitionRoundName("XnnpackPartitioner", k)) seen.push_back(pipeline.snapshot(i));
  std::shared_ptr<const Program> lowered = pipeline.current();
  nlohmann::json methods = nlohmann::json::array();
  for (const Method& first : seen.front()->methods) {
    if (first.isConstantGetter()) continue;
    nlohmann::json roundsJson = nlohmann::json::array();
    for (size_t k = 0; k < seen.size(); ++k) {
      const Method* m = seen[k]->method(first.name);
      if (!m) continue;
      if (!json)
        out << "method " << m->name
            << (rounds > 1 ? ", partitioner " + std::to_string(k + 1) + " of " + std::to_string(rounds) + " (" +
                                 partitionerToPython(config.partitioners[k]) + ")"
                           : std::string())
            << ": ";
      roundsJson.push_back(partitionReport(*m, config.partitioners[k], json ? nullptr : &out));
    }
    nlohmann::json graph;
    if (const Method* lm = lowered->method(first.name)) graph = loweredGraph(*lm, json ? nullptr : &out);
    methods.push_back({{"name", first.name}, {"rounds", roundsJson}, {"lowered", graph}});
  }
  if (json) out << jsonText({{"file", file}, {"methods", methods}}) << "\n";
  return kOk;
}

}  // namespace lstudio::cli
