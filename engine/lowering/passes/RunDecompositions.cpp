// run_decompositions, as to_edge calls it on a torch.export program: the
// graph made functional (an in-place operator becomes its functional form;
// a write into a buffer or user input becomes a mutation output of the
// signature), then every operator that PyTorch's core ATen decomposition
// table rewrites is rewritten by the studio's rule for it
// (engine/lowering/decompositions). Operators without a rule stay; the ATen
// dialect verifier after this pass names those that are not core ATen.
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/decompositions/Decomposition.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// Reads of renamed values (an in-place op's input after the op) read the new value.
class Renames {
 public:
  void add(ValueId from, ValueId to) { map_[from] = to; }
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
  MethodDecomposition(Method& m, const EdgeCompileConfig& config, PassOutcome& out)
      : m_(m), config_(config), out_(out), fresh_(m), inputs_(m.inputs.begin(), m.inputs.end()) {
    nodes_.reserve(m.nodes.size() * 2);
  }

  void run() {
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      size_t first = nodes_.size();
      node(i);
      for (size_t k = first; k < nodes_.size(); ++k) relayout(nodes_[k]);
    }
    if (out_.failed) return;
    m_.nodes = std::move(nodes_);
    for (ValueId& v : m_.outputs) v = renames_(v);
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
    // By value: rules add operators, which moves the operator table.
    const OperatorRef* ref = n.kind == NodeKind::Kernel ? operatorOf(m_, n) : nullptr;
    if (!ref) return nodes_.push_back(std::move(n));
    OperatorRef op = *ref;
    const OpSchema* schema = reg.find(op.name, op.overload);
    if (isView(schema))
      for (ValueId o : n.outputs) views_.insert(o);
    if (schema && schema->isInplace() && !n.args.empty() && n.outputs.size() == 1) {
      if (!functionalize(i, n)) return;
      op = *operatorOf(m_, n);
    }
    // preserve_ops: out of the table, so the operator stays whole.
    decompositions::Rule rule = EdgeCompileConfig::lists(config_.preserveOps, op.name, op.overload)
                                    ? nullptr
                                    : decompositions::ruleFor(op);
    if (!rule) return nodes_.push_back(std::move(n));
    decompositions::Rewrite rewrite(m_, n, nodes_, [this](const std::string& b) { return fresh_(b); }, config_.preserveOps);
    rule(rewrite);
    if (rewrite.failure()) return fail(i, "cannot decompose " + op.fullName() + ": " + *rewrite.failure());
    for (auto [from, to] : rewrite.replaced()) renames_.add(from, to);
  }

  /// In place -> functional: the functional op writes the node's own result,
  /// which every later read of the mutated tensor reads instead. False when
  /// the node is done with (failed, or a copy_, which leaves nothing to compute).
  bool functionalize(size_t i, Node& n) {
    const OpRegistry& reg = OpRegistry::builtin();
    const OperatorRef op = *operatorOf(m_, n);
    ValueId self = n.args[0];
    if (views_.count(self)) {
      fail(i, "an in-place write into a view of another tensor (" + m_.values[self].name +
                  "): the studio's functionalization does not handle writes through views yet");
      return false;
    }
    const InputSpec* in = inputs_.count(self) ? inputSpecOf(m_, self) : nullptr;
    if (in && in->kind != InputSpec::Kind::Buffer && in->kind != InputSpec::Kind::User) {
      fail(i, "an in-place write into " + m_.values[self].name + ", which is neither a buffer nor a user input");
      return false;
    }
    if (in && std::find(mutatedInputs_.begin(), mutatedInputs_.end(), self) == mutatedInputs_.end())
      mutatedInputs_.push_back(self);
    if (op.name == "aten::copy_") {
      // copy_(self, src) leaves self equal to src: later reads read src.
      ValueId src = n.args.size() > 1 ? n.args[1] : kNoValue;
      const TensorSpec* ts = src >= 0 ? m_.values[src].tensorIf() : nullptr;
      const TensorSpec* td = m_.values[self].tensorIf();
      if (!ts || !td || ts->sizes != td->sizes || ts->dtype != td->dtype) {
        fail(i, "copy_ between tensors of different shape or dtype is not made functional yet");
        return false;
      }
      renames_.add(self, src);
      renames_.add(n.outputs[0], src);
      return false;
    }
    const OpSchema* functional = reg.find(op.name.substr(0, op.name.size() - 1), op.overload);
    if (!functional) {
      fail(i, "no functional form of " + op.fullName());
      return false;
    }
    setOperator(m_, n, *functional);
    renames_.add(self, n.outputs[0]);
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
    TensorSpec* t = std::get_if<TensorSpec>(&m_.values[n.outputs[0]].payload);
    if (!t || !t->symbols.empty()) return;
    if (auto st = decompositions::derivedStrides(m_, *op, n.args, *t)) {
      t->strides = *st;
      t->dimOrder = decompositions::dimOrderOf(t->sizes, t->strides);
    }
  }

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

  Method& m_;
  const EdgeCompileConfig& config_;
  PassOutcome& out_;
  FreshNames fresh_;
  Renames renames_;
  std::vector<Node> nodes_;
  std::unordered_set<ValueId> views_;    // results of view operators
  std::vector<ValueId> mutatedInputs_;   // in the order they are first written
  std::unordered_set<ValueId> inputs_;
};

class RunDecompositions : public Pass {
 public:
  std::string name() const override { return "run_decompositions"; }
  std::string description() const override {
    return "to_edge: in-place operators made functional, then non-core ATen operators decomposed into core ATen";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    for (Method& m : p.methods) MethodDecomposition(m, config.edgeCompile, out).run();
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> runDecompositions() { return std::make_shared<RunDecompositions>(); }

}  // namespace lstudio::passes
