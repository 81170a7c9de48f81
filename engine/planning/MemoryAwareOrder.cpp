#include "engine/planning/MemoryAwareOrder.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/OpRegistry.h"
#include "engine/planning/EtGreedyPlanner.h"

namespace lstudio {
namespace {

/// Elementwise operators whose portable kernels compute element i of the
/// (first) result from element i of each same-shaped argument only, so the
/// result may share the bytes of such an argument (any overload: add.out,
/// add.Scalar_out).
const std::unordered_set<std::string>& elementwiseOperators() {
  static const std::unordered_set<std::string> ops = {
      "aten::add",        "aten::sub",     "aten::mul",     "aten::div",       "aten::rsub",
      "aten::relu",       "aten::sigmoid", "aten::tanh",    "aten::neg",       "aten::exp",
      "aten::log",        "aten::abs",     "aten::sqrt",    "aten::rsqrt",     "aten::reciprocal",
      "aten::hardtanh",   "aten::clamp",   "aten::gelu",    "aten::leaky_relu", "aten::hardswish",
      "aten::hardsigmoid", "aten::silu",   "aten::elu",     "aten::pow",       "aten::where",
      "aten::maximum",    "aten::minimum", "aten::sin",     "aten::cos",       "aten::erf",
      "aten::floor",      "aten::ceil",    "aten::round",
      // Per channel: element i of the first result from element i of the input and its
      // channel's statistics (the other results are the empty saved statistics).
      "aten::_native_batch_norm_legit_no_training",
  };
  return ops;
}

bool contiguous(const TensorSpec& t) {
  for (size_t i = 0; i < t.dimOrder.size(); ++i)
    if (t.dimOrder[i] != i) return false;
  return true;
}

/// What one node reads and writes, lists expanded.
struct Access {
  std::vector<ValueId> reads, writes;
};

void addWithItems(const Method& m, ValueId v, std::vector<ValueId>& into) {
  auto valid = [&](ValueId x) { return x >= 0 && static_cast<size_t>(x) < m.values.size(); };
  if (!valid(v)) return;
  into.push_back(v);
  auto items = [&](const std::vector<ValueId>& xs) {  // None items (kNoValue) are no value
    for (ValueId x : xs)
      if (valid(x)) into.push_back(x);
  };
  const auto& payload = m.values[v].payload;
  if (auto* tl = std::get_if<TensorList>(&payload)) items(tl->items);
  else if (auto* ol = std::get_if<OptionalTensorList>(&payload)) items(ol->items);
  else if (auto* il = std::get_if<IntList>(&payload)) items(il->items);
}

Access accessOf(const Method& m, const Node& n) {
  Access a;
  std::vector<bool> written(n.args.size(), false);
  bool known = false;  // whether the written arguments can be told
  if (n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size()) {
    if (const OpSchema* s = OpRegistry::builtin().find(m.operators[n.op].name, m.operators[n.op].overload)) {
      known = true;
      for (size_t i = 0; i < n.args.size(); ++i)  // ExecuTorch's order: arguments, then the returns
        written[i] = i >= s->arguments.size() || s->arguments[i].isWrite;
    }
  } else if (n.kind == NodeKind::Move || n.kind == NodeKind::Free) {
    known = true;
    if (n.kind == NodeKind::Free && !written.empty()) written[0] = true;
  } else if (n.kind == NodeKind::Delegate) {
    known = !n.outputs.empty();
  }
  for (size_t i = 0; i < n.args.size(); ++i)
    if (!known || written[i] || std::find(n.outputs.begin(), n.outputs.end(), n.args[i]) != n.outputs.end())
      addWithItems(m, n.args[i], a.writes);
    else
      addWithItems(m, n.args[i], a.reads);
  for (ValueId v : n.outputs) addWithItems(m, v, a.writes);
  return a;
}

/// List scheduling: repeatedly runs the ready node that `better` prefers,
/// given each candidate's step peak and the live bytes after it.
struct Candidate {
  int64_t after = 0;  ///< live bytes after the node (relative)
  int64_t step = 0;   ///< live bytes while it runs (relative)
  int32_t node = 0;
};

template <class Better>
std::vector<int32_t> listSchedule(const OrderProblem& p, Better better) {
  const size_t n = p.preds.size(), s = p.storages.size();
  std::vector<std::vector<int32_t>> succs(n);
  std::vector<int32_t> waiting(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (int32_t d : p.preds[i]) succs[d].push_back(static_cast<int32_t>(i)), ++waiting[i];
  std::vector<int32_t> remaining(s, 0);
  for (const auto& t : p.touches)
    for (int32_t x : t) ++remaining[x];
  std::vector<bool> started(s, false);
  for (size_t x = 0; x < s; ++x) started[x] = p.storages[x].fromStart;

  std::vector<int32_t> ready, order;
  for (size_t i = 0; i < n; ++i)
    if (!waiting[i]) ready.push_back(static_cast<int32_t>(i));
  order.reserve(n);
  while (!ready.empty()) {
    size_t best = 0;
    Candidate bestC;
    for (size_t r = 0; r < ready.size(); ++r) {
      int32_t v = ready[r];
      Candidate c{0, 0, v};
      int64_t alloc = 0, freed = 0;
      for (int32_t x : p.touches[v]) {
        const OrderStorage& st = p.storages[x];
        if (!started[x]) alloc += static_cast<int64_t>(st.bytes);
        if (remaining[x] == 1 && !st.toEnd) freed += static_cast<int64_t>(st.bytes);
      }
      c.step = alloc;
      int32_t in = p.overwrites[v], out = p.result[v];
      if (in >= 0 && out >= 0 && remaining[in] == 1 && !p.storages[in].fromStart && !p.storages[in].toEnd &&
          !started[out])
        c.step -= static_cast<int64_t>(p.storages[out].bytes);
      c.after = alloc - freed;
      if (r == 0 || better(c, bestC)) best = r, bestC = c;
    }
    int32_t v = ready[best];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
    order.push_back(v);
    for (int32_t x : p.touches[v]) started[x] = true, --remaining[x];
    for (int32_t w : succs[v])
      if (--waiting[w] == 0) ready.push_back(w);
  }
  return order;
}

}  // namespace

ValueId storageRootOf(const Method& m, ValueId v) {
  while (v >= 0 && m.values[v].isTensor() && m.values[v].tensor().viewOf != kNoValue) v = m.values[v].tensor().viewOf;
  return v;
}

ValueId overwritableArgument(const Method& m, const Node& n) {
  if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size() ||
      n.outputs.empty() || !elementwiseOperators().count(m.operators[n.op].name))
    return kNoValue;
  const TensorSpec* out = m.values[n.outputs[0]].tensorIf();
  if (!out || out->viewOf != kNoValue || !contiguous(*out) || out->dynamism != ShapeDynamism::Static) return kNoValue;
  for (ValueId a : n.args) {
    if (a < 0 || std::find(n.outputs.begin(), n.outputs.end(), a) != n.outputs.end()) continue;
    const TensorSpec* t = m.values[a].tensorIf();
    if (!t || t->dtype != out->dtype || t->sizes != out->sizes || !contiguous(*t) || t->storageOffset != 0) continue;
    const TensorSpec& root = m.values[storageRootOf(m, a)].tensor();
    if (root.nbytes() != out->nbytes()) continue;  // a view of part of a larger tensor
    return a;
  }
  return kNoValue;
}

Result<OrderProblem> orderProblem(const Method& m, const StorageModel& model) {
  OrderProblem p;
  const size_t n = m.nodes.size();
  for (const Node& node : m.nodes) {
    if (node.kind == NodeKind::JumpFalse) return Error{ErrorCode::Unsupported, {}, std::nullopt, "the method has jumps (a loop or a branch): its order stays", {}, {}};
    if (node.chain != 0) return Error{ErrorCode::Unsupported, {}, std::nullopt, "the method has several chains: its order stays", {}, {}};
  }
  std::unordered_map<ValueId, int32_t> storageIndex;
  auto storage = [&](ValueId v) -> int32_t {
    ValueId root = model.rootOf ? model.rootOf(v) : storageRootOf(m, v);
    if (root < 0 || static_cast<size_t>(root) >= m.values.size()) root = v;
    auto [it, fresh] = storageIndex.try_emplace(root, static_cast<int32_t>(p.storages.size()));
    if (fresh) {
      p.storages.push_back(m.values[root].isTensor() ? model.storageOf(root) : OrderStorage{});
      p.roots.push_back(root);
    }
    return it->second;
  };
  for (ValueId v : m.inputs)
    if (v >= 0) p.storages[storage(v)].fromStart = true;
  for (ValueId v : m.outputs)
    if (v >= 0) p.storages[storage(v)].toEnd = true;

  p.preds.resize(n);
  p.touches.resize(n);
  p.overwrites.assign(n, -1);
  p.result.assign(n, -1);
  std::vector<int32_t> lastWriter;
  std::vector<std::vector<int32_t>> readers;  // since the last write
  for (size_t i = 0; i < n; ++i) {
    const Node& node = m.nodes[i];
    Access a = accessOf(m, node);
    std::vector<int32_t> reads, writes;
    for (ValueId v : a.reads) reads.push_back(storage(v));
    for (ValueId v : a.writes) writes.push_back(storage(v));
    lastWriter.resize(p.storages.size(), -1);
    readers.resize(p.storages.size());
    std::sort(writes.begin(), writes.end());
    writes.erase(std::unique(writes.begin(), writes.end()), writes.end());
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    std::vector<int32_t>& preds = p.preds[i];
    for (int32_t x : reads) {
      if (std::binary_search(writes.begin(), writes.end(), x)) continue;  // read and written: a write
      if (lastWriter[x] >= 0) preds.push_back(lastWriter[x]);
      readers[x].push_back(static_cast<int32_t>(i));
    }
    for (int32_t x : writes) {
      if (lastWriter[x] >= 0) preds.push_back(lastWriter[x]);
      for (int32_t r : readers[x])
        if (r != static_cast<int32_t>(i)) preds.push_back(r);
      readers[x].clear();
      lastWriter[x] = static_cast<int32_t>(i);
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    std::vector<int32_t>& t = p.touches[i];
    std::set_union(reads.begin(), reads.end(), writes.begin(), writes.end(), std::back_inserter(t));
    if (ValueId arg = overwritableArgument(m, node); arg != kNoValue) {
      p.overwrites[i] = storage(arg);
      p.result[i] = storage(node.outputs[0]);
    }
  }
  return p;
}

uint64_t peakLiveBytes(const OrderProblem& p, const std::vector<int32_t>& order) {
  const int32_t steps = static_cast<int32_t>(order.size());  // the output step is `steps`
  std::vector<int32_t> first(p.storages.size(), -1), last(p.storages.size(), -1), pos(order.size());
  for (int32_t k = 0; k < steps; ++k) {
    pos[order[k]] = k;
    for (int32_t x : p.touches[order[k]]) {
      if (first[x] < 0) first[x] = k;
      last[x] = k;
    }
  }
  std::vector<int64_t> delta(order.size() + 2, 0);
  for (size_t x = 0; x < p.storages.size(); ++x) {
    const OrderStorage& s = p.storages[x];
    if (!s.bytes || (first[x] < 0 && !s.fromStart && !s.toEnd)) continue;
    int32_t a = s.fromStart ? 0 : (first[x] >= 0 ? first[x] : steps);
    int32_t b = s.toEnd ? steps : (last[x] >= 0 ? last[x] : 0);
    delta[a] += static_cast<int64_t>(s.bytes);
    delta[b + 1] -= static_cast<int64_t>(s.bytes);
  }
  // A result written over an argument dying at its node shares that
  // argument's bytes: the two are counted once at that step.
  for (int32_t k = 0; k < steps; ++k) {
    int32_t v = order[k], in = p.overwrites[v], out = p.result[v];
    if (in < 0 || out < 0 || last[in] != k || first[out] != k || p.storages[in].fromStart || p.storages[in].toEnd ||
        p.storages[in].bytes != p.storages[out].bytes)
      continue;
    delta[k] -= static_cast<int64_t>(p.storages[out].bytes);
    delta[k + 1] += static_cast<int64_t>(p.storages[out].bytes);
  }
  int64_t live = 0, peak = 0;
  for (int32_t k = 0; k <= steps; ++k) peak = std::max(peak, live += delta[k]);
  return static_cast<uint64_t>(peak);
}

OrderResult memoryAwareOrder(const OrderProblem& p) {
  OrderResult r;
  r.order.resize(p.preds.size());
  for (size_t i = 0; i < r.order.size(); ++i) r.order[i] = static_cast<int32_t>(i);
  r.peakBefore = r.peakAfter = peakLiveBytes(p, r.order);
  r.rule = "as ordered";
  auto consider = [&](const char* rule, std::vector<int32_t> order) {
    if (order.size() != p.preds.size()) return;  // a cycle: cannot happen for a valid graph
    uint64_t peak = peakLiveBytes(p, order);
    if (peak < r.peakAfter) r.peakAfter = peak, r.order = std::move(order), r.rule = rule;
  };
  // Least live bytes after the node first (frees early, allocates late);
  // ties by the smaller step peak, then the given order.
  consider("least live after", listSchedule(p, [](const Candidate& a, const Candidate& b) {
             return std::tie(a.after, a.step, a.node) < std::tie(b.after, b.step, b.node);
           }));
  // Smallest step peak first; ties by live bytes after.
  consider("smallest step", listSchedule(p, [](const Candidate& a, const Candidate& b) {
             return std::tie(a.step, a.after, a.node) < std::tie(b.step, b.after, b.node);
           }));
  return r;
}

void addReorderedBounds(const Method& m, MemoryPlanReport& r) {
  std::unordered_map<ValueId, int32_t> storageOfValue;  // planned value -> report storage
  for (const PlannedTensor& t : r.tensors)
    if (t.storage >= 0) storageOfValue[t.value] = t.storage;
  std::unordered_map<ValueId, int32_t> storageOfRoot;
  for (size_t s = 0; s < r.storages.size(); ++s) storageOfRoot[r.storages[s].tensors.front()] = static_cast<int32_t>(s);
  auto state = [&](const Storage& s) {  // an initial value (a mutable buffer) lives throughout
    for (ValueId v : s.tensors)
      if (const TensorSpec& t = m.values[v].tensor(); !t.data.empty() || t.mutableSegmentIndex) return true;
    return false;
  };
  const uint64_t align = r.alignment ? r.alignment : 1;
  for (ArenaStats& a : r.arenas) {
    if (!a.storages) continue;
    StorageModel model;
    model.rootOf = [&](ValueId v) {
      auto it = storageOfValue.find(v);
      return it != storageOfValue.end() ? r.storages[it->second].tensors.front() : storageRootOf(m, v);
    };
    model.storageOf = [&](ValueId root) {
      auto it = storageOfRoot.find(root);
      if (it == storageOfRoot.end() || r.storages[it->second].memId != a.memId) return OrderStorage{};
      const Storage& s = r.storages[it->second];
      bool whole = state(s);
      return OrderStorage{(s.size + align - 1) / align * align, whole, whole};
    };
    auto problem = orderProblem(m, model);
    if (!problem) return;
    a.reorderedBound = std::min(a.lowerBound, memoryAwareOrder(*problem).peakAfter + etGreedyExtraPadding(m));
  }
}

}  // namespace lstudio
