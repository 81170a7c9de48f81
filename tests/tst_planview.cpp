// The memory-plan view, offscreen: its rectangles against the plan of real
// .pte files and of lowered samples, the peak table against the storages
// alive at the peak, clicks and selection both ways, zoom, culling, and the
// message for a method that is not planned yet.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolTip>
#include <QtTest>
#include <set>

#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Pipeline.h"
#include "tests/TestSupport.h"
#include "ui/plan/MemoryPlanView.h"
#include "ui/plan/PeakTensorModel.h"
#include "ui/plan/PlanCanvas.h"

using namespace lstudio;
using namespace lstudio::test;
using lstudio::ui::MemoryPlanView;
using lstudio::ui::PeakTensorModel;

Q_DECLARE_METATYPE(std::shared_ptr<const lstudio::Program>)

namespace {

std::shared_ptr<const Program> unlowered(const std::string& name, SampleOptions o = {}) {
  auto p = buildSample(name, o);
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::make_shared<const Program>(std::move(p.value()));
}

std::shared_ptr<const Program> lowered(const std::string& name, SampleOptions o = {}) {
  Pipeline pipeline(unlowered(name, o), ExecutorchBackendConfig{});
  pipeline.runToEnd();
  if (pipeline.failed()) qFatal("lowering %s failed", name.c_str());
  return pipeline.current();
}

/// The sample written as a torch.export archive, read back and lowered: the
/// path a user takes with `lowering-cli sample NAME -o FILE.pt2`.
std::shared_ptr<const Program> loweredFromArchive(const std::string& name, SampleOptions o = {}) {
  QTemporaryDir dir;
  const std::string path = dir.filePath(QString::fromStdString(name) + ".pt2").toStdString();
  if (auto s = writePt2(*unlowered(name, o), path); !s) qFatal("%s", s.error().message().c_str());
  auto read = readExportFile(path);
  if (!read) qFatal("%s", read.error().message().c_str());
  Pipeline pipeline(std::make_shared<const Program>(std::move(read.value())), ExecutorchBackendConfig{});
  pipeline.runToEnd();
  if (pipeline.failed()) qFatal("lowering %s.pt2 failed", name.c_str());
  return pipeline.current();
}

std::shared_ptr<const Program> opened(const QString& path) {
  auto p = openProgramFile(path.toStdString());
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::make_shared<const Program>(std::move(p.value()));
}

/// Shows the plan and waits for the worker's result to be on screen.
bool show(MemoryPlanView& v, std::shared_ptr<const Program> p, int method = 0) {
  QSignalSpy spy(&v, &MemoryPlanView::planShown);
  v.setPlan(std::move(p), method);
  return spy.wait(60000) && v.isPlanReady();
}

/// Saves a screenshot into LSTUDIO_SCREENSHOT_DIR, else into a temporary folder: either way it
/// is written and read back whole.
void saveShot(QWidget& w, const QString& name) {
  static QTemporaryDir scratch;
  QString dir = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
  if (dir.isEmpty()) dir = scratch.path();
  const QString path = dir + "/planview-" + name + ".png";
  QVERIFY(w.grab().save(path));
  QCOMPARE(QImage(path).size(), w.grab().size());
}

/// A rectangle of the current lane whose centre no other rectangle covers,
/// as big on screen as possible: clicking its centre must pick it.
int32_t clickableRect(const ui::PlanLayout& L, const ui::PlanCanvas& c) {
  int32_t best = -1;
  double bestArea = 0;
  for (size_t i = 0; i < L.rects.size(); ++i) {
    const auto& r = L.rects[i];
    if (r.lane != c.lane() || r.size == 0) continue;
    const QRectF w = c.widgetRect(static_cast<int32_t>(i));
    if (!c.laneArea().contains(w.center()) || w.width() * w.height() <= bestArea) continue;
    bool covered = false;
    for (size_t j = 0; j < L.rects.size() && !covered; ++j)
      covered = j != i && L.rects[j].lane == r.lane &&
                c.widgetRect(static_cast<int32_t>(j)).adjusted(-2, -2, 2, 2).contains(w.center());
    if (!covered) {
      best = static_cast<int32_t>(i);
      bestArea = w.width() * w.height();
    }
  }
  return best;
}

}  // namespace

