// The studio window: pass timeline (left), the program after the selected
// pass in the centre (graph, memory plan, text, summary, size; a tab per method),
// inspector (right), log (bottom). Loading and lowering run on workers; the
// GUI thread only swaps in finished results.
#pragma once

#include <QDateTime>
#include <QFutureWatcher>
#include <QMainWindow>
#include <QPointer>
#include <map>
#include <memory>
#include <optional>

#include "engine/workspace/Workspace.h"
#include "engine/lowering/GraphDiff.h"
#include "ui/run/PipelineRunner.h"
#include "ui/run/ProgramRun.h"
#include "ui/run/ProgramLoader.h"

class QAction;
class QCheckBox;
class QComboBox;
class QDockWidget;
class QLabel;
class QLockFile;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTabBar;
class QTabWidget;
class QTreeWidget;

namespace lstudio::ui {

/// The find query for every node a partitioner left out (Edit › Find What XNNPACK Did Not Take).
inline constexpr const char* kNotDelegatedQuery = "not delegated";

class ChangesList;
class ConfigEditor;
class ConstantTable;
class ExportDialog;
class FindBar;
class GraphView;
class Inspector;
class MemoryPlanView;
class SizeView;
class StartPage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading `path` (and .ptd files beside it) on a worker thread.
  void openFile(const QString& path);
  /// Drops the load in progress (the window keeps what it showed).
  void cancelLoad();
  /// Builds a sample of the zoo (engine/SampleZoo) on a worker and opens it:
  /// its name, or its name and options ("llama --attention static").
  void openSample(const QString& spec);
  /// Opens a program already in memory (tests; samples).
  void openProgram(std::shared_ptr<const Program> program, const QString& title);
  /// The last successfully loaded program, or null.
  const LoadedProgram* current() const { return current_.ok ? &current_ : nullptr; }
  QTreeWidget* summaryTree() const { return tree_; }
  QTreeWidget* profileTree() const { return profile_; }
  QPlainTextEdit* reportView() const { return report_; }
  QTreeWidget* timeline() const { return timeline_; }
  QPlainTextEdit* graphTextView() const { return text_; }
  QPlainTextEdit* logView() const { return log_; }
  /// Offered in the status bar when to_edge stops at an operator the studio cannot lower
  /// (EXIRATenDialectVerifier, run_decompositions): opens upstream's ETRecord instead.
  QPushButton* openEtRecordButton() const { return openEtRecord_; }
  Inspector* inspector() const { return inspector_; }
  MemoryPlanView* planView() const { return plan_; }
  GraphView* graphView() const { return graph_; }
  /// The earlier snapshot beside the graph when comparing (View > Compare with Previous Pass).
  GraphView* beforeView() const { return before_; }
  /// Compare mode (Ctrl+D): the earlier snapshot beside the graph, each pane titled, their
  /// navigation and open groups kept together, and the Changes dock listing what the pass did.
  void setCompare(bool on);
  bool comparing() const;
  /// Compare mode's list of added, modified and removed nodes (in the Changes dock).
  ChangesList* changesList() const { return changes_; }
  QDockWidget* changesDock() const { return changesDock_; }
  ConfigEditor* configEditor() const { return config_; }
  ConstantTable* constantTable() const { return constants_; }
  /// The Size tab: where the bytes of the opened .pte (and its .ptd files) go.
  SizeView* sizeView() const { return sizeView_; }
  /// Applies a config: re-runs what had run (off the GUI thread).
  void applyConfig(const ExecutorchBackendConfig& c);
  PipelineRunner* runner() const { return runner_; }
  QTabWidget* views() const { return views_; }
  /// What the centre shows while no program is open (Open, samples, recent files, shortcuts).
  StartPage* startPage() const { return startPage_; }
  bool startPageShown() const;

