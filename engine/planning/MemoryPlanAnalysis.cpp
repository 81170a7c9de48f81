#include "engine/planning/MemoryPlanAnalysis.h"

#include "engine/planning/EtGreedyPlanner.h"

#include <algorithm>
#include <map>

namespace lstudio {
namespace {

uint64_t roundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

struct Lifetimes {
  std::vector<int32_t> first, last;
  explicit Lifetimes(size_t n) : first(n, -1), last(n, -1) {}
  void touch(ValueId v, int32_t step) {
    if (v < 0 || static_cast<size_t>(v) >= first.size()) return;
    if (first[v] < 0 || step < first[v]) first[v] = step;
    if (step > last[v]) last[v] = step;
  }
};

/// First and last step at which each value is read: node arguments (list items too),
/// method inputs at step 0, outputs at the last step.
Lifetimes valueLifetimes(const Method& m, int32_t steps, int32_t lastStep) {
  Lifetimes life(m.values.size());
  auto touchValue = [&](ValueId v, int32_t step) {
    life.touch(v, step);
    if (v < 0 || static_cast<size_t>(v) >= m.values.size()) return;
    const auto& p = m.values[v].payload;
    if (auto* tl = std::get_if<TensorList>(&p))
      for (ValueId x : tl->items) life.touch(x, step);
    else if (auto* ol = std::get_if<OptionalTensorList>(&p))
      for (ValueId x : ol->items) life.touch(x, step);
  };
  for (int32_t s = 0; s < steps; ++s)
    for (ValueId v : m.nodes[s].args) touchValue(v, s);
  for (ValueId v : m.inputs) touchValue(v, 0);
  for (ValueId v : m.outputs) touchValue(v, lastStep);
  // A move (a cond's branch handing over its result) makes the destination
  // refer to the source's bytes: they live as long as the destination does.
  for (int32_t s = steps; s-- > 0;) {
    const Node& n = m.nodes[s];
    if (n.kind != NodeKind::Move || n.args.size() != 2) continue;
    const ValueId from = n.args[0], to = n.args[1];
    if (from < 0 || to < 0 || static_cast<size_t>(from) >= life.last.size() || static_cast<size_t>(to) >= life.last.size()) continue;
    life.last[from] = std::max(life.last[from], life.last[to]);
  }
  return life;
}

/// Per step, the cond branches it lies in, as (first jump's step, 0 for the true
/// branch or 1 for the false one): ExecuTorch's layout JumpFalse(pred -> F), true
/// branch, JumpFalse(false -> end), F: false branch. Steps of the two branches
/// of one cond never both run.
std::vector<std::vector<std::pair<int32_t, int>>> branchesOfSteps(const Method& m, int32_t steps) {
  std::vector<std::vector<std::pair<int32_t, int>>> in(static_cast<size_t>(steps));
  for (int32_t s = 0; s < steps; ++s) {
    const Node& n = m.nodes[s];
    const int64_t t1 = n.jumpTarget;
    if (n.kind != NodeKind::JumpFalse || jumpsAlways(m, n) || t1 < s + 2 || t1 > steps) continue;
    const Node& skip = m.nodes[t1 - 1];
    const int64_t t2 = skip.jumpTarget;
    if (!jumpsAlways(m, skip) || t2 < t1 || t2 > steps) continue;
    for (int64_t k = s + 1; k < t1 - 1; ++k) in[k].push_back({s, 0});
    for (int64_t k = t1; k < t2; ++k) in[k].push_back({s, 1});
  }
  return in;
}

/// Planned tensors with their lifetimes, and the alignment their offsets honour.
void collectPlannedTensors(const Method& m, const Lifetimes& life, int32_t lastStep, MemoryPlanReport& r) {
  uint64_t align = 16;
  for (size_t i = 0; i < m.values.size(); ++i) {
    const TensorSpec* t = m.values[i].tensorIf();
    if (!t || !t->slot) continue;
    PlannedTensor pt;
    pt.value = static_cast<ValueId>(i);
    pt.memId = t->slot->memId;
    pt.offset = t->slot->offset;
    pt.size = t->nbytes().value_or(0);
    pt.first = life.first[i];
    pt.last = life.last[i];
    if (t->storage() == TensorStorage::Mutable) {  // state that persists across calls
      pt.first = 0;
      pt.last = lastStep;
    }
    while (align > 1 && pt.offset % align != 0) align /= 2;
    r.tensors.push_back(pt);
  }
  r.alignment = static_cast<uint32_t>(align);
}

/// Loops: anything live inside [target, jump] must survive every iteration.
void stretchOverLoops(const Method& m, MemoryPlanReport& r) {
  for (int32_t s = 0; s < r.steps; ++s) {
    const Node& n = m.nodes[s];
    if (n.kind != NodeKind::JumpFalse || n.jumpTarget > s) continue;
    r.loops = true;
    int32_t lo = static_cast<int32_t>(n.jumpTarget), hi = s;
    for (auto& pt : r.tensors)
      if (pt.first >= 0 && pt.first <= hi && pt.last >= lo) {
        pt.first = std::min(pt.first, lo);
        pt.last = std::max(pt.last, hi);
      }
  }
}

/// Alias groups: tensors at the same arena and offset whose lifetimes meet (or
/// that are views) share one storage.
void groupAliases(const Method& m, MemoryPlanReport& r) {
  // Views emit no instruction: a value that no instruction writes, first
  // read by a kernel whose writes are known, at a slot whose earlier tensor
  // has the same dtype and byte count, is a view of that tensor, which must
  // stay alive until the view's last use even when the two never meet.
  std::vector<bool> written(m.values.size(), false);
  for (ValueId v : m.inputs)
    if (v >= 0 && static_cast<size_t>(v) < written.size()) written[v] = true;
  for (const Node& n : m.nodes)
    for (ValueId v : n.outputs) written[v] = true;
  auto isViewOf = [&](const PlannedTensor& pt, ValueId base) {
    if (written[pt.value] || pt.first < 0 || static_cast<size_t>(pt.first) >= m.nodes.size()) return false;
    const Node& reader = m.nodes[pt.first];
    const TensorSpec &t = m.values[pt.value].tensor(), &b = m.values[base].tensor();
    return reader.kind == NodeKind::Kernel && !reader.outputs.empty() && t.storage() == TensorStorage::Planned &&
           t.dtype == b.dtype && t.nbytes() == b.nbytes();
  };

  std::vector<size_t> order;
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    if (r.tensors[i].first < 0) {
      ++r.unreferenced;
      continue;
    }
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = r.tensors[a], &y = r.tensors[b];
    return std::tie(x.memId, x.offset, x.first, x.last) < std::tie(y.memId, y.offset, y.first, y.last);
  });
  for (size_t idx : order) {
    PlannedTensor& pt = r.tensors[idx];
    Storage* cur = r.storages.empty() ? nullptr : &r.storages.back();
    if (cur && cur->memId == pt.memId && cur->offset == pt.offset &&
        (pt.first <= cur->last || isViewOf(pt, cur->tensors.front()))) {
      cur->last = std::max(cur->last, pt.last);
      cur->size = std::max(cur->size, pt.size);
      cur->tensors.push_back(pt.value);
    } else {
      r.storages.push_back(Storage{pt.memId, pt.offset, pt.size, pt.first, pt.last, {pt.value}});
    }
    pt.storage = static_cast<int32_t>(r.storages.size() - 1);
  }
}

