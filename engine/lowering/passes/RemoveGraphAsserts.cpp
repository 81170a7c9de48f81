// RemoveGraphAssertsPass: runtime assertions and range constraints that
// torch.export leaves in the graph have no kernel in ExecuTorch.
#include <algorithm>

#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class RemoveGraphAsserts : public Pass {
 public:
  std::string name() const override { return "RemoveGraphAssertsPass"; }
  std::string description() const override { return "drops _assert_async, _assert_scalar and sym_constrain_range nodes"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      auto isAssert = [&](const Node& n) {
        if (n.kind != NodeKind::Kernel || n.op < 0) return false;
        const std::string& name = m.operators[n.op].name;
        return name == "aten::_assert_async" || name == "aten::_assert_scalar" || name == "aten::_assert_tensor_metadata" ||
               name == "aten::sym_constrain_range" || name == "aten::sym_constrain_range_for_size";
      };
      size_t before = m.nodes.size();
      std::erase_if(m.nodes, isAssert);
      out.changed = out.changed || m.nodes.size() != before;
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> removeGraphAsserts() { return std::make_shared<RemoveGraphAsserts>(); }

}  // namespace lstudio::passes
