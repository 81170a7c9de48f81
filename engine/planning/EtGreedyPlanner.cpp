// ExecuTorch's greedy memory planner: both generations, and the arena sizes
// ExecuTorch derives from the shared objects.
#include "engine/planning/EtGreedyPlanner.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "engine/ir/Ir.h"

namespace lstudio {
namespace {

/// ExecuTorch's TensorSpec alignment before the planner realigns it.
constexpr uint64_t kSpecAlignment = 16;

bool aliveTogether(const PlanTensor& a, const PlanTensor& b) {
  return !(a.last < b.first || a.first > b.last);  // inclusive lifetimes
}

uint64_t absDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/// Objects of one arena, in creation order (their index is mem_obj_id).
using Arenas = std::map<uint32_t, std::vector<EtSharedObject>>;

class Placer {
 public:
  Placer(const PlanProblem& p, const EtGreedyOptions& o, EtGreedyTrace& t) : p_(p), o_(o), t_(t) {}

  void place(size_t i, std::vector<EtSharedObject>& objs, size_t obj, uint64_t offsetInObj) {
    EtSharedObject& s = objs[obj];
    const PlanTensor& x = p_.tensors[i];
    s.first = std::min(s.first, x.first);
    s.last = std::max(s.last, x.last);
    s.tensors.push_back(i);
    t_.memObjId[i] = static_cast<int32_t>(obj);
    t_.objectOffset[i] = offsetInObj;
  }

  void create(size_t i, std::vector<EtSharedObject>& objs) {
    const PlanTensor& x = p_.tensors[i];
    objs.push_back(EtSharedObject{x.memId, 0, x.size, x.first, x.last, {}});
    place(i, objs, objs.size() - 1, 0);
  }

  /// Current generation, one tensor: first object with no conflict, else
  /// first object with room above the conflicts, else a new object.
  void current(size_t i, std::vector<EtSharedObject>& objs) {
    const PlanTensor& x = p_.tensors[i];
    for (size_t k = 0; k < objs.size(); ++k) {
      const EtSharedObject& s = objs[k];
      bool free = x.last < s.first || x.first > s.last;  // outside the hull: no conflict possible
      if (!free) {
        free = true;
        for (size_t j : s.tensors)
          if (aliveTogether(x, p_.tensors[j])) {
            free = false;
            break;
          }
      }
      if (!free) continue;
      if (s.size < x.size) {  // ExecuTorch asserts here; stay valid and look further
        t_.unsortedSpecs = true;
        continue;
      }
      place(i, objs, k, 0);
      return;
    }
    if (o_.allowOverlappingAllocations) {
      for (size_t k = 0; k < objs.size(); ++k) {
        const EtSharedObject& s = objs[k];
        uint64_t top = 0;  // highest end among the object's tensors alive with x
        for (size_t j : s.tensors)
          if (aliveTogether(x, p_.tensors[j])) top = std::max(top, t_.objectOffset[j] + p_.tensors[j].size);
        // `top > 0`: ExecuTorch skips objects without conflicts here (step 1 had its chance).
        if (top > 0 && top + x.size <= s.size) {
          place(i, objs, k, top);
          return;
        }
      }
    }
    create(i, objs);
  }

  /// Legacy generation, one tensor: the available object closest in size.
  /// Every object that was the best so far is claimed until x's last step
  /// (and grown), exactly as ExecuTorch 0.5 updated it inside the scan.
  void legacy(size_t i, std::vector<EtSharedObject>& objs) {
    const PlanTensor& x = p_.tensors[i];
    size_t picked = objs.size();
    for (size_t k = 0; k < objs.size(); ++k) {
      EtSharedObject& s = objs[k];
      if (!(x.first > s.last)) continue;
      if (picked == objs.size() || absDiff(s.size, x.size) < absDiff(objs[picked].size, x.size)) {
        picked = k;
        s.last = x.last;
        s.size = std::max(s.size, x.size);
      }
    }
    if (picked == objs.size()) {
      create(i, objs);
      return;
    }
    // place() would widen `last` to the hull; legacy availability tracks the last tensor only.
    EtSharedObject& s = objs[picked];
    s.first = std::min(s.first, x.first);
    s.tensors.push_back(i);
    t_.memObjId[i] = static_cast<int32_t>(picked);
    t_.objectOffset[i] = 0;
  }