class TestPlanView : public QObject {
  Q_OBJECT
 private slots:
  void geometryMatchesThePlan_data() {
    QTest::addColumn<std::shared_ptr<const Program>>("program");
    QTest::addRow("lowered mlp") << lowered("mlp");
    SampleOptions small;
    small.layers = 2;
    QTest::addRow("lowered llama 2 layers") << lowered("llama", small);
    QTest::addRow("lowered llama 2 layers via .pt2") << loweredFromArchive("llama", small);
    if (fixturesDir().isEmpty()) return;
    for (const char* f : {"xor.pte", "arduino_KeywordSpotting_model.pte", "djl_stress_mlp.pte", "dnf.pte"})
      QTest::addRow("%s", f) << opened(fixture(QStringLiteral("pte/") + f));
  }

  void geometryMatchesThePlan() {
    QFETCH(std::shared_ptr<const Program>, program);
    MemoryPlanView v;
    v.resize(1100, 700);
    QVERIFY(show(v, program));
    QVERIFY2(v.message().isEmpty(), qPrintable(v.message()));

    const Method& m = program->methods[0];
    const MemoryPlanReport rep = analyzeMemoryPlan(m);
    int expected = 0;
    for (const PlannedTensor& t : rep.tensors) {
      if (t.first < 0) {
        QVERIFY(v.rectangleFor(t.value).isNull());
        continue;
      }
      ++expected;
      const QRectF r = v.rectangleFor(t.value);
      QCOMPARE(r.left(), double(t.first));
      QCOMPARE(r.right(), double(t.last + 1));
      QCOMPARE(r.top(), double(t.offset));
      QCOMPARE(r.height(), double(t.size));
      // Independent of the analysis: every tensor lies inside its stored arena.
      QVERIFY(t.memId < m.nonConstBufferSizes.size());
      QVERIFY(r.bottom() <= double(m.nonConstBufferSizes[t.memId]));
    }
    QVERIFY(expected > 0);
    QCOMPARE(v.rectangleCount(), expected);
    // Values that are not planned tensors have no rectangle.
    for (size_t i = 0; i < m.values.size(); ++i) {
      const TensorSpec* t = m.values[i].tensorIf();
      if (!t || !t->slot) QVERIFY(v.rectangleFor(static_cast<int>(i)).isNull());
    }
  }

  void peakTableIsTheStoragesAliveAtThePeak_data() { geometryMatchesThePlan_data(); }

  void peakTableIsTheStoragesAliveAtThePeak() {
    QFETCH(std::shared_ptr<const Program>, program);
    MemoryPlanView v;
    QVERIFY(show(v, program));
    PeakTensorModel* model = v.peakModel();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);