  /// The program shown: the snapshot after the selected timeline row.
  std::shared_ptr<const Program> shownProgram() const { return shown_; }
  int shownMethod() const { return method_; }
  /// Timeline row shown: 0 = the input program, k = after pass k.
  int shownSnapshot() const { return snapshot_; }
  const MethodDiff& shownDiff() const { return diff_; }
  /// Selects node `index` of the shown method in every view and the inspector.
  void selectNode(int index);
  void selectValue(int value);
  int selectedNode() const { return selectedNode_; }
  /// Selects a node by graph name; false when the shown method has none.
  bool selectNodeByName(const QString& name);
  /// Selects the next (previous) node whose name, operator or module path contains `text`
  /// (or, after a partitioner, whose tag is `text` or whose reason for staying out contains it;
  /// kNotDelegatedQuery: every node left out);
  /// the graph closes again the groups the previous hit opened.
  bool findNode(const QString& text, bool backwards = false);
  /// The find bar over the views (Ctrl+F): "3 of 17", Enter/F3 next, Shift+F3 previous, Esc closes.
  FindBar* findBar() const { return findBar_; }
  /// Runs the pipeline until the pass named `name` has run; false if there is no such pass.
  bool runToPass(const QString& name);
  /// Shows the snapshot after timeline row `row` (0 = input).
  void showSnapshot(int row);
  /// The session as a workspace (input, config, how far the lowering ran, view state).
  Workspace workspace() const;
  /// Writes the workspace atomically; false with a message on failure.
  bool saveWorkspaceTo(const QString& path, QString* error = nullptr);
  /// Opens a workspace file: its program, config, pass and view are restored once loaded.
  bool openWorkspace(const QString& path, QString* error = nullptr);
  /// Changes not saved in a workspace (config edits, passes run).
  bool isModified() const { return modified_; }
  /// This instance's autosave, autosave-<process id>.lstudio in the application's data
  /// folder: written while there are unsaved changes, removed on a clean close. Each
  /// running instance holds a lock beside its own (autosave-<process id>.lock).
  static QString autosavePath();
  /// Writes the autosave now if there are unsaved changes (the timer calls this).
  void autosave();
  /// A session that ended without a clean close, as its autosave tells.
  struct EndedSession {
    QString autosave;  ///< the autosave file
    QString input;     ///< the program the session had open
    QDateTime written; ///< when the autosave was last written
    QString error;     ///< why the autosave cannot be read (then input is empty)
  };
  /// Autosaves no running instance holds (their process ended), newest first:
  /// never this instance's nor one another running instance writes or recovers.
  static QList<EndedSession> endedSessions();
  /// Restores an autosave like a workspace, but unsaved: the title has its `*`
  /// and closing asks. The autosave stays until the session is saved or
  /// discarded; meanwhile this window holds it, so no other instance offers it.
  bool recoverSession(const QString& autosave, QString* error = nullptr);
  /// The autosave of the recovered session, until it is saved or discarded.
  QString recoveredAutosave() const { return recovered_; }
  /// At start: asks, for each ended session (newest first) until one is recovered,
  /// whether to recover it, discard it or leave it for later.
  void offerRecovery();
  /// File > Export: runs the remaining passes first when needed, then opens the export dialog.
  void exportProgram();
  /// The open export dialog, or null.
  ExportDialog* exportDialog() const;
  /// Nothing is loading, lowering or laying out.
  bool idle() const;

