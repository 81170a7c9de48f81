// The studio window (first stage): open a program and see what is inside.
#pragma once

#include <QFutureWatcher>
#include <QMainWindow>

#include "ui/ProgramLoader.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QTreeWidget;

namespace lstudio::ui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading `path` (and .ptd files beside it) on a worker thread.
  void openFile(const QString& path);
  /// The last successfully loaded program, or null.
  const LoadedProgram* current() const { return current_.ok ? &current_ : nullptr; }
  QTreeWidget* summaryTree() const { return tree_; }
  QPlainTextEdit* reportView() const { return report_; }

 signals:
  /// Emitted on the GUI thread when a load finishes (ok or not).
  void loadFinished(bool ok, const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void chooseFile();
  void onLoaded();
  void showSummary(const LoadedProgram& p);
  void updateRecentMenu();

  QTreeWidget* tree_ = nullptr;
  QPlainTextEdit* report_ = nullptr;
  QProgressBar* busy_ = nullptr;
  QLabel* status_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QFutureWatcher<LoadedProgram> watcher_;
  LoadedProgram current_;
  bool quietErrors_ = false;
 public:
  /// Tests set this so that errors go to the status bar instead of a modal dialog.
  void setQuietErrors(bool quiet) { quietErrors_ = quiet; }
};

}  // namespace lstudio::ui
