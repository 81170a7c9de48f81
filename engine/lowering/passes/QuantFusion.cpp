// QuantFusionPass (do_quant_fusion_and_const_prop): reference quantized
// patterns, dequantize -> op -> quantize, become the quantized operator
// ExecuTorch's kernels run on integers. The patterns are ExecuTorch's
// (exir/passes/_quant_patterns_and_replacements.py, quant_fusion_pass.py):
//  - dq(a), dq(b) -> add -> q            => quantized_decomposed::add
//  - dq(a), dq(b) -> add -> relu -> q    => quantized_decomposed::add_relu
//  - dq(x) -> slice_copy -> q, same qparams => slice_copy on the integers
//  - dq(xi) ... -> cat -> q, every qparam equal => cat on the integers
// ExecuTorch's add/slice patterns are traced with dtype torch.uint8 as a
// literal, so (as there) only uint8 graphs match them; cat compares the
// qparams including the dtype. There is no pattern for linear/addmm/conv:
// those stay dq -> op -> q, as ExecuTorch leaves them (XNNPACK fuses them).
// Programs with a backward signature (training) are refused, as to_executorch does.
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

constexpr const char* kQuantize = "quantized_decomposed::quantize_per_tensor";
constexpr const char* kDequantize = "quantized_decomposed::dequantize_per_tensor";

bool sameScalar(const Method& m, ValueId a, ValueId b) {
  auto x = numberOf(m, a), y = numberOf(m, b);
  return x && y && *x == *y;
}

/// The qparams (scale, zero point, qmin, qmax, dtype) of a quantize/dequantize node.
bool sameQParams(const Method& m, const Node& a, const Node& b) {
  if (a.args.size() < 6 || b.args.size() < 6) return false;
  for (size_t k = 1; k < 6; ++k)
    if (!sameScalar(m, a.args[k], b.args[k])) return false;
  return true;
}

bool dtypeIs(const Method& m, const Node& qOrDq, ScalarType t) {
  auto d = qOrDq.args.size() >= 6 ? numberOf(m, qOrDq.args[5]) : std::nullopt;
  return d && static_cast<int>(*d) == static_cast<int>(t);
}

