// The studio window, offscreen: opening real and broken files off the GUI thread.
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryFile>
#include <QTreeWidget>
#include <QCheckBox>
#include <QProgressBar>
#include <QDir>
#include <QMenu>
#include <QToolButton>
#include <QScreen>
#include <QMenuBar>
#include <QMimeData>
#include <QDropEvent>
#include <QTextBlock>
#include <QTabBar>
#include <QComboBox>
#include <QGraphicsView>
#include <QProcess>
#include <QTemporaryDir>
#include <QLockFile>
#include <QMessageBox>
#include <QAbstractButton>
#include <QPushButton>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QTableWidget>
#include <QTableView>
#include <QHeaderView>
#include <QDockWidget>
#include <QScrollArea>
#include <QTextBrowser>
#include <QtTest>

#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteWriter.h"
#include "engine/lowering/Executable.h"
#include "engine/run/Interpreter.h"
#include "engine/run/Npy.h"
#include "engine/support/AtomicFile.h"
#include "engine/samples/SampleZoo.h"
#include "engine/workspace/Workspace.h"
#include "tests/TestSupport.h"
#include "tests/support/EmittedSample.h"
#include "tests/support/EtdumpBuilder.h"
#include "ui/graph/Inspector.h"
#include "ui/config/ConfigEditor.h"
#include "ui/config/ConstantTable.h"
#include "ui/config/ExportDialog.h"
#include "ui/graph/FindBar.h"
#include "ui/graph/GraphItems.h"
#include "ui/graph/GraphModel.h"
#include "ui/graph/GraphView.h"
#include "ui/window/HelpPages.h"
#include "ui/window/MainWindow.h"
#include "ui/plan/MemoryPlanView.h"
#include "ui/window/StartPage.h"

using namespace lstudio;
using namespace lstudio::test;

namespace {

std::shared_ptr<const Program> sample(const std::string& name, SampleOptions o = {}) {
  auto p = buildSample(name, o);
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::make_shared<const Program>(std::move(p.value()));
}

int row(QTreeWidget* t, const QString& name) {
  for (int i = 0; i < t->topLevelItemCount(); ++i)
    if (t->topLevelItem(i)->text(0) == name) return i;
  return -1;
}

/// Answers the next message box with the button labelled `button`; `said` gets its text.
void answerNextBox(const QString& button, QString* said) {
  auto* t = new QTimer;
  t->setInterval(20);
  QObject::connect(t, &QTimer::timeout, [t, button, said, tries = 0]() mutable {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) {
      if (++tries > 1500) t->deleteLater();  // none came
      return;
    }
    *said = box->text() + "\n" + box->informativeText();
    t->deleteLater();
    t->stop();
    for (QAbstractButton* b : box->buttons())
      if (b->text().remove('&') == button) return b->click();
    box->reject();
  });
  t->start();
}

/// The environment for a lowering-studio started by a test: its settings, cache and
/// autosaves go to `dir`, never to the user's (Open Recent listed a test's files).
QProcessEnvironment isolatedEnvironment(const QTemporaryDir& dir) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
  env.insert("XDG_CACHE_HOME", dir.filePath("cache"));
  env.insert("XDG_DATA_HOME", dir.filePath("data"));
  env.insert("XDG_STATE_HOME", dir.filePath("state"));
  return env;
}

QAction* menuAction(QWidget& w, const QString& text) {
  for (QAction* a : w.findChildren<QAction*>())
    if (a->text() == text) return a;
  return nullptr;
}

QAction* quitAction(QWidget& w) {
  for (QAction* a : w.findChildren<QAction*>())
    if (a->text() == "&Quit") return a;  // Ctrl+Q
  return nullptr;
}

/// Opens `program` in `w` and lowers it to the end; false if the window did not settle.
/// Opens `file` in `w` and waits until it has loaded and the window is idle.
bool openAndSettle(ui::MainWindow& w, const QString& file) {
  QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
  w.openFile(file);
  return loaded.wait(30000) && QTest::qWaitFor([&] { return w.idle(); }, 30000);
}

/// The mlp and dynamic_batch samples saved as .pt2 files in `dir`: a file to start with and
/// another to open after it.
std::pair<QString, QString> twoSampleFiles(const QTemporaryDir& dir) {
  const QString mlp = dir.filePath("mlp.pt2"), other = dir.filePath("dynamic_batch.pt2");
  if (!writePt2(*sample("mlp"), mlp.toStdString()).ok() || !writePt2(*sample("dynamic_batch"), other.toStdString()).ok())
    return {};
  return {mlp, other};
}

