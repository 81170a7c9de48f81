// RemoveNoopPass and RemoveToCopyPass (to_edge, after the view copies are made):
// calls that hand back their input unchanged are dropped and their readers read
// the input. A slice_copy whose static result has its input's shape, a
// to.dtype to the dtype it already has, and a _to_copy that keeps dtype, shape
// and strides. Where a dropped call stood between a dequantize and a quantize
// with the same parameters, the pair goes too (the quantize's readers read the
// integers), as ExecuTorch's eliminate_dq_q does. FoldRedundantDequantizeQuantizePass folds
// every such pair, wherever it stands.
#include <algorithm>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/Pass.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

bool isDequantize(const OperatorRef& op) {
  return op.name == "quantized_decomposed::dequantize_per_tensor" || op.name == "quantized_decomposed::dequantize_per_channel";
}
bool isQuantize(const OperatorRef& op) {
  return op.name == "quantized_decomposed::quantize_per_tensor" || op.name == "quantized_decomposed::quantize_per_channel";
}

bool sameValue(const Method& m, ValueId a, ValueId b) {
  if (a == b) return true;
  if (a < 0 || b < 0) return false;
  const Value &x = m.values[a], &y = m.values[b];
  // Two run-time scalars are alike only when they are one value (their payloads are hints).
  if (x.kind() != y.kind() || x.kind() == ValueKind::Tensor || x.symbolic || y.symbolic) return false;
  if (auto* l = std::get_if<IntList>(&x.payload)) {
    const auto* r = std::get_if<IntList>(&y.payload);
    if (!r || l->items.size() != r->items.size()) return false;
    for (size_t i = 0; i < l->items.size(); ++i)
      if (!sameValue(m, l->items[i], r->items[i])) return false;
    return true;
  }
  if (auto* i = std::get_if<int64_t>(&x.payload)) return *i == std::get<int64_t>(y.payload);
  if (auto* d = std::get_if<double>(&x.payload)) return *d == std::get<double>(y.payload);
  if (auto* b = std::get_if<bool>(&x.payload)) return *b == std::get<bool>(y.payload);
  if (auto* str = std::get_if<std::string>(&x.payload)) return *str == std::get<std::string>(y.payload);
  return x.kind() == ValueKind::None;
}

/// The arguments fx holds in node.args: the schema's positional ones (dequantize's
/// keyword-only out_dtype is not compared, as upstream compares args alone).
size_t positionalCount(const Method& m, const Node& n) {
  const OperatorRef* op = operatorOf(m, n);
  const OpSchema* s = op ? OpRegistry::builtin().find(op->name, op->overload) : nullptr;
  if (!s) return n.args.size();
  size_t k = 0;
  while (k < s->arguments.size() && !s->arguments[k].kwargOnly) ++k;
  return std::min(k, n.args.size());
}

/// eliminate_dq_q: every quantize reading `dq` with dq's parameters reads dq's input instead.
bool eliminateDequantizeQuantize(Method& m, int dqNode) {
  const Node dq = m.nodes[static_cast<size_t>(dqNode)];
  if (dq.outputs.empty() || dq.args.empty()) return false;
  const size_t dqArgs = positionalCount(m, dq);
  bool changed = false;
  for (const Node& q : m.nodes) {
    const OperatorRef* op = operatorOf(m, q);
    if (!op || !isQuantize(*op) || q.args.empty() || q.args[0] != dq.outputs[0] || q.outputs.empty()) continue;
    bool same = positionalCount(m, q) == dqArgs;
    for (size_t i = 1; same && i < dqArgs; ++i) same = sameValue(m, q.args[i], dq.args[i]);
    if (same) replaceUses(m, q.outputs[0], dq.args[0]), changed = true;
  }
  return changed;
}