class QuantFusion : public Pass {
 public:
  std::string name() const override { return "QuantFusionPass"; }
  std::string description() const override {
    return "dequantize -> op -> quantize becomes a quantized op (do_quant_fusion_and_const_prop)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.doQuantFusionAndConstProp; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (const Method& m : p.methods)
      if (hasBackwardSignature(m)) {
        out.failed = true;
        out.diagnostics.push_back(
            {Diagnostic::Severity::Error, -1,
             "method '" + m.name +
                 "' has a backward signature (loss and gradient outputs, for on-device training): ExecuTorch "
                 "cannot run do_quant_fusion_and_const_prop on it; set do_quant_fusion_and_const_prop to false"});
      }
    if (out.failed) return out;
    for (Method& m : p.methods) {
      size_t fused = 0;
      while (fuseOne(m)) ++fused;
      if (fused) {
        eliminateDeadCode(m);  // as the pass ends in ExecuTorch
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(fused) + " quantized patterns fused"});
      }
    }
    return out;
  }

 private:
  /// Finds and rewrites the first matching pattern; false when none is left.
  static bool fuseOne(Method& m) {
    const OpRegistry& reg = OpRegistry::builtin();
    std::vector<int> uses = useCounts(m);
    // The node writing `v` when it is `name` and `v` has no other reader.
    auto single = [&](ValueId v, const char* name, const char* overload = "default") -> int {
      int i = producerOf(m, v);
      if (i < 0 || uses[v] != 1 || !calls(m, m.nodes[i], name, overload)) return -1;
      return i;
    };
    for (size_t qi = 0; qi < m.nodes.size(); ++qi) {
      const Node& q = m.nodes[qi];
      if (!calls(m, q, kQuantize) || q.args.size() < 6 || q.outputs.size() != 1) continue;
      std::vector<int> erase;
      // add / add_relu
      {
        int relu = single(q.args[0], "aten::relu");
        int add = single(relu >= 0 ? m.nodes[relu].args[0] : q.args[0], "aten::add", "Tensor");
        if (add >= 0 && dtypeIs(m, q, ScalarType::Byte)) {
          const Node& a = m.nodes[add];
          bool alphaOne = a.args.size() < 3 || numberOf(m, a.args[2]).value_or(0) == 1.0;
          int da = a.args.size() >= 2 ? single(a.args[0], kDequantize) : -1;
          int db = a.args.size() >= 2 ? single(a.args[1], kDequantize) : -1;
          if (alphaOne && da >= 0 && db >= 0 && da != db && dtypeIs(m, m.nodes[da], ScalarType::Byte) &&
              dtypeIs(m, m.nodes[db], ScalarType::Byte)) {
            const OpSchema* s = reg.find("quantized_decomposed::" + std::string(relu >= 0 ? "add_relu" : "add"), "");
            if (!s) return false;
            Node fusedNode = q;
            fusedNode.args.clear();
            fusedNode.argNames.clear();
            auto qparams = [&](const Node& n, ValueId tensor) {
              fusedNode.args.push_back(tensor);
              for (size_t k = 1; k < 5; ++k) fusedNode.args.push_back(n.args[k]);
            };
            qparams(m.nodes[da], m.nodes[da].args[0]);
            qparams(m.nodes[db], m.nodes[db].args[0]);
            for (size_t k = 1; k < 5; ++k) fusedNode.args.push_back(q.args[k]);
            for (const auto& arg : s->arguments) fusedNode.argNames.push_back(arg.name);
            setOperator(m, fusedNode, *s);
            m.nodes[qi] = std::move(fusedNode);
            erase = {add, da, db};
            if (relu >= 0) erase.push_back(relu);
          }
        }
      }
      // slice_copy with the same qparams on both sides
      if (erase.empty()) {
        int slice = single(q.args[0], "aten::slice_copy", "Tensor");
        if (slice >= 0 && dtypeIs(m, q, ScalarType::Byte)) {
          const Node& s = m.nodes[slice];
          bool stepOne = s.args.size() < 5 || numberOf(m, s.args[4]).value_or(0) == 1.0;
          int dq = single(s.args[0], kDequantize);
          if (stepOne && dq >= 0 && sameQParams(m, m.nodes[dq], q)) {
            Node moved = s;
            moved.args[0] = m.nodes[dq].args[0];
            moved.outputs = q.outputs;  // the integer result keeps the quantize's spec
            m.nodes[qi] = std::move(moved);
            erase = {slice, dq};
          }
        }
      }
      // cat: every input dequantized with the output's qparams
      if (erase.empty()) {
        int cat = single(q.args[0], "aten::cat");
        if (cat >= 0) {
          const Node& c = m.nodes[cat];
          auto* list = c.args.empty() || c.args[0] < 0 ? nullptr : std::get_if<TensorList>(&m.values[c.args[0]].payload);
          bool ok = list && !list->items.empty();
          std::vector<ValueId> ints;
          for (size_t k = 0; ok && k < list->items.size(); ++k) {
            int dq = producerOf(m, list->items[k]);
            ok = dq >= 0 && calls(m, m.nodes[dq], kDequantize) && sameQParams(m, m.nodes[dq], q);
            if (ok) ints.push_back(m.nodes[dq].args[0]);
          }
          if (ok) {
            // The dequantize nodes stay for their other readers (dead code goes later).
            Node moved = c;
            moved.args[0] = addValue(m, Value{TensorList{ints}, m.values[c.args[0]].name});
            moved.outputs = q.outputs;
            m.nodes[qi] = std::move(moved);
            erase = {cat};
          }
        }
      }
      if (erase.empty()) continue;
      std::vector<bool> drop(m.nodes.size(), false);
      for (int e : erase) drop[e] = true;
      size_t k = 0;
      std::erase_if(m.nodes, [&](const Node&) { return drop[k++]; });
      return true;
    }
    return false;
  }
};

}  // namespace

std::shared_ptr<const Pass> quantFusion() { return std::make_shared<QuantFusion>(); }

}  // namespace lstudio::passes
