// unsafe_remove_auto_functionalized_pass: torch.export wraps a call to a
// mutating custom operator in the higher-order op auto_functionalized (the
// op, its arguments, and as results the op's own returns followed by the new
// value of every mutated argument). ExecuTorch unwraps it back into the
// mutating call: readers of a mutated argument's new value read the argument
// itself. In the IR the wrapper is a kernel node calling
// higher_order::auto_functionalized whose first argument is a String value
// naming the wrapped operator ("aten::index_put_.default", "my_ns::update.default");
// the rest are the wrapped operator's arguments in schema order. (The .pt2
// importer keeps operator arguments only as a description, so real files do
// not reach this pass yet.)
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/NodeRewrite.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

bool isWrapper(const Method& m, const Node& n) {
  const OperatorRef* op = operatorOf(m, n);
  return op && (op->name == "higher_order::auto_functionalized" || op->name == "higher_order::auto_functionalized_v2");
}

/// An auto_functionalized wrapper becomes the mutating call it wraps; readers of a
/// mutated argument's new value read the argument.
bool unwrap(Method& m, Node& n, const NodeReport& report) {
  if (!isWrapper(m, n)) return false;
  const std::string* target = n.args.empty() || n.args[0] < 0 ? nullptr : std::get_if<std::string>(&m.values[n.args[0]].payload);
  const OpSchema* s = target ? OpRegistry::builtin().findByTarget(*target) : nullptr;
  if (!s) {
    report.error(std::string("auto_functionalized wraps ") +
                 (target ? "'" + *target + "', which the studio does not know" : std::string("no operator name")));
    return false;
  }
  std::vector<ValueId> args(n.args.begin() + 1, n.args.end());
  size_t ownReturns = 0;
  for (const auto& r : s->returns) ownReturns += r.aliasSet.empty() ? 1 : 0;
  std::vector<ValueId> mutated;
  for (size_t k = 0; k < s->arguments.size() && k < args.size(); ++k)
    if (s->arguments[k].isWrite) mutated.push_back(args[k]);
  if (n.outputs.size() != ownReturns + mutated.size()) {
    report.error("auto_functionalized of " + s->qualifiedName() + " has " + std::to_string(n.outputs.size()) +
                 " results, expected " + std::to_string(ownReturns + mutated.size()));
    return false;
  }
  std::vector<ValueId> newValues(n.outputs.begin() + static_cast<std::ptrdiff_t>(ownReturns), n.outputs.end());
  n.outputs.resize(ownReturns);
  n.args = std::move(args);
  n.argNames.clear();
  for (size_t k = 0; k < n.args.size() && k < s->arguments.size(); ++k) n.argNames.push_back(s->arguments[k].name);
  setOperator(m, n, *s);
  for (size_t k = 0; k < newValues.size(); ++k) replaceUses(m, newValues[k], mutated[k]);
  return true;
}

class RemoveAutoFunctionalized : public Pass {
 public:
  std::string name() const override { return "UnsafeRemoveAutoFunctionalizedPass"; }
  std::string description() const override { return "auto_functionalized wrappers become the mutating call"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override { return rewriteNodes(p, unwrap); }
};

}  // namespace

std::shared_ptr<const Pass> removeAutoFunctionalized() { return std::make_shared<RemoveAutoFunctionalized>(); }

}  // namespace lstudio::passes