  /// Lowering > Run Program (Ctrl+R): runs the shown method of the shown snapshot in the
  /// interpreter on a worker (progress in the status bar, Esc cancels), then shows each node's
  /// values in the inspector and selects the first node that differs from the reference.
  /// With `npys` (Lowering > Run Program With Inputs…): one .npy file per input, taken in the
  /// order of their names; a wrong count, dtype or shape fails the run naming the input.
  void runProgram(QStringList npys = {});
  /// Lowering > Compare With Expected Outputs…, the files chosen: the eager model's outputs,
  /// one .npy per output; the shown snapshot's run is compared with them (run first if needed).
  void setExpectedOutputs(QStringList files);
  ProgramRunController* programRun() const { return programRun_; }
  /// Lowering > Run Every Pass: the shown method after every pass run so far, on a worker;
  /// the timeline then marks (≠) each pass that changed the outputs.
  void runEveryPass();
  /// Selects the first node of the last run that differs from its reference; false if none.
  bool selectFirstDifference();
  /// File > Open ETDump: reads an ETDump that ExecuTorch's runtime wrote while running the
  /// open .pte (on a worker), with the debug buffer beside it when there is one (`debugBuffer`
  /// empty: RUN.bin, RUN.debug or RUN_debug.bin next to RUN.etdp). Its times fill the Profile
  /// tab and colour the graph; its logged values are compared with the interpreter's.
  void openEtdump(const QString& path, const QString& debugBuffer = {});
  /// View > Colour by Values: stripes on the graph's boxes from the last run of the shown
  /// snapshot, or from the ETDump opened (its time per node, its logged values' gap).
  enum class ValueColouring { None, Magnitude, Difference, Time, Gap };
  void setValueColouring(ValueColouring c);
  ValueColouring valueColouring() const { return valueColouring_; }

  /// Tests set this so that errors go to the status bar instead of a modal dialog.
  void setQuietErrors(bool quiet) { quietErrors_ = quiet; }

  /// File > Apply the Previous File's Config: the config of the file open before
  /// this one, as one undoable edit (a new file starts from the defaults).
  void applyPreviousConfig();
  QAction* applyPreviousAction() const { return applyPrevious_; }

 signals:
  /// Emitted on the GUI thread when a load finishes (ok or not).
  void loadFinished(bool ok, const QString& message);
  /// The shown program or selection changed (tests, screenshots).
  void shownChanged();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;
  /// Before the session is replaced or closed: with unsaved changes, asks Save / Discard /
  /// Cancel (`consequence` says what the action does). False: the user kept the session.
  bool settleUnsavedChanges(const QString& consequence);

 private:
  // Assembly (MainWindow.cpp): the window is built in these steps, in this order.
  struct Docks;
  void buildCentre();
  void buildProgramViews();
  void buildSummaryTab();
  Docks buildDocks();
  void buildStatusBar();
  void addDockToggles(const Docks& docks);
  /// A first start's window: sized to the screen's free space, centred.
  void placeFirstWindow();
  void connectViews();
  void connectEditors();
  void restoreSettings(const Docks& docks);

  // Menus and toolbar (MainWindowActions.cpp).
  void buildActions();
  QAction* buildFileMenu();
  void buildLoweringMenu();
  void buildEditMenu();
  void buildViewMenu();
  /// Returns Help > Keyboard Shortcuts.
  QAction* buildHelpMenu();
  void buildToolBar(QAction* open);
  void updateActions();
  void updateRecentMenu();

  // Files, workspaces and export (MainWindowFiles.cpp).
  void chooseFile();
  void chooseEtRecord();
  void onLoaded();
  /// openSample without asking first (a workspace's sample, a sample: path).
  void buildSample(const QString& spec);
  void startLoad(QFuture<LoadedProgram> future);
  void finishLoad(LoadedProgram r);
  void rememberRecent();
  /// The delegate call a method mostly is (one call, at most two kernels beside it), or -1.
  static int soleDelegateCall(const Method& m);
  /// A file that replaces another starts from the default config (logged when that changes it).
  void startFromDefaults();
  void startPipeline();
  void showSummary(const LoadedProgram& p);
  QString askWorkspacePath();
  void saveWorkspaceInteractively(QString path);
  void setModified(bool m);
  void restorePending();
  /// Locks this instance's autosave for as long as the process runs.
  static void holdAutosaveLock();
  /// Lets go of the recovered session's autosave; `remove` deletes it (saved or discarded).
  void releaseRecovered(bool remove);

  // The lowering (MainWindowPipeline.cpp).
  void connectPipeline();
  void onPipelineState();
  void refreshTimeline();
  /// The states of the timeline's dots, explained under it.
  QWidget* buildPassLegend();
  /// Width of the passes dock that shows every pass name and its time in full.
  int timelineWidth() const;
  /// False when there is no pass to tell of (the input program is shown).
  bool showPassInInspector();
  /// After a partitioner, the shown method's partitions and why nodes stay out (HTML), else empty.
  QString partitionSummary() const;
  bool pipelineActive() const;
  void reportArenaChange();

