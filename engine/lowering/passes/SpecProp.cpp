// SpecPropPass: every tensor value carries a complete TensorSpec (dtype,
// sizes, dim order, dynamism); imported programs usually already do, so this
// fills in what is missing and checks the rest. Like upstream's, which traces
// the graph again, it binds each symbolic size to the input it is read from
// then (rebindSymbolicSizes).
#include <algorithm>
#include <map>

#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// Tracing binds an input's symbolic sizes as the input is made, a later input's
/// binding replacing an earlier one: a symbol several inputs share (the batch of both
/// operands) is read, in to_executorch's program, from the last input that has it.
bool rebindSymbolicSizes(Method& m) {
  std::map<std::string, std::pair<ValueId, int64_t>> last;
  for (ValueId in : m.inputs)
    if (const TensorSpec* t = in >= 0 ? m.values[in].tensorIf() : nullptr)
      for (size_t d = 0; d < t->symbols.size(); ++d)
        if (!t->symbols[d].empty()) last[t->symbols[d]] = {in, static_cast<int64_t>(d)};
  bool changed = false;
  for (Node& n : m.nodes) {
    const OperatorRef* op = operatorOf(m, n);
    if (!op || op->name != "aten::sym_size" || op->overload != "int" || n.args.size() < 2) continue;
    const ValueId src = n.args[0];
    const TensorSpec* t = src >= 0 ? m.values[src].tensorIf() : nullptr;
    const auto* dim = std::get_if<int64_t>(&m.values[n.args[1]].payload);
    if (!t || !dim || std::find(m.inputs.begin(), m.inputs.end(), src) == m.inputs.end()) continue;
    const int64_t d = *dim < 0 ? *dim + static_cast<int64_t>(t->sizes.size()) : *dim;
    if (d < 0 || static_cast<size_t>(d) >= t->symbols.size() || t->symbols[d].empty()) continue;
    auto it = last.find(t->symbols[d]);
    if (it == last.end() || (it->second.first == src && it->second.second == d)) continue;
    n.args[0] = it->second.first;
    n.args[1] = addValue(m, Value{it->second.second, {}});
    changed = true;
  }
  return changed;
}

class SpecProp : public Pass {
 public:
  std::string name() const override { return "SpecPropPass"; }
  std::string description() const override { return "a complete tensor spec (dim order, dynamism) on every tensor"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      out.changed = rebindSymbolicSizes(m) || out.changed;
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
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> specProp() { return std::make_shared<SpecProp>(); }

}  // namespace lstudio::passes
