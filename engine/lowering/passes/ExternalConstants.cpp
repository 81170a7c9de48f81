// ExternalConstantsPass: tags constants for .ptd files, as ExecuTorch's
// external_constants_pass and external_mutable_weights_pass do before memory
// planning. The destinations come from engine/lowering/ConstantTagging.
#include "engine/lowering/ConstantTagging.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class ExternalConstants : public Pass {
 public:
  std::string name() const override { return "ExternalConstantsPass"; }
  std::string description() const override {
    return "tags constants that go to .ptd files (external_constants, external_mutable_weights)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override {
    return c.externalConstants || c.externalMutableWeights;
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    for (Method& m : p.methods) out.changed = applyConstantTags(m, listConstants(m, config)) > 0 || out.changed;
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> externalConstants() { return std::make_shared<ExternalConstants>(); }

}  // namespace lstudio::passes
