#include "engine/planning/MemoryPlanning.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "engine/planning/EtGreedyPlanner.h"
#include "engine/planning/MemoryAwareOrder.h"
#include "engine/planning/Planners.h"

namespace lstudio {
namespace {

uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

std::string valueName(const Method& m, ValueId v) {
  if (v >= 0 && static_cast<size_t>(v) < m.values.size() && !m.values[v].name.empty()) return m.values[v].name;
  return "values[" + std::to_string(v) + "]";
}

/// Who gives a storage its bytes: the first node that writes one of its
/// values (node index, label), or a label for inputs and weights.
std::pair<int32_t, std::string> producerOf(const Method& m, const std::vector<ValueId>& values, int32_t first) {
  auto holds = [&](ValueId v) { return std::find(values.begin(), values.end(), v) != values.end(); };
  for (size_t i = 0; i < m.nodes.size(); ++i)
    for (ValueId o : m.nodes[i].outputs)
      if (holds(o)) return {static_cast<int32_t>(i), {}};
  for (ValueId in : m.inputs)
    if (holds(in)) return {-1, "input"};
  for (ValueId v : values)
    if (const TensorSpec* t = m.values[v].tensorIf(); t && t->storage() == TensorStorage::Mutable)
      return {-1, "state with an initial value"};
  // Kernels whose outputs could not be told: the node where it first appears.
  if (first >= 0 && static_cast<size_t>(first) < m.nodes.size() && m.nodes[first].outputs.empty()) return {first, {}};
  return {-1, "unknown"};
}

std::string opName(const Method& m, int32_t node) {
  const Node& n = m.nodes[node];
  if (n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size())
    return m.operators[n.op].fullName();
  if (n.kind == NodeKind::Delegate && n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size())
    return "delegate " + m.delegates[n.delegate].backendId;
  return nodeKindName(n.kind);
}

std::string producer(const Method& m, const std::vector<ValueId>& values, int32_t first) {
  auto [node, label] = producerOf(m, values, first);
  return node >= 0 ? opName(m, node) : label;
}

}  // namespace

Result<MethodPlan> planMethod(const Method& m, const PlanOptions& options) {
  MethodPlan mp;
  mp.method = m.name;
  auto planner = plannerByName(options.algorithm);
  if (!planner) {
    std::string names;
    for (const auto& n : plannerNames()) names += (names.empty() ? "" : ", ") + n;
    return Error{ErrorCode::Invalid, {}, std::nullopt, "planning algorithm", names, options.algorithm};
  }
  MemoryPlanReport stored = analyzeMemoryPlan(m);
  addReorderedBounds(m, stored);
  uint64_t alignment = options.alignment ? options.alignment : (stored.tensors.empty() ? 16 : stored.alignment);
  mp.problem.alignment = alignment;
  // ExecuTorch's collection order survives in the value table: the emitter
  // numbers values in the order the planner met them.
  std::vector<size_t> order(stored.storages.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Storage &x = stored.storages[a], &y = stored.storages[b];
    return *std::min_element(x.tensors.begin(), x.tensors.end()) < *std::min_element(y.tensors.begin(), y.tensors.end());
  });
  for (size_t i : order) {
    const Storage& s = stored.storages[i];
    mp.problem.tensors.push_back(PlanTensor{alignUp(s.size, alignment), s.first, s.last, s.memId, s.size});
    mp.storageValues.push_back(s.tensors);
  }
  if (auto v = validateProblem(mp.problem); !v) return v.error();
  auto t0 = std::chrono::steady_clock::now();
  mp.result = planner->plan(mp.problem);
  mp.planMilliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  mp.algorithm = mp.result.algorithm;
  if (auto v = verifyPlan(mp.problem, mp.result); !v) return v.error();
  // XNNPACK reads a little past the end of its tensors: ExecuTorch pads every
  // non-empty arena of such programs, whatever the planner.
  if (uint64_t pad = etGreedyExtraPadding(m))
    for (size_t id = 1; id < mp.result.arenaSizes.size(); ++id)
      for (const auto& t : mp.problem.tensors)
        if (t.memId == id) {
          mp.result.arenaSizes[id] += pad;
          break;
        }

  std::vector<uint64_t> bounds = lowerBounds(mp.problem);
  size_t arenas = std::max({mp.result.arenaSizes.size(), m.nonConstBufferSizes.size(), bounds.size()});
  for (size_t id = 1; id < arenas; ++id) {
    bool used = id < m.nonConstBufferSizes.size();
    for (const auto& t : mp.problem.tensors) used = used || t.memId == id;
    if (!used) continue;  // planners report arena 1 even when nothing is planned
    ArenaPlan a;
    a.memId = static_cast<uint32_t>(id);
    if (id < m.nonConstBufferSizes.size()) a.stored = static_cast<uint64_t>(m.nonConstBufferSizes[id]);
    a.planned = id < mp.result.arenaSizes.size() ? mp.result.arenaSizes[id] : 0;
    a.lowerBound = id < bounds.size() ? bounds[id] : 0;
    if (a.lowerBound > 0) a.padding = etGreedyExtraPadding(m);  // required, not waste
    a.lowerBound += a.padding;
    for (const ArenaStats& st : stored.arenas)
      if (st.memId == id) a.reorderedBound = st.reorderedBound;
    // The peak: sweep the steps, then list who is alive there.
    std::vector<std::pair<int64_t, int64_t>> ev;
    for (const auto& t : mp.problem.tensors)
      if (t.memId == id) {
        ev.push_back({t.first, static_cast<int64_t>(t.size)});
        ev.push_back({int64_t(t.last) + 1, -static_cast<int64_t>(t.size)});
      }
    std::sort(ev.begin(), ev.end());
    int64_t live = 0, peak = -1;
    for (auto [step, d] : ev) {
      live += d;
      if (live > peak) peak = live, a.peakStep = static_cast<int32_t>(step);
    }
    for (size_t i = 0; i < mp.problem.tensors.size(); ++i) {
      const PlanTensor& t = mp.problem.tensors[i];
      if (t.memId != id || t.first > a.peakStep || t.last < a.peakStep) continue;
      PeakTensor pt;
      pt.value = mp.storageValues[i].front();
      pt.name = valueName(m, pt.value);
      pt.size = t.size;
      pt.first = t.first;
      pt.last = t.last;
      auto [node, label] = producerOf(m, mp.storageValues[i], t.first);
      pt.producer = node;
      pt.producerOp = node >= 0 ? opName(m, node) : label;
      a.peak.push_back(std::move(pt));
    }
    std::stable_sort(a.peak.begin(), a.peak.end(), [](const PeakTensor& x, const PeakTensor& y) { return x.size > y.size; });
    mp.arenas.push_back(std::move(a));
  }
  return mp;
}

