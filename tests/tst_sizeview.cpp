// The Size view: the squarified treemap's geometry, every part of a real
// .pte (and its .ptd) on screen, a click linked to the other views, the
// comparison with another file read off the GUI thread, and a .pt2 told why.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QtTest>
#include <map>
#include <set>
#include <numeric>

#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/inspect/SizeBreakdown.h"
#include "tests/TestSupport.h"
#include "ui/config/ConstantTable.h"
#include "ui/graph/Inspector.h"
#include "ui/plan/MemoryPlanView.h"
#include "ui/window/MainWindow.h"
#include "ui/size/SizeTreemap.h"
#include "ui/size/SizeView.h"

using namespace lstudio;
using namespace lstudio::test;
using ui::TreemapBlock;

namespace {

double areaOf(const QRectF& r) { return r.isEmpty() ? 0 : r.width() * r.height(); }

/// `rects` lie inside `area`, never overlap, cover it, and each has the share of
/// it its weight has of the total (within `tolerance` of the area). Empty
/// message when so, else what is wrong.
QString tiles(const std::vector<QRectF>& rects, const std::vector<double>& weights, const QRectF& area,
              double tolerance = 1e-6) {
  if (rects.size() != weights.size()) return "one rectangle per weight expected";
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0), whole = areaOf(area);
  const double eps = tolerance * whole;
  double covered = 0;
  for (size_t i = 0; i < rects.size(); ++i) {
    const double expected = total > 0 ? weights[i] / total * whole : 0;
    if (std::abs(areaOf(rects[i]) - expected) > eps)
      return QString("rect %1 has area %2, its weight asks %3").arg(i).arg(areaOf(rects[i])).arg(expected);
    if (weights[i] > 0 && !area.adjusted(-1e-6, -1e-6, 1e-6, 1e-6).contains(rects[i]))
      return QString("rect %1 lies outside the area").arg(i);
    covered += areaOf(rects[i]);
    for (size_t j = 0; j < i; ++j)
      if (areaOf(rects[i].intersected(rects[j])) > eps) return QString("rects %1 and %2 overlap").arg(j).arg(i);
  }
  if (total > 0 && std::abs(covered - whole) > eps) return QString("covered %1 of %2").arg(covered).arg(whole);
  return {};
}

double worstAspect(const std::vector<QRectF>& rects) {
  double worst = 1;
  for (const QRectF& r : rects)
    if (!r.isEmpty()) worst = std::max(worst, std::max(r.width() / r.height(), r.height() / r.width()));
  return worst;
}

SizeBreakdown breakdownOf(const QString& path) {
  auto p = openProgramFile(path.toStdString());
  if (!p) qFatal("%s", p.error().message().c_str());
  return sizeBreakdown(p.value());
}

/// Opens `path` in `w` and waits until loading, lowering and layout are done.
bool openAndSettle(ui::MainWindow& w, const QString& path) {
  QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
  w.openFile(path);
  if (!spy.wait(30000) || !spy.first().at(0).toBool()) return false;
  return QTest::qWaitFor([&] { return w.idle(); }, 30000);
}

/// The block of the item called `name`, or -1.
int itemBlock(const ui::SizeView& v, const std::string& name) {
  const auto& blocks = v.blocks();
  for (size_t k = 0; k < blocks.size(); ++k) {
    const TreemapBlock& b = blocks[k];
    if (b.level != TreemapBlock::Level::Item) continue;
    const auto& items = v.files()[b.file].parts[b.part].items;
    if (b.item < int(items.size()) && items[b.item].name == name) return int(k);
  }
  return -1;
}

void saveShot(QWidget& w, const QString& name) {
  const QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
  if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/" + name));
}

}  // namespace

