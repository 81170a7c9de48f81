// DelowerPtePass: the first step when the input is a .pte. Not one of
// ExecuTorch's passes: it undoes to_executorch (engine/lowering/Delower) so
// the passes after it can lower the program again under a new config.
#include "engine/lowering/Delower.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class DelowerPte : public Pass {
 public:
  std::string name() const override { return "DelowerPtePass"; }
  std::string description() const override {
    return "the .pte's out variants become functional operators, et_view view_copy; the memory plan is dropped";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    DelowerReport r;
    auto d = delowerProgram(p, &r);
    if (!d) {
      out.failed = true;
      out.diagnostics.push_back({Diagnostic::Severity::Error, -1, d.error().message()});
      return out;
    }
    p = std::move(d.value());
    out.changed = true;
    out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                               std::to_string(r.functionalized) + " out-variant calls made functional, " +
                                   std::to_string(r.views) + " views made view_copy, " + std::to_string(r.kept) +
                                   " calls kept, " + std::to_string(r.delegates) + " delegate calls; " +
                                   std::to_string(r.parameters) + " constants, " + std::to_string(r.buffers) +
                                   " buffers, " + std::to_string(r.userInputs) + " user inputs"});
    for (const std::string& n : r.notes) out.diagnostics.push_back({Diagnostic::Severity::Note, -1, n});
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> delowerPte() { return std::make_shared<DelowerPte>(); }

}  // namespace lstudio::passes
