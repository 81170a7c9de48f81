#include "ui/MainWindow.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDateTime>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTextBlock>
#include <QTimer>
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QToolBar>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/support/FormatUtil.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Delower.h"
#include "engine/lowering/GraphText.h"
#include "ui/Background.h"
#include "ui/ConfigEditor.h"
#include "ui/ConstantTable.h"
#include "ui/ExportDialog.h"
#include "ui/GraphView.h"
#include "ui/Inspector.h"
#include "ui/MemoryPlanView.h"

namespace lstudio::ui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QTreeWidgetItem* add(QTreeWidgetItem* parent, const QString& key, const QString& value = {}) {
  auto* it = new QTreeWidgetItem(parent, {key, value});
  return it;
}

QIcon dot(const QColor& c, bool hollow = false) {
  QPixmap pm(12, 12);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(c.darker(130), 1.2));
  p.setBrush(hollow ? QBrush(Qt::NoBrush) : QBrush(c));
  p.drawEllipse(QRectF(1.5, 1.5, 9, 9));
  return QIcon(pm);
}

QIcon stateIcon(PassRecord::State s) {
  switch (s) {
    case PassRecord::State::NotRun: return dot(QColor(170, 170, 170), true);
    case PassRecord::State::Skipped: return dot(QColor(200, 200, 200));
    case PassRecord::State::Unchanged: return dot(QColor(120, 144, 156));
    case PassRecord::State::Changed: return dot(QColor(33, 150, 243));
    case PassRecord::State::Failed: return dot(QColor(229, 57, 53));
  }
  return {};
}

QString stateText(PassRecord::State s) {
  switch (s) {
    case PassRecord::State::NotRun: return QObject::tr("not run");
    case PassRecord::State::Skipped: return QObject::tr("skipped by config");
    case PassRecord::State::Unchanged: return QObject::tr("unchanged");
    case PassRecord::State::Changed: return QObject::tr("changed");
    case PassRecord::State::Failed: return QObject::tr("failed");
  }
  return {};
}

