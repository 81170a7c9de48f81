// lowering-cli run and etdump: running a program in the studio's interpreter
// and reading the ETDumps ExecuTorch's runtime writes while running one.
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <ostream>

#include "app/Cli.h"
#include "app/CliCommon.h"
#include "engine/formats/EtdumpReader.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/inspect/EtdumpReport.h"
#include "engine/lowering/BackendConfig.h"
#include "engine/lowering/Executable.h"
#include "engine/lowering/Pipeline.h"
#include "engine/run/Interpreter.h"
#include "engine/run/Expected.h"
#include "engine/run/Npy.h"
#include "engine/support/AtomicFile.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::cli {
namespace {

/// A difference as JSON: the number, or "inf" (JSON has no infinity).
nlohmann::json numberJson(double d) { return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json("inf"); }

std::string hex64(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// The number of passes after which `name` holds ("input": 0), or -1 with the valid names
/// written to `err`.
long passesRunFor(const Pipeline& pipeline, const std::string& name, const std::string& option, std::ostream& err) {
  if (name == "input") return 0;
  for (size_t i = 0; i < pipeline.records().size(); ++i)
    if (pipeline.records()[i].name == name) return static_cast<long>(i + 1);
  err << "lowering-cli run: " << option << " " << name << ": no such pass here; one of: input";
  for (const auto& r : pipeline.records()) err << ", " << r.name;
  err << "\n";
  return -1;
}

void printRunOutputs(const run::RunResult& r, std::ostream& out) {
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const auto& o = r.outputs[i];
    out << "  output " << i << ": ";
    if (o.kind == ValueKind::Tensor) {
      TensorSpec shape;
      shape.dtype = o.dtype;
      shape.sizes = o.sizes;
      out << shape.shapeString() << " " << run::firstValues(o, 6) << " fnv1a64 " << hex64(o.checksum) << "\n";
    } else {
      out << valueKindName(o.kind) << " " << run::firstValues(o, 1) << "\n";
    }
  }
}

nlohmann::json runOutputsJson(const run::RunResult& r) {
  nlohmann::json outs = nlohmann::json::array();
  for (const auto& o : r.outputs) {
    nlohmann::json e = {{"kind", valueKindName(o.kind)}};
    if (o.kind == ValueKind::Tensor) {
      e["dtype"] = std::string(scalarTypeName(o.dtype));
      e["sizes"] = o.sizes;
      e["first"] = run::leadingValues(o, 8);
      e["fnv1a64"] = hex64(o.checksum);
    } else {
      e["value"] = o.number;
    }
    outs.push_back(e);
  }
  return outs;
}

/// run --every-pass: every snapshot of the lowering on the same inputs, and the passes that
/// changed the outputs.
int runEveryPass(Pipeline& pipeline, const std::string& file, const std::string& method,
                 std::vector<run::HostValue> inputs, const std::string& inputsName, bool json, std::ostream& out,
                 std::ostream& err) {
  pipeline.runToEnd();
  std::vector<std::shared_ptr<const Program>> snapshots;
  std::vector<std::string> names;
  for (size_t k = 0; k <= pipeline.records().size(); ++k) snapshots.push_back(pipeline.snapshot(k));
  for (const auto& r : pipeline.records()) names.push_back(r.name);
  if (pipeline.failed()) snapshots[pipeline.position()] = nullptr;  // the failed pass kept no program
  run::RunOptions o;
  o.method = method;
  o.inputs = std::move(inputs);
  std::vector<SnapshotValues> rows = runEverySnapshot(snapshots, names, pipeline.config(), o);
  auto title = [&](size_t k) { return k == 0 ? std::string("input") : names[k - 1]; };
  size_t ran = 0, changed = 0;
  for (const auto& r : rows) ran += r.ran, changed += r.changed;
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (size_t k = 0; k < rows.size(); ++k) {
      const SnapshotValues& r = rows[k];
      nlohmann::json e = {{"row", k}, {"after", title(k)}, {"ran", r.ran}};
      if (!r.ran) e["error"] = r.error;
      else {
        e["changed"] = r.changed;
        e["max_abs_diff"] = numberJson(r.difference);
        e["outputs"] = r.checksums.size();
        nlohmann::json sums = nlohmann::json::array();
        for (uint64_t c : r.checksums) sums.push_back(hex64(c));
        e["fnv1a64"] = sums;
        if (r.firstDifference)
          e["first_differing_node"] = {{"node", r.firstDifference->node}, {"op", r.firstDifference->op},
                                       {"max_abs_diff", numberJson(r.firstDifference->difference)}};
      }
      a.push_back(e);
    }
    out << jsonText(nlohmann::json{{"file", file}, {"inputs", inputsName}, {"snapshots", a}, {"ran", ran}, {"changed", changed}})
        << "\n";
  } else {
    out << file << ": every snapshot on the same " << inputsName << " inputs (" << ran << " of " << rows.size() << " ran)\n";
    bool first = true;
    for (size_t k = 0; k < rows.size(); ++k) {
      const SnapshotValues& r = rows[k];
      out << "  " << std::setw(2) << k << " " << std::left << std::setw(38) << title(k) << std::right << " ";
      if (!r.ran) out << (k && !rows[k - 1].ran ? "does not run (as above)" : "does not run: " + r.error) << "\n";
      else if (first) out << "ran: the first snapshot that runs, compared with from here on\n";
      else if (!r.changed) out << (r.samePrograms ? "= (program unchanged)" : "= outputs unchanged") << "\n";
      else {
        out << "CHANGED the outputs: ";
        if (r.checksums.size() != r.outputsBefore)
          out << r.outputsBefore << " -> " << r.checksums.size() << " outputs, the ones both have ";
        out << "max |difference| " << r.difference;
        if (r.firstDifference) out << "; first at node " << r.firstDifference->node << " (" << r.firstDifference->op << ")";
        out << "\n";
      }
      first = first && !r.ran;
    }
    out << (changed ? std::to_string(changed) + " pass(es) changed the outputs\n" : "no pass changed the outputs\n");
  }
  if (pipeline.failed()) {
    const PassRecord& r = pipeline.records()[pipeline.position() - 1];
    err << "note: lowering stopped at " << r.name << (r.diagnostics.empty() ? "" : ": " + r.diagnostics.front().message) << "\n";
  }
  return ran ? kOk : kRunFailed;
}

