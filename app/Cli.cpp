#include "app/Cli.h"
#include "app/CliCommon.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <ostream>

#include "engine/support/AtomicFile.h"
#include "engine/support/FormatUtil.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/inspect/DelegateReport.h"
#include "engine/inspect/Inspect.h"
#include "engine/inspect/SizeBreakdown.h"
#include "engine/planning/MemoryPlanning.h"
#include "engine/planning/Planners.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteWriter.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/ConfigPython.h"
#include "engine/lowering/Delower.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Executable.h"
#include "engine/lowering/Export.h"
#include "engine/lowering/GraphDiff.h"
#include "engine/lowering/GraphText.h"
#include "engine/lowering/Pipeline.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/EtRecordLink.h"
#include "engine/formats/EtdumpReader.h"
#include "engine/inspect/EtdumpReport.h"
#include "engine/formats/OpenProgram.h"
#include "engine/run/Interpreter.h"
#include "engine/run/Npy.h"

#ifndef LSTUDIO_VERSION
#define LSTUDIO_VERSION "dev"
#endif

namespace lstudio::cli {

// Names inside a file (tensor keys, operator names) need not be UTF-8; show
// broken bytes as U+FFFD rather than let the serializer throw.
std::string jsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}


namespace {
const char* kUsageText =
    "usage: lowering-cli COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  inspect FILE [--ptd DATA.ptd]... [--etrecord ETRECORD] [--size [--against OTHER] [--full]] [--json]\n"
    "      Verify a program and print what is inside. For an ExecuTorch program\n"
    "      (.pte, bundled .bpte): header, methods, inputs and outputs, operators,\n"
    "      delegates, constants, and per mem_id the arena size, lower bound (as\n"
    "      ordered, and in a memory-aware order with in-place reuse: the\n"
    "      studio_memory_aware_order extension) and overlap check; --ptd\n"
    "      resolves external tensors against data files;\n"
    "      --etrecord links each instruction to its module and source line\n"
    "      through the ETRecord written with the .pte (its debug handles).\n"
    "      For a torch.export archive (.pt2, either generation) or an ETRecord:\n"
    "      nodes, operators, the graph signature with shapes and bytes, module\n"
    "      depth and weight bytes. For a tensor data file (.ptd): its entries.\n"
    "      --size adds where the bytes of a .pte or .ptd go: every byte in one\n"
    "      part (program structure, constants by module, each delegate's payload\n"
    "      and, for XNNPACK, its graph, constant data and header, named data by\n"
    "      the backend that reads it, mutable data, padding), largest first; in\n"
    "      --json as size.total and size.parts[] of {name, bytes, parts} whose\n"
    "      leaves add up to the file size; the five largest items of each part,\n"
    "      or all with --full. No constant byte is read. --against\n"
    "      OTHER puts the breakdowns of FILE and OTHER side by side, with the\n"
    "      difference per part and per item, largest change first.\n"
    "\n"
    "  delegates FILE [--ptd DATA.ptd]... [--etrecord ETRECORD] [--full] [--json]\n"
    "      Every delegate of a program: backend, compile specs, the values its\n"
    "      call reads and writes, and its payload decoded where the format is\n"
    "      known (XNNPACK XN00/XN01, with or without the XH00 header): node and\n"
    "      value counts, constants and the named data they read, with where each\n"
    "      entry was found. --full lists every node and value.\n"
    "\n"
    "  plan FILE [--algorithm naive|et-greedy|best-fit|suite] [--alignment N]\n"
    "            [--json] [--trace OUT.json] [--csv OUT.csv]\n"
    "      Re-plan the memory of an ExecuTorch program (.pte; a .pt2 is lowered\n"
    "      with the default config first): per method and mem_id the arena\n"
    "      stored in the file, the new arena, the lower bound (and the bound\n"
    "      in a memory-aware order, studio_memory_aware_order) and the ratios,\n"
    "      and the tensors alive where memory peaks. --trace\n"
    "      writes a Chrome/Perfetto trace (1 us = 1 step), --csv every tensor.\n"
    "      The default algorithm is the suite (et-greedy and best-fit, smallest\n"
    "      total kept).\n"
    "\n"
    "  export FILE [--ptd DATA.ptd]... [--etrecord ETRECORD] [--config CFG.json]\n"
    "         [--set KEY=VALUE]... -o OUT.pte [--ptd-dir DIR]\n"
    "      Write an ExecuTorch program (.pte) under a config. The program is\n"
    "      lowered through the whole pipeline and emitted; an ExecuTorch program\n"
    "      (.pte, with --ptd data files) is de-lowered first, and without\n"
    "      --config it is lowered under the config matching how it was made\n"
    "      (its segment alignment, view_copy kept or removed, external tensors\n"
    "      in their files). Segment, constant and delegate alignments are\n"
    "      applied, external tensors go to .ptd files in DIR (default: beside\n"
    "      OUT.pte). Prints the files, sizes, segments and arenas written.\n"
    "      --set changes one field of the config (KEY a path in its JSON, e.g.\n"
    "      segment_alignment=4096 or memory_planning_pass.algorithms=et-greedy).\n"
    "\n"
    "  config [FILE] [--config CFG.json] [--set KEY=VALUE]... [--python]\n"
    "      Print the config export would use (for a .pte, the one it was made\n"
    "      with) as JSON, or with --python as ExecuTorch Python that builds the\n"
    "      same ExecutorchBackendConfig.\n"
    "\n"
    "  sample NAME -o FILE.pt2 [--layers N] [--dim N] [--heads N] [--kv-heads N]\n"
    "         [--seq N] [--vocab N] [--batch N] [--attention mha|static] [--ffn N]\n"
    "         [--dtype float32|bfloat16] [--preset llama3-8b|llama3.2-1b]\n"
    "  sample --list\n"
    "      Write a sample program of the zoo as a torch.export archive.\n"
    "\n"
    "  lower FILE [--etrecord ETRECORD] [--config CFG.json] [--stop-after PASS] [--print-after-all |\n"
    "        --print-after-change | --print-diff] [--timings] [--json]\n"
    "  lower --list-passes\n"
    "      Run ExecuTorch's to_executorch lowering one pass at a time on a\n"
    "      torch.export program (.pt2), or on a .pte after DelowerPtePass has\n"
    "      made it an exported graph again: each pass with its state and time, the\n"
    "      graph after the chosen passes, and the memory plan. CFG.json holds\n"
    "      ExecutorchBackendConfig fields with ExecuTorch's names. --print-diff\n"
    "      prints, after each pass that changed the program, only the lines it\n"
    "      added (+), removed (-) or changed (- then +).\n"
    "\n"
    "  run FILE [--ptd DATA.ptd]... [--etrecord ETRECORD] [--config CFG.json] [--method NAME]\n"
    "      [--inputs iota|sample|IN.npy...] [--after PASS] [--compare-to PASS]\n"
    "      [--tolerance T] [--every-pass] [--save-outputs DIR] [--json]\n"
    "      Run a method in the studio's own interpreter (no ExecuTorch runtime).\n"
    "      A .pt2 that torch.export.save wrote with example inputs runs on them\n"
    "      by default (--inputs sample); anything else on iota inputs\n"
    "      (--inputs iota): element i of a floating input is\n"
    "      (i % 7) * 0.25 - 0.5, of an integer input i % 5, of a bool input i % 2\n"
    "      (i the flat index in memory order, dynamic dimensions at their upper\n"
    "      bound; other inputs keep the value the program stores). Or on .npy\n"
    "      files, one per input in order: a tensor input takes an array of its\n"
    "      dtype and rank (a dynamic dimension up to its bound), a scalar input\n"
    "      a 0-d array. A .pte runs as stored,\n"
    "      planned tensors in their arenas at their offsets; a .pt2 is lowered\n"
    "      under CFG.json (default: the default config) and emitted first.\n"
    "      Prints each output's dtype, sizes, first values and the FNV-1a-64\n"
    "      checksum of its bytes (C order). A delegate call runs the program\n"
    "      its backend was given, which an ETRecord keeps: open the ETRecord, or\n"
    "      the .pte with --etrecord. An operator without a kernel, a delegate\n"
    "      call without that program or a plan that puts a tensor outside its\n"
    "      arena fails naming the instruction.\n"
    "      --save-outputs writes each output to DIR/output_N.npy (bfloat16 as\n"
    "      float32, exactly).\n"
    "      --after PASS runs the program as it is after PASS (input: before any\n"
    "      pass), finished for running by the passes that leave the numbers\n"
    "      alone (out variants, specs, a plan without reuse). --compare-to PASS\n"
    "      runs the program after PASS too and prints how far each output is\n"
    "      from it and the first node, in execution order, whose values differ\n"
    "      from its namesake's by more than --tolerance T (default 0).\n"
    "      --every-pass runs every snapshot on the same inputs and marks each pass\n"
    "      that changed the outputs, with the first node whose values it changed.\n"
    "\n"
    "  etdump FILE.etdp --program P.pte [--ptd DATA.ptd]... [--etrecord ETRECORD]\n"
    "         [--debug-buffer B.bin] [--method NAME] [--inputs iota|IN.npy...] [--json]\n"
    "      Read an ETDump that ExecuTorch's runtime wrote while running P.pte and\n"
    "      link it to the program: per instruction its operator or delegate, its\n"
    "      median time over the executions (the runtime's ticks: nanoseconds on\n"
    "      Linux) and share of the method, the events inside each delegate call,\n"
    "      and Method::execute. With intermediate outputs logged and the debug\n"
    "      buffer saved beside the ETDump (--debug-buffer), the values logged for\n"
    "      each instruction are read and compared with the studio's interpreter\n"
    "      run on the same inputs (iota by default; pass the .npy files the\n"
    "      runtime was given): the largest |difference| per instruction; a\n"
    "      delegate call's, too, with --etrecord (its program before delegation\n"
    "      runs in its place). An ETDump of another program fails naming the\n"
    "      instruction that differs.\n"
    "\n"
    "  COMMAND --help  show the text of one command\n"
    "  --help     show this text\n"
    "  --version  show the version\n"
    "\n"
    "exit codes: 0 ok, 2 usage error, 3 a file that cannot be read or is invalid,\n"
    "            4 a lowering pass failed, 5 the program could not be run\n";

}  // namespace