bool openLowered(ui::MainWindow& w, std::shared_ptr<const Program> program, const QString& title) {
  w.openProgram(std::move(program), title);
  if (!QTest::qWaitFor([&] { return w.idle(); }, 30000)) return false;
  w.runner()->runToEnd();
  w.runner()->waitForIdle();
  return QTest::qWaitFor([&] { return w.idle(); }, 30000);
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void opensAProgram() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/numpyrt_const_methods.pte"));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(w.current());
    int methods = 0;
    for (int i = 0; i < w.summaryTree()->topLevelItemCount(); ++i)
      methods += w.summaryTree()->topLevelItem(i)->text(0) == "Method";
    QCOMPARE(methods, 5);
    QVERIFY(w.reportView()->toPlainText().contains("method get_tensor"));
    QVERIFY(w.windowTitle().startsWith("numpyrt_const_methods.pte"));
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-inspect.png"));
  }

  // The sample menu offers the zoo and its variants; a variant's options reach the builder.
  void opensASampleVariant() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    QAction* variant = nullptr;
    for (QAction* a : w.menuBar()->findChildren<QAction*>())
      if (a->text() == "llama --attention static") variant = a;
    QVERIFY(variant);
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    variant->trigger();
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(w.current());
    QCOMPARE(w.current()->program->methods[0].nodes.size(), size_t(2 * (34 + 32 * 8 + 22 * 2) + 11));
    QVERIFY(w.windowTitle().contains("llama --attention static"));
    // Its weights were generated into a file (the cache folder), not memory: presets are gigabytes.
    QVERIFY(w.current()->program->backing && w.current()->program->backing->isMapped());
    // A sample has no file yet: its size is its weights, not "0 bytes".
    auto sizes = w.summaryTree()->findItems("Size", Qt::MatchExactly | Qt::MatchRecursive);
    QVERIFY(!sizes.isEmpty());
    QVERIFY2(sizes.first()->text(1).contains("of weights, not saved"), qPrintable(sizes.first()->text(1)));
    QVERIFY(QString::fromStdString(w.current()->report).startsWith("program: sample:llama"));
    QVERIFY(!QString::fromStdString(w.current()->report).contains("(0 bytes)"));
    spy.clear();
    w.openSample("llama --layers");  // an option without its value: an error, not a crash
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), false);
  }

  // Nothing open: a start page (not an empty canvas) and no Save or Export that would do nothing.
  void startPageUntilAProgramIsOpen() {
    QSettings().setValue("recentFiles", QStringList{"/nowhere/kws.pte"});
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(w.startPageShown());
    for (const char* name : {"&Save Workspace", "Save Workspace &As…", "&Export…"}) {
      QAction* a = menuAction(w, name);
      QVERIFY2(a && !a->isEnabled(), name);
    }
    ui::StartPage* page = w.startPage();
    QStringList lines;  // the sample rows as shown: a link and a line each, none hidden or clipped away
    QLabel* mlpLink = nullptr;
    for (QLabel* l : page->samples()->findChildren<QLabel*>()) {
      QVERIFY(l->isVisible() && l->height() >= l->heightForWidth(l->width()) - 1);
      lines << l->text();
      if (l->text().contains("href=\"sample:mlp\"")) mlpLink = l;
    }
    for (const SampleInfo& info : sampleList()) {
      const QString name = "href=\"sample:" + QString::fromStdString(info.name) + "\"";
      const QString what = QString::fromStdString(info.description).section(" (--", 0, 0).toHtmlEscaped();
      QVERIFY2(lines.filter(name).size() >= 1 && lines.filter(what).size() == 1, info.name.c_str());
    }
    QVERIFY(page->recent()->text().contains("kws.pte"));
    // The shortcuts come from the actions: what the menus bind is what the page says.
    QAction* next = menuAction(w, "&Next Pass");
    QVERIFY(next && page->shortcuts()->text().contains(next->shortcut().toString(QKeySequence::NativeText)));
    QVERIFY(page->shortcuts()->text().contains("Next Pass"));
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-start-page.png"));

    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    QVERIFY(mlpLink);
    emit mlpLink->linkActivated("sample:mlp");  // a click on the sample's name
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(!w.startPageShown());
    QVERIFY(w.windowTitle().contains("mlp"));
    for (const char* name : {"&Save Workspace", "Save Workspace &As…", "&Export…"}) QVERIFY2(menuAction(w, name)->isEnabled(), name);
    QSettings().remove("recentFiles");
  }

  // Help lists every shortcut the menus bind (read from the actions, so a new key shows up by itself),
  // explains the graph and the plan; the View menu names the views it switches to.
  void helpListsTheShortcuts() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    QAction* fit = menuAction(w, "&Fit Graph");
    QVERIFY(fit);
    fit->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_G));  // a key no list written by hand has
    QAction* keys = menuAction(w, "&Keyboard Shortcuts");
    QVERIFY(keys);
    keys->trigger();
    auto* table = w.findChild<QTableWidget*>("shortcutsTable");
    QVERIFY(table);
    QStringList rows;
    for (int r = 0; r < table->rowCount(); ++r) rows << table->item(r, 0)->text() + " = " + table->item(r, 1)->text();
    int bound = 0;
    for (QAction* a : w.menuBar()->findChildren<QAction*>()) {
      if (a->shortcut().isEmpty() || a->menu()) continue;
      const QString expected = a->shortcut().toString(QKeySequence::NativeText) + " = ";
      const QString name = a->text().remove('&').remove(QChar(0x2026));
      QVERIFY2(rows.filter(expected).filter(name).size() == 1, qPrintable(expected + name));
      ++bound;
    }
    QVERIFY(bound >= 20);
    QVERIFY(rows.contains(fit->shortcut().toString(QKeySequence::NativeText) + " = View › Fit Graph"));
    QVERIFY(!rows.filter("Config › Undo").isEmpty());  // the config dock's own keys too
    keys->trigger();  // asked again: the page already open comes forward, no second one
    QCOMPARE(w.findChildren<QDialog*>("shortcutsDialog").size(), 1);
    const QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.findChild<QDialog*>("shortcutsDialog")->grab().save(shots + "/studio-help-shortcuts.png"));

    QAction* guide = menuAction(w, "How to &Read the Graph and the Plan");
    QVERIFY(guide);
    guide->trigger();
    auto* text = w.findChild<QTextBrowser*>("readingGuide");
    QVERIFY(text);
    for (const char* word : {"dashed", "lower bound", "peak", "arena", "Groups"})
      QVERIFY2(text->toPlainText().contains(word), word);
    if (!shots.isEmpty()) QVERIFY(w.findChild<QDialog*>("readingGuideDialog")->grab().save(shots + "/studio-help-guide.png"));

    // View menu: the views by name, each switching to its tab; no "View 5" that does nothing.
    QVERIFY(!menuAction(w, "View 1") && !menuAction(w, "View 5"));
    for (int i = 0; i < w.views()->count(); ++i) {
      QAction* a = menuAction(w, w.views()->tabText(i));
      QVERIFY2(a, qPrintable(w.views()->tabText(i)));
      QCOMPARE(a->shortcut(), QKeySequence(Qt::CTRL | (Qt::Key_1 + i)));
      a->trigger();
      QCOMPARE(w.views()->currentIndex(), i);
    }
  }

  void opensAnExportArchive() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pt2/linear.pt2"));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(!w.summaryTree()->findItems("parameter p_linear_weight", Qt::MatchExactly | Qt::MatchRecursive).isEmpty());
    QVERIFY(w.reportView()->toPlainText().contains("edge dialect check: problems: 1"));
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-pt2.png"));
  }

  void opensADataFile() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("ptd/linear.ptd"));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(!w.summaryTree()->findItems("linear.weight", Qt::MatchExactly | Qt::MatchRecursive).isEmpty());
    QVERIFY(w.reportView()->toPlainText().contains("linear.bias: float32[3], 12 bytes"));
  }

  void findsDataFilesBeside() {
    LSTUDIO_REQUIRE_FIXTURES();
    // linear.pte's data file lives in another folder: nothing beside it, so its
    // external tensors stay unresolved and the window says so.
    ui::MainWindow w;
    w.setQuietErrors(true);
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/linear.pte"));
    QVERIFY(spy.wait(30000));
    QVERIFY(w.current());
    QCOMPARE(w.current()->summary.unresolvedExternal.size(), size_t(2));
    QVERIFY(!w.summaryTree()->findItems("Unresolved external tensors", Qt::MatchExactly | Qt::MatchRecursive).isEmpty());
  }

  void reportsBrokenFiles() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write(QByteArray(64, '\x01'));
    f.flush();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(f.fileName());
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), false);
    QString msg = spy.first().at(1).toString();
    QVERIFY2(msg.contains(f.fileName()) && msg.contains("at byte 4"), qPrintable(msg));
    QVERIFY(!w.current());
  }

  // A real .pte: its pipeline de-lowers it first; the config matches the
  // file; a re-tagging rule and a new alignment export a program with the
  // same instructions and the constants moved to a .ptd.
  void relowersAPte() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/dnf.pte"));
    QVERIFY(spy.wait(30000));
    ui::PipelineRunner* r = w.runner();
    QVERIFY(r->hasPipeline());
    QCOMPARE(w.timeline()->topLevelItem(1)->text(0), QString("DelowerPtePass"));
    QCOMPARE(row(w.timeline(), "ReplaceViewOpsWithViewCopyOpsPass"), -1);  // the .pte went through to_edge already
    QVERIFY(w.logView()->toPlainText().contains("Config set to match dnf.pte"));
    QCOMPARE(w.shownProgram()->format, SourceFormat::Pte);  // the file as read, with its plan
    r->step();
    r->waitForIdle();
    QVERIFY(w.shownProgram()->methods[0].nonConstBufferSizes.empty());  // plan dropped
    ExecutorchBackendConfig c = w.configEditor()->config();
    c.externalConstants = true;  // by the rule: every constant to weights.ptd
    c.externalConstantRules = {{.file = "weights.ptd"}};
    c.segmentAlignment = 1024;
    w.applyConfig(c);
    r->runToEnd();
    r->waitForIdle();
    QVERIFY(r->state().atEnd() && !r->state().failed);
    QTemporaryDir dir;
    w.exportProgram();
    QTRY_VERIFY_WITH_TIMEOUT(w.exportDialog() != nullptr, 30000);
    ui::ExportDialog* d = w.exportDialog();
    QString pte = dir.filePath("dnf.pte");
    d->setDestination(pte, dir.path());
    d->setAskBeforeOverwrite(false);
    QSignalSpy done(d, &ui::ExportDialog::exportFinished);
    QVERIFY(d->startExport());
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().at(0).toBool(), qPrintable(done.first().at(1).toString()));
    auto back = readProgramFile(pte.toStdString());
    QVERIFY(back.ok());
    auto orig = readProgramFile(fixture("pte/dnf.pte").toStdString());
    QVERIFY(orig.ok());
    QCOMPARE(back->methods[0].nodes.size(), orig->methods[0].nodes.size());
    QVERIFY(back->methods[0].nonConstBufferSizes[1] <= orig->methods[0].nonConstBufferSizes[1]);
    // Segments holding bytes start on the alignment; with every constant in weights.ptd the
    // .pte keeps only the empty constant segment (no header), as ExecuTorch writes it.
    for (const Segment& seg : back->segments)
      if (seg.size) QCOMPARE(seg.offset % 1024, uint64_t(0));
    auto data = readDataFile(dir.filePath("weights.ptd").toStdString());
    QVERIFY(data.ok());
    QVERIFY(!data->entries.empty());
    QVERIFY(resolveExternalTensors(back.value(), {data.value()}).ok());
  }

  void stepsThroughThePasses() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    w.openProgram(sample("mlp"), "mlp");
    w.views()->setCurrentWidget(w.graphTextView());  // the text view is only kept up to date while shown
    ui::PipelineRunner* r = w.runner();
    QVERIFY(r->hasPipeline());
    const size_t passes = r->state().records.size();
    QCOMPARE(w.timeline()->topLevelItemCount(), int(passes) + 1);  // the input, then every pass
    QCOMPARE(w.shownSnapshot(), 0);

    r->step();
    r->waitForIdle();
    QCOMPARE(r->state().position, size_t(1));
    QCOMPARE(w.shownSnapshot(), 1);
    QVERIFY(w.timeline()->topLevelItem(1)->toolTip(0).contains("changed"));

    QVERIFY(w.runToPass("ToOutVarPass"));
    r->waitForIdle();
    QCOMPARE(w.timeline()->currentItem()->text(0), QString("ToOutVarPass"));
    // Every kernel became its out variant: each node is marked modified, none added or removed.
    const Method& m = w.shownProgram()->methods[0];
    QCOMPARE(w.shownDiff().modified, m.nodes.size());
    QCOMPARE(w.shownDiff().added, size_t(0));
    // The diff was computed on the runner's worker, one per pass run (null when nothing changed).
    const ui::PipelineState& st = r->state();
    QCOMPARE(st.diffs.size(), st.position);
    QVERIFY(st.diffs.back());
    QCOMPARE((*st.diffs.back())[0].modified, m.nodes.size());
    for (size_t i = 0; i < st.position; ++i)
      QCOMPARE(bool(st.diffs[i]), st.records[i].state == PassRecord::State::Changed);
    QVERIFY(w.shownDiff().removed.empty());
    QVERIFY(w.graphTextView()->toPlainText().contains("aten::addmm.out"));
    QCOMPARE(w.graphTextView()->extraSelections().size(), int(m.nodes.size()));

    // An earlier snapshot, chosen on the timeline, shows the functional ops again.
    w.showSnapshot(1);
    QVERIFY(!w.graphTextView()->toPlainText().contains("aten::addmm.out"));
    QVERIFY(w.graphTextView()->toPlainText().contains("aten::addmm.default"));

    r->back();
    r->waitForIdle();
    QCOMPARE(r->state().records[r->state().position].state, PassRecord::State::NotRun);
    r->runToEnd();
    r->waitForIdle();
    QVERIFY(r->state().atEnd());
    QCOMPARE(w.shownSnapshot(), int(passes));
    QVERIFY(w.graphTextView()->toPlainText().contains("arenas: mem_id 1"));
    QVERIFY(w.logView()->toPlainText().contains("MemoryPlanningPass: changed"));

    // Hiding passes that changed nothing leaves the changed ones.
    int skipped = row(w.timeline(), "ExternalConstantsPass");
    QVERIFY(skipped > 0);
    QVERIFY(!w.timeline()->topLevelItem(skipped)->isHidden());
    w.findChild<QCheckBox*>()->setChecked(true);
    QVERIFY(w.timeline()->topLevelItem(row(w.timeline(), "ExternalConstantsPass"))->isHidden());
    QVERIFY(!w.timeline()->topLevelItem(row(w.timeline(), "ToOutVarPass"))->isHidden());
  }

  // Issue 23, item 7: at 1366×768 the passes panel cut names
  // ("UnsafeRemoveAutoFuncti…") and times (13.38 read "13"); its dots had no legend.
  // A first start at 1366x768: the Constants dock, raised from behind the log, shows rows (not
  // just its header) with each row's destination in view; the Config dock shows its fields whole.
  // Issue #23 item 14: Help opens the README's sections, offline, inside the studio.
  void helpOpensTheReadmeSections() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    QVERIFY2(!ui::findReadme().isEmpty(), "README.md two folders above the test");
    for (const QString& heading : ui::readmeSections()) {
      QAction* a = menuAction(w, heading);
      QVERIFY2(a, qPrintable(heading));
      a->trigger();
      QCOMPARE(w.findChildren<QDialog*>("readmeDialog").size(), 1);  // the page asked for, alone
      auto* text = w.findChild<QDialog*>("readmeDialog")->findChild<QTextBrowser*>("readmeText");
      QVERIFY(text);
      const QString shown = text->toPlainText();
      QVERIFY2(shown.startsWith(heading), qPrintable(heading + ": " + shown.left(80)));
      for (const QString& other : ui::readmeSections())
        if (other != heading) QVERIFY2(!shown.contains("\n" + other + "\n"), qPrintable(heading + " shows " + other));
    }
    const QString studio = ui::readmeSection("intro\n## The studio\nA\n### Sub\nB\n## Layout\nC\n", "The studio");
    QCOMPARE(studio, QString("## The studio\nA\n### Sub\nB"));
    QVERIFY(ui::readmeSection("## Layout\nC", "Nothing").isEmpty());
    const QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.findChild<QDialog*>("readmeDialog")->grab().save(shots + "/studio-help-readme.png"));
  }

  void docksReadableAt1366() {
    QSettings().remove("window");  // a first start: the docks take their default sizes
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.openProgram(sample("mobilenet_v2"), "mobilenet_v2");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QTest::qWait(50);  // the first-start dock sizes are applied from the event loop
    w.findChild<QDockWidget*>("constantsDock")->raise();
    QTest::qWait(50);
    QTableView* v = w.constantTable()->view();
    QVERIFY(v->isVisible() && v->model()->rowCount() > 100);
    const int rows = v->viewport()->height() / v->verticalHeader()->defaultSectionSize();
    QVERIFY2(rows >= 4, qPrintable(QString("%1 rows in view").arg(rows)));
    const int dest = v->columnViewportPosition(ui::ConstantTable::Destination) + v->columnWidth(ui::ConstantTable::Destination);
    QVERIFY2(dest <= v->viewport()->width(), qPrintable(QString("destination ends at %1 of %2").arg(dest).arg(v->viewport()->width())));
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-constants-1366.png"));

    w.findChild<QDockWidget*>("configDock")->raise();
    QTest::qWait(50);
    QWidget* viewport = w.configEditor()->findChild<QScrollArea*>()->viewport();
    for (const char* f : {"memory_planning_pass.algorithms", "dynamic_memory_planning_mode", "segment_alignment"}) {
      QWidget* e = w.configEditor()->fieldEditor(f);
      QVERIFY2(e->mapTo(viewport, QPoint(e->width(), 0)).x() <= viewport->width(), f);
    }
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-config-1366.png"));
  }

  // Issue #23 item 9: switching a centre tab or a dock's tab leaves every dock its size.
  void tabsKeepTheDocksSizes() {
    QSettings().remove("window");  // a first start: the docks take their default sizes
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1024, 768);  // a small screen: the centre is as narrow as it may be
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.openProgram(sample("llama", {.layers = 2}), "llama");
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QTest::qWait(50);  // the first-start dock sizes are applied from the event loop
    auto sizes = [&w] {
      QStringList s;
      for (const char* d : {"passesDock", "inspectorDock", "configDock", "logDock", "constantsDock"}) {
        auto* dock = w.findChild<QDockWidget*>(d);
        s << QString("%1 %2x%3").arg(d).arg(dock->width()).arg(dock->height());
      }
      return s;
    };
    auto settleLayout = [&w] {
      QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
      QTest::qWait(30);
    };
    settleLayout();
    // Sizes of the raised docks only: the one behind another tab has none of its own.
    auto shown = [&] {
      QStringList s;
      for (const QString& line : sizes())
        if (w.findChild<QDockWidget*>(line.section(' ', 0, 0))->isVisible() &&
            !w.findChild<QDockWidget*>(line.section(' ', 0, 0))->visibleRegion().isEmpty())
          s << line;
      return s;
    };
    const QStringList before = shown();
    QVERIFY(before.size() >= 3);
    for (int round = 0; round < 2; ++round)
      for (int i = 0; i < w.views()->count(); ++i) {
        w.views()->setCurrentIndex(i);
        settleLayout();
        QVERIFY2(shown() == before, qPrintable(w.views()->tabText(i) + ": " + shown().join(", ") + " / " + before.join(", ")));
      }
    w.views()->setCurrentIndex(0);
    const QStringList all = sizes();
    for (const char* d : {"configDock", "constantsDock", "inspectorDock", "logDock"}) {
      w.findChild<QDockWidget*>(d)->raise();
      settleLayout();
      // A dock and the one it is tabbed with share one place: its width and height stay.
      QCOMPARE(sizes().filter("passesDock"), all.filter("passesDock"));
      auto* dock = w.findChild<QDockWidget*>(d);
      const bool right = QString(d) == "configDock" || QString(d) == "inspectorDock";
      const QString firstOfPlace = right ? "inspectorDock" : "logDock";
      const QString was = all.filter(firstOfPlace).first().section(' ', 1);
      QVERIFY2(QString("%1x%2").arg(dock->width()).arg(dock->height()) == was,
               qPrintable(QString(d) + " " + QString("%1x%2").arg(dock->width()).arg(dock->height()) + " was " + was));
    }
  }

  void passesPanelReadsWhole() {
    QSettings().remove("window");  // a first start: the docks take their default sizes
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.openProgram(sample("llama", {.layers = 2}), "llama");
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QTest::qWait(50);  // the first-start dock sizes are applied from the event loop
    QTreeWidget* t = w.timeline();
    const ui::PipelineState& st = w.runner()->state();
    QCOMPARE(t->topLevelItemCount(), int(st.records.size()) + 1);
    for (int i = 0; i < t->topLevelItemCount(); ++i) {
      QTreeWidgetItem* it = t->topLevelItem(i);
      const int needed = QFontMetrics(it->font(0)).horizontalAdvance(it->text(0)) + t->iconSize().width() + 10;
      QVERIFY2(needed <= t->columnWidth(0), qPrintable(QString("%1: %2 > %3").arg(it->text(0)).arg(needed).arg(t->columnWidth(0))));
    }
    QVERIFY(t->columnWidth(0) + t->columnWidth(1) <= t->viewport()->width());
    for (size_t i = 0; i < st.records.size(); ++i) {
      const PassRecord& r = st.records[i];
      if (r.state == PassRecord::State::Skipped) continue;
      QCOMPARE(t->topLevelItem(int(i) + 1)->text(1), QString::number(r.milliseconds, 'f', 2));
      QVERIFY(t->topLevelItem(int(i) + 1)->toolTip(0).contains(QString::fromStdString(r.name)));
    }
    auto* legend = w.findChild<QWidget*>("passLegend");
    QVERIFY(legend && legend->isVisible());
    QStringList said;
    for (QLabel* l : legend->findChildren<QLabel*>()) said << l->text();
    for (const char* state : {"changed", "unchanged", "not run", "skipped by config", "failed"})
      QVERIFY2(said.contains(state), qPrintable(said.join(", ")));
  }

  void selectionAndFind() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.openProgram(sample("llama", {.layers = 2}), "llama");
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    w.views()->setCurrentWidget(w.graphTextView());
    QVERIFY(w.selectNodeByName("mm_3"));
    QString html = w.inspector()->toPlainText();
    QVERIFY2(html.contains("aten::mm.out"), qPrintable(html));
    QVERIFY(html.contains("mem_id 1"));  // planned: its slot and lifetime
    QVERIFY(html.contains("lifetime steps"));
    QVERIFY(html.contains("layers.0.attention.wo"));
    QCOMPARE(w.graphTextView()->textCursor().blockNumber(), w.selectedNode() + 1);

    QVERIFY(w.findNode("layers.1.feed_forward"));
    int first = w.selectedNode();
    const Method& m = w.shownProgram()->methods[0];
    bool inModule = false;
    for (const auto& f : m.nodes[first].meta.moduleStack) inModule = inModule || f.path == "layers.1.feed_forward";
    QVERIFY(inModule);
    QVERIFY(w.findNode("layers.1.feed_forward"));
    QVERIFY(w.selectedNode() > first);
    QVERIFY(w.findNode("layers.1.feed_forward", true));
    QCOMPARE(w.selectedNode(), first);
    QVERIFY(!w.findNode("no_such_node_anywhere"));

    // The memory-plan view follows the selection, and its clicks select nodes.
    QTRY_VERIFY_WITH_TIMEOUT(w.planView()->isPlanReady(), 30000);
    QVERIFY(w.planView()->rectangleCount() > 0);
    QVERIFY(w.selectNodeByName("mm_3"));
    QCOMPARE(w.planView()->selectedValue(), int(m.nodes[w.selectedNode()].outputs.at(0)));
    int relu = -1;
    for (size_t i = 0; i < m.nodes.size() && relu < 0; ++i)
      if (m.nodes[i].name == "sigmoid") relu = int(i);
    QVERIFY(relu >= 0);
    emit w.planView()->nodeSelected(relu);
    QCOMPARE(w.selectedNode(), relu);
    QVERIFY(w.inspector()->toPlainText().contains("aten::sigmoid.out"));

    // Clicking a line of the text view selects that node.
    QTextCursor c(w.graphTextView()->document()->findBlockByNumber(3));
    w.graphTextView()->setTextCursor(c);
    QCOMPARE(w.selectedNode(), 2);
  }

  // Issue 23, item 11: find was a modal dialog with no count, and each F3
  // left one more layer expanded. Now a bar says "k of N" and the groups the
  // previous hit opened close again when the next hit is elsewhere.
  void findBarCountsAndTidiesUp() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.openProgram(sample("llama", {.layers = 4}), "llama");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    ui::GraphView* g = w.graphView();
    QVERIFY(g->isGroupCollapsed("layers.0") && g->isGroupCollapsed("layers.1"));
    QAction* findAct = menuAction(w, "&Find Node…");
    QAction* next = menuAction(w, "Find &Next");
    QAction* previous = menuAction(w, "Find &Previous");
    QVERIFY(findAct && next && previous);
    QCOMPARE(findAct->shortcut(), QKeySequence(QKeySequence::Find));
    QCOMPARE(next->shortcut(), QKeySequence(QKeySequence::FindNext));
    QCOMPARE(previous->shortcut(), QKeySequence(QKeySequence::FindPrevious));
    findAct->trigger();
    QVERIFY(!QApplication::activeModalWidget());
    QVERIFY(w.findBar()->isVisible());
    QTest::keyClicks(w.findBar()->field(), "feed_forward");
    const Method& m = w.shownProgram()->methods[0];
    auto moduleOf = [&](int node) {
      const auto& stack = m.nodes[size_t(node)].meta.moduleStack;
      return stack.empty() ? std::string() : stack.back().path;
    };
    int total = 0;
    for (const Node& n : m.nodes)
      for (const ModuleFrame& f : n.meta.moduleStack)
        if (f.path.find("feed_forward") != std::string::npos) {
          ++total;
          break;
        }
    QVERIFY(total > 4);
    QCOMPARE(w.findBar()->countText(), QString("1 of %1").arg(total));
    QVERIFY(moduleOf(w.selectedNode()).starts_with("layers.0."));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!g->isGroupCollapsed("layers.0"));
    QTest::keyClick(w.findBar()->field(), Qt::Key_Return);  // Enter: the next match
    QCOMPARE(w.findBar()->countText(), QString("2 of %1").arg(total));
    // F3 until the hit is in the next layer: the first layer closes again.
    int steps = 0;
    while (!moduleOf(w.selectedNode()).starts_with("layers.1.") && ++steps < total) next->trigger();
    QVERIFY(moduleOf(w.selectedNode()).starts_with("layers.1."));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!g->isGroupCollapsed("layers.1"));
    QVERIFY(g->isGroupCollapsed("layers.0"));
    QCOMPARE(w.findBar()->countText(), QString("%1 of %2").arg(steps + 2).arg(total));
    previous->trigger();  // Shift+F3
    QCOMPARE(w.findBar()->countText(), QString("%1 of %2").arg(steps + 1).arg(total));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    if (QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR"); !shots.isEmpty())
      QVERIFY(w.grab().save(shots + "/studio-find-bar.png"));
    QVERIFY(g->isGroupCollapsed("layers.1"));
    QVERIFY(!g->isGroupCollapsed("layers.0"));
    // Another selection: the count says how many, not which; a miss says so; Esc closes.
    QVERIFY(w.selectNodeByName(QString::fromStdString(m.nodes[0].name)));
    QCOMPARE(w.findBar()->countText(), QString("%1 matches").arg(total));
    w.findBar()->field()->clear();
    QTest::keyClicks(w.findBar()->field(), "no_such_node_anywhere");
    QCOMPARE(w.findBar()->countText(), QString("no match"));
    QTest::keyClick(w.findBar()->field(), Qt::Key_Escape);
    QVERIFY(!w.findBar()->isVisible());
  }

  // The inspector shows a node or value of the program and method shown, or
  // nothing. It kept the previous file's node after another file was opened,
  // and kept the first method's node after a switch of method tab; a node
  // clicked there then read like the one before, as it named no method.
  // 29 methods (the QNN llama): a list beside the tabs jumps to any of them; few methods, no list.
  void methodListJumpsToAMethod() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/stories260k_hybrid_llama_qnn.pte"));
    QVERIFY(spy.wait(60000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 60000);
    auto* list = w.findChild<QComboBox*>("methodList");
    QVERIFY(list && list->isVisible());
    const auto& methods = w.shownProgram()->methods;
    QCOMPARE(list->count(), int(methods.size()));
    QVERIFY(list->count() >= 29);
    for (int i = 0; i < list->count(); ++i) QCOMPARE(list->itemText(i), QString::fromStdString(methods[i].name));
    const int target = list->count() - 3;  // far past what the tab bar shows
    list->setCurrentIndex(target);
    emit list->activated(target);
    QCOMPARE(w.shownMethod(), target);
    QTabBar* tabs = nullptr;  // the method tabs: the tab bar with a tab per method
    for (QTabBar* t : w.findChildren<QTabBar*>())
      if (t->count() == list->count()) tabs = t;
    QVERIFY(tabs);
    QCOMPARE(tabs->currentIndex(), target);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 60000);
    QCOMPARE(list->currentIndex(), target);  // still naming the method shown after the refresh
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-method-list.png"));

    w.openProgram(sample("mlp"), "mlp");  // one method: neither tabs nor list
    QVERIFY(!list->isVisible());
  }

  void inspectorFollowsTheShownProgram() {
    Program two = *sample("mlp");
    two.methods.push_back(two.methods[0]);
    two.methods[1].name = "second";
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1400, 900);
    w.show();
    w.openProgram(std::make_shared<const Program>(std::move(two)), "two_methods");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.selectNodeByName("relu"));
    QString text = w.inspector()->toPlainText();
    QVERIFY2(text.contains("relu") && text.contains("in method forward"), qPrintable(text));

    // Another method tab: nothing of the first method stays; a click shows the node of this one.
    QTabBar* methods = nullptr;
    for (QTabBar* t : w.findChildren<QTabBar*>())
      if (t->count() == 2 && t->tabText(1) == "second") methods = t;
    QVERIFY(methods);
    methods->setCurrentIndex(1);
    QCOMPARE(w.shownMethod(), 1);
    QVERIFY2(w.inspector()->toPlainText().isEmpty(), qPrintable(w.inspector()->toPlainText()));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    const Method& second = w.shownProgram()->methods[1];
    int relu = -1;
    for (size_t i = 0; i < second.nodes.size() && relu < 0; ++i)
      if (second.nodes[i].name == "relu") relu = int(i);
    QPoint at = w.graphView()->viewportPosOfMethodNode(relu);
    QVERIFY(relu >= 0 && !at.isNull());
    QTest::mouseClick(w.graphView()->canvas()->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(w.selectedNode(), relu);
    text = w.inspector()->toPlainText();
    QVERIFY2(text.contains("relu") && text.contains("in method second"), qPrintable(text));

    // Another program: the inspector lets go of this one (it showed "relu … in method second").
    w.openProgram(sample("dynamic_batch"), "dynamic_batch");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.selectedNode(), -1);
    QVERIFY2(w.inspector()->toPlainText().isEmpty(), qPrintable(w.inspector()->toPlainText()));
    // After a pass, with nothing selected, it tells what the pass did.
    QVERIFY(w.runToPass("ToOutVarPass"));
    w.runner()->waitForIdle();
    QVERIFY2(w.inspector()->toPlainText().contains("ToOutVarPass"), qPrintable(w.inspector()->toPlainText()));
  }

  void failingPassSelectsTheNode() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto imported = readExportFile(fixture("pt2/linear.pt2").toStdString());
    QVERIFY(imported.ok());
    Program custom = imported.value();
    custom.methods[0].operators[0] = OperatorRef{"my_ns::linear_nonexistent", "default"};
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1000, 480);  // the Passes list shorter than its 31 rows
    w.show();
    w.openProgram(std::make_shared<const Program>(std::move(custom)), "broken");
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    QVERIFY(w.runner()->state().failed);
    int failed = row(w.timeline(), "ToOutVarPass");
    QVERIFY(w.timeline()->topLevelItem(failed)->toolTip(0).contains("failed"));
    // The failed pass is in sight in the list (it was below the fold).
    QTRY_VERIFY(w.timeline()->viewport()->rect().contains(w.timeline()->visualItemRect(w.timeline()->topLevelItem(failed))));
    // The window shows the program the pass choked on, with the node selected.
    QCOMPARE(w.shownSnapshot(), failed - 1);
    QCOMPARE(w.selectedNode(), 0);
    QVERIFY(w.inspector()->toPlainText().contains("linear"));
    QVERIFY(w.logView()->toPlainText().contains("node 'linear'"));
  }

  // Issue 42: an operator the studio's to_edge cannot lower stops it at the ATen check, and the
  // window offers upstream's ETRecord as the way on (only then).
  void notCoreOperatorOffersUpstreamEtRecord() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto imported = readExportFile(fixture("pt2/linear.pt2").toStdString());
    QVERIFY(imported.ok());
    Program custom = imported.value();
    custom.methods[0].operators[0] = OperatorRef{"aten::histc", "default"};
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    w.openProgram(std::make_shared<const Program>(std::move(custom)), "not core");
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    QVERIFY(w.runner()->state().failed);
    QCOMPARE(QString::fromStdString(w.runner()->state().records[w.runner()->state().position - 1].name),
             QString("EXIRATenDialectVerifier"));
    QTRY_VERIFY(w.openEtRecordButton()->isVisible());
    QVERIFY(w.openEtRecordButton()->toolTip().contains("generate_etrecord=True"));

    w.openFile(fixture("pt2/linear.pt2"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    QVERIFY(!w.runner()->state().failed);
    QTRY_VERIFY(!w.openEtRecordButton()->isVisible());
  }

  void graphFollowsTheSnapshot() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    w.openProgram(sample("mlp"), "mlp");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.graphView()->visibleItemCount() > 0);
    QCOMPARE(w.graphView()->markedItemCount(), 0);  // the input: nothing changed yet
    QVERIFY(w.runToPass("ToOutVarPass"));
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.graphView()->markedItemCount() > 0);  // every kernel became an out variant
    QVERIFY(w.selectNodeByName("relu"));
    QCOMPARE(w.graphView()->selectedNode(), w.selectedNode());

    // Side by side with the previous snapshot; a click on the left selects the same node on the right.
    w.setCompare(true);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.beforeView()->isVisible());
    QVERIFY(w.beforeView()->visibleItemCount() > 0);
    const Method& m = w.shownProgram()->methods[0];
    int addmm = -1;
    for (size_t i = 0; i < m.nodes.size() && addmm < 0; ++i)
      if (m.nodes[i].name == "addmm_1") addmm = int(i);
    QVERIFY(addmm >= 0);
    emit w.beforeView()->nodeSelected(addmm);  // same order before ToOutVarPass
    QCOMPARE(w.selectedNode(), addmm);
    w.setCompare(false);
    QVERIFY(!w.beforeView()->isVisible());
  }

  // Lowering > Run Program: each node's values in the inspector, against the earliest snapshot
  // that runs; values of another snapshot are not passed off as the shown one's; a run can be
  // cancelled.
  void runsTheProgram() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openLowered(w, sample("mlp"), "mlp"));
    QAction* run = menuAction(w, "R&un Program");
    QVERIFY(run && run->isEnabled());
    run->trigger();
    QVERIFY(w.programRun()->running());
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    auto r = w.programRun()->result();
    QVERIFY(r && r->ok);
    QCOMPARE(r->snapshot, w.shownSnapshot());
    QVERIFY(r->reference > 0);  // an ATen program's input does not run; a later snapshot does
    QVERIFY(!r->firstDifference);
    QVERIFY2(w.logView()->toPlainText().contains("every node equals its namesake"), qPrintable(w.logView()->toPlainText()));
    QVERIFY(w.selectNodeByName("relu"));
    QString text = w.inspector()->toPlainText();
    QVERIFY2(text.contains("min / max") && text.contains("histogram") && text.contains("0 (equal)"), qPrintable(text));
    QVERIFY(text.contains("float32[4, 256]"));
    // The graph's boxes get stripes from the values: by magnitude (the default), by difference
    // (every node equal: all green), or none.
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    const int kernels = 8;  // the method's kernel calls: 3 permute_copy, 3 addmm, 2 relu
    QTRY_COMPARE_WITH_TIMEOUT(w.graphView()->tintedItemCount(), kernels, 30000);
    w.setValueColouring(ui::MainWindow::ValueColouring::Difference);
    QCOMPARE(w.graphView()->tintedItemCount(), kernels);
    w.setValueColouring(ui::MainWindow::ValueColouring::None);
    QCOMPARE(w.graphView()->tintedItemCount(), 0);
    w.setValueColouring(ui::MainWindow::ValueColouring::Magnitude);
    // Another snapshot shown: the values are not this one's.
    w.showSnapshot(row(w.timeline(), "SpecPropPass"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.selectNodeByName("relu"));
    QVERIFY2(w.inspector()->toPlainText().contains("another snapshot"), qPrintable(w.inspector()->toPlainText()));

    // A longer program, cancelled as soon as it starts.
    SampleOptions o;
    o.layers = 4;
    QVERIFY(openLowered(w, sample("llama", o), "llama"));
    w.runProgram();
    w.programRun()->cancel();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.programRun()->result()->error, QString("cancelled"));
    QVERIFY(w.logView()->toPlainText().contains("Run: cancelled"));
  }

  // A .pt2 that torch.export.save wrote with example inputs runs on them by default, and its
  // outputs are those `lowering-cli run` gives on them.
  void runsOnThePt2sSampleInputs() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pt2/linear.pt2"));
    QVERIFY(spy.wait(30000));
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    w.runProgram();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    auto r = w.programRun()->result();
    QVERIFY2(r && r->ok, r ? qPrintable(r->error) : "");
    QCOMPARE(r->inputs, QString("the .pt2's sample inputs"));
    QVERIFY(r->reference > 0);  // its input emits but calls aten::linear: a later snapshot is the reference
    auto sample = pt2SampleInputs(fixture("pt2/linear.pt2").toStdString());
    QVERIFY(sample && sample->size() == 1);
    auto e = executableSnapshot(*w.runner()->state().snapshot(w.runner()->state().records.size()), "x", {},
                                w.runner()->state().config);
    QVERIFY(e);
    run::RunOptions o;
    o.inputs = sample.value();
    auto direct = run::runProgram(e.value(), o);
    QVERIFY(direct);
    QCOMPARE(r->run.outputs[0].checksum, direct.value().outputs[0].checksum);
  }

  // Lowering > Run Program With Inputs: the inputs come from .npy files (read on the worker);
  // the same values as the iota rule give the same outputs, others other outputs, and a file
  // of the wrong shape fails the run naming the input.
  void runsOnGivenInputs() {
    QTemporaryDir dir;
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openLowered(w, sample("mlp"), "mlp"));
    QVERIFY(menuAction(w, "Run Program &With Inputs…") && menuAction(w, "Run Program &With Inputs…")->isEnabled());
    w.runProgram();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    auto iota = w.programRun()->result();
    QVERIFY(iota && iota->ok);
    QCOMPARE(iota->inputs, QString("iota inputs"));  // the sample's .pt2 keeps no example inputs
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");  // its inputs are the runtime's
    QVERIFY(emitted);
    const Method& m = emitted->methods[0];
    const TensorSpec& spec = m.values[static_cast<size_t>(m.inputs[0])].tensor();
    run::HostValue x;
    x.kind = ValueKind::Tensor;
    x.dtype = ScalarType::Float;
    x.sizes = spec.sizes;
    for (uint64_t i = 0; i < *spec.numel(); ++i) {
      float f = static_cast<float>(run::iotaElement(ScalarType::Float, i));
      x.bytes.insert(x.bytes.end(), reinterpret_cast<uint8_t*>(&f), reinterpret_cast<uint8_t*>(&f) + 4);
    }
    auto save = [&](const QString& name, const run::HostValue& v) {
      QString path = dir.path() + "/" + name;
      return writeFileAtomically(path.toStdString(), run::npyBytes(v)) ? path : QString();
    };
    QString same = save("input_0.npy", x);
    w.runProgram({same});
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    auto given = w.programRun()->result();
    QVERIFY2(given && given->ok, given ? qPrintable(given->error) : "");
    QCOMPARE(given->inputs, QString("1 .npy input(s)"));
    QCOMPARE(given->run.outputs[0].checksum, iota->run.outputs[0].checksum);
    x.bytes[1] ^= 0x40;
    w.runProgram({save("other.npy", x)});
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.programRun()->result()->ok);
    QVERIFY(w.programRun()->result()->run.outputs[0].checksum != iota->run.outputs[0].checksum);
    x.sizes.back() += 1;
    x.bytes.resize(x.bytes.size() + 4 * static_cast<size_t>(x.sizes.front()), 0);
    w.runProgram({save("wrong.npy", x)});
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    auto wrong = w.programRun()->result();
    QVERIFY(!wrong->ok);
    QVERIFY2(wrong->error.contains("input 0"), qPrintable(wrong->error));
    QVERIFY2(w.logView()->toPlainText().contains("Run: "), qPrintable(w.logView()->toPlainText()));
  }

  // File > Open ETDump beside a .pte: the Profile tab lists each timed instruction, slowest
  // first, and a row selects its node; the graph is striped by time, or by the logged values'
  // gap to the interpreter (the debug buffer found beside the ETDump); the inspector shows a
  // node's times. An ETDump of another program is refused with its reason in the log.
  void opensAnEtdump() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    QString pte = dir.path() + "/mlp.pte";
    QVERIFY(writePte(emitted.value(), pte.toStdString(), PteWriteOptions{}));
    run::RunOptions o;
    o.trace = true;
    auto traced = run::runProgram(emitted.value(), o);
    QVERIFY(traced);
    std::string buffer;  // the interpreter's own values, so every gap is 0
    std::vector<LoggedTensor> logged;
    for (const run::TracedNode& t : traced->trace) {
      const run::HostValue& v = t.values.back();
      std::vector<int64_t> strides(v.sizes.size(), 1);
      for (size_t d = v.sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * v.sizes[d];
      logged.push_back({static_cast<int32_t>(t.instruction), v.sizes, strides, static_cast<int64_t>(buffer.size())});
      buffer.append(v.bytes.begin(), v.bytes.end());
    }
    auto etdump = buildEtdump(emitted->methods[0], {100, 300, 200}, logged);
    QString etdp = dir.path() + "/run.etdp";
    QVERIFY(writeFileAtomically(etdp.toStdString(), std::string(etdump.begin(), etdump.end())));
    QVERIFY(writeFileAtomically((dir.path() + "/run.bin").toStdString(), buffer));

    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    w.openFile(pte);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle() && w.current(), 30000);
    QAction* open = menuAction(w, "Open E&TDump…");
    QVERIFY(open && open->isEnabled());
    w.openEtdump(etdp);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    auto e = w.programRun()->etdump();
    QVERIFY2(e && e->ok, e ? qPrintable(e->error) : "no result");
    QVERIFY(e->debugBuffer.endsWith("run.bin"));
    const int kernels = static_cast<int>(traced->trace.size());
    QCOMPARE(w.profileTree()->topLevelItemCount(), kernels);
    // Instruction i took 200 * (i + 1) ticks (the median): the last kernel is the slowest.
    QTreeWidgetItem* top = w.profileTree()->topLevelItem(0);
    QCOMPARE(top->text(0).toULongLong(), static_cast<qulonglong>(traced->trace.back().instruction));
    // Shown as a time: ticks read as nanoseconds (the runtime's clock on Linux), in a fitting unit;
    // the Profile tab in front once the ETDump is read.
    const qulonglong ticks = 200 * (traced->trace.back().instruction + 1);
    QCOMPARE(top->text(2), ticks < 1000 ? QString("%1 ns").arg(ticks) : QString::number(ticks / 1e3, 'f', 2) + " µs");
    QCOMPARE(top->data(2, Qt::UserRole).toULongLong(), ticks);
    QCOMPARE(w.views()->currentWidget(), static_cast<QWidget*>(w.profileTree()));
    QCOMPARE(top->text(4), QString("0"));
    QVERIFY2(w.logView()->toPlainText().contains(QString("%1 of %1 logged values compared").arg(kernels)),
             qPrintable(w.logView()->toPlainText()));
    QCOMPARE(w.valueColouring(), ui::MainWindow::ValueColouring::Time);
    QTRY_COMPARE_WITH_TIMEOUT(w.graphView()->tintedItemCount(), kernels, 30000);
    w.setValueColouring(ui::MainWindow::ValueColouring::Gap);
    QCOMPARE(w.graphView()->tintedItemCount(), kernels);
    // A row selects its node; the inspector shows its times.
    emit w.profileTree()->itemClicked(top, 0);
    QString text = w.inspector()->toPlainText();
    QVERIFY2(text.contains("ETDump") && text.contains("executions") && text.contains("0 (equal)"), qPrintable(text));

    auto other = buildEtdump(emitted->methods[0], {100}, {}, "relu.out");
    QVERIFY(writeFileAtomically(etdp.toStdString(), std::string(other.begin(), other.end())));
    w.openEtdump(etdp);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!w.programRun()->etdump()->ok);
    QVERIFY2(w.logView()->toPlainText().contains("another program"), qPrintable(w.logView()->toPlainText()));
    QCOMPARE(w.profileTree()->topLevelItemCount(), 0);
    QCOMPARE(w.graphView()->tintedItemCount(), 0);
  }

  // Lowering > Run Every Pass: the passes that changed the outputs are marked in the timeline.
  void runsEveryPass() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openLowered(w, sample("training"), "training"));
    QAction* every = menuAction(w, "Run &Every Pass");
    QVERIFY(every && every->isEnabled());
    every->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 60000);
    auto r = w.programRun()->everyPass();
    QVERIFY(r && !r->cancelled);
    QStringList marked;
    for (int i = 0; i < w.timeline()->topLevelItemCount(); ++i)
      if (w.timeline()->topLevelItem(i)->text(0).endsWith(QString::fromUtf8("≠"))) marked << w.timeline()->topLevelItem(i)->text(0);
    // WeightsToOutputsPass adds the weights as outputs; no other pass changes them.
    QCOMPARE(marked, QStringList{QString::fromUtf8("WeightsToOutputsPass  ≠")});
    QVERIFY2(w.logView()->toPlainText().contains(QString::fromUtf8("WeightsToOutputsPass changed the outputs: 5 → 9 outputs")),
             qPrintable(w.logView()->toPlainText()));
    int spec = row(w.timeline(), "SpecPropPass");
    QVERIFY(w.timeline()->topLevelItem(spec)->toolTip(0).contains("values: outputs as before"));
  }

  // Issue 43: after XnnpackPartitioner the window shows, per node, the partition that takes
  // it or why it stays out, and Edit › Find What XNNPACK Did Not Take steps through the latter.
  void partitionerShowsWhatItLeftOut() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.openProgram(sample("llama", {.layers = 1}), "llama");
    w.runner()->waitForIdle();
    ExecutorchBackendConfig c = w.runner()->state().config;
    c.partitioners = {PartitionerSpec{}};
    w.applyConfig(c);
    w.runner()->waitForIdle();
    QVERIFY(w.runToPass("XnnpackPartitioner"));
    w.runner()->waitForIdle();
    const Method& m = w.shownProgram()->methods[0];
    int tagged = 0, left = 0;
    for (const Node& n : m.nodes) tagged += !n.meta.delegationTag.empty(), left += !n.meta.notDelegatedBecause.empty();
    QVERIFY2(tagged > 0 && left > 0, qPrintable(QString("%1 tagged, %2 left out").arg(tagged).arg(left)));

    // Edit › Find What XNNPACK Did Not Take: the find bar steps through the nodes left out.
    QAction* notTaken = nullptr;
    for (QAction* a : w.menuBar()->actions())
      if (a->text() == "&Edit")
        for (QAction* e : a->menu()->actions())
          if (e->text() == "Find What XNNPACK Did &Not Take") notTaken = e;
    QVERIFY(notTaken);
    notTaken->trigger();
    QVERIFY(w.selectedNode() >= 0);
    QVERIFY2(w.findBar()->countText() == QString("1 of %1").arg(left), qPrintable(w.findBar()->countText()));
    const Node& out = w.shownProgram()->methods[0].nodes[w.selectedNode()];
    QVERIFY(!out.meta.notDelegatedBecause.empty());
    QString html = w.inspector()->toPlainText();
    QVERIFY2(html.contains("Not delegated") && html.contains(QString::fromStdString(out.meta.notDelegatedBecause)),
             qPrintable(html));
    QVERIFY(w.findNode(ui::kNotDelegatedQuery));
    QVERIFY2(w.findBar()->countText() == QString("2 of %1").arg(left), qPrintable(w.findBar()->countText()));

    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (!m.nodes[i].meta.delegationTag.empty()) {
        w.selectNode(int(i));
        break;
      }
    QVERIFY2(w.inspector()->toPlainText().contains("XNNPACK takes it: partition tag"), qPrintable(w.inspector()->toPlainText()));
  }

  void configChangesReplan() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.openProgram(sample("llama", {.layers = 2}), "llama");
    w.runner()->runToEnd();
    w.runner()->waitForIdle();
    int64_t before = w.shownProgram()->methods[0].nonConstBufferSizes.at(1);
    ExecutorchBackendConfig c = w.runner()->state().config;
    c.memoryPlanning.algorithms = {"naive"};
    w.applyConfig(c);
    w.runner()->waitForIdle();
    QVERIFY(w.runner()->state().atEnd());
    int64_t after = w.shownProgram()->methods[0].nonConstBufferSizes.at(1);
    QVERIFY2(after > before, qPrintable(QString("%1 -> %2").arg(before).arg(after)));
    QVERIFY(w.logView()->toPlainText().contains("Arena after the config change"));
    QCOMPARE(w.configEditor()->config().memoryPlanning.algorithms, std::vector<std::string>{"naive"});

    // Tagging a constant in the table re-runs the passes; the tensor becomes external.
    QVERIFY(w.constantTable()->model()->rowCount() > 0);
    QString name = w.constantTable()->model()->index(0, 0).data().toString();
    w.constantTable()->chooseDestination(0, "weights.ptd");
    w.runner()->waitForIdle();
    QVERIFY(w.runner()->state().config.externalConstants);
    const Method& m = w.shownProgram()->methods[0];
    bool tagged = false;
    for (const InputSpec& in : m.signature.inputs)
      if (QString::fromStdString(in.target) == name)
        tagged = m.value(in.value).tensor().external && m.value(in.value).tensor().constantTag == "weights";
    QVERIFY2(tagged, qPrintable(name));
    QVERIFY(!w.configEditor()->config().externalConstantRules.empty());
    // The tagging rule is an edit of the config like any other: undoable (it
    // used to clear the config's undo history).
    QVERIFY(w.configEditor()->undoAction()->isEnabled());
    QVERIFY2(w.configEditor()->undoAction()->text().contains("tagging"), qPrintable(w.configEditor()->undoAction()->text()));
    w.configEditor()->undoAction()->trigger();
    w.runner()->waitForIdle();
    QVERIFY(w.configEditor()->config().externalConstantRules.empty());
    QVERIFY(w.runner()->state().config.externalConstantRules.empty());
    QVERIFY(w.configEditor()->redoAction()->isEnabled());
  }

  void workspaceRoundTrip() {
    QTemporaryDir dir;
    QString pt2 = dir.filePath("models/mlp.pt2"), ws = dir.filePath("session.lstudio");
    QVERIFY(QDir().mkpath(dir.filePath("models")));
    QVERIFY(writePt2(*sample("mlp"), pt2.toStdString()).ok());
    {
      ui::MainWindow w;
      w.setQuietErrors(true);
      QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
      w.openFile(pt2);
      QVERIFY(loaded.wait(30000));
      QVERIFY(!w.isModified());
      ExecutorchBackendConfig c = w.configEditor()->config();
      c.memoryPlanning.alignment = 64;
      c.segmentAlignment = 4096;
      w.applyConfig(c);
      QVERIFY(w.runToPass("ToOutVarPass"));
      w.runner()->waitForIdle();
      QVERIFY(w.isModified());
      QVERIFY(w.selectNodeByName("relu"));
      w.views()->setCurrentIndex(2);  // Text
      // Autosave writes the session while it is unsaved.
      QFile::remove(ui::MainWindow::autosavePath());
      w.autosave();
      QVERIFY(QFile::exists(ui::MainWindow::autosavePath()));
      QString error;
      QVERIFY2(w.saveWorkspaceTo(ws, &error), qPrintable(error));
      QVERIFY(!w.isModified());
    }
    // The input is stored relative to the workspace, so the folder can move.
    QFile f(ws);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("\"input\": \"models/mlp.pt2\""));
    f.close();

    ui::MainWindow w;
    w.setQuietErrors(true);
    QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
    w.openFile(ws);
    QVERIFY(loaded.wait(30000));
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.runner()->state().config.memoryPlanning.alignment, uint64_t(64));
    QCOMPARE(w.configEditor()->config().segmentAlignment, uint64_t(4096));
    QCOMPARE(w.timeline()->currentItem()->text(0), QString("ToOutVarPass"));
    QCOMPARE(QString::fromStdString(w.shownProgram()->methods[0].nodes[w.selectedNode()].name), QString("relu"));
    QCOMPARE(w.views()->currentIndex(), 2);
    QVERIFY(!w.isModified());

    // A broken workspace is an error naming the file and the field.
    QString bad = dir.filePath("bad.lstudio");
    QFile b(bad);
    QVERIFY(b.open(QIODevice::WriteOnly));
    b.write("{\"lowering_studio_workspace\": 1, \"input\": \"x.pt2\", \"view\": {\"compare\": 3}}");
    b.close();
    QString error;
    QVERIFY(!w.openWorkspace(bad, &error));
    QVERIFY2(error.contains("bad.lstudio") && error.contains("view.compare"), qPrintable(error));
  }

  // A recovered session is unsaved until it is saved: the title has its *,
  // quitting asks, the recovered config is applied and the autosave stays.
  // After a recovery the window read as saved, Ctrl+Q quit without asking and
  // the autosave, with the edit in it, was deleted.
  void recoveredSessionIsUnsaved() {
    QTemporaryDir dir;
    QString pt2 = dir.filePath("mlp.pt2");
    QVERIFY(writePt2(*sample("mlp"), pt2.toStdString()).ok());
    Workspace crashed;
    crashed.input = pt2.toStdString();
    crashed.config.segmentAlignment = 8192;
    crashed.runTo = "ToOutVarPass";
    const QString autosave = ui::MainWindow::autosavePath();
    QVERIFY(saveWorkspace(crashed, autosave.toStdString()).ok());

    ui::MainWindow w;
    w.show();
    QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
    w.openFile(autosave);
    QVERIFY(loaded.wait(30000));
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.timeline()->currentItem()->text(0), QString("ToOutVarPass"));
    QCOMPARE(w.configEditor()->config().segmentAlignment, uint64_t(8192));
    QCOMPARE(w.runner()->state().config.segmentAlignment, uint64_t(8192));
    QVERIFY(w.isModified());
    QVERIFY2(w.windowHandle()->title().startsWith("mlp.pt2*"), qPrintable(w.windowHandle()->title()));
    QVERIFY(QFile::exists(autosave));

    // Quit (Ctrl+Q) asks; Cancel keeps the window and the autosave.
    QAction* quit = quitAction(w);
    QVERIFY(quit);
    QString said;
    answerNextBox("Cancel", &said);
    quit->trigger();
    QVERIFY2(said.contains("mlp.pt2"), qPrintable(said));
    QVERIFY(w.isVisible());
    QVERIFY(QFile::exists(autosave));
    // Discard closes the window and the autosave goes with the session.
    said.clear();
    answerNextBox("Discard", &said);
    quit->trigger();
    QVERIFY(!said.isEmpty());
    QVERIFY(!w.isVisible());
    QVERIFY(!QFile::exists(autosave));
  }

  // Every action that replaces a session with unsaved changes asks first, as Quit
  // does: Open (and Open Recent, the start page's recent files), a sample, a drop,
  // a workspace. (Open replaced a session with a tagging rule added without asking.)
  void replacingAnUnsavedSessionAsks() {
    QTemporaryDir dir;
    QString mlp = dir.filePath("mlp.pt2"), add = dir.filePath("dynamic_batch.pt2"), ws = dir.filePath("add.lstudio");
    QVERIFY(writePt2(*sample("mlp"), mlp.toStdString()).ok());
    QVERIFY(writePt2(*sample("dynamic_batch"), add.toStdString()).ok());
    Workspace addWs;
    addWs.input = add.toStdString();
    QVERIFY(saveWorkspace(addWs, ws.toStdString()).ok());
    ui::MainWindow w;
    w.show();
    QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
    w.openFile(mlp);
    QVERIFY(loaded.wait(30000));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!w.isModified());
    ExecutorchBackendConfig c = w.configEditor()->config();
    c.segmentAlignment = 4096;
    w.configEditor()->edit(c, "Change segment_alignment");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.isModified());

    auto drop = [&](const QString& path) {
      auto* mime = new QMimeData;
      mime->setUrls({QUrl::fromLocalFile(path)});
      // Qt delivers a drop to the widget that accepted the drag's entry.
      QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&w, &enter);
      QDropEvent e(QPointF(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&w, &e);
      delete mime;
    };
    const std::vector<std::pair<QString, std::function<void()>>> paths = {
        {"open", [&] { w.openFile(add); }},
        {"sample", [&] { w.openSample("dynamic_batch"); }},
        {"drop", [&] { drop(add); }},
        {"workspace", [&] { w.openFile(ws); }},
    };
    for (const auto& [name, replace] : paths) {
      QString said;
      answerNextBox("Cancel", &said);
      replace();
      QVERIFY2(said.contains("mlp.pt2") && said.contains("replaces it"), qPrintable(name + ": " + said));
      QTest::qWait(200);
      QVERIFY2(!loaded.wait(300), qPrintable(name));  // nothing loads
      QCOMPARE(QFileInfo(QString::fromStdString(w.current()->path)).fileName(), QString("mlp.pt2"));
      QVERIFY(w.isModified());
      QCOMPARE(w.configEditor()->config().segmentAlignment, uint64_t(4096));
    }
    // Discard: the other file opens, from the default config.
    QString said;
    answerNextBox("Discard", &said);
    loaded.clear();
    w.openFile(add);
    QVERIFY(!said.isEmpty());
    QVERIFY(loaded.wait(30000));
    QCOMPARE(QFileInfo(QString::fromStdString(w.current()->path)).fileName(), QString("dynamic_batch.pt2"));
    QVERIFY(!w.isModified());
  }

  // A new file starts from the default config and a fresh undo history; carrying the
  // previous file's config over is File > Apply the Previous File's Config, one undoable
  // edit. (The last model's tagging rule and alignment were applied silently.)
  void aNewFileStartsFromTheDefaults() {
    QTemporaryDir dir;
    const auto [mlp, add] = twoSampleFiles(dir);
    QVERIFY(!mlp.isEmpty());
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openAndSettle(w, mlp));
    ExecutorchBackendConfig c = w.configEditor()->config();
    c.memoryPlanning.alignment = 64;
    ConstantTagRule everything;
    everything.namePattern = "*";
    everything.file = "model.ptd";
    c.externalConstantRules.push_back(everything);
    w.configEditor()->edit(c, "Change memory_planning_pass.alignment");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.configEditor()->undoAction()->isEnabled());
    QVERIFY(!w.applyPreviousAction()->isEnabled());

    QVERIFY(openAndSettle(w, add));
    const ExecutorchBackendConfig defaults;
    QCOMPARE(QString::fromStdString(configToJson(w.configEditor()->config())), QString::fromStdString(configToJson(defaults)));
    QCOMPARE(w.runner()->state().config.memoryPlanning.alignment, defaults.memoryPlanning.alignment);
    QVERIFY2(!w.configEditor()->undoAction()->isEnabled(), qPrintable(w.configEditor()->undoAction()->text()));
    QVERIFY(!w.isModified());
    QVERIFY(w.logView()->toPlainText().contains("Config reset to the defaults for dynamic_batch.pt2"));
    QVERIFY(w.applyPreviousAction()->isEnabled());

    w.applyPreviousAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.configEditor()->config().memoryPlanning.alignment, uint64_t(64));
    QCOMPARE(w.runner()->state().config.memoryPlanning.alignment, uint64_t(64));
    QCOMPARE(w.configEditor()->config().externalConstantRules.size(), size_t(1));
    QVERIFY(w.isModified());
    QVERIFY(w.logView()->toPlainText().contains("Applying the config of mlp.pt2"));
    w.configEditor()->undoAction()->trigger();  // one edit: undone at once
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.configEditor()->config().memoryPlanning.alignment, defaults.memoryPlanning.alignment);
    QVERIFY(w.configEditor()->config().externalConstantRules.empty());
  }

  // A run's result belongs to the program it ran: the next program shows none of it.
  // (The Inspector of another program showed "The run failed: …" of the last one.)
  void runResultsGoWithTheirProgram() {
    QTemporaryDir dir;
    const auto [mlp, add] = twoSampleFiles(dir);
    QVERIFY(!mlp.isEmpty());
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openAndSettle(w, mlp));
    QString bad = dir.filePath("bad.npy");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not an array");
    f.close();
    w.runProgram({bad});  // fails: the result says why
    QTRY_VERIFY_WITH_TIMEOUT(w.programRun()->result() != nullptr, 30000);
    QVERIFY(!w.programRun()->result()->ok);
    QVERIFY(openAndSettle(w, add));
    QVERIFY(w.programRun()->result() == nullptr);
    QVERIFY(w.programRun()->etdump() == nullptr);
    QVERIFY(w.shownProgram() && !w.shownProgram()->methods.empty());
    QVERIFY(w.selectNodeByName(QString::fromStdString(w.shownProgram()->methods[0].nodes.back().name)));
    QVERIFY2(!w.inspector()->toPlainText().contains("run failed"), qPrintable(w.inspector()->toPlainText()));
  }

  // Each instance has its own autosave. At start the window offers the
  // sessions of instances that ended (naming the program and when it was
  // autosaved), never one a running instance writes; a recovered autosave
  // stays until the session is saved. (All instances shared one autosave,
  // and the prompt named neither file nor time.)
  void recoveryOffersEndedSessionsOnly() {
    QCOMPARE(QFileInfo(ui::MainWindow::autosavePath()).fileName(),
             QString("autosave-%1.lstudio").arg(QCoreApplication::applicationPid()));
    for (const auto& s : ui::MainWindow::endedSessions()) QFile::remove(s.autosave);  // earlier runs'
    QTemporaryDir dir;
    QString pt2 = dir.filePath("mlp.pt2");
    QVERIFY(writePt2(*sample("mlp"), pt2.toStdString()).ok());
    QDir data = QFileInfo(ui::MainWindow::autosavePath()).absoluteDir();
    // A session whose process ended (nothing holds the lock of its autosave) ...
    Workspace crashed;
    crashed.input = pt2.toStdString();
    crashed.config.segmentAlignment = 8192;
    crashed.runTo = "ToOutVarPass";
    const QString ended = data.filePath("autosave-2000000001.lstudio");
    QVERIFY(saveWorkspace(crashed, ended.toStdString()).ok());
    const QDateTime written(QDate(2024, 3, 5), QTime(14, 32));
    {
      QFile f(ended);
      QVERIFY(f.open(QIODevice::ReadWrite));
      QVERIFY(f.setFileTime(written, QFileDevice::FileModificationTime));
    }
    // ... and one of an instance still running: it holds the lock beside its autosave.
    Workspace other = crashed;
    other.input = dir.filePath("other.pt2").toStdString();
    const QString running = data.filePath("autosave-2000000002.lstudio");
    QVERIFY(saveWorkspace(other, running.toStdString()).ok());
    QLockFile runningLock(data.filePath("autosave-2000000002.lock"));
    runningLock.setStaleLockTime(0);
    QVERIFY(runningLock.tryLock(0));

    auto sessions = ui::MainWindow::endedSessions();
    QCOMPARE(sessions.size(), 1);
    QCOMPARE(sessions[0].autosave, ended);
    QCOMPARE(sessions[0].input, pt2);
    QCOMPARE(sessions[0].written, written);

    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
    QString said;
    answerNextBox("Recover", &said);
    w.offerRecovery();
    QVERIFY2(said.contains("mlp.pt2") && said.contains(pt2) && said.contains("2024-03-05 14:32"), qPrintable(said));
    QVERIFY2(!said.contains("other.pt2"), qPrintable(said));
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.isWindowModified());
    QCOMPARE(w.configEditor()->config().segmentAlignment, uint64_t(8192));
    QCOMPARE(w.runner()->state().config.segmentAlignment, uint64_t(8192));
    QCOMPARE(w.recoveredAutosave(), ended);
    // While this window has it, no other instance is offered it; it stays on disk.
    QVERIFY(ui::MainWindow::endedSessions().isEmpty());
    QVERIFY(QFile::exists(ended));
    // Saved as a workspace, the session needs its autosave no more.
    QString error;
    QVERIFY2(w.saveWorkspaceTo(dir.filePath("kept.lstudio"), &error), qPrintable(error));
    QVERIFY(!w.isModified());
    QVERIFY(!QFile::exists(ended));
    QVERIFY(w.recoveredAutosave().isEmpty());
    QVERIFY(QFile::exists(running));  // the running instance's was never touched
    runningLock.unlock();
    QFile::remove(running);
  }

  void exportFromTheWindow() {
    QTemporaryDir dir;
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.openProgram(sample("llama", {.layers = 2}), "sample:llama");
    ExecutorchBackendConfig c = w.configEditor()->config();
    c.externalConstants = true;
    c.externalConstantRules = {{.minBytes = 512 * 1024, .file = "weights.ptd"}};
    c.segmentAlignment = 4096;
    w.applyConfig(c);
    w.runner()->step();
    w.runner()->waitForIdle();
    // Export from the middle of the pipeline: the remaining passes run first.
    w.exportProgram();
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.exportDialog() != nullptr, 30000);
    QVERIFY(w.runner()->state().atEnd());
    ui::ExportDialog* d = w.exportDialog();
    QString pte = dir.filePath("llama.pte");
    d->setDestination(pte, dir.filePath("data"));
    d->setAskBeforeOverwrite(false);
    QSignalSpy done(d, &ui::ExportDialog::exportFinished);
    QVERIFY(d->startExport());
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().at(0).toBool(), qPrintable(done.first().at(1).toString()));
    QVERIFY(d->resultText().contains("wrote " + pte));
    QVERIFY(d->resultText().contains("weights.ptd"));
    QCOMPARE(d->progressBar()->value(), 1000);
    auto back = openProgramFile(pte.toStdString());
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    QVERIFY(back->facts.segmentAlignment >= 4096);
    auto data = readDataFile(dir.filePath("data/weights.ptd").toStdString());
    QVERIFY(data.ok());
    QVERIFY(data->entries.size() >= 4);  // embedding, w1-w3 of each layer, output head
    QVERIFY(resolveExternalTensors(back.value(), {data.value()}).ok());

    // A cancelled export leaves the previous files as they were and no temporary files.
    QFile old(pte);
    QVERIFY(old.open(QIODevice::ReadOnly));
    QByteArray before = old.readAll();
    old.close();
    done.clear();
    QVERIFY(d->startExport());
    d->cancelExport();
    QVERIFY(done.wait(60000));
    if (!done.first().at(0).toBool()) QVERIFY(d->resultText().contains("cancelled"));
    QVERIFY(old.open(QIODevice::ReadOnly));
    QCOMPARE(old.readAll(), before);
    QCOMPARE(QDir(dir.path()).entryList({"*.tmp-*"}, QDir::Files).size(), 0);
    QCOMPARE(QDir(dir.filePath("data")).entryList({"*.tmp-*"}, QDir::Files).size(), 0);
  }

  void cancelledLoadKeepsTheWindow() {
    QTemporaryDir dir;
    QString pt2 = dir.filePath("mlp.pt2");
    QVERIFY(writePt2(*sample("mlp"), pt2.toStdString()).ok());
    ui::MainWindow w;
    w.setQuietErrors(true);
    QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
    w.openFile(pt2);
    w.cancelLoad();
    QVERIFY(loaded.wait(30000));
    QCOMPARE(loaded.first().at(0).toBool(), false);
    QCOMPARE(loaded.first().at(1).toString(), QString("cancelled"));
    QVERIFY(!w.current());
    QVERIFY(!w.runner()->hasPipeline());
    // The next load is not affected.
    loaded.clear();
    w.openFile(pt2);
    QVERIFY(loaded.wait(30000));
    QCOMPARE(loaded.first().at(0).toBool(), true);
    QVERIFY(w.current());
  }

  // Undo and Redo of the config are in an Edit menu with window-wide keys: Ctrl+Z with the
  // focus on the graph undoes the last config edit (it worked only inside the Config dock).
  // The Config dock's buttons keep short labels; what they undo is in their tooltips.
  void editMenuUndoesTheConfigFromAnywhere() {
    QTemporaryDir dir;
    QString mlp = dir.filePath("mlp.pt2");
    QVERIFY(writePt2(*sample("mlp"), mlp.toStdString()).ok());
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QSignalSpy loaded(&w, &ui::MainWindow::loadFinished);
    w.openFile(mlp);
    QVERIFY(loaded.wait(30000));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QMenu* edit = nullptr;
    for (QAction* a : w.menuBar()->actions())
      if (a->text() == "&Edit") edit = a->menu();
    QVERIFY(edit);
    QStringList items;
    for (QAction* a : edit->actions())
      if (!a->isSeparator()) items << a->text();
    QCOMPARE(items.size(), 6);
    QVERIFY(items[0].startsWith("Undo") && items[1].startsWith("Redo") && items[2] == QString("&Find Node…"));
    QCOMPARE(items[5], QString("Find What XNNPACK Did &Not Take"));

    ExecutorchBackendConfig c = w.configEditor()->config();
    const uint64_t before = c.memoryPlanning.alignment;
    c.memoryPlanning.alignment = 64;
    w.configEditor()->edit(c, "Change memory_planning_pass.alignment");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QToolButton* undoButton = nullptr;
    for (QToolButton* b : w.configEditor()->findChildren<QToolButton*>())
      if (b->text() == "Undo") undoButton = b;
    QVERIFY(undoButton);
    QVERIFY(undoButton->isEnabled());
    QVERIFY2(undoButton->toolTip().contains("memory_planning_pass.alignment"), qPrintable(undoButton->toolTip()));

    auto* graph = w.findChild<QGraphicsView*>();
    QVERIFY(graph);
    graph->setFocus();
    QTest::keySequence(&w, QKeySequence::Undo);
    QTRY_COMPARE(w.configEditor()->config().memoryPlanning.alignment, before);
    QTest::keySequence(&w, QKeySequence::Redo);
    QTRY_COMPARE(w.configEditor()->config().memoryPlanning.alignment, uint64_t(64));
  }

  // Lowering > Compare With Expected Outputs: the eager model's outputs (.npy) against the
  // run's, per output the largest |difference| and ULPs, in the log; read on a worker; and
  // whether the reference snapshot was already as far off.
  void expectedOutputsCompared() {
    QTemporaryDir dir;
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openLowered(w, sample("mlp"), "mlp"));
    QVERIFY(menuAction(w, "Compare With E&xpected Outputs…")->isEnabled());
    w.runProgram();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.programRun()->result() && w.programRun()->result()->ok);
    run::HostValue out = w.programRun()->result()->run.outputs.at(0);
    float* f = reinterpret_cast<float*>(out.bytes.data());
    f[1] = std::nextafter(f[1], 1e30f);  // one ULP up
    const QString file = dir.filePath("output_0.npy");
    QVERIFY(writeFileAtomically(file.toStdString(), run::npyBytes(out)));
    w.setExpectedOutputs({file});
    QTRY_VERIFY_WITH_TIMEOUT(w.logView()->toPlainText().contains("at most 1 ULP apart"), 30000);
    QVERIFY2(w.logView()->toPlainText().contains("Output 0 against output_0.npy: largest |difference|"),
             qPrintable(w.logView()->toPlainText().right(400)));
    // The reference the run was compared with is as far off: the gap is not the passes'.
    QVERIFY2(w.logView()->toPlainText().contains(" from the expected outputs: the gap comes before these passes"),
             qPrintable(w.logView()->toPlainText().right(600)));
  }

  // Stepping through passes (a failed one too) is looking, not editing: the session stays
  // saved, and opening another file does not ask. A config edit does make it unsaved.
  void steppingLeavesTheSessionSaved() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(openLowered(w, sample("mlp"), "mlp"));
    QVERIFY(!w.isModified());
    QVERIFY(w.runToPass("ToOutVarPass"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    w.runner()->runTo(2);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!w.isModified());
    ExecutorchBackendConfig c = w.configEditor()->config();
    c.memoryPlanning.alignment = 64;
    w.configEditor()->edit(c, "Change memory_planning_pass.alignment");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.isModified());
  }

  // The QNN llama opens on its delegate call (Inspector: backend, compile specs, payload); a
  // click on its group's frame shows that call again. Clicking the group showed nothing.
  void delegateGroupShowsItsCall() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/stories260k_hybrid_llama_qnn.pte"));
    QVERIFY(spy.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains("QnnBackend"), 5000);
    w.inspector()->showNothing();
    QGraphicsView* canvas = nullptr;
    for (QGraphicsView* v : w.graphView()->findChildren<QGraphicsView*>())
      if (v->scene() && !canvas) canvas = v;
    QVERIFY(canvas);
    // The group is open (it holds the selected call): a click on its frame, off every box.
    ui::GraphClusterItem* frame = nullptr;
    for (QGraphicsItem* it : canvas->scene()->items())
      if (auto* c = dynamic_cast<ui::GraphClusterItem*>(it); c && w.graphView()->model()->groups[c->group()].delegate) frame = c;
    QVERIFY(frame);
    const QPointF corner = frame->sceneBoundingRect().topLeft() + QPointF(6, 6);
    canvas->centerOn(corner);
    QTest::mouseClick(canvas->viewport(), Qt::LeftButton, {}, canvas->mapFromScene(corner));
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains("QnnBackend"), 5000);
  }

  // Another snapshot of the same program keeps the groups the user opened and the place the
  // view looks at: stepping back a pass and a config change (which re-runs the passes) did
  // fold them up and scroll back to the top.
  void graphKeepsItsPlaceAcrossSnapshots() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(openLowered(w, sample("llama"), "llama"));
    const ui::GraphModel* m = w.graphView()->model();
    QVERIFY(m);
    QString path;
    for (const ui::GraphGroup& g : m->groups)
      if (!g.delegate && g.parent >= 0 && g.nodeCount > 3 && path.isEmpty()) path = QString::fromStdString(g.path);
    QVERIFY(!path.isEmpty());
    QVERIFY(w.graphView()->setGroupCollapsed(path, false));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!w.graphView()->isGroupCollapsed(path));
    QGraphicsView* canvas = nullptr;
    for (QGraphicsView* v : w.graphView()->findChildren<QGraphicsView*>())
      if (v->scene() && !canvas) canvas = v;
    QVERIFY(canvas);
    const QRectF scene = canvas->scene()->sceneRect();
    canvas->centerOn(scene.center().x(), scene.top() + scene.height() * 0.6);
    const QPointF before = canvas->mapToScene(canvas->viewport()->rect().center());
    auto stillThere = [&] {
      const QPointF now = canvas->mapToScene(canvas->viewport()->rect().center());
      return !w.graphView()->isGroupCollapsed(path) && std::abs(now.y() - before.y()) < 0.25 * scene.height();
    };
    w.runner()->runTo(w.runner()->state().position - 1);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY2(stillThere(), "stepping back a pass");
    ExecutorchBackendConfig c = w.configEditor()->config();
    c.memoryPlanning.alignment = 64;
    w.configEditor()->edit(c, "Change memory_planning_pass.alignment");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY2(stillThere(), "a config change");
  }

  // The first window fits the screen's free space (a fixed 1400x860 ran off a 1366x768
  // screen) and the Log starts a few lines high, the graph getting the room (the Constants
  // table tabbed with it held the bottom area at 200 px).
  void firstWindowFitsTheScreen() {
    {
      QSettings s;
      s.remove("window/geometry");
      s.remove("window/state");
    }
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // Nine tenths of the free space, unless the window's content needs more (the offscreen
    // test screen is 800 px wide, narrower than the docks' minimum widths together).
    const QRect free = w.screen()->availableGeometry();
    const QSize want = QSize(free.width() * 9 / 10, free.height() * 9 / 10).expandedTo(w.minimumSizeHint());
    QVERIFY2(std::abs(w.width() - want.width()) <= 2 && std::abs(w.height() - want.height()) <= 2,
             qPrintable(QString("%1x%2 on %3x%4").arg(w.width()).arg(w.height()).arg(free.width()).arg(free.height())));
    auto* log = w.findChild<QDockWidget*>("logDock");
    QVERIFY(log);
    const int fewLines = w.fontMetrics().lineSpacing() * 5 + 40;
    QTRY_VERIFY2_WITH_TIMEOUT(log->height() <= fewLines + 10, qPrintable(QString::number(log->height())), 5000);
  }

  // --help and --version answer on a machine without a display (they aborted in the platform plugin).
  void helpWithoutDisplay() {
    QTemporaryDir dir;
    QProcessEnvironment env = isolatedEnvironment(dir);
    for (const char* v : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(v);
    QProcess studio;
    studio.setProcessChannelMode(QProcess::MergedChannels);
    studio.setProcessEnvironment(env);
    studio.start(LSTUDIO_STUDIO, {"--help"});
    QVERIFY(studio.waitForFinished(30000));
    QCOMPARE(studio.exitStatus(), QProcess::NormalExit);
    QCOMPARE(studio.exitCode(), 0);
    QByteArray said = studio.readAll();
    QVERIFY2(said.contains("Usage:") && said.contains("--screenshot"), said.constData());
    studio.start(LSTUDIO_STUDIO, {"--version"});
    QVERIFY(studio.waitForFinished(30000));
    QCOMPARE(studio.exitStatus(), QProcess::NormalExit);
    QCOMPARE(studio.exitCode(), 0);
    said = studio.readAll();
    QVERIFY2(said.contains("Lowering Studio"), said.constData());
  }

  void screenshotCommand() {
    QTemporaryDir dir;
    QString pt2 = dir.filePath("mlp.pt2"), png = dir.filePath("shot.png");
    QVERIFY(writePt2(*sample("mlp"), pt2.toStdString()).ok());
    QProcess studio;
    studio.setProcessChannelMode(QProcess::MergedChannels);
    QProcessEnvironment env = isolatedEnvironment(dir);
    env.insert("QT_QPA_PLATFORM", "offscreen");
    studio.setProcessEnvironment(env);
    studio.start(LSTUDIO_STUDIO, {pt2, "--screenshot", png, "--run-to", "ToOutVarPass", "--select", "relu", "--size", "1200x800"});
    QVERIFY(studio.waitForFinished(120000));
    QCOMPARE(studio.exitCode(), 0);
    QImage img(png);
    QCOMPARE(img.size(), QSize(1200, 800));
    studio.start(LSTUDIO_STUDIO, {pt2, "--screenshot", png, "--run-to", "NoSuchPass"});
    QVERIFY(studio.waitForFinished(120000));
    QCOMPARE(studio.exitCode(), 2);
    QVERIFY(studio.readAll().contains("no pass named 'NoSuchPass'"));
    // Without a display and without QT_QPA_PLATFORM it still renders
    // offscreen (it aborted with rc 134); a bad file says why.
    env.remove("QT_QPA_PLATFORM");
    env.remove("DISPLAY");
    env.remove("WAYLAND_DISPLAY");
    studio.setProcessEnvironment(env);
    QFile::remove(png);
    studio.start(LSTUDIO_STUDIO, {pt2, "--screenshot", png});
    QVERIFY(studio.waitForFinished(120000));
    QCOMPARE(studio.exitStatus(), QProcess::NormalExit);
    QCOMPARE(studio.exitCode(), 0);
    QVERIFY(QFile::exists(png));
    QString bad = dir.filePath("bad.pte");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a program");
    f.close();
    studio.start(LSTUDIO_STUDIO, {bad, "--screenshot", png});
    QVERIFY(studio.waitForFinished(120000));
    QCOMPARE(studio.exitCode(), 2);
    QByteArray said = studio.readAll();
    QVERIFY2(said.contains("bad.pte") && said.contains("expected \"ET12\""), said.constData());
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
