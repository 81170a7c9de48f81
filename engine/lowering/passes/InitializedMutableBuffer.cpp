// InitializedMutableBufferPass(patterns), the pass object a config's `passes` names: a
// mutable buffer whose placeholder name contains one of the patterns keeps its initial
// value in the program (ExecuTorch's et_init_buffer: the value goes to the .pte's mutable
// data segment and is loaded before the first run). Other mutable buffers start with
// whatever their arena holds, as ExecuTorch assumes their initial state is meaningless.
// to_executorch runs a config's passes first, before LegalizePortableDimOrderPass and
// SpecPropPass.
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class InitializedMutableBuffer : public Pass {
 public:
  std::string name() const override { return "InitializedMutableBufferPass"; }
  std::string description() const override {
    return "mutable buffers named by the config's patterns keep their initial values (passes)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return !c.initializedMutableBuffers.empty(); }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      std::string marked;
      size_t count = 0;
      for (const InputSpec& in : m.signature.inputs) {
        if (in.kind != InputSpec::Kind::Buffer || in.value < 0 || !isMutatedInput(m, in.value)) continue;
        Value& v = m.values[in.value];
        TensorSpec* t = std::get_if<TensorSpec>(&v.payload);
        if (!t || t->source == ConstantSource::MutableSegment) continue;
        bool named = false;
        for (const std::string& pattern : c.initializedMutableBuffers) named = named || v.name.find(pattern) != std::string::npos;
        if (!named) continue;
        if (t->data.empty()) {
          out.diagnostics.push_back({Diagnostic::Severity::Warning, -1,
                                     m.name + ": buffer " + v.name + " matches but the program holds no initial value for it"});
          continue;
        }
        t->source = ConstantSource::MutableSegment;
        marked += (count++ ? ", " : "") + v.name;
      }
      if (count) {
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(count) + " mutable buffers keep their initial values: " + marked});
      }
    }
    if (!out.changed)
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1, "no mutable buffer's name contains a pattern"});
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> initializedMutableBuffer() { return std::make_shared<InitializedMutableBuffer>(); }

}  // namespace lstudio::passes