// Marks of the text view: added nodes green, modified amber, selection blue.
const QColor kAdded(200, 240, 200), kModified(255, 236, 179), kSelected(187, 222, 251);

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Lowering Studio"));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  runner_ = new PipelineRunner(this);

  // Centre: a tab per method above the views of the shown program.
  auto* centre = new QWidget;
  auto* centreLayout = new QVBoxLayout(centre);
  centreLayout->setContentsMargins(0, 0, 0, 0);
  centreLayout->setSpacing(0);
  methodTabs_ = new QTabBar;
  methodTabs_->setDocumentMode(true);
  methodTabs_->setExpanding(false);
  centreLayout->addWidget(methodTabs_);
  views_ = new QTabWidget;
  views_->setDocumentMode(true);
  views_->setTabPosition(QTabWidget::South);
  centreLayout->addWidget(views_, 1);
  setCentralWidget(centre);

  text_ = new QPlainTextEdit;
  text_->setObjectName("graphText");
  text_->setReadOnly(true);
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setPlaceholderText(tr("File > Open (Ctrl+O) a .pt2 or .pte program, or drop one here."));
  graph_ = new GraphView;
  graph_->setObjectName("graphView");
  before_ = new GraphView;
  before_->setObjectName("beforeView");
  before_->hide();
  auto* graphSplit = new QSplitter;
  graphSplit->addWidget(before_);
  graphSplit->addWidget(graph_);
  views_->addTab(graphSplit, tr("Graph"));
  plan_ = new MemoryPlanView;
  plan_->setObjectName("planView");
  views_->addTab(plan_, tr("Memory Plan"));
  views_->addTab(text_, tr("Text"));

  tree_ = new QTreeWidget;
  tree_->setHeaderLabels({tr("Item"), tr("Value")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  tree_->setAlternatingRowColors(true);
  report_ = new QPlainTextEdit;
  report_->setReadOnly(true);
  report_->setLineWrapMode(QPlainTextEdit::NoWrap);
  report_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* split = new QSplitter;
  split->addWidget(tree_);
  split->addWidget(report_);
  views_->addTab(split, tr("Summary"));

  // Left: the pass timeline.
  auto* timelineBox = new QWidget;
  auto* tl = new QVBoxLayout(timelineBox);
  tl->setContentsMargins(2, 2, 2, 2);
  timeline_ = new QTreeWidget;
  timeline_->setObjectName("timeline");
  timeline_->setHeaderLabels({tr("Pass"), tr("ms")});
  timeline_->setRootIsDecorated(false);
  timeline_->setUniformRowHeights(true);
  timeline_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  timeline_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  timeline_->header()->setStretchLastSection(false);
  tl->addWidget(timeline_, 1);
  hideUnchanged_ = new QCheckBox(tr("Hide passes that changed nothing"));
  tl->addWidget(hideUnchanged_);
  auto* timelineDock = new QDockWidget(tr("Passes"), this);
  timelineDock->setObjectName("passesDock");
  timelineDock->setWidget(timelineBox);
  addDockWidget(Qt::LeftDockWidgetArea, timelineDock);

  inspector_ = new Inspector;
  inspector_->setObjectName("inspector");
  auto* inspectorDock = new QDockWidget(tr("Inspector"), this);
  inspectorDock->setObjectName("inspectorDock");
  inspectorDock->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspectorDock);

  config_ = new ConfigEditor;
  config_->setObjectName("configEditor");
  auto* configDock = new QDockWidget(tr("Config"), this);
  configDock->setObjectName("configDock");
  configDock->setWidget(config_);
  addDockWidget(Qt::RightDockWidgetArea, configDock);
  constants_ = new ConstantTable;
  constants_->setObjectName("constantTable");
  constants_->setMinimumSize(200, 80);  // the dock may be small; the table scrolls
  auto* constantsDock = new QDockWidget(tr("Constants"), this);
  constantsDock->setObjectName("constantsDock");
  constantsDock->setWidget(constants_);
  addDockWidget(Qt::BottomDockWidgetArea, constantsDock);

  log_ = new QPlainTextEdit;
  log_->setObjectName("log");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* logDock = new QDockWidget(tr("Log"), this);
  logDock->setObjectName("logDock");
  logDock->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  tabifyDockWidget(inspectorDock, configDock);
  inspectorDock->raise();
  tabifyDockWidget(logDock, constantsDock);
  logDock->raise();

  status_ = new QLabel(tr("Ready"));
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);  // indeterminate while a worker reads or lowers
  busy_->setMaximumWidth(160);
  busy_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(busy_);
  cancelLoad_ = new QPushButton(tr("Cancel"));
  cancelLoad_->setToolTip(tr("Stop loading (Esc)"));
  cancelLoad_->setFlat(true);
  cancelLoad_->hide();
  statusBar()->addPermanentWidget(cancelLoad_);
  connect(cancelLoad_, &QPushButton::clicked, this, &MainWindow::cancelLoad);
  auto* esc = new QAction(this);
  esc->setShortcut(Qt::Key_Escape);
  esc->setShortcutContext(Qt::WindowShortcut);
  connect(esc, &QAction::triggered, this, &MainWindow::cancelLoad);
  addAction(esc);

  buildActions();
  auto* view = menuBar()->actions().size() > 2 ? menuBar()->actions()[2]->menu() : nullptr;
  if (view) {
    view->addSeparator();
    view->addAction(timelineDock->toggleViewAction());
    view->addAction(inspectorDock->toggleViewAction());
    view->addAction(logDock->toggleViewAction());
    view->addAction(configDock->toggleViewAction());
    view->addAction(constantsDock->toggleViewAction());
  }

  connect(&watcher_, &QFutureWatcher<LoadedProgram>::finished, this, &MainWindow::onLoaded);
  connect(runner_, &PipelineRunner::stateChanged, this, &MainWindow::onPipelineState);
  connect(runner_, &PipelineRunner::busyChanged, this, [this](bool b) {
    busy_->setVisible(b || watcher_.isRunning());
    if (reportArenas_ && !b) reportArenaChange();
    if (!b && pending_) restorePending();
    if (!b && exportWhenDone_) {
      exportWhenDone_ = false;
      if (runner_->state().atEnd() && !runner_->state().failed) exportProgram();
    }
    updateActions();
  });
  connect(runner_, &PipelineRunner::passFinished, this, [this](int i, const PassRecord& r) {
    log(QString("[%1] %2: %3 (%4 ms)").arg(i + 1).arg(q(r.name), stateText(r.state)).arg(r.milliseconds, 0, 'f', 2));
    for (const Diagnostic& d : r.diagnostics)
      log(QString("    %1%2").arg(d.node >= 0 ? QString("node %1: ").arg(d.node) : QString(), q(d.message)));
  });
  connect(timeline_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* it) {
    int row = timeline_->indexOfTopLevelItem(it);
    const PipelineState& s = runner_->state();
    if (row <= static_cast<int>(s.position)) showSnapshot(row);
  });
  connect(timeline_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* it) {
    int row = timeline_->indexOfTopLevelItem(it);
    if (row > 0 && pipelineActive()) runner_->runTo(row - 1);
  });
  connect(hideUnchanged_, &QCheckBox::toggled, this, &MainWindow::refreshTimeline);
  connect(views_, &QTabWidget::currentChanged, this, [this] {
    if (views_->currentWidget() != text_ || !textStale_) return;
    refreshText();
    if (selectedNode_ >= 0) {
      QSignalBlocker block(text_);
      text_->setTextCursor(QTextCursor(text_->document()->findBlockByNumber(selectedNode_ + 1)));
      text_->centerCursor();
    }
  });
  connect(methodTabs_, &QTabBar::currentChanged, this, [this](int i) {
    if (i < 0 || i == method_) return;
    method_ = i;
    selectedNode_ = -1;
    refreshShown();
  });
  connect(text_, &QPlainTextEdit::cursorPositionChanged, this, [this] {
    int line = text_->textCursor().blockNumber();
    if (!shown_ || line < 1) return;
    int node = line - 1;
    if (node < static_cast<int>(shown_->methods[method_].nodes.size()) && node != selectedNode_) selectNode(node);
  });
  connect(inspector_, &Inspector::nodeActivated, this, &MainWindow::selectNode);
  connect(graph_, &GraphView::nodeSelected, this, &MainWindow::selectNode);
  connect(graph_, &GraphView::valueSelected, this, &MainWindow::selectValue);
  connect(before_, &GraphView::nodeSelected, this, [this](int node) {
    // Selecting in the earlier snapshot selects the same node (by name) in the shown one.
    const PipelineState& s = runner_->state();
    auto before = s.snapshotAtOrBefore(std::max(snapshot_ - 1, 0));
    if (before && node >= 0 && node < static_cast<int>(before->methods[method_].nodes.size()))
      selectNodeByName(q(before->methods[method_].nodes[node].name));
  });
  connect(graph_, &GraphView::layoutFinished, this, [this](qint64 ms) { log(tr("graph laid out in %1 ms").arg(ms)); });
  connect(config_, &ConfigEditor::configChanged, this, &MainWindow::applyConfig);
  // Tagging rules are part of the config: their edits join its undo history.
  connect(constants_, &ConstantTable::configChanged, this,
          [this](const ExecutorchBackendConfig& c) { config_->edit(c, tr("Change tagging rules")); });
  connect(constants_, &ConstantTable::constantSelected, this, &MainWindow::selectValue);
  connect(plan_, &MemoryPlanView::nodeSelected, this, [this](int node) {
    if (node >= 0) selectNode(node);
  });
  connect(plan_, &MemoryPlanView::valueSelected, this, [this](int value) {
    if (plan_->selectedValue() == value && selectedNode_ < 0) selectValue(value);
  });
  connect(inspector_, &Inspector::valueActivated, this, &MainWindow::selectValue);

  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  hideUnchanged_->setChecked(s.value("timeline/hideUnchanged", false).toBool());
  if (!s.contains("window/geometry")) resize(1400, 860);
  if (!s.contains("window/state"))  // first start: most of the window for the graph, once shown
    QTimer::singleShot(0, this, [this, timelineDock, inspectorDock, logDock] {
      resizeDocks({timelineDock, inspectorDock}, {250, 360}, Qt::Horizontal);
      resizeDocks({logDock}, {height() / 6}, Qt::Vertical);
    });
  updateRecentMenu();
  updateActions();
  auto* autosaveTimer = new QTimer(this);
  connect(autosaveTimer, &QTimer::timeout, this, &MainWindow::autosave);
  autosaveTimer->start(30'000);
}

