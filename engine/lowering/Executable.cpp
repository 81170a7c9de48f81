#include "engine/lowering/Executable.h"

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <optional>
#include <string_view>

#include "engine/formats/Pt2Reader.h"
#include "engine/lowering/Emitter.h"

namespace lstudio {

bool finishesForRunning(const std::string& passName) {
  static constexpr std::array<std::string_view, 8> kTail = {
      "SymToTensorPass",                     // a run-time number as a tensor, as the dispatcher wraps it
      "UnsafeRemoveAutoFunctionalizedPass",  // the functionalized mutations back as calls
      "EdgeToBackendOpsPass",                // symbolic-int arithmetic as executorch_prim ops
      "RemoveGraphAssertsPass",              // assertions have no kernels
      "SpecPropPass", "SymShapeEvalPass",    // specs and upper bounds for the emitter
      "ToOutVarPass",                        // out variants: what kernels are
      "MemoryPlanningPass"};                 // storage for every tensor
  for (std::string_view n : kTail)
    if (n == passName) return true;
  return false;
}

Result<Program> executableSnapshot(const Program& snapshot, const std::string& afterPass,
                                   const std::vector<std::string>& passesToCome, ExecutorchBackendConfig config) {
  std::string after = afterPass.empty() ? "the input program" : "the program after " + afterPass;
  if (afterPass.empty() && snapshot.format == SourceFormat::Pte) return snapshot;  // a .pte as stored runs as it is
  Program p = snapshot;
  if (!passesToCome.empty())
    for (MemoryPlanningConfig* mp : config.allPlanning()) mp->algorithms = {"naive"};
  std::vector<std::shared_ptr<const Pass>> all = defaultPasses();
  for (const std::string& name : passesToCome) {
    if (!finishesForRunning(name)) continue;
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& x) { return x->name() == name; });
    if (it == all.end() || !(*it)->enabled(config)) continue;
    const Pass& pass = **it;
    PassOutcome o;
    try {
      o = pass.run(p, config);
    } catch (const std::exception& e) {
      o.failed = true;
      o.diagnostics.push_back({Diagnostic::Severity::Error, -1, e.what()});
    }
    if (o.failed) {
      std::string why = o.diagnostics.empty() ? "the pass failed" : o.diagnostics.front().message;
      // Before to_edge's conversion an ATen program still calls views and composite operators.
      if (std::find(passesToCome.begin(), passesToCome.end(), "ReplaceViewOpsWithViewCopyOpsPass") != passesToCome.end())
        why += " (an ATen-dialect program runs from after ReplaceViewOpsWithViewCopyOpsPass on)";
      return Error{ErrorCode::Unsupported, snapshot.path, std::nullopt,
                   "finishing " + after + " for running (" + pass.name() + ")", "", why};
    }
  }
  auto emitted = emitProgram(p, config);
  if (!emitted)
    return Error{ErrorCode::Unsupported, snapshot.path, std::nullopt, "emitting " + after + " for running", "",
                 emitted.error().message()};
  return emitted;
}

Result<Program> executableSnapshot(const Pipeline& pipeline, size_t passesRun) {
  std::shared_ptr<const Program> snap = pipeline.snapshot(passesRun);
  const auto& passes = pipeline.passes();
  if (!snap)
    return Error{ErrorCode::Invalid, "", std::nullopt, "running a snapshot", "a pass the pipeline has run",
                 "a pass it has not run"};
  std::vector<std::string> toCome;
  for (size_t i = passesRun; i < passes.size(); ++i) toCome.push_back(passes[i]->name());
  return executableSnapshot(*snap, passesRun ? passes[passesRun - 1]->name() : "", toCome, pipeline.config());
}

Result<Program> executableOriginal(const Program& original) {
  auto input = std::make_shared<Program>(original);
  // Read as torch.export wrote it, so that the to_edge stage runs: the graph is edge
  // dialect already, but with the operators the partitioner kept from decomposition.
  input->format = SourceFormat::Pt2;
  input->exportFacts.dialect = "ATEN";
  Pipeline pipeline(std::move(input), ExecutorchBackendConfig{});
  while (pipeline.step()) {
  }
  if (pipeline.failed()) {
    const PassRecord& r = pipeline.records()[pipeline.position() - 1];
    return Error{ErrorCode::Unsupported, original.path, std::nullopt, "lowering the program before delegation (" + r.name + ")",
                 "", r.diagnostics.empty() ? "the pass failed" : r.diagnostics.front().message};
  }
  return executableSnapshot(pipeline, pipeline.position());
}