/// The usage text of one command: the blocks of kUsageText that start with it.
std::string commandUsage(const std::string& cmd) {
  std::string text = kUsageText, out = "usage: lowering-cli " + cmd + " [OPTIONS]\n";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    std::string block = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos + 1);
    if (block.rfind("commands:\n", 0) == 0) block.erase(0, 10);
    if (block.rfind("  " + cmd + " ", 0) == 0 || block.rfind("  " + cmd + "\n", 0) == 0) out += "\n" + block;
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
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

/// True when `path` starts like a .ptd (identifier FT01 at byte 4).
bool isDataFile(const std::string& path) {
  auto f = MappedFile::open(path);
  return f && f.value()->size() >= 8 && std::memcmp(f.value()->data() + 4, "FT01", 4) == 0;
}

int parseFileArgs(const std::string& cmd, const std::vector<std::string>& args, bool allowFull, FileArgs& r,
                  std::ostream& err) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      r.json = true;
    } else if (a == "--full" && allowFull) {
      r.full = true;
    } else if (a == "--size" && cmd == "inspect") {
      r.size = true;
    } else if (a == "--against" && cmd == "inspect") {
      if (i + 1 >= args.size()) {
        err << "lowering-cli inspect: --against needs a file\n";
        return kUsage;
      }
      r.against = args[++i];
      r.size = true;
    } else if (a == "--ptd") {
      if (i + 1 >= args.size()) {
        err << "lowering-cli " << cmd << ": --ptd needs a file\n";
        return kUsage;
      }
      r.ptds.push_back(args[++i]);
    } else if (a == "--etrecord") {
      if (i + 1 >= args.size()) {
        err << "lowering-cli " << cmd << ": --etrecord needs a file\n";
        return kUsage;
      }
      r.etrecord = args[++i];
    } else if (a.rfind("--ptd=", 0) == 0) {
      r.ptds.push_back(a.substr(6));
    } else if (!a.empty() && a[0] == '-') {
      err << "lowering-cli " << cmd << ": unknown option " << a << "\n" << commandUsage(cmd);
      return kUsage;
    } else if (r.file.empty()) {
      r.file = a;
    } else {
      err << "lowering-cli " << cmd << ": one FILE only (got " << r.file << " and " << a << ")\n";
      return kUsage;
    }
  }
  if (r.file.empty()) {
    err << "lowering-cli " << cmd << ": missing FILE\n" << commandUsage(cmd);
    return kUsage;
  }
  return kOk;
}

}  // namespace

