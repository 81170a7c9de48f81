// What the memory-plan view draws, computed once per (program, method) on a
// worker and then only read: one rectangle per planned tensor (x = steps it
// is live, y = its bytes in the arena), grouped in lanes by mem_id and
// bucketed by first step so a frame visits only the rectangles it shows; the
// live bytes over steps; the storages alive at each arena's peak step.
// Lifetimes, storages, arena sizes and lower bounds come from
// analyzeMemoryPlan; nothing here re-derives them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/planning/MemoryPlanAnalysis.h"

namespace lstudio::ui {

/// One planned tensor as drawn.
struct PlanRect {
  ValueId value = kNoValue;
  int32_t lane = 0;
  uint64_t offset = 0, size = 0;
  int32_t first = 0, last = 0;  ///< drawn over steps [first, last + 1)
  int32_t producer = -1;        ///< node that writes it; -1 for inputs and views
  int32_t storage = -1;         ///< index into MemoryPlanReport::storages
  int32_t opKey = 0, moduleKey = 0;  ///< indices into PlanLayout::opKeys / moduleKeys
};

/// Rectangles whose first step falls in one bucket of kBucketSteps steps.
struct PlanBucket {
  int32_t maxLast = -1;  ///< the latest last step in the bucket (for culling)
  std::vector<int32_t> rects;
};

struct PlanLane {
  uint32_t memId = 0;
  Device device;  ///< where the arena is (non_const_buffer_device); CPU memory by default
  ArenaStats arena;
  uint64_t extent = 0;  ///< max(arena size, high water): the lane's full height in bytes
  std::vector<PlanBucket> buckets;
  /// Bytes of the live storages at every step (each rounded up to the plan's
  /// alignment, as the lower bound counts them).
  std::vector<uint64_t> live;
  uint64_t maxLive = 0;
  /// Storages alive at the peak step, largest first (ties: lower offset).
  std::vector<int32_t> peakStorages;
};

struct PlanLayout {
  static constexpr int32_t kBucketSteps = 64;
  std::shared_ptr<const Program> program;
  int methodIndex = -1;
  bool planned = false;
  std::string why;  ///< when not planned: what is missing
  MemoryPlanReport report;
  std::vector<PlanRect> rects;
  std::vector<PlanLane> lanes;
  /// Colour keys: the producing operator ("aten::mm.out", a delegate's backend,
  /// "input", "state", "view") and the producing module ("layers.3", "(no module)"),
  /// each list ordered by the bytes*steps its tensors cover, largest first.
  std::vector<std::string> opKeys, moduleKeys;
  std::vector<int32_t> rectOfValue;  ///< value id -> index into rects, -1 when not drawn

  const Method& method() const { return program->methods[static_cast<size_t>(methodIndex)]; }
  int laneOf(uint32_t memId) const;
  /// Index into rects of the storage's first tensor.
  int32_t rectOfStorage(int32_t storage) const;
  /// The operator a node runs, for labels: "aten::mm.out", "XnnpackBackend", "move", ...
  std::string nodeOp(int32_t node) const;
  /// Calls f(rectIndex) for every rectangle of `lane` live somewhere in steps [x0, x1].
  template <typename F>
  void forEachInSteps(int lane, double x0, double x1, F&& f) const {
    const PlanLane& l = lanes[static_cast<size_t>(lane)];
    for (size_t b = 0; b < l.buckets.size(); ++b) {
      if (static_cast<double>(b) * kBucketSteps > x1) break;
      if (l.buckets[b].maxLast + 1 < x0) continue;
      for (int32_t i : l.buckets[b].rects) {
        const PlanRect& r = rects[static_cast<size_t>(i)];
        if (r.first <= x1 && r.last + 1 >= x0) f(i);
      }
    }
  }
};

/// Builds the layout of `methodIndex`; a method without a memory plan gives
/// planned == false and a reason. Safe on any thread.
std::shared_ptr<const PlanLayout> buildPlanLayout(std::shared_ptr<const Program> program, int methodIndex);

}  // namespace lstudio::ui
