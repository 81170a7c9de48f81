// Factories of the lowering passes, one file each in this folder.
#pragma once

#include <memory>

#include "engine/lowering/Pass.h"

namespace lstudio::passes {

/// Runs first on a .pte input (engine/lowering/Delower).
std::shared_ptr<const Pass> delowerPte();
std::shared_ptr<const Pass> runDecompositions();
std::shared_ptr<const Pass> removeNonCoreAtenOpGraphAsserts();
std::shared_ptr<const Pass> atenDialectVerifier();
std::shared_ptr<const Pass> removeUnusedParameters();
std::shared_ptr<const Pass> replaceViewOpsWithViewCopyOps();
std::shared_ptr<const Pass> symToTensor();
std::shared_ptr<const Pass> removeNoop();
/// PruneEmptyTensorsPass: a cat leaves out its empty inputs.
std::shared_ptr<const Pass> pruneEmptyTensors();
std::shared_ptr<const Pass> removeToCopy();
std::shared_ptr<const Pass> foldRedundantDequantizeQuantize();
std::shared_ptr<const Pass> removeMixedTypeOperators();
std::shared_ptr<const Pass> memoryFormatOps();
/// to_edge_transform_and_lower's partitioners (the config's `partitioner`), one round each:
/// partitioner `round` tags what it takes (and says why not), then to_backend makes each of
/// its partitions an executorch_call_delegate of its lowered module. Round 0 is in
/// defaultPasses(); the Pipeline adds a pair per further partitioner of its config.
std::shared_ptr<const Pass> partition(size_t round = 0);
std::shared_ptr<const Pass> toBackend(size_t round = 0);
std::shared_ptr<const Pass> quantFusion();
std::shared_ptr<const Pass> constantProp();
std::shared_ptr<const Pass> initializedMutableBuffer();
std::shared_ptr<const Pass> reinplace();
std::shared_ptr<const Pass> weightsToOutputs();
std::shared_ptr<const Pass> removeAutoFunctionalized();
std::shared_ptr<const Pass> insertWriteBack();
std::shared_ptr<const Pass> legalizePortableDimOrder();
std::shared_ptr<const Pass> propagateDevice();
std::shared_ptr<const Pass> edgeToBackendOps();
std::shared_ptr<const Pass> removeGraphAsserts();
std::shared_ptr<const Pass> specProp();
std::shared_ptr<const Pass> normalizeViewCopyBase();
std::shared_ptr<const Pass> deadCodeElimination();
std::shared_ptr<const Pass> replaceViewCopyWithView();
std::shared_ptr<const Pass> symShapeEval();
/// The upper bound of a symbolic size ("2*s77 + 1") over the symbols' ranges, as
/// ConstraintBasedSymShapeEvalPass bounds it; nullopt when it has none.
std::optional<int64_t> sizeUpperBound(const std::string& size, const std::vector<SymbolRange>& ranges);
std::shared_ptr<const Pass> toOutVar();
std::shared_ptr<const Pass> externalConstants();
/// Beyond ExecuTorch (studio_memory_aware_order): runs just before memoryPlanning.
std::shared_ptr<const Pass> memoryAwareOrder();
std::shared_ptr<const Pass> memoryPlanning();

}  // namespace lstudio::passes
