// MainWindow assembles the window (this file) and shows the selected snapshot
// in its views. Its other jobs live beside it: menus and toolbar in
// MainWindowActions.cpp, files, workspaces and export in MainWindowFiles.cpp,
// the lowering and its timeline in MainWindowPipeline.cpp, the Summary
// tab's content in SummaryView, the Size tab in MainWindowSize.cpp, and
// compare mode (Ctrl+D) in MainWindowCompare.cpp.
#include "ui/window/MainWindow.h"

#include <algorithm>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLockFile>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTextBlock>
#include <QTime>
#include <QGuiApplication>
#include <QScreen>
#include <QScrollArea>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "engine/lowering/GraphText.h"
#include "ui/config/ConfigEditor.h"
#include "ui/config/ConstantTable.h"
#include "ui/graph/FindBar.h"
#include "ui/graph/GraphView.h"
#include "ui/graph/Inspector.h"
#include "ui/plan/MemoryPlanView.h"
#include "ui/size/SizeView.h"
#include "ui/window/StartPage.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

// More methods than this and the tabs scroll: a list beside them jumps to any method.
constexpr int kMethodListFrom = 6;

// Marks of the text view: added nodes green, modified amber, selection blue.
const QColor kAdded(200, 240, 200), kModified(255, 236, 179), kSelected(187, 222, 251);

}  // namespace

/// The docks around the centre, kept while the window is built: the View menu
/// toggles them and the first start sizes them.
struct MainWindow::Docks {
  QDockWidget *timeline, *inspector, *config, *constants, *log;
};

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Lowering Studio"));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  runner_ = new PipelineRunner(this);
  programRun_ = new ProgramRunController(this);

  buildCentre();
  buildProgramViews();
  buildSummaryTab();
  buildProfileTab();
  buildSizeTab();
  const Docks docks = buildDocks();
  buildStatusBar();
  buildActions();
  addDockToggles(docks);

  connect(&watcher_, &QFutureWatcher<LoadedProgram>::finished, this, &MainWindow::onLoaded);
  connectPipeline();
  connectViews();
  connectEditors();
  connectFindBar();
  connectSizeView();
  connectCompare();
  connectProgramRun();

  restoreSettings(docks);
  changesDock_->setVisible(comparing());  // a restored layout may have had it open
  updateRecentMenu();
  updateActions();
  holdAutosaveLock();
  auto* autosaveTimer = new QTimer(this);
  connect(autosaveTimer, &QTimer::timeout, this, &MainWindow::autosave);
  autosaveTimer->start(30'000);
}

MainWindow::~MainWindow() { watcher_.waitForFinished(); }

void MainWindow::buildCentre() {
  // A tab per method above the views of the shown program.
  auto* centre = new QWidget;
  auto* centreLayout = new QVBoxLayout(centre);
  centreLayout->setContentsMargins(0, 0, 0, 0);
  centreLayout->setSpacing(0);
  methodTabs_ = new QTabBar;
  methodTabs_->setDocumentMode(true);
  methodTabs_->setExpanding(false);
  methodList_ = new QComboBox;
  methodList_->setObjectName("methodList");
  methodList_->setToolTip(tr("Go to a method (type its first letters)"));
  methodList_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  methodList_->setMaxVisibleItems(30);
  methodList_->hide();
  auto* methodRow = new QHBoxLayout;
  methodRow->setSpacing(4);
  methodRow->addWidget(methodTabs_, 1);
  methodRow->addWidget(methodList_);
  centreLayout->addLayout(methodRow);
  findBar_ = new FindBar;
  centreLayout->addWidget(findBar_);
  views_ = new QTabWidget;
  views_->setDocumentMode(true);
  views_->setTabPosition(QTabWidget::South);
  centreLayout->addWidget(views_, 1);
  // Until a program is open the centre is the start page, not an empty canvas.
  programCentre_ = centre;
  startPage_ = new StartPage;
  centreStack_ = new QStackedWidget;
  centreStack_->addWidget(startPage_);
  centreStack_->addWidget(programCentre_);
  setCentralWidget(centreStack_);
}

bool MainWindow::startPageShown() const { return centreStack_->currentWidget() == startPage_; }

void MainWindow::buildProgramViews() {
  // Graph (with the earlier snapshot beside it when comparing), memory plan, text.
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
}

