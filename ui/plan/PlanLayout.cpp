#include "ui/plan/PlanLayout.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "engine/planning/MemoryAwareOrder.h"

namespace lstudio::ui {
namespace {

uint64_t roundUp(uint64_t n, uint64_t a) { return a ? (n + a - 1) / a * a : n; }

/// "layers.3.attention.wq" -> "layers.3": deep enough to tell layers apart,
/// shallow enough that a legend stays readable.
std::string moduleKeyOf(const Node& n) {
  if (n.meta.moduleStack.empty()) return "(no module)";
  const std::string& path = n.meta.moduleStack.back().path;
  if (path.empty()) return "(root)";
  size_t dot = path.find('.');
  if (dot != std::string::npos) dot = path.find('.', dot + 1);
  return dot == std::string::npos ? path : path.substr(0, dot);
}

/// Interns keys, then renumbers them by the area their rectangles cover.
struct KeyTable {
  std::map<std::string, int32_t> index;
  std::vector<std::string> names;
  std::vector<double> area;
  int32_t add(const std::string& key, double a) {
    auto [it, fresh] = index.emplace(key, static_cast<int32_t>(names.size()));
    if (fresh) {
      names.push_back(key);
      area.push_back(0);
    }
    area[static_cast<size_t>(it->second)] += a;
    return it->second;
  }
  /// Sorts names by area, largest first; returns old index -> new index.
  std::vector<int32_t> sortByArea() {
    std::vector<int32_t> order(names.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return area[a] > area[b]; });
    std::vector<int32_t> remap(names.size());
    std::vector<std::string> sorted;
    for (size_t i = 0; i < order.size(); ++i) {
      remap[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
      sorted.push_back(names[static_cast<size_t>(order[i])]);
    }
    names = std::move(sorted);
    return remap;
  }
};

/// The node that writes each value; kernels whose writes a .pte does not
/// tell count as writing what they first touch (see rectFor).
std::vector<int32_t> producersOf(const Method& m) {
  std::vector<int32_t> producer(m.values.size(), -1);
  for (size_t s = 0; s < m.nodes.size(); ++s)
    for (ValueId v : m.nodes[s].outputs)
      if (v >= 0 && static_cast<size_t>(v) < producer.size() && producer[static_cast<size_t>(v)] < 0)
        producer[static_cast<size_t>(v)] = static_cast<int32_t>(s);
  return producer;
}

std::vector<bool> methodInputs(const Method& m) {
  std::vector<bool> isInput(m.values.size(), false);
  for (ValueId v : m.inputs)
    if (v >= 0 && static_cast<size_t>(v) < isInput.size()) isInput[static_cast<size_t>(v)] = true;
  return isInput;
}

/// Reads the rectangles and lanes out of the plan report, then orders them
/// for drawing: lanes by mem_id, colour keys by area, rectangles bucketed.
class RectCollector {
 public:
  explicit RectCollector(PlanLayout& L) : L_(L), m_(L.method()), producer_(producersOf(m_)), isInput_(methodInputs(m_)) {}

  void collect() {
    L_.rectOfValue.assign(m_.values.size(), -1);
    for (const PlannedTensor& pt : L_.report.tensors) {
      if (pt.first < 0) continue;  // nothing references it: no lifetime to draw
      addLaneOf(pt.memId);
      L_.rects.push_back(rectFor(pt));
    }
  }

  void order() {
    // Lanes in mem_id order.
    std::sort(L_.lanes.begin(), L_.lanes.end(), [](const PlanLane& a, const PlanLane& b) { return a.memId < b.memId; });
    for (size_t i = 0; i < L_.lanes.size(); ++i) laneIndex_[L_.lanes[i].memId] = static_cast<int>(i);
    renumberKeys();
    bucketRects();
  }

 private:
  PlanRect rectFor(const PlannedTensor& pt);
  void addLaneOf(uint32_t memId);
  void renumberKeys();
  void bucketRects();

