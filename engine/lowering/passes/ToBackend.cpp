// to_backend, the step of to_edge_transform_and_lower after a partitioner tagged nodes: each
// partition becomes one executorch_call_delegate whose lowered module holds the partition's
// nodes as a program of their own (what the backend is given), with the weights the
// partition took. The backend's own compilation is XnnpackPreprocess's: the call carries
// the XNNGraph payload it writes (or why there is none), and keeps the program, which the
// studio runs in the backend's place.
//
// The node order is upstream's, which is not the order before: per partition, ExecuTorch
// fuses the nodes into a submodule inserted after the last node that leaves it
// (torch.fx's fuse_as_graphmodule / insert_subgm), then re-sorts the whole graph with
// legalize_graph, a breadth-first topological sort over each node's users. That sort is
// simulated on a model of the fx graph (placeholders, getitems, the lowered module's get_attr)
// whose user lists keep fx's order: graph order after each sort, nodes made since (or whose
// arguments changed, which fx registers anew) at the end.
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/lowering/partition/XnnpackPreprocess.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// legalize_graph's PRIORITIZED_OPS: size arithmetic and the run-time checks on it, which
/// it schedules as soon as they are ready (edge-dialect operators are not among them; these
/// stay torch's own in an edge program).
bool prioritized(const Method& m, const Node& n) {
  if (n.kind != NodeKind::Kernel || n.op < 0) return false;
  static const std::set<std::string> kOps = {
      "_operator::add", "_operator::mul", "_operator::sub", "_operator::floordiv", "_operator::truediv",
      "_operator::mod", "_operator::le", "_operator::lt", "_operator::ge", "_operator::gt", "_operator::eq",
      "_operator::ne", "aten::sym_constrain_range", "aten::sym_constrain_range_for_size", "aten::_assert_async",
      "aten::scalar_tensor", "aten::_assert_scalar"};
  return kOps.count(m.operators[n.op].name) > 0;
}

/// The fx graph to_backend edits, reduced to what decides the order of its nodes.
class FxModel {
 public:
  enum class Kind : uint8_t { Placeholder, Call, GetItem, GetAttr, Output };
  struct FNode {
    Kind kind = Kind::Call;
    int call = -1;             ///< Call: index into calls
    ValueId value = kNoValue;  ///< Placeholder, GetItem, single-result Call: the value it stands for
    std::vector<int> inputs;   ///< distinct, in order of first use (fx's _input_nodes)
    std::vector<int> users;    ///< in fx's order
    bool prioritized = false;  ///< legalize_graph puts it first when ready (sym arithmetic)
  };

