// MemoryPlanningPass (always last): every non-constant tensor gets a slot
// (mem_id 1, offset) from the configured algorithms (the smallest total
// kept), with lifetimes in node order, graph inputs and outputs planned or
// not per alloc_graph_input/output, mutable buffers and trained weights
// (weights with a gradient, returned by WeightsToOutputsPass) alive throughout, views
// in their base's bytes. Arena sizes go to non_const_buffer_sizes.
#include <algorithm>
#include <map>

#include "engine/planning/EtGreedyPlanner.h"
#include "engine/planning/MemoryPlanner.h"
#include "engine/planning/Planners.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

class MemoryPlanning : public Pass {
 public:
  std::string name() const override { return "MemoryPlanningPass"; }
  std::string description() const override { return "a slot in an arena for every non-constant tensor (runs last)"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    const auto& mc = c.memoryPlanning;
    std::vector<std::shared_ptr<const MemoryPlanner>> planners;
    for (const auto& a : mc.algorithms) planners.push_back(plannerByName(a));
    PlannerSuite suite(planners);
    // share_mutable_buffers: state is planned across methods, one slot per buffer
    // name in mem_id 2, bump-allocated in order of first appearance
    // (MemoryPlanningPass.run_multimethod).
    std::map<std::string, uint64_t> sharedOffset;
    uint64_t sharedArena = 0;
    for (Method& m : p.methods) {
      if (m.isConstantGetter()) {  // ExecuTorch emits its getters unplanned
        m.nonConstBufferSizes = {0};
        continue;
      }
      const int32_t lastStep = std::max<int32_t>(static_cast<int32_t>(m.nodes.size()) - 1, 0);
      auto root = [&](ValueId v) {
        while (m.values[v].isTensor() && m.values[v].tensor().viewOf != kNoValue) v = m.values[v].tensor().viewOf;
        return v;
      };
      // Lifetimes per storage root.
      std::map<ValueId, std::pair<int32_t, int32_t>> life;
      auto touch = [&](ValueId v, int32_t step) {
        if (v < 0 || !m.values[v].isTensor()) return;
        ValueId r = root(v);
        auto [it, fresh] = life.try_emplace(r, step, step);
        if (!fresh) it->second = {std::min(it->second.first, step), std::max(it->second.second, step)};
      };
      for (int32_t s = 0; s < static_cast<int32_t>(m.nodes.size()); ++s)
        for (ValueId v : m.nodes[s].args) {
          touch(v, s);
          if (auto* tl = std::get_if<TensorList>(&m.values[v].payload))
            for (ValueId x : tl->items) touch(x, s);
          else if (auto* ol = std::get_if<OptionalTensorList>(&m.values[v].payload))
            for (ValueId x : ol->items) touch(x, s);  // e.g. index_put's indices
        }
      std::vector<bool> isInput(m.values.size(), false), isOutput(m.values.size(), false), isMutable(m.values.size(), false);
      for (ValueId v : m.inputs) isInput[v] = true, touch(v, 0);
      for (ValueId v : m.outputs) isOutput[root(v)] = true, touch(v, lastStep);
      std::vector<bool> trained(m.values.size(), false);
      for (const auto& o : m.signature.outputs)
        if (o.kind == OutputSpec::Kind::Token && o.value >= 0)  // a trained weight (WeightsToOutputsPass)
          for (const auto& in : m.signature.inputs)
            if ((in.kind == InputSpec::Kind::Parameter || in.kind == InputSpec::Kind::Buffer) && in.value == o.value)
              trained[in.value] = true;  // a Buffer: a trained weight of a de-lowered training .pte
      std::vector<ValueId> sharedState;  // this method's mutable buffers, in signature order
      for (const auto& in : m.signature.inputs)
        if (in.kind == InputSpec::Kind::Buffer)
          for (const auto& o : m.signature.outputs)
            if (o.kind == OutputSpec::Kind::BufferMutation && in.target == o.target && !isMutable[in.value]) {
              isMutable[in.value] = true;
              if (mc.shareMutableBuffers && mc.allocMutableBuffers) sharedState.push_back(in.value);
            }
      auto bufferName = [&](ValueId v) {
        for (const auto& in : m.signature.inputs)
          if (in.value == v) return in.target;
        return std::string();
      };
      PlanProblem problem;
      problem.alignment = mc.alignment;
      std::vector<ValueId> planned;
      for (auto& [v, span] : life) {
        const TensorSpec& t = m.values[v].tensor();
        bool constant = !t.data.empty() || t.external;
        if (constant && !(isMutable[v] && mc.allocMutableBuffers) && !trained[v]) continue;  // constants live in the program
        // State (mutable buffers, trained weights) is planned whatever alloc_graph_input/output say.
        if (isInput[v] && !isMutable[v] && !trained[v] && !mc.allocGraphInput) continue;
        if (isOutput[v] && !isMutable[v] && !trained[v] && !mc.allocGraphOutput) continue;
        if (isMutable[v] && mc.shareMutableBuffers) continue;  // planned across methods below
        if (t.dynamism == ShapeDynamism::DynamicUnbound) continue;
        auto [first, last] = span;
        if (isMutable[v] || trained[v]) first = 0, last = lastStep;  // state persists across calls
        problem.tensors.push_back(PlanTensor{alignUp(t.nbytes().value_or(0), mc.alignment), first, last, 1});
        planned.push_back(v);
      }
      if (auto s = validateProblem(problem); !s) {
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, -1, m.name + ": " + s.error().message()});
        continue;
      }
      PlanResult r = suite.plan(problem);
      if (auto s = verifyPlan(problem, r); !s) {
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, -1, m.name + ": " + s.error().message()});
        continue;
      }
      for (Value& v : m.values)
        if (auto* t = std::get_if<TensorSpec>(&v.payload)) t->slot.reset();
      for (size_t i = 0; i < planned.size(); ++i)
        m.values[planned[i]].tensor().slot = PlannedSlot{1, r.offsets[i]};
      for (ValueId v : sharedState) {
        auto [it, fresh] = sharedOffset.try_emplace(bufferName(v), sharedArena);
        if (fresh) sharedArena += alignUp(m.values[v].tensor().nbytes().value_or(0), mc.alignment);
        m.values[v].tensor().slot = PlannedSlot{2, it->second};
      }
      for (Value& v : m.values)  // views take their base's slot
        if (auto* t = std::get_if<TensorSpec>(&v.payload); t && t->viewOf != kNoValue)
          t->slot = m.values[root(t->viewOf)].tensor().slot;
      // ExecuTorch adds 64 bytes to every arena of a method holding an XNNPACK
      // delegate (its kernels may read past a tensor's end); with nothing planned
      // it stores [0, 0] (exir/memory_planning.py, _compute_total_sizes).
      int64_t arena = r.arenaSizes.size() > 1 ? static_cast<int64_t>(r.arenaSizes[1]) : 0;
      if (!planned.empty()) arena += static_cast<int64_t>(etGreedyExtraPadding(m));
      m.nonConstBufferSizes = {0, arena};
      out.changed = true;
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                 m.name + ": " + std::to_string(planned.size()) + " tensors in " +
                                     std::to_string(arena) + " bytes (" + r.algorithm + ")"});
    }
    if (mc.shareMutableBuffers)  // every method names the shared arena, even when empty
      for (Method& m : p.methods)
        if (m.nonConstBufferSizes.size() == 2) m.nonConstBufferSizes.push_back(static_cast<int64_t>(sharedArena));
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> memoryPlanning() { return std::make_shared<MemoryPlanning>(); }

}  // namespace lstudio::passes