class RemoveNoop : public Pass {
 public:
  std::string name() const override { return "RemoveNoopPass"; }
  std::string description() const override {
    return "to_edge: a slice_copy that keeps its input's shape and a to.dtype to the same dtype are dropped";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      std::vector<int> dequantizes;
      for (const Node& n : m.nodes) {
        const OperatorRef* op = operatorOf(m, n);
        if (!op || n.args.empty() || n.outputs.size() != 1) continue;
        const bool slice = op->name == "aten::slice_copy" && op->overload == "Tensor";
        const bool to = op->name == "aten::to" && op->overload == "dtype";
        if (!slice && !to) continue;
        const TensorSpec* in = m.values[n.args[0]].tensorIf();
        const TensorSpec* res = m.values[n.outputs[0]].tensorIf();
        if (!in || !res) continue;
        // Shapes compare only when every size is static on both sides.
        const bool noop = slice ? in->symbols.empty() && res->symbols.empty() && in->sizes == res->sizes
                                : in->dtype == res->dtype && in->sizes == res->sizes;
        if (!noop) continue;
        const int from = producerOf(m, n.args[0]);
        if (from >= 0)
          if (const OperatorRef* f = operatorOf(m, m.nodes[static_cast<size_t>(from)]); f && isDequantize(*f))
            dequantizes.push_back(from);
        replaceUses(m, n.outputs[0], n.args[0]);
        out.changed = true;
      }
      if (!out.changed) continue;
      eliminateDeadCode(m);
      for (int dq : dequantizes) eliminateDequantizeQuantize(m, dq);
      eliminateDeadCode(m);
      dropUnusedOperators(m);
    }
    return out;
  }
};

class RemoveToCopy : public Pass {
 public:
  std::string name() const override { return "RemoveToCopyPass"; }
  std::string description() const override { return "to_edge: a _to_copy that keeps dtype, shape and strides is dropped"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      bool changed = false;
      for (const Node& n : m.nodes) {
        const OperatorRef* op = operatorOf(m, n);
        if (!op || op->name != "aten::_to_copy" || n.args.empty() || n.outputs.size() != 1) continue;
        const TensorSpec* in = m.values[n.args[0]].tensorIf();
        const TensorSpec* res = m.values[n.outputs[0]].tensorIf();
        if (!in || !res || in->dtype != res->dtype || in->sizes != res->sizes || in->symbols != res->symbols) continue;
        if (in->dimOrder != res->dimOrder || (!in->strides.empty() && !res->strides.empty() && in->strides != res->strides))
          continue;
        replaceUses(m, n.outputs[0], n.args[0]);
        changed = true;
      }
      if (!changed) continue;
      eliminateDeadCode(m);
      dropUnusedOperators(m);
      out.changed = true;
    }
    return out;
  }
};

/// FoldRedundantDequantizeQuantizePass (to_edge, after RemoveToCopyPass): a quantize reading a
/// dequantize of the same parameters reads the dequantize's integers instead, wherever the pair
/// stands (a decomposition that drops an eval-mode dropout between them leaves it adjacent).
class FoldRedundantDequantizeQuantize : public Pass {
 public:
  std::string name() const override { return "FoldRedundantDequantizeQuantizePass"; }
  std::string description() const override {
    return "to_edge: a dequantize followed by a quantize of the same parameters is folded (eliminate_dq_q over the graph)";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      bool changed = false;
      for (size_t i = 0; i < m.nodes.size(); ++i)
        if (const OperatorRef* op = operatorOf(m, m.nodes[i]); op && isDequantize(*op))
          changed = eliminateDequantizeQuantize(m, int(i)) || changed;
      if (!changed) continue;
      eliminateDeadCode(m);
      dropUnusedOperators(m);
      out.changed = true;
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> foldRedundantDequantizeQuantize() { return std::make_shared<FoldRedundantDequantizeQuantize>(); }
std::shared_ptr<const Pass> removeNoop() { return std::make_shared<RemoveNoop>(); }
std::shared_ptr<const Pass> removeToCopy() { return std::make_shared<RemoveToCopy>(); }

}  // namespace lstudio::passes
