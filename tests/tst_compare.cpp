// Compare mode (View > Compare with Previous Pass, Ctrl+D), offscreen: the panes
// say which snapshot each shows, move together, keep their groups open, and the
// Changes dock lists what the pass did (issue 23, item 8).
#include <QDockWidget>
#include <QGraphicsView>
#include <QScrollBar>
#include <QSettings>
#include <QTreeWidget>
#include <QtTest>

#include "engine/samples/SampleZoo.h"
#include "tests/TestSupport.h"
#include "ui/graph/ChangesList.h"
#include "ui/graph/GraphModel.h"
#include "ui/graph/GraphView.h"
#include "ui/window/MainWindow.h"

using namespace lstudio;

namespace {

std::shared_ptr<const Program> sample(const std::string& name, SampleOptions o = {}) {
  auto p = buildSample(name, o);
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::make_shared<const Program>(std::move(p.value()));
}

int passRow(const ui::MainWindow& w, const QString& name) {
  const auto& recs = w.runner()->state().records;
  for (size_t i = 0; i < recs.size(); ++i)
    if (QString::fromStdString(recs[i].name) == name) return int(i) + 1;
  return -1;
}

/// The program the earlier pane shows.
std::shared_ptr<const Program> beforeProgram(const ui::MainWindow& w) {
  return w.runner()->state().snapshotAtOrBefore(size_t(std::max(w.shownSnapshot() - 1, 0)));
}

int nodeNamed(const Method& m, const std::string& name) {
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].name == name) return int(i);
  return -1;
}

