// Memory-aware operator order, a studio extension beyond ExecuTorch.
//
// Every planner places tensors for a fixed operator order, so no plan can go
// below the peak of live bytes in that order (the lower bound the Memory Plan
// draws). Operators that do not depend on each other may run in another
// order with a lower peak; this finds one (greedy list scheduling with
// several priority rules, the best kept, never worse than the given order;
// after Ahn et al., "Ordering Chaos", MLSys 2020, without their exact search).
//
// It also knows where an operator may write its result over an argument that
// dies at it (an elementwise operator whose result has the argument's dtype,
// sizes and contiguous layout: each element is read before the same element
// is written), which lowers the peak further; the planner shares such pairs.
//
// Dependencies come from what each node reads and writes, per storage (a
// tensor with its views): a write stays after every earlier access of its
// storage and before every later one; reads of one storage may swap.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/support/Error.h"

namespace lstudio {

/// How a storage counts toward the peak: its bytes (0: not planned, e.g. a
/// constant) and whether it is alive from the first step or through the last
/// whatever the order (graph inputs, outputs, state).
struct OrderStorage {
  uint64_t bytes = 0;
  bool fromStart = false, toEnd = false;
};

struct OrderProblem {
  std::vector<std::vector<int32_t>> preds;    ///< per node: nodes that must run before it
  std::vector<std::vector<int32_t>> touches;  ///< per node: storages it reads or writes, each once
  std::vector<OrderStorage> storages;
  std::vector<ValueId> roots;                 ///< per storage: its root value
  /// Per node: the storage its result may be written over (when that dies at
  /// the node) and the result's storage; -1 when none.
  std::vector<int32_t> overwrites, result;
};

struct OrderResult {
  std::vector<int32_t> order;  ///< node indices in run order
  uint64_t peakBefore = 0;     ///< peak of live bytes as ordered
  uint64_t peakAfter = 0;      ///< in `order` (<= peakBefore)
  std::string rule;            ///< the priority rule that won, or "as ordered"
};

/// The value whose bytes `v` lives in: a view's base, through views of views.
ValueId storageRootOf(const Method& m, ValueId v);

/// The argument kernel node `n` may write its result over, if any: `n` is an
/// elementwise operator (add, mul, relu, batch norm, ...), and the argument
/// has its first result's dtype and sizes, both contiguous, and covers its
/// whole storage. Whether the argument dies at `n` is the caller's to check.
ValueId overwritableArgument(const Method& m, const Node& n);

/// How the values of a method map to storages: `rootOf(v)` names the value
/// standing for v's storage (default: storageRootOf), `storageOf(root)` says
/// how that storage counts.
struct StorageModel {
  std::function<ValueId(ValueId)> rootOf;
  std::function<OrderStorage(ValueId root)> storageOf;
};

/// The ordering problem of `m` (graph inputs and outputs are marked fromStart /
/// toEnd here). Fails for a method whose order cannot change safely (jumps,
/// several chains).
Result<OrderProblem> orderProblem(const Method& m, const StorageModel& model);

/// Peak over steps (each node, then the output step) of the summed bytes of
/// live storages when the nodes run in `order`, results written over dying
/// arguments where `overwrites` allows.
uint64_t peakLiveBytes(const OrderProblem& p, const std::vector<int32_t>& order);

/// A valid order with the lowest peak the rules find (the given order when
/// none is lower).
OrderResult memoryAwareOrder(const OrderProblem& p);

/// Fills each arena's reorderedBound for a method's stored plan `r` (its
/// storages as analyzeMemoryPlan grouped them). Leaves 0 where the method's
/// order cannot change (jumps, several chains).
void addReorderedBounds(const Method& m, MemoryPlanReport& r);

}  // namespace lstudio