 private:
  const PlanProblem& p_;
  const EtGreedyOptions& o_;
  EtGreedyTrace& t_;
};

/// Visiting order. Current: largest first; ExecuTorch inserts each spec
/// after those with an equal key, then reverses the whole list, so equal
/// keys come last-collected first.
std::vector<size_t> visitOrder(const PlanProblem& p, const EtGreedyOptions& o) {
  std::vector<size_t> order(p.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (o.generation == EtGreedyGeneration::Legacy) return order;
  // The key is ExecuTorch's allocated_memory before realign(): the bytes at
  // the spec's own alignment, whatever the problem's.
  std::vector<uint64_t> key(p.tensors.size());
  for (size_t i = 0; i < key.size(); ++i) {
    const PlanTensor& x = p.tensors[i];
    key[i] = x.bytes ? (x.bytes + kSpecAlignment - 1) / kSpecAlignment * kSpecAlignment : x.size;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace

EtGreedyPlanner::EtGreedyPlanner(EtGreedyOptions options) : options_(std::move(options)) {}

PlanResult EtGreedyPlanner::plan(const PlanProblem& p) const { return planTraced(p).result; }

EtGreedyTrace EtGreedyPlanner::planTraced(const PlanProblem& p) const {
  if (p.staleWriteBacks.empty() || options_.generation == EtGreedyGeneration::Legacy) return placeAll(p);
  // Place the stale write-back results with the rest, then forget them: they
  // shape the objects and the arena, no tensor of the program is one of them.
  const size_t n = p.tensors.size();
  PlanProblem all = p;
  all.tensors.insert(all.tensors.end(), p.staleWriteBacks.begin(), p.staleWriteBacks.end());
  all.staleWriteBacks.clear();
  EtGreedyTrace t = placeAll(all);
  t.result.offsets.resize(n);
  t.memObjId.resize(n);
  t.objectOffset.resize(n);
  t.order.erase(std::remove_if(t.order.begin(), t.order.end(), [&](size_t i) { return i >= n; }), t.order.end());
  for (EtSharedObject& s : t.objects)
    s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(), [&](size_t i) { return i >= n; }), s.tensors.end());
  return t;
}

EtGreedyTrace EtGreedyPlanner::placeAll(const PlanProblem& p) const {
  EtGreedyTrace t;
  const size_t n = p.tensors.size();
  t.result.algorithm = name();
  t.result.offsets.assign(n, 0);
  t.memObjId.assign(n, -1);
  t.objectOffset.assign(n, 0);
  t.order = visitOrder(p, options_);

  Arenas arenas;
  Placer placer(p, options_, t);
  for (size_t i : t.order) {
    auto& objs = arenas[p.tensors[i].memId];
    if (options_.generation == EtGreedyGeneration::Legacy)
      placer.legacy(i, objs);
    else
      placer.current(i, objs);
  }

  // Materialize: objects end to end after the reserved prefix, then padding.
  // Only arenas that hold a tensor get a size (and padding), as in
  // ExecuTorch's _compute_total_sizes; no tensor at all gives {0, 0}.
  uint32_t maxMemId = arenas.empty() ? 1 : arenas.rbegin()->first;
  t.result.arenaSizes.assign(std::max<size_t>(2, size_t(maxMemId) + 1), 0);
  for (auto& [memId, objs] : arenas) {
    uint64_t end = memId < options_.reservedPrefix.size() ? options_.reservedPrefix[memId] : 0;
    for (auto& s : objs) {
      s.offset = end;
      end += s.size;
      for (size_t i : s.tensors) t.result.offsets[i] = s.offset + t.objectOffset[i];
    }
    t.result.arenaSizes[memId] = end + options_.extraPadding;
    for (auto& s : objs) t.objects.push_back(std::move(s));
  }
  return t;
}

uint64_t etGreedyExtraPadding(const Method& method) {
  for (const auto& d : method.delegates) {
    std::string id = d.backendId;
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (id.find("xnnpack") != std::string::npos) return 64;
  }
  return 0;
}

}  // namespace lstudio
