// The three steps of remove_view_copy, as ExecuTorch runs them:
// NormalizeViewCopyBasePass (a view_copy of a view_copy reads the first
// base directly), dead-code elimination, and ReplaceViewCopyWithViewPass
// (a static view_copy becomes a view sharing its base's storage: no
// instruction, no copy, and the planner gives it the base's bytes).
#include <algorithm>
#include <set>
#include <string>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

bool isViewCopy(const Method& m, const Node& n) {
  return n.kind == NodeKind::Kernel && n.op >= 0 && m.operators[n.op].name == "aten::view_copy" && !n.args.empty() &&
         n.outputs.size() == 1;
}

class NormalizeViewCopyBase : public Pass {
 public:
  std::string name() const override { return "NormalizeViewCopyBasePass"; }
  std::string description() const override { return "a view_copy of a view_copy reads the first base directly"; }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.removeViewCopy; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) {
      // The node writing each value (one index, not a scan per view_copy: linear in the graph).
      std::vector<int> producer(m.values.size(), -1);
      for (size_t i = 0; i < m.nodes.size(); ++i)
        for (ValueId o : m.nodes[i].outputs)
          if (o >= 0 && static_cast<size_t>(o) < producer.size() && producer[o] < 0) producer[o] = static_cast<int>(i);
      auto writer = [&](ValueId v) { return v >= 0 && static_cast<size_t>(v) < producer.size() ? producer[v] : -1; };
      for (Node& n : m.nodes) {
        if (!isViewCopy(m, n)) continue;
        int src = writer(n.args[0]);
        while (src >= 0 && isViewCopy(m, m.nodes[src])) {
          n.args[0] = m.nodes[src].args[0];
          out.changed = true;
          src = writer(n.args[0]);
        }
      }
    }
    return out;
  }
};

class DeadCode : public Pass {
 public:
  std::string name() const override { return "DeadCodeEliminationPass"; }
  std::string description() const override { return "removes nodes whose results nothing uses"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    for (Method& m : graphsOf(p)) out.changed = eliminateDeadCode(m) > 0 || out.changed;
    return out;
  }
};

/// Contiguous as torch's is_contiguous says: the dim order is the identity
/// once dimensions of size 1 (whose order does not move a byte) are left out,
/// so a channels-last [1, 64, 1, 1] tensor is contiguous.
bool isContiguous(const TensorSpec& t) {
  std::vector<uint8_t> order;
  for (uint8_t d : t.dimOrder)
    if (d >= t.sizes.size() || t.sizes[d] != 1) order.push_back(d);
  return std::is_sorted(order.begin(), order.end());
}

/// The values the signature makes constants: parameters (unless the program
/// trains them), constant tensors and buffers no output mutates.
std::vector<bool> constantsOf(const Method& m) {
  std::vector<bool> out(m.values.size(), false);
  std::set<std::string> mutated;
  bool training = false;
  for (const OutputSpec& o : m.signature.outputs) {
    if (o.kind == OutputSpec::Kind::BufferMutation) mutated.insert(o.target);
    training = training || o.kind == OutputSpec::Kind::GradientToParameter;
  }
  for (const InputSpec& i : m.signature.inputs) {
    if (i.value < 0 || static_cast<size_t>(i.value) >= out.size()) continue;
    out[i.value] = (i.kind == InputSpec::Kind::Parameter && !training) || i.kind == InputSpec::Kind::ConstantTensor ||
                   (i.kind == InputSpec::Kind::Buffer && !mutated.count(i.target));
  }
  return out;
}