  // The program shown (MainWindow.cpp).
  void refreshShown();
  void refreshMethodTabs();
  void refreshDiff();
  void refreshGraphs();
  void refreshConstantsAndPlan();
  void refreshText();
  void highlightText();
  void log(const QString& line);

  // The Size tab (MainWindowSize.cpp).
  void buildSizeTab();
  void connectSizeView();
  void showSizes(const LoadedProgram& p);
  /// View > Compare Sizes With…: asks for the file; the view reads it on a worker.
  void compareSizes();
  /// A constant's block clicked: the constant in the Constants table, its value in the graph and inspector.
  void selectSizeConstant(const QString& name);
  /// A delegate's block clicked: the call node that runs the payload.
  void selectDelegateCall(const QString& method, int delegate);

  // Compare mode (MainWindowCompare.cpp).
  QDockWidget* buildChangesDock(QDockWidget* besideInspector);
  void connectCompare();
  /// The earlier pane, the titles and the changes list for the shown snapshot.
  void refreshCompare(const QStringList& keepOpen, const QStringList& revealed = {});
  /// "after ToOutVarPass (step 18)", "the input program": what timeline row `row` shows.
  QString snapshotTitle(int row) const;
  /// A row of the changes list: the node selected and centred in both panes.
  void showChange(const QString& name, bool removed);

  // Running the program (MainWindowRun.cpp).
  void connectProgramRun();
  /// The status bar while a run goes on (progress, Cancel) and after it.
  void showRunStarted(const QString& status);
  void showRunEnded();
  void onProgramRunFinished();
  /// Compares the last run's outputs with expectedFiles_ (on a worker); logs each output's gap.
  void compareWithExpected();
  void chooseExpectedOutputs();
  void onEveryPassFinished();
  void onEtdumpFinished();
  /// The ETDump opened is of the shown program's input and method.
  bool etdumpApplies() const;
  /// The Profile tab: the ETDump's instructions, slowest first; a row selects its node.
  void buildProfileTab();
  void fillProfile();
  /// The every-pass run's verdict on timeline row `row`, for its tooltip and mark; empty if none.
  QString everyPassNote(int row, bool* changed) const;
  /// Gives the inspector the last run's values, and whether they belong to the shown snapshot.
  void updateRunValues();
  /// The last run is of the snapshot and method shown.
  bool runApplies() const;
  /// The graph's stripes for the colouring chosen (none when the last run is of another snapshot).
  void applyValueTints();
  /// The Time and Gap stripes, from the ETDump opened (none when it is of another program).
  void applyEtdumpTints();

  // Find (MainWindowFind.cpp).
  void connectFindBar();
  /// Nodes of the shown method that match `text`, in order (kept until the text or program changes).
  const std::vector<int>& findHits(const QString& text);
  void updateFindCount();

