#include "engine/planning/MemoryPlanner.h"

#include <algorithm>
#include <map>

namespace lstudio {

uint64_t PlanResult::total() const {
  uint64_t t = 0;
  for (uint64_t s : arenaSizes) t += s;
  return t;
}

Status validateProblem(const PlanProblem& p) {
  if (p.alignment == 0 || (p.alignment & (p.alignment - 1)) != 0)
    return Error{ErrorCode::Invalid, {}, std::nullopt, "plan alignment", "a power of two", std::to_string(p.alignment)};
  uint64_t sum = 0;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const PlanTensor& t = p.tensors[i];
    std::string who = "planned tensor " + std::to_string(i);
    if (t.first < 0 || t.last < t.first)
      return Error{ErrorCode::Invalid, {}, std::nullopt, who + " lifetime", "0 <= first <= last",
                   "[" + std::to_string(t.first) + ", " + std::to_string(t.last) + "]"};
    if (t.memId == 0)
      return Error{ErrorCode::Invalid, {}, std::nullopt, who + " mem_id", "an arena >= 1 (0 holds constants)", "0"};
    if (__builtin_add_overflow(sum, t.size, &sum) || sum > (uint64_t(1) << 62))
      return Error{ErrorCode::Overflow, {}, std::nullopt, "summed tensor sizes", "< 2^62 bytes", "more"};
  }
  return Ok{};
}

Status verifyPlan(const PlanProblem& p, const PlanResult& r) {
  if (r.offsets.size() != p.tensors.size())
    return Error{ErrorCode::Invalid, {}, std::nullopt, r.algorithm + " plan", std::to_string(p.tensors.size()) + " offsets",
                 std::to_string(r.offsets.size())};
  std::vector<size_t> order(p.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Sorted by arena and offset, each tensor need only be compared with the
  // ones that start before it ends.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(p.tensors[a].memId, r.offsets[a]) < std::pair(p.tensors[b].memId, r.offsets[b]);
  });
  for (size_t i = 0; i < order.size(); ++i) {
    size_t a = order[i];
    const PlanTensor& ta = p.tensors[a];
    uint64_t arena = ta.memId < r.arenaSizes.size() ? r.arenaSizes[ta.memId] : 0;
    if (r.offsets[a] % p.alignment != 0)
      return Error{ErrorCode::Invalid, {}, std::nullopt, r.algorithm + ": tensor " + std::to_string(a) + " offset",
                   "a multiple of " + std::to_string(p.alignment), std::to_string(r.offsets[a])};
    if (r.offsets[a] + ta.size > arena)
      return Error{ErrorCode::OutOfRange, {}, std::nullopt, r.algorithm + ": tensor " + std::to_string(a),
                   "inside arena " + std::to_string(ta.memId) + " of " + std::to_string(arena) + " bytes",
                   "bytes [" + std::to_string(r.offsets[a]) + ", " + std::to_string(r.offsets[a] + ta.size) + ")"};
    if (ta.size == 0) continue;
    for (size_t j = i + 1; j < order.size(); ++j) {
      size_t b = order[j];
      const PlanTensor& tb = p.tensors[b];
      if (tb.memId != ta.memId || r.offsets[b] >= r.offsets[a] + ta.size) break;
      if (tb.size == 0) continue;
      if (ta.first <= tb.last && tb.first <= ta.last)
        return Error{ErrorCode::Invalid, {}, std::nullopt, r.algorithm + ": tensors " + std::to_string(a) + " and " + std::to_string(b),
                     "disjoint bytes while both are alive",
                     "both alive at step " + std::to_string(std::max(ta.first, tb.first)) + " and overlapping from byte " +
                         std::to_string(r.offsets[b])};
    }
  }
  return Ok{};
}

std::vector<uint64_t> lowerBounds(const PlanProblem& p) {
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> events;
  uint32_t maxMem = 0;
  for (const auto& t : p.tensors) {
    events[t.memId].push_back({t.first, static_cast<int64_t>(t.size)});
    events[t.memId].push_back({int64_t(t.last) + 1, -static_cast<int64_t>(t.size)});
    maxMem = std::max(maxMem, t.memId);
  }
  std::vector<uint64_t> out(maxMem + 1, 0);
  for (auto& [mem, ev] : events) {
    std::sort(ev.begin(), ev.end());  // frees before allocations at the same step
    int64_t live = 0;
    for (auto [step, delta] : ev) {
      live += delta;
      out[mem] = std::max<uint64_t>(out[mem], static_cast<uint64_t>(live));
    }
  }
  return out;
}

}  // namespace lstudio
