// EXIRATenDialectVerifier (to_edge, after the decompositions): every ATen
// operator of the graph is core ATen; operators of other namespaces
// (quantized_decomposed, dim_order_ops, custom ones) pass as they are. An operator that is
// neither fails the pass, naming the node, the operator and its source line:
// lowering it on would write a program the runtime refuses. EdgeCompileConfig
// turns it off (_check_ir_validity) or lets listed operators through
// (_core_aten_ops_exception_list, preserve_ops).
#include <set>
#include <string>

#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

/// ATen operators the check lets through although they are not core ATen, as
/// ExecuTorch's verifier does (its exception list, its symbolic-int operators and
/// the ones its edge conversion leaves alone): runtime asserts that
/// RemoveGraphAssertsPass drops later, size arithmetic the prim ops run, and a few
/// operators with ExecuTorch kernels of their own.
bool upstreamException(const OperatorRef& op) {
  static const std::set<std::string, std::less<>> kExceptions = {
      "aten::mkldnn_rnn_layer.default", "aten::_upsample_bilinear2d_aa.default", "aten::quantize_per_tensor.default",
      "aten::dequantize.self", "aten::max.default", "aten::min.default", "aten::full_like.default",
      "aten::sym_stride.int", "aten::sym_size.int", "aten::sym_numel.default", "aten::_local_scalar_dense.default",
      "aten::sym_constrain_range_for_size.default", "aten::sym_constrain_range.default",
      "aten::_assert_scalar.default", "aten::_assert_async.msg", "aten::scalar_tensor.default"};
  return kExceptions.count(op.name + "." + (op.overload.empty() ? "default" : op.overload)) > 0;
}

/// What gets a program with `op` past the check to a file ExecuTorch runs. Listing the
/// operator as an exception only helps where the runtime has a kernel for its out variant;
/// otherwise upstream's own to_edge may decompose it, and its ETRecord opens here.
std::string wayPast(const OpRegistry& reg, const OpSchema& op) {
  const OpSchema* out = reg.outVariant(op);
  if (out && reg.hasPortableKernel(*out))
    return "list it in edge_compile_config._core_aten_ops_exception_list to lower it as it is: "
           "ExecuTorch's portable kernels run " + out->qualifiedName();
  return "listing it in _core_aten_ops_exception_list or preserve_ops would not give a file ExecuTorch runs: " +
         (out ? "its portable kernels have no " + out->qualifiedName() : std::string("it has no out variant")) +
         ". Lower the model with ExecuTorch's to_edge(..., generate_etrecord=True) and to_executorch(), save "
         "its get_etrecord() and open that ETRecord here, or change the model so that torch.export gives core ATen";
}

class AtenDialectVerifier : public Pass {
 public:
  std::string name() const override { return "EXIRATenDialectVerifier"; }
  std::string description() const override { return "to_edge: every operator is core ATen (or decomposed into it)"; }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.edgeCompile.checkIrValidity; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    const EdgeCompileConfig& edge = config.edgeCompile;
    PassOutcome out;
    const OpRegistry& reg = OpRegistry::builtin();
    for (Method& m : graphsOf(p))
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        const Node& n = m.nodes[i];
        if (n.kind != NodeKind::Kernel) continue;
        const OperatorRef* op = operatorOf(m, n);
        const OpSchema* s = op ? reg.find(op->name, op->overload) : nullptr;
        std::string why;
        // Operators of other namespaces (custom kernels, quantized_decomposed, ...)
        // pass, as upstream's check lets them; the out-variant pass judges them.
        bool aten = op && op->name.rfind("aten::", 0) == 0;
        if (n.target.find("higher_order") != std::string::npos)
          why = "the higher-order operator " + n.target + " (control flow or a wrapped subgraph) is not lowered by the studio yet";
        else if (aten && !s)
          why = "operator " + op->fullName() + " is not an ATen operator the studio knows";
        else if (s && s->ns == "aten" && !reg.isCoreAten(*s) && !upstreamException(*op) &&
                 !EdgeCompileConfig::lists(edge.coreAtenOpsExceptionList, op->name, op->overload) &&
                 !EdgeCompileConfig::lists(edge.preserveOps, op->name, op->overload) &&
                 !(!config.partitioners.empty() && xnnpackMayKeepWhole(*op)))
          why = "operator " + s->qualifiedName() + " is not core ATen and the studio has no decomposition for it (" +
                wayPast(reg, *s) + ")";
        if (why.empty()) continue;
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, static_cast<int32_t>(i), why + ": " + nodeLocation(n)});
      }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> atenDialectVerifier() { return std::make_shared<AtenDialectVerifier>(); }

}  // namespace lstudio::passes