void MainWindow::buildSummaryTab() {
  // The file's facts as a tree beside the report `lowering-cli inspect` prints.
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
}

MainWindow::Docks MainWindow::buildDocks() {
  // Left the pass timeline; right the inspector and the config; below the log and the constants.
  auto dock = [this](const QString& title, const char* name, QWidget* content, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(content);
    addDockWidget(area, d);
    return d;
  };
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
  // A name too long for the dock loses its middle, not the "Pass" that ends every name.
  timeline_->setTextElideMode(Qt::ElideMiddle);
  tl->addWidget(timeline_, 1);
  tl->addWidget(buildPassLegend());
  hideUnchanged_ = new QCheckBox(tr("Hide passes that changed nothing"));
  tl->addWidget(hideUnchanged_);
  Docks docks{};
  docks.timeline = dock(tr("Passes"), "passesDock", timelineBox, Qt::LeftDockWidgetArea);

  inspector_ = new Inspector;
  inspector_->setObjectName("inspector");
  docks.inspector = dock(tr("Inspector"), "inspectorDock", inspector_, Qt::RightDockWidgetArea);

  config_ = new ConfigEditor;
  config_->setObjectName("configEditor");
  docks.config = dock(tr("Config"), "configDock", config_, Qt::RightDockWidgetArea);
  constants_ = new ConstantTable;
  constants_->setObjectName("constantTable");
  // Narrow is fine (the table scrolls). Its layout keeps a few rows; in a scroll area that
  // minimum does not hold the whole bottom area (and the Log tabbed with it) that tall.
  constants_->setMinimumWidth(200);
  auto* constantsScroll = new QScrollArea;
  constantsScroll->setWidget(constants_);
  constantsScroll->setWidgetResizable(true);
  constantsScroll->setFrameShape(QFrame::NoFrame);
  docks.constants = dock(tr("Constants"), "constantsDock", constantsScroll, Qt::BottomDockWidgetArea);

  log_ = new QPlainTextEdit;
  log_->setObjectName("log");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  docks.log = dock(tr("Log"), "logDock", log_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(docks.inspector, docks.config);
  docks.inspector->raise();
  tabifyDockWidget(docks.log, docks.constants);
  docks.log->raise();
  changesDock_ = buildChangesDock(docks.inspector);
  return docks;
}

void MainWindow::buildStatusBar() {
  status_ = new QLabel(tr("Ready"));
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);  // indeterminate while a worker reads or lowers
  busy_->setMaximumWidth(160);
  busy_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(busy_);
  openEtRecord_ = new QPushButton(tr("Open upstream's ETRecord…"));
  openEtRecord_->setToolTip(tr("The studio's to_edge cannot lower this program. ExecuTorch's to_edge(..., "
                               "generate_etrecord=True) records its edge program in an ETRecord (get_etrecord().save(path)): "
                               "open that file to go on from upstream's edge program."));
  openEtRecord_->hide();
  statusBar()->addPermanentWidget(openEtRecord_);
  connect(openEtRecord_, &QPushButton::clicked, this, &MainWindow::chooseEtRecord);
  cancelLoad_ = new QPushButton(tr("Cancel"));
  cancelLoad_->setToolTip(tr("Stop loading (Esc)"));
  cancelLoad_->setFlat(true);
  cancelLoad_->hide();
  statusBar()->addPermanentWidget(cancelLoad_);
  // One Cancel (and Esc) for the load or the program run in progress.
  auto cancel = [this] {
    if (programRun_->running()) return programRun_->cancel();
    cancelLoad();
  };
  connect(cancelLoad_, &QPushButton::clicked, this, cancel);
  auto* esc = new QAction(this);
  esc->setShortcut(Qt::Key_Escape);
  esc->setShortcutContext(Qt::WindowShortcut);
  connect(esc, &QAction::triggered, this, cancel);
  addAction(esc);
}

void MainWindow::addDockToggles(const Docks& docks) {
  // At the end of the View menu, the third of the menu bar.
  auto* view = menuBar()->actions().size() > 2 ? menuBar()->actions()[2]->menu() : nullptr;
  if (!view) return;
  view->addSeparator();
  for (QDockWidget* d : {docks.timeline, docks.inspector, docks.log, docks.config, docks.constants})
    view->addAction(d->toggleViewAction());
}