MainWindow::~MainWindow() { watcher_.waitForFinished(); }

void MainWindow::buildActions() {
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
  auto* saveWs = file->addAction(tr("&Save Workspace"), this, [this] {
    QString path = workspacePath_;
    if (path.isEmpty())
      path = QFileDialog::getSaveFileName(this, tr("Save workspace"), QSettings().value("lastDirectory").toString(),
                                          tr("Lowering Studio workspace (*%1)").arg(kWorkspaceExtension));
    if (path.isEmpty()) return;
    if (!path.endsWith(kWorkspaceExtension)) path += kWorkspaceExtension;
    QString error;
    if (!saveWorkspaceTo(path, &error)) QMessageBox::warning(this, tr("Cannot save workspace"), error);
  });
  saveWs->setShortcut(QKeySequence::Save);
  auto* saveWsAs = file->addAction(tr("Save Workspace &As…"), this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Save workspace"), QSettings().value("lastDirectory").toString(),
                                                tr("Lowering Studio workspace (*%1)").arg(kWorkspaceExtension));
    if (path.isEmpty()) return;
    if (!path.endsWith(kWorkspaceExtension)) path += kWorkspaceExtension;
    QString error;
    if (!saveWorkspaceTo(path, &error)) QMessageBox::warning(this, tr("Cannot save workspace"), error);
  });
  saveWsAs->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  auto* exportAct = file->addAction(tr("&Export…"), this, &MainWindow::exportProgram);
  exportAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  file->addSeparator();
  file->addAction(tr("Load &Config…"), this, [this] {
    QString path = QFileDialog::getOpenFileName(this, tr("Load config"), QSettings().value("lastDirectory").toString(),
                                                tr("Config (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !config_->loadFile(path, &error)) QMessageBox::warning(this, tr("Cannot load config"), error);
  });
  file->addAction(tr("Sa&ve Config As…"), this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Save config"), QSettings().value("lastDirectory").toString(),
                                                tr("Config (*.json)"));
    QString error;
    if (!path.isEmpty() && !config_->saveFile(path, &error)) QMessageBox::warning(this, tr("Cannot save config"), error);
  });
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

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

  auto* view = menuBar()->addMenu(tr("&View"));
  auto* findAct = view->addAction(tr("&Find Node…"), this, [this] {
    bool ok = false;
    QString t = QInputDialog::getText(this, tr("Find node"), tr("Node name, operator or module path:"), QLineEdit::Normal,
                                      findText_, &ok);
    if (ok && !t.isEmpty()) findNode(t);
  });
  findAct->setShortcut(QKeySequence::Find);
  auto* next = view->addAction(tr("Find &Next"), this, [this] { findNode(findText_); });
  next->setShortcut(QKeySequence::FindNext);
  auto* prev = view->addAction(tr("Find &Previous"), this, [this] { findNode(findText_, true); });
  prev->setShortcut(QKeySequence::FindPrevious);
  auto* fit = view->addAction(tr("&Fit Graph"), this, [this] { graph_->fitToView(); });
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  auto* zoomIn = view->addAction(tr("Zoom &In"), this, [this] { graph_->zoomBy(1.25); });
  zoomIn->setShortcut(QKeySequence::ZoomIn);
  auto* zoomOut = view->addAction(tr("Zoom &Out"), this, [this] { graph_->zoomBy(0.8); });
  zoomOut->setShortcut(QKeySequence::ZoomOut);
  compare_ = view->addAction(tr("&Compare with Previous Pass"), this, [this](bool on) { setCompare(on); });
  compare_->setCheckable(true);
  compare_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
  view->addSeparator();
  for (int i = 0; i < 5; ++i) {
    auto* a = view->addAction(tr("View %1").arg(i + 1), this, [this, i] {
      if (i < views_->count()) views_->setCurrentIndex(i);
    });
    a->setShortcut(QKeySequence(Qt::CTRL | (Qt::Key_1 + i)));
  }

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About Lowering Studio"),
                       tr("Lowering Studio %1\nSee and steer how a PyTorch program becomes an ExecuTorch program.")
                           .arg(QApplication::applicationVersion()));
  });

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
  return true;
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
    openSample(q(input.substr(7)));
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
  setModified(false);
  log(tr("Workspace restored"));
}