  PlanLayout& L_;
  const Method& m_;
  const std::vector<int32_t> producer_;
  const std::vector<bool> isInput_;
  KeyTable ops_, modules_;
  std::map<uint32_t, int> laneIndex_;
};

/// One tensor's rectangle, keyed by the op and the module that write it.
PlanRect RectCollector::rectFor(const PlannedTensor& pt) {
  PlanRect r;
  r.value = pt.value;
  r.offset = pt.offset;
  r.size = pt.size;
  r.first = pt.first;
  r.last = std::max(pt.last, pt.first);
  r.storage = pt.storage;
  const size_t v = static_cast<size_t>(pt.value);
  r.producer = producer_[v];
  if (r.producer < 0 && !isInput_[v] && static_cast<size_t>(pt.first) < m_.nodes.size() &&
      m_.nodes[static_cast<size_t>(pt.first)].outputs.empty())
    r.producer = pt.first;
  const double area = static_cast<double>(r.size) * (r.last - r.first + 1);
  // Unwritten tensors: method inputs, mutable state (buffers with an
  // initial value, alive across calls), or views of another tensor.
  const bool state = m_.values[v].tensor().storage() == TensorStorage::Mutable;
  std::string op = r.producer >= 0 ? L_.nodeOp(r.producer) : isInput_[v] ? "input" : state ? "state" : "view";
  r.opKey = ops_.add(op, area);
  r.moduleKey = modules_.add(r.producer >= 0 ? moduleKeyOf(m_.nodes[static_cast<size_t>(r.producer)]) : op, area);
  return r;
}

/// A lane per mem_id, with its arena's statistics.
void RectCollector::addLaneOf(uint32_t memId) {
  auto [it, fresh] = laneIndex_.emplace(memId, 0);
  if (!fresh) return;
  PlanLane lane;
  lane.memId = memId;
  lane.arena.memId = memId;
  if (memId < m_.arenaDevices.size()) lane.device = m_.arenaDevices[memId];
  for (const ArenaStats& a : L_.report.arenas)
    if (a.memId == memId) lane.arena = a;
  L_.lanes.push_back(std::move(lane));
}

/// Colour keys largest area first; rectangles follow, and are indexed by value.
void RectCollector::renumberKeys() {
  const std::vector<int32_t> opRemap = ops_.sortByArea(), moduleRemap = modules_.sortByArea();
  L_.opKeys = ops_.names;
  L_.moduleKeys = modules_.names;
  for (size_t i = 0; i < L_.rects.size(); ++i) {
    PlanRect& r = L_.rects[i];
    r.opKey = opRemap[static_cast<size_t>(r.opKey)];
    r.moduleKey = moduleRemap[static_cast<size_t>(r.moduleKey)];
    L_.rectOfValue[static_cast<size_t>(r.value)] = static_cast<int32_t>(i);
  }
}

/// Each rectangle into its lane and the bucket of its first step; lanes as
/// tall as their arena or their highest tensor.
void RectCollector::bucketRects() {
  const int32_t steps = std::max(L_.report.steps, 1);
  for (const PlannedTensor& pt : L_.report.tensors) {
    int32_t ri = pt.value >= 0 ? L_.rectOfValue[static_cast<size_t>(pt.value)] : -1;
    if (ri < 0) continue;
    PlanRect& r = L_.rects[static_cast<size_t>(ri)];
    r.lane = laneIndex_[pt.memId];
    PlanLane& lane = L_.lanes[static_cast<size_t>(r.lane)];
    lane.extent = std::max({lane.extent, lane.arena.size, r.offset + r.size});
    const size_t b = static_cast<size_t>(std::min(r.first, steps - 1) / PlanLayout::kBucketSteps);
    if (lane.buckets.size() <= b) lane.buckets.resize(b + 1);
    lane.buckets[b].rects.push_back(ri);
    lane.buckets[b].maxLast = std::max(lane.buckets[b].maxLast, r.last);
  }
}

/// Live bytes per step, counted as the lower bound counts them.
void countLiveBytes(PlanLane& lane, const MemoryPlanReport& rep) {
  const int32_t steps = std::max(rep.steps, 1);
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 1, 0);
  for (const Storage& s : rep.storages) {
    if (s.memId != lane.memId || s.first < 0) continue;
    const int64_t sz = static_cast<int64_t>(roundUp(s.size, rep.alignment));
    delta[static_cast<size_t>(std::min(s.first, steps - 1))] += sz;
    delta[static_cast<size_t>(std::min(s.last + 1, steps))] -= sz;
  }
  lane.live.resize(static_cast<size_t>(steps));
  int64_t live = 0;
  for (int32_t s = 0; s < steps; ++s) {
    live += delta[static_cast<size_t>(s)];
    lane.live[static_cast<size_t>(s)] = static_cast<uint64_t>(std::max<int64_t>(live, 0));
    lane.maxLive = std::max(lane.maxLive, lane.live[static_cast<size_t>(s)]);
  }
}

/// The storages alive at the lane's peak step, largest first.
void findPeakStorages(PlanLane& lane, const MemoryPlanReport& rep) {
  const int32_t peak = lane.arena.peakStep;
  for (size_t i = 0; i < rep.storages.size(); ++i) {
    const Storage& s = rep.storages[i];
    if (s.memId == lane.memId && peak >= 0 && s.first <= peak && peak <= s.last)
      lane.peakStorages.push_back(static_cast<int32_t>(i));
  }
  std::sort(lane.peakStorages.begin(), lane.peakStorages.end(), [&](int32_t a, int32_t b) {
    const Storage &x = rep.storages[static_cast<size_t>(a)], &y = rep.storages[static_cast<size_t>(b)];
    return x.size != y.size ? x.size > y.size : x.offset < y.offset;
  });
}

}  // namespace

