#include "engine/lowering/Executable.h"

#include <array>
#include <exception>
#include <string_view>

#include "engine/lowering/Emitter.h"

namespace lstudio {

bool finishesForRunning(const std::string& passName) {
  static constexpr std::array<std::string_view, 7> kTail = {
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

Result<Program> executableSnapshot(const Pipeline& pipeline, size_t passesRun) {
  std::shared_ptr<const Program> snap = pipeline.snapshot(passesRun);
  const auto& passes = pipeline.passes();
  std::string after = passesRun == 0 ? "the input program" : "the program after " + passes[passesRun - 1]->name();
  if (!snap)
    return Error{ErrorCode::Invalid, "", std::nullopt, "running " + after, "a pass the pipeline has run",
                 "a pass it has not run"};
  if (passesRun == 0 && snap->format == SourceFormat::Pte) return *snap;  // a .pte as stored runs as it is
  Program p = *snap;
  ExecutorchBackendConfig config = pipeline.config();
  if (passesRun < passes.size()) config.memoryPlanning.algorithms = {"naive"};
  for (size_t i = passesRun; i < passes.size(); ++i) {
    const Pass& pass = *passes[i];
    if (!finishesForRunning(pass.name()) || !pass.enabled(config)) continue;
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
      size_t converted = passes.size();
      for (size_t k = 0; k < passes.size(); ++k)
        if (passes[k]->name() == "ReplaceViewOpsWithViewCopyOpsPass") converted = k + 1;
      if (passesRun < converted && converted < passes.size())
        why += " (an ATen-dialect program runs from after ReplaceViewOpsWithViewCopyOpsPass on)";
      return Error{ErrorCode::Unsupported, snap->path, std::nullopt,
                   "finishing " + after + " for running (" + pass.name() + ")", "", why};
    }
  }
  auto emitted = emitProgram(p, config);
  if (!emitted)
    return Error{ErrorCode::Unsupported, snap->path, std::nullopt, "emitting " + after + " for running", "",
                 emitted.error().message()};
  return emitted;
}

}  // namespace lstudio
