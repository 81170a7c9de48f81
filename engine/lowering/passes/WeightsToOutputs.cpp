// weights_to_outputs_pass: in a training program every parameter that has a
// gradient output is also returned (after the existing outputs, with output
// kind TOKEN as ExecuTorch marks it), so the runtime can reach the weights
// it updates. Programs without gradient outputs are left alone.
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class WeightsToOutputs : public Pass {
 public:
  std::string name() const override { return "WeightsToOutputsPass"; }
  std::string description() const override { return "training: parameters with a gradient are also returned"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      std::vector<std::string> grads;
      for (const OutputSpec& o : m.signature.outputs)
        if (o.kind == OutputSpec::Kind::GradientToParameter) grads.push_back(o.target);
      if (grads.empty()) continue;
      size_t added = 0;
      // In placeholder order, as the graph lists them.
      for (const InputSpec& in : m.signature.inputs) {
        if (in.value < 0 || in.kind != InputSpec::Kind::Parameter || std::find(grads.begin(), grads.end(), in.target) == grads.end())
          continue;
        m.outputs.push_back(in.value);
        m.signature.outputs.push_back(OutputSpec{OutputSpec::Kind::Token, in.value, ""});
        ++added;
      }
      if (added) {
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(added) + " trained weights returned"});
      }
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> weightsToOutputs() { return std::make_shared<WeightsToOutputs>(); }

}  // namespace lstudio::passes
