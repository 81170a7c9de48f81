// MainWindow's menus and toolbar, and which of their actions apply now.
#include "ui/window/MainWindow.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDialog>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QTabWidget>
#include <QToolBar>
#include <QTreeWidget>

#include "engine/samples/SampleZoo.h"
#include "ui/config/ConfigEditor.h"
#include "ui/graph/FindBar.h"
#include "ui/graph/GraphView.h"
#include "ui/window/HelpPages.h"
#include "ui/window/StartPage.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {

void MainWindow::buildActions() {
  QAction* open = buildFileMenu();
  buildEditMenu();
  buildLoweringMenu();
  buildViewMenu();
  QAction* keys = buildHelpMenu();
  buildToolBar(open);
  // The keys a first session needs, read from the actions so the page follows the menus.
  startPage_->setShortcuts({open, step_, back_, runEnd_, reset_, find_, compare_, saveWs_, export_, keys});
}

QAction* MainWindow::buildFileMenu() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(QIcon::fromTheme("document-open"), tr("&Open…"), this, &MainWindow::chooseFile);
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  auto* samples = file->addMenu(tr("Open &Sample"));
  for (const SampleInfo& info : sampleList()) {
    auto* a = samples->addAction(q(info.name), this, [this, n = q(info.name)] { openSample(n); });
    a->setToolTip(q(info.description));
    for (const std::string& spec : info.variants) samples->addAction(q(spec), this, [this, s = q(spec)] { openSample(s); });
  }
  samples->setToolTipsVisible(true);
  file->addSeparator();
  saveWs_ = file->addAction(tr("&Save Workspace"), this, [this] { saveWorkspaceInteractively(workspacePath_); });
  saveWs_->setShortcut(QKeySequence::Save);
  saveWsAs_ = file->addAction(tr("Save Workspace &As…"), this, [this] { saveWorkspaceInteractively({}); });
  saveWsAs_->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  export_ = file->addAction(tr("&Export…"), this, &MainWindow::exportProgram);
  export_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  openEtdump_ = file->addAction(tr("Open E&TDump…"), this, [this] {
    QString path = QFileDialog::getOpenFileName(this, tr("Open the ETDump of a run of this program"),
                                                QSettings().value("lastDirectory").toString(),
                                                tr("ETDump (*.etdp);;All files (*)"));
    if (!path.isEmpty()) openEtdump(path);
  });
  openEtdump_->setToolTip(tr("Read an ETDump that ExecuTorch's runtime wrote while running this .pte: each "
                             "instruction's time, and its logged values against the interpreter's"));
  file->addSeparator();
  file->addAction(tr("Load &Config…"), this, [this] {
    QString path = QFileDialog::getOpenFileName(this, tr("Load config"), QSettings().value("lastDirectory").toString(),
                                                tr("Config (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !config_->loadFile(path, &error)) QMessageBox::warning(this, tr("Cannot load config"), error);
  });
  applyPrevious_ = file->addAction(tr("Apply the &Previous File's Config"), this, &MainWindow::applyPreviousConfig);
  applyPrevious_->setEnabled(false);
  applyPrevious_->setToolTip(tr("A new file starts from the default config (a .pte from the config it was made "
                                "with); this carries over the config of the file open before it, as one undoable edit"));
  file->addAction(tr("Sa&ve Config As…"), this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Save config"), QSettings().value("lastDirectory").toString(),
                                                tr("Config (*.json)"));
    QString error;
    if (!path.isEmpty() && !config_->saveFile(path, &error)) QMessageBox::warning(this, tr("Cannot save config"), error);
  });
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  return open;
}