/// Per-arena statistics and the lower bound: the peak of the live storages' aligned sizes.
void arenaStatistics(const Method& m, MemoryPlanReport& r) {
  for (size_t id = 1; id < m.nonConstBufferSizes.size(); ++id)
    r.arenas.push_back(ArenaStats{static_cast<uint32_t>(id), static_cast<uint64_t>(m.nonConstBufferSizes[id])});
  auto arenaFor = [&](uint32_t memId) -> ArenaStats* {
    for (auto& a : r.arenas)
      if (a.memId == memId) return &a;
    return nullptr;
  };
  for (const auto& pt : r.tensors)
    if (auto* a = arenaFor(pt.memId)) {
      ++a->tensors;
      a->highWater = std::max(a->highWater, pt.offset + pt.size);
    }
  std::map<uint32_t, std::vector<std::pair<int32_t, int64_t>>> events;  // memId -> (step, +/- size)
  for (const auto& s : r.storages) {
    if (auto* a = arenaFor(s.memId)) ++a->storages;
    int64_t sz = static_cast<int64_t>(roundUp(s.size, r.alignment));
    events[s.memId].push_back({s.first, sz});
    events[s.memId].push_back({s.last + 1, -sz});
  }
  for (auto& [memId, ev] : events) {
    std::sort(ev.begin(), ev.end());  // at equal steps, frees (negative) come first
    int64_t live = 0;
    ArenaStats* a = arenaFor(memId);
    if (!a) continue;
    for (auto [step, delta] : ev) {
      live += delta;
      if (live > static_cast<int64_t>(a->lowerBound)) {
        a->lowerBound = static_cast<uint64_t>(live);
        a->peakStep = step;
      }
    }
  }

  // XNNPACK programs need padding after the last tensor of every used arena
  // (ExecuTorch adds it whatever the plan), so no plan can be smaller.
  if (uint64_t pad = etGreedyExtraPadding(m))
    for (auto& a : r.arenas)
      if (a.storages > 0) a.lowerBound += pad;
}

