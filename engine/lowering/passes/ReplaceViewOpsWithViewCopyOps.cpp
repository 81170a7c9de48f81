// ReplaceViewOpsWithViewCopyOpsPass (to_edge): ATen view operators become their *_copy
// variants (view -> view_copy, permute -> permute_copy, ...), because the
// edge dialect has no aliasing operators; views come back later, planned.
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/decompositions/Decomposition.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class ReplaceViewOpsWithViewCopyOps : public Pass {
 public:
  std::string name() const override { return "ReplaceViewOpsWithViewCopyOpsPass"; }
  std::string description() const override { return "to_edge: aliasing ATen views become their _copy variants"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    const OpRegistry& reg = OpRegistry::builtin();
    for (Method& m : graphsOf(p)) {
      for (OperatorRef& op : m.operators) {
        if (op.name.rfind("aten::", 0) != 0 || op.name.ends_with("_copy")) continue;
        const OpSchema* s = reg.find(op.name, op.overload);
        if (!s || s->isInplace() || s->returns.empty() || s->returns[0].aliasSet.empty() || s->returns[0].isWrite) continue;
        const OpSchema* copy = reg.find(op.name + "_copy", op.overload);
        if (!copy) continue;
        op.name += "_copy";
        out.changed = true;
      }
      if (!out.changed) continue;
      for (Node& n : m.nodes)
        if (n.kind == NodeKind::Kernel && n.op >= 0) {
          const OperatorRef& op = m.operators[n.op];
          n.target = "torch.ops." + op.name.substr(0, op.name.find("::")) + "." + op.name.substr(op.name.find("::") + 2) +
                     "." + op.overload;
          // A copy is laid out afresh, and so is what is computed from it
          // elementwise: layouts follow from the new operators, in order.
          for (ValueId o : n.outputs)
            if (TensorSpec* t = std::get_if<TensorSpec>(&m.values[o].payload)) {
              t->storageOffset = 0;  // no result aliases another's storage any more
              if (auto st = decompositions::derivedStrides(m, op, n.args, *t)) {
                t->strides = *st;
                t->dimOrder = decompositions::dimOrderOf(t->sizes, t->strides);
              }
            }
        }
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> replaceViewOpsWithViewCopyOps() { return std::make_shared<ReplaceViewOpsWithViewCopyOps>(); }

}  // namespace lstudio::passes
