// lowering-cli plan: re-planning a program's memory and comparing the arenas with the
// file's and with the lower bound.
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <ostream>

#include "app/Cli.h"
#include "app/CliCommon.h"
#include "engine/formats/OpenProgram.h"
#include "engine/planning/MemoryPlanning.h"
#include "engine/planning/Planners.h"
#include "engine/support/AtomicFile.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::cli {
namespace {

std::string ratio(uint64_t a, uint64_t b) {
  if (b == 0) return a == 0 ? "1.000" : "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(a) / double(b));
  return buf;
}

/// What `plan` was asked for.
struct PlanRequest {
  std::string file, trace, csv;
  PlanOptions options;
  bool json = false;
};

/// Reads plan's arguments; kOk, or kUsage with the reason written to `err`.
int parsePlanArgs(const std::vector<std::string>& args, PlanRequest& r, std::ostream& err) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](std::string& into) {
      if (i + 1 >= args.size()) return false;
      into = args[++i];
      return true;
    };
    std::string v;
    if (a == "--json") {
      r.json = true;
    } else if (a == "--algorithm") {
      if (!next(r.options.algorithm)) return err << "lowering-cli plan: --algorithm needs a name\n", kUsage;
      if (!plannerByName(r.options.algorithm)) {
        err << "lowering-cli plan: unknown algorithm '" << r.options.algorithm << "' (naive, et-greedy, best-fit, suite)\n";
        return kUsage;
      }
    } else if (a == "--alignment") {
      if (!next(v)) return err << "lowering-cli plan: --alignment needs a number\n", kUsage;
      char* end = nullptr;
      unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (!end || *end || n == 0 || (n & (n - 1)) != 0 || n > (1u << 20)) {
        err << "lowering-cli plan: --alignment must be a power of two up to 1048576, not '" << v << "'\n";
        return kUsage;
      }
      r.options.alignment = n;
    } else if (a == "--trace") {
      if (!next(r.trace)) return err << "lowering-cli plan: --trace needs a file\n", kUsage;
    } else if (a == "--csv") {
      if (!next(r.csv)) return err << "lowering-cli plan: --csv needs a file\n", kUsage;
    } else if (!a.empty() && a[0] == '-') {
      err << "lowering-cli plan: unknown option " << a << "\n" << kUsageText;
      return kUsage;
    } else if (r.file.empty()) {
      r.file = a;
    } else {
      err << "lowering-cli plan: one FILE only\n";
      return kUsage;
    }
  }
  if (r.file.empty()) {
    err << "lowering-cli plan: missing FILE\n" << kUsageText;
    return kUsage;
  }
  return kOk;
}

/// Plans every method of `subject`; a lowered program has no stored arena sizes to compare with.
int planMethods(const Program& subject, const PlanRequest& r, bool lowered, std::vector<MethodPlan>& plans,
                std::vector<const Method*>& methods, std::ostream& err) {
  for (const Method& m : subject.methods) {
    auto mp = planMethod(m, r.options);
    if (!mp) {
      err << "error: " << r.file << ": method " << m.name << ": " << mp.error().message() << "\n";
      return kBadFile;
    }
    if (lowered)
      for (auto& a : mp->arenas) a.stored.reset();
    plans.push_back(std::move(mp.value()));
    methods.push_back(&m);
  }
  return kOk;
}

/// --trace and --csv: the plans as a Chrome trace and as one row per tensor.
int writePlanFiles(const PlanRequest& r, const std::vector<MethodPlan>& plans, const std::vector<const Method*>& methods,
                   std::ostream& err) {
  if (!r.trace.empty())
    if (auto s = writeFileAtomically(r.trace, planTraceJson(plans)); !s) return err << "error: " << s.error().message() << "\n", kBadFile;
  if (!r.csv.empty())
    if (auto s = writeFileAtomically(r.csv, planCsv(plans, methods)); !s) return err << "error: " << s.error().message() << "\n", kBadFile;
  return kOk;
}

