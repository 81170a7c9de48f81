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
  pipeline.runTo("XnnpackPartitioner");
  if (pipeline.failed()) {
    const PassRecord& r = pipeline.records()[pipeline.position() - 1];
    err << "error: " << file << ": lowering failed in " << r.name;
    for (const auto& d : r.diagnostics) err << "\n  " << d.message;
    err << "\n";
    return kPassFailed;
  }
  // The program the partitioner saw, partitioned again for the constants each partition takes.
  std::shared_ptr<const Program> before = pipeline.snapshot(pipeline.position() - 1);
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
    methods.push_back({{"name", m.name}, {"partitions", parts}, {"not_delegated", left}});
  }
  if (json) out << jsonText({{"file", file}, {"methods", methods}}) << "\n";
  return kOk;
}

}  // namespace lstudio::cli