  explicit FxModel(const Method& m) : m_(m) {
    const std::vector<int> uses = useCounts(m);
    for (ValueId v : m.inputs) producer_[v] = add({Kind::Placeholder, -1, v, {}, {}, false});
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const Node& n = m.nodes[i];
      FNode f{Kind::Call, int(i), n.outputs.size() == 1 ? n.outputs[0] : kNoValue, inputsOf(n), {}, false};
      f.prioritized = prioritized(m, n);
      const int id = add(std::move(f));
      if (n.outputs.size() == 1) producer_[n.outputs[0]] = id;
      else
        for (ValueId o : n.outputs)
          if (o >= 0 && uses[o] > 0) producer_[o] = add({Kind::GetItem, -1, o, {id}, {}, false});
    }
    std::vector<int> outs;
    for (ValueId v : m.outputs) addProducer(v, outs);
    add({Kind::Output, -1, kNoValue, outs, {}, false});
    rebuildUsers();
  }

  const FNode& at(int id) const { return nodes_[id]; }
  const std::vector<int>& order() const { return order_; }
  int producer(ValueId v) const {
    auto it = producer_.find(v);
    return it == producer_.end() ? -1 : it->second;
  }

  /// Fuses `part` (call and getitem nodes, graph order) into a submodule, as
  /// create_submodule_from_nodes and _insert_lowered_submodule do; `weights` are the
  /// placeholders of the weights it owns (upstream gives it placeholders of its own, erased
  /// with it: not read through the call; the one modelled here stays while others read it, and
  /// without users after, which changes no order). `delegateCall` is the index in calls of the
  /// node that replaces it. Returns the fx nodes the call reads (in order) and the getitems of
  /// its results (in order).
  std::pair<std::vector<int>, std::vector<int>> fuse(const std::vector<int>& part, const std::set<int>& weights,
                                                     int delegateCall) {
    const std::set<int> inside(part.begin(), part.end());
    std::vector<int> reads, returns;
    for (int f : part)
      for (int in : nodes_[f].inputs)
        if (!inside.count(in) && !weights.count(in) && std::find(reads.begin(), reads.end(), in) == reads.end())
          reads.push_back(in);
    for (int f : part)
      for (int u : nodes_[f].users)
        if (!inside.count(u)) {
          returns.push_back(f);
          break;
        }
    // insert_subgm: the call_module after the last node that leaves the partition, a
    // getitem per result after it, each taking over its result's users.
    int last = -1;
    for (int f : order_)
      if (std::find(returns.begin(), returns.end(), f) != returns.end()) last = f;
    const int module = add({Kind::Call, -1, kNoValue, reads, {}, false}, last);
    for (int in : reads) nodes_[in].users.push_back(module);
    std::vector<int> getitems;
    int after = module;
    for (int r : returns) {
      const int g = add({Kind::GetItem, -1, nodes_[r].value, {module}, {}, false}, after);
      after = g;
      nodes_[module].users.push_back(g);
      const std::vector<int> users = nodes_[r].users;
      for (int u : users) replaceInput(u, r, g);
      if (nodes_[r].value >= 0) producer_[nodes_[r].value] = g;
      getitems.push_back(g);
    }
    // The partition's nodes erased, then the sort.
    for (int f : inside)
      for (int in : nodes_[f].inputs) std::erase(nodes_[in].users, f);
    std::erase_if(order_, [&](int f) { return inside.count(f) > 0; });
    legalize();
    // The lowered module's get_attr and the executorch_call_delegate before the
    // call_module, which then goes.
    const int attr = add({Kind::GetAttr, -1, kNoValue, {}, {}, false}, before(module));
    std::vector<int> delegateInputs{attr};
    delegateInputs.insert(delegateInputs.end(), reads.begin(), reads.end());
    const int call = add({Kind::Call, delegateCall, kNoValue, delegateInputs, {}, false}, attr);
    for (int in : delegateInputs) nodes_[in].users.push_back(call);
    const std::vector<int> items = nodes_[module].users;
    for (int g : items) replaceInput(g, module, call);
    erase(module);
    return {reads, getitems};
  }

 private:
  int add(FNode f, int after = -2) {
    nodes_.push_back(std::move(f));
    const int id = int(nodes_.size()) - 1;
    if (after == -2) order_.push_back(id);
    else order_.insert(after < 0 ? order_.begin() : std::find(order_.begin(), order_.end(), after) + 1, id);
    return id;
  }
  /// The node before `f` in graph order (-1: none).
  int before(int f) const {
    auto it = std::find(order_.begin(), order_.end(), f);
    return it == order_.begin() ? -1 : *(it - 1);
  }
  /// fx's Node._replace_input_with: `u` reads `to` where it read `from`, and (as fx
  /// re-registers a node whose arguments change) moves to the end of every input's users.
  void replaceInput(int u, int from, int to) {
    for (int in : nodes_[u].inputs) std::erase(nodes_[in].users, u);
    std::replace(nodes_[u].inputs.begin(), nodes_[u].inputs.end(), from, to);
    for (int in : nodes_[u].inputs) nodes_[in].users.push_back(u);
  }
  void erase(int f) {
    for (int in : nodes_[f].inputs) std::erase(nodes_[in].users, f);
    std::erase(order_, f);
  }
  void addProducer(ValueId v, std::vector<int>& into) const {
    if (v < 0) return;
    if (int p = producer(v); p >= 0 && std::find(into.begin(), into.end(), p) == into.end()) into.push_back(p);
  }
  /// The fx nodes a node reads: its arguments' producers in argument order, lists expanded
  /// (sizes computed at run time too); what it writes is not read.
  std::vector<int> inputsOf(const Node& n) const {
    std::vector<int> r;
    auto read = [&](ValueId v) {
      if (v < 0 || std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end()) return;
      addProducer(v, r);
    };
    for (size_t a = 0; a < n.args.size(); ++a) {
      const ValueId v = n.args[a];
      if (v < 0) continue;
      const auto& payload = m_.values[v].payload;
      if (auto* tl = std::get_if<TensorList>(&payload)) std::for_each(tl->items.begin(), tl->items.end(), read);
      else if (auto* ol = std::get_if<OptionalTensorList>(&payload)) std::for_each(ol->items.begin(), ol->items.end(), read);
      else if (auto* il = std::get_if<IntList>(&payload)) std::for_each(il->items.begin(), il->items.end(), read);
      else read(v);
    }
    return r;
  }
  /// Each node's users in graph order, as a graph copied node by node has them.
  void rebuildUsers() {
    for (FNode& f : nodes_) f.users.clear();
    for (int f : order_)
      for (int in : nodes_[f].inputs) nodes_[in].users.push_back(f);
  }
  /// torch.fx's legalize_graph: Kahn's sort, ready nodes in a queue (sym arithmetic to its
  /// front), each node's users visited in their order.
  void legalize() {
    std::vector<int> indegree(nodes_.size(), 0);
    for (int f : order_)
      for (int u : nodes_[f].users) ++indegree[u];
    std::deque<int> queue;
    for (int f : order_)
      if (indegree[f] == 0) queue.push_back(f);
    std::vector<int> sorted;
    while (!queue.empty()) {
      const int f = queue.front();
      queue.pop_front();
      sorted.push_back(f);
      for (int u : nodes_[f].users)
        if (--indegree[u] == 0) nodes_[u].prioritized ? queue.push_front(u) : queue.push_back(u);
    }
    if (sorted.size() == order_.size()) order_ = std::move(sorted);  // (a cycle cannot come from a valid partition)
    rebuildUsers();
  }

  const Method& m_;
  std::vector<FNode> nodes_;
  std::vector<int> order_;
  std::map<ValueId, int> producer_;
};