int linkEtRecordArg(Program& program, const std::string& etrecord, std::ostream& err, EtRecordLink* link) {
  if (etrecord.empty()) return kOk;
  if (program.format != SourceFormat::Pte) return err << "lowering-cli: --etrecord applies to .pte inputs only\n", kUsage;
  auto linked = linkEtRecord(program, etrecord);
  if (!linked) return err << "error: " << linked.error().message() << "\n", kBadFile;
  for (const auto& n : linked->notes) err << "note: " << etrecord << ": " << n << "\n";
  if (link) *link = linked.value();
  return kOk;
}

/// Opens FILE and its data files, external tensors resolved; kOk or an exit code.
int openWithData(const FileArgs& a, std::optional<Program>& program, std::vector<DataFile>& data, std::ostream& err) {
  auto opened = openProgramFile(a.file);
  if (!opened) {
    err << "error: " << opened.error().message() << "\n";
    return kBadFile;
  }
  for (const auto& p : a.ptds) {
    auto d = readDataFile(p);
    if (!d) {
      err << "error: " << d.error().message() << "\n";
      return kBadFile;
    }
    data.push_back(std::move(d.value()));
  }
  if (!data.empty()) {
    if (auto s = resolveExternalTensors(opened.value(), data); !s) {
      err << "error: " << s.error().message() << "\n";
      return kBadFile;
    }
  }
  program = std::move(opened.value());
  return kOk;
}