struct Window {
  ui::MainWindow w;
  explicit Window(const char* sampleName, SampleOptions o = {}, QSize size = {1366, 768}) {
    QSettings().remove("window");
    w.setQuietErrors(true);
    w.resize(size);
    w.show();
    w.openProgram(sample(sampleName, o), sampleName);
  }
  bool runTo(const QString& pass) {
    if (!w.runToPass(pass)) return false;
    w.runner()->waitForIdle();
    return QTest::qWaitFor([&] { return w.idle(); }, 30000);
  }
};

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // Each pane names its snapshot; the minimaps stay small; the Changes dock shows.
  void panesAreTitled() {
    Window t("mlp");
    QVERIFY(t.runTo("ToOutVarPass"));
    ui::MainWindow& w = t.w;
    QVERIFY(w.graphView()->title().isEmpty());  // one pane: no title
    QVERIFY(!w.changesDock()->isVisible());
    w.setCompare(true);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    const int row = passRow(w, "ToOutVarPass");
    QCOMPARE(w.shownSnapshot(), row);
    QCOMPARE(w.graphView()->title(), QString("after: after ToOutVarPass (step %1)").arg(row));
    const QString before = QString::fromStdString(w.runner()->state().records[size_t(row) - 2].name);
    QCOMPARE(w.beforeView()->title(), QString("before: after %1 (step %2)").arg(before).arg(row - 1));
    QVERIFY(w.beforeView()->findChild<QWidget*>("paneTitle")->isVisible());
    QVERIFY(w.changesDock()->isVisible());
    for (ui::GraphView* v : {w.graphView(), w.beforeView()})
      QVERIFY2(v->minimap()->width() * v->minimap()->height() * 10 < v->width() * v->height(),
               qPrintable(QString("%1x%2 in %3x%4").arg(v->minimap()->width()).arg(v->minimap()->height()).arg(v->width()).arg(v->height())));
    // The input program has nothing before it.
    w.showSnapshot(0);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(w.graphView()->title(), QString("after: the input program"));
    QVERIFY(w.beforeView()->title().startsWith("before: nothing"));
    w.setCompare(false);
    QVERIFY(w.graphView()->title().isEmpty());
    QVERIFY(!w.changesDock()->isVisible());
  }

  // The list counts what GraphDiff found, pass by pass; ToOutVarPass modifies every node of mlp.
  void changesListCountsTheDiff() {
    Window t("llama", {.layers = 2});
    QVERIFY(t.runTo("ToOutVarPass"));
    ui::MainWindow& w = t.w;
    w.setCompare(true);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    ui::ChangesList* list = w.changesList();
    const Method& m = w.shownProgram()->methods[0];
    QVERIFY(list->count(ui::ChangesList::Modified) > int(m.nodes.size()) / 2);  // the kernels became out variants
    QCOMPARE(list->count(ui::ChangesList::Modified), int(w.shownDiff().modified));
    QCOMPARE(list->kindItem(ui::ChangesList::Modified)->text(0), QString("Modified (%1)").arg(list->count(ui::ChangesList::Modified)));
    bool sawAddedOrRemoved = false;
    const int last = w.shownSnapshot();
    for (int row = 1; row <= last; ++row) {
      if (w.runner()->state().records[size_t(row) - 1].state != PassRecord::State::Changed) continue;
      w.showSnapshot(row);
      const MethodDiff& d = w.shownDiff();
      QCOMPARE(list->count(ui::ChangesList::Added), int(d.added));
      QCOMPARE(list->count(ui::ChangesList::Modified), int(d.modified));
      QCOMPARE(list->count(ui::ChangesList::Removed), int(d.removed.size()));
      QCOMPARE(bool(list->kindItem(ui::ChangesList::Removed)), !d.removed.empty());
      sawAddedOrRemoved |= d.added > 0 || !d.removed.empty();
    }
    QVERIFY(sawAddedOrRemoved);
  }

  // Zoom and scroll one pane: the other takes the same zoom and keeps the same node at the same place.
  void navigationIsSynchronised() {
    Window t("llama", {.layers = 2});
    QVERIFY(t.runTo("ToOutVarPass"));
    ui::MainWindow& w = t.w;
    w.setCompare(true);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    ui::GraphView *after = w.graphView(), *before = w.beforeView();
    const std::string name = "mm_3";
    QVERIFY(w.selectNodeByName(QString::fromStdString(name)));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    const int a = nodeNamed(w.shownProgram()->methods[0], name), b = nodeNamed(beforeProgram(w)->methods[0], name);
    QVERIFY(a >= 0 && b >= 0);
    QCOMPARE(after->selectedNode(), a);
    QCOMPARE(before->selectedNode(), b);

    after->zoomBy(1.6);
    QCOMPARE(before->canvas()->transform(), after->canvas()->transform());
    before->zoomBy(0.7);
    QCOMPARE(after->canvas()->transform(), before->canvas()->transform());
    auto aligned = [&] {
      QPoint pa = after->viewportPosOfMethodNode(a), pb = before->viewportPosOfMethodNode(b);
      if (pa.isNull() || (pa - pb).manhattanLength() > 3) qWarning() << "after" << pa << "before" << pb;
      return !pa.isNull() && (pa - pb).manhattanLength() <= 3;
    };
    QVERIFY(aligned());
    QScrollBar* v = after->canvas()->verticalScrollBar();
    v->setValue(v->value() + 40);
    QVERIFY(aligned());
    QScrollBar* h = before->canvas()->horizontalScrollBar();
    QScrollBar* ah = after->canvas()->horizontalScrollBar();
    const int was = ah->value();
    h->setValue(h->value() - 30);
    QVERIFY(aligned());
    QVERIFY(std::abs(ah->value() - (was - 30)) <= 2);
  }

  // A group opened in one pane opens in the other and stays open for another snapshot;
  // a row of the list selects its node in both panes, opening the groups above it.
  void groupsStayOpenAndListGoesToNodes() {
    Window t("llama", {.layers = 4});
    QVERIFY(t.runTo("ToOutVarPass"));
    ui::MainWindow& w = t.w;
    w.setCompare(true);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    ui::GraphView *after = w.graphView(), *before = w.beforeView();
    QVERIFY(after->isGroupCollapsed("layers.1") && before->isGroupCollapsed("layers.1"));
    // A changed group that is closed tells what changed inside it.
    QVERIFY(after->groupChangeSummary("layers.1").contains("changed inside"));
    QVERIFY(after->groupChangeSummary("layers.1").contains("modified"));
    after->setGroupCollapsed("layers.1", false);
    QVERIFY(!before->isGroupCollapsed("layers.1"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    before->setGroupCollapsed("layers.2", false);
    QVERIFY(!after->isGroupCollapsed("layers.2"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    // Another pair of snapshots: still open in both.
    w.showSnapshot(w.shownSnapshot() - 2);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    for (ui::GraphView* v : {after, before})
      for (const char* g : {"layers.1", "layers.2"}) QVERIFY2(!v->isGroupCollapsed(g), g);
    QVERIFY(after->isGroupCollapsed("layers.3"));
    w.showSnapshot(passRow(w, "ToOutVarPass"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!after->isGroupCollapsed("layers.1") && !before->isGroupCollapsed("layers.2"));

    // Click a modified node of layers.3 (closed) in the list.
    const Method& m = w.shownProgram()->methods[0];
    int target = -1;
    for (size_t i = 0; i < m.nodes.size() && target < 0; ++i)
      for (const ModuleFrame& f : m.nodes[i].meta.moduleStack)
        if (f.path == "layers.3" && w.shownDiff().after[i] == MethodDiff::Mark::Modified) target = int(i);
    QVERIFY(target >= 0);
    const QString name = QString::fromStdString(m.nodes[size_t(target)].name);
    QTreeWidgetItem* item = w.changesList()->nodeItem(ui::ChangesList::Modified, name);
    QVERIFY(item);
    w.changesList()->scrollToItem(item);
    QRect r = w.changesList()->visualItemRect(item);
    QVERIFY(r.isValid());
    QTest::mouseClick(w.changesList()->viewport(), Qt::LeftButton, {}, r.center());
    QCOMPARE(w.selectedNode(), target);
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QCOMPARE(after->selectedNode(), target);
    QCOMPARE(before->selectedNode(), nodeNamed(beforeProgram(w)->methods[0], name.toStdString()));
    QVERIFY(!after->isGroupCollapsed("layers.3") && !before->isGroupCollapsed("layers.3"));
    QVERIFY(!after->viewportPosOfMethodNode(target).isNull());
    QVERIFY(after->canvas()->viewport()->rect().contains(after->viewportPosOfMethodNode(target)));
  }
};

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
