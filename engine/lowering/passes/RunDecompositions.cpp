// run_decompositions, as to_edge calls it on a torch.export program: the
// graph made functional (an in-place operator becomes its functional form;
// a write through a select or slice view is written back into the tensor it
// views with select_scatter / slice_scatter, and a view read after its tensor
// was written is made again from the new value, as torch's functionalization
// does; a write into a buffer or user input becomes a mutation output of the
// signature), then every operator that PyTorch's core ATen decomposition
// table rewrites is rewritten by the studio's rule for it
// (engine/lowering/decompositions). Operators without a rule stay; the ATen
// dialect verifier after this pass names those that are not core ATen.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/decompositions/Decomposition.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// Reads of renamed values (an in-place op's input after the op) read the new value.
class Renames {
 public:
  void add(ValueId from, ValueId to) {
    if (from == to) return;
    // `to` renamed to `from` already (detach_(x): x reads the result; detach: the result is x):
    // they are one value, and the chain between them goes rather than close a loop.
    std::vector<ValueId> chain;
    for (ValueId v = to; chain.size() <= map_.size();) {
      auto it = map_.find(v);
      if (it == map_.end()) break;
      chain.push_back(v);
      if (it->second == from) {
        for (ValueId c : chain) map_.erase(c);
        break;
      }
      v = it->second;
    }
    map_[from] = to;
  }
  ValueId operator()(ValueId v) const {
    for (auto it = map_.find(v); it != map_.end(); it = map_.find(v)) v = it->second;
    return v;
  }
  void apply(Method& m, Node& n) const {
    if (map_.empty()) return;
    for (ValueId& a : n.args) {
      if (a < 0) continue;
      a = (*this)(a);
      if (auto* l = std::get_if<TensorList>(&m.values[a].payload))
        for (ValueId& x : l->items) x = (*this)(x);
      if (auto* l = std::get_if<OptionalTensorList>(&m.values[a].payload))
        for (ValueId& x : l->items)
          if (x >= 0) x = (*this)(x);
    }
  }
  bool empty() const { return map_.empty(); }

 private:
  std::unordered_map<ValueId, ValueId> map_;
};

/// Whether a schema's result aliases its input (a view).
bool isView(const OpSchema* s) {
  return s && !s->returns.empty() && !s->returns[0].aliasSet.empty() && !s->returns[0].isWrite;
}

/// One method made functional and decomposed, node by node, into a new node list.
class MethodDecomposition {
 public:
  /// `keepWhole`: per node, kept undecomposed for a partitioner (its ops_to_not_decompose).
  MethodDecomposition(Method& m, const EdgeCompileConfig& config, PassOutcome& out, std::vector<bool> keepWhole = {})
      : m_(m), config_(config), out_(out), fresh_(m), inputs_(m.inputs.begin(), m.inputs.end()),
        keepWhole_(std::move(keepWhole)) {
    nodes_.reserve(m.nodes.size() * 2);
  }

