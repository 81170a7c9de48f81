// RemoveMixedTypeOperators (to_edge): add, sub, mul, div and minimum whose
// operands have different dtypes get each operand cast to the promoted dtype
// first (_to_copy), as ExecuTorch's pass does, so the kernels see one dtype.
// A number in a Tensor slot counts as the 0-dim tensor ScalarToTensorPass
// makes of it (float32, int64 or bool).
#include <algorithm>

#include "engine/ir/CallBuilder.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// bool < integer < floating point < complex, torch's type promotion categories.
int category(ScalarType t) {
  if (t == ScalarType::Bool) return 0;
  if (t == ScalarType::ComplexHalf || t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble) return 3;
  if (isFloatingPoint(t)) return 2;
  return 1;
}

/// torch.promote_types for the types the portable kernels have.
ScalarType promoteTypes(ScalarType a, ScalarType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if ((a == ScalarType::Half && b == ScalarType::BFloat16) || (a == ScalarType::BFloat16 && b == ScalarType::Half))
      return ScalarType::Float;
    return elementSize(a) >= elementSize(b) ? a : b;
  }
  if (ca == 1) {
    bool ua = a == ScalarType::Byte, ub = b == ScalarType::Byte;
    if (ua != ub) {  // uint8 with a signed type: the next signed type that holds both
      ScalarType s = ua ? b : a;
      return s == ScalarType::Char ? ScalarType::Short : s;
    }
    return elementSize(a) >= elementSize(b) ? a : b;
  }
  return elementSize(a) >= elementSize(b) ? a : b;
}

struct Operand {
  size_t arg;
  ScalarType dtype;
  bool dimensioned;  ///< a tensor with at least one dimension (outranks 0-dim tensors and numbers)
};

/// torch's elementwise_dtypes: the dimensioned operands decide unless a 0-dim one
/// (or a number) is of a higher category.
ScalarType promoted(const std::vector<Operand>& ops, bool intToFloat) {
  std::optional<ScalarType> dim, zero;
  for (const Operand& o : ops) {
    auto& slot = o.dimensioned ? dim : zero;
    slot = slot ? promoteTypes(*slot, o.dtype) : o.dtype;
  }
  ScalarType r = !dim ? *zero : (zero && category(*zero) > category(*dim) ? *zero : *dim);
  if (intToFloat && category(r) < 2) r = ScalarType::Float;
  return r;
}

class RemoveMixedTypeOperators : public Pass {
 public:
  std::string name() const override { return "RemoveMixedTypeOperators"; }
  std::string description() const override { return "to_edge: operands of mixed dtypes cast to the promoted one (_to_copy)"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    const OpRegistry& reg = OpRegistry::builtin();
    for (Method& m : graphsOf(p)) {
      std::vector<Node> nodes;
      nodes.reserve(m.nodes.size());
      FreshNames fresh(m);
      for (Node& n : m.nodes) {
        const OperatorRef* op = operatorOf(m, n);
        bool intToFloat = op && op->name == "aten::div" && op->overload == "Tensor";
        bool listed = op && ((op->overload == "Tensor" && (op->name == "aten::add" || op->name == "aten::sub" ||
                                                            op->name == "aten::mul" || op->name == "aten::div")) ||
                             (op->name == "aten::div" && op->overload == "Tensor_mode") ||
                             (op->name == "aten::minimum" && op->overload == "default"));
        const OpSchema* s = listed ? reg.find(op->name, op->overload) : nullptr;
        std::vector<Operand> operands;
        for (size_t a = 0; s && a < n.args.size() && a < s->arguments.size(); ++a) {
          if (s->arguments[a].type.base != SchemaType::Base::Tensor || s->arguments[a].type.list || n.args[a] < 0) continue;
          const Value& v = m.values[n.args[a]];
          if (const TensorSpec* t = v.tensorIf()) operands.push_back({a, t->dtype, !t->sizes.empty()});
          else if (std::holds_alternative<double>(v.payload)) operands.push_back({a, ScalarType::Float, false});
          else if (std::holds_alternative<int64_t>(v.payload)) operands.push_back({a, ScalarType::Long, false});
          else if (std::holds_alternative<bool>(v.payload)) operands.push_back({a, ScalarType::Bool, false});
        }
        if (operands.size() >= 2) {
          ScalarType to = promoted(operands, intToFloat);
          for (const Operand& o : operands) {
            if (o.dtype == to) continue;
            TensorSpec spec;
            spec.dtype = to;
            if (const TensorSpec* t = m.values[n.args[o.arg]].tensorIf()) {
              spec.sizes = t->sizes;
              spec.symbols = t->symbols;  // a cast of a tensor of run-time size has that size
              spec.dynamism = t->dynamism;
            }
            for (size_t d = 0; d < spec.sizes.size(); ++d) spec.dimOrder.push_back(static_cast<uint8_t>(d));
            std::vector<TensorSpec> specs{spec};
            if (!callInFront(m, n, o.arg, "aten._to_copy.default", {TensorRef{n.args[o.arg]}, to}, specs, fresh, nodes))
              continue;
            out.changed = true;
          }
        }
        nodes.push_back(std::move(n));
      }
      m.nodes = std::move(nodes);
      if (out.changed) renumberValues(m);
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> removeMixedTypeOperators() { return std::make_shared<RemoveMixedTypeOperators>(); }

}  // namespace lstudio::passes
