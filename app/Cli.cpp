#include "app/Cli.h"
#include "app/CliCommon.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <ostream>

#include "engine/support/FormatUtil.h"
#include "engine/support/MappedFile.h"
#include "engine/inspect/DelegateReport.h"
#include "engine/inspect/Inspect.h"
#include "engine/inspect/SizeBreakdown.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/samples/SampleZoo.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/EtRecordLink.h"
#include "engine/formats/OpenProgram.h"

#ifndef LSTUDIO_VERSION
#define LSTUDIO_VERSION "dev"
#endif

namespace lstudio::cli {

// Names inside a file (tensor keys, operator names) need not be UTF-8; show
// broken bytes as U+FFFD rather than let the serializer throw.
std::string jsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}


const char* const kUsageText =
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
    "  partition FILE [--etrecord ETRECORD] [--config CFG.json] [--set KEY=VALUE]... [--json]\n"
    "      Partition a program for XNNPACK as to_edge_transform_and_lower(...,\n"
    "      partitioner=[XnnpackPartitioner()]) does: to_edge with the\n"
    "      partitioner's operators kept whole (linear, hardswish, max_pool2d, ...),\n"
    "      then the partitioner's checks per node and its merging of groups into\n"
    "      partitions. Prints per partition (ExecuTorch's delegation tag) its\n"
    "      operators and the constants it takes, per node left out the\n"
    "      partitioner's reason, and the graph to_backend makes of it: each\n"
    "      partition one executorch_call_delegate (the values it reads, the\n"
    "      weights its lowered module took, what it writes). The config's\n"
    "      `partitioner` list is used when it has one (e.g. --set\n"
    "      partitioner=xnnpack, or an object with\n"
    "      config_precisions, per_op_mode, force_non_static_weights_for_f32_linear,\n"
    "      enable_bf16); else XnnpackPartitioner's defaults. Several partitioners\n"
    "      are rounds, as upstream runs them: each decomposes, partitions and\n"
    "      lowers the graph the round before left (JSON: methods[].rounds[]).\n"
    "\n"
    "  run FILE [--ptd DATA.ptd]... [--etrecord ETRECORD] [--config CFG.json] [--method NAME]\n"
    "      [--inputs iota|sample|IN.npy...] [--after PASS] [--compare-to PASS]\n"
    "      [--expect OUT.npy...] [--tolerance T] [--every-pass] [--save-outputs DIR] [--json]\n"
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
    "      --expect OUT.npy... compares the outputs with what the eager model\n"
    "      returned, one .npy per output in order: per output the largest\n"
    "      |difference| and the largest distance in ULPs of the output's dtype;\n"
    "      an output further than --tolerance T (default 0) exits 6. Then, for\n"
    "      a .pt2, it runs an earlier snapshot (--compare-to's, else the input)\n"
    "      to tell where the gap comes from: when that one is within the\n"
    "      tolerance, the first node past it is where lowering made the gap.\n"
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
    "            4 a lowering pass failed, 5 the program could not be run,\n"
    "            6 run --expect: an output further from the expected one than --tolerance\n";


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
            nlohmann::json constants = nlohmann::json::array();  // the named constants it reads, by argument
            for (ValueId v : n.args)
              if (const TensorSpec* t = v >= 0 && size_t(v) < m.values.size() ? m.values[v].tensorIf() : nullptr;
                  t && t->storage() == TensorStorage::Constant && !m.values[v].name.empty())
                constants.push_back(m.values[v].name);
            linked.push_back({{"method", m.name}, {"instruction", id}, {"debug_handle", *n.meta.debugHandle},
                              {"module", n.meta.moduleStack.empty() ? "" : n.meta.moduleStack.back().path},
                              {"source", f ? f->file + ":" + std::to_string(f->line) : ""}, {"constants", constants}});
          }
          ++id;
        }
      }
      j["etrecord"] = {{"file", a.etrecord}, {"instructions", link.instructions}, {"linked", link.linked},
                       {"named_constants", link.namedConstants}, {"by_instruction", linked}};
    }
    out << jsonText(j) << "\n";
  } else {
    out << toText(summary);
    if (!a.etrecord.empty())
      out << "etrecord " << a.etrecord << ": " << link.linked << " of " << link.instructions
          << " instructions linked to their modules and source lines, " << link.namedConstants << " constants named\n";
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

}  // namespace

namespace {

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
                     cmd == "config" || cmd == "run" || cmd == "etdump" || cmd == "partition";
  if (known && std::any_of(rest.begin(), rest.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
    out << commandUsage(cmd);
    return kOk;
  }
  if (cmd == "inspect") return inspect(rest, out, err);
  if (cmd == "delegates") return delegates(rest, out, err);
  if (cmd == "plan") return planCommand(rest, out, err);
  if (cmd == "sample") return sample(rest, out, err);
  if (cmd == "lower") return lowerCommand(rest, out, err);
  if (cmd == "export") return exportCommand(rest, out, err);
  if (cmd == "config") return configCommand(rest, out, err);
  if (cmd == "run") return runProgramCommand(rest, out, err);
  if (cmd == "etdump") return etdumpCommand(rest, out, err);
  if (cmd == "partition") return partitionCommand(rest, out, err);
  err << "lowering-cli: unknown command '" << cmd << "'\n" << kUsageText;
  return kUsage;
}

}  // namespace lstudio::cli
