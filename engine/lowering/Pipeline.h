// Runs the lowering passes one at a time. Stepping is an API (step, runTo,
// back, reset, atEnd), not a loop in the GUI. Around every pass, not inside
// it: an immutable snapshot of the program after the pass, its wall time,
// a verifier of the graph's invariants (and, after planning, that no two
// live tensors share bytes), and a changed flag by fingerprint. A failing
// pass keeps every earlier snapshot and reports its diagnostics as data.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/lowering/BackendConfig.h"
#include "engine/lowering/Pass.h"

namespace lstudio {

struct PassRecord {
  enum class State : uint8_t { NotRun, Skipped, Unchanged, Changed, Failed };
  std::string name, description;
  State state = State::NotRun;
  double milliseconds = 0;
  std::vector<Diagnostic> diagnostics;
  std::shared_ptr<const Program> after;  ///< snapshot after the pass (null until run)
};
const char* passStateName(PassRecord::State s);

class Pipeline {
 public:
  Pipeline(std::shared_ptr<const Program> input, ExecutorchBackendConfig config,
           std::vector<std::shared_ptr<const Pass>> passes = defaultPasses());

  const std::vector<PassRecord>& records() const { return records_; }
  size_t position() const { return position_; }  ///< passes run so far
  bool atEnd() const { return position_ == records_.size(); }
  bool failed() const { return failed_; }
  /// The program after the last pass run (the input before any).
  std::shared_ptr<const Program> current() const;
  /// The program after the first `passesRun` passes (the input for 0); null past position().
  std::shared_ptr<const Program> snapshot(size_t passesRun) const;
  const std::vector<std::shared_ptr<const Pass>>& passes() const { return passes_; }
  const ExecutorchBackendConfig& config() const { return config_; }

  /// Runs the next pass; false at the end or after a failure.
  bool step();
  /// Runs passes until `name` has run (or the end, or a failure); false if no such pass.
  bool runTo(const std::string& name);
  void runToEnd();
  /// Undoes the last pass (its snapshot is dropped).
  void back();
  void reset();
  /// A new config re-runs what had run, from the first pass (passes are cheap; weights are never copied).
  void setConfig(ExecutorchBackendConfig config);

 private:
  /// One partition + to_backend pair of passes per partitioner of the config.
  void arrangePartitionRounds();

  std::shared_ptr<const Program> input_;
  ExecutorchBackendConfig config_;
  std::vector<std::shared_ptr<const Pass>> passes_;
  std::vector<PassRecord> records_;
  size_t position_ = 0;
  bool failed_ = false;
};

/// Graph invariants every pass must keep: arguments and outputs in range,
/// outputs are tensors, node results defined once; after planning, no two
/// tensors alive at the same step share bytes. Empty when all hold.
std::string verifyProgram(const Program& p);
/// The same for one graph (a method or a control-flow branch).
std::string verifyMethod(const Method& m);
/// A torch.export program not yet through to_edge (ATen or training dialect),
/// which the to_edge decompositions and the ATen dialect check apply to.
bool isAtenDialect(const Program& p);

}  // namespace lstudio
