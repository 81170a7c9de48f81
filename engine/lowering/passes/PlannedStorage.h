// What MemoryPlanningPass places in the arena (mem_id 1), shared with the
// passes that reason about its lifetimes before it runs
// (MemoryAwareOrderPass): each value's role in the signature, and per
// storage root whether it is planned, its aligned bytes and whether it lives
// through the whole method.
#pragma once

#include <optional>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio::passes {

/// What each value is to the method's signature, as the alloc_* options ask.
struct TensorRoles {
  std::vector<bool> isInput, isOutput, isMutable, trained;
  std::vector<ValueId> sharedState;  ///< mutable buffers planned across methods, in signature order
};

TensorRoles tensorRoles(const Method& m, const MemoryPlanningConfig& mc);

struct PlannedStorage {
  uint64_t bytes = 0;      ///< rounded up to the alignment
  uint64_t nbytes = 0;     ///< before rounding (the greedy's sort key needs it)
  bool wholeLife = false;  ///< state: a mutable buffer or a trained weight
};

/// How the planner treats storage root `root`: nullopt when it is not planned
/// in mem_id 1 (a constant, an input or output the caller allocates, shared
/// state, an unbounded dynamic tensor).
std::optional<PlannedStorage> plannedStorage(const Method& m, const MemoryPlanningConfig& mc,
                                             const TensorRoles& roles, ValueId root);

}  // namespace lstudio::passes