class ReplaceViewCopyWithView : public Pass {
 public:
  std::string name() const override { return "ReplaceViewCopyWithViewPass"; }
  std::string description() const override { return "static view_copy becomes a view of its base: no copy, shared storage"; }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.removeViewCopy; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    const OpSchema* etView = OpRegistry::builtin().find("executorch_prim::et_view", "default");
    for (Method& m : graphsOf(p)) {
      std::vector<bool> drop(m.nodes.size(), false);
      std::vector<bool> isInput(m.values.size(), false), isOutput(m.values.size(), false);
      for (ValueId v : m.inputs)
        if (v >= 0 && static_cast<size_t>(v) < m.values.size()) isInput[v] = true;
      for (ValueId v : m.outputs)
        if (v >= 0 && static_cast<size_t>(v) < m.values.size()) isOutput[v] = true;
      const std::vector<bool> constant = constantsOf(m);
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        const Node& n = m.nodes[i];
        if (!isViewCopy(m, n)) continue;
        // A view the method returns stays a copy: the caller may swap output
        // pointers at run time (ExecuTorch keeps these too).
        if (isOutput[n.outputs[0]]) continue;
        const TensorSpec* base = m.values[n.args[0]].tensorIf();
        TensorSpec* view = std::get_if<TensorSpec>(&m.values[n.outputs[0]].payload);
        // Only static shapes over contiguous bases: a view of a dynamic tensor
        // needs a kernel to recompute its sizes. A view of a constant is a
        // constant over the same bytes (ExecuTorch gives both one data_buffer_idx);
        // other tensors with bytes (state with an initial value) keep their copy.
        bool contiguous = base && isContiguous(*base);
        const bool constantBase = base && constant[n.args[0]] && !base->external && !base->data.empty();
        // A dynamic view of a dynamic base becomes a view too, but keeps an
        // instruction (et_view) that sets its sizes at run time, as ExecuTorch
        // emits it; one whose dynamism differs from its base's stays a copy.
        const bool dynamic = base && view && base->dynamism != ShapeDynamism::Static;
        if (!base || !view || base->dynamism != view->dynamism || !contiguous || base->external ||
            (!base->data.empty() && !constantBase))
          continue;
        if (constantBase) {
          view->viewOf = n.args[0];
          view->data = base->data;
          drop[i] = true;
          out.changed = true;
          continue;
        }
        ValueId root = n.args[0];
        while (m.values[root].tensor().viewOf != kNoValue) root = m.values[root].tensor().viewOf;
        const MemoryPlanningConfig& planning = c.planningFor(m.name);
        const bool callerMemory = (isInput[root] && !planning.allocGraphInput) ||
                                  (isOutput[root] && !planning.allocGraphOutput);
        if ((callerMemory || dynamic) && !etView) continue;
        view->viewOf = root;
        // A view of memory the caller provides (an input or output left
        // unplanned) has no slot to share, and a dynamic view's sizes are
        // known only at run time: ExecuTorch emits et_view for both, which
        // points the view at its base's bytes (and sets its sizes) when the
        // method runs. It takes self, size and the view itself; a dynamic view
        // of planned memory still shares its base's slot.
        if (callerMemory || dynamic) {
          Node& e = m.nodes[i];
          setOperator(m, e, *etView);
          e.args = {e.args[0], e.args[1], e.outputs[0]};
          e.argNames = {"self", "size", "out"};
          out.changed = true;
          continue;
        }
        drop[i] = true;
        out.changed = true;
      }
      // Each view keeps its place: before the first kept node after its view_copy.
      ValueId next = kNoValue;
      for (size_t i = m.nodes.size(); i-- > 0;) {
        if (!drop[i]) {
          next = m.nodes[i].outputs.empty() ? kNoValue : m.nodes[i].outputs.front();
          continue;
        }
        if (TensorSpec* t = std::get_if<TensorSpec>(&m.values[m.nodes[i].outputs[0]].payload)) t->viewBefore = next;
      }
      size_t k = 0;
      std::erase_if(m.nodes, [&](const Node&) { return drop[k++]; });
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> normalizeViewCopyBase() { return std::make_shared<NormalizeViewCopyBase>(); }
std::shared_ptr<const Pass> deadCodeElimination() { return std::make_shared<DeadCode>(); }
std::shared_ptr<const Pass> replaceViewCopyWithView() { return std::make_shared<ReplaceViewCopyWithView>(); }

}  // namespace lstudio::passes