namespace {
/// The size breakdown of an ExecuTorch file (.pte, .bpte or .ptd).
Result<SizeBreakdown> breakdownOf(const std::string& path) {
  if (isDataFile(path)) {
    auto d = readDataFile(path);
    if (!d) return d.error();
    return sizeBreakdown(d.value());
  }
  auto p = openProgramFile(path);
  if (!p) return p.error();
  if (p->format != SourceFormat::Pte)
    return Error{ErrorCode::Unsupported, path, std::nullopt, "size breakdown", "an ExecuTorch file (.pte, .bpte, .ptd)",
                 "a torch.export program"};
  return sizeBreakdown(p.value());
}

int compareSizes(const FileArgs& a, std::ostream& out, std::ostream& err) {
  auto x = breakdownOf(a.file);
  auto y = x ? breakdownOf(a.against) : x;
  if (!x || !y) {
    err << "error: " << (!x ? x.error() : y.error()).message() << "\n";
    return kBadFile;
  }
  if (a.json) out << jsonText({{"size_diff", sizeDiffJson(x.value(), y.value())}}) << "\n";
  else out << sizeDiffText(x.value(), y.value(), a.full ? SIZE_MAX : 5);
  return kOk;
}

int inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  FileArgs a;
  if (int rc = parseFileArgs("inspect", args, true, a, err); rc != kOk) return rc;
  if (!a.against.empty()) return compareSizes(a, out, err);
  if (isDataFile(a.file)) {  // a .ptd on its own: list what it holds
    auto d = readDataFile(a.file);
    if (!d) {
      err << "error: " << d.error().message() << "\n";
      return kBadFile;
    }
    if (a.json) {
      nlohmann::json j = dataFileJson(d.value());
      if (a.size) j["size"] = sizeJson(sizeBreakdown(d.value()));
      out << jsonText(j) << "\n";
    } else {
      out << dataFileText(d.value()) << (a.size ? "\n" + sizeText(sizeBreakdown(d.value()), a.full ? SIZE_MAX : 5) : "");
    }
    return kOk;
  }
  std::optional<Program> program;
  std::vector<DataFile> data;
  if (int rc = openWithData(a, program, data, err); rc != kOk) return rc;
  EtRecordLink link;
  if (int rc = linkEtRecordArg(*program, a.etrecord, err, &link); rc != kOk) return rc;
  ProgramSummary summary = summarize(*program, data);
  std::optional<SizeBreakdown> sizes;
  if (a.size && program->format == SourceFormat::Pte) sizes = sizeBreakdown(*program);
  else if (a.size) err << "note: --size breaks down ExecuTorch files (.pte, .bpte, .ptd); " << a.file << " is not one\n";
  if (a.json) {
    nlohmann::json j = toJson(summary);
    if (sizes) j["size"] = sizeJson(*sizes);
    if (!a.etrecord.empty()) {
      // Per instruction of chain 0 (the ids debug_handle_map uses): handle, innermost module, source line.
      nlohmann::json linked = nlohmann::json::array();
      for (const Method& m : program->methods) {
        size_t id = 0;
        for (const Node& n : m.nodes) {
          if (n.chain != 0) continue;
          if (n.meta.debugHandle) {
            const StackFrame* f = n.meta.stackTrace.empty() ? nullptr : &n.meta.stackTrace.back();
            linked.push_back({{"method", m.name}, {"instruction", id}, {"debug_handle", *n.meta.debugHandle},
                              {"module", n.meta.moduleStack.empty() ? "" : n.meta.moduleStack.back().path},
                              {"source", f ? f->file + ":" + std::to_string(f->line) : ""}});
          }
          ++id;
        }
      }
      j["etrecord"] = {{"file", a.etrecord}, {"instructions", link.instructions}, {"linked", link.linked},
                       {"by_instruction", linked}};
    }
    out << jsonText(j) << "\n";
  } else {
    out << toText(summary);
    if (!a.etrecord.empty())
      out << "etrecord " << a.etrecord << ": " << link.linked << " of " << link.instructions
          << " instructions linked to their modules and source lines\n";
    if (sizes) out << "\n" << sizeText(*sizes, a.full ? SIZE_MAX : 5);
  }
  return kOk;
}

