#include "engine/lowering/Pass.h"

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio {

std::vector<std::shared_ptr<const Pass>> defaultPasses() {
  using namespace passes;
  return {// to_edge (decompositions, the ATen check and mixed types on ATen-dialect programs only; see Pipeline)
          runDecompositions(), removeNonCoreAtenOpGraphAsserts(), atenDialectVerifier(), removeUnusedParameters(),
          replaceViewOpsWithViewCopyOps(), symToTensor(), removeNoop(), pruneEmptyTensors(), removeToCopy(),
          foldRedundantDequantizeQuantize(),
          removeMixedTypeOperators(), memoryFormatOps(),
          // to_edge_transform_and_lower, when the config names partitioners
          partition(), toBackend(),
          // to_executorch, per method, before edge_to_executorch_passes
          quantFusion(), constantProp(), reinplace(), weightsToOutputs(), removeAutoFunctionalized(),
          insertWriteBack(),
          // edge_to_executorch_passes: the config's passes first
          initializedMutableBuffer(), legalizePortableDimOrder(), specProp(), propagateDevice(), edgeToBackendOps(), removeGraphAsserts(),
          normalizeViewCopyBase(), deadCodeElimination(), replaceViewCopyWithView(), symShapeEval(), toOutVar(),
          // constants tagged for .ptd files (external_constants, external_mutable_weights); planning is always
          // last, after the studio's reordering when studio_memory_aware_order is on
          externalConstants(), memoryAwareOrder(), memoryPlanning()};
}

std::string partitionRoundName(const std::string& pass, size_t round) {
  return round == 0 ? pass : pass + " #" + std::to_string(round + 1);
}

size_t eliminateDeadCode(Method& m) {
  const OpRegistry& reg = OpRegistry::builtin();
  std::vector<bool> used(m.values.size(), false);
  auto use = [&](ValueId v) {
    if (v < 0) return;
    used[v] = true;
    if (auto* tl = std::get_if<TensorList>(&m.values[v].payload))
      for (ValueId x : tl->items) used[x] = true;
    if (auto* ol = std::get_if<OptionalTensorList>(&m.values[v].payload))
      for (ValueId x : ol->items)
        if (x >= 0) used[x] = true;
    if (auto* il = std::get_if<IntList>(&m.values[v].payload))  // sizes computed at run time (sym_size.int)
      for (ValueId x : il->items) used[x] = true;
  };
  for (ValueId v : m.outputs) use(v);
  for (const Value& v : m.values)  // a view keeps its base alive
    if (auto* t = v.tensorIf(); t && t->viewOf != kNoValue) used[t->viewOf] = true;
  size_t removed = 0;
  std::vector<bool> keep(m.nodes.size(), true);
  for (size_t i = m.nodes.size(); i-- > 0;) {
    const Node& n = m.nodes[i];
    bool live = n.kind != NodeKind::Kernel || n.outputs.empty();
    for (ValueId o : n.outputs) live = live || used[o];
    if (!live && n.op >= 0) {  // operators that write their inputs have effects
      const OpSchema* s = reg.find(m.operators[n.op].name, m.operators[n.op].overload);
      for (const auto& a : s ? s->arguments : std::vector<SchemaArgument>{}) live = live || (a.isWrite && !a.kwargOnly);
    }
    if (!live) {
      keep[i] = false;
      ++removed;
      continue;
    }
    for (ValueId v : n.args) use(v);
  }
  size_t k = 0;
  std::erase_if(m.nodes, [&](const Node&) { return !keep[k++]; });
  return removed;
}

}  // namespace lstudio
