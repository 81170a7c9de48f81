// Any snapshot of the lowering made runnable by the studio's interpreter, so that the values
// after each pass can be compared with the values after another.
#pragma once

#include <cstddef>

#include "engine/ir/Ir.h"
#include "engine/lowering/Pipeline.h"
#include "engine/support/Error.h"

namespace lstudio {

/// The passes that finish a snapshot for running. Each is needed to emit instructions and
/// leaves the numbers alone: what the snapshot computes is what the finished program
/// computes. MemoryPlanningPass runs with the naive planner (no tensor shares bytes), so a
/// plan's reuse shows only in the snapshot after the real MemoryPlanningPass.
bool finishesForRunning(const std::string& passName);

/// The program after the first `passesRun` passes of `pipeline` (which must have run that
/// far), finished by the remaining passes finishesForRunning() names, then emitted. After the
/// last pass it is the program the pipeline made, emitted as it is. An error names the pass
/// or emission step that could not finish it (an ATen-dialect snapshot before to_edge, say).
Result<Program> executableSnapshot(const Pipeline& pipeline, size_t passesRun);

}  // namespace lstudio