int PlanLayout::laneOf(uint32_t memId) const {
  for (size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].memId == memId) return static_cast<int>(i);
  return -1;
}

int32_t PlanLayout::rectOfStorage(int32_t storage) const {
  if (storage < 0 || static_cast<size_t>(storage) >= report.storages.size()) return -1;
  const auto& tensors = report.storages[static_cast<size_t>(storage)].tensors;
  return tensors.empty() ? -1 : rectOfValue[static_cast<size_t>(tensors.front())];
}

std::string PlanLayout::nodeOp(int32_t node) const {
  const Method& m = method();
  if (node < 0 || static_cast<size_t>(node) >= m.nodes.size()) return "input";
  const Node& n = m.nodes[static_cast<size_t>(node)];
  switch (n.kind) {
    case NodeKind::Kernel:
      if (n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size()) return m.operators[static_cast<size_t>(n.op)].fullName();
      return n.target.empty() ? "kernel" : operatorFromTarget(n.target).fullName();
    case NodeKind::Delegate:
      if (n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size())
        return m.delegates[static_cast<size_t>(n.delegate)].backendId;
      return "delegate";
    default:
      return nodeKindName(n.kind);
  }
}

std::shared_ptr<const PlanLayout> buildPlanLayout(std::shared_ptr<const Program> program, int methodIndex) {
  auto out = std::make_shared<PlanLayout>();
  PlanLayout& L = *out;
  L.program = std::move(program);
  L.methodIndex = methodIndex;
  if (!L.program || methodIndex < 0 || static_cast<size_t>(methodIndex) >= L.program->methods.size()) {
    L.why = "No method to show.";
    return out;
  }
  const Method& m = L.method();
  if (m.nonConstBufferSizes.size() <= 1) {
    L.why = "Method '" + m.name +
            "' is not planned yet \u2014 run the pipeline to MemoryPlanningPass to see where its tensors live.";
    return out;
  }
  L.report = analyzeMemoryPlan(m);
  addReorderedBounds(m, L.report);
  RectCollector rects(L);
  rects.collect();
  if (L.rects.empty()) {
    L.why = "Method '" + m.name + "' has a memory plan but no planned tensor any instruction uses.";
    return out;
  }
  L.planned = true;
  rects.order();
  for (PlanLane& lane : L.lanes) {
    countLiveBytes(lane, L.report);
    findPeakStorages(lane, L.report);
  }
  return out;
}

}  // namespace lstudio::ui
