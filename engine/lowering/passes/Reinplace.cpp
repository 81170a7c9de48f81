// reinplace_pass (run_reinplace_pass, reinplace_extra_ops): a functional
// operator whose mutated-to-be input is read by nothing after it becomes its
// in-place form (index_put -> index_put_ by default; reinplace_extra_ops adds
// more), so the KV cache is updated where it lives instead of copied. As in
// ExecuTorch (exir/passes/reinplace.py): the walk goes backwards; the input
// must not be read later nor returned, a graph input only when the signature
// mutates it, and it must already have the result's shape and dtype. The
// in-place overload is the one named <op>_ whose arguments match with self
// written. Uses of the old result read the mutated input afterwards.
#include <map>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// "aten::index_put" + overload -> its in-place schema, or null.
const OpSchema* inplaceOf(const OpSchema& fn) {
  if (fn.ns != "aten") return nullptr;
  for (const OpSchema& c : OpRegistry::builtin().schemas()) {
    if (c.ns != fn.ns || c.name != fn.name + "_" || c.arguments.size() != fn.arguments.size() || c.arguments.empty())
      continue;
    if (!c.arguments[0].isWrite) continue;
    bool same = true;
    for (size_t k = 0; k < c.arguments.size() && same; ++k) same = c.arguments[k].type == fn.arguments[k].type;
    if (same) return &c;
  }
  return nullptr;
}

class Reinplace : public Pass {
 public:
  std::string name() const override { return "ReinplacePass"; }
  std::string description() const override {
    return "functional ops whose input dies here write it in place (run_reinplace_pass)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override {
    return c.runReinplacePass || !c.reinplaceExtraOps.empty();
  }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    const OpRegistry& reg = OpRegistry::builtin();
    // Candidates: index_put.default, plus the extra ops (any spelling of a target).
    std::map<const OpSchema*, const OpSchema*> candidates;  // functional -> in-place (null: none)
    if (const OpSchema* s = reg.find("aten::index_put", "")) candidates[s] = inplaceOf(*s);
    for (const std::string& extra : c.reinplaceExtraOps) {
      const OpSchema* s = reg.findByTarget(extra);
      if (!s) {
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                                   "reinplace_extra_ops: unknown operator '" + extra + "'"});
        continue;
      }
      candidates[s] = inplaceOf(*s);
    }
    if (out.failed) return out;
    for (Method& m : graphsOf(p)) {
      std::vector<bool> seen(m.values.size(), false);  // read by a later node or returned
      for (ValueId v : m.outputs)
        if (v >= 0) seen[v] = true;
      size_t rewritten = 0;
      for (size_t i = m.nodes.size(); i-- > 0;) {
        Node& n = m.nodes[i];
        const OperatorRef* op = operatorOf(m, n);
        const OpSchema* fn = op ? reg.find(op->name, op->overload) : nullptr;
        auto found = fn ? candidates.find(fn) : candidates.end();
        const OpSchema* ip = found != candidates.end() ? found->second : nullptr;
        bool safe = ip && !n.args.empty() && n.outputs.size() == 1 && n.args[0] >= 0;
        if (safe) {
          ValueId self = n.args[0];
          const TensorSpec* a = m.values[self].tensorIf();
          const TensorSpec* r = m.values[n.outputs[0]].tensorIf();
          bool isInput = std::find(m.inputs.begin(), m.inputs.end(), self) != m.inputs.end();
          safe = a && r && !seen[self] && a->dtype == r->dtype && a->sizes == r->sizes &&
                 (!isInput || isMutatedInput(m, self));
        }
        if (!safe) {
          for (ValueId v : readsOf(m, n)) seen[v] = true;
          continue;
        }
        ValueId self = n.args[0], result = n.outputs[0];
        setOperator(m, n, *ip);
        n.outputs.clear();  // the in-place op writes self; its result is self
        replaceUses(m, result, self);
        // ExecuTorch's self and in-place result share one spec: a result that
        // requires grad makes self require grad.
        if (auto* st = std::get_if<TensorSpec>(&m.values[self].payload))
          if (const TensorSpec* rt = m.values[result].tensorIf(); rt && rt->requiresGrad) st->requiresGrad = true;
        for (ValueId v : readsOf(m, n)) seen[v] = true;
        ++rewritten;
      }
      if (rewritten) {
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(rewritten) + " operators now write in place"});
      }
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> reinplace() { return std::make_shared<Reinplace>(); }

}  // namespace lstudio::passes
