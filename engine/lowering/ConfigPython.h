// "Copy as Python": the ExecutorchBackendConfig(...) call that reproduces a
// studio config in the user's own export script, with the imports it needs.
// The studio's tagging rules become a callable built from the exported
// program (ExecuTorch hands that callable the placeholder node only, so the
// fully qualified names come from the program's graph signature).
#pragma once

#include <string>

#include "engine/lowering/BackendConfig.h"

namespace lstudio {

/// Python source: imports, the tagging rules when there are any, then
/// `config = ExecutorchBackendConfig(...)` with every field spelled out.
std::string configToPython(const ExecutorchBackendConfig& c);
/// One partitioner as its constructor call: "XnnpackPartitioner(per_op_mode=True)".
std::string partitionerToPython(const PartitionerSpec& p);

}  // namespace lstudio