void printPlansJson(const std::string& file, const std::vector<MethodPlan>& plans, std::ostream& out) {
  nlohmann::json j;
  j["file"] = file;
  j["methods"] = nlohmann::json::array();
  for (const auto& mp : plans) {
    nlohmann::json arenas = nlohmann::json::array();
    for (const auto& a : mp.arenas) {
      nlohmann::json peak = nlohmann::json::array();
      for (size_t k = 0; k < std::min<size_t>(a.peak.size(), 20); ++k)
        peak.push_back({{"value", a.peak[k].value}, {"name", a.peak[k].name}, {"bytes", a.peak[k].size},
                        {"producer", a.peak[k].producerOp}});
      arenas.push_back({{"mem_id", a.memId},
                        {"stored", a.stored ? nlohmann::json(*a.stored) : nlohmann::json(nullptr)},
                        {"planned", a.planned},
                        {"lower_bound", a.lowerBound},
                        {"reordered_bound", a.reorderedBound},
                        {"peak_step", a.peakStep},
                        {"fragmentation", a.fragmentation()},
                        {"peak_tensors", peak}});
    }
    j["methods"].push_back({{"name", mp.method}, {"algorithm", mp.algorithm}, {"alignment", mp.problem.alignment},
                            {"tensors", mp.problem.tensors.size()}, {"plan_ms", mp.planMilliseconds}, {"arenas", arenas}});
  }
  out << jsonText(j) << "\n";
}

void printPlansText(const std::string& file, const std::vector<MethodPlan>& plans, std::ostream& out) {
  out << "file: " << file << "\n";
  for (const auto& mp : plans) {
    out << "\nmethod " << mp.method << ": " << mp.problem.tensors.size() << " planned storages, alignment "
        << mp.problem.alignment << ", " << mp.algorithm << " in " << mp.planMilliseconds << " ms\n";
    for (const auto& a : mp.arenas) {
      out << "  mem_id " << a.memId << ": stored " << (a.stored ? std::to_string(*a.stored) : std::string("-"))
          << ", planned " << a.planned << ", lower bound " << a.lowerBound << " bytes; stored/bound "
          << (a.stored ? ratio(*a.stored, a.lowerBound) : std::string("-")) << ", planned/bound "
          << ratio(a.planned, a.lowerBound) << "\n";
      if (a.reorderedBound)
        out << "    beyond ExecuTorch: lower bound " << a.reorderedBound
            << " bytes in a memory-aware order with in-place reuse (studio_memory_aware_order)\n";
      if (a.peak.empty()) continue;
      out << "    peak at step " << a.peakStep << ": " << a.peak.size() << " tensors alive, largest first:\n";
      for (size_t k = 0; k < std::min<size_t>(a.peak.size(), 10); ++k) {
        const auto& t = a.peak[k];
        out << "      " << formatBytes(t.size) << "  " << t.name << "  from " << t.producerOp;
        if (t.producer >= 0) out << " (instruction " << t.producer << ")";
        out << ", alive steps " << t.first << ".." << t.last << "\n";
      }
      if (a.peak.size() > 10) out << "      ... " << a.peak.size() - 10 << " more\n";
    }
  }
}

}  // namespace

int planCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  PlanRequest r;
  if (int rc = parsePlanArgs(args, r, err); rc != kOk) return rc;
  auto program = openProgramFile(r.file);
  if (!program) {
    err << "error: " << program.error().message() << "\n";
    return kBadFile;
  }
  // A torch.export program is lowered with the default config first; its
  // arenas then come from this planning, so there is no stored size to show.
  bool lowered = program->format != SourceFormat::Pte;
  std::shared_ptr<const Program> subject = std::make_shared<const Program>(std::move(program.value()));
  if (lowered && !(subject = lowerToEnd(subject, ExecutorchBackendConfig{}, r.file, err))) return kPassFailed;
  std::vector<MethodPlan> plans;
  std::vector<const Method*> methods;
  if (int rc = planMethods(*subject, r, lowered, plans, methods, err); rc != kOk) return rc;
  if (int rc = writePlanFiles(r, plans, methods, err); rc != kOk) return rc;
  if (r.json) printPlansJson(r.file, plans, out);
  else printPlansText(r.file, plans, out);
  return kOk;
}

}  // namespace lstudio::cli
