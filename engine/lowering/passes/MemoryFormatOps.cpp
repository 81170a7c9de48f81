// MemoryFormatOpsPass (part of to_edge): operators that take a
// torch.memory_format take a dim order instead, the form ExecuTorch's
// portable kernels run: _to_copy -> dim_order_ops::_to_dim_order_copy,
// empty.memory_format -> _empty_dim_order, clone -> _clone_dim_order. The
// dim order is the input's for preserve_format (or no format), contiguous
// {0..n-1}, channels_last {0,2,3,1}, channels_last_3d {0,2,3,4,1}.
#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/NodeRewrite.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

struct Mapping {
  const char* from;
  const char* fromOverload;
  const char* to;
};
constexpr Mapping kMap[] = {{"aten::_to_copy", "default", "dim_order_ops::_to_dim_order_copy"},
                            {"aten::empty", "memory_format", "dim_order_ops::_empty_dim_order"},
                            {"aten::clone", "default", "dim_order_ops::_clone_dim_order"}};

/// A memory_format operator becomes its dim-order twin, laid out in the order the format means.
bool toDimOrderOp(Method& m, Node& n, const NodeReport& report) {
  const Mapping* map = nullptr;
  for (const Mapping& x : kMap)
    if (calls(m, n, x.from, x.fromOverload)) map = &x;
  if (!map || n.args.empty() || n.args[0] < 0) return false;
  const OpRegistry& reg = OpRegistry::builtin();
  const OpSchema* from = reg.find(map->from, map->fromOverload);
  const OpSchema* to = reg.find(map->to, "");
  if (!from || !to) return false;
  auto argNamed = [&](const std::string& name) -> ValueId {
    for (size_t k = 0; k < n.args.size(); ++k) {
      const std::string& an = k < n.argNames.size() && !n.argNames[k].empty()
                                  ? n.argNames[k]
                                  : (k < from->arguments.size() ? from->arguments[k].name : std::string());
      if (an == name) return n.args[k];
    }
    return kNoValue;
  };
  // The rank and dim order of the input (a tensor, or empty's size list).
  std::vector<int64_t> inputOrder;
  size_t rank = 0;
  if (const TensorSpec* t = m.values[n.args[0]].tensorIf()) {
    rank = t->sizes.size();
    for (uint8_t d : t->dimOrder) inputOrder.push_back(d);
  } else if (auto* l = std::get_if<IntList>(&m.values[n.args[0]].payload)) {
    rank = l->items.size();
  }
  std::vector<int64_t> order;
  for (size_t d = 0; d < rank; ++d) order.push_back(static_cast<int64_t>(d));
  ValueId mf = argNamed("memory_format");
  auto format = mf == kNoValue ? std::nullopt : numberOf(m, mf);
  int64_t f = format ? static_cast<int64_t>(*format) : 1;
  if (f == 1 && inputOrder.size() == rank) order = inputOrder;
  else if (f == 2 && rank == 4) order = {0, 2, 3, 1};
  else if (f == 3 && rank == 5) order = {0, 2, 3, 4, 1};
  else if (f != 0 && f != 1) {
    report.error("memory format " + std::to_string(f) + " has no dim order for rank " + std::to_string(rank));
    return false;
  }
  std::vector<ValueId> args;
  std::vector<std::string> names;
  bool missing = false;
  for (const SchemaArgument& a : to->arguments) {
    ValueId v = a.name == "dim_order" ? addIntList(m, order) : argNamed(a.name);
    if (v == kNoValue)
      if (auto d = schemaDefault(m, a)) v = *d;
    if (v == kNoValue) missing = true;
    args.push_back(v);
    names.push_back(a.name);
  }
  if (missing) return false;
  n.args = std::move(args);
  n.argNames = std::move(names);
  setOperator(m, n, *to);
  for (ValueId o : n.outputs)  // the result is laid out in that order
    if (auto* t = std::get_if<TensorSpec>(&m.values[o].payload); t && t->sizes.size() == order.size()) {
      t->dimOrder.assign(order.begin(), order.end());
      t->strides.clear();
    }
  return true;
}

class MemoryFormatOps : public Pass {
 public:
  std::string name() const override { return "MemoryFormatOpsPass"; }
  std::string description() const override { return "memory_format arguments become dim orders (_to_dim_order_copy, ...)"; }
  bool enabled(const ExecutorchBackendConfig& c) const override { return !c.edgeCompile.skipDimOrder; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override { return rewriteNodes(p, toDimOrderOp); }
};

}  // namespace

std::shared_ptr<const Pass> memoryFormatOps() { return std::make_shared<MemoryFormatOps>(); }

}  // namespace lstudio::passes