/// What `run` was asked for.
struct RunRequest {
  std::string file, configPath, method, saveDir, afterPass, comparePass, etrecord;
  std::vector<std::string> ptds, npys;
  std::vector<std::string> expected;  ///< --expect: one .npy per output
  std::string namedInputs;  ///< "iota" or "sample" when --inputs named them
  double tolerance = 0;
  bool json = false, everyPass = false;
};

/// The .npy files that follow args[i] go to `npys` (i left at the last one read); false when none.
bool readNpyList(const std::vector<std::string>& args, size_t& i, std::vector<std::string>& npys) {
  auto isNpy = [](const std::string& f) { return f.size() > 4 && f.substr(f.size() - 4) == ".npy"; };
  size_t before = npys.size();
  while (i + 1 < args.size() && isNpy(args[i + 1])) npys.push_back(args[++i]);
  return npys.size() > before;
}

/// `--inputs iota|sample|IN.npy...` at args[i]: the .npy files up to the next option go to
/// `npys` (i left at the last one read), else `named` is set to the word; false when none follows.
bool readInputsOption(const std::vector<std::string>& args, size_t& i, std::vector<std::string>& npys, std::string& named) {
  if (i + 1 >= args.size()) return false;
  if (args[i + 1] == "iota" || args[i + 1] == "sample") return named = args[++i], true;
  return readNpyList(args, i, npys);
}

/// The arguments of a command, read one at a time.
struct ArgCursor {
  const std::vector<std::string>& args;
  size_t i = 0;
  /// The option's value: the next argument, when there is one and it is not empty.
  bool next(std::string& into) { return i + 1 < args.size() && !(into = args[++i]).empty(); }
};

