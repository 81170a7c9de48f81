// Any snapshot of the lowering made runnable by the studio's interpreter, so that the values
// after each pass can be compared with the values after another.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/lowering/Pipeline.h"
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

}  // namespace lstudio