  void run() {
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      size_t first = nodes_.size();
      node(i);
      for (size_t k = first; k < nodes_.size(); ++k) {
        relayout(nodes_[k]);
        sizes_.note(m_, nodes_[k]);
      }
    }
    if (out_.failed) return;
    // A view returned after its tensor was written is made again at the end.
    Node ret;
    ret.args = m_.outputs;
    renames_.apply(m_, ret);
    refreshViews(ret, m_.nodes.empty() ? 0 : m_.nodes.size() - 1);
    if (out_.failed) return;
    for (size_t k = 0; k < m_.outputs.size(); ++k) {
      for (OutputSpec& s : m_.signature.outputs)
        if (s.value == m_.outputs[k]) s.value = ret.args[k];
      m_.outputs[k] = ret.args[k];
    }
    originFromReader();
    m_.nodes = std::move(nodes_);
    for (OutputSpec& s : m_.signature.outputs) s.value = renames_(s.value);
    addMutationOutputs();
    eliminateDeadCode(m_);
    dropUnusedOperators(m_);
    propagateRequiresGrad();
    renumberValues(m_);
    out_.changed = true;
  }

 private:
  void fail(size_t i, const std::string& why) {
    out_.failed = true;
    out_.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i), why + " (" + nodeLocation(m_.nodes[i]) + ")"});
  }

  void node(size_t i) {
    const OpRegistry& reg = OpRegistry::builtin();
    Node n = m_.nodes[i];
    renames_.apply(m_, n);
    refreshViews(n, i);
    const OperatorRef* ref = n.kind == NodeKind::Kernel ? operatorOf(m_, n) : nullptr;
    if (!ref) return nodes_.push_back(std::move(n));
    const OpSchema* schema = reg.find(ref->name, ref->overload);
    if (isNoOpInPlace(*ref, n)) {  // ATen hands the input back untouched: its readers read the input
      renames_.add(n.outputs[0], n.args[0]);
      return;
    }
    if (isView(schema)) recordView(n);
    if (isView(schema) && n.outputs.size() > 1 && !n.args.empty() && n.args[0] >= 0 && wasWritten(n.args[0]))
      return deferResults(n);
    std::optional<Alias> writtenView;
    if (schema && schema->isInplace() && !n.args.empty() && n.outputs.size() == 1) {
      if (auto a = aliases_.find(n.args[0]); a != aliases_.end()) writtenView = a->second;
      if (!functionalize(i, n)) return;
    }
    if (i < keepWhole_.size() && keepWhole_[i]) return nodes_.push_back(std::move(n));
    lower(std::move(n), i);
    if (writtenView && !out_.failed) writeBack(*writtenView, m_.nodes[i], i);
  }

  /// dropout_ and its feature/alpha forms in eval (train false) or with p = 0: ATen's kernel
  /// returns its input without writing it (functional dropout is a clone: its own rule).
  bool isNoOpInPlace(const OperatorRef& op, const Node& n) const {
    static const std::unordered_set<std::string> kDropouts = {"aten::dropout_", "aten::feature_dropout_",
                                                             "aten::alpha_dropout_", "aten::feature_alpha_dropout_"};
    if (!kDropouts.count(op.name) || n.args.size() < 3 || n.outputs.size() != 1 || n.args[0] < 0) return false;
    auto number = [&](ValueId v) -> std::optional<double> {
      if (v < 0 || m_.values[v].symbolic) return std::nullopt;
      const auto& x = m_.values[v].payload;
      if (auto* b = std::get_if<bool>(&x)) return *b ? 1.0 : 0.0;
      if (auto* i = std::get_if<int64_t>(&x)) return double(*i);
      if (auto* d = std::get_if<double>(&x)) return *d;
      return std::nullopt;
    };
    const auto p = number(n.args[1]), train = number(n.args[2]);
    return (train && *train == 0) || (p && *p == 0);
  }

  /// Applies the decomposition rule of `n`'s operator (unless preserve_ops keeps it) and
  /// appends the result; `origin` is the input node it comes from, for messages.
  void lower(Node n, size_t origin) {
    // By value: rules add operators, which moves the operator table.
    OperatorRef op = *operatorOf(m_, n);
    decompositions::Rule rule = EdgeCompileConfig::lists(config_.preserveOps, op.name, op.overload)
                                    ? nullptr
                                    : decompositions::ruleFor(op);
    if (!rule) return nodes_.push_back(std::move(n));
    decompositions::Rewrite rewrite(m_, n, nodes_, [this](const std::string& b) { return fresh_(b); }, config_.preserveOps,
                                    &sizes_);
    const size_t first = nodes_.size();
    rule(rewrite);
    if (rewrite.failure()) return fail(origin, "cannot decompose " + op.fullName() + ": " + *rewrite.failure());
    if (op.name == "aten::flatten" && !n.args.empty() && n.args[0] >= 0 && wasWritten(n.args[0]))
      for (size_t k = first; k < nodes_.size(); ++k) takesReaderOrigin_.push_back(k);
    for (auto [from, to] : rewrite.replaced()) renames_.add(from, to);
  }

  /// The view flatten makes of a tensor written in place before (timm's inplace activation
  /// before its head's flatten) is made again by functionalization when its reader runs, and
  /// torch records it as coming from that reader (from_node): DebugHandleGeneratorPass
  /// numbers it with it. Of any other tensor it keeps flatten's own origin (torchvision's
  /// resnet18, vit's patch embedding, pvt_v2).
  void originFromReader() {
    for (size_t k : takesReaderOrigin_) {
      if (nodes_[k].outputs.size() != 1) continue;
      const ValueId out = renames_(nodes_[k].outputs[0]);
      for (size_t j = k + 1; j < nodes_.size(); ++j) {
        const std::vector<ValueId> reads = readsOf(m_, nodes_[j]);
        if (std::find(reads.begin(), reads.end(), out) == reads.end()) continue;
        if (!nodes_[j].meta.origin.empty()) nodes_[k].meta.origin = nodes_[j].meta.origin;
        break;
      }
    }
  }

  // ---- views and writes through them ----

  /// What a view aliases: the tensor it was made from (not a view; its first value stands for
  /// its storage), the view calls from there to it, and how often that tensor had been
  /// written when the view was made.
  struct Alias {
    ValueId root = kNoValue;
    std::vector<Node> steps;
    uint64_t version = 0;
  };

  /// The value that stands for `v`'s storage: the first value of a tensor written in place.
  ValueId storageOf(ValueId v) const {
    auto it = storage_.find(v);
    return it == storage_.end() ? v : it->second;
  }

  void recordView(const Node& n) {
    if (n.outputs.size() != 1 || n.args.empty() || n.args[0] < 0 || !m_.values[n.args[0]].isTensor()) {
      for (ValueId o : n.outputs) views_.insert(o);  // split, unbind: a write through them fails
      return;
    }
    Alias a;
    if (auto base = aliases_.find(n.args[0]); base != aliases_.end()) a = base->second;
    else a.root = storageOf(n.args[0]);
    a.steps.push_back(n);
    a.version = versions_[a.root];
    aliases_[n.outputs[0]] = std::move(a);
  }

  /// Whether the tensor `v` is, or is a view of, was written in place before.
  bool wasWritten(ValueId v) const {
    auto a = aliases_.find(v);
    auto w = versions_.find(a != aliases_.end() ? a->second.root : storageOf(v));
    return w != versions_.end() && w->second > 0;
  }

  /// A call with several view results (split, unbind) of a tensor written in place before:
  /// functionalization makes the call again at each result's first read, from that tensor as
  /// it is then (the view calls leading to it included), and the read takes that result. A
  /// result never read is never made.
  void deferResults(const Node& n) {
    Alias base;
    if (auto a = aliases_.find(n.args[0]); a != aliases_.end()) base = a->second;
    else base.root = storageOf(n.args[0]);
    for (size_t j = 0; j < n.outputs.size(); ++j) deferred_[n.outputs[j]] = Deferred{base, n, j};
  }

  ValueId makeDeferred(ValueId v, size_t origin) {
    if (auto r = remade_.find(v); r != remade_.end()) return r->second;
    const Deferred d = deferred_.at(v);  // by value: the calls below add to the tables
    Node c = d.call;
    c.args[0] = d.base.steps.empty() ? renames_(d.base.root) : remake(d.base, d.base.steps.size(), origin);
    for (size_t j = 1; j < c.args.size(); ++j) c.args[j] = ownCopy(c.args[j]);
    const std::string& opName = operatorOf(m_, c)->name;
    c.name = fresh_(opName.substr(opName.find("::") + 2));
    for (ValueId& o : c.outputs) {
      Value x = m_.values[o];
      x.name = fresh_(x.name);
      o = addValue(m_, std::move(x));
      views_.insert(o);  // a write through it fails, as through the call it stands for
    }
    const ValueId result = c.outputs[d.result];
    lower(std::move(c), origin);
    return remade_[v] = renames_(result);
  }

  /// The view calls of `a` up to step `count`, made again from the current value of its tensor.
  ValueId remake(const Alias& a, size_t count, size_t origin) {
    ValueId cur = renames_(a.root);
    Alias made{a.root, {}, versions_[a.root]};
    for (size_t k = 0; k < count && !out_.failed; ++k) {
      Node c = a.steps[k];
      const Value old = m_.values[c.outputs[0]];  // by value: new values move the table
      const std::string& opName = operatorOf(m_, c)->name;
      c.name = fresh_(opName.substr(opName.find("::") + 2));  // torch.fx names a call after its operator
      c.args[0] = cur;
      for (size_t j = 1; j < c.args.size(); ++j) c.args[j] = ownCopy(c.args[j]);
      Value v = old;
      v.name = c.name;
      c.outputs = {addValue(m_, std::move(v))};
      made.steps.push_back(c);
      lower(c, origin);
      cur = renames_(c.outputs[0]);
    }
    aliases_[cur] = made;
    return cur;
  }

  /// A view read after its tensor was written is made again from the new value (once per write).
  void refreshViews(Node& n, size_t origin) {
    auto fresh = [&](ValueId v) -> ValueId {
      if (deferred_.count(v)) return makeDeferred(v, origin);
      auto a = aliases_.find(v);
      if (a == aliases_.end() || a->second.version == versions_[a->second.root]) return v;
      auto r = refreshed_.find(v);
      if (r != refreshed_.end() && r->second.second == versions_[a->second.root]) return r->second.first;
      const Alias alias = a->second;
      ValueId made = remake(alias, alias.steps.size(), origin);
      refreshed_[v] = {made, versions_[alias.root]};
      return made;
    };
    for (ValueId& a : n.args) {
      if (a < 0) continue;
      a = fresh(a);
      if (auto* l = std::get_if<TensorList>(&m_.values[a].payload))
        for (ValueId& x : l->items) x = fresh(x);
      if (auto* l = std::get_if<OptionalTensorList>(&m_.values[a].payload))
        for (ValueId& x : l->items)
          if (x >= 0) x = fresh(x);
    }
  }

  /// A number or int list argument as a value of its own (each call owns its arguments, as
  /// the program torch traces again has them); tensors and the rest are shared.
  ValueId ownCopy(ValueId v) {
    if (v < 0) return v;
    Value x = m_.values[v];
    if (auto* l = std::get_if<IntList>(&x.payload)) {
      for (ValueId& item : l->items) item = ownCopy(item);
      return addValue(m_, std::move(x));
    }
    bool number = std::holds_alternative<int64_t>(x.payload) || std::holds_alternative<double>(x.payload) ||
                  std::holds_alternative<bool>(x.payload);
    return number && !x.symbolic ? addValue(m_, std::move(x)) : v;
  }

  /// The argument of view call `step` named `name` (its own copy), or none.
  BuildArg stepArg(const Node& step, const std::string& name) {
    for (size_t k = 0; k < step.argNames.size() && k < step.args.size(); ++k)
      if (step.argNames[k] == name && step.args[k] >= 0) return TensorRef{ownCopy(step.args[k])};
    return None{};
  }

  /// After a write into a view (node `written`, the original): its new content is scattered
  /// back through each view call into the tensor it views, innermost first, as
  /// functionalization writes it (select_scatter, slice_scatter); that tensor's later reads read
  /// the result.
  void writeBack(const Alias& a, const Node& written, size_t origin) {
    ValueId content = renames_(written.outputs[0]);
    for (size_t k = a.steps.size(); k-- > 0 && !out_.failed;) {
      const Node& step = a.steps[k];
      const OperatorRef op = *operatorOf(m_, step);  // by value: new calls move the table
      // detach views the whole tensor: what was written is its new value (functionalization's
      // detach_inverse is the identity). alias's inverse is an alias of what was written.
      const bool whole = op.overload == "default" || op.overload.empty();
      if (op.name == "aten::detach" && whole) continue;
      const bool aliased = op.name == "aten::alias" && whole;
      ValueId parent = aliased ? kNoValue : k == 0 ? renames_(a.root) : remake(a, k, origin);
      std::vector<Node> calls;
      decompositions::Rewrite b(m_, written, calls, [this](const std::string& x) { return fresh_(x); });
      TensorRef scattered;
      if (aliased) {
        scattered = b.op("aten.alias.default", {TensorRef{content}});
      } else if (op.name == "aten::select" && op.overload == "int") {
        scattered = b.op("aten.select_scatter.default",
                         {TensorRef{parent}, TensorRef{content}, stepArg(step, "dim"), stepArg(step, "index")});
      } else if (op.name == "aten::slice" && op.overload == "Tensor") {
        BuildArg dim = stepArg(step, "dim"), by = stepArg(step, "step");
        scattered = b.op("aten.slice_scatter.default",
                         {TensorRef{parent}, TensorRef{content}, std::holds_alternative<None>(dim.v) ? BuildArg(0) : dim,
                          stepArg(step, "start"), stepArg(step, "end"),
                          std::holds_alternative<None>(by.v) ? BuildArg(1) : by});
      } else {
        return fail(origin, "an in-place write through a view made by " + op.fullName() +
                                ": the studio writes back through select, slice, detach and alias views only");
      }
      if (b.failure()) return fail(origin, "writing back through " + op.fullName() + ": " + *b.failure());
      for (Node& c : calls) lower(std::move(c), origin);
      content = renames_(scattered.id);
    }
    ValueId root = a.root;
    renames_.add(renames_(root), content);
    storage_[content] = root;
    ++versions_[root];
    if (inputs_.count(root) && std::find(mutatedInputs_.begin(), mutatedInputs_.end(), root) == mutatedInputs_.end())
      mutatedInputs_.push_back(root);
  }

  /// In place -> functional: the functional op writes the node's own result,
  /// which every later read of the mutated tensor reads instead. False when
  /// the node is done with (failed, or a copy_, which leaves nothing to compute).
  bool functionalize(size_t i, Node& n) {
    const OpRegistry& reg = OpRegistry::builtin();
    const OperatorRef op = *operatorOf(m_, n);
    ValueId self = n.args[0];
    auto alias = aliases_.find(self);
    if (views_.count(self)) {
      fail(i, "an in-place write into " + m_.values[self].name + ", one of several views a call made (split, unbind): "
              "the studio's functionalization writes back through select and slice views only");
      return false;
    }
    ValueId root = alias != aliases_.end() ? alias->second.root : storageOf(self);
    const InputSpec* in = inputs_.count(root) ? inputSpecOf(m_, root) : nullptr;
    if (in && in->kind != InputSpec::Kind::Buffer && in->kind != InputSpec::Kind::User) {
      fail(i, "an in-place write into " + m_.values[root].name + ", which is neither a buffer nor a user input");
      return false;
    }
    if (alias != aliases_.end()) {
      // Through a view: the functional op computes the view's new content (copy_ as copy);
      // writeBack scatters it into the tensor. Later reads of the view make it again.
      const OpSchema* functional = op.name == "aten::copy_" ? reg.find("aten::copy", "")
                                                              : reg.find(op.name.substr(0, op.name.size() - 1), op.overload);
      if (!functional) {
        fail(i, "no functional form of " + op.fullName());
        return false;
      }
      setOperator(m_, n, *functional);
      aliases_[n.outputs[0]] = alias->second;  // the in-place result is the view
      return true;
    }
    if (op.name == "aten::detach_") {  // writes nothing: functionalization drops it
      renames_.add(n.outputs[0], self);
      return false;
    }
    if (in && std::find(mutatedInputs_.begin(), mutatedInputs_.end(), self) == mutatedInputs_.end())
      mutatedInputs_.push_back(self);
    ++versions_[root];
    if (op.name == "aten::copy_" && in && in->kind == InputSpec::Kind::Buffer) {
      // copy_(buffer, src) leaves the buffer equal to src: later reads read src (torch.export
      // writes no copy for a buffer; into any other tensor it keeps a functional copy).
      ValueId src = n.args.size() > 1 ? n.args[1] : kNoValue;
      const TensorSpec* ts = src >= 0 ? m_.values[src].tensorIf() : nullptr;
      const TensorSpec* td = m_.values[self].tensorIf();
      if (!ts || !td || ts->sizes != td->sizes || ts->dtype != td->dtype) {
        fail(i, "copy_ between tensors of different shape or dtype is not made functional yet");
        return false;
      }
      renames_.add(self, src);
      renames_.add(n.outputs[0], src);
      storage_[src] = root;
      return false;
    }
    const OpSchema* functional = reg.find(op.name.substr(0, op.name.size() - 1), op.overload);
    if (!functional) {
      fail(i, "no functional form of " + op.fullName());
      return false;
    }
    setOperator(m_, n, *functional);
    renames_.add(self, n.outputs[0]);
    storage_[n.outputs[0]] = root;
    return true;
  }

  /// Mutated inputs become outputs, first, in input order (as functionalization orders them).
  void addMutationOutputs() {
    std::vector<ValueId> values;
    std::vector<OutputSpec> specs;
    for (const InputSpec& in : m_.signature.inputs) {
      if (std::find(mutatedInputs_.begin(), mutatedInputs_.end(), in.value) == mutatedInputs_.end()) continue;
      bool buffer = in.kind == InputSpec::Kind::Buffer;
      OutputSpec s{buffer ? OutputSpec::Kind::BufferMutation : OutputSpec::Kind::UserInputMutation, renames_(in.value),
                   buffer ? in.target : m_.values[in.value].name};
      values.push_back(s.value);
      specs.push_back(s);
    }
    m_.outputs.insert(m_.outputs.begin(), values.begin(), values.end());
    m_.signature.outputs.insert(m_.signature.outputs.begin(), specs.begin(), specs.end());
  }

  /// The layout tracing the program again (as run_decompositions does) gives a
  /// node's result, where it follows from the operator and its inputs (views,
  /// elementwise operators): torch.export's recorded strides can differ for
  /// size-1 dimensions, and later decompositions (matmul's fold) read them.
  void relayout(const Node& n) {
    const OperatorRef* op = operatorOf(m_, n);
    if (!op || n.outputs.empty()) return;
    // Every piece of a split is laid out as its input; another operator's further results
    // (a normalization's statistics) keep what was recorded.
    const size_t results = decompositions::isSplit(op->name) ? n.outputs.size() : 1;
    for (size_t i = 0; i < results; ++i) {
      TensorSpec* t = std::get_if<TensorSpec>(&m_.values[n.outputs[i]].payload);
      if (!t || !t->symbols.empty()) continue;
      if (auto st = decompositions::derivedStrides(m_, *op, n.args, *t)) {
        t->strides = *st;
        t->dimOrder = decompositions::dimOrderOf(t->sizes, t->strides);
      }
    }
  }

 public:
  /// Whether each result requires grad when the program is traced again with
  /// its parameters requiring grad: a floating-point result of a call that
  /// reads such a tensor, unless the operator makes a new tensor from sizes
  /// and values only. The statistics a normalization returns beside its
  /// result are not differentiable.
  void propagateRequiresGrad() {
    static const std::unordered_set<std::string> kFactories = {
        "aten::full", "aten::full_like", "aten::zeros", "aten::zeros_like", "aten::ones", "aten::ones_like",
        "aten::empty", "aten::empty_like", "aten::scalar_tensor", "aten::arange"};
    for (Node& n : m_.nodes) {
      if (isControlFlow(n.kind)) {
        controlFlowRequiresGrad(n);
        continue;
      }
      const OperatorRef* op = operatorOf(m_, n);
      if (!op) continue;
      bool grad = false;
      if (!kFactories.count(op->name))
        for (ValueId v : readsOf(m_, n))
          if (const TensorSpec* t = m_.values[v].tensorIf()) grad = grad || t->requiresGrad;
      // (native_group_norm's mean and rstd do require grad when its input does: upstream's specs say so.)
      bool statistics = op->name == "aten::native_layer_norm" || op->name.find("_native_batch_norm") != std::string::npos ||
                        op->name == "aten::native_batch_norm";
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (TensorSpec* t = std::get_if<TensorSpec>(&m_.values[n.outputs[k]].payload))
          t->requiresGrad = grad && isFloatingPoint(t->dtype) && !(statistics && k > 0);
    }
  }

 private:

  /// The re-trace gives a subgraph's inputs its operands' tensors (a cond's
  /// after its predicate); a result requires grad when any subgraph's does.
  void controlFlowRequiresGrad(const Node& n) {
    const size_t first = n.kind == NodeKind::Cond ? 1 : 0;
    std::vector<char> grad(n.outputs.size(), 0);
    for (int32_t g : n.subgraphs) {
      if (g < 0 || static_cast<size_t>(g) >= m_.subgraphs.size()) continue;
      Method& b = m_.subgraphs[static_cast<size_t>(g)];
      for (size_t k = 0; k < b.inputs.size() && k + first < n.args.size(); ++k)
        if (TensorSpec* t = std::get_if<TensorSpec>(&b.values[b.inputs[k]].payload))
          if (const TensorSpec* operand = m_.values[n.args[k + first]].tensorIf()) t->requiresGrad = operand->requiresGrad;
      MethodDecomposition(b, config_, out_).propagateRequiresGrad();
      for (size_t k = 0; k < b.outputs.size() && k < grad.size(); ++k)
        if (const TensorSpec* t = b.values[b.outputs[k]].tensorIf()) grad[k] |= t->requiresGrad;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (TensorSpec* t = std::get_if<TensorSpec>(&m_.values[n.outputs[k]].payload)) t->requiresGrad = grad[k];
  }

  Method& m_;
  const EdgeCompileConfig& config_;
  PassOutcome& out_;
  FreshNames fresh_;
  Renames renames_;
  std::vector<Node> nodes_;
  std::vector<size_t> takesReaderOrigin_;  ///< in nodes_: flatten's views (originFromReader)
  decompositions::SymbolicSizes sizes_;  ///< symbolic sizes computed so far, one node each
  std::unordered_set<ValueId> views_;    // results of view calls with several results (split, unbind)
  struct Deferred {
    Alias base;   ///< the tensor the call reads, as a view of a written tensor
    Node call;    ///< the call with several view results
    size_t result = 0;
  };
  std::unordered_map<ValueId, Deferred> deferred_;  // a result of such a call on a written tensor
  std::unordered_map<ValueId, ValueId> remade_;     // such a result -> the call made again at its first read
  std::unordered_map<ValueId, Alias> aliases_;        // results of view calls with one result
  std::unordered_map<ValueId, ValueId> storage_;      // a value written in place -> its tensor's first value
  std::unordered_map<ValueId, uint64_t> versions_;    // a tensor's first value -> writes into it so far
  std::unordered_map<ValueId, std::pair<ValueId, uint64_t>> refreshed_;  // a view -> made again, at version
  std::vector<ValueId> mutatedInputs_;   // in the order they are first written
  std::unordered_set<ValueId> inputs_;
  std::vector<bool> keepWhole_;
};

