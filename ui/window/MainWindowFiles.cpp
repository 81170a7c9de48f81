// MainWindow's file handling: opening programs and samples on a worker,
// recent files, workspaces and the autosave that recovers one, and export.
#include "ui/window/MainWindow.h"

#include <QCheckBox>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLockFile>
#include <QMessageBox>
#include <QMimeData>
#include <QCoreApplication>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/lowering/Delower.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/samples/SampleZoo.h"
#include "ui/support/Background.h"
#include "ui/config/ConfigEditor.h"
#include "ui/config/ConstantTable.h"
#include "ui/config/ExportDialog.h"
#include "ui/graph/Inspector.h"
#include "ui/support/StdString.h"
#include "ui/window/SummaryView.h"

namespace lstudio::ui {
namespace {

QString autosaveFolder() {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
  QDir().mkpath(dir);
  return dir;
}

/// An autosave of this or another instance: autosave*.lstudio in the autosave folder.
bool isAutosave(const QString& path) {
  QFileInfo f(path);
  return f.fileName().startsWith("autosave") && f.fileName().endsWith(kWorkspaceExtension) &&
         QFileInfo(f.absolutePath()) == QFileInfo(autosaveFolder());
}

/// The lock beside an autosave that its instance holds while it runs. It records
/// the process id and name; a lock whose process ended is stale and is taken over.
std::unique_ptr<QLockFile> lockOf(const QString& autosave) {
  QString base = autosave.left(autosave.size() - int(qstrlen(kWorkspaceExtension)));
  auto lock = std::make_unique<QLockFile>(base + ".lock");
  lock->setStaleLockTime(0);  // a lock is stale when its process ended, never by its age
  return lock;
}

}  // namespace

void MainWindow::holdAutosaveLock() {
  // Held from the first window until the process exits (a crash leaves it stale).
  static std::unique_ptr<QLockFile> own = [] {
    auto lock = lockOf(autosavePath());
    if (!lock->tryLock(0)) qWarning("Lowering Studio: cannot lock %s", qPrintable(autosavePath()));
    return lock;
  }();
}

void MainWindow::chooseFile() {
  QSettings s;
  QString dir = s.value("lastDirectory").toString();
  QString path = QFileDialog::getOpenFileName(this, tr("Open program"), dir,
                                              tr("Programs, data and workspaces (*.pte *.bpte *.pt2 *.ptd *.bin *.lstudio);;ExecuTorch programs (*.pte *.bpte);;torch.export archives (*.pt2);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::chooseEtRecord() {
  QSettings s;
  QString path = QFileDialog::getOpenFileName(this, tr("Open upstream's ETRecord"), s.value("lastDirectory").toString(),
                                              tr("ETRecords (*.bin *.etrecord);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::openFile(const QString& path) {
  if (!settleUnsavedChanges(tr("Opening %1 replaces it.").arg(QFileInfo(path).fileName()))) return;
  if (path.endsWith(kWorkspaceExtension)) {
    QString error;
    if (isAutosave(path) ? !recoverSession(path, &error) : !openWorkspace(path, &error)) {
      log(tr("Error: %1").arg(error));
      if (!quietErrors_) QMessageBox::critical(this, tr("Cannot open workspace"), error);
      emit loadFinished(false, error);
    }
    return;
  }
  if (path.startsWith("sample:")) return buildSample(path.mid(7));
  QSettings s;
  s.setValue("lastDirectory", QFileInfo(path).absolutePath());
  std::string p = path.toStdString();
  status_->setText(tr("Loading %1…").arg(QFileInfo(path).fileName()));
  log(tr("Opening %1").arg(path));
  startLoad(QtConcurrent::run(inBackground([p] { return loadProgram(p, dataFilesBeside(p)); })));
}

void MainWindow::openSample(const QString& spec) {
  if (settleUnsavedChanges(tr("Opening the sample %1 replaces it.").arg(spec))) buildSample(spec);
}

void MainWindow::buildSample(const QString& spec) {
  std::string n = spec.toStdString();
  status_->setText(tr("Building sample %1…").arg(spec));
  log(tr("Building sample %1").arg(spec));
  // Weights go to an unlinked file in the cache folder, not memory: the
  // presets' are gigabytes (16 GB for llama3-8b).
  const QString cache = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
  std::string weightsDir = !cache.isEmpty() && QDir().mkpath(cache) ? cache.toStdString() : std::string();
  startLoad(QtConcurrent::run(inBackground([n, weightsDir] {
    LoadedProgram r;
    r.path = "sample:" + n;
    auto p = buildSampleSpec(n, weightsDir);
    if (!p) {
      r.error = p.error().message();
      return r;
    }
    p->path = r.path;
    r.summary = summarize(p.value(), {});
    r.report = toText(r.summary);
    r.program = std::make_shared<const Program>(std::move(p.value()));
    r.ok = true;
    return r;
  })));
}

void MainWindow::openProgram(std::shared_ptr<const Program> program, const QString& title) {
  LoadedProgram r;
  r.path = title.toStdString();
  r.summary = summarize(*program, {});
  r.report = toText(r.summary);
  if (program->format == SourceFormat::Pte && program->backing) r.sizes.push_back(sizeBreakdown(*program));
  r.program = std::move(program);
  r.ok = true;
  finishLoad(std::move(r));
}

void MainWindow::startLoad(QFuture<LoadedProgram> future) {
  // A newer load replaces the watched future; the older result is dropped.
  loadCancelled_ = false;
  loading_ = true;
  busy_->show();
  cancelLoad_->show();
  watcher_.setFuture(future);
}

void MainWindow::cancelLoad() {
  if (!loading_) return;  // (the result may be done but not yet delivered: it is dropped too)
  loadCancelled_ = true;  // the worker finishes its read; its result is dropped
  pending_.reset();
  if (recovering_) releaseRecovered(false);  // not recovered: offered again at the next start
  cancelLoad_->hide();
  busy_->setVisible(runner_->busy());
  status_->setText(tr("Loading cancelled"));
  log(tr("Loading cancelled"));
}

void MainWindow::onLoaded() {
  loading_ = false;
  cancelLoad_->hide();
  busy_->setVisible(runner_->busy());
  if (loadCancelled_) {
    loadCancelled_ = false;
    emit loadFinished(false, tr("cancelled"));
    return;
  }
  finishLoad(watcher_.result());
}

void MainWindow::finishLoad(LoadedProgram r) {
  if (!r.ok) {
    status_->setText(tr("Could not open %1").arg(QFileInfo(q(r.path)).fileName()));
    log(tr("Error: %1").arg(q(r.error)));
    if (!quietErrors_) {
      QMessageBox box(QMessageBox::Critical, tr("Cannot open program"),
                      tr("%1 is not a valid ExecuTorch program.").arg(QFileInfo(q(r.path)).fileName()),
                      QMessageBox::Ok, this);
      box.setInformativeText(q(r.error));
      box.setDetailedText(q(r.error));
      box.exec();
    }
    pending_.reset();
    if (recovering_) releaseRecovered(false);  // not recovered: offered again at the next start
    emit loadFinished(false, q(r.error));
    return;
  }
  // Another program replaces a recovered session not saved: its autosave stays for the next start.
  if (!recovering_ && !recovered_.isEmpty()) releaseRecovered(false);
  // Runs, ETDumps and the config's undo history belong to the program they were made on.
  programRun_->clear();
  updateRunValues();
  if (current_.ok) {
    previousConfig_ = config_->config();
    previousFile_ = QFileInfo(q(current_.path)).fileName();
  }
  const bool replacing = current_.ok;
  current_ = std::move(r);
  centreStack_->setCurrentWidget(programCentre_);
  inspector_->showNothing();  // nothing of the program shown before is selected in this one
  showSummary(current_);
  log(tr("Loaded %1").arg(q(current_.path)));
  if (!current_.etRecordNote.empty()) log(q(current_.etRecordNote));
  rememberRecent();

  method_ = 0;
  snapshot_ = 0;
  selectedNode_ = current_.program && !current_.program->methods.empty() ? soleDelegateCall(current_.program->methods[0]) : -1;
  revealOnShow_ = selectedNode_;
  shownPosition_ = -1;
  if (replacing && !pending_) startFromDefaults();
  if (current_.program && !current_.program->methods.empty()) {
    startPipeline();
  } else {
    runner_->clear();
    shown_ = current_.program;
    refreshTimeline();
    refreshShown();
  }
  if (!current_.program) views_->setCurrentWidget(report_->parentWidget());  // the Summary of a lone .ptd
  updateActions();
  if (pending_ && !runner_->busy()) restorePending();
  if (!pending_) setModified(false);
  emit loadFinished(true, {});
}

int MainWindow::soleDelegateCall(const Method& m) {
  // A program that is one delegate and a little glue (a QNN or XNNPACK .pte as phones get it)
  // opens on that delegate: the Inspector tells its backend, compile specs and payload at once.
  int call = -1, kernels = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].kind == NodeKind::Delegate) {
      if (call >= 0) return -1;
      call = static_cast<int>(i);
    } else if (m.nodes[i].kind == NodeKind::Kernel) {
      ++kernels;
    }
  }
  return kernels <= 2 ? call : -1;
}

void MainWindow::rememberRecent() {
  QSettings s;
  QStringList recent = s.value("recentFiles").toStringList();
  recent.removeAll(q(current_.path));
  if (QFileInfo::exists(q(current_.path))) recent.prepend(q(current_.path));
  while (recent.size() > 10) recent.removeLast();
  s.setValue("recentFiles", recent);
  updateRecentMenu();
}

void MainWindow::startFromDefaults() {
  // The file before this one leaves nothing behind: its config (tagging rules, alignments)
  // is offered under File, not applied silently; a .pte then takes the config it was made with.
  const ExecutorchBackendConfig defaults;
  {
    QSignalBlocker a(config_), b(constants_);
    config_->setConfig(defaults);  // a fresh undo history
    constants_->setConfig(defaults);
  }
  const bool differed = previousConfig_ && configToJson(*previousConfig_) != configToJson(defaults);
  applyPrevious_->setEnabled(differed);
  if (differed)
    log(tr("Config reset to the defaults for %1; File › Apply the Previous File's Config carries over the config of %2")
            .arg(QFileInfo(q(current_.path)).fileName(), previousFile_));
}

void MainWindow::applyPreviousConfig() {
  if (!previousConfig_) return;
  log(tr("Applying the config of %1").arg(previousFile_));
  config_->edit(*previousConfig_, tr("Apply the config of %1").arg(previousFile_));
}

void MainWindow::startPipeline() {
  // A .pte starts from the config it was made with (its pipeline de-lowers
  // it first), unless a workspace brings one; a .pt2 keeps the config the user set.
  if (current_.program->format == SourceFormat::Pte && !pending_) {
    ExecutorchBackendConfig c = configMatching(*current_.program);
    QSignalBlocker a(config_), b(constants_);
    config_->setConfig(c);
    constants_->setConfig(c);
    log(tr("Config set to match %1 (segment_alignment %2, remove_view_copy %3); the first pass de-lowers it")
            .arg(QFileInfo(q(current_.path)).fileName())
            .arg(c.segmentAlignment)
            .arg(c.removeViewCopy ? "true" : "false"));
  }
  // An ETRecord recorded before partitioning: lowered with the partitioner that delegated it.
  if (auto recorded = recordedPartitioners(*current_.program);
      !pending_ && !recorded.empty() && config_->config().partitioners.empty()) {
    ExecutorchBackendConfig c = config_->config();
    c.partitioners = std::move(recorded);
    QSignalBlocker a(config_), b(constants_);
    config_->setConfig(c);
    constants_->setConfig(c);
    log(tr("%1 records a program delegated to XNNPACK (its delegate_map) and its edge program from before "
           "partitioning: Config › Partitioner set to XnnpackPartitioner, as it was lowered")
            .arg(QFileInfo(q(current_.path)).fileName()));
  }
  runner_->start(current_.program, config_->config());
  if (pending_ && !pending_->runTo.empty()) {
    if (!runToPass(q(pending_->runTo))) pending_->runTo.clear();
  }
}

void MainWindow::showSummary(const LoadedProgram& p) {
  setWindowTitle(tr("%1 — Lowering Studio").arg(QFileInfo(q(p.path)).fileName()));
  status_->setText(summaryStatusLine(p));
  report_->setPlainText(q(p.report));
  fillSummaryTree(tree_, p);
  showSizes(p);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openFile(urls.first().toLocalFile());
}

Workspace MainWindow::workspace() const {
  Workspace w;
  w.input = current_.path;
  w.dataFiles = current_.dataFiles;
  w.config = config_->config();
  const PipelineState& s = runner_->state();
  if (s.input && s.position > 0) w.runTo = s.records[std::min(s.position, s.records.size()) - 1].name;
  w.method = method_;
  if (shown_ && selectedNode_ >= 0 && static_cast<size_t>(method_) < shown_->methods.size())
    w.selectedNode = shown_->methods[method_].nodes[selectedNode_].name;
  w.view = views_->tabText(views_->currentIndex()).toLower().toStdString();
  w.compare = compare_->isChecked();
  return w;
}

bool MainWindow::saveWorkspaceTo(const QString& path, QString* error) {
  if (!current_.ok) {
    if (error) *error = tr("Open a program first: a workspace records the program it was made for.");
    return false;
  }
  auto st = saveWorkspace(workspace(), path.toStdString());
  if (!st) {
    if (error) *error = q(st.error().message());
    return false;
  }
  workspacePath_ = path;
  setModified(false);
  log(tr("Saved workspace %1").arg(path));
  releaseRecovered(true);  // the recovered session is saved: its autosave has done its work
  return true;
}

QString MainWindow::askWorkspacePath() {
  return QFileDialog::getSaveFileName(this, tr("Save workspace"), QSettings().value("lastDirectory").toString(),
                                      tr("Lowering Studio workspace (*%1)").arg(kWorkspaceExtension));
}

void MainWindow::saveWorkspaceInteractively(QString path) {
  // An empty path (no workspace yet, or Save As) asks for one.
  if (path.isEmpty()) path = askWorkspacePath();
  if (path.isEmpty()) return;
  if (!path.endsWith(kWorkspaceExtension)) path += kWorkspaceExtension;
  QString error;
  if (!saveWorkspaceTo(path, &error)) QMessageBox::warning(this, tr("Cannot save workspace"), error);
}

bool MainWindow::openWorkspace(const QString& path, QString* error) {
  auto w = loadWorkspace(path.toStdString());
  if (!w) {
    if (error) *error = q(w.error().message());
    return false;
  }
  log(tr("Opening workspace %1").arg(path));
  workspacePath_ = path == autosavePath() ? QString() : path;
  pending_ = w.value();
  {
    QSignalBlocker a(config_), b(constants_);
    config_->setConfig(pending_->config);
    constants_->setConfig(pending_->config);
  }
  std::string input = pending_->input;
  std::vector<std::string> data = pending_->dataFiles;
  if (input.rfind("sample:", 0) == 0) {
    buildSample(q(input.substr(7)));
    return true;
  }
  status_->setText(tr("Loading %1…").arg(QFileInfo(q(input)).fileName()));
  startLoad(QtConcurrent::run(inBackground([input, data] { return loadProgram(input, data.empty() ? dataFilesBeside(input) : data); })));
  return true;
}

void MainWindow::restorePending() {
  if (!pending_) return;
  Workspace w = std::move(*pending_);
  pending_.reset();
  if (w.method > 0 && w.method < methodTabs_->count()) methodTabs_->setCurrentIndex(w.method);
  for (int i = 0; i < views_->count(); ++i)
    if (views_->tabText(i).toLower().toStdString() == w.view) views_->setCurrentIndex(i);
  setCompare(w.compare);
  if (!w.selectedNode.empty()) selectNodeByName(q(w.selectedNode));
  // A recovered session is as unsaved as it was when its autosave was written.
  const bool recovered = recovering_;
  recovering_ = false;
  setModified(recovered);
  log(recovered ? tr("Session recovered from %1; it is unsaved until you save it as a workspace").arg(recovered_)
                : tr("Workspace restored"));
  if (recovered) status_->setText(tr("Session recovered: unsaved until you save it as a workspace (Ctrl+S)"));
}

void MainWindow::setModified(bool m) {
  modified_ = m;
  if (current_.ok)  // the title first: its [*] shows the modified state
    setWindowTitle(tr("%1[*] — Lowering Studio").arg(QFileInfo(q(current_.path)).fileName()));
  setWindowModified(m);
}

QString MainWindow::autosavePath() {
  return autosaveFolder() + QString("/autosave-%1").arg(QCoreApplication::applicationPid()) + kWorkspaceExtension;
}

QList<MainWindow::EndedSession> MainWindow::endedSessions() {
  QList<EndedSession> ended;
  const QString own = QFileInfo(autosavePath()).fileName();
  const QFileInfoList files = QDir(autosaveFolder()).entryInfoList({QString("autosave*") + kWorkspaceExtension}, QDir::Files, QDir::Time);
  for (const QFileInfo& f : files) {
    if (f.fileName() == own) continue;
    // A running instance holds the lock of its autosave (and of one it recovers).
    if (!lockOf(f.absoluteFilePath())->tryLock(0)) continue;  // released (and removed) at once
    EndedSession s{f.absoluteFilePath(), {}, f.lastModified(), {}};
    if (auto w = loadWorkspace(f.absoluteFilePath().toStdString())) s.input = q(w->input);
    else s.error = q(w.error().message());
    ended << s;
  }
  return ended;
}

bool MainWindow::recoverSession(const QString& autosave, QString* error) {
  std::unique_ptr<QLockFile> lock;
  if (QFileInfo(autosave) != QFileInfo(autosavePath())) {  // this instance holds its own already
    lock = lockOf(autosave);
    if (!lock->tryLock(0)) {
      qint64 pid = 0;
      lock->getLockInfo(&pid, nullptr, nullptr);
      if (error) *error = tr("%1 is the autosave of a Lowering Studio still running (process %2).").arg(autosave).arg(pid);
      return false;
    }
  }
  if (!openWorkspace(autosave, error)) return false;
  if (recovered_ != autosave) releaseRecovered(false);  // a session recovered before and not saved stays on disk
  workspacePath_.clear();  // saving asks where: an autosave is no workspace of the user's
  recovering_ = true;
  recovered_ = autosave;
  if (lock) recoveredLock_ = std::move(lock);
  log(tr("Recovering the session autosaved at %1").arg(QFileInfo(autosave).lastModified().toString("yyyy-MM-dd HH:mm:ss")));
  return true;
}

void MainWindow::releaseRecovered(bool remove) {
  if (remove && !recovered_.isEmpty()) QFile::remove(recovered_);
  recoveredLock_.reset();  // unlocks: removes the lock file
  recovered_.clear();
  recovering_ = false;
}

void MainWindow::offerRecovery() {
  for (const EndedSession& s : endedSessions()) {
    QMessageBox box(this);
    box.setIcon(QMessageBox::Question);
    box.setWindowTitle(tr("Recover unsaved session"));
    const QString when = s.written.toString("yyyy-MM-dd HH:mm");
    QPushButton* recover = nullptr;
    if (s.error.isEmpty()) {
      box.setText(tr("Lowering Studio did not close cleanly. Recover its unsaved session of <b>%1</b>?")
                      .arg(QFileInfo(s.input).fileName().toHtmlEscaped()));
      box.setInformativeText(tr("Program: %1<br>Autosaved: %2<br><br>A recovered session stays unsaved until you save it as a workspace.")
                                 .arg(s.input.toHtmlEscaped(), when));
      recover = box.addButton(tr("Recover"), QMessageBox::AcceptRole);
    } else {
      box.setText(tr("Lowering Studio did not close cleanly, and the session it autosaved at %1 cannot be read.").arg(when));
      box.setInformativeText(s.error.toHtmlEscaped());
    }
    QPushButton* discard = box.addButton(tr("Discard"), QMessageBox::DestructiveRole);
    QPushButton* later = box.addButton(tr("Not Now"), QMessageBox::RejectRole);
    box.setDefaultButton(recover ? recover : later);
    box.setEscapeButton(later);
    box.exec();
    if (box.clickedButton() == discard) {
      QFile::remove(s.autosave);
      log(tr("Discarded the session autosaved at %1").arg(when));
      continue;
    }
    if (!recover || box.clickedButton() != recover) continue;
    QString error;
    if (recoverSession(s.autosave, &error)) return;
    log(tr("Error: %1").arg(error));
    if (!quietErrors_) QMessageBox::warning(this, tr("Cannot recover session"), error);
  }
}

void MainWindow::autosave() {
  if (!modified_ || !current_.ok) return;
  if (auto st = saveWorkspace(workspace(), autosavePath().toStdString()); !st)
    log(tr("Autosave failed: %1").arg(q(st.error().message())));
}

bool MainWindow::settleUnsavedChanges(const QString& consequence) {
  if (!modified_ || quietErrors_ || !current_.ok) return true;
  const QString name = QFileInfo(q(current_.path)).fileName();
  QMessageBox box(QMessageBox::Warning, tr("Unsaved changes"),
                  recovered_.isEmpty()
                      ? tr("The config or the lowering of %1 changed since the workspace was saved. Save the workspace?").arg(name)
                      : tr("The session of %1 recovered from its autosave is not saved. Save it as a workspace?").arg(name),
                  QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
  box.setInformativeText(consequence);
  box.setDefaultButton(QMessageBox::Save);
  const auto answer = box.exec();
  if (answer == QMessageBox::Discard) {
    releaseRecovered(true);
    log(tr("Discarded the unsaved changes to %1").arg(name));
    setModified(false);
    return true;
  }
  if (answer != QMessageBox::Save) return false;  // Cancel, Escape
  QString path = workspacePath_;
  if (path.isEmpty()) path = askWorkspacePath();
  QString error;
  if (path.isEmpty() || !saveWorkspaceTo(path.endsWith(kWorkspaceExtension) ? path : path + kWorkspaceExtension, &error)) {
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Cannot save workspace"), error);
    return false;
  }
  return true;
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (!settleUnsavedChanges(tr("Quitting closes it."))) return e->ignore();
  QFile::remove(autosavePath());  // a clean close: nothing to recover
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("timeline/hideUnchanged", hideUnchanged_->isChecked());
  QMainWindow::closeEvent(e);
}

ExportDialog* MainWindow::exportDialog() const { return exportDialog_; }

void MainWindow::exportProgram() {
  if (!current_.ok || !current_.program) return;
  std::shared_ptr<const Program> program = current_.program;
  if (pipelineActive()) {
    const PipelineState& s = runner_->state();
    if (s.failed) {
      QString msg = tr("The lowering failed in %1; fix the config or the program before exporting.").arg(q(s.records[s.position - 1].name));
      status_->setText(msg);
      if (!quietErrors_) QMessageBox::warning(this, tr("Cannot export"), msg);
      return;
    }
    if (!s.atEnd()) {  // the emitter needs the planned program: run the remaining passes first
      log(tr("Running the remaining passes before the export"));
      exportWhenDone_ = true;
      runner_->runToEnd();
      return;
    }
    program = s.snapshotAtOrBefore(s.position);
  }
  QFileInfo in(q(current_.path));
  QString dir = in.exists() ? in.absolutePath() : QSettings().value("lastDirectory", QDir::homePath()).toString();
  QString stem = in.exists() ? in.completeBaseName() : q(current_.path).section(':', -1);
  QString suggested = dir + "/" + stem + (current_.program->format == SourceFormat::Pte ? "-exported.pte" : ".pte");
  auto* dlg = new ExportDialog(program, config_->config(), suggested, this);
  dlg->setAttribute(Qt::WA_DeleteOnClose);
  connect(dlg, &ExportDialog::exportFinished, this, [this](bool ok, const QString& message) {
    log(ok ? tr("Exported:\n%1").arg(message.trimmed()) : tr("Export failed: %1").arg(message));
  });
  exportDialog_ = dlg;
  dlg->open();
}

}  // namespace lstudio::ui