/// Reads a command's arguments: an option (starting with '-') by `option`, false when it is
/// not one of the command's or its value is missing; any other argument is FILE, once.
/// kOk, or kUsage with the argument that stopped it written to `err`.
template <class Option>
int readArgs(const std::string& cmd, const std::vector<std::string>& args, std::string& file, std::ostream& err,
             Option option) {
  for (ArgCursor in{args}; in.i < args.size(); ++in.i) {
    const std::string& a = args[in.i];
    bool ok = true;
    if (!a.empty() && a[0] == '-') ok = option(a, in);
    else if (file.empty()) file = a;
    else ok = false;
    if (!ok) {
      err << "lowering-cli " << cmd << ": bad argument near '" << a << "'\n" << commandUsage(cmd);
      return kUsage;
    }
  }
  return kOk;
}

/// Reads run's arguments; kOk, or kUsage with the reason written to `err`.
int parseRunArgs(const std::vector<std::string>& args, RunRequest& r, std::ostream& err) {
  std::string toleranceText;
  const int rc = readArgs("run", args, r.file, err, [&](const std::string& a, ArgCursor& in) {
    std::string v;
    bool ok = true;
    if (a == "--json") r.json = true;
    else if (a == "--every-pass") r.everyPass = true;
    else if (a == "--config") ok = in.next(r.configPath);
    else if (a == "--method") ok = in.next(r.method);
    else if (a == "--etrecord") ok = in.next(r.etrecord);
    else if (a == "--after") ok = in.next(r.afterPass);
    else if (a == "--compare-to") ok = in.next(r.comparePass);
    else if (a == "--tolerance") ok = in.next(toleranceText);
    else if (a == "--inputs") ok = readInputsOption(args, in.i, r.npys, r.namedInputs);
    else if (a == "--expect") ok = readNpyList(args, in.i, r.expected);
    else if (a == "--save-outputs") ok = in.next(r.saveDir);
    else if (a == "--ptd") ok = in.next(v), r.ptds.push_back(v);
    else ok = false;
    return ok;
  });
  if (rc != kOk) return rc;
  if (r.file.empty()) {
    err << "lowering-cli run: missing FILE\n" << commandUsage("run");
    return kUsage;
  }
  if (!r.namedInputs.empty() && !r.npys.empty()) {
    err << "lowering-cli run: --inputs takes iota, sample or .npy files, one of them\n";
    return kUsage;
  }
  if (!toleranceText.empty()) {
    char* end = nullptr;
    r.tolerance = std::strtod(toleranceText.c_str(), &end);
    if (end == toleranceText.c_str() || *end || !(r.tolerance >= 0)) {
      err << "lowering-cli run: --tolerance takes a number >= 0, not '" << toleranceText << "'\n";
      return kUsage;
    }
    if (r.comparePass.empty() && r.expected.empty()) {
      err << "lowering-cli run: --tolerance applies with --compare-to or --expect\n";
      return kUsage;
    }
  }
  if (r.everyPass && (!r.afterPass.empty() || !r.comparePass.empty() || !r.saveDir.empty() || !r.expected.empty())) {
    err << "lowering-cli run: --every-pass runs every snapshot; it takes no --after, --compare-to, --expect or --save-outputs\n";
    return kUsage;
  }
  return kOk;
}

/// Reads each .npy of `files` into `into`; false (the reason written to `err`) at the first
/// that cannot be read.
bool readNpys(const std::vector<std::string>& files, std::vector<run::HostValue>& into, std::ostream& err) {
  for (const std::string& f : files) {
    auto v = run::readNpy(f);
    if (!v) return err << "error: " << v.error().message() << "\n", false;
    into.push_back(std::move(v.value()));
  }
  return true;
}

/// --expect: each output against its expected array.
struct ExpectedReport {
  std::vector<run::ExpectedDifference> outputs;  ///< empty without --expect
  bool withinTolerance = true;
  /// Past the tolerance, a lowered snapshot's gap traced back against an earlier one.
  std::optional<run::GapOrigin> origin;
  std::string originReference;  ///< the snapshot the origin was found against ("input", a pass)
  std::string originNote;       ///< why no origin was looked for, when it was not
};

