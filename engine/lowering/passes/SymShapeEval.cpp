// sym_shape_eval_pass: every symbolic size becomes a concrete number memory
// can be planned for — its upper bound from the range constraints (ExecuTorch's
// default, ConstraintBasedSymShapeEvalPass) or its example hint.
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class SymShapeEval : public Pass {
 public:
  std::string name() const override { return "SymShapeEvalPass"; }
  std::string description() const override { return "symbolic sizes become upper bounds (or hints) to plan memory for"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    for (Method& m : p.methods)
      for (Value& v : m.values) {
        TensorSpec* t = std::get_if<TensorSpec>(&v.payload);
        if (!t || t->symbols.empty()) continue;
        for (size_t d = 0; d < t->sizes.size() && d < t->symbols.size(); ++d) {
          if (t->symbols[d].empty()) continue;
          std::optional<int64_t> bound;
          for (const auto& r : m.symbolRanges)
            if (r.symbol == t->symbols[d]) bound = r.max;
          if (c.symShapeEval == "upper_bound" && !bound) {
            out.failed = true;
            out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                                       "value '" + v.name + "': symbol " + t->symbols[d] +
                                           " has no upper bound; give it a max in torch.export's dynamic_shapes, or use "
                                           "sym_shape_eval_pass \"hint\""});
            continue;
          }
          // The importer already sized symbolic dimensions by their bound; a
          // hint-based evaluation would keep the example size instead.
          if (bound && t->sizes[d] != *bound && c.symShapeEval == "upper_bound") {
            t->sizes[d] = *bound;
            out.changed = true;
          }
        }
        t->dynamism = ShapeDynamism::DynamicBound;
      }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> symShapeEval() { return std::make_shared<SymShapeEval>(); }

}  // namespace lstudio::passes