class RunDecompositions : public Pass {
 public:
  std::string name() const override { return "run_decompositions"; }
  std::string description() const override {
    return "to_edge: in-place operators made functional, then non-core ATen operators decomposed into core ATen";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    // Branches first: their caller then tells them which operands require grad.
    auto decompose = [&](auto& self, Method& m) -> void {
      for (Method& b : m.subgraphs) self(self, b);
      if (config.partitioners.empty()) return MethodDecomposition(m, config.edgeCompile, out).run();
      // to_edge_transform_and_lower decomposes twice per partitioner, in their order. First
      // every operator a partitioner may keep whole (XNNPACK's linear, hardswish, max_pool2d,
      // ...) stays, also where another operator's decomposition makes it (an lstm's linears).
      // Then those this partitioner's checks refuse (its check_op_support) are decomposed
      // after all, for good: an operator stays whole only if every partitioner keeps it
      // (a DYNAMIC_QUANT-only partitioner first decomposes the float hardswish the next
      // one would have taken).
      EdgeCompileConfig first = config.edgeCompile;
      for (const std::string& op : xnnpackOpsToNotDecompose()) first.preserveOps.push_back(op);
      for (const PartitionerSpec& spec : config.partitioners) {
        MethodDecomposition(m, first, out).run();
        if (out.failed) return;
        MethodDecomposition(m, config.edgeCompile, out, xnnpackKeepsWhole(m, spec)).run();
        if (out.failed) return;
      }
    };
    for (Method& m : p.methods) decompose(decompose, m);
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> runDecompositions() { return std::make_shared<RunDecompositions>(); }

}  // namespace lstudio::passes