ExpectedReport compareExpected(const RunRequest& req, const run::RunResult& r, const std::vector<run::HostValue>& expected) {
  ExpectedReport rep;
  for (size_t i = 0; i < expected.size(); ++i) {
    run::ExpectedDifference d;
    if (i < r.outputs.size()) d = run::differenceFromExpected(r.outputs[i], expected[i]);
    else d.mismatch = "the method has " + std::to_string(r.outputs.size()) + " outputs";
    rep.withinTolerance = rep.withinTolerance && d.mismatch.empty() && d.maxAbs <= req.tolerance;
    rep.outputs.push_back(std::move(d));
  }
  if (!expected.empty() && expected.size() != r.outputs.size()) rep.withinTolerance = false;
  return rep;
}

/// --expect's lines: per output its largest |difference| and ULPs, or why it was not compared.
void printExpected(const RunRequest& req, const run::RunResult& r, const ExpectedReport& e, std::ostream& out) {
  out << "compared to the expected outputs (tolerance " << req.tolerance << "):\n";
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const run::ExpectedDifference& d = e.outputs[i];
    out << "  output " << i << " (" << req.expected[i] << "): ";
    if (!d.mismatch.empty()) out << "not compared: " << d.mismatch << "\n";
    else out << "max |difference| " << d.maxAbs << ", " << d.maxUlp << " ULP" << (d.maxAbs > req.tolerance ? "  (past the tolerance)" : "") << "\n";
  }
  if (e.outputs.size() != r.outputs.size())
    out << "  " << e.outputs.size() << " expected arrays for " << r.outputs.size() << " outputs\n";
  if (!e.originNote.empty()) out << "  where the gap comes from: " << e.originNote << "\n";
  if (!e.origin) return;
  const std::string ref = e.originReference == "input" ? "the input program" : "the program after " + e.originReference;
  if (!e.origin->fromLowering) {
    out << "  " << ref << " is already " << e.origin->referenceMaxAbs
        << " from them: the gap comes before these passes (the export, the inputs, or a kernel both share)\n";
    return;
  }
  out << "  " << ref << " is within the tolerance of them (" << e.origin->referenceMaxAbs << "): the passes after it made the gap\n";
  if (const auto& n = e.origin->firstNode)
    out << "  first node past the tolerance: " << n->node << " (" << n->op << ", instruction " << n->instruction
        << "): max |difference| " << n->difference << " against " << ref << "\n";
  else
    out << "  no node with a namesake in " << ref << " is past the tolerance: the gap is in nodes lowering made\n";
}

nlohmann::json originJson(const ExpectedReport& e) {
  if (!e.origin) return e.originNote.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"not_looked_for", e.originNote}};
  nlohmann::json o = {{"reference", e.originReference},
                      {"reference_max_abs_diff", numberJson(e.origin->referenceMaxAbs)},
                      {"from_lowering", e.origin->fromLowering}};
  if (const auto& n = e.origin->firstNode)
    o["first_node_past_tolerance"] = {{"node", n->node}, {"op", n->op}, {"instruction", n->instruction},
                                      {"max_abs_diff", numberJson(n->difference)}};
  else
    o["first_node_past_tolerance"] = nullptr;
  return o;
}

