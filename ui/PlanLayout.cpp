#include "ui/PlanLayout.h"

#include <algorithm>
#include <map>
#include <numeric>

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
  const MemoryPlanReport& rep = L.report;

  // The node that writes each value; kernels whose writes a .pte does not
  // tell count as writing what they first touch.
  std::vector<int32_t> producer(m.values.size(), -1);
  for (size_t s = 0; s < m.nodes.size(); ++s)
    for (ValueId v : m.nodes[s].outputs)
      if (v >= 0 && static_cast<size_t>(v) < producer.size() && producer[static_cast<size_t>(v)] < 0)
        producer[static_cast<size_t>(v)] = static_cast<int32_t>(s);
  std::vector<bool> isInput(m.values.size(), false);
  for (ValueId v : m.inputs)
    if (v >= 0 && static_cast<size_t>(v) < isInput.size()) isInput[static_cast<size_t>(v)] = true;

  KeyTable ops, modules;
  std::map<uint32_t, int> laneIndex;
  L.rectOfValue.assign(m.values.size(), -1);
  for (const PlannedTensor& pt : rep.tensors) {
    if (pt.first < 0) continue;  // nothing references it: no lifetime to draw
    PlanRect r;
    r.value = pt.value;
    r.offset = pt.offset;
    r.size = pt.size;
    r.first = pt.first;
    r.last = std::max(pt.last, pt.first);
    r.storage = pt.storage;
    const size_t v = static_cast<size_t>(pt.value);
    r.producer = producer[v];
    if (r.producer < 0 && !isInput[v] && static_cast<size_t>(pt.first) < m.nodes.size() &&
        m.nodes[static_cast<size_t>(pt.first)].outputs.empty())
      r.producer = pt.first;
    const double area = static_cast<double>(r.size) * (r.last - r.first + 1);
    // Unwritten tensors: method inputs, mutable state (buffers with an
    // initial value, alive across calls), or views of another tensor.
    const bool state = m.values[v].tensor().storage() == TensorStorage::Mutable;
    std::string op = r.producer >= 0 ? L.nodeOp(r.producer) : isInput[v] ? "input" : state ? "state" : "view";
    r.opKey = ops.add(op, area);
    r.moduleKey = modules.add(r.producer >= 0 ? moduleKeyOf(m.nodes[static_cast<size_t>(r.producer)]) : op, area);
    auto [it, fresh] = laneIndex.emplace(pt.memId, 0);
    if (fresh) {
      PlanLane lane;
      lane.memId = pt.memId;
      lane.arena.memId = pt.memId;
      for (const ArenaStats& a : rep.arenas)
        if (a.memId == pt.memId) lane.arena = a;
      L.lanes.push_back(std::move(lane));
    }
    L.rects.push_back(r);
  }
  if (L.rects.empty()) {
    L.why = "Method '" + m.name + "' has a memory plan but no planned tensor any instruction uses.";
    return out;
  }
  L.planned = true;

  // Lanes in mem_id order.
  std::sort(L.lanes.begin(), L.lanes.end(), [](const PlanLane& a, const PlanLane& b) { return a.memId < b.memId; });
  for (size_t i = 0; i < L.lanes.size(); ++i) laneIndex[L.lanes[i].memId] = static_cast<int>(i);

  const std::vector<int32_t> opRemap = ops.sortByArea(), moduleRemap = modules.sortByArea();
  L.opKeys = ops.names;
  L.moduleKeys = modules.names;
  const int32_t steps = std::max(rep.steps, 1);
  for (size_t i = 0; i < L.rects.size(); ++i) {
    PlanRect& r = L.rects[i];
    r.opKey = opRemap[static_cast<size_t>(r.opKey)];
    r.moduleKey = moduleRemap[static_cast<size_t>(r.moduleKey)];
    L.rectOfValue[static_cast<size_t>(r.value)] = static_cast<int32_t>(i);
  }
  for (const PlannedTensor& pt : rep.tensors) {
    int32_t ri = pt.value >= 0 ? L.rectOfValue[static_cast<size_t>(pt.value)] : -1;
    if (ri < 0) continue;
    PlanRect& r = L.rects[static_cast<size_t>(ri)];
    r.lane = laneIndex[pt.memId];
    PlanLane& lane = L.lanes[static_cast<size_t>(r.lane)];
    lane.extent = std::max({lane.extent, lane.arena.size, r.offset + r.size});
    const size_t b = static_cast<size_t>(std::min(r.first, steps - 1) / PlanLayout::kBucketSteps);
    if (lane.buckets.size() <= b) lane.buckets.resize(b + 1);
    lane.buckets[b].rects.push_back(ri);
    lane.buckets[b].maxLast = std::max(lane.buckets[b].maxLast, r.last);
  }

  // Live bytes per step, counted as the lower bound counts them.
  for (PlanLane& lane : L.lanes) {
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
  return out;
}

}  // namespace lstudio::ui