/// Overlap check: storages sorted by offset; compare each with those that
/// start before it ends.
void findOverlaps(const Method& m, MemoryPlanReport& r) {
  const auto branches = branchesOfSteps(m, r.steps);
  // Made in the two branches of one cond: never both alive.
  auto exclusive = [&](const Storage& a, const Storage& b) {
    if (a.first < 0 || b.first < 0 || a.first >= r.steps || b.first >= r.steps) return false;
    for (auto [condA, sideA] : branches[a.first])
      for (auto [condB, sideB] : branches[b.first])
        if (condA == condB && sideA != sideB) return true;
    return false;
  };
  std::vector<size_t> byOffset(r.storages.size());
  for (size_t i = 0; i < byOffset.size(); ++i) byOffset[i] = i;
  std::sort(byOffset.begin(), byOffset.end(), [&](size_t a, size_t b) {
    const auto &x = r.storages[a], &y = r.storages[b];
    return std::tie(x.memId, x.offset) < std::tie(y.memId, y.offset);
  });
  for (size_t i = 0; i < byOffset.size(); ++i) {
    const Storage& a = r.storages[byOffset[i]];
    if (a.size == 0) continue;
    for (size_t j = i + 1; j < byOffset.size(); ++j) {
      const Storage& b = r.storages[byOffset[j]];
      if (b.memId != a.memId || b.offset >= a.offset + a.size) break;
      if (b.size == 0) continue;
      if (a.first <= b.last && b.first <= a.last && !exclusive(a, b)) {
        if (r.overlaps.size() < MemoryPlanReport::kMaxReportedOverlaps)
          r.overlaps.push_back(Overlap{a.memId, a.tensors.front(), b.tensors.front(), std::max(a.first, b.first)});
        ++r.overlapCount;
      }
    }
  }
}

}  // namespace

uint64_t storedPlanAlignment(const Method& m) {
  uint64_t bits = 0;  // every offset and arena size or-ed: its lowest set bit divides them all
  std::vector<bool> used(m.nonConstBufferSizes.size(), false);
  for (const Value& v : m.values)
    if (const TensorSpec* t = v.tensorIf(); t && t->slot) {
      bits |= t->slot->offset;
      if (t->slot->memId < used.size()) used[t->slot->memId] = true;
    }
  const uint64_t pad = etGreedyExtraPadding(m);
  for (size_t id = 1; id < used.size(); ++id)
    if (const auto size = static_cast<uint64_t>(m.nonConstBufferSizes[id]); used[id] && size >= pad) bits |= size - pad;
  return bits ? bits & (~bits + 1) : 16;
}

MemoryPlanReport analyzeMemoryPlan(const Method& m) {
  MemoryPlanReport r;
  r.steps = static_cast<int32_t>(m.nodes.size());
  const int32_t lastStep = std::max(r.steps - 1, 0);
  collectPlannedTensors(m, valueLifetimes(m, r.steps, lastStep), lastStep, r);
  stretchOverLoops(m, r);
  groupAliases(m, r);
  arenaStatistics(m, r);
  findOverlaps(m, r);
  return r;
}

}  // namespace lstudio
