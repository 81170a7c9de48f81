// SpecPropPass: every tensor value carries a complete TensorSpec (dtype,
// sizes, dim order, dynamism); imported programs usually already do, so this
// fills in what is missing and checks the rest.
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class SpecProp : public Pass {
 public:
  std::string name() const override { return "SpecPropPass"; }
  std::string description() const override { return "a complete tensor spec (dim order, dynamism) on every tensor"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : p.methods)
      for (size_t i = 0; i < m.values.size(); ++i) {
        TensorSpec* t = std::get_if<TensorSpec>(&m.values[i].payload);
        if (!t) continue;
        if (t->dimOrder.size() != t->sizes.size()) {
          t->dimOrder.clear();
          for (size_t d = 0; d < t->sizes.size(); ++d) t->dimOrder.push_back(static_cast<uint8_t>(d));
          out.changed = true;
        }
        if (!t->nbytes()) {
          out.failed = true;
          out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                                     "value '" + m.values[i].name + "' of " + m.name + ": its byte size overflows (" +
                                         t->shapeString() + ")"});
        }
      }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> specProp() { return std::make_shared<SpecProp>(); }

}  // namespace lstudio::passes
