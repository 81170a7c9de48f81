// RemoveNonCoreAtenOpGraphAssertsPass (to_edge, before the ATen dialect
// check): torch.export's _assert_tensor_metadata checks are not core ATen
// and have no kernel; they go.
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class RemoveNonCoreAtenOpGraphAsserts : public Pass {
 public:
  std::string name() const override { return "RemoveNonCoreAtenOpGraphAssertsPass"; }
  std::string description() const override { return "to_edge: _assert_tensor_metadata checks removed"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      size_t before = m.nodes.size();
      std::erase_if(m.nodes, [&](const Node& n) { return calls(m, n, "aten::_assert_tensor_metadata"); });
      if (m.nodes.size() != before) {
        dropUnusedOperators(m);
        out.changed = true;
      }
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> removeNonCoreAtenOpGraphAsserts() { return std::make_shared<RemoveNonCoreAtenOpGraphAsserts>(); }

}  // namespace lstudio::passes