/// run's report: each output, and with a reference how far each output is from it and the
/// first node past the tolerance, and with --expect how far from the expected values (text, or
/// JSON with --json).
void printRunResult(const RunRequest& req, const run::RunResult& r, const run::RunResult* ref,
                    const std::optional<run::NodeDifference>& firstDiff, const std::string& after,
                    const std::string& referenceName, const std::string& inputs, const ExpectedReport& expect,
                    std::ostream& out) {
  // Output i against the reference's output i.
  std::vector<double> outputDiffs;
  if (ref)
    for (size_t i = 0; i < r.outputs.size(); ++i)
      outputDiffs.push_back(i < ref->outputs.size() ? run::maxDifference(r.outputs[i], ref->outputs[i])
                                                    : std::numeric_limits<double>::infinity());
  if (req.json) {
    nlohmann::json j = {{"file", req.file}, {"method", r.method}, {"instructions", r.instructions}, {"inputs", inputs},
                        {"run_seconds", r.seconds}};
    if (!after.empty()) j["after"] = after;
    j["outputs"] = runOutputsJson(r);
    if (ref) {
      nlohmann::json c = {{"snapshot", referenceName}, {"tolerance", req.tolerance}};
      c["output_max_abs_diff"] = nlohmann::json::array();
      for (double d : outputDiffs) c["output_max_abs_diff"].push_back(numberJson(d));
      if (firstDiff)
        c["first_differing_node"] = {{"node", firstDiff->node}, {"op", firstDiff->op},
                                     {"instruction", firstDiff->instruction},
                                     {"max_abs_diff", numberJson(firstDiff->difference)}};
      else
        c["first_differing_node"] = nullptr;
      j["compared_to"] = c;
    }
    if (!req.expected.empty()) {
      nlohmann::json e = {{"tolerance", req.tolerance}, {"within_tolerance", expect.withinTolerance}};
      e["outputs"] = nlohmann::json::array();
      for (size_t i = 0; i < expect.outputs.size(); ++i) {
        const run::ExpectedDifference& d = expect.outputs[i];
        nlohmann::json o = {{"file", req.expected[i]}};
        if (!d.mismatch.empty()) o["not_compared"] = d.mismatch;
        else o["max_abs_diff"] = numberJson(d.maxAbs), o["max_ulp"] = numberJson(d.maxUlp);
        e["outputs"].push_back(o);
      }
      if (!expect.withinTolerance) e["origin"] = originJson(expect);
      j["expected"] = e;
    }
    out << jsonText(j) << "\n";
    return;
  }
  out << req.file << ": " << r.method << (after.empty() ? "" : " after " + after) << ", " << r.instructions
      << " instructions on " << inputs << " inputs\n";
  printRunOutputs(r, out);
  if (ref) {
    out << "compared to the program after " << referenceName << " (tolerance " << req.tolerance << "):\n";
    for (size_t i = 0; i < outputDiffs.size(); ++i) {
      out << "  output " << i << ": ";
      if (i >= ref->outputs.size()) out << "not an output there\n";
      else out << "max |difference| " << outputDiffs[i] << "\n";
    }
    if (firstDiff)
      out << "  first differing node: " << firstDiff->node << " (" << firstDiff->op << ", instruction "
          << firstDiff->instruction << "): max |difference| " << firstDiff->difference << "\n";
    else
      out << "  no node differs by more than " << req.tolerance << "\n";
  }
  if (!req.expected.empty()) printExpected(req, r, expect, out);
}

}  // namespace

int runProgramCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RunRequest req;
  if (int rc = parseRunArgs(args, req, err); rc != kOk) return rc;
  std::vector<run::HostValue> given, expected;
  if (!readNpys(req.npys, given, err) || !readNpys(req.expected, expected, err)) return kBadFile;
  // A .pt2 runs on the example inputs torch.export.save kept in it, when it has them and no
  // others were named; else on iota inputs.
  const bool sampleByDefault = req.namedInputs.empty() && req.npys.empty() && req.file.ends_with(".pt2");
  bool onSample = false;
  if (req.namedInputs == "sample" || sampleByDefault) {
    auto stored = pt2SampleInputs(req.file);
    if (!stored && !sampleByDefault) return err << "error: " << stored.error().message() << "\n", kBadFile;
    if (stored && stored->empty() && !sampleByDefault)
      return err << "error: " << req.file << ": holds no sample inputs (torch.export.save keeps them in a .pt2); "
                 << "use --inputs iota or .npy files\n", kBadFile;
    if (!stored) err << "note: its sample inputs are not used (" << stored.error().message() << "); iota inputs instead\n";
    if (stored && !stored->empty()) {
      given = std::move(stored.value());
      onSample = true;
    }
  }
  std::string inputs = onSample ? "sample" : req.npys.empty() ? "iota" : std::to_string(req.npys.size()) + " .npy";
  FileArgs fa;
  fa.file = req.file;
  fa.ptds = req.ptds;
  std::optional<Program> program;
  std::vector<DataFile> data;
  if (int rc = openWithData(fa, program, data, err); rc != kOk) return rc;
  if (int rc = linkEtRecordArg(*program, req.etrecord, err); rc != kOk) return rc;
  std::shared_ptr<const Program> input = std::make_shared<const Program>(std::move(*program));
  bool pte = input->format == SourceFormat::Pte;
  if (pte && !req.configPath.empty() && req.afterPass.empty() && req.comparePass.empty()) {
    err << "lowering-cli run: --config applies to a .pt2, or with --after/--compare-to (a .pte runs as stored)\n";
    return kUsage;
  }
  auto loaded = configFor(input.get(), req.configPath, {});
  if (!loaded) return err << "error: " << loaded.error().message() << "\n", kBadFile;
  // The snapshot to run (passes run before it), and the one to compare with.
  Pipeline pipeline(input, loaded.value());
  long at = static_cast<long>(pipeline.records().size()), reference = -1;
  if (!req.afterPass.empty() && (at = passesRunFor(pipeline, req.afterPass, "--after", err)) < 0) return kUsage;
  if (!req.comparePass.empty() && (reference = passesRunFor(pipeline, req.comparePass, "--compare-to", err)) < 0) return kUsage;
  if (req.everyPass) return runEveryPass(pipeline, req.file, req.method, std::move(given), inputs, req.json, out, err);
  bool asStored = pte && req.afterPass.empty() && req.comparePass.empty();
  if (!asStored) {
    while (static_cast<long>(pipeline.position()) < std::max(at, reference) && pipeline.step()) {
    }
    if (pipeline.failed()) {
      const PassRecord& r = pipeline.records()[pipeline.position() - 1];
      err << "error: " << req.file << ": lowering failed in " << r.name;
      for (const auto& d : r.diagnostics) err << "\n  " << d.message;
      err << "\n";
      return kPassFailed;
    }
  }
  auto runAt = [&](long passesRun, bool trace) -> Result<run::RunResult> {
    run::RunOptions o = throughDelegates({});
    o.method = req.method;
    o.inputs = given;
    o.trace = trace;
    if (asStored) return run::runProgram(*input, o);
    auto executable = executableSnapshot(pipeline, static_cast<size_t>(passesRun));
    if (!executable) return executable.error();
    return run::runProgram(executable.value(), o);
  };
  auto snapshotName = [&](long passesRun) {
    return passesRun == 0 ? std::string("input") : pipeline.records()[static_cast<size_t>(passesRun - 1)].name;
  };
  auto r = runAt(at, reference >= 0);
  if (!r) return err << "error: " << r.error().message() << "\n", kRunFailed;
  std::optional<run::RunResult> ref;
  std::optional<run::NodeDifference> firstDiff;
  if (reference >= 0) {
    auto rr = runAt(reference, true);
    if (!rr) return err << "error: " << rr.error().message() << "\n", kRunFailed;
    ref = std::move(rr.value());
    firstDiff = run::firstDifferingNode(r.value(), *ref, req.tolerance);
  }
  if (!req.saveDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(req.saveDir, ec);
    for (size_t i = 0; i < r->outputs.size(); ++i) {
      std::string path = (std::filesystem::path(req.saveDir) / ("output_" + std::to_string(i) + ".npy")).string();
      if (auto s = writeFileAtomically(path, run::npyBytes(r->outputs[i])); !s)
        return err << "error: " << s.error().message() << "\n", kBadFile;
    }
  }
  std::string after = asStored ? std::string() : snapshotName(at);
  ExpectedReport expect = compareExpected(req, r.value(), expected);
  // Past the tolerance: against an earlier snapshot (--compare-to's, else the first that runs
  // from the input on), tell whether lowering made the gap and at which node.
  if (!expect.withinTolerance && expect.outputs.size() == r->outputs.size()) {
    if (asStored) {
      expect.originNote = "a .pte runs as stored; open its .pt2 (or run with --after) to trace the gap to a node";
    } else if (at == 0 && reference < 0) {
      expect.originNote = "the input program has no earlier snapshot to compare with";
    } else {
      std::optional<run::RunResult> origin = ref;
      long originAt = reference;
      for (long row = 0; !origin && row < at; ++row)
        if (auto rr = runAt(row, true)) origin = std::move(rr.value()), originAt = row;
      std::optional<run::RunResult> traced;
      if (origin && reference < 0)
        if (auto t = runAt(at, true)) traced = std::move(t.value());
      if (!origin || (reference < 0 && !traced)) {
        expect.originNote = "no earlier snapshot runs";
      } else {
        expect.origin = run::originOfGap(traced ? *traced : r.value(), *origin, expected, req.tolerance);
        expect.originReference = snapshotName(originAt);
      }
    }
  }
  printRunResult(req, r.value(), ref ? &*ref : nullptr, firstDiff, after, ref ? snapshotName(reference) : "", inputs,
                 expect, out);
  return expect.withinTolerance ? kOk : kNotAsExpected;
}

