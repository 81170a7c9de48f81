// ToOutVarPass: every functional operator becomes its out variant, with an
// explicit output tensor the memory planner will place. In ExecuTorch's
// argument convention the out arguments follow the schema arguments and are
// repeated as the return (one out), or as a TensorList of them (several). An operator without an out variant fails the pass,
// naming the node, the operator and the source line — unless
// ignore_to_out_var_failure is set.
#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

std::string where(const Node& n) {
  std::string s = "node '" + n.name + "'";
  if (!n.meta.stackTrace.empty())
    s += " at " + n.meta.stackTrace.back().file + ":" + std::to_string(n.meta.stackTrace.back().line);
  return s;
}

class ToOutVar : public Pass {
 public:
  std::string name() const override { return "ToOutVarPass"; }
  std::string description() const override { return "functional operators become out variants with explicit outputs"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    const OpRegistry& reg = OpRegistry::builtin();
    for (Method& m : graphsOf(p))
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        Node& n = m.nodes[i];
        if (n.kind != NodeKind::Kernel || n.op < 0) continue;
        const OpSchema* fn = reg.find(m.operators[n.op].name, m.operators[n.op].overload);
        if (fn && fn->isOutVariant()) continue;  // already lowered
        if (fn && (fn->isInplace() || reg.hasPrimKernel(*fn))) continue;  // in-place and prim ops run as they are
        // An operator without a schema that is named like an out variant (a
        // backend's kernel kept from a .pte) is taken as one, as to_out_var does.
        const std::string& overload = m.operators[n.op].overload;
        if (!fn && (overload == "out" || overload.ends_with("_out"))) continue;
        const OpSchema* ov = fn ? reg.outVariant(*fn) : nullptr;
        if (!ov) {
          if (c.ignoreToOutVarFailure) continue;
          out.failed = true;
          out.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i),
                                     "missing out variant: " + (fn ? fn->qualifiedName() : n.target) + " in " + where(n) +
                                         " has no .out form ExecuTorch can run"});
          continue;
        }
        std::vector<ValueId> args, outs;
        std::vector<std::string> names;
        size_t nextOut = 0;
        ValueId listOut = kNoValue;  // a `Tensor(a!)[] out` (split_with_sizes_copy, unbind_copy)
        for (const SchemaArgument& a : ov->arguments) {
          if (a.kwargOnly && a.isWrite && a.type.list) {  // a list out argument takes every remaining result
            std::vector<ValueId> items(n.outputs.begin() + static_cast<std::ptrdiff_t>(nextOut), n.outputs.end());
            outs.insert(outs.end(), items.begin(), items.end());
            nextOut = n.outputs.size();
            listOut = addValue(m, Value{TensorList{std::move(items)}, {}});
            args.push_back(listOut);
            names.push_back(a.name);
            continue;
          }
          if (a.kwargOnly && a.isWrite) {  // an out argument: the node's next result
            if (nextOut >= n.outputs.size()) break;
            args.push_back(n.outputs[nextOut]);
            outs.push_back(n.outputs[nextOut++]);
            names.push_back(a.name);
            continue;
          }
          ValueId v = kNoValue;
          for (size_t k = 0; k < n.argNames.size(); ++k)
            if (n.argNames[k] == a.name) v = n.args[k];
          if (v == kNoValue)
            if (auto d = schemaDefault(m, a)) v = *d;
          if (v == kNoValue) {
            out.failed = true;
            out.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i),
                                       "argument '" + a.name + "' of " + ov->qualifiedName() + " has no value in " + where(n)});
            break;
          }
          args.push_back(v);
          names.push_back(a.name);
        }
        if (out.failed || outs.size() != n.outputs.size()) {
          if (!out.failed) {
            out.failed = true;
            out.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i),
                                       ov->qualifiedName() + " has " + std::to_string(outs.size()) + " out arguments but " +
                                           where(n) + " has " + std::to_string(n.outputs.size()) + " results"});
          }
          continue;
        }
        // The return repeats the outs: the out itself, or for several outs a
        // TensorList of them, as ExecuTorch's emitter writes it.
        if (listOut != kNoValue) {  // its own list of the same tensors, as ExecuTorch's emitter writes it
          args.push_back(addValue(m, Value{m.values[listOut].payload, {}}));
        } else if (outs.size() == 1) {
          args.push_back(outs[0]);
        } else if (outs.size() > 1) {
          args.push_back(addValue(m, Value{TensorList{outs}, {}}));
        }
        n.args = std::move(args);
        n.argNames = std::move(names);
        OperatorRef ref{ov->ns + "::" + ov->name, ov->overload};
        int32_t idx = -1;
        for (size_t k = 0; k < m.operators.size(); ++k)
          if (m.operators[k].name == ref.name && m.operators[k].overload == ref.overload) idx = static_cast<int32_t>(k);
        if (idx < 0) {
          m.operators.push_back(ref);
          idx = static_cast<int32_t>(m.operators.size() - 1);
        }
        n.op = idx;
        n.target = "torch.ops." + ov->ns + "." + ov->name + "." + ov->overload;
        out.changed = true;
      }
    // Operators no node calls any more are dropped from the table.
    for (Method& m : graphsOf(p)) dropUnusedOperators(m);
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> toOutVar() { return std::make_shared<ToOutVar>(); }

}  // namespace lstudio::passes
