#include "engine/lowering/passes/PlannedStorage.h"

#include "engine/planning/MemoryAwareOrder.h"

namespace lstudio::passes {

TensorRoles tensorRoles(const Method& m, const MemoryPlanningConfig& mc) {
  TensorRoles roles;
  roles.isInput.assign(m.values.size(), false);
  roles.isOutput.assign(m.values.size(), false);
  roles.isMutable.assign(m.values.size(), false);
  roles.trained.assign(m.values.size(), false);
  for (ValueId v : m.inputs) roles.isInput[v] = true;
  for (ValueId v : m.outputs) roles.isOutput[storageRootOf(m, v)] = true;
  for (const auto& o : m.signature.outputs)
    if (o.kind == OutputSpec::Kind::Token && o.value >= 0)  // a trained weight (WeightsToOutputsPass)
      for (const auto& in : m.signature.inputs)
        if ((in.kind == InputSpec::Kind::Parameter || in.kind == InputSpec::Kind::Buffer) && in.value == o.value)
          roles.trained[in.value] = true;  // a Buffer: a trained weight of a de-lowered training .pte
  for (const auto& in : m.signature.inputs)
    if (in.kind == InputSpec::Kind::Buffer)
      for (const auto& o : m.signature.outputs)
        if (o.kind == OutputSpec::Kind::BufferMutation && in.target == o.target && !roles.isMutable[in.value]) {
          roles.isMutable[in.value] = true;
          if (mc.shareMutableBuffers && mc.allocMutableBuffers) roles.sharedState.push_back(in.value);
        }
  return roles;
}

std::optional<PlannedStorage> plannedStorage(const Method& m, const MemoryPlanningConfig& mc,
                                             const TensorRoles& roles, ValueId v) {
  const auto& [isInput, isOutput, isMutable, trained, sharedState] = roles;
  const TensorSpec* t = m.values[v].tensorIf();
  if (!t) return std::nullopt;
  bool constant = !t->data.empty() || t->external;
  if (constant && !(isMutable[v] && mc.allocMutableBuffers) && !trained[v]) return std::nullopt;  // in the program
  // Mutable buffers are planned whatever alloc_graph_input/output say; a
  // trained weight is a graph input and (weights_to_outputs) an output, so
  // either option leaves it to the caller, as in ExecuTorch.
  if (isInput[v] && !isMutable[v] && !mc.allocGraphInput) return std::nullopt;
  if (isOutput[v] && !isMutable[v] && !mc.allocGraphOutput) return std::nullopt;
  if (isMutable[v] && mc.shareMutableBuffers) return std::nullopt;  // planned across methods, in mem_id 2
  if (t->dynamism == ShapeDynamism::DynamicUnbound) return std::nullopt;
  uint64_t a = mc.alignment ? mc.alignment : 1, n = t->nbytes().value_or(0);
  return PlannedStorage{(n + a - 1) / a * a, n, isMutable[v] || trained[v]};
}

}  // namespace lstudio::passes