/// Copies values of one method into another, list items with them.
class ValueCopier {
 public:
  ValueCopier(const Method& from, Method& to) : from_(from), to_(to) {}
  ValueId operator()(ValueId v) {
    if (v < 0) return v;
    if (auto it = map_.find(v); it != map_.end()) return it->second;
    Value copy = from_.values[v];
    if (auto* tl = std::get_if<TensorList>(&copy.payload)) remap(tl->items);
    else if (auto* ol = std::get_if<OptionalTensorList>(&copy.payload)) remap(ol->items);
    else if (auto* il = std::get_if<IntList>(&copy.payload)) remap(il->items);
    if (auto* t = std::get_if<TensorSpec>(&copy.payload)) t->viewOf = t->viewBefore = kNoValue;
    const ValueId id = addValue(to_, std::move(copy));
    map_[v] = id;
    return id;
  }

 private:
  void remap(std::vector<ValueId>& items) {
    for (ValueId& x : items) x = (*this)(x);
  }
  const Method& from_;
  Method& to_;
  std::map<ValueId, ValueId> map_;
};

/// The lowered module's program: the partition's nodes, the weights it owns as its
/// parameters (first, as arrange_graph_placeholders orders them), then what it reads.
/// A weight a partition owns: the constant, and the partition's nodes that read this copy of it.
struct OwnedWeight {
  ValueId value = kNoValue;
  std::vector<int> readers;
};

/// DebugHandleGeneratorPass, which ends to_edge: the operator nodes numbered from 1 in graph
/// order, one number per origin (a decomposition's nodes share their operator's). Kept
/// where the program has its own (an ETRecord's).
std::vector<int64_t> debugHandles(const Method& m) {
  std::vector<int64_t> out(m.nodes.size(), 0);
  std::map<std::string, int64_t> byOrigin;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    if (n.meta.debugHandle) {
      out[i] = *n.meta.debugHandle;
      continue;
    }
    // A node of no known origin is its own (an unnamed _assert_scalar too).
    const std::string key = !n.meta.origin.empty() ? n.meta.origin : "#" + std::to_string(i);
    out[i] = byOrigin.emplace(key, int64_t(byOrigin.size()) + 1).first->second;
  }
  return out;
}