int delegates(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  FileArgs a;
  if (int rc = parseFileArgs("delegates", args, true, a, err); rc != kOk) return rc;
  std::optional<Program> program;
  std::vector<DataFile> data;
  if (int rc = openWithData(a, program, data, err); rc != kOk) return rc;
  if (int rc = linkEtRecordArg(*program, a.etrecord, err); rc != kOk) return rc;
  nlohmann::json methods = nlohmann::json::array();
  size_t total = 0;
  for (const Method& m : program->methods) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < m.delegates.size(); ++i, ++total) {
      DelegateReport r = reportDelegate(*program, m, i, data);
      if (a.json) list.push_back(delegateJson(r));
      else out << "method " << m.name << " delegate " << i << ": " << delegateText(r, m, a.full);
    }
    if (a.json) methods.push_back({{"name", m.name}, {"delegates", list}});
  }
  if (a.json) out << jsonText({{"file", a.file}, {"methods", methods}}) << "\n";
  else if (total == 0) out << a.file << ": no delegates\n";
  return kOk;
}

std::string ratio(uint64_t a, uint64_t b) {
  if (b == 0) return a == 0 ? "1.000" : "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(a) / double(b));
  return buf;
}

}  // namespace

Result<ExecutorchBackendConfig> configFor(const Program* program, const std::string& configPath,
                                          const std::vector<std::string>& settings) {
  auto config = configPath.empty() && program && program->format == SourceFormat::Pte ? configMatching(*program)
                                                                                      : loadConfigFile(configPath);
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

namespace {

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

int plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
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

int sample(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string name, output;
  SampleOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--list") {
      for (const auto& s : sampleList()) out << s.name << "  " << s.description << "\n";
      return kOk;
    }
    bool ok = true;
    if (a == "-o" || a == "--output") {
      ok = i + 1 < args.size();
      if (ok) output = args[++i];
    } else if (a.size() > 2 && a.rfind("--", 0) == 0) {
      ok = i + 1 < args.size() && setSampleOption(o, a, args[i + 1]);
      ++i;
    } else if (!a.empty() && a[0] == '-') ok = false;
    else if (name.empty()) name = a;
    else ok = false;
    if (!ok) {
      err << "lowering-cli sample: bad argument near '" << a << "'\n" << kUsageText;
      return kUsage;
    }
  }
  if (name.empty() || output.empty()) {
    err << "lowering-cli sample: needs NAME and -o FILE.pt2 (or --list)\n";
    return kUsage;
  }
  // Weights are generated into the output's folder, not memory: the file
  // system that takes the archive takes them (and copies them in the kernel).
  std::filesystem::path folder = std::filesystem::path(output).parent_path();
  o.weightsDir = folder.empty() ? "." : folder.string();
  auto p = buildSample(name, o);
  if (!p) {
    err << "error: " << p.error().message() << "\n";
    return p.error().code == ErrorCode::Io ? kBadFile : kUsage;
  }
  if (auto s = writePt2(p.value(), output); !s) {
    err << "error: " << s.error().message() << "\n";
    return kBadFile;
  }
  const Method& m = p->methods.front();
  uint64_t weights = 0;
  for (const auto& in : m.signature.inputs)
    if (in.kind != InputSpec::Kind::User) weights += m.values[in.value].tensor().nbytes().value_or(0);
  out << "wrote " << output << ": sample " << name << ", " << m.nodes.size() << " nodes, " << formatBytes(weights)
      << " of weights\n";
  return kOk;
}