  QTreeWidget* tree_ = nullptr;
  QTreeWidget* profile_ = nullptr;  ///< the Profile tab (an ETDump's times)
  QAction* openEtdump_ = nullptr;
  std::map<ValueColouring, QAction*> colouringActions_;
  QPlainTextEdit* report_ = nullptr;
  QTreeWidget* timeline_ = nullptr;
  QCheckBox* hideUnchanged_ = nullptr;
  QTabBar* methodTabs_ = nullptr;
  QComboBox* methodList_ = nullptr;  ///< every method by name, beside the tabs when there are many
  QTabWidget* views_ = nullptr;
  QPlainTextEdit* text_ = nullptr;
  MemoryPlanView* plan_ = nullptr;
  GraphView* graph_ = nullptr;
  GraphView* before_ = nullptr;
  QAction* compare_ = nullptr;
  ChangesList* changes_ = nullptr;
  QDockWidget* changesDock_ = nullptr;
  bool syncingPanes_ = false;  ///< one pane is following the other (no echo back)
  std::shared_ptr<const Program> graphInput_;  ///< the input whose snapshots the panes show
  SizeView* sizeView_ = nullptr;
  QAction* compareSizes_ = nullptr;  ///< View > Compare Sizes With…
  std::shared_ptr<const Program> graphShown_;
  int graphMethod_ = -1;
  int graphSnapshot_ = -1;
  ConfigEditor* config_ = nullptr;
  ConstantTable* constants_ = nullptr;
  std::shared_ptr<const Program> constantsShown_;
  /// Arena sizes before a config change, reported old -> new once the re-run ends.
  std::vector<int64_t> arenasBeforeConfig_;
  bool reportArenas_ = false;
  std::shared_ptr<const Program> planShown_;  ///< what the plan view was last given
  int planMethod_ = -1;
  QPlainTextEdit* log_ = nullptr;
  Inspector* inspector_ = nullptr;
  QProgressBar* busy_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* cancelLoad_ = nullptr;
  QPushButton* openEtRecord_ = nullptr;
  bool loadCancelled_ = false;
  bool loading_ = false;
  QMenu* recentMenu_ = nullptr;
  QStackedWidget* centreStack_ = nullptr;  ///< the start page, then the program's views
  StartPage* startPage_ = nullptr;
  QWidget* programCentre_ = nullptr;
  /// Actions that need an open program (disabled until one is loaded).
  QAction *saveWs_ = nullptr, *saveWsAs_ = nullptr, *export_ = nullptr;
  QAction* applyPrevious_ = nullptr;  ///< File > Apply the Previous File's Config
  /// The config of the file open before this one, and its name (for applyPreviousConfig).
  std::optional<ExecutorchBackendConfig> previousConfig_;
  QString previousFile_;
  QAction* find_ = nullptr;  ///< Edit > Find Node (the start page tells its keys)
  QAction *step_ = nullptr, *back_ = nullptr, *runEnd_ = nullptr, *runSelected_ = nullptr, *reset_ = nullptr,
          *stop_ = nullptr;
  QAction *runProgram_ = nullptr, *runWithInputs_ = nullptr, *runEveryPass_ = nullptr, *firstDifference_ = nullptr;
  QAction* compareExpected_ = nullptr;  ///< Lowering > Compare With Expected Outputs…
  int revealOnShow_ = -1;  ///< a node the graph selects and shows once the opened file is shown
  /// The .npy files of the eager model's outputs (one per output, in name order): every run's
  /// outputs are compared with them, off the GUI thread, and the result logged.
  QStringList expectedFiles_;
  QFutureWatcher<QStringList> expectedWatcher_;
  ProgramRunController* programRun_ = nullptr;
  ValueColouring valueColouring_ = ValueColouring::Magnitude;
  QFutureWatcher<LoadedProgram> watcher_;
  LoadedProgram current_;
  PipelineRunner* runner_ = nullptr;

  std::shared_ptr<const Program> shown_;
  int method_ = 0;
  int snapshot_ = 0;
  int shownPosition_ = -1;  ///< pipeline position last shown (new positions are followed)
  MethodDiff diff_;
  int selectedNode_ = -1;
  QString findText_;
  FindBar* findBar_ = nullptr;
  bool findingHit_ = false;  ///< selectNode is showing a find hit
  struct FindCache {
    std::shared_ptr<const Program> program;
    int method = -1;
    QString text;
    std::vector<int> hits;
  } findCache_;
  bool quietErrors_ = false;
  bool modified_ = false;
  bool exportWhenDone_ = false;
  bool textStale_ = false;  ///< the text view is rebuilt only while its tab is shown
  QPointer<ExportDialog> exportDialog_;
  QString workspacePath_;
  std::optional<Workspace> pending_;  ///< a workspace being restored (after load, after runTo)
  bool recovering_ = false;            ///< pending_ is a recovered session: unsaved once restored
  QString recovered_;                  ///< the recovered session's autosave (until saved or discarded)
  std::unique_ptr<QLockFile> recoveredLock_;  ///< held while this window has recovered_
};

}  // namespace lstudio::ui
