// The emitter: the pipeline's final program (a torch.export graph after
// MemoryPlanningPass) becomes the .pte-form Program that PteWriter writes and
// ExecuTorch's runtime runs, as exir/emit does it:
//   - method inputs are the user inputs only; parameters, constant tensors
//     and buffers no output mutates become constant tensors (bytes in the
//     constant segment, or EXTERNAL with their fully qualified name in the
//     .ptd their constant tag names); their bytes stay where they are (the
//     mapped .pt2), nothing is copied;
//   - mutated buffers are planned tensors without an initial value (ExecuTorch
//     serializes only shape and dtype unless a pass asks for the initial
//     state), named when emit_mutable_buffer_names; unplanned and unnamed is
//     an error, as in ExecuTorch;
//   - outputs are the graph's outputs in order (buffer mutations first, as
//     torch.export and insert_write_back_for_buffers_pass order them);
//   - values are renumbered in the order ExecuTorch emits them (placeholders,
//     then each instruction's arguments, list items before their list,
//     then outputs); values nothing reads are dropped;
//   - kernel arguments keep the pipeline's order (schema arguments, outs,
//     returns); the operator table lists operators by first use;
//   - container metadata: the pytree specs torch.export recorded for the
//     root call (treespec JSON, as ExecuTorch copies them), else those of
//     forward(*user inputs) returning the user outputs;
//   - stack traces only when emit_stacktrace.
//   - delegate calls keep their blob where it lies (a de-lowered .pte's
//     mapped file), with the program's named data;
//   - a method that came from a .pte keeps its pytree specs.
// What cannot run is an error naming the node and operator: an operator
// without out variant, a control-flow instruction.
#pragma once

#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"
#include "engine/formats/PteWriter.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

struct EmitReport {
  size_t userInputs = 0;
  size_t constants = 0;        ///< constant tensors kept inside the .pte
  size_t externalTensors = 0;  ///< constant tensors left for .ptd files
  size_t mutableBuffers = 0;
  size_t droppedValues = 0;    ///< values no instruction, input or output uses
  /// Things a user should know (a buffer mutation that is never written back, ...).
  std::vector<std::string> notes;
};

/// Emits `lowered` (every method planned by MemoryPlanningPass) under `config`.
Result<Program> emitProgram(const Program& lowered, const ExecutorchBackendConfig& config, EmitReport* report = nullptr);

/// The serializer options the config asks for (segment, constant and delegate alignments).
PteWriteOptions writeOptionsFor(const ExecutorchBackendConfig& config);


}  // namespace lstudio