class TestSizeView : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void squarifyTilesTheArea_data() {
    QTest::addColumn<std::vector<double>>("weights");
    QTest::addColumn<QRectF>("area");
    QTest::addRow("one") << std::vector<double>{5} << QRectF(0, 0, 600, 400);
    QTest::addRow("the paper's example") << std::vector<double>{6, 6, 4, 3, 2, 2, 1} << QRectF(0, 0, 6, 4);
    QTest::addRow("unsorted") << std::vector<double>{1, 8, 2, 5, 3} << QRectF(10, 20, 300, 500);
    QTest::addRow("zero weights") << std::vector<double>{3, 0, 2, 0} << QRectF(0, 0, 640, 360);
    QTest::addRow("one huge, many tiny") << [] {
      std::vector<double> w{2'000'000};
      for (int i = 0; i < 300; ++i) w.push_back(8 + i % 7);
      return w;
    }() << QRectF(0, 0, 1366, 420);
    QTest::addRow("tall and thin") << std::vector<double>{40, 30, 20, 10, 5, 5} << QRectF(0, 0, 37.5, 900);
  }
  void squarifyTilesTheArea() {
    QFETCH(std::vector<double>, weights);
    QFETCH(QRectF, area);
    const auto rects = ui::squarify(weights, area);
    const QString why = tiles(rects, weights, area);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    for (size_t i = 0; i < weights.size(); ++i)
      if (weights[i] == 0) QVERIFY(rects[i].isEmpty());
  }

  // Squarified, not sliced: the paper's seven rectangles in a 6 x 4 area are
  // close to squares (slicing them in a row would give one 16 times as tall as wide).
  void squarifyKeepsBlocksSquare() {
    const auto rects = ui::squarify({6, 6, 4, 3, 2, 2, 1}, QRectF(0, 0, 6, 4));
    QVERIFY2(worstAspect(rects) < 3, qPrintable(QString::number(worstAspect(rects))));
    QCOMPARE(rects[0], QRectF(0, 0, 3, 2));  // the paper's first row: the two 6s stacked, 3 wide
    QCOMPARE(rects[1], QRectF(0, 2, 3, 2));
  }

  void layoutShowsEveryPart_data() {
    QTest::addColumn<QStringList>("files");
    QTest::addRow("keyword spotting") << QStringList{"pte/arduino_KeywordSpotting_model.pte"};
    QTest::addRow("XNNPACK delegated") << QStringList{"pte/djl_stress_mlp.pte"};
    QTest::addRow("Qualcomm payload") << QStringList{"pte/stories260k_hybrid_llama_qnn.pte"};
    QTest::addRow("a .pte with its .ptd") << QStringList{"pte/xor.pte", "ptd/xor.ptd"};
  }
  void layoutShowsEveryPart() {
    LSTUDIO_REQUIRE_FIXTURES();
    QFETCH(QStringList, files);
    std::vector<SizeBreakdown> sizes;
    for (const QString& f : files) {
      if (f.endsWith(".ptd")) {
        auto d = readDataFile(fixture(f).toStdString());
        QVERIFY(d);
        sizes.push_back(sizeBreakdown(d.value()));
      } else {
        sizes.push_back(breakdownOf(fixture(f)));
      }
      QCOMPARE(sizes.back().total(), sizes.back().fileBytes);  // every byte of the file in one part
    }
    const QRectF area(0, 0, 900, 520);
    const auto blocks = ui::layoutTreemap(sizes, area, 20);
    // Files (when several) tile the area by bytes.
    std::vector<QRectF> fileRects;
    std::vector<double> fileWeights;
    for (const TreemapBlock& b : blocks)
      if (b.level == TreemapBlock::Level::File) {
        fileRects.push_back(b.rect);
        fileWeights.push_back(double(sizes[b.file].fileBytes));
      }
    QCOMPARE(int(fileRects.size()), sizes.size() > 1 ? int(sizes.size()) : 0);
    if (!fileRects.empty()) QVERIFY2(tiles(fileRects, fileWeights, area).isEmpty(), qPrintable(tiles(fileRects, fileWeights, area)));
    for (size_t f = 0; f < sizes.size(); ++f) {
      // Every part is there, and the parts tile their file's box by bytes.
      std::vector<QRectF> partRects(sizes[f].parts.size());
      std::vector<double> partWeights;
      for (const SizePart& p : sizes[f].parts) partWeights.push_back(double(p.bytes));
      QRectF fileArea = area;
      for (const TreemapBlock& b : blocks) {
        if (b.file != int(f)) continue;
        if (b.level == TreemapBlock::Level::File) fileArea = b.inner;
        if (b.level == TreemapBlock::Level::Part) partRects[b.part] = b.rect;
      }
      for (size_t p = 0; p < partRects.size(); ++p)
        QVERIFY2(!partRects[p].isEmpty(), sizes[f].parts[p].name.c_str());
      QString why = tiles(partRects, partWeights, fileArea);
      QVERIFY2(why.isEmpty(), qPrintable(why));
      // Inside each part, its items (and what no item names) tile the part's inner box by bytes.
      for (const TreemapBlock& part : blocks) {
        if (part.level != TreemapBlock::Level::Part || part.file != int(f) || part.inner.isEmpty()) continue;
        std::vector<QRectF> itemRects;
        std::vector<double> itemWeights;
        for (const TreemapBlock& b : blocks)
          if (b.level == TreemapBlock::Level::Item && b.file == part.file && b.part == part.part) {
            itemRects.push_back(b.rect);
            itemWeights.push_back(double(b.bytes));
          }
        QCOMPARE(std::accumulate(itemWeights.begin(), itemWeights.end(), 0.0), double(part.bytes));
        why = tiles(itemRects, itemWeights, part.inner);
        QVERIFY2(why.isEmpty(), qPrintable(sizes[f].parts[part.part].name.c_str() + (": " + why)));
      }
    }
  }

  // A click on a constant's block selects that constant in the Constants table
  // and shows its value in the inspector: the window's shared selection.
  void clickOnConstantSelectsIt() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(openAndSettle(w, fixture("pte/arduino_KeywordSpotting_model.pte")));
    ui::SizeView* v = w.sizeView();
    w.views()->setCurrentWidget(v);
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(v->files().size(), size_t(1));
    const int k = itemBlock(*v, "forward %46");
    QVERIFY(k >= 0);
    const QPoint at = v->blocks()[k].rect.center().toPoint();
    QCOMPARE(v->blockAt(at), k);
    QSignalSpy constant(v, &ui::SizeView::constantActivated);
    QTest::mouseClick(v->canvas(), Qt::LeftButton, {}, at);
    QCOMPARE(v->selectedBlock(), k);
    QCOMPARE(constant.count(), 1);
    QVERIFY(v->detailsLabel()->text().contains("forward %46"));
    QVERIFY(v->detailsLabel()->text().contains("4.0 KiB"));
    const QModelIndex current = w.constantTable()->view()->currentIndex();
    QVERIFY(current.isValid());
    QCOMPARE(current.data(ui::ConstantTable::ValueIdRole).toInt(), 46);
    QCOMPARE(w.inspector()->program(), w.shownProgram());
    QCOMPARE(w.inspector()->method(), 0);
    QVERIFY2(w.inspector()->toPlainText().contains("46"), qPrintable(w.inspector()->toPlainText()));
    saveShot(w, "studio-size.png");
  }

  // A click on an XNNPACK operator's weights selects the delegate call that runs the payload.
  void clickOnDelegateSelectsTheCall() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(openAndSettle(w, fixture("pte/djl_stress_mlp.pte")));
    ui::SizeView* v = w.sizeView();
    w.views()->setCurrentWidget(v);
    int k = -1;
    for (size_t i = 0; i < v->blocks().size() && k < 0; ++i)
      if (v->blocks()[i].level == TreemapBlock::Level::Item &&
          v->blockName(v->blocks()[i]).startsWith("forward delegate 1: node 1 XNNFullyConnected"))
        k = int(i);
    QVERIFY(k >= 0);
    QCOMPARE(w.selectedNode(), -1);
    QTest::mouseClick(v->canvas(), Qt::LeftButton, {}, v->blocks()[k].rect.center().toPoint());
    QCOMPARE(v->selectedBlock(), k);
    const int node = w.selectedNode();
    QVERIFY(node >= 0);
    const Node& n = w.shownProgram()->methods[0].nodes[node];
    QCOMPARE(n.kind, NodeKind::Delegate);
    QCOMPARE(n.delegate, 1);
  }

  // The comparison lists, per part, the bytes of each file and the change the engine computes.
  void compareShowsTheDifference() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(openAndSettle(w, fixture("pte/djl_lin129.pte")));
    ui::SizeView* v = w.sizeView();
    w.views()->setCurrentWidget(v);
    QVERIFY(v->compareButton()->isEnabled());
    QSignalSpy done(v, &ui::SizeView::compareFinished);
    v->compareWith(fixture("pte/djl_lin129_planned.pte"));
    QVERIFY(v->compareBusy() || done.count() == 1);
    QVERIFY(done.count() == 1 || done.wait(30000));
    QCOMPARE(done.first().at(0).toBool(), true);
    QVERIFY(!v->compareBusy());

    const SizeBreakdown a = breakdownOf(fixture("pte/djl_lin129.pte")), b = breakdownOf(fixture("pte/djl_lin129_planned.pte"));
    QTreeWidget* t = v->diffTable();
    std::map<std::string, std::pair<uint64_t, uint64_t>> expected;
    for (const SizePart& p : a.parts) expected[p.name].first = p.bytes;
    for (const SizePart& p : b.parts) expected[p.name].second = p.bytes;
    QCOMPARE(t->topLevelItemCount(), int(expected.size()));
    for (int i = 0; i < t->topLevelItemCount(); ++i) {
      QTreeWidgetItem* row = t->topLevelItem(i);
      const auto want = expected.at(row->text(ui::SizeView::DiffName).toStdString());
      QCOMPARE(row->data(ui::SizeView::DiffThis, ui::SizeView::BytesRole).toULongLong(), want.first);
      QCOMPARE(row->data(ui::SizeView::DiffOther, ui::SizeView::BytesRole).toULongLong(), want.second);
      QCOMPARE(row->data(ui::SizeView::DiffChange, ui::SizeView::BytesRole).toLongLong(),
               qlonglong(want.second) - qlonglong(want.first));
    }
    // The planned file's flatbuffer is 24 bytes larger, its padding 24 smaller: the largest changes first.
    QTreeWidgetItem* top = t->topLevelItem(0);
    QVERIFY(top->text(0) == "padding and alignment" || top->text(0) == "program flatbuffer");
    QCOMPARE(std::llabs(top->data(ui::SizeView::DiffChange, ui::SizeView::BytesRole).toLongLong()), 24LL);
    QTreeWidgetItem* flatbuffer = t->findItems("program flatbuffer", Qt::MatchExactly).value(0);
    QVERIFY(flatbuffer);
    QCOMPARE(flatbuffer->text(ui::SizeView::DiffChange), QString("+24 B"));
    QVERIFY(flatbuffer->childCount() > 0);  // the tables that grew
    QVERIFY(v->compareMessage()->text().contains("djl_lin129_planned.pte"));
    saveShot(w, "studio-size-compare.png");

    // A file that is no ExecuTorch program: a message naming it, never a crash.
    done.clear();
    v->compareWith(fixture("pt2/linear.pt2"));
    QVERIFY(done.count() == 1 || done.wait(30000));
    QCOMPARE(done.first().at(0).toBool(), false);
    QVERIFY(v->compareMessage()->text().contains("linear.pt2"));
    QVERIFY(v->compareMessage()->text().contains("torch.export"));
    QCOMPARE(v->diffTable()->topLevelItemCount(), 0);
    done.clear();
    QTemporaryDir dir;
    const QString broken = dir.filePath("truncated.pte");
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(readAll(fixture("pte/djl_lin129.pte")).left(100));
    f.close();
    v->compareWith(broken);
    QVERIFY(done.count() == 1 || done.wait(30000));
    QCOMPARE(done.first().at(0).toBool(), false);
    QVERIFY(v->compareMessage()->text().contains("Cannot compare with truncated.pte"));
  }

  // A .pte opened with its .ptd: both files to scale, each alone on request, and
  // a tensor of the .ptd selected as the constant it is.
  void aPteWithItsPtd() {
    LSTUDIO_REQUIRE_FIXTURES();
    QTemporaryDir dir;  // the fixtures side by side, as the studio finds a .ptd beside its .pte
    QVERIFY(QFile::link(fixture("pte/xor.pte"), dir.filePath("xor.pte")));
    QVERIFY(QFile::link(fixture("ptd/xor.ptd"), dir.filePath("xor.ptd")));
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(openAndSettle(w, dir.filePath("xor.pte")));
    ui::SizeView* v = w.sizeView();
    w.views()->setCurrentWidget(v);
    QCOMPARE(v->files().size(), size_t(2));
    QCOMPARE(v->files()[1].fileBytes, uint64_t(QFileInfo(fixture("ptd/xor.ptd")).size()));
    auto filesShown = [&] {
      std::set<int> files;
      for (const TreemapBlock& b : v->blocks()) files.insert(b.file);
      return files;
    };
    QCOMPARE(filesShown(), (std::set<int>{0, 1}));
    // Double-click into the .ptd: its parts alone tile the canvas; again, and both are back.
    int ptdBlock = -1;
    for (size_t k = 0; k < v->blocks().size() && ptdBlock < 0; ++k)
      if (v->blocks()[k].level == TreemapBlock::Level::File && v->blocks()[k].file == 1) ptdBlock = int(k);
    QVERIFY(ptdBlock >= 0);
    QTest::mouseDClick(v->canvas(), Qt::LeftButton, {}, v->blocks()[ptdBlock].rect.center().toPoint());
    QCOMPARE(v->shownFile(), 1);
    QCOMPARE(filesShown(), (std::set<int>{1}));
    std::vector<QRectF> parts;
    std::vector<double> weights;
    for (const TreemapBlock& b : v->blocks())
      if (b.level == TreemapBlock::Level::Part) {
        parts.push_back(b.rect);
        weights.push_back(double(b.bytes));
      }
    QCOMPARE(parts.size(), v->files()[1].parts.size());
    const QString why = tiles(parts, weights, QRectF(v->canvas()->rect()).adjusted(0, 0, -1, -1));
    QVERIFY2(why.isEmpty(), qPrintable(why));
    // The .ptd's tensor is a trainable weight of the program (planned, its initial value in the
    // .ptd): not a row of the Constants table, but selected in the inspector and the memory plan.
    const int k = itemBlock(*v, "net.linear.weight");
    QVERIFY(k >= 0);
    QTest::mouseClick(v->canvas(), Qt::LeftButton, {}, v->blocks()[k].rect.center().toPoint());
    const Method& forward = w.shownProgram()->methods[0];
    int weight = -1;
    for (size_t i = 0; i < forward.values.size() && weight < 0; ++i)
      if (const TensorSpec* t = forward.values[i].tensorIf(); t && t->fqn == "net.linear.weight") weight = int(i);
    QVERIFY(weight >= 0);
    QVERIFY2(w.inspector()->toPlainText().startsWith("%net.linear.weight"), qPrintable(w.inspector()->toPlainText()));
    QTRY_COMPARE(w.planView()->selectedValue(), weight);
    saveShot(w, "studio-size-ptd.png");
    QTest::mouseDClick(v->canvas(), Qt::LeftButton, {}, v->blocks()[k].rect.center().toPoint());
    QCOMPARE(v->shownFile(), -1);
    QCOMPARE(filesShown(), (std::set<int>{0, 1}));
  }

  // A .pt2 has no file layout to break down: the view says so and what to do.
  void pt2IsToldWhy() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    QVERIFY(openAndSettle(w, fixture("pt2/linear.pt2")));
    ui::SizeView* v = w.sizeView();
    w.views()->setCurrentWidget(v);
    QVERIFY(v->files().empty());
    QVERIFY(v->blocks().empty());
    QVERIFY(!v->compareButton()->isEnabled());
    auto* why = v->findChild<QLabel*>("sizeMessage");
    QVERIFY(why && why->isVisible());
    QVERIFY(why->text().contains("torch.export program"));
    QVERIFY(why->text().contains("Export"));
    QCOMPARE(v->blockAt(QPointF(10, 10)), -1);
    v->selectBlock(0);  // nothing to select: no crash, nothing selected
    QCOMPARE(v->selectedBlock(), -1);
    saveShot(w, "studio-size-pt2.png");
  }
};

QTEST_MAIN(TestSizeView)
#include "tst_sizeview.moc"