std::shared_ptr<const Program> loweredProgram(const Program& p, const Method& m, const std::vector<int>& nodes,
                                              const std::vector<OwnedWeight>& owned, const std::vector<ValueId>& reads,
                                              const std::vector<ValueId>& returns) {
  auto sub = std::make_shared<Program>();
  sub->path = p.path;
  sub->format = SourceFormat::EtRecord;
  sub->exportFacts.container = "to_backend's lowered module";  // the program the backend was given
  sub->exportFacts.dialect = "EDGE";
  // Its weights are spans into the files the program keeps open.
  sub->backing = p.backing;
  sub->externalFiles = p.externalFiles;
  sub->derivedData = p.derivedData;
  Method lm;
  lm.name = "forward";
  lm.symbolRanges = m.symbolRanges;
  ValueCopier copy(m, lm);
  // Each copy of a weight its own value, read by the nodes it was copied for.
  std::map<std::pair<int, ValueId>, ValueId> copyFor;
  std::map<ValueId, int> copies;
  for (const OwnedWeight& w : owned) {
    const InputSpec* spec = inputSpecOf(m, w.value);
    InputSpec s = spec ? *spec : InputSpec{InputSpec::Kind::Parameter, w.value, m.values[w.value].name, true};
    Value v = m.values[w.value];
    if (int k = copies[w.value]++; k > 0) v.name += "_copy_" + std::to_string(k - 1);
    s.value = addValue(lm, std::move(v));
    for (int reader : w.readers) copyFor[{reader, w.value}] = s.value;
    lm.inputs.push_back(s.value);
    lm.signature.inputs.push_back(s);
  }
  for (ValueId r : reads) {
    lm.inputs.push_back(copy(r));
    lm.signature.inputs.push_back(InputSpec{InputSpec::Kind::User, lm.inputs.back(), "", true});
  }
  const std::vector<int64_t> handles = debugHandles(m);
  for (int i : nodes) {
    Node n = m.nodes[i];
    n.meta.delegationTag.clear();
    n.meta.debugHandle = handles[i];
    for (ValueId& a : n.args) {
      auto it = copyFor.find({i, a});
      a = it != copyFor.end() ? it->second : copy(a);
    }
    for (ValueId& o : n.outputs) o = copy(o);
    if (n.kind == NodeKind::Kernel && n.op >= 0) {
      const OperatorRef& op = m.operators[n.op];
      auto it = std::find_if(lm.operators.begin(), lm.operators.end(),
                             [&](const OperatorRef& x) { return x.name == op.name && x.overload == op.overload; });
      n.op = int32_t(it - lm.operators.begin());
      if (it == lm.operators.end()) lm.operators.push_back(op);
    }
    lm.nodes.push_back(std::move(n));
  }
  for (ValueId r : returns) {
    lm.outputs.push_back(copy(r));
    lm.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::User, lm.outputs.back(), ""});
  }
  sub->methods.push_back(std::move(lm));
  return sub;
}