void MainWindow::setModified(bool m) {
  modified_ = m;
  setWindowModified(m);
  if (current_.ok)
    setWindowTitle(tr("%1[*] — Lowering Studio").arg(QFileInfo(q(current_.path)).fileName()));
}

QString MainWindow::autosavePath() {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
  QDir().mkpath(dir);
  return dir + "/autosave" + kWorkspaceExtension;
}

void MainWindow::autosave() {
  if (!modified_ || !current_.ok) return;
  if (auto st = saveWorkspace(workspace(), autosavePath().toStdString()); !st)
    log(tr("Autosave failed: %1").arg(q(st.error().message())));
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

void MainWindow::reportArenaChange() {
  // What-if: the arena sizes before and after a config change.
  reportArenas_ = false;
  const PipelineState& s = runner_->state();
  auto last = s.snapshotAtOrBefore(s.position);
  std::vector<int64_t> now = last && !last->methods.empty() ? last->methods[0].nonConstBufferSizes : std::vector<int64_t>{};
  QStringList parts;
  for (size_t i = 1; i < std::max(now.size(), arenasBeforeConfig_.size()); ++i) {
    int64_t was = i < arenasBeforeConfig_.size() ? arenasBeforeConfig_[i] : 0, is = i < now.size() ? now[i] : 0;
    parts << tr("mem_id %1: %2 → %3").arg(i).arg(q(formatBytes(uint64_t(was))), q(formatBytes(uint64_t(is))));
  }
  if (parts.isEmpty()) return;
  log(tr("Arena after the config change: %1").arg(parts.join(", ")));
  status_->setText(tr("Arena: %1").arg(parts.join(", ")));
}

bool MainWindow::pipelineActive() const { return runner_->hasPipeline(); }

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
}

bool MainWindow::idle() const {
  return !watcher_.isRunning() && !runner_->busy() && (!planShown_ || plan_->isPlanReady()) &&
         !graph_->layoutPending() && !before_->layoutPending();
}

void MainWindow::setCompare(bool on) {
  if (compare_->isChecked() != on) compare_->setChecked(on);
  before_->setVisible(on);
  graphShown_ = nullptr;  // re-show both sides
  refreshShown();
}

void MainWindow::applyConfig(const ExecutorchBackendConfig& c) {
  if (sender() != config_) {
    QSignalBlocker b(config_);
    config_->setConfig(c);
  }
  if (sender() != constants_) {
    QSignalBlocker b(constants_);
    constants_->setConfig(c);
  }
  log(tr("Config changed; re-running %n pass(es)", nullptr, int(runner_->state().position)));
  setModified(true);
  if (!runner_->hasPipeline()) return;
  if (auto cur = runner_->state().snapshotAtOrBefore(runner_->state().position); cur && !cur->methods.empty())
    arenasBeforeConfig_ = cur->methods[0].nonConstBufferSizes;
  reportArenas_ = true;
  runner_->setConfig(c);
}

