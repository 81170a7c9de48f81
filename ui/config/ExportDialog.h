// File > Export: where the .pte and .ptd files go, an overwrite check, the
// export off the GUI thread with progress and cancel, then what was written
// (files, sizes, segments, arenas) and a button to open the folder.
#pragma once

#include <QDialog>
#include <QFutureWatcher>
#include <atomic>
#include <memory>

#include "engine/support/Error.h"
#include "engine/lowering/Export.h"

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace lstudio::ui {

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  /// `program`: a .pte program, or the pipeline's final (planned) snapshot of a .pt2.
  ExportDialog(std::shared_ptr<const Program> program, ExecutorchBackendConfig config, const QString& suggestedPath,
               QWidget* parent = nullptr);
  ~ExportDialog() override;

  void setDestination(const QString& ptePath, const QString& ptdDir = {});
  /// Tests turn the overwrite question off (existing files are then replaced).
  void setAskBeforeOverwrite(bool ask) { askOverwrite_ = ask; }
  /// Starts the export (what the Export button does); false when it cannot start.
  bool startExport();
  void cancelExport();
  bool running() const { return watcher_.isRunning(); }
  /// What was written, or the error; empty before an export finished.
  QString resultText() const;
  QProgressBar* progressBar() const { return progress_; }

 signals:
  void exportFinished(bool ok, const QString& message);

 private:
  void finished();
  QStringList filesThatWouldBeReplaced() const;

  std::shared_ptr<const Program> program_;
  ExecutorchBackendConfig config_;
  QLineEdit* pte_ = nullptr;
  QLineEdit* ptdDir_ = nullptr;
  QLabel* what_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPlainTextEdit* result_ = nullptr;
  QPushButton* exportButton_ = nullptr;
  QPushButton* cancelButton_ = nullptr;
  QPushButton* openFolder_ = nullptr;
  QFutureWatcher<Result<ExportOutcome>> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
  bool askOverwrite_ = true;
};

}  // namespace lstudio::ui