Status applyPlan(Method& m, const MethodPlan& plan) {
  for (size_t i = 0; i < plan.storageValues.size(); ++i)
    for (ValueId v : plan.storageValues[i]) {
      TensorSpec& t = m.values[v].tensor();
      t.slot = PlannedSlot{plan.problem.tensors[i].memId, plan.result.offsets[i]};
    }
  size_t count = std::max<size_t>(m.nonConstBufferSizes.size(), 1);
  for (const ArenaPlan& a : plan.arenas) count = std::max<size_t>(count, a.memId + 1);
  std::vector<int64_t> sizes(count, 0);
  for (const ArenaPlan& a : plan.arenas)
    if (a.memId < sizes.size()) sizes[a.memId] = static_cast<int64_t>(a.planned);
  m.nonConstBufferSizes = std::move(sizes);
  MemoryPlanReport check = analyzeMemoryPlan(m);
  if (!check.overlapFree())
    return Error{ErrorCode::Invalid, {}, std::nullopt, "new plan of " + m.name, "no overlapping live tensors",
                 std::to_string(check.overlapCount) + " overlapping pairs"};
  for (const auto& a : check.arenas)
    if (a.highWater > a.size)
      return Error{ErrorCode::Invalid, {}, std::nullopt, "new plan of " + m.name, "tensors inside arena " + std::to_string(a.memId),
                   "a tensor ending at byte " + std::to_string(a.highWater)};
  return Ok{};
}

std::string planTraceJson(const std::vector<MethodPlan>& plans) {
  using nlohmann::json;
  json events = json::array();
  for (size_t pi = 0; pi < plans.size(); ++pi) {
    const MethodPlan& mp = plans[pi];
    int pid = static_cast<int>(pi) + 1;
    events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "method " + mp.method}}}});
    std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> live;
    for (size_t i = 0; i < mp.problem.tensors.size(); ++i) {
      const PlanTensor& t = mp.problem.tensors[i];
      events.push_back({{"ph", "X"},
                        {"pid", pid},
                        {"tid", t.memId},
                        {"name", "values[" + std::to_string(mp.storageValues[i].front()) + "]"},
                        {"ts", t.first},
                        {"dur", t.last - t.first + 1},
                        {"args", {{"offset", mp.result.offsets[i]}, {"bytes", t.size}, {"mem_id", t.memId}}}});
      live[t.memId].push_back({t.first, static_cast<int64_t>(t.size)});
      live[t.memId].push_back({int64_t(t.last) + 1, -static_cast<int64_t>(t.size)});
    }
    for (auto& [mem, ev] : live) {
      events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", mem}, {"name", "thread_name"},
                        {"args", {{"name", "mem_id " + std::to_string(mem)}}}});
      std::sort(ev.begin(), ev.end());
      int64_t bytes = 0;
      for (size_t k = 0; k < ev.size(); ++k) {
        bytes += ev[k].second;
        if (k + 1 < ev.size() && ev[k + 1].first == ev[k].first) continue;
        events.push_back({{"ph", "C"}, {"pid", pid}, {"name", "live bytes mem_id " + std::to_string(mem)},
                          {"ts", ev[k].first}, {"args", {{"bytes", bytes}}}});
      }
    }
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ns"},
              {"otherData", {{"time", "1 us = 1 execution step"}, {"sizes", "bytes"}}}};
  return doc.dump(1) + "\n";
}

std::string planCsv(const std::vector<MethodPlan>& plans, const std::vector<const Method*>& methods) {
  std::ostringstream o;
  o << "method,mem_id,value,name,bytes,offset,first_step,last_step,producer\n";
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (size_t pi = 0; pi < plans.size(); ++pi) {
    const MethodPlan& mp = plans[pi];
    const Method& m = *methods[pi];
    for (size_t i = 0; i < mp.problem.tensors.size(); ++i) {
      const PlanTensor& t = mp.problem.tensors[i];
      for (ValueId v : mp.storageValues[i])
        o << quote(mp.method) << ',' << t.memId << ',' << v << ',' << quote(valueName(m, v)) << ',' << t.size << ','
          << mp.result.offsets[i] << ',' << t.first << ',' << t.last << ','
          << quote(producer(m, mp.storageValues[i], t.first)) << '\n';
    }
  }
  return o.str();
}

}  // namespace lstudio