run::RunOptions throughDelegates(run::RunOptions options) {
  // Shared by copies of the options (a run copies them): each original is lowered once.
  auto lowered = std::make_shared<std::map<const Program*, std::optional<Result<Program>>>>();
  const uint64_t memoryLimit = options.memoryLimit, workLimit = options.workLimit;
  options.delegateRunner = [lowered, memoryLimit, workLimit](const Delegate& d, const std::vector<run::HostValue>& in)
      -> Result<std::vector<run::HostValue>> {
    auto& program = (*lowered)[d.original.get()];
    if (!program) program = executableOriginal(*d.original);
    if (!*program) return program->error();
    run::RunOptions o;
    o.inputs = in;
    o.memoryLimit = memoryLimit;
    o.workLimit = workLimit;
    auto r = run::runProgram(program->value(), o);
    if (!r) return r.error();
    return std::move(r->outputs);
  };
  return options;
}

Result<std::vector<run::HostValue>> pt2SampleInputs(const std::string& path) {
  auto stored = readPt2SampleInputs(path);
  if (!stored) return stored.error();
  std::vector<run::HostValue> inputs;
  for (StoredTensor& t : stored.value()) {
    run::HostValue v;
    v.kind = ValueKind::Tensor;
    v.dtype = t.dtype;
    v.sizes = t.sizes;
    v.bytes = std::move(t.bytes);
    inputs.push_back(std::move(v));
  }
  return inputs;
}

std::vector<SnapshotValues> runEverySnapshot(const std::vector<std::shared_ptr<const Program>>& snapshots,
                                             const std::vector<std::string>& passNames,
                                             const ExecutorchBackendConfig& config, const run::RunOptions& options,
                                             const std::function<bool(size_t row)>& progress) {
  std::vector<SnapshotValues> rows(snapshots.size());
  auto executable = [&](size_t k) -> Result<Program> {
    std::vector<std::string> toCome(passNames.begin() + static_cast<long>(std::min(k, passNames.size())), passNames.end());
    return executableSnapshot(*snapshots[k], k ? passNames[k - 1] : "", toCome, config);
  };
  auto runRow = [&](size_t k, bool trace) -> Result<run::RunResult> {
    auto e = executable(k);
    if (!e) return e.error();
    run::RunOptions o = throughDelegates(options);
    o.trace = trace;
    return run::runProgram(e.value(), o);
  };
  std::optional<size_t> last;  // the previous row that ran
  std::vector<run::HostValue> lastOutputs;
  for (size_t k = 0; k < snapshots.size(); ++k) {
    if (progress && !progress(k)) break;
    SnapshotValues& row = rows[k];
    if (!snapshots[k]) {
      row.error = "the pass did not run";
      continue;
    }
    if (k > 0 && last && snapshots[k] == snapshots[k - 1] && rows[k - 1].ran) {
      row = rows[k - 1];
      row.samePrograms = true;
      row.changed = false;
      row.difference = 0;
      row.firstDifference.reset();
      continue;
    }
    auto r = runRow(k, false);
    if (!r) {
      row.error = r.error().message();
      continue;
    }
    row.ran = true;
    for (const auto& o : r->outputs) row.checksums.push_back(o.checksum);
    if (last) {
      row.outputsBefore = lastOutputs.size();
      for (size_t i = 0; i < r->outputs.size() && i < lastOutputs.size(); ++i)
        row.difference = std::max(row.difference, run::maxDifference(r->outputs[i], lastOutputs[i]));
      row.changed = row.difference > 0 || r->outputs.size() != lastOutputs.size();
      if (row.changed) {  // where the numbers part: both again, traced
        auto now = runRow(k, true), before = runRow(*last, true);
        if (now && before) row.firstDifference = run::firstDifferingNode(now.value(), before.value(), 0);
      }
    }
    last = k;
    lastOutputs = std::move(r->outputs);
  }
  return rows;
}

}  // namespace lstudio
