// LegalizePortableDimOrderPass: the portable kernels of adaptive_avg_pool2d,
// avg_pool2d, expand_copy, mean.dim and sum.dim_IntList need their first
// input in the default (contiguous) dim order; when it is not, a
// _to_dim_order_copy to the contiguous order is put in front of the call.
#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class LegalizePortableDimOrder : public Pass {
 public:
  std::string name() const override { return "LegalizePortableDimOrderPass"; }
  std::string description() const override {
    return "contiguous copies in front of portable kernels that need the default dim order";
  }
  // to_executorch inserts it unless the edge program was made with _skip_dim_order.
  bool enabled(const ExecutorchBackendConfig& c) const override { return !c.edgeCompile.skipDimOrder; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    const OpSchema* copy = OpRegistry::builtin().find("dim_order_ops::_to_dim_order_copy", "");
    if (!copy) return out;
    for (Method& m : graphsOf(p))
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        const Node& n = m.nodes[i];
        bool target = calls(m, n, "aten::_adaptive_avg_pool2d") || calls(m, n, "aten::avg_pool2d") ||
                      calls(m, n, "aten::expand_copy") || calls(m, n, "aten::mean", "dim") ||
                      calls(m, n, "aten::sum", "dim_IntList");
        if (!target || n.args.empty() || n.args[0] < 0) continue;
        const TensorSpec* in = m.values[n.args[0]].tensorIf();
        if (!in) continue;
        std::vector<int64_t> order;
        bool contiguous = true;
        for (size_t d = 0; d < in->dimOrder.size(); ++d) {
          order.push_back(static_cast<int64_t>(d));
          contiguous = contiguous && in->dimOrder[d] == d;
        }
        if (contiguous) continue;
        Value legal = m.values[n.args[0]];
        TensorSpec& t = legal.tensor();
        t.dimOrder.clear();
        for (int64_t d : order) t.dimOrder.push_back(static_cast<uint8_t>(d));
        t.strides.clear();
        t.data = {};
        t.fqn.clear();
        t.slot.reset();
        t.viewOf = kNoValue;
        legal.name += "_contiguous";
        ValueId result = addValue(m, std::move(legal));
        Node c;
        c.name = m.values[result].name;
        c.meta = n.meta;
        c.outputs = {result};
        for (const SchemaArgument& a : copy->arguments) {
          ValueId v = a.name == "self" ? n.args[0] : a.name == "dim_order" ? addIntList(m, order) : kNoValue;
          if (v == kNoValue)
            if (auto d = schemaDefault(m, a)) v = *d;
          c.args.push_back(v);
          c.argNames.push_back(a.name);
        }
        setOperator(m, c, *copy);
        m.nodes[i].args[0] = result;
        m.nodes.insert(m.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(c));
        ++i;
        out.changed = true;
      }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> legalizePortableDimOrder() { return std::make_shared<LegalizePortableDimOrder>(); }

}  // namespace lstudio::passes