class ToBackend : public Pass {
 public:
  explicit ToBackend(size_t round) : round_(round) {}
  std::string name() const override { return partitionRoundName("to_backend", round_); }
  std::string description() const override {
    return "to_edge_transform_and_lower: each partition becomes an executorch_call_delegate of its lowered module";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return round_ < c.partitioners.size(); }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      if (m.isConstantGetter()) continue;
      // The weights this round's partitioner took, as it decided on this same graph.
      std::map<ValueId, std::string> takenBy;
      for (const XnnpackPartition& part : partitionForXnnpack(m, config.partitioners[round_]).partitions)
        for (ValueId c : part.constants) takenBy.emplace(c, part.tag);
      std::vector<std::string> tags;
      for (const Node& n : m.nodes)
        if (!n.meta.delegationTag.empty() && std::find(tags.begin(), tags.end(), n.meta.delegationTag) == tags.end())
          tags.push_back(n.meta.delegationTag);
      if (tags.empty()) continue;
      // partition_tags' order: by partition id.
      std::sort(tags.begin(), tags.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
      });
      lower(p, m, tags, takenBy, out);
    }
    return out;
  }

 private:
  /// The weights each partition owns, as to_backend's _maybe_duplicate_constant_nodes leaves
  /// them: a weight the partitioner took (`takenBy`: the partition listing it) whose readers
  /// are all of that partition stays one; else every reader gets a copy of its own, owned by
  /// the reader's partition, and the method keeps it for readers outside any (`keptInMethod`).
  static std::map<std::string, std::vector<OwnedWeight>> ownedWeights(const Method& m,
                                                                      const std::map<ValueId, std::string>& takenBy,
                                                                      std::set<ValueId>& keptInMethod) {
    std::map<ValueId, std::vector<int>> readers;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      std::vector<ValueId> reads = readsOf(m, m.nodes[i]);
      std::sort(reads.begin(), reads.end());
      reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
      for (ValueId v : reads)
        if (takenBy.count(v)) readers[v].push_back(int(i));
    }
    std::map<std::string, std::vector<OwnedWeight>> owned;
    for (const auto& [c, taker] : takenBy) {
      const std::string& tag = taker;  // (a structured binding cannot be captured before C++20's clang 16)
      const std::vector<int>& rs = readers[c];
      const bool shared = std::any_of(rs.begin(), rs.end(), [&](int r) { return m.nodes[r].meta.delegationTag != tag; });
      if (!shared) {
        owned[tag].push_back({c, rs});
        continue;
      }
      for (int r : rs) {
        const std::string& t = m.nodes[r].meta.delegationTag;
        if (t.empty()) keptInMethod.insert(c);
        else owned[t].push_back({c, {r}});
      }
    }
    return owned;
  }

  /// _maybe_duplicate_constant_nodes gives every reader of a shared weight after its first
  /// a placeholder of its own, readers outside any partition included; the copies stand
  /// before the weight. So the method keeps one value per reader outside a partition (the
  /// first reader of all keeps the weight itself, when it is one of them).
  static void copyForMethodReaders(Method& m, std::set<ValueId>& keptInMethod) {
    for (ValueId c : std::vector<ValueId>(keptInMethod.begin(), keptInMethod.end())) {
      std::vector<int> rs;  // readers in graph order
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        const std::vector<ValueId> reads = readsOf(m, m.nodes[i]);
        if (std::find(reads.begin(), reads.end(), c) != reads.end()) rs.push_back(int(i));
      }
      if (rs.empty()) continue;
      std::vector<ValueId> copies;
      for (size_t k = 1; k < rs.size(); ++k) {
        Node& reader = m.nodes[rs[k]];
        if (!reader.meta.delegationTag.empty()) continue;
        Value v = m.values[c];
        v.name += "_copy_" + std::to_string(k - 1);
        const ValueId copy = addValue(m, std::move(v));
        for (ValueId& a : reader.args) {
          if (a == c) a = copy;
          else if (a >= 0)
            if (auto* l = std::get_if<TensorList>(&m.values[a].payload);
                l && std::find(l->items.begin(), l->items.end(), c) != l->items.end()) {
              Value list = m.values[a];
              auto& items = std::get<TensorList>(list.payload).items;
              std::replace(items.begin(), items.end(), c, copy);
              a = addValue(m, std::move(list));
            }
        }
        copies.push_back(copy);
      }
      if (!m.nodes[rs[0]].meta.delegationTag.empty()) keptInMethod.erase(c);
      if (copies.empty()) continue;
      auto at = std::find(m.inputs.begin(), m.inputs.end(), c);
      m.inputs.insert(at, copies.begin(), copies.end());
      auto spec = std::find_if(m.signature.inputs.begin(), m.signature.inputs.end(), [&](const InputSpec& x) { return x.value == c; });
      if (spec == m.signature.inputs.end()) continue;
      std::vector<InputSpec> specs;
      for (ValueId copy : copies) {
        InputSpec x = *spec;
        x.value = copy;
        x.target = m.values[copy].name;
        specs.push_back(x);
      }
      m.signature.inputs.insert(spec, specs.begin(), specs.end());
    }
  }

  /// Every number in a Tensor slot as a 0-dim constant tensor, as to_edge's
  /// ScalarToTensorPass and lift_constant_tensor_pass made them before partitioning: inputs
  /// of the method before the user inputs, in node order (a delegate call reads those of
  /// its partition; the emitter would otherwise make the rest later, after them).
  static void liftScalars(Program& p, Method& m) {
    LiftedScalars lifted = liftScalarTensorArguments(m);
    if (lifted.values.empty()) return;
    p.derivedData.push_back(lifted.bytes);
    FreshNames fresh(m);
    auto user = std::find_if(m.signature.inputs.begin(), m.signature.inputs.end(),
                             [](const InputSpec& s) { return s.kind == InputSpec::Kind::User; });
    const ValueId firstUser = user == m.signature.inputs.end() ? kNoValue : user->value;
    std::vector<InputSpec> specs;
    for (ValueId v : lifted.values) {
      m.values[v].name = fresh("_lifted_tensor_constant");
      specs.push_back(InputSpec{InputSpec::Kind::ConstantTensor, v, m.values[v].name, true});
    }
    m.signature.inputs.insert(user, specs.begin(), specs.end());
    m.inputs.insert(std::find(m.inputs.begin(), m.inputs.end(), firstUser), lifted.values.begin(), lifted.values.end());
  }

  /// A delegate call's results all require grad when anything it reads does, and none when
  /// nothing does (to_executorch's retrace runs the call as one operator); the retrace
  /// carries the change on to what reads them.
  static void delegateResultsGrad(Method& m) {
    auto requiresGrad = [&](ValueId v) {
      const TensorSpec* t = v >= 0 ? m.values[v].tensorIf() : nullptr;
      return t && t->requiresGrad;
    };
    std::set<ValueId> changed;
    for (const Node& n : m.nodes) {
      std::vector<ValueId> reads = readsOf(m, n);
      std::erase_if(reads, [&](ValueId v) { return std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end(); });
      if (n.kind != NodeKind::Delegate &&
          std::none_of(reads.begin(), reads.end(), [&](ValueId v) { return changed.count(v) > 0; }))
        continue;
      // The *_like factories read only their input's shape: autograd never tracks them.
      static const std::set<std::string> kFactories = {"aten::full_like", "aten::zeros_like", "aten::ones_like",
                                                       "aten::empty_like", "aten::rand_like", "aten::randn_like"};
      const bool factory = n.op >= 0 && kFactories.count(m.operators[n.op].name) > 0;
      const bool grad = !factory && std::any_of(reads.begin(), reads.end(), requiresGrad);
      // The normalizations' later results (layer norm's mean and rstd, batch norm's saved
      // statistics) are ones autograd does not differentiate: the retrace never makes those
      // require grad. Every result of any other operator (split's pieces) follows.
      const bool statistics = n.op >= 0 && m.operators[n.op].name.find("_norm") != std::string::npos;
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (TensorSpec* t = std::get_if<TensorSpec>(&m.values[n.outputs[k]].payload);
            t && t->requiresGrad != grad && (!grad || (isFloatingPoint(t->dtype) && (k == 0 || !statistics)))) {
          const ValueId o = n.outputs[k];
          t->requiresGrad = grad;
          changed.insert(o);
        }
    }
  }

  /// XNNPACK's preprocess: the payload and the partition's weights as named data, or
  /// why the studio cannot write them yet (the call then runs its lowered module).
  static void compile(Program& p, Delegate& d, PassOutcome& out) {
    auto compiled = compileForXnnpack(*d.original);
    if (!compiled) {
      d.payloadError = compiled.error().message();
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1, "no XNNPACK payload: " + d.payloadError});
      return;
    }
    auto keep = [&](const std::string& what, const std::string& bytes) {
      auto file = MappedFile::fromBytes(what, bytes.data(), bytes.size());
      Bytes b{file->data(), file->size(), 0};
      p.derivedData.push_back(std::move(file));
      return b;
    };
    d.blob = keep("XNNPACK payload", compiled->payload);
    for (const auto& [key, bytes] : compiled->namedData) d.namedData.push_back(NamedBlob{key, 0, keep(key, bytes)});
  }

  static void lower(Program& p, Method& m, const std::vector<std::string>& tags,
                    const std::map<ValueId, std::string>& takenBy, PassOutcome& out) {
    liftScalars(p, m);
    std::set<ValueId> keptInMethod;
    auto owned = ownedWeights(m, takenBy, keptInMethod);
    copyForMethodReaders(m, keptInMethod);
    int64_t handle = 0;
    for (const Node& n : m.nodes) handle = std::max(handle, n.meta.debugHandle.value_or(0));
    // The nodes left in the method keep to_edge's debug handles, as upstream's node.meta does:
    // the next partitioner's round lowers them with the same numbers.
    const std::vector<int64_t> handles = debugHandles(m);
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (m.nodes[i].kind == NodeKind::Kernel && !m.nodes[i].meta.debugHandle) m.nodes[i].meta.debugHandle = handles[i];
    std::vector<Node> calls = m.nodes;
    FxModel fx(m);
    FreshNames fresh(m);
    for (const Node& n : m.nodes) fresh(n.name);
    size_t loweredNodes = 0, weightCount = 0;
    for (const std::string& tag : tags) {
      std::vector<int> part, nodes;
      for (int f : fx.order()) {
        const auto& x = fx.at(f);
        const bool tagged = x.kind == FxModel::Kind::Call && x.call >= 0 && x.call < int(m.nodes.size()) &&
                            m.nodes[x.call].meta.delegationTag == tag;
        const bool itemOfTagged = x.kind == FxModel::Kind::GetItem && !x.inputs.empty() &&
                                  std::find(part.begin(), part.end(), x.inputs[0]) != part.end();
        if (tagged || itemOfTagged) part.push_back(f);
        if (tagged) nodes.push_back(x.call);
      }
      // A weight the partition takes is its own; one other nodes read too stays for them
      // as well (_maybe_duplicate_constant_nodes copies it for the partition).
      std::set<int> weights;
      for (const OwnedWeight& w : owned[tag])
        if (int f = fx.producer(w.value); f >= 0) weights.insert(f);
      const int callIndex = int(calls.size());
      calls.emplace_back();
      auto [reads, returns] = fx.fuse(part, weights, callIndex);
      std::vector<ValueId> readValues, returnValues;
      for (int f : reads) readValues.push_back(fx.at(f).value);
      for (int g : returns) returnValues.push_back(fx.at(g).value);
      Delegate d;
      d.backendId = "XnnpackBackend";
      d.original = loweredProgram(p, m, nodes, owned[tag], readValues, returnValues);
      compile(p, d, out);
      Node& call = calls[callIndex];
      call.kind = NodeKind::Delegate;
      call.name = fresh("executorch_call_delegate");
      call.target = "torch.ops.higher_order.executorch_call_delegate";
      call.delegate = int32_t(m.delegates.size());
      call.args = readValues;
      call.args.insert(call.args.end(), returnValues.begin(), returnValues.end());
      call.outputs = returnValues;
      if (handle > 0) call.meta.debugHandle = ++handle;
      m.delegates.push_back(std::move(d));
      out.changed = true;
      loweredNodes += nodes.size();
      weightCount += owned[tag].size();
    }
    out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                               m.name + ": " + std::to_string(tags.size()) + " partition(s) lowered to XnnpackBackend (" +
                                   std::to_string(loweredNodes) + " nodes, " + std::to_string(weightCount) +
                                   " weights of their own); " + std::to_string(m.nodes.size() - loweredNodes) + " nodes left"});
    std::vector<Node> ordered;
    std::map<int, size_t> placed;  // fx call node -> its index in ordered
    for (int f : fx.order()) {
      const FxModel::FNode& fn = fx.at(f);
      if (fn.kind == FxModel::Kind::Call && fn.call >= 0) {
        placed[f] = ordered.size();
        ordered.push_back(std::move(calls[fn.call]));
      } else if (fn.kind == FxModel::Kind::GetItem && !fn.inputs.empty()) {
        // The results live through this getitem: past the call placed last before it.
        if (auto p = placed.find(fn.inputs[0]); p != placed.end())
          ordered[p->second].resultsLiveUntil = p->second + 1 == ordered.size() ? std::string() : ordered.back().name;
      }
    }
    m.nodes = std::move(ordered);
    delegateResultsGrad(m);
    // The weights only partitions read leave the method's inputs (_unsafe_adjust_original_program).
    auto removed = [&](ValueId v) { return takenBy.count(v) > 0 && !keptInMethod.count(v); };
    std::erase_if(m.signature.inputs, [&](const InputSpec& s) { return removed(s.value); });
    std::erase_if(m.inputs, removed);
    dropUnusedOperators(m);
    renumberValues(m);
  }

 private:
  size_t round_;
};

}  // namespace

std::shared_ptr<const Pass> toBackend(size_t round) { return std::make_shared<ToBackend>(round); }

}  // namespace lstudio::passes