void MainWindow::connectViews() {
  // A node or value selected in any view is selected in all of them.
  connect(views_, &QTabWidget::currentChanged, this, [this] {
    if (views_->currentWidget() != text_ || !textStale_) return;
    refreshText();
    if (selectedNode_ >= 0) {
      QSignalBlocker block(text_);
      text_->setTextCursor(QTextCursor(text_->document()->findBlockByNumber(selectedNode_ + 1)));
      text_->centerCursor();
    }
  });
  // Choosing in the list selects the tab (which scrolls into view); the tab shows the method.
  connect(methodList_, &QComboBox::activated, methodTabs_, &QTabBar::setCurrentIndex);
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
  connect(plan_, &MemoryPlanView::nodeSelected, this, [this](int node) {
    if (node >= 0) selectNode(node);
  });
  connect(plan_, &MemoryPlanView::valueSelected, this, [this](int value) {
    if (plan_->selectedValue() == value && selectedNode_ < 0) selectValue(value);
  });
  connect(inspector_, &Inspector::valueActivated, this, &MainWindow::selectValue);
  connect(startPage_, &StartPage::openRequested, this, &MainWindow::chooseFile);
  connect(startPage_, &StartPage::sampleRequested, this, &MainWindow::openSample);
  connect(startPage_, &StartPage::recentRequested, this, &MainWindow::openFile);
}

void MainWindow::connectEditors() {
  connect(config_, &ConfigEditor::configChanged, this, &MainWindow::applyConfig);
  // Tagging rules are part of the config: their edits join its undo history.
  connect(constants_, &ConstantTable::configChanged, this,
          [this](const ExecutorchBackendConfig& c) { config_->edit(c, tr("Change tagging rules")); });
  connect(constants_, &ConstantTable::constantSelected, this, &MainWindow::selectValue);
}

void MainWindow::restoreSettings(const Docks& docks) {
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  hideUnchanged_->setChecked(s.value("timeline/hideUnchanged", false).toBool());
  if (!s.contains("window/geometry")) placeFirstWindow();
  if (!s.contains("window/state"))  // first start: most of the window for the graph, once shown
    QTimer::singleShot(0, this, [this, docks] {
      // The passes dock as wide as the longest pass name; the inspector a readable width that
      // gives way on small screens; the log a few lines (it grows when dragged).
      resizeDocks({docks.timeline, docks.inspector}, {timelineWidth(), std::clamp(width() / 4, 300, 420)}, Qt::Horizontal);
      resizeDocks({docks.log}, {fontMetrics().lineSpacing() * 5 + 40}, Qt::Vertical);
    });
}

void MainWindow::placeFirstWindow() {
  // The first window fits the screen it opens on (a fixed 1400x860 ran off a 1366x768
  // screen): nine tenths of the space the desktop leaves free, centred.
  const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
  if (!screen) return resize(1400, 860);
  const QRect free = screen->availableGeometry();
  const QSize size(free.width() * 9 / 10, free.height() * 9 / 10);
  resize(size);
  move(free.center() - QPoint(size.width() / 2, size.height() / 2));
}

bool MainWindow::idle() const {
  return !watcher_.isRunning() && !runner_->busy() && (!planShown_ || plan_->isPlanReady()) &&
         !graph_->layoutPending() && !before_->layoutPending() && !sizeView_->compareBusy() && !programRun_->running();
}

void MainWindow::refreshShown() {
  refreshMethodTabs();
  refreshDiff();
  if (shown_ && selectedNode_ >= static_cast<int>(shown_->methods[method_].nodes.size())) selectedNode_ = -1;
  refreshText();
  refreshGraphs();
  if (revealOnShow_ >= 0 && shown_) {  // a file that opens on a node: the graph shows it too
    graph_->selectNode(revealOnShow_);
    revealOnShow_ = -1;
  }
  refreshConstantsAndPlan();
  // The inspector shows the selected node of the shown method, else what the
  // shown pass did, else nothing: never what an earlier program or method showed.
  updateRunValues();
  if (selectedNode_ >= 0) inspector_->showNode(shown_, method_, selectedNode_);
  else if (!showPassInInspector()) inspector_->showNothing();
  updateFindCount();
  emit shownChanged();
}

