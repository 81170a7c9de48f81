// Memory planning: assigning every planned tensor a byte offset in its
// arena (mem_id) so that tensors alive at the same time never share bytes.
//
// A PlanProblem is what ExecuTorch's planners see: one entry per storage
// (a tensor with its views and in-place results folded in), its size
// already rounded up to the alignment, its lifetime in execution steps
// (inclusive) and its arena. Planners are interchangeable behind
// MemoryPlanner; verifyPlan checks any result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/support/Error.h"

namespace lstudio {

struct PlanTensor {
  uint64_t size = 0;   ///< bytes, rounded up to the problem's alignment
  int32_t first = 0;   ///< first step it is alive
  int32_t last = 0;    ///< last step it is alive (inclusive, >= first)
  uint32_t memId = 1;  ///< arena; 0 is reserved for constants
  /// Bytes before alignment (0: unknown, `size` stands in). ExecuTorch's
  /// greedy sorts by this rounded to 16 — the TensorSpec's own alignment
  /// before the planner realigns it — so at any other alignment the visiting
  /// order depends on it.
  uint64_t bytes = 0;
};

struct PlanProblem {
  /// In ExecuTorch's collection order (the order in which its planner meets
  /// the tensors: graph order of the nodes that produce them).
  std::vector<PlanTensor> tensors;
  uint64_t alignment = 16;
  /// Results of copy_ write-backs into mutated buffers, which ExecuTorch 1.5's
  /// planner still places as tensors of their own: stale specs left on the
  /// output node, alive at that step only. Only the ExecuTorch-greedy port
  /// visits them (after `tensors`, as ExecuTorch meets them last), so that
  /// the real tensors land where ExecuTorch puts them; no value takes their
  /// offsets and the other planners ignore them.
  std::vector<PlanTensor> staleWriteBacks;
};

struct PlanResult {
  std::string algorithm;
  std::vector<uint64_t> offsets;     ///< per tensor, within its arena
  std::vector<uint64_t> arenaSizes;  ///< per mem_id (index 0 always 0)
  uint64_t total() const;
};

class MemoryPlanner {
 public:
  virtual ~MemoryPlanner() = default;
  virtual std::string name() const = 0;
  /// Plans `p`. Problems are validated by validateProblem first (callers
  /// may rely on it): planners can assume sizes and lifetimes are sane.
  virtual PlanResult plan(const PlanProblem& p) const = 0;
};

/// Rejects negative lifetimes, first > last, and sizes that would overflow.
Status validateProblem(const PlanProblem& p);

/// No two tensors of the same arena alive at the same step share a byte, and
/// every tensor lies inside its arena. Returns the first violation.
Status verifyPlan(const PlanProblem& p, const PlanResult& r);

/// Per arena: the peak over steps of the summed sizes of live tensors.
std::vector<uint64_t> lowerBounds(const PlanProblem& p);

}  // namespace lstudio
