// insert_write_back_for_buffers_pass: a buffer (or user input) the program
// mutates is returned as a new value; unless that value already is the input
// written in place (a chain of in-place ops back to it, e.g. after
// reinplace), an explicit copy_(buffer, new value) is added at the end and
// the output becomes the buffer, so the state persists across calls.
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class InsertWriteBack : public Pass {
 public:
  std::string name() const override { return "InsertWriteBackForBuffersPass"; }
  std::string description() const override { return "copy_ writes each mutated buffer's new value back into it"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    const OpSchema* copy = OpRegistry::builtin().find("aten::copy_", "");
    for (Method& m : p.methods) {
      size_t copies = 0;
      for (size_t o = 0; o < m.signature.outputs.size(); ++o) {
        OutputSpec& spec = m.signature.outputs[o];
        if (spec.kind != OutputSpec::Kind::BufferMutation && spec.kind != OutputSpec::Kind::UserInputMutation) continue;
        ValueId target = kNoValue;
        for (const InputSpec& in : m.signature.inputs) {
          bool match = spec.kind == OutputSpec::Kind::BufferMutation
                           ? in.kind == InputSpec::Kind::Buffer && in.target == spec.target
                           : in.kind == InputSpec::Kind::User && in.value >= 0 && m.values[in.value].name == spec.target;
          if (match) target = in.value;
        }
        if (target == kNoValue) {
          out.failed = true;
          out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                                     m.name + ": mutated '" + spec.target + "' is not an input of the method"});
          continue;
        }
        if (spec.value == target || spec.value < 0) continue;  // written in place already: nothing to copy
        if (!copy) continue;
        Node n;
        n.name = copies ? "copy__default_" + std::to_string(copies) : std::string("copy__default");
        n.args = {target, spec.value, addValue(m, Value{false, {}})};
        n.argNames = {"self", "src", "non_blocking"};
        setOperator(m, n, *copy);
        m.nodes.push_back(std::move(n));
        // copy_ returns the buffer, and ExecuTorch's buffer and copy_ result share
        // one spec: a buffer written from a value that requires grad requires grad.
        if (auto* b = std::get_if<TensorSpec>(&m.values[target].payload))
          if (const TensorSpec* src = m.values[spec.value].tensorIf(); src && src->requiresGrad) b->requiresGrad = true;
        if (m.outputs.size() == m.signature.outputs.size()) m.outputs[o] = target;  // outputs follow the signature
        else
          for (ValueId& v : m.outputs)
            if (v == spec.value) v = target;
        spec.value = target;
        ++copies;
      }
      if (copies) {
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(copies) + " buffers written back with copy_"});
      }
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> insertWriteBack() { return std::make_shared<InsertWriteBack>(); }

}  // namespace lstudio::passes
