// A lowering pass: a name (ExecuTorch's), a one-line description, whether the
// config enables it, and one run() that edits the program and reports what
// happened as data. Passes know nothing of snapshots, timing or verification:
// the Pipeline does that around them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

struct PassOutcome {
  bool changed = false;
  bool failed = false;
  std::vector<Diagnostic> diagnostics;  ///< on failure: what and where (node index)
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// Gated passes (reinplace, quant fusion, view removal...) say no when the config turns them off.
  virtual bool enabled(const ExecutorchBackendConfig&) const { return true; }
  virtual PassOutcome run(Program& program, const ExecutorchBackendConfig& config) const = 0;
};

/// The passes of to_executorch in ExecuTorch's order (memory planning last).
std::vector<std::shared_ptr<const Pass>> defaultPasses();
/// The name of a partition round's pass ("XnnpackPartitioner", "to_backend"): round 0 as
/// it is, then "to_backend #2" and on, one round per partitioner of the config.
std::string partitionRoundName(const std::string& pass, size_t round);

/// Every graph of the program: each method, then the control-flow branches
/// it calls (depth first). Passes that rewrite nodes one by one walk these.
inline std::vector<std::reference_wrapper<Method>> graphsOf(Program& p) {
  std::vector<std::reference_wrapper<Method>> out;
  forEachGraphOf(p, [&](Method& m) { out.push_back(m); });
  return out;
}

/// Nodes that no longer define anything used are removed (shared by passes).
size_t eliminateDeadCode(Method& m);

}  // namespace lstudio