namespace {


/// What `etdump` was asked for.
struct EtdumpRequest {
  std::string file, method, debugBuffer;
  FileArgs program;  ///< --program and its --ptd files
  std::vector<std::string> npys;
  bool json = false;
};

/// Reads etdump's arguments; kOk, or kUsage with the reason written to `err`.
int parseEtdumpArgs(const std::vector<std::string>& args, EtdumpRequest& r, std::ostream& err) {
  std::string named;
  const int rc = readArgs("etdump", args, r.file, err, [&](const std::string& a, ArgCursor& in) {
    std::string v;
    bool ok = true;
    if (a == "--json") r.json = true;
    else if (a == "--program") ok = in.next(r.program.file);
    else if (a == "--etrecord") ok = in.next(r.program.etrecord);
    else if (a == "--ptd") ok = in.next(v), r.program.ptds.push_back(v);
    else if (a == "--debug-buffer") ok = in.next(r.debugBuffer);
    else if (a == "--method") ok = in.next(r.method);
    else if (a == "--inputs") ok = readInputsOption(args, in.i, r.npys, named) && named != "sample";
    else ok = false;
    return ok;
  });
  if (rc != kOk) return rc;
  if (r.file.empty() || r.program.file.empty())
    return err << "lowering-cli etdump: needs the ETDump and --program P.pte\n" << commandUsage("etdump"), kUsage;
  return kOk;
}

nlohmann::json differenceJson(const std::optional<double>& d) {
  return d ? numberJson(*d) : nlohmann::json(nullptr);
}

/// etdump's report as JSON: every instruction's ticks, every logged value's gap.
nlohmann::json etdumpJson(const EtdumpRequest& req, const Etdump& dump, const EtdumpReport& r, const std::string& runNote) {
  nlohmann::json j = {{"file", req.file}, {"program", req.program.file}, {"version", dump.version}, {"method", r.method},
                      {"executions", r.executions}, {"execute_median_ticks", medianOf(r.executeTicks)},
                      {"load_median_ticks", medianOf(r.loadTicks)}, {"values_read", r.valuesRead}};
  j["instructions"] = nlohmann::json::array();
  for (const ProfiledInstruction& t : r.instructions) {
    nlohmann::json x = {{"instruction", t.instruction}, {"what", t.what}, {"node", t.node}, {"ticks", t.ticks},
                        {"median_ticks", medianOf(t.ticks)}};
    for (const auto& e : t.delegateEvents) x["delegate_events"].push_back({{"name", e.name}, {"ticks", e.ticks}});
    j["instructions"].push_back(x);
  }
  j["logged"] = nlohmann::json::array();
  for (const LoggedInstruction& l : r.logged) {
    nlohmann::json x = {{"instruction", l.instruction}, {"max_abs_diff", differenceJson(l.difference)},
                        {"inputs_exact", l.inputsExact}};
    for (const run::HostValue& v : l.tensors) {
      run::ValueStats st = run::valueStats(v, 1);
      x["tensors"].push_back({{"dtype", std::string(scalarTypeName(v.dtype))}, {"sizes", v.sizes}, {"checksum", v.checksum},
                              {"max_abs", std::max(std::abs(st.min), std::abs(st.max))}});
    }
    if (!l.notCompared.empty()) x["not_compared"] = l.notCompared;
    j["logged"].push_back(x);
  }
  j["outputs_logged"] = r.outputs.size();
  j["outputs_max_abs_diff"] = differenceJson(r.outputDifference);
  if (!runNote.empty()) j["interpreter_error"] = runNote;
  return j;
}

/// etdump's report as a table: per timed instruction its median, share and logged gap.
void printEtdumpTable(const EtdumpRequest& req, const Etdump& dump, const EtdumpReport& r, const std::string& runNote,
                      std::ostream& out) {
  uint64_t execute = medianOf(r.executeTicks);
  std::map<size_t, const LoggedInstruction*> logged;
  for (const LoggedInstruction& l : r.logged) logged[l.instruction] = &l;
  out << req.file << ": ETDump version " << dump.version << ", " << r.executions << " execution(s) of " << r.method << " ("
      << req.program.file << "); times in the runtime's ticks (ns on Linux)\n";
  out << "Method::execute median " << execute << ", Program::load_method " << medianOf(r.loadTicks) << "\n";
  out << "     #  " << std::left << std::setw(34) << "operator / delegate" << std::right << std::setw(12) << "median"
      << std::setw(8) << "share" << (r.logged.empty() ? "" : "  logged values, max |difference| from the interpreter") << "\n";
  for (const ProfiledInstruction& t : r.instructions) {
    uint64_t m = medianOf(t.ticks);
    out << std::setw(6) << t.instruction << "  " << std::left << std::setw(34) << t.what << std::right << std::setw(12) << m
        << std::setw(7) << std::fixed << std::setprecision(1)
        << (execute ? 100.0 * static_cast<double>(m) / static_cast<double>(execute) : 0.0) << "%" << std::defaultfloat
        << std::setprecision(6);
    if (auto it = logged.find(t.instruction); it != logged.end()) {
      out << "  " << it->second->tensors.size() << " tensor(s)";
      if (it->second->difference) out << ", " << *it->second->difference;
      else if (!it->second->notCompared.empty()) out << " (" << it->second->notCompared << ")";
    }
    out << "\n";
    for (const auto& e : t.delegateEvents) out << "          " << e.name << ": " << medianOf(e.ticks) << "\n";
  }
  if (!r.logged.empty() && !r.valuesRead) out << "values were logged; pass --debug-buffer to read and compare them\n";
  if (!runNote.empty()) out << "the interpreter could not run the method: " << runNote << "\n";
  if (r.outputDifference)
    out << "outputs: " << r.outputs.size() << " logged, max |difference| from the interpreter " << *r.outputDifference << "\n";
}

}  // namespace

