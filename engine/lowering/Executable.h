// Any snapshot of the lowering made runnable by the studio's interpreter, so that the values
// after each pass can be compared with the values after another.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/lowering/Pipeline.h"
#include "engine/run/Interpreter.h"
#include "engine/support/Error.h"

namespace lstudio {

/// The passes that finish a snapshot for running. Each is needed to emit instructions and
/// leaves the numbers alone: what the snapshot computes is what the finished program
/// computes. MemoryPlanningPass runs with the naive planner (no tensor shares bytes), so a
/// plan's reuse shows only in the snapshot after the real MemoryPlanningPass.
bool finishesForRunning(const std::string& passName);

/// `snapshot`, the program after the pass named `after` ("" for the input program), finished
/// by those of `passesToCome` (the names of the passes after it, in order) that
/// finishesForRunning() names, then emitted under `config`. With no passes to come it is the
/// program as lowered, emitted as it is. An error names the pass or emission step that could
/// not finish it (an ATen-dialect snapshot before to_edge's conversion, say).
Result<Program> executableSnapshot(const Program& snapshot, const std::string& after,
                                   const std::vector<std::string>& passesToCome, ExecutorchBackendConfig config);

/// The program after the first `passesRun` passes of `pipeline` (which must have run that
/// far), made executable as above.
Result<Program> executableSnapshot(const Pipeline& pipeline, size_t passesRun);

/// The program a delegate was made from (Delegate::original, an edge program a backend was
/// given) lowered by the studio for its interpreter: to_edge's decompositions first (a backend
/// keeps operators, linear and convolution among them, that portable kernels do not run),
/// then to_executorch's passes under the default config, emitted. An error names the pass
/// that could not lower it.
Result<Program> executableOriginal(const Program& original);

/// `options` with RunOptions::delegateRunner set: a delegate call that keeps its original
/// program runs that program (made executable once per delegate and kept for the run) on the
/// call's inputs, under the same memory and work limits.
run::RunOptions throughDelegates(run::RunOptions options);

/// The example inputs torch.export.save kept in the .pt2 at `path`, as run inputs in order
/// (the default inputs of a run: a program runs on what it was exported with); empty when
/// it has none.
Result<std::vector<run::HostValue>> pt2SampleInputs(const std::string& path);

/// What running one snapshot gave, against the previous snapshot that ran.
struct SnapshotValues {
  bool ran = false;
  std::string error;           ///< why it did not run
  bool samePrograms = false;   ///< the pass changed nothing: the previous row's numbers hold
  bool changed = false;        ///< an output differs from the previous snapshot that ran
  double difference = 0;       ///< the largest |difference| of an output from that snapshot's (those both have)
  size_t outputsBefore = 0;    ///< how many outputs that snapshot had (WeightsToOutputsPass adds some)
  std::optional<run::NodeDifference> firstDifference;  ///< where the numbers first part
  std::vector<uint64_t> checksums;                     ///< FNV-1a-64 of each output
};

/// Runs every snapshot of a lowering on the same inputs: `snapshots[k]` is the program after
/// pass k (0: the input; a null entry did not run), `passNames` the pipeline's passes in order.
/// A snapshot that is the previous one is not run again. A changed output is traced back to
/// the first node whose values differ (the two snapshots run again, traced). `progress(row)`
/// returning false stops it (the rows not reached are left empty).
std::vector<SnapshotValues> runEverySnapshot(const std::vector<std::shared_ptr<const Program>>& snapshots,
                                             const std::vector<std::string>& passNames,
                                             const ExecutorchBackendConfig& config, const run::RunOptions& options,
                                             const std::function<bool(size_t row)>& progress = {});

}  // namespace lstudio
