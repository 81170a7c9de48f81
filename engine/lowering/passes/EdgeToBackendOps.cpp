// EdgeToBackendOpsPass: Python's symbolic-int operators (operator.add,
// operator.floordiv, math.ceil, torch.sym_max, ...) become ExecuTorch's prim
// ops (executorch_prim::add.Scalar, ...), which the runtime executes; other
// operators keep their names (ExecuTorch only swaps their Python overload
// object for its backend-dialect twin, which the IR does not distinguish).
#include <map>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/NodeRewrite.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// Graph target namespace::name (as operatorFromTarget spells "_operator.add") -> prim op name.
const std::map<std::string, std::string>& symOps() {
  static const std::map<std::string, std::string> m = {
      {"builtins::round", "round"},     {"math::ceil", "ceil"},           {"math::trunc", "trunc"},
      {"_operator::sub", "sub"},        {"_operator::mul", "mul"},        {"_operator::add", "add"},
      {"_operator::floordiv", "floordiv"}, {"_operator::truediv", "truediv"}, {"_operator::eq", "eq"},
      {"_operator::gt", "gt"},          {"_operator::lt", "lt"},          {"_operator::ge", "ge"},
      {"_operator::le", "le"},          {"_operator::mod", "mod"},        {"_operator::neg", "neg"},
      {"torch::sym_float", "sym_float"}, {"torch::sym_int", "sym_int"},   {"torch::sym_max", "sym_max"},
      {"torch::sym_min", "sym_min"},    {"torch::sym_not", "sym_not"},    {"torch::sym_ite", "sym_ite"}};
  return m;
}

/// A symbolic-int Python operator becomes its prim op.
bool toPrimOp(Method& m, Node& n, const NodeReport& report) {
  const OperatorRef* op = operatorOf(m, n);
  if (!op) return false;
  auto it = symOps().find(op->name);
  if (it == symOps().end()) return false;
  const OpSchema* prim = OpRegistry::builtin().find("executorch_prim::" + it->second, "Scalar");
  if (!prim) {
    report.warning("executorch_prim::" + it->second + ".Scalar is not in the studio's operator table");
    return false;
  }
  setOperator(m, n, *prim);
  return true;
}

class EdgeToBackendOps : public Pass {
 public:
  std::string name() const override { return "EdgeToBackendOpsPass"; }
  std::string description() const override { return "symbolic-int Python operators become executorch_prim ops"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override { return rewriteNodes(p, toPrimOp); }
};

}  // namespace

std::shared_ptr<const Pass> edgeToBackendOps() { return std::make_shared<EdgeToBackendOps>(); }

}  // namespace lstudio::passes