void MainWindow::buildLoweringMenu() {
  auto* lower = menuBar()->addMenu(tr("&Lowering"));
  step_ = lower->addAction(tr("&Next Pass"), this, [this] { runner_->step(); });
  step_->setShortcut(Qt::Key_F10);
  back_ = lower->addAction(tr("&Previous Pass"), this, [this] { runner_->back(); });
  back_->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F10));
  runEnd_ = lower->addAction(tr("Run to &End"), this, [this] { runner_->runToEnd(); });
  runEnd_->setShortcut(Qt::Key_F5);
  runSelected_ = lower->addAction(tr("Run to &Selected Pass"), this, [this] {
    int row = timeline_->indexOfTopLevelItem(timeline_->currentItem());
    if (row > 0) runner_->runTo(row - 1);
  });
  runSelected_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F10));
  stop_ = lower->addAction(tr("S&top"), this, [this] { runner_->stop(); });
  stop_->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
  reset_ = lower->addAction(tr("&Reset"), this, [this] { runner_->reset(); });
  reset_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
  lower->addSeparator();
  runProgram_ = lower->addAction(tr("R&un Program"), this, [this] { runProgram(); });
  runProgram_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  runProgram_->setToolTip(tr("Run the shown snapshot in the studio's interpreter on the .pt2's own sample inputs "
                             "(iota inputs when it has none): each node's values in the inspector, against the input "
                             "program's"));
  runWithInputs_ = lower->addAction(tr("Run Program &With Inputs…"), this, [this] {
    QStringList files = QFileDialog::getOpenFileNames(this, tr("One .npy file per input (taken in name order)"),
                                                      QSettings().value("lastDirectory").toString(),
                                                      tr("NumPy arrays (*.npy);;All files (*)"));
    if (!files.isEmpty()) runProgram(files);
  });
  runWithInputs_->setToolTip(tr("Run the shown snapshot on inputs you choose: one .npy file per input, in the order of "
                                "their names (input_0.npy, input_1.npy, …)"));
  compareExpected_ = lower->addAction(tr("Compare With E&xpected Outputs…"), this, &MainWindow::chooseExpectedOutputs);
  compareExpected_->setToolTip(tr("The outputs your eager model returned, one .npy file per output (in name order): "
                                  "every run is compared with them, per output its largest |difference| and ULPs"));
  runEveryPass_ = lower->addAction(tr("Run &Every Pass"), this, &MainWindow::runEveryPass);
  runEveryPass_->setToolTip(tr("Run the program after every pass on the same inputs: the passes that changed the "
                               "outputs are marked ≠ in the timeline"));
  firstDifference_ = lower->addAction(tr("Select First &Differing Node"), this, [this] { selectFirstDifference(); });
  firstDifference_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
}

void MainWindow::buildEditMenu() {
  auto* edit = menuBar()->addMenu(tr("&Edit"));
  // Undo and Redo of the config (tagging rules included), their keys live in the whole window.
  edit->addAction(config_->undoAction());
  edit->addAction(config_->redoAction());
  edit->addSeparator();
  // Find opens the bar over the views; F3 and Shift+F3 step through its matches.
  find_ = edit->addAction(tr("&Find Node…"), this, [this] { findBar_->open(); });
  find_->setShortcut(QKeySequence::Find);
  auto* next = edit->addAction(tr("Find &Next"), this, [this] {
    if (findText_.isEmpty()) return findBar_->open();
    findBar_->show();
    findNode(findText_);
  });
  next->setShortcut(QKeySequence::FindNext);
  auto* prev = edit->addAction(tr("Find &Previous"), this, [this] {
    if (findText_.isEmpty()) return findBar_->open();
    findBar_->show();
    findNode(findText_, true);
  });
  prev->setShortcut(QKeySequence::FindPrevious);
  // After XnnpackPartitioner: step through the nodes it left out, each showing why.
  edit->addAction(tr("Find What XNNPACK Did &Not Take"), this, [this] {
    findBar_->show();
    if (!findNode(QString::fromLatin1(kNotDelegatedQuery)))
      status_->setText(tr("No node was left out by a partitioner here: run to XnnpackPartitioner with a "
                          "partitioner in the config (Config › Partitioner)"));
    updateFindCount();
  });
}

