#include "engine/planning/Planners.h"

#include <algorithm>
#include <future>
#include <numeric>

#include "engine/planning/EtGreedyPlanner.h"

namespace lstudio {
namespace {

uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

uint32_t maxMemId(const PlanProblem& p) {
  uint32_t m = 1;
  for (const auto& t : p.tensors) m = std::max(m, t.memId);
  return m;
}

/// Places tensors in `order`; returns offsets and per-arena sizes.
/// Placed tensors are indexed by blocks of steps, so finding the ones alive
/// together with a new tensor costs about the size of the live set, not the
/// number of tensors placed so far.
PlanResult bestFitInOrder(const PlanProblem& p, const std::vector<size_t>& order) {
  constexpr int32_t kBlock = 32;
  PlanResult r;
  r.offsets.assign(p.tensors.size(), 0);
  r.arenaSizes.assign(maxMemId(p) + 1, 0);
  int32_t lastStep = 0;
  for (const auto& t : p.tensors) lastStep = std::max(lastStep, t.last);
  size_t blocks = static_cast<size_t>(lastStep / kBlock) + 1;
  // Per arena: for each block of steps, the placed tensors alive in it.
  std::vector<std::vector<std::vector<uint32_t>>> byBlock(r.arenaSizes.size());
  std::vector<uint32_t> stamp(p.tensors.size(), 0);
  uint32_t round = 0;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i : order) {
    const PlanTensor& t = p.tensors[i];
    auto& index = byBlock[t.memId];
    if (index.empty()) index.resize(blocks);
    ++round;
    busy.clear();
    for (int32_t b = t.first / kBlock; b <= t.last / kBlock; ++b)
      for (uint32_t j : index[b]) {
        if (stamp[j] == round) continue;
        stamp[j] = round;
        const PlanTensor& q = p.tensors[j];
        if (q.first <= t.last && t.first <= q.last) busy.push_back({r.offsets[j], r.offsets[j] + q.size});
      }
    std::sort(busy.begin(), busy.end());
    // The smallest gap between live tensors that fits, else on top of them.
    uint64_t best = UINT64_MAX, bestGap = UINT64_MAX, cursor = 0;
    for (const auto& [off, end] : busy) {
      if (off > cursor) {
        uint64_t gap = off - cursor;
        if (gap >= t.size && gap < bestGap) {
          bestGap = gap;
          best = cursor;
        }
      }
      cursor = std::max(cursor, alignUp(end, p.alignment));
    }
    uint64_t offset = best != UINT64_MAX ? best : cursor;
    r.offsets[i] = offset;
    for (int32_t b = t.first / kBlock; b <= t.last / kBlock; ++b) index[b].push_back(static_cast<uint32_t>(i));
    r.arenaSizes[t.memId] = std::max(r.arenaSizes[t.memId], alignUp(offset + t.size, p.alignment));
  }
  return r;
}

/// The plan with the smallest total of concurrently running plans; ties go
/// to the earlier one, so the result does not depend on timing.
PlanResult smallest(std::vector<std::future<PlanResult>>& runs) {
  PlanResult best;
  bool have = false;
  for (auto& f : runs) {
    PlanResult r = f.get();
    if (!have || r.total() < best.total()) {
      best = std::move(r);
      have = true;
    }
  }
  return best;
}

}  // namespace

PlanResult NaivePlanner::plan(const PlanProblem& p) const {
  PlanResult r;
  r.algorithm = name();
  r.offsets.resize(p.tensors.size());
  r.arenaSizes.assign(maxMemId(p) + 1, 0);
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const PlanTensor& t = p.tensors[i];
    r.offsets[i] = r.arenaSizes[t.memId];
    r.arenaSizes[t.memId] += alignUp(t.size, p.alignment);
  }
  return r;
}

PlanResult BestFitPlanner::plan(const PlanProblem& p) const {
  const auto& ts = p.tensors;
  std::vector<size_t> base(ts.size());
  std::iota(base.begin(), base.end(), 0);
  auto length = [&](size_t i) { return static_cast<uint64_t>(ts[i].last - ts[i].first + 1); };
  std::vector<std::vector<size_t>> orders;
  auto sorted = [&](auto key) {
    std::vector<size_t> o = base;
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
    orders.push_back(std::move(o));
  };
  sorted([&](size_t i) { return std::pair(ts[i].size, length(i)); });
  sorted([&](size_t i) { return std::pair(length(i), ts[i].size); });
  sorted([&](size_t i) { return ts[i].size * length(i); });
  std::vector<size_t> byDefinition = base;
  std::stable_sort(byDefinition.begin(), byDefinition.end(), [&](size_t a, size_t b) { return ts[a].first < ts[b].first; });
  orders.push_back(std::move(byDefinition));
  // The orders are independent: plan them concurrently, keep the smallest.
  std::vector<std::future<PlanResult>> runs;
  for (const auto& o : orders) runs.push_back(std::async(std::launch::async, [&p, &o] { return bestFitInOrder(p, o); }));
  PlanResult best = smallest(runs);
  best.algorithm = name();
  return best;
}

PlannerSuite::PlannerSuite(std::vector<std::shared_ptr<const MemoryPlanner>> planners) : planners_(std::move(planners)) {}

PlanResult PlannerSuite::plan(const PlanProblem& p) const {
  std::vector<std::future<PlanResult>> runs;
  for (const auto& planner : planners_)
    runs.push_back(std::async(std::launch::async, [&p, planner] { return planner->plan(p); }));
  PlanResult best = smallest(runs);
  best.algorithm = name() + " (" + best.algorithm + ")";
  return best;
}

std::shared_ptr<const MemoryPlanner> plannerByName(const std::string& name) {
  if (name == "naive") return std::make_shared<NaivePlanner>();
  if (name == "et-greedy") return std::make_shared<EtGreedyPlanner>();
  if (name == "best-fit") return std::make_shared<BestFitPlanner>();
  if (name == "suite")
    return std::make_shared<PlannerSuite>(std::vector<std::shared_ptr<const MemoryPlanner>>{
        std::make_shared<EtGreedyPlanner>(), std::make_shared<BestFitPlanner>()});
  return nullptr;
}

std::vector<std::string> plannerNames() { return {"naive", "et-greedy", "best-fit", "suite"}; }

}  // namespace lstudio
