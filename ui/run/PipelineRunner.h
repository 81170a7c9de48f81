// Runs the lowering pipeline on one worker thread. The engine's Pipeline is
// not thread-safe, so every operation on it is queued to a single-thread
// pool; the GUI only ever sees immutable PipelineState copies (records hold
// shared snapshots, so a copy is cheap). Long runs publish a state after
// every pass, so the timeline fills in as passes finish, and can be stopped
// between passes.
#pragma once

#include <QObject>
#include <QThreadPool>
#include <atomic>
#include <memory>

#include "engine/lowering/GraphDiff.h"
#include "engine/lowering/Pipeline.h"

namespace lstudio::ui {

struct PipelineState {
  std::shared_ptr<const Program> input;
  std::vector<PassRecord> records;
  size_t position = 0;  ///< passes run
  bool failed = false;
  ExecutorchBackendConfig config;
  /// Per pass run: what it changed in each method (null when it changed
  /// nothing). Computed on the worker, so the window never diffs graphs.
  std::vector<std::shared_ptr<const std::vector<MethodDiff>>> diffs;

  bool atEnd() const { return position == records.size(); }
  /// 0 = the input, k = the program after pass k (null when that pass has not run or failed).
  std::shared_ptr<const Program> snapshot(size_t index) const;
  /// The last snapshot that exists at or before `index`.
  std::shared_ptr<const Program> snapshotAtOrBefore(size_t index) const;
};

class PipelineRunner : public QObject {
  Q_OBJECT
 public:
  explicit PipelineRunner(QObject* parent = nullptr);
  ~PipelineRunner() override;

  /// Replaces the pipeline (any queued work on the old one is dropped).
  void start(std::shared_ptr<const Program> input, ExecutorchBackendConfig config);
  void clear();
  void step();
  void back();
  void reset();
  void runToEnd();
  /// Runs until pass `index` (0-based) has run.
  void runTo(int passIndex);
  /// Stops a run between two passes.
  void stop();
  /// Re-runs what had run under the new config.
  void setConfig(ExecutorchBackendConfig config);

  bool busy() const { return pending_ > 0; }
  bool hasPipeline() const { return generation_ > 0 && state_.input != nullptr; }
  const PipelineState& state() const { return state_; }
  /// Waits until queued work is done and its states are delivered (tests, --screenshot).
  void waitForIdle();

 signals:
  void stateChanged();
  void busyChanged(bool busy);
  /// A pass finished on the worker (for the log): index, its record.
  void passFinished(int index, const lstudio::PassRecord& record);

 private:
  using Op = std::function<void(Pipeline&, const std::function<void()>& publish)>;
  void post(Op op);
  void deliver(PipelineState s, quint64 generation, bool last);

  /// A pipeline and the diffs of its snapshots, touched only by pool tasks after start().
  struct Session;
  QThreadPool pool_;
  std::shared_ptr<Session> session_;
  PipelineState state_;
  quint64 generation_ = 0;
  int pending_ = 0;
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace lstudio::ui

Q_DECLARE_METATYPE(lstudio::PassRecord)