void MainWindow::buildViewMenu() {
  auto* view = menuBar()->addMenu(tr("&View"));
  auto* fit = view->addAction(tr("&Fit Graph"), this, [this] { graph_->fitToView(); });
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  auto* zoomIn = view->addAction(tr("Zoom &In"), this, [this] { graph_->zoomBy(1.25); });
  zoomIn->setShortcut(QKeySequence::ZoomIn);
  auto* zoomOut = view->addAction(tr("Zoom &Out"), this, [this] { graph_->zoomBy(0.8); });
  zoomOut->setShortcut(QKeySequence::ZoomOut);
  compare_ = view->addAction(tr("&Compare with Previous Pass"), this, [this](bool on) { setCompare(on); });
  compare_->setCheckable(true);
  compare_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
  // After Lowering > Run Program: a stripe on each box from the values the run gave it.
  auto* colouring = view->addMenu(tr("Colour by &Values"));
  auto* group = new QActionGroup(colouring);
  for (const auto& [text, binding] : {std::pair{tr("&None"), ValueColouring::None},
                            std::pair{tr("&Magnitude (blue small … red large, magenta NaN or Inf)"), ValueColouring::Magnitude},
                            std::pair{tr("&Difference from the Reference (green equal … red far)"), ValueColouring::Difference},
                            std::pair{tr("&Time in the ETDump (blue quick … red slow)"), ValueColouring::Time},
                            std::pair{tr("&Gap to the ETDump's Logged Values (green equal … red far)"), ValueColouring::Gap}}) {
    const ValueColouring mode = binding;  // a lambda cannot capture a structured binding in clang 14
    QAction* a = colouring->addAction(text, this, [this, mode] { setValueColouring(mode); });
    a->setCheckable(true);
    a->setChecked(mode == valueColouring_);
    group->addAction(a);
    colouringActions_[mode] = a;
  }
  compareSizes_ = view->addAction(tr("Compare &Sizes With…"), this, &MainWindow::compareSizes);
  compareSizes_->setToolTip(tr("Where another .pte's bytes go, part by part, against this one's"));
  view->addSeparator();
  // One entry per view tab, under the tab's own name (Ctrl+1 the first).
  for (int i = 0; i < views_->count() && i < 9; ++i) {
    auto* a = view->addAction(views_->tabText(i), this, [this, i] { views_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(Qt::CTRL | (Qt::Key_1 + i)));
  }
}

QAction* MainWindow::buildHelpMenu() {
  auto* help = menuBar()->addMenu(tr("&Help"));
  // Non-modal pages; a second request raises the one already open.
  auto showPage = [this](const char* name, const std::function<QDialog*()>& make) {
    QDialog* d = findChild<QDialog*>(name);
    if (!d) d = make();
    d->show();
    d->raise();
    d->activateWindow();
  };
  auto* keys = help->addAction(tr("&Keyboard Shortcuts"), this, [this, showPage] {
    showPage("shortcutsDialog", [this] {
      // Made from the actions when asked, so the list is what the keys do now.
      return shortcutsDialog(this, menuShortcuts(menuBar()) +
                                       actionShortcuts(tr("Config"), {config_->undoAction(), config_->redoAction()}) +
                                       canvasShortcuts());
    });
  });
  keys->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
  auto* guide = help->addAction(tr("How to &Read the Graph and the Plan"), this, [this, showPage] {
    showPage("readingGuideDialog", [this] { return readingGuideDialog(this); });
  });
  guide->setShortcut(QKeySequence::HelpContents);
  // The README's sections, read from the file when asked and shown here: no browser or network needed.
  auto* readme = help->addMenu(tr("README"));
  for (const QString& heading : readmeSections())
    readme->addAction(heading, this, [this, heading] {
      delete findChild<QDialog*>("readmeDialog");  // one README page at a time, the one asked for
      QDialog* d = readmeDialog(this, findReadme(), heading);
      d->show();
      d->raise();
    });
  help->addSeparator();
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About Lowering Studio"),
                       tr("Lowering Studio %1\nSee and steer how a PyTorch program becomes an ExecuTorch program.")
                           .arg(QApplication::applicationVersion()));
  });
  return keys;
}

void MainWindow::buildToolBar(QAction* open) {
  auto* tb = addToolBar(tr("Main"));
  tb->setObjectName("mainToolbar");
  tb->setToolButtonStyle(Qt::ToolButtonTextOnly);
  tb->addAction(open);
  tb->addSeparator();
  for (QAction* a : {reset_, back_, step_, runSelected_, runEnd_, stop_}) {
    a->setToolTip(a->text().remove('&') + " (" + a->shortcut().toString(QKeySequence::NativeText) + ")");
    tb->addAction(a);
  }
}

void MainWindow::updateActions() {
  const PipelineState& s = runner_->state();
  bool on = pipelineActive();
  bool busy = runner_->busy();
  step_->setEnabled(on && !s.atEnd() && !s.failed);
  runEnd_->setEnabled(on && !s.atEnd() && !s.failed);
  runSelected_->setEnabled(on);
  back_->setEnabled(on && s.position > 0);
  reset_->setEnabled(on && s.position > 0);
  stop_->setEnabled(busy);
  runProgram_->setEnabled(on && shown_ && !busy);
  runWithInputs_->setEnabled(on && shown_ && !busy);
  compareExpected_->setEnabled(on && shown_ && !busy);
  runEveryPass_->setEnabled(on && shown_ && !busy && runner_->state().position > 0);
  auto last = programRun_->result();
  firstDifference_->setEnabled(last && last->firstDifference.has_value());
  // Nothing to save or export before a program is open (a .ptd alone has no program to export).
  saveWs_->setEnabled(current_.ok);
  saveWsAs_->setEnabled(current_.ok);
  export_->setEnabled(current_.ok && current_.program);
  openEtdump_->setEnabled(current_.ok && current_.program && runner_->state().input &&
                          runner_->state().input->format == SourceFormat::Pte && !programRun_->running());
  compareSizes_->setEnabled(current_.ok && !current_.sizes.empty());
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& f : recent) recentMenu_->addAction(f, this, [this, f] { openFile(f); });
  recentMenu_->setEnabled(!recent.isEmpty());
  startPage_->setRecentFiles(recent);
}

}  // namespace lstudio::ui
