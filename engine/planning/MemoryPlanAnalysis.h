// Reconstructs and checks the memory plan stored in a method: the lifetime
// of every planned tensor in execution order, the arena sizes, the lower
// bound any plan could reach, and an overlap check.
//
// Lifetimes: a tensor lives from the first instruction that references it to
// the last one; method inputs live from step 0, outputs and tensors with an
// initial value (mutable buffers) until the last step. A backward jump
// (a loop) stretches every lifetime that touches the loop over all of it.
// Tensors at the same (mem_id, offset) whose lifetimes meet are one storage
// (a view of its base, or an in-place result) and are counted once; so is a
// tensor no instruction writes at a slot in use before it (a view, which
// ExecuTorch emits without an instruction): it extends its base's lifetime.
//
// The lower bound of an arena is the peak over steps of the summed sizes of
// the live storages, each rounded up to the plan's alignment (inferred as
// the largest power of two up to 16 that divides every planned offset, 16
// being ExecuTorch's default), plus the padding ExecuTorch adds to every used
// arena of XNNPACK programs. ExecuTorch's planners round every size the same
// way, so their arenas are never below this bound.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/Ir.h"

namespace lstudio {

struct PlannedTensor {
  ValueId value = kNoValue;
  uint32_t memId = 0;
  uint64_t offset = 0;
  uint64_t size = 0;   ///< bytes (upper bound for dynamic shapes)
  int32_t first = -1;  ///< first step it is live; -1 when no instruction references it
  int32_t last = -1;
  int32_t storage = -1;  ///< index of its storage (alias group) in the arena's storages
};

/// A range of bytes used over a lifetime by one tensor and its aliases.
struct Storage {
  uint32_t memId = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  int32_t first = 0, last = 0;
  std::vector<ValueId> tensors;
};

struct ArenaStats {
  uint32_t memId = 0;
  uint64_t size = 0;        ///< as stored in non_const_buffer_sizes
  uint64_t highWater = 0;   ///< max over planned tensors of offset + size
  uint64_t lowerBound = 0;  ///< peak of summed live storage sizes (aligned)
  int32_t peakStep = -1;    ///< first step where the lower bound is reached
  /// The bound another order of independent operators and in-place reuse of
  /// dying arguments would give (studio_memory_aware_order; filled by
  /// addReorderedBounds, else 0).
  uint64_t reorderedBound = 0;
  size_t tensors = 0;
  size_t storages = 0;
  /// size / lowerBound (1.0 is optimal); 0 when the bound is 0.
  double ratio() const { return lowerBound ? static_cast<double>(size) / static_cast<double>(lowerBound) : 0.0; }
};

/// Two storages alive at the same step that share bytes.
struct Overlap {
  uint32_t memId = 0;
  ValueId a = kNoValue, b = kNoValue;
  int32_t step = 0;  ///< a step where both are alive
};

struct MemoryPlanReport {
  uint32_t alignment = 16;
  int32_t steps = 0;  ///< instructions in the method
  std::vector<PlannedTensor> tensors;
  std::vector<Storage> storages;
  std::vector<ArenaStats> arenas;  ///< one per mem_id >= 1 in non_const_buffer_sizes
  std::vector<Overlap> overlaps;   ///< at most kMaxReportedOverlaps
  size_t overlapCount = 0;
  size_t unreferenced = 0;  ///< planned tensors no instruction, input or output uses
  bool loops = false;       ///< the method has backward jumps
  static constexpr size_t kMaxReportedOverlaps = 100;

  bool overlapFree() const { return overlapCount == 0; }
};

MemoryPlanReport analyzeMemoryPlan(const Method& method);

/// The largest alignment the stored plan is consistent with: the largest power of two that
/// divides every planned offset and every used arena's size (less the padding ExecuTorch adds
/// for XNNPACK), 16 (ExecuTorch's default) when nothing is planned. Planning again with it gives
/// the stored plan back: at offsets that are multiples of it, sizes rounded to it conflict
/// exactly where the stored plan's did, so a planner meets the same choices. A file planned
/// with alignment 4096 reads as 4096; one planned with 16 may read higher, never lower (so the
/// report's bounds keep ExecuTorch's default of 16 as their ceiling; re-lowering uses this).
uint64_t storedPlanAlignment(const Method& method);

}  // namespace lstudio