/// `etdump`: an ETDump linked to the program that was run, timings per instruction, and the
/// logged values against the interpreter's.
int etdumpCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  EtdumpRequest req;
  if (int rc = parseEtdumpArgs(args, req, err); rc != kOk) return rc;
  auto dump = readEtdump(req.file);
  if (!dump) return err << "error: " << dump.error().message() << "\n", kBadFile;
  std::optional<Program> program;
  std::vector<DataFile> data;
  if (int rc = openWithData(req.program, program, data, err); rc != kOk) return rc;
  if (int rc = linkEtRecordArg(*program, req.program.etrecord, err); rc != kOk) return rc;
  std::shared_ptr<const MappedFile> buffer;
  if (!req.debugBuffer.empty()) {
    auto b = MappedFile::open(req.debugBuffer);
    if (!b) return err << "error: " << b.error().message() << "\n", kBadFile;
    buffer = b.value();
  }
  auto linked = linkEtdump(dump.value(), *program, req.method, buffer.get());
  if (!linked) return err << "error: " << linked.error().message() << "\n", kBadFile;
  EtdumpReport& r = linked.value();
  std::string runNote;  // why the logged values were not compared, when they were not
  if ((!r.logged.empty() || !r.outputs.empty()) && buffer) {
    run::RunOptions o = throughDelegates({});  // a delegate call through its original program, where linked
    o.method = r.method;
    o.trace = true;
    for (const std::string& f : req.npys) {
      auto v = run::readNpy(f);
      if (!v) return err << "error: " << v.error().message() << "\n", kBadFile;
      o.inputs.push_back(std::move(v.value()));
    }
    auto traced = run::runProgram(*program, o);
    if (traced) compareWithInterpreter(r, traced.value());
    else runNote = traced.error().message();
  }
  if (req.json) out << jsonText(etdumpJson(req, dump.value(), r, runNote)) << "\n";
  else printEtdumpTable(req, dump.value(), r, runNote, out);
  return kOk;
}


}  // namespace lstudio::cli
