// Planning the memory of a method and explaining the result: the problem
// built from the method's tensors, the plan of a chosen algorithm, the lower
// bound, and per arena the step where live memory peaks with the tensors
// alive there ("why is my arena this big"). Also exports a plan as a
// Chrome/Perfetto trace and as CSV.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/planning/MemoryPlanner.h"

namespace lstudio {

struct PlanOptions {
  std::string algorithm = "suite";
  /// Bytes every tensor size and offset is rounded to; 0 = the alignment the
  /// stored plan used (inferred), or 16 (ExecuTorch's default) without one.
  uint64_t alignment = 0;
};

/// One tensor alive at an arena's peak.
struct PeakTensor {
  ValueId value = kNoValue;
  std::string name;      ///< value name, or "values[i]"
  uint64_t size = 0;     ///< bytes (aligned)
  int32_t first = 0, last = 0;
  int32_t producer = -1; ///< node that first writes it, or -1 (an input)
  std::string producerOp;
};

struct ArenaPlan {
  uint32_t memId = 0;
  std::optional<uint64_t> stored;  ///< arena size in the file, if any
  uint64_t planned = 0;
  uint64_t lowerBound = 0;  ///< includes `padding`
  uint64_t padding = 0;     ///< bytes ExecuTorch adds after the last tensor (XNNPACK programs)
  /// The bound of the stored plan's method in a memory-aware order with
  /// in-place reuse (studio_memory_aware_order); 0 when it cannot be reordered.
  uint64_t reorderedBound = 0;
  int32_t peakStep = -1;
  /// 1 - lowerBound / planned: the share of the arena no schedule can use.
  double fragmentation() const { return planned ? 1.0 - double(lowerBound) / double(planned) : 0.0; }
  std::vector<PeakTensor> peak;  ///< largest first
};

struct MethodPlan {
  std::string method;
  std::string algorithm;  ///< the planner that produced `result` (for a suite: which one won)
  PlanProblem problem;
  /// Values of each problem tensor (a storage: a tensor with its aliases).
  std::vector<std::vector<ValueId>> storageValues;
  PlanResult result;
  std::vector<ArenaPlan> arenas;
  double planMilliseconds = 0;
};

/// Builds the planning problem from the method's planned tensors (as its
/// stored plan records them) and plans it with `options.algorithm`.
Result<MethodPlan> planMethod(const Method& m, const PlanOptions& options);

/// Writes `plan` into the method: every value of each planned storage gets
/// the storage's new slot, and non_const_buffer_sizes the new arenas. The
/// result is checked: no two live tensors may share bytes afterwards.
Status applyPlan(Method& m, const MethodPlan& plan);

/// Chrome trace / Perfetto JSON: a process per method, a track per mem_id,
/// one slice per tensor (1 µs of trace time = 1 execution step; offset and
/// bytes in args) and a counter of live bytes per mem_id.
std::string planTraceJson(const std::vector<MethodPlan>& plans);
/// CSV: method, mem_id, value, name, bytes, offset, first_step, last_step, producer.
std::string planCsv(const std::vector<MethodPlan>& plans, const std::vector<const Method*>& methods);

}  // namespace lstudio