int lower(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
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

int exportProgram(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
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
  if (!outcome) return err << "error: " << outcome.error().message() << "\n", kBadFile;
  for (const auto& n : outcome->notes) err << "note: " << n << "\n";
  out << exportSummary(outcome.value());
  return kOk;
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsageText;
    return kUsage;
  }
  const std::string& cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    out << kUsageText;
    return kOk;
  }
  if (cmd == "--version") {
    out << "lowering-cli " << LSTUDIO_VERSION << "\n";
    return kOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const bool known = cmd == "inspect" || cmd == "delegates" || cmd == "plan" || cmd == "sample" || cmd == "lower" || cmd == "export" ||
                     cmd == "config" || cmd == "run" || cmd == "etdump";
  if (known && std::any_of(rest.begin(), rest.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
    out << commandUsage(cmd);
    return kOk;
  }
  if (cmd == "inspect") return inspect(rest, out, err);
  if (cmd == "delegates") return delegates(rest, out, err);
  if (cmd == "plan") return plan(rest, out, err);
  if (cmd == "sample") return sample(rest, out, err);
  if (cmd == "lower") return lower(rest, out, err);
  if (cmd == "export") return exportProgram(rest, out, err);
  if (cmd == "config") return configCommand(rest, out, err);
  if (cmd == "run") return runProgramCommand(rest, out, err);
  if (cmd == "etdump") return etdumpCommand(rest, out, err);
  err << "lowering-cli: unknown command '" << cmd << "'\n" << kUsageText;
  return kUsage;
}

}  // namespace lstudio::cli