    const MemoryPlanReport rep = analyzeMemoryPlan(program->methods[0]);
    const ArenaStats& arena = rep.arenas.front();
    QVERIFY(v.showMemId(arena.memId));
    std::multiset<std::pair<uint64_t, uint64_t>> alive;  // (offset, size)
    uint64_t aligned = 0;
    for (const Storage& s : rep.storages)
      if (s.memId == arena.memId && s.first <= arena.peakStep && arena.peakStep <= s.last) {
        if (s.size > 0) alive.insert({s.offset, s.size});  // a 0-byte tensor is no row ("0 B" rows)
        aligned += (s.size + rep.alignment - 1) / rep.alignment * rep.alignment;
      }
    QCOMPARE(model->rowCount(), int(alive.size()));
    std::multiset<std::pair<uint64_t, uint64_t>> shown;
    uint64_t previous = UINT64_MAX;
    for (int row = 0; row < model->rowCount(); ++row) {
      const uint64_t bytes = model->data(model->index(row, PeakTensorModel::Bytes), PeakTensorModel::RawRole).toULongLong();
      const uint64_t offset = model->data(model->index(row, PeakTensorModel::Offset), PeakTensorModel::RawRole).toULongLong();
      QVERIFY2(bytes <= previous, "largest first");
      previous = bytes;
      shown.insert({offset, bytes});
      QVERIFY(!model->data(model->index(row, PeakTensorModel::Name), Qt::DisplayRole).toString().isEmpty());
    }
    QVERIFY(shown == alive);
    // The live-bytes curve peaks where the lower bound is reached, at that bound.
    const auto& lane = v.planLayout()->lanes[static_cast<size_t>(v.planLayout()->laneOf(arena.memId))];
    QCOMPARE(lane.live[static_cast<size_t>(arena.peakStep)], aligned);
    QCOMPARE(lane.maxLive, aligned);
    QVERIFY(aligned <= arena.lowerBound);
  }

  void unplannedMethodSaysSo() {
    MemoryPlanView v;
    QVERIFY(show(v, unlowered("mlp")));
    QCOMPARE(v.rectangleCount(), 0);
    QVERIFY(v.message().contains("not planned yet"));
    QVERIFY(v.message().contains("MemoryPlanningPass"));
    QVERIFY(v.message().contains("forward"));
    v.selectValue(0);  // harmless without a plan
    QCOMPARE(v.selectedValue(), -1);
    saveShot(v, "unplanned");
    // A planned method without planned tensors (everything inside a delegate).
    if (fixturesDir().isEmpty()) return;
    QVERIFY(show(v, opened(fixture("pte/stories260k_hybrid_llama_qnn.pte"))));
    QCOMPARE(v.rectangleCount(), 0);
    QVERIFY(v.message().contains("no planned tensor"));
  }

  void clickEmitsTheTensorAndItsNode() {
    auto program = lowered("mlp");
    MemoryPlanView v;
    v.resize(1100, 700);
    v.show();
    QVERIFY(show(v, program));
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    ui::PlanCanvas* c = v.canvas();
    const int32_t target = clickableRect(*v.planLayout(), *c);
    QVERIFY(target >= 0);
    const auto& r = v.planLayout()->rects[static_cast<size_t>(target)];
    QSignalSpy values(&v, &MemoryPlanView::valueSelected), nodes(&v, &MemoryPlanView::nodeSelected);
    QTest::mouseClick(c, Qt::LeftButton, {}, c->widgetRect(target).center().toPoint());
    QCOMPARE(values.count(), 1);
    QCOMPARE(values.first().at(0).toInt(), int(r.value));
    QCOMPARE(nodes.count(), 1);
    QCOMPARE(nodes.first().at(0).toInt(), int(r.producer));
    QCOMPARE(v.selectedValue(), int(r.value));
    // The producer really writes it (or it is a method input).
    const Method& m = program->methods[0];
    if (r.producer >= 0) {
      const auto& outs = m.nodes[static_cast<size_t>(r.producer)].outputs;
      QVERIFY(std::find(outs.begin(), outs.end(), r.value) != outs.end());
    } else {
      QVERIFY(std::find(m.inputs.begin(), m.inputs.end(), r.value) != m.inputs.end());
    }
    QVERIFY(c->toolTipFor(target).contains(QString::fromStdString(m.values[static_cast<size_t>(r.value)].name)));
    // A click in empty space clears the selection and emits nothing.
    QTest::mouseClick(c, Qt::LeftButton, {}, QPoint(5, 5));
    QCOMPARE(values.count(), 1);
    QCOMPARE(v.selectedValue(), -1);
  }

  void selectValueScrollsWithoutSignals() {
    SampleOptions small;
    small.layers = 2;
    auto program = lowered("llama", small);
    MemoryPlanView v;
    v.resize(1100, 700);
    v.show();
    QVERIFY(show(v, program));
    ui::PlanCanvas* c = v.canvas();
    const auto& L = *v.planLayout();
    // The tensor whose lifetime starts last, with the view zoomed to the start.
    int32_t late = 0;
    for (size_t i = 0; i < L.rects.size(); ++i)
      if (L.rects[i].first > L.rects[static_cast<size_t>(late)].first) late = static_cast<int32_t>(i);
    c->setStepRange(0, 4);
    QVERIFY(!c->laneArea().intersects(c->widgetRect(late)));
    QSignalSpy values(&v, &MemoryPlanView::valueSelected);
    v.selectValue(L.rects[static_cast<size_t>(late)].value);
    QCOMPARE(v.selectedValue(), int(L.rects[static_cast<size_t>(late)].value));
    QVERIFY(c->laneArea().intersects(c->widgetRect(late)));
    QCOMPARE(values.count(), 0);
    // Round trip: what selectValue shows is what a click there reports.
    QTest::mouseClick(c, Qt::LeftButton, {}, c->widgetRect(late).intersected(c->laneArea()).center().toPoint());
    QCOMPARE(values.count(), 1);
    QVERIFY(v.rectangleFor(values.first().at(0).toInt()).intersects(v.rectangleFor(L.rects[static_cast<size_t>(late)].value)));
    // Values without a rectangle clear the selection.
    v.selectValue(-1);
    QCOMPARE(v.selectedValue(), -1);
  }

  void selectNodeHighlightsWhatItWrites() {
    auto program = lowered("mlp");
    MemoryPlanView v;
    QVERIFY(show(v, program));
    const Method& m = program->methods[0];
    int checked = 0;
    for (size_t n = 0; n < m.nodes.size(); ++n) {
      v.selectNode(static_cast<int>(n));
      std::set<int> planned;
      for (ValueId o : m.nodes[n].outputs)
        if (!v.rectangleFor(o).isNull()) planned.insert(o);
      if (planned.empty()) {
        QCOMPARE(v.selectedValue(), -1);
        continue;
      }
      QVERIFY(planned.count(v.selectedValue()));
      QCOMPARE(v.canvas()->selection().size(), planned.size());
      ++checked;
    }
    QVERIFY(checked > 0);
  }

  void tableRowSelectsItsTensor() {
    auto program = lowered("mlp");
    MemoryPlanView v;
    v.resize(1100, 700);
    v.show();
    QVERIFY(show(v, program));
    QTableView* t = v.peakTable();
    QVERIFY(t->model()->rowCount() > 0);
    QSignalSpy values(&v, &MemoryPlanView::valueSelected);
    const int row = t->model()->rowCount() - 1;
    t->selectionModel()->setCurrentIndex(t->model()->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QCOMPARE(values.count(), 1);
    const int rect = t->model()->data(t->model()->index(row, 0), PeakTensorModel::RectRole).toInt();
    QCOMPARE(values.first().at(0).toInt(), int(v.planLayout()->rects[static_cast<size_t>(rect)].value));
    QCOMPARE(v.selectedValue(), values.first().at(0).toInt());
    // From outside: the row follows, without a signal.
    const int other = t->model()->data(t->model()->index(0, 0), PeakTensorModel::RectRole).toInt();
    v.selectValue(v.planLayout()->rects[static_cast<size_t>(other)].value);
    QCOMPARE(t->selectionModel()->currentIndex().row(), 0);
    QCOMPARE(values.count(), 1);
  }

  void zoomPanAndCulling() {
    SampleOptions small;
    small.layers = 2;
    auto program = lowered("llama", small);
    MemoryPlanView v;
    v.resize(1100, 700);
    v.show();
    QVERIFY(show(v, program));
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    ui::PlanCanvas* c = v.canvas();
    const auto& L = *v.planLayout();
    const int steps = L.report.steps;
    c->grab();
    int inLane = 0;
    for (const auto& r : L.rects) inLane += r.lane == c->lane();
    QCOMPARE(c->paintedRectangles(), inLane);

    // Wheel zooms steps around the cursor, ctrl+wheel zooms bytes.
    const double span = c->lastVisibleStep() - c->firstVisibleStep();
    QPoint mid = c->laneArea().center().toPoint();
    QWheelEvent in(mid, c->mapToGlobal(mid), {}, {0, 240}, Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(c, &in);
    QVERIFY(c->lastVisibleStep() - c->firstVisibleStep() < span * 0.7);
    // Only what is in view is painted: exactly the rectangles that meet it.
    c->setStepRange(steps / 3.0, steps / 3.0 + 10);
    c->grab();
    const double s0 = c->firstVisibleStep(), s1 = c->lastVisibleStep();
    int visible = 0;
    for (size_t i = 0; i < L.rects.size(); ++i) {
      const auto& r = L.rects[i];
      const QRectF w = c->widgetRect(static_cast<int32_t>(i));
      visible += r.lane == c->lane() && r.first <= s1 && r.last + 1 >= s0 && w.bottom() >= c->laneArea().top() &&
                 w.top() <= c->laneArea().bottom();
    }
    QCOMPARE(c->paintedRectangles(), visible);
    QVERIFY(visible < inLane);
    // Keys: arrows pan, minus zooms out, F fits.
    const double before = c->firstVisibleStep();
    QTest::keyClick(c, Qt::Key_Right);
    QVERIFY(c->firstVisibleStep() > before);
    QTest::keyClick(c, Qt::Key_Minus);
    QVERIFY(c->lastVisibleStep() - c->firstVisibleStep() > 10);
    const QRectF lane = c->laneArea();
    QWheelEvent yin(mid, c->mapToGlobal(mid), {}, {0, 360}, Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(c, &yin);
    const QRectF first = c->widgetRect(0);
    QTest::keyClick(c, Qt::Key_F);
    QCOMPARE(c->firstVisibleStep(), 0.0);
    QVERIFY(qAbs(c->lastVisibleStep() - steps) < 1e-6);
    QVERIFY(c->widgetRect(0).height() < first.height() || first.height() <= 1);
    QVERIFY(lane.contains(c->widgetRect(0).center()) || c->widgetRect(0).height() < 1);
    // Drag pans.
    QTest::keyClick(c, Qt::Key_Plus);
    QTest::keyClick(c, Qt::Key_Plus);
    const double x0 = c->firstVisibleStep();
    QTest::mousePress(c, Qt::LeftButton, {}, mid);
    QMouseEvent move(QEvent::MouseMove, QPointF(mid) - QPointF(200, 0), c->mapToGlobal(QPointF(mid) - QPointF(200, 0)),
                     Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(c, &move);
    QTest::mouseRelease(c, Qt::LeftButton, {}, mid - QPoint(200, 0));
    QVERIFY(c->firstVisibleStep() > x0);
  }

  void laterPlanWins() {
    MemoryPlanView v;
    QSignalSpy spy(&v, &MemoryPlanView::planShown);
    v.setPlan(lowered("mlp"), 0);
    SampleOptions small;
    small.layers = 1;
    auto llama = lowered("llama", small);
    v.setPlan(llama, 0);
    QVERIFY(spy.wait(60000));
    QTest::qWait(50);  // a stale result, if any, would arrive now
    QCOMPARE(spy.count(), 1);
    QCOMPARE(v.planLayout()->program, llama);
    v.clear();
    QCOMPARE(v.rectangleCount(), 0);
  }

  void everyFixtureMethodDrawsOrSaysWhyNot() {
    LSTUDIO_REQUIRE_FIXTURES();
    MemoryPlanView v;
    v.resize(900, 600);
    v.show();
    int planned = 0;
    for (const QString& f : fixtureFiles("pte", {"*.pte", "*.bpte"})) {
      auto p = openProgramFile(f.toStdString());
      if (!p) continue;  // the readers' own tests cover files that do not open
      auto program = std::make_shared<const Program>(std::move(p.value()));
      for (size_t i = 0; i < program->methods.size(); ++i) {
        QVERIFY2(show(v, program, static_cast<int>(i)), qPrintable(f));
        const MemoryPlanReport rep = analyzeMemoryPlan(program->methods[i]);
        int referenced = 0;
        for (const auto& t : rep.tensors) referenced += t.first >= 0;
        if (v.message().isEmpty()) {
          ++planned;
          QCOMPARE(v.rectangleCount(), referenced);
          v.canvas()->grab();
          v.canvas()->setStepRange(0, 2);
          v.canvas()->setByteRange(0, 64);
          v.canvas()->grab();
        } else {
          QCOMPARE(v.rectangleCount(), 0);
          QVERIFY2(program->methods[i].nonConstBufferSizes.size() <= 1 || referenced == 0, qPrintable(f));
        }
      }
    }
    QVERIFY(planned > 10);
  }

  void hoverShowsTheTensor() {
    auto program = lowered("mlp");
    MemoryPlanView v;
    v.resize(1100, 700);
    v.show();
    QVERIFY(show(v, program));
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    ui::PlanCanvas* c = v.canvas();
    const int32_t target = clickableRect(*v.planLayout(), *c);
    QVERIFY(target >= 0);
    const auto& r = v.planLayout()->rects[static_cast<size_t>(target)];
    const QPoint at = c->widgetRect(target).center().toPoint();
    QHelpEvent help(QEvent::ToolTip, at, c->mapToGlobal(at));
    QApplication::sendEvent(c, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    const QString tip = QToolTip::text();
    const Method& m = program->methods[0];
    QVERIFY(tip.contains(QString::fromStdString(m.values[static_cast<size_t>(r.value)].name)));
    QVERIFY(tip.contains(QStringLiteral("offset %1").arg(r.offset)));
    QVERIFY(tip.contains(QStringLiteral("steps %1 \u2013 %2").arg(r.first).arg(r.last)));
    QVERIFY(tip.contains(QString::fromStdString(m.values[static_cast<size_t>(r.value)].tensor().shapeString())));
    QVERIFY(tip.contains(QStringLiteral("(%1 B)").arg(r.size)));
    if (r.producer >= 0) QVERIFY(tip.contains(QString::fromStdString(v.planLayout()->nodeOp(r.producer))));
    QToolTip::hideText();
  }

  void oneLanePerMemId() {
    // The lowered mlp with its first planned tensor moved to a second arena.
    Program copy = *lowered("mlp");
    Method& m = copy.methods[0];
    ValueId moved = kNoValue;
    for (size_t i = 0; i < m.values.size() && moved == kNoValue; ++i)
      if (TensorSpec* t = std::get_if<TensorSpec>(&m.values[i].payload); t && t->slot && t->nbytes().value_or(0) > 0) {
        t->slot = PlannedSlot{2, 0};
        m.nonConstBufferSizes.resize(3);
        m.nonConstBufferSizes[2] = static_cast<int64_t>(*t->nbytes());
        moved = static_cast<ValueId>(i);
      }
    QVERIFY(moved != kNoValue);
    MemoryPlanView v;
    v.resize(900, 600);
    QVERIFY(show(v, std::make_shared<const Program>(copy)));
    const auto& L = *v.planLayout();
    QCOMPARE(L.lanes.size(), size_t(2));
    QCOMPARE(L.lanes[1].memId, 2u);
    QCOMPARE(v.canvas()->lane(), 0);
    v.selectValue(moved);
    QCOMPARE(v.canvas()->lane(), 1);  // selecting switches to the tensor's arena
    QCOMPARE(v.rectangleFor(moved).top(), 0.0);
    QCOMPARE(v.peakModel()->rowCount(), 1);  // alone in its arena, so alive at its peak
    QVERIFY(v.showMemId(1));
    QCOMPARE(v.canvas()->lane(), 0);
    QVERIFY(!v.showMemId(7));
  }

  // Issue 23, item 10: the peak table of a 12-layer llama. Its 48 caches were
  // cut in the middle ("b_layers_…v_cache_k_cache" all alike), Bytes read
  // "32.0 Ki", nothing sorted and layers came lexically (0, 10, 11, 1, …).
  void peakTableSortsNaturallyAndShowsWhole() {
    SampleOptions twelve;
    twelve.layers = 12;
    MemoryPlanView v;
    v.resize(950, 600);  // its size in a 1366×768 window
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show(v, lowered("llama", twelve)));
    QTableView* t = v.peakTable();
    QAbstractItemModel* m = t->model();
    QVERIFY(m->rowCount() > 20);
    QCOMPARE(t->textElideMode(), Qt::ElideLeft);  // the layer and cache names are at the end
    // Natural order: digit runs compare as numbers.
    QVERIFY(ui::naturalCompare("b_layers_2_k", "b_layers_10_k") < 0);
    QVERIFY(ui::naturalCompare("b_layers_10_k", "b_layers_2_k") > 0);
    QVERIFY(ui::naturalCompare("mul_34", "mul_4") > 0);
    QVERIFY(ui::naturalCompare("add", "add_1") < 0);
    QCOMPARE(ui::naturalCompare("x_7", "x_7"), 0);
    auto name = [&](int row) { return m->index(row, PeakTensorModel::Name).data().toString(); };
    auto raw = [&](int row, int column) { return m->index(row, column).data(PeakTensorModel::RawRole).toULongLong(); };
    auto rowOf = [&](const QString& part) {
      for (int r = 0; r < m->rowCount(); ++r)
        if (name(r).contains(part)) return r;
      return -1;
    };
    // Largest first; equal sizes by layer in natural order.
    for (int r = 1; r < m->rowCount(); ++r) {
      QVERIFY(raw(r - 1, PeakTensorModel::Bytes) >= raw(r, PeakTensorModel::Bytes));
      if (raw(r - 1, PeakTensorModel::Bytes) == raw(r, PeakTensorModel::Bytes))
        QVERIFY2(ui::naturalCompare(name(r - 1), name(r)) <= 0, qPrintable(name(r - 1) + " / " + name(r)));
    }
    QVERIFY2(rowOf("layers_2_") >= 0 && rowOf("layers_2_") < rowOf("layers_10_"), qPrintable(name(rowOf("layers_2_"))));
    // A click on a header sorts by it: names naturally, lifetimes by number.
    auto clickHeader = [&](int column) {
      QHeaderView* h = t->horizontalHeader();
      QTest::mouseClick(h->viewport(), Qt::LeftButton, {}, QPoint(h->sectionViewportPosition(column) + 8, h->height() / 2));
    };
    clickHeader(PeakTensorModel::Name);
    QCOMPARE(t->horizontalHeader()->sortIndicatorSection(), int(PeakTensorModel::Name));
    for (int r = 1; r < m->rowCount(); ++r) QVERIFY(ui::naturalCompare(name(r - 1), name(r)) <= 0);
    QVERIFY(rowOf("layers_2_") < rowOf("layers_10_"));
    t->scrollTo(m->index(0, PeakTensorModel::Lifetime));
    clickHeader(PeakTensorModel::Lifetime);
    QCOMPARE(t->horizontalHeader()->sortIndicatorSection(), int(PeakTensorModel::Lifetime));
    for (int r = 1; r < m->rowCount(); ++r) QVERIFY(raw(r - 1, PeakTensorModel::Lifetime) <= raw(r, PeakTensorModel::Lifetime));
    // The full name is the tooltip; the Bytes column shows every size whole, in view.
    t->horizontalScrollBar()->setValue(0);  // as first shown
    QCOMPARE(m->index(0, PeakTensorModel::Name).data(Qt::ToolTipRole).toString(), name(0));
    const int bytesLeft = t->columnViewportPosition(PeakTensorModel::Bytes), bytesWidth = t->columnWidth(PeakTensorModel::Bytes);
    QVERIFY2(bytesLeft >= 0 && bytesLeft + bytesWidth <= t->viewport()->width(),
             qPrintable(QString("%1 + %2 > %3").arg(bytesLeft).arg(bytesWidth).arg(t->viewport()->width())));
    for (int r = 0; r < m->rowCount(); ++r)
      QVERIFY(t->fontMetrics().horizontalAdvance(m->index(r, PeakTensorModel::Bytes).data().toString()) + 6 <= bytesWidth);
    // The names' column ends in view, so the elided names show their tails.
    const int nameRight = t->columnViewportPosition(PeakTensorModel::Name) + t->columnWidth(PeakTensorModel::Name);
    QVERIFY2(nameRight <= t->viewport()->width(), qPrintable(QString("%1 > %2").arg(nameRight).arg(t->viewport()->width())));
    saveShot(v, "llama12-peak-table");
  }

  // Beyond ExecuTorch: the bound a memory-aware order with in-place reuse reaches, beside the
  // bound as ordered (mobilenet_v2: batch norm and hardtanh write over the convolution's result).
  void reorderedBoundShownBesideTheBound() {
    MemoryPlanView v;
    v.resize(1200, 700);
    v.show();
    QVERIFY(show(v, lowered("mobilenet_v2")));
    const ArenaStats& a = v.planLayout()->lanes.at(0).arena;
    QVERIFY(a.reorderedBound > 0);
    QVERIFY2(a.reorderedBound < a.lowerBound * 7 / 10,
             qPrintable(QString("%1 vs %2").arg(a.reorderedBound).arg(a.lowerBound)));
    bool said = false;
    for (QLabel* l : v.findChildren<QLabel*>()) said = said || l->text().contains("in a memory-aware order");
    QVERIFY(said);
    saveShot(v, "mobilenet-reordered-bound");
  }

  // The arena combo keeps its text ("mem_id 1 — 1.0 MiB", cut to "mem_id 1") beside a long summary.
  void arenaComboIsNotClipped() {
    MemoryPlanView v;
    v.resize(900, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    SampleOptions two;
    two.layers = 2;
    QVERIFY(show(v, lowered("llama", two)));
    QTRY_VERIFY(v.arenaCombo()->isVisible());
    QVERIFY2(v.arenaCombo()->width() >= v.arenaCombo()->sizeHint().width(),
             qPrintable(QString("%1 < %2").arg(v.arenaCombo()->width()).arg(v.arenaCombo()->sizeHint().width())));
  }

  // "peak at step N" sat on the arena-size label when both wanted the top of the plot.
  void peakLabelKeepsClearOfTheLineLabels() {
    MemoryPlanView v;
    v.show();
    QVERIFY(show(v, lowered("mobilenet_v2")));
    for (int width : {700, 900, 1100, 1300, 1600}) {
      v.resize(width, 800);
      v.canvas()->grab();  // paints, placing the labels
      const auto& boxes = v.canvas()->plotLabelBoxes();
      QCOMPARE(boxes.size(), size_t(4));  // arena size, lower bound, reordered bound, peak
      for (size_t i = 0; i < boxes.size(); ++i)
        for (size_t j = i + 1; j < boxes.size(); ++j)
          QVERIFY2(!boxes[j].intersects(boxes[i]), qPrintable(QString("width %1, labels %2, %3").arg(width).arg(i).arg(j)));
      QVERIFY(v.canvas()->plotArea().contains(boxes.back()));
    }
  }

  // The legend's "+N more" lists what it stands for, on hover and on a click.
  void legendOverflowOpens() {
    MemoryPlanView v;
    v.resize(800, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(show(v, lowered("mobilenet_v2")));
    v.canvas()->grab();
    const QRectF more = v.canvas()->legendMoreRect();
    QVERIFY(!more.isEmpty());
    const QString last = QString::fromStdString(v.planLayout()->opKeys.back()).toHtmlEscaped();
    QVERIFY2(v.canvas()->legendOverflowText().contains(last), qPrintable(v.canvas()->legendOverflowText()));
    const QPoint at = more.center().toPoint();
    QHelpEvent hover(QEvent::ToolTip, at, v.canvas()->mapToGlobal(at));
    QApplication::sendEvent(v.canvas(), &hover);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY(QToolTip::text().contains(last));
    QToolTip::hideText();
    QTRY_VERIFY(!QToolTip::isVisible());
    QTest::mouseClick(v.canvas(), Qt::LeftButton, {}, at);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY(QToolTip::text().contains(last));
    QToolTip::hideText();
    QCOMPARE(v.selectedValue(), -1);  // the click opened the list, it selected nothing
  }

  void screenshots() {
    MemoryPlanView v;
    v.resize(1400, 800);
    v.show();
    if (!fixturesDir().isEmpty()) {
      QVERIFY(show(v, opened(fixture("pte/xor.pte"))));
      saveShot(v, "xor-pte");
      QVERIFY(show(v, opened(fixture("pte/arduino_KeywordSpotting_model.pte"))));
      saveShot(v, "kws-pte");
    }
    SampleOptions eight;
    eight.layers = 8;
    QVERIFY(show(v, loweredFromArchive("llama", eight)));
    saveShot(v, "llama8");
    v.selectNode(static_cast<int>(v.planLayout()->method().nodes.size() / 2));
    v.canvas()->setStepRange(v.planLayout()->report.steps * 0.45, v.planLayout()->report.steps * 0.55);
    saveShot(v, "llama8-zoomed");
    v.setColorByModule(true);
    QCOMPARE(v.canvas()->colorBy(), ui::PlanCanvas::ColorBy::Module);
    v.canvas()->fit();
    saveShot(v, "llama8-modules");
  }
};

QTEST_MAIN(TestPlanView)
#include "tst_planview.moc"
