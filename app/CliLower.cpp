// lowering-cli config, lower and export: the config a program is lowered under, the
// passes run one by one, and the program written as a .pte.
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <ostream>

#include "app/Cli.h"
#include "app/CliCommon.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/lowering/ConfigPython.h"
#include "engine/lowering/Delower.h"
#include "engine/lowering/Export.h"
#include "engine/lowering/GraphDiff.h"
#include "engine/lowering/GraphText.h"
#include "engine/lowering/Pipeline.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/planning/MemoryPlanAnalysis.h"

namespace lstudio::cli {

Result<ExecutorchBackendConfig> configFor(const Program* program, const std::string& configPath,
                                          const std::vector<std::string>& settings) {
  auto config = configPath.empty() && program && program->format == SourceFormat::Pte ? configMatching(*program)
                                                                                      : loadConfigFile(configPath);
  // An ETRecord recorded before partitioning is lowered with the partitioner that delegated it.
  if (config && configPath.empty() && program && config.value().partitioners.empty())
    config.value().partitioners = recordedPartitioners(*program);
  for (const std::string& s : settings) {
    if (!config) break;
    config = applySetting(config.value(), s);
  }
  return config;
}

Result<ExecutorchBackendConfig> configFor(const Program& program, const std::string& configPath,
                                          const std::vector<std::string>& settings = {}) {
  return configFor(&program, configPath, settings);
}

/// `config [FILE] [--config CFG.json] [--set KEY=VALUE]... [--python]`: the config a
/// command would run under, as JSON or as ExecuTorch Python (the studio's Copy as Python).
int configCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string file, configPath;
  std::vector<std::string> settings;
  bool python = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--python") {
      python = true;
    } else if ((a == "--config" || a == "--set") && i + 1 < args.size()) {
      (a == "--config" ? configPath : settings.emplace_back()) = args[++i];
    } else if (a.empty() || a[0] == '-' || !file.empty()) {
      err << "lowering-cli config: bad argument near '" << a << "'\n" << kUsageText;
      return kUsage;
    } else {
      file = a;
    }
  }
  std::optional<Program> program;
  if (!file.empty()) {
    auto p = openProgramFile(file);
    if (!p) return err << "error: " << p.error().message() << "\n", kBadFile;
    program = std::move(p.value());
  }
  auto config = configFor(program ? &*program : nullptr, configPath, settings);
  if (!config) return err << "error: " << config.error().message() << "\n", kBadFile;
  out << (python ? configToPython(config.value()) : configToJson(config.value()));
  return kOk;
}

/// Runs every pass; on a failure prints the pass and its diagnostics and returns null.
std::shared_ptr<const Program> lowerToEnd(std::shared_ptr<const Program> program, const ExecutorchBackendConfig& config,
                                          const std::string& file, std::ostream& err) {
  Pipeline pipeline(std::move(program), config);
  pipeline.runToEnd();
  if (!pipeline.failed()) return pipeline.current();
  const PassRecord& r = pipeline.records()[pipeline.position() - 1];
  err << "error: " << file << ": lowering failed in " << r.name;
  for (const auto& d : r.diagnostics) err << "\n  " << d.message;
  err << "\n";
  return nullptr;
}

namespace {
/// The lines of `after` that differ from `before`, as a diff of their text:
/// removed nodes (-), added ones (+), changed ones (- old, + new).
void printMethodDiff(const Method& before, const Method& after, std::ostream& out) {
  MethodDiff d = diffMethods(before, after);
  out << "method " << after.name << ": " << d.added << " added, " << d.removed.size() << " removed, " << d.modified
      << " changed\n";
  for (int r : d.removed) out << "  - " << nodeLine(before, size_t(r)) << "\n";
  for (size_t i = 0; i < after.nodes.size(); ++i) {
    if (d.after[i] == MethodDiff::Mark::Same) continue;
    if (d.after[i] == MethodDiff::Mark::Modified && d.matchOf[i] >= 0)
      out << "  - " << nodeLine(before, size_t(d.matchOf[i])) << "\n";
    out << "  + " << nodeLine(after, i) << "\n";
  }
}
}  // namespace

int lowerCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string file, configPath, stopAfter, etrecord;
  bool all = false, changed = false, diff = false, timings = false, json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--list-passes") {
      for (const auto& p : defaultPasses()) out << p->name() << "  " << p->description() << "\n";
      return kOk;
    }
    bool ok = true;
    if (a == "--config") ok = i + 1 < args.size() && !(configPath = args[++i]).empty();
    else if (a == "--stop-after") ok = i + 1 < args.size() && !(stopAfter = args[++i]).empty();
    else if (a == "--etrecord") ok = i + 1 < args.size() && !(etrecord = args[++i]).empty();
    else if (a == "--print-after-all") all = true;
    else if (a == "--print-after-change") changed = true;
    else if (a == "--print-diff") diff = true;
    else if (a == "--timings") timings = true;
    else if (a == "--json") json = true;
    else if (!a.empty() && a[0] == '-') ok = false;
    else if (file.empty()) file = a;
    else ok = false;
    if (!ok) {
      err << "lowering-cli lower: bad argument near '" << a << "'\n" << kUsageText;
      return kUsage;
    }
  }
  if (file.empty()) {
    err << "lowering-cli lower: missing FILE\n" << kUsageText;
    return kUsage;
  }
  auto program = openProgramFile(file);
  if (!program) return err << "error: " << program.error().message() << "\n", kBadFile;
  if (int rc = linkEtRecordArg(program.value(), etrecord, err); rc != kOk) return rc;
  auto loaded = configFor(program.value(), configPath);
  if (!loaded) return err << "error: " << loaded.error().message() << "\n", kBadFile;
  const ExecutorchBackendConfig& config = loaded.value();
  Pipeline pipeline(std::make_shared<const Program>(std::move(program.value())), config);
  if (!stopAfter.empty()) {
    bool known = false;
    for (const auto& r : pipeline.records()) known = known || r.name == stopAfter;
    if (!known) return err << "lowering-cli lower: no pass named '" << stopAfter << "' (see --list-passes)\n", kUsage;
  }
  nlohmann::json passes = nlohmann::json::array();
  while (!pipeline.atEnd()) {
    std::shared_ptr<const Program> before = pipeline.current();
    bool ok = pipeline.step();
    const PassRecord& r = pipeline.records()[pipeline.position() - 1];
    nlohmann::json diags = nlohmann::json::array();
    for (const auto& d : r.diagnostics) diags.push_back(d.message);
    passes.push_back({{"name", r.name}, {"state", passStateName(r.state)}, {"ms", r.milliseconds}, {"diagnostics", diags}});
    if (!json) {
      out << "[" << pipeline.position() << "/" << pipeline.records().size() << "] " << r.name << ": " << passStateName(r.state);
      if (timings) out << " (" << r.milliseconds << " ms)";
      out << "\n";
      for (const auto& d : r.diagnostics) out << "    " << d.message << "\n";
      if (r.after && (all || (changed && r.state == PassRecord::State::Changed)))
        for (const Method& m : r.after->methods) out << graphText(m);
      else if (r.after && diff && r.state == PassRecord::State::Changed) {
        for (size_t k = 0; k < r.after->methods.size(); ++k) {
          const Method* was = before ? before->method(r.after->methods[k].name) : nullptr;
          if (was) printMethodDiff(*was, r.after->methods[k], out);
          else out << graphText(r.after->methods[k]);
        }
      }
    }
    if (!ok && pipeline.failed()) {
      if (json) out << jsonText({{"file", file}, {"passes", passes}, {"failed", r.name}}) << "\n";
      else err << "error: " << file << ": pass " << r.name << " failed\n";
      return kPassFailed;
    }
    if (!stopAfter.empty() && r.name == stopAfter) break;
  }
  auto result = pipeline.current();
  nlohmann::json methods = nlohmann::json::array();
  for (const Method& m : result->methods) {
    MemoryPlanReport plan = analyzeMemoryPlan(m);
    nlohmann::json arenas = nlohmann::json::array();
    for (const auto& a : plan.arenas)
      arenas.push_back({{"mem_id", a.memId}, {"size", a.size}, {"lower_bound", a.lowerBound}, {"tensors", a.tensors}});
    methods.push_back({{"name", m.name}, {"nodes", m.nodes.size()}, {"arenas", arenas}});
    if (!json) {
      out << "method " << m.name << ": " << m.nodes.size() << " nodes";
      for (const auto& a : plan.arenas)
        out << "; mem_id " << a.memId << " arena " << a.size << " bytes, lower bound " << a.lowerBound << ", "
            << a.tensors << " planned tensors";
      out << "\n";
    }
  }
  if (json) out << jsonText({{"file", file}, {"passes", passes}, {"methods", methods}}) << "\n";
  return kOk;
}

int exportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string file, output, configPath, ptdDir, etrecord;
  std::vector<std::string> ptds, settings;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](std::string& into) { return i + 1 < args.size() && !(into = args[++i]).empty(); };
    std::string v;
    bool ok = true;
    if (a == "-o" || a == "--output") ok = next(output);
    else if (a == "--config") ok = next(configPath);
    else if (a == "--ptd-dir") ok = next(ptdDir);
    else if (a == "--etrecord") ok = next(etrecord);
    else if (a == "--ptd") ok = next(v), ptds.push_back(v);
    else if (a == "--set") ok = next(v), settings.push_back(v);
    else if (!a.empty() && a[0] == '-') ok = false;
    else if (file.empty()) file = a;
    else ok = false;
    if (!ok) {
      err << "lowering-cli export: bad argument near '" << a << "'\n" << kUsageText;
      return kUsage;
    }
  }
  if (file.empty() || output.empty()) {
    err << "lowering-cli export: needs FILE and -o OUT.pte\n" << kUsageText;
    return kUsage;
  }
  auto program = openProgramFile(file);
  if (!program) return err << "error: " << program.error().message() << "\n", kBadFile;
  if (program->format != SourceFormat::Pte && !ptds.empty())
    return err << "lowering-cli export: --ptd applies to .pte inputs only\n", kUsage;
  std::vector<DataFile> data;
  for (const auto& p : ptds) {
    auto d = readDataFile(p);
    if (!d) return err << "error: " << d.error().message() << "\n", kBadFile;
    data.push_back(std::move(d.value()));
  }
  if (!data.empty())
    if (auto s = resolveExternalTensors(program.value(), data); !s) return err << "error: " << s.error().message() << "\n", kBadFile;
  if (int rc = linkEtRecordArg(program.value(), etrecord, err); rc != kOk) return rc;
  auto loaded = configFor(program.value(), configPath, settings);
  if (!loaded) return err << "error: " << loaded.error().message() << "\n", kBadFile;
  const ExecutorchBackendConfig& config = loaded.value();
  // The whole pipeline first (a .pte is de-lowered by its first pass).
  auto toWrite = lowerToEnd(std::make_shared<const Program>(std::move(program.value())), config, file, err);
  if (!toWrite) return kPassFailed;
  auto outcome = exportToFiles(*toWrite, config, output, ptdDir);
  if (!outcome && outcome.error().code == ErrorCode::RuntimeRule)  // the program, not the file: as a failed pass
    return err << "error: ExecuTorch's runtime would refuse this program: " << outcome.error().message() << "\n", kPassFailed;
  if (!outcome) return err << "error: " << outcome.error().message() << "\n", kBadFile;
  for (const auto& n : outcome->notes) err << "note: " << n << "\n";
  out << exportSummary(outcome.value());
  return kOk;
}

}  // namespace lstudio::cli