void MainWindow::refreshMethodTabs() {
  QSignalBlocker block(methodTabs_);
  while (methodTabs_->count() > 0) methodTabs_->removeTab(0);
  if (shown_)
    for (const Method& m : shown_->methods) methodTabs_->addTab(q(m.name));
  if (method_ >= methodTabs_->count()) method_ = 0;
  methodTabs_->setCurrentIndex(method_);
  methodTabs_->setVisible(methodTabs_->count() > 1);
  QSignalBlocker blockList(methodList_);
  const bool many = methodTabs_->count() >= kMethodListFrom;
  methodList_->clear();
  if (many) {
    for (int i = 0; i < methodTabs_->count(); ++i) methodList_->addItem(methodTabs_->tabText(i));
    methodList_->setCurrentIndex(method_);
  }
  methodList_->setVisible(many);
}

void MainWindow::refreshDiff() {
  // What the pass of the shown snapshot changed in the shown method.
  diff_ = MethodDiff{};
  const PipelineState& s = runner_->state();
  if (!shown_ || !s.input || snapshot_ <= 0) return;
  size_t k = static_cast<size_t>(snapshot_) - 1;
  if (k < s.diffs.size() && s.diffs[k] && static_cast<size_t>(method_) < s.diffs[k]->size()) {
    diff_ = (*s.diffs[k])[method_];  // computed by the runner's worker
  } else {
    auto before = s.snapshotAtOrBefore(snapshot_ - 1);
    if (before && before != shown_ && method_ < static_cast<int>(before->methods.size()))
      diff_ = diffMethods(before->methods[method_], shown_->methods[method_]);
  }
}

void MainWindow::refreshGraphs() {
  // Laying out is costly: only when the program, method or snapshot shown changed.
  if (shown_ == graphShown_ && method_ == graphMethod_ && snapshot_ == graphSnapshot_) return;
  // Comparing, the groups open in either pane stay open in both for another snapshot of the same program.
  // Those a selection opened (in either pane) stay the next selection's to close.
  // Without comparing too: another snapshot of the same program and method keeps the groups
  // the user opened and the place the view looks at (run_decompositions folded them up, a
  // config change scrolled back to the top).
  QStringList keepOpen, revealed;
  const auto input = runner_->state().input;
  const bool sameProgram = input && input == graphInput_ && method_ == graphMethod_ && graph_->model();
  if (sameProgram) {
    keepOpen = graph_->expandedGroups();
    revealed = graph_->revealedGroups();
    if (comparing()) {
      keepOpen += before_->expandedGroups();
      revealed += before_->revealedGroups();
    }
    keepOpen.removeDuplicates();
    revealed.removeDuplicates();
  }
  graphShown_ = shown_;
  graphMethod_ = method_;
  graphSnapshot_ = snapshot_;
  if (graphInput_ != input) {
    graphInput_ = input;
    fillProfile();  // an ETDump belongs to the program it was linked to
  }
  if (!shown_) {
    graph_->clear();
    before_->clear();
    refreshCompare({});
    return;
  }
  std::vector<NodeMark> marks(diff_.after.size(), NodeMark::None);
  for (size_t i = 0; i < marks.size(); ++i)
    marks[i] = diff_.after[i] == MethodDiff::Mark::Added ? NodeMark::Added
               : diff_.after[i] == MethodDiff::Mark::Modified ? NodeMark::Modified : NodeMark::None;
  graph_->setGraph(shown_, method_, std::move(marks), sameProgram);
  if (sameProgram && !comparing()) graph_->setExpandedGroups(keepOpen, revealed);
  applyValueTints();
  refreshCompare(keepOpen, revealed);
}

void MainWindow::refreshConstantsAndPlan() {
  const PipelineState& s = runner_->state();
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
  if (sender() != graph_) findingHit_ ? graph_->revealFindHit(index) : graph_->selectNode(index);
  if (compare_->isChecked() && sender() != before_) before_->selectNodeByName(q(shown_->methods[method_].nodes[index].name));
  if (views_->currentWidget() == text_) {
    QSignalBlocker block(text_);
    QTextCursor c(text_->document()->findBlockByNumber(index + 1));
    text_->setTextCursor(c);
    text_->centerCursor();
  }
  highlightText();
  updateFindCount();
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

void MainWindow::log(const QString& line) {
  log_->appendPlainText(QTime::currentTime().toString("HH:mm:ss.zzz") + "  " + line);
}

}  // namespace lstudio::ui
