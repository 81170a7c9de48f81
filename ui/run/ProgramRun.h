// Runs the shown snapshot in the engine's interpreter, off the GUI thread, cancellable and
// with progress: the values of every node (for the Inspector), and how far each is from the
// same node in a reference snapshot (the input program, or the earliest one that runs), with
// the first node, in execution order, that differs by more than a tolerance.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/inspect/EtdumpReport.h"
#include "engine/lowering/Executable.h"
#include "engine/run/Interpreter.h"
#include "ui/run/PipelineRunner.h"

namespace lstudio::ui {

struct ProgramRunResult {
  bool ok = false;
  QString error;  ///< why it could not run (or "cancelled")
  std::shared_ptr<const Program> input;  ///< the pipeline input the snapshots come from
  int snapshot = 0;                      ///< timeline row run (0: the input program)
  int reference = -1;                    ///< timeline row compared with; -1: none
  QString referenceNote;                 ///< why there is no reference, or which one was used
  run::RunResult run;                    ///< traced
  std::vector<run::HostValue> referenceOutputs;  ///< the reference's outputs (to place a gap from expected ones)
  std::map<std::string, size_t> byNode;       ///< node name -> index in run.trace
  std::map<std::string, double> differences;  ///< node name -> largest |difference| from the reference
  std::optional<run::NodeDifference> firstDifference;
  double tolerance = 0;
  QString inputs;  ///< "iota inputs", the .pt2's sample inputs, or the .npy files given

  /// What node `name` wrote, or null when the run has no such node.
  const run::TracedNode* node(const std::string& name) const;
};

/// Every snapshot run on the same inputs (Lowering > Run Every Pass).
struct EveryPassResult {
  std::vector<std::shared_ptr<const Program>> snapshots;  ///< the programs run, per timeline row
  std::vector<SnapshotValues> rows;                       ///< per timeline row
  QString inputs;                                         ///< "iota inputs", or the .pt2's sample inputs
  bool cancelled = false;
  /// Row `row` of this result describes the snapshot `program` (the same lowering, same config).
  bool describes(size_t row, const std::shared_ptr<const Program>& program) const {
    return row < snapshots.size() && program && snapshots[row] == program && row < rows.size();
  }
};

/// An ETDump read beside the program it was made from (File > Open ETDump).
struct EtdumpResult {
  bool ok = false;
  QString error;
  QString path, debugBuffer;  ///< the .etdp, and the debug buffer found beside it (or empty)
  std::shared_ptr<const Program> input;  ///< the program it was linked to
  EtdumpReport report;
  QString runNote;  ///< why the logged values were not compared with the interpreter's
  std::map<std::string, size_t> byNode;    ///< node name -> index in report.instructions
  std::map<std::string, size_t> logByNode;  ///< node name -> index in report.logged

  const ProfiledInstruction* timing(const std::string& node) const;
  const LoggedInstruction* logged(const std::string& node) const;
  /// Median ticks of Method::execute (0: none recorded).
  uint64_t executeMedian() const { return medianOf(report.executeTicks); }
};

class ProgramRunController : public QObject {
  Q_OBJECT
 public:
  explicit ProgramRunController(QObject* parent = nullptr);
  ~ProgramRunController() override;

  /// Runs method `method` of the snapshot after row `snapshot` of `state` on the .pt2's sample
  /// inputs (when it has them) or iota inputs and,
  /// unless `snapshot` is the reference itself, the reference too (row 0, or the first row
  /// that runs). A run in progress is cancelled first.
  /// `npys`: one .npy file per input, in order (read on the worker); empty: the default inputs.
  void start(const PipelineState& state, int snapshot, const std::string& method, double tolerance,
             const QStringList& npys = {});
  /// Runs method `method` after every pass `state` has run (the timeline's rows) on the default
  /// inputs, each against the previous one that ran; cancels a run in progress first.
  void startEveryPass(const PipelineState& state, const std::string& method);
  /// Reads the ETDump at `path` and links it to `program` (its method `method`); with a debug
  /// buffer, the logged values are compared with the interpreter's run of the program.
  void startEtdump(std::shared_ptr<const Program> program, const std::string& method, const QString& path,
                   const QString& debugBuffer);
  /// The last ETDump read; null before any.
  std::shared_ptr<const EtdumpResult> etdump() const { return etdump_; }
  void cancel();
  /// Forgets every result (another program was opened): a run in progress is
  /// cancelled and its result dropped.
  void clear();
  bool running() const { return running_; }
  /// The last finished every-pass run; null before any.
  std::shared_ptr<const EveryPassResult> everyPass() const { return everyPass_; }
  /// The last finished run (ok or not); null before any.
  std::shared_ptr<const ProgramRunResult> result() const { return result_; }
  /// Waits for the run in progress (tests).
  void waitForIdle();

 signals:
  /// Instructions done of the total, for the status bar.
  void progress(int done, int total);
  void finished();
  void everyPassFinished();
  void etdumpFinished();

 private:
  /// Cancels the run in progress and runs `work(cancelled, report)` on a worker; its result
  /// goes to `into`, then `done` is emitted.
  template <class R, class Work>
  void launch(Work work, std::shared_ptr<const R> ProgramRunController::*into, void (ProgramRunController::*done)());

  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<const ProgramRunResult> result_;
  std::shared_ptr<const EveryPassResult> everyPass_;
  std::shared_ptr<const EtdumpResult> etdump_;
  bool running_ = false;
  quint64 serial_ = 0;
};

}  // namespace lstudio::ui
