// Export: the last step of the studio and of `lowering-cli export`. The
// pipeline's final, planned snapshot (of a .pt2, or of a .pte it de-lowered
// and lowered again) goes through the emitter and is written as a .pte and
// its .ptd files (PteWriter: streamed, atomic, cancellable).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"
#include "engine/formats/PteWriter.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

struct ExportedMethod {
  std::string name;
  size_t inputs = 0, outputs = 0, instructions = 0, operators = 0;
  std::vector<int64_t> arenas;  ///< bytes per mem_id (entry 0 unused)
};

struct ExportOutcome {
  PteWriteReport written;
  std::vector<ExportedMethod> methods;
  std::vector<std::string> notes;  ///< from the emitter (what it adapted)
  size_t constantTensors = 0;      ///< tensor values with their bytes in the .pte (all methods)
  /// Keys of external tensors whose bytes were not at hand (a .pte opened
  /// without its .ptd): the .pte names them, the .ptd it needs was not written.
  std::vector<std::string> unresolvedExternal;
};

/// Writes `program` to `output` (.ptd files to `ptdDir`, or beside the .pte).
/// `progress(done, total)` is called as bytes are written; false cancels and
/// leaves every existing file as it was.
Result<ExportOutcome> exportToFiles(const Program& program, const ExecutorchBackendConfig& config,
                                    const std::string& output, const std::string& ptdDir = {},
                                    std::function<bool(uint64_t, uint64_t)> progress = {});

/// What was written, as `lowering-cli export` prints it.
std::string exportSummary(const ExportOutcome& o);

}  // namespace lstudio
