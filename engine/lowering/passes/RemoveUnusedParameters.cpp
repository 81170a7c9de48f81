// remove_unused_parameters_pass (to_edge, first step of making the edge
// program): parameters no node reads leave the inputs and the signature, so
// they are neither planned nor stored (a quantized model keeps its float
// weights as parameters beside the quantized copies it uses).
#include <algorithm>

#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class RemoveUnusedParameters : public Pass {
 public:
  std::string name() const override { return "remove_unused_parameters_pass"; }
  std::string description() const override { return "to_edge: parameters no operator reads are removed"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      std::vector<int> uses = useCounts(m);
      for (const OutputSpec& o : m.signature.outputs)
        if (o.value >= 0) ++uses[o.value];
      auto unused = [&](const InputSpec& in) {
        return in.kind == InputSpec::Kind::Parameter && in.value >= 0 && uses[in.value] == 0;
      };
      std::vector<ValueId> removed;
      for (const InputSpec& in : m.signature.inputs)
        if (unused(in)) removed.push_back(in.value);
      if (removed.empty()) continue;
      std::erase_if(m.signature.inputs, unused);
      std::erase_if(m.inputs, [&](ValueId v) { return std::find(removed.begin(), removed.end(), v) != removed.end(); });
      renumberValues(m);
      out.changed = true;
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                 m.name + ": " + std::to_string(removed.size()) + " unused parameters removed"});
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> removeUnusedParameters() { return std::make_shared<RemoveUnusedParameters>(); }

}  // namespace lstudio::passes
