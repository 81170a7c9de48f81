// SymToTensorPass (to_edge): a number the method computes at run time (a SymInt
// such as item() of a position, a SymFloat, a SymBool) passed where the
// operator's schema has a Tensor -- torch.export keeps `arange(n) + start` as
// add.Tensor(arange, start) -- becomes a 0-dim tensor made by scalar_tensor
// first, as ExecuTorch's pass does: int32 for an Int, float32 for a Float, bool
// for a Bool. Kernels read a tensor there, and such a number cannot become a
// constant as a literal one does (ScalarToTensorPass, at emission).
#include "engine/ir/CallBuilder.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/Pass.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class SymToTensor : public Pass {
 public:
  std::string name() const override { return "SymToTensorPass"; }
  std::string description() const override {
    return "to_edge: a scalar computed at run time where a Tensor is expected becomes scalar_tensor(...)";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    const OpRegistry& reg = OpRegistry::builtin();
    for (Method& m : graphsOf(p)) {
      std::vector<Node> nodes;
      nodes.reserve(m.nodes.size());
      FreshNames fresh(m);
      bool changed = false;
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        Node n = m.nodes[i];
        const OperatorRef* op = operatorOf(m, n);
        const OpSchema* s = op ? reg.find(op->name, op->overload) : nullptr;
        for (size_t a = 0; s && a < n.args.size() && a < s->arguments.size(); ++a) {
          const SchemaType& t = s->arguments[a].type;
          if (t.base != SchemaType::Base::Tensor || t.list || n.args[a] < 0 || !m.values[n.args[a]].symbolic) continue;
          const Value& v = m.values[n.args[a]];
          ScalarType dtype = std::holds_alternative<double>(v.payload) ? ScalarType::Float
                             : std::holds_alternative<bool>(v.payload) ? ScalarType::Bool
                                                                       : ScalarType::Int;
          std::vector<TensorSpec> specs{TensorSpec{}};
          specs[0].dtype = dtype;
          if (auto made = callInFront(m, n, a, "aten.scalar_tensor.default", {TensorRef{n.args[a]}, dtype}, specs, fresh, nodes);
              !made) {
            out.failed = true;
            out.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i),
                                       "cannot make a tensor of " + v.name + ": " + made.error().what});
            return out;
          }
          changed = true;
        }
        nodes.push_back(std::move(n));
      }
      if (!changed) continue;
      m.nodes = std::move(nodes);
      renumberValues(m);
      out.changed = true;
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> symToTensor() { return std::make_shared<SymToTensor>(); }

}  // namespace lstudio::passes