void MainWindow::chooseFile() {
  QSettings s;
  QString dir = s.value("lastDirectory").toString();
  QString path = QFileDialog::getOpenFileName(this, tr("Open program"), dir,
                                              tr("Programs, data and workspaces (*.pte *.bpte *.pt2 *.ptd *.bin *.lstudio);;ExecuTorch programs (*.pte *.bpte);;torch.export archives (*.pt2);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::openFile(const QString& path) {
  if (path.endsWith(kWorkspaceExtension)) {
    QString error;
    if (!openWorkspace(path, &error)) {
      log(tr("Error: %1").arg(error));
      if (!quietErrors_) QMessageBox::critical(this, tr("Cannot open workspace"), error);
      emit loadFinished(false, error);
    }
    return;
  }
  if (path.startsWith("sample:")) return openSample(path.mid(7));
  QSettings s;
  s.setValue("lastDirectory", QFileInfo(path).absolutePath());
  std::string p = path.toStdString();
  status_->setText(tr("Loading %1…").arg(QFileInfo(path).fileName()));
  log(tr("Opening %1").arg(path));
  startLoad(QtConcurrent::run(inBackground([p] { return loadProgram(p, dataFilesBeside(p)); })));
}

void MainWindow::openSample(const QString& spec) {
  std::string n = spec.toStdString();
  status_->setText(tr("Building sample %1…").arg(spec));
  log(tr("Building sample %1").arg(spec));
  startLoad(QtConcurrent::run(inBackground([n] {
    LoadedProgram r;
    r.path = "sample:" + n;
    auto p = buildSampleSpec(n);
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
    emit loadFinished(false, q(r.error));
    return;
  }
  current_ = std::move(r);
  showSummary(current_);
  log(tr("Loaded %1").arg(q(current_.path)));
  QSettings s;
  QStringList recent = s.value("recentFiles").toStringList();
  recent.removeAll(q(current_.path));
  if (QFileInfo::exists(q(current_.path))) recent.prepend(q(current_.path));
  while (recent.size() > 10) recent.removeLast();
  s.setValue("recentFiles", recent);
  updateRecentMenu();

  method_ = 0;
  snapshot_ = 0;
  selectedNode_ = -1;
  shownPosition_ = -1;
  if (current_.program && !current_.program->methods.empty()) {
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
    runner_->start(current_.program, config_->config());
    if (pending_ && !pending_->runTo.empty()) {
      if (!runToPass(q(pending_->runTo))) pending_->runTo.clear();
    }
  } else {
    runner_->clear();
    shown_ = current_.program;
    refreshTimeline();
    refreshShown();
  }
  if (!current_.program) views_->setCurrentIndex(views_->count() - 1);
  updateActions();
  if (pending_ && !runner_->busy()) restorePending();
  if (!pending_) setModified(false);
  emit loadFinished(true, {});
}

void MainWindow::onPipelineState() {
  const PipelineState& s = runner_->state();
  if (!s.input) return;
  // Running or undoing passes shows the newest snapshot; a state with the
  // same position (a re-delivery) keeps what the user chose on the timeline.
  if (static_cast<int>(s.position) != shownPosition_) {
    if (shownPosition_ >= 0 && !pending_) setModified(true);
    shownPosition_ = static_cast<int>(s.position);
    snapshot_ = static_cast<int>(s.position);
    if (s.failed) {
      // Show the program the failing pass choked on, with the node selected.
      snapshot_ = static_cast<int>(s.position) - 1;
      const PassRecord& r = s.records[s.position - 1];
      for (const Diagnostic& d : r.diagnostics)
        if (d.node >= 0) selectedNode_ = d.node;
      status_->setText(tr("%1 failed: %2").arg(q(r.name), r.diagnostics.empty() ? QString() : q(r.diagnostics.front().message)));
    }
  }
  snapshot_ = std::min(snapshot_, static_cast<int>(s.position));
  shown_ = s.snapshotAtOrBefore(snapshot_);
  refreshTimeline();
  refreshShown();
  updateActions();
}

void MainWindow::showSnapshot(int row) {
  const PipelineState& s = runner_->state();
  if (!s.input || row < 0 || row > static_cast<int>(s.position)) return;
  snapshot_ = row;
  shown_ = s.snapshotAtOrBefore(row);
  refreshTimeline();
  refreshShown();
}

void MainWindow::refreshTimeline() {
  QSignalBlocker block(timeline_);
  timeline_->clear();
  const PipelineState& s = runner_->state();
  if (!s.input) {
    if (current_.program) {
      auto* it = new QTreeWidgetItem(timeline_, {tr("Stored program (.pte)"), QString()});
      it->setIcon(0, dot(QColor(76, 175, 80)));
      it->setToolTip(0, tr("An ExecuTorch program as stored: its graph and memory plan are shown as they are."));
      timeline_->setCurrentItem(it);
    }
    return;
  }
  bool pte = current_.program && current_.program->format == SourceFormat::Pte;
  auto* input = new QTreeWidgetItem(timeline_, {pte ? tr("ExecuTorch program (.pte)") : tr("Exported program"), QString()});
  input->setIcon(0, dot(QColor(76, 175, 80)));
  input->setToolTip(0, tr("The program as imported, before any pass"));
  double total = 0;
  for (size_t i = 0; i < s.records.size(); ++i) {
    const PassRecord& r = s.records[i];
    auto* it = new QTreeWidgetItem(timeline_, {q(r.name), r.state == PassRecord::State::NotRun || r.state == PassRecord::State::Skipped
                                                             ? QString()
                                                             : QString::number(r.milliseconds, 'f', r.milliseconds < 10 ? 2 : 0)});
    it->setIcon(0, stateIcon(r.state));
    it->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
    QString tip = "<b>" + q(r.name).toHtmlEscaped() + "</b><br>" + q(r.description).toHtmlEscaped() + "<br><i>" + stateText(r.state) + "</i>";
    for (const Diagnostic& d : r.diagnostics) tip += "<br>" + q(d.message).toHtmlEscaped();
    it->setToolTip(0, tip);
    if (r.state == PassRecord::State::NotRun) it->setForeground(0, QColor(140, 140, 140));
    if (r.state == PassRecord::State::Failed) it->setForeground(0, QColor(198, 40, 40));
    bool quiet = r.state == PassRecord::State::Unchanged || r.state == PassRecord::State::Skipped;
    it->setHidden(hideUnchanged_->isChecked() && quiet);
    total += r.milliseconds;
  }
  if (QTreeWidgetItem* cur = timeline_->topLevelItem(snapshot_)) {
    timeline_->setCurrentItem(cur);
    QFont f = cur->font(0);
    f.setBold(true);
    cur->setFont(0, f);
  }
  timeline_->headerItem()->setText(1, QString("%1 ms").arg(total, 0, 'f', 1));
}

void MainWindow::refreshShown() {
  {
    QSignalBlocker block(methodTabs_);
    while (methodTabs_->count() > 0) methodTabs_->removeTab(0);
    if (shown_)
      for (const Method& m : shown_->methods) methodTabs_->addTab(q(m.name));
    if (method_ >= methodTabs_->count()) method_ = 0;
    methodTabs_->setCurrentIndex(method_);
    methodTabs_->setVisible(methodTabs_->count() > 1);
  }
  diff_ = MethodDiff{};
  const PipelineState& s = runner_->state();
  if (shown_ && s.input && snapshot_ > 0) {
    size_t k = static_cast<size_t>(snapshot_) - 1;
    if (k < s.diffs.size() && s.diffs[k] && static_cast<size_t>(method_) < s.diffs[k]->size()) {
      diff_ = (*s.diffs[k])[method_];  // computed by the runner's worker
    } else {
      auto before = s.snapshotAtOrBefore(snapshot_ - 1);
      if (before && before != shown_ && method_ < static_cast<int>(before->methods.size()))
        diff_ = diffMethods(before->methods[method_], shown_->methods[method_]);
    }
  }
  if (shown_ && selectedNode_ >= static_cast<int>(shown_->methods[method_].nodes.size())) selectedNode_ = -1;
  refreshText();
  if (shown_ != graphShown_ || method_ != graphMethod_ || snapshot_ != graphSnapshot_) {
    graphShown_ = shown_;
    graphMethod_ = method_;
    graphSnapshot_ = snapshot_;
    if (shown_) {
      std::vector<NodeMark> marks(diff_.after.size(), NodeMark::None);
      for (size_t i = 0; i < marks.size(); ++i)
        marks[i] = diff_.after[i] == MethodDiff::Mark::Added ? NodeMark::Added
                   : diff_.after[i] == MethodDiff::Mark::Modified ? NodeMark::Modified : NodeMark::None;
      graph_->setGraph(shown_, method_, std::move(marks));
      if (compare_->isChecked()) {
        auto before = s.input ? s.snapshotAtOrBefore(std::max(snapshot_ - 1, 0)) : nullptr;
        if (before && before != shown_) before_->setGraph(before, method_);
        else before_->clear();
      }
    } else {
      graph_->clear();
      before_->clear();
    }
  }
  if (shown_ && current_.program && shown_->methods.size() > static_cast<size_t>(method_) &&
      (constantsShown_ != (s.input ? s.input : shown_))) {
    // Constants are those of the program as opened; tagging applies to it.
    constantsShown_ = s.input ? s.input : shown_;
    constants_->setProgram(constantsShown_, method_, runner_->state().input ? runner_->state().config : config_->config());
  }
  if (shown_ != planShown_ || method_ != planMethod_) {
    planShown_ = shown_;
    planMethod_ = method_;
    if (shown_) plan_->setPlan(shown_, method_);
    else plan_->clear();
  }
  if (selectedNode_ >= 0) inspector_->showNode(shown_, method_, selectedNode_);
  else if (shown_ && snapshot_ > 0 && s.input && snapshot_ <= static_cast<int>(s.records.size())) {
    const PassRecord& r = s.records[snapshot_ - 1];
    QString h = "<h3>" + q(r.name).toHtmlEscaped() + "</h3><p>" + q(r.description).toHtmlEscaped() + "</p><p>" + stateText(r.state);
    if (r.state != PassRecord::State::NotRun && r.state != PassRecord::State::Skipped)
      h += QString(" in %1 ms").arg(r.milliseconds, 0, 'f', 2);
    h += "</p>";
    if (!diff_.empty())
      h += tr("<p>%1 nodes added, %2 modified, %3 removed</p>").arg(diff_.added).arg(diff_.modified).arg(diff_.removed.size());
    inspector_->showMessage(h);
  }
  emit shownChanged();
}

void MainWindow::refreshText() {
  // Rebuilding 3,600 lines costs tens of milliseconds: only for the visible tab.
  if (views_->currentWidget() != text_) {
    textStale_ = true;
    return;
  }
  textStale_ = false;
  if (!shown_ || shown_->methods.empty()) {
    text_->clear();
    return;
  }
  const Method& m = shown_->methods[method_];
  QString t = q(graphText(m));
  if (!diff_.removed.empty()) {
    const PipelineState& s = runner_->state();
    auto before = s.snapshotAtOrBefore(snapshot_ - 1);
    t += tr("removed by this pass:\n");
    for (int j : diff_.removed) t += "- " + q(nodeLine(before->methods[method_], j)) + "\n";
  }
  QSignalBlocker block(text_);
  text_->setExtraSelections({});  // else every old highlight's cursor moves on each inserted line
  text_->setPlainText(t);
  highlightText();
}

void MainWindow::highlightText() {
  if (views_->currentWidget() != text_) return;
  QList<QTextEdit::ExtraSelection> marks;
  auto mark = [&](int line, const QColor& c) {
    QTextEdit::ExtraSelection sel;
    sel.cursor = QTextCursor(text_->document()->findBlockByNumber(line));
    sel.format.setBackground(c);
    sel.format.setProperty(QTextFormat::FullWidthSelection, true);
    marks << sel;
  };
  for (size_t i = 0; i < diff_.after.size(); ++i) {
    if (diff_.after[i] == MethodDiff::Mark::Added) mark(static_cast<int>(i) + 1, kAdded);
    if (diff_.after[i] == MethodDiff::Mark::Modified) mark(static_cast<int>(i) + 1, kModified);
  }
  if (selectedNode_ >= 0) mark(selectedNode_ + 1, kSelected);
  text_->setExtraSelections(marks);
}

void MainWindow::selectNode(int index) {
  if (!shown_ || index < 0 || index >= static_cast<int>(shown_->methods[method_].nodes.size())) return;
  selectedNode_ = index;
  inspector_->showNode(shown_, method_, index);
  if (sender() != plan_) plan_->selectNode(index);
  if (sender() != graph_) graph_->selectNode(index);
  if (compare_->isChecked() && sender() != before_) before_->selectNodeByName(q(shown_->methods[method_].nodes[index].name));
  if (views_->currentWidget() == text_) {
    QSignalBlocker block(text_);
    QTextCursor c(text_->document()->findBlockByNumber(index + 1));
    text_->setTextCursor(c);
    text_->centerCursor();
  }
  highlightText();
  emit shownChanged();
}

void MainWindow::selectValue(int value) {
  if (!shown_ || value < 0) return;
  const Method& m = shown_->methods[method_];
  if (value >= static_cast<int>(m.values.size())) return;
  inspector_->showValue(shown_, method_, value);
  if (sender() != plan_) plan_->selectValue(value);
  if (sender() != graph_) graph_->selectValue(value);
  emit shownChanged();
}

bool MainWindow::selectNodeByName(const QString& name) {
  if (!shown_) return false;
  const Method& m = shown_->methods[method_];
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (q(m.nodes[i].name) == name) {
      selectNode(static_cast<int>(i));
      return true;
    }
  return false;
}

bool MainWindow::runToPass(const QString& name) {
  const PipelineState& s = runner_->state();
  for (size_t i = 0; i < s.records.size(); ++i)
    if (q(s.records[i].name) == name) {
      runner_->runTo(static_cast<int>(i));
      return true;
    }
  return false;
}

bool MainWindow::findNode(const QString& text, bool backwards) {
  findText_ = text;
  if (!shown_ || findText_.isEmpty()) return false;
  const Method& m = shown_->methods[method_];
  int n = static_cast<int>(m.nodes.size());
  for (int k = 1; k <= n; ++k) {
    int i = ((selectedNode_ < 0 ? (backwards ? 0 : -1) : selectedNode_) + (backwards ? -k : k) + 2 * n) % n;
    const Node& node = m.nodes[i];
    bool hit = q(node.name).contains(findText_, Qt::CaseInsensitive) ||
               (node.op >= 0 && q(m.operators[node.op].fullName()).contains(findText_, Qt::CaseInsensitive));
    for (const ModuleFrame& f : node.meta.moduleStack) hit = hit || q(f.path).contains(findText_, Qt::CaseInsensitive);
    if (hit) {
      selectNode(i);
      status_->setText(tr("Found \"%1\": %2").arg(findText_, q(node.name)));
      return true;
    }
  }
  status_->setText(tr("No node matches \"%1\"").arg(findText_));
  return false;
}

void MainWindow::log(const QString& line) {
  log_->appendPlainText(QTime::currentTime().toString("HH:mm:ss.zzz") + "  " + line);
}

void MainWindow::showSummary(const LoadedProgram& p) {
  if (p.dataFile) {  // a .ptd on its own
    const DataFile& d = *p.dataFile;
    setWindowTitle(tr("%1 — Lowering Studio").arg(QFileInfo(q(p.path)).fileName()));
    status_->setText(tr("%1: %n tensor(s)", nullptr, int(d.entries.size())).arg(QFileInfo(q(p.path)).fileName()));
    report_->setPlainText(q(p.report));
    tree_->clear();
    auto* file = new QTreeWidgetItem(tree_, {tr("Data file"), QFileInfo(q(p.path)).fileName()});
    add(file, tr("Size"), q(formatBytes(d.file->size())));
    add(file, tr("Format"), d.legacy ? tr("FlatTensor (first generation)") : tr("FlatTensor"));
    auto* entries = add(file, tr("Entries"), QString::number(d.entries.size()));
    for (const auto& e : d.entries) {
      QString what = q(formatBytes(e.data.size));
      if (e.layout) {
        TensorSpec t;
        t.dtype = e.layout->dtype;
        t.sizes = e.layout->sizes;
        what = q(t.shapeString()) + ", " + what;
      }
      add(entries, q(e.key), what);
    }
    file->setExpanded(true);
    entries->setExpanded(true);
    return;
  }
  const ProgramSummary& s = p.summary;
  setWindowTitle(tr("%1 — Lowering Studio").arg(QFileInfo(q(p.path)).fileName()));
  // A sample is built in memory: it has no file and no file size yet.
  const bool inMemory = s.file.rfind("sample:", 0) == 0 && s.facts.fileSize == 0;
  uint64_t weights = 0;
  for (const auto& m : s.methods) weights += m.weightBytes;
  const QString size = inMemory ? tr("%1 of weights, not saved").arg(q(formatBytes(weights)))
                                : q(formatBytes(s.facts.fileSize));
  status_->setText(tr("%1: %2, %3")
                       .arg(QFileInfo(q(p.path)).fileName(),
                            s.format == SourceFormat::Pte ? tr("%n method(s)", nullptr, int(s.methods.size()))
                                                          : tr("%n program(s)", nullptr, int(s.methods.size())),
                            size));
  report_->setPlainText(q(p.report));
  tree_->clear();
  auto* file = new QTreeWidgetItem(tree_, {tr("File"), QFileInfo(q(p.path)).fileName()});
  add(file, tr("Size"), size);
  if (s.format == SourceFormat::Pte) {
    add(file, tr("Identifier"), q(s.facts.identifier));
    add(file, tr("Header"), q(headerName(s.facts.header)));
    add(file, tr("Segments"), QString::number(s.segments));
    add(file, tr("Named data"), tr("%1 (%2)").arg(s.namedData).arg(q(formatBytes(s.namedDataBytes))));
  }
  for (const auto& d : s.dataFiles) add(file, tr("Data file"), q(d));
  if (!s.unresolvedExternal.empty())
    add(file, tr("Unresolved external tensors"), QString::number(s.unresolvedExternal.size()));
  file->setExpanded(true);
  if (s.format != SourceFormat::Pte) {
    add(file, tr("Container"), q(s.exportFacts.container));
    add(file, tr("Schema version"), q(s.exportFacts.schemaVersion));
    add(file, tr("torch"), q(s.exportFacts.torchVersion));
    for (const auto& m : s.methods) {
      auto* mi = new QTreeWidgetItem(tree_, {tr("Program"), q(m.name)});
      add(mi, tr("Nodes"), QString::number(m.nodes));
      add(mi, tr("Weights"), q(formatBytes(m.weightBytes)));
      add(mi, tr("Module depth"), QString::number(m.moduleDepth));
      auto* ops = add(mi, tr("Operators"), QString::number(m.operators.size()));
      for (const auto& op : m.operators)
        add(ops, q(op.name + (op.overload.empty() ? "" : "." + op.overload)), tr("%n call(s)", nullptr, int(op.count)));
      auto* ins = add(mi, tr("Signature inputs"), QString::number(m.signatureInputs.size()));
      for (const auto& e : m.signatureInputs)
        add(ins, q(e.kind + " " + e.name), q(e.type + (e.target.empty() ? "" : "  " + e.target)));
      auto* outs = add(mi, tr("Signature outputs"), QString::number(m.signatureOutputs.size()));
      for (const auto& e : m.signatureOutputs) add(outs, q(e.kind + " " + e.name), q(e.type));
      auto* edge = add(mi, tr("Edge dialect check"), m.diagnostics.empty() ? tr("ok") : tr("%n problem(s)", nullptr, int(m.diagnostics.size())));
      for (const auto& d : m.diagnostics) add(edge, QString(), q(d))->setToolTip(1, q(d));
      edge->setExpanded(true);
      mi->setExpanded(true);
      ops->setExpanded(true);
      ins->setExpanded(true);
    }
    return;
  }
  for (const auto& m : s.methods) {
    auto* mi = new QTreeWidgetItem(tree_, {tr("Method"), q(m.name)});
    add(mi, tr("Instructions"), QString::number(m.instructions));
    add(mi, tr("Values"), QString::number(m.values));
    auto* ins = add(mi, tr("Inputs"), QString::number(m.inputs.size()));
    for (const auto& io : m.inputs) add(ins, QString("[%1]").arg(io.value), q(io.description));
    auto* outs = add(mi, tr("Outputs"), QString::number(m.outputs.size()));
    for (const auto& io : m.outputs) add(outs, QString("[%1]").arg(io.value), q(io.description));
    auto* ops = add(mi, tr("Operators"), QString::number(m.operators.size()));
    for (const auto& op : m.operators)
      add(ops, q(op.name + (op.overload.empty() ? "" : "." + op.overload)), tr("%n call(s)", nullptr, int(op.count)));
    auto* dels = add(mi, tr("Delegates"), QString::number(m.delegates.size()));
    for (const auto& d : m.delegates) add(dels, q(d.id), q(formatBytes(d.bytes) + ", " + d.location));
    add(mi, tr("Constants"), tr("%1 (%2)").arg(m.constants.count).arg(q(formatBytes(m.constants.bytes))));
    auto* mem = add(mi, tr("Memory plan"), m.plan.overlapFree() ? tr("no overlaps") : tr("%1 overlaps").arg(m.plan.overlapCount));
    for (const auto& a : m.plan.arenas)
      add(mem, tr("mem_id %1").arg(a.memId),
          tr("arena %1, lower bound %2, ratio %3")
              .arg(q(formatBytes(a.size)), q(formatBytes(a.lowerBound)))
              .arg(a.lowerBound ? QString::number(a.ratio(), 'f', 3) : QStringLiteral("n/a")));
    mi->setExpanded(true);
    ops->setExpanded(true);
    mem->setExpanded(true);
  }
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& f : recent) recentMenu_->addAction(f, this, [this, f] { openFile(f); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openFile(urls.first().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (modified_ && !quietErrors_ && current_.ok) {
    auto answer = QMessageBox::question(this, tr("Unsaved changes"),
                                        tr("The config or the lowering of %1 changed since the workspace was saved. Save the workspace?")
                                            .arg(QFileInfo(q(current_.path)).fileName()),
                                        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) return e->ignore();
    if (answer == QMessageBox::Save) {
      QString path = workspacePath_;
      if (path.isEmpty())
        path = QFileDialog::getSaveFileName(this, tr("Save workspace"), QSettings().value("lastDirectory").toString(),
                                            tr("Lowering Studio workspace (*%1)").arg(kWorkspaceExtension));
      QString error;
      if (path.isEmpty() || !saveWorkspaceTo(path.endsWith(kWorkspaceExtension) ? path : path + kWorkspaceExtension, &error)) {
        if (!error.isEmpty()) QMessageBox::warning(this, tr("Cannot save workspace"), error);
        return e->ignore();
      }
    }
  }
  QFile::remove(autosavePath());  // a clean close: nothing to recover
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("timeline/hideUnchanged", hideUnchanged_->isChecked());
  QMainWindow::closeEvent(e);
}

}  // namespace lstudio::ui
