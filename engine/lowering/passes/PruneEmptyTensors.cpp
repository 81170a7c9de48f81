// PruneEmptyTensorsPass (to_edge, after RemoveNoopPass): a cat leaves out the tensors it is
// given that hold no element (a shape with a 0 that is not symbolic; one whose size is only
// known at run time stays, as upstream's guard_or_true keeps it); a cat left with none becomes
// full(its shape, 0) of its dtype. What made the empty tensors goes if nothing else reads it.
#include <algorithm>

#include "engine/lowering/Pass.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// No element, for certain: some static dimension is 0.
bool certainlyEmpty(const Value& v) {
  const TensorSpec* t = v.tensorIf();
  if (!t) return false;
  for (size_t d = 0; d < t->sizes.size(); ++d)
    if (t->sizes[d] == 0 && (d >= t->symbols.size() || t->symbols[d].empty())) return true;
  return false;
}

class PruneEmptyTensors : public Pass {
 public:
  std::string name() const override { return "PruneEmptyTensorsPass"; }
  std::string description() const override {
    return "to_edge: a cat leaves out its empty inputs (all empty: a full of zeros)";
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      FreshNames fresh(m);
      std::vector<Node> nodes;
      size_t pruned = 0;
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        nodes.push_back(m.nodes[i]);
        Node& n = nodes.back();
        if (!calls(m, n, "aten::cat") || n.args.empty() || n.outputs.size() != 1) continue;
        const auto* list = std::get_if<TensorList>(&m.values[n.args[0]].payload);
        if (!list) continue;
        TensorList kept;
        for (ValueId x : list->items)
          if (!certainlyEmpty(m.values[x])) kept.items.push_back(x);
        if (kept.items.size() == list->items.size()) continue;
        pruned += list->items.size() - kept.items.size();
        const bool none = kept.items.empty();
        n.args[0] = addValue(m, Value{std::move(kept), m.values[n.args[0]].name});
        if (!none) continue;
        // Nothing left: full(shape, 0, dtype) after the cat takes its readers.
        const std::vector<TensorSpec> specs{m.values[n.outputs[0]].tensor()};
        auto full = buildCall(m, "aten.full.default", {specs[0].sizes, int64_t(0), specs[0].dtype},
                              [&fresh](const std::string& b) { return fresh(b); }, &specs);
        if (!full) {
          out.failed = true;
          out.diagnostics.push_back({Diagnostic::Severity::Error, int32_t(i), m.name + ": " + full.error().message()});
          return out;
        }
        full->meta = n.meta;
        const ValueId was = n.outputs[0];
        nodes.push_back(std::move(full.value()));
        // The nodes after it are taken from m.nodes as the loop reaches them, rewired here; the
        // cat then writes what no one reads: dead code below.
        replaceUses(m, was, nodes.back().outputs[0]);
      }
      if (!pruned) continue;
      m.nodes = std::move(nodes);
      eliminateDeadCode(m);
      renumberValues(m);
      out.changed = true;
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                 m.name + ": " + std::to_string(pruned) + " empty tensor(s) left out of cat"});
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> pruneEmptyTensors() { return std::make_shared<PruneEmptyTensors>(); }

}  // namespace lstudio::passes
