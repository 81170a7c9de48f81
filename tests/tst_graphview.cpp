// The graph view, offscreen: what it draws against the method it shows,
// module groups folding and unfolding, find, selection by click and API,
// diff marks, and stale layouts being dropped. Set LSTUDIO_SCREENSHOT_DIR to
// keep PNGs of the mlp, mobilenet_v2 and llama views.
#include <QGraphicsView>
#include <QSignalSpy>
#include <QtTest>
#include <map>
#include <set>

#include "engine/formats/OpenProgram.h"
#include "engine/lowering/Pipeline.h"
#include "engine/samples/SampleZoo.h"
#include "tests/TestSupport.h"
#include "ui/GraphView.h"

using namespace lstudio;
using namespace lstudio::test;
using ui::GraphView;

namespace {

std::shared_ptr<const Program> sample(const std::string& name, int layers = 0) {
  SampleOptions o;
  o.layers = layers;
  auto p = buildSample(name, o);
  if (!p.ok()) return nullptr;
  return std::make_shared<const Program>(std::move(p.value()));
}

/// Waits until the view has applied its newest layout.
bool settle(GraphView& v) {
  if (!v.layoutPending()) return true;
  QSignalSpy spy(&v, &GraphView::layoutFinished);
  return spy.wait(60000) && !v.layoutPending();
}

void tensorsOf(const Method& m, ValueId v, std::vector<ValueId>& out) {
  if (v < 0) return;
  const Value& x = m.values[v];
  if (x.isTensor()) out.push_back(v);
  else if (auto* l = std::get_if<TensorList>(&x.payload))
    for (ValueId i : l->items) tensorsOf(m, i, out);
  else if (auto* o = std::get_if<OptionalTensorList>(&x.payload))
    for (ValueId i : o->items) tensorsOf(m, i, out);
}

/// Producer -> consumer pairs computed straight from the method: inputs are
/// -1 - k, nodes their index, the outputs marker INT_MAX.
std::set<std::pair<int, int>> dataFlow(const Method& m) {
  std::map<ValueId, int> producer;
  for (size_t k = 0; k < m.inputs.size(); ++k) producer[m.inputs[k]] = -1 - int(k);
  std::set<std::pair<int, int>> pairs;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    std::vector<ValueId> outs, ins;
    for (ValueId v : m.nodes[i].outputs) tensorsOf(m, v, outs);
    for (ValueId a : m.nodes[i].args) tensorsOf(m, a, ins);
    for (ValueId v : ins)
      if (std::find(outs.begin(), outs.end(), v) == outs.end() && producer.count(v)) pairs.insert({producer[v], int(i)});
    for (ValueId v : outs) producer[v] = int(i);
  }
  for (ValueId o : m.outputs) {
    std::vector<ValueId> ts;
    tensorsOf(m, o, ts);
    for (ValueId v : ts) pairs.insert({producer[v], INT_MAX});
  }
  return pairs;
}

void shoot(GraphView& v, const QString& name) {
  QString dir = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
  if (!dir.isEmpty()) QVERIFY(v.grab().save(dir + "/graphview-" + name + ".png"));
}

int nodeInModule(const Method& m, const std::string& prefix, const std::string& op = {}) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const auto& st = m.nodes[i].meta.moduleStack;
    bool inside = false;
    for (const auto& f : st) inside |= f.path.rfind(prefix, 0) == 0;
    if (inside && (op.empty() || m.nodes[i].target.find(op) != std::string::npos)) return int(i);
  }
  return -1;
}

}  // namespace

class TestGraphView : public QObject {
  Q_OBJECT
 private slots:
  void drawsEveryNodeAndEdge_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : {"mlp", "dynamic_batch", "quantized_linear", "training", "mobilenet_v2"}) QTest::newRow(n) << n;
  }
  void drawsEveryNodeAndEdge() {
    QFETCH(QString, name);
    auto p = sample(name.toStdString());
    QVERIFY(p);
    const Method& m = p->methods[0];
    GraphView v;
    v.resize(1100, 800);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(v.layoutPending());
    QVERIFY(settle(v));
    if (name == "mlp" || name == "mobilenet_v2") shoot(v, name);
    // Open every group so that each node is drawn on its own.
    for (const auto& g : v.model()->groups) v.setGroupCollapsed(QString::fromStdString(g.path), false);
    QVERIFY(settle(v));
    QCOMPARE(v.visibleGroupBoxCount(), 0);
    // One box per node, per input, and the outputs marker (zoo samples lift every weight to an input).
    QCOMPARE(v.visibleItemCount(), int(m.nodes.size() + m.inputs.size() + 1));
    QCOMPARE(v.visibleEdgeCount(), int(dataFlow(m).size()));
    if (name == "mobilenet_v2") {
      v.fitToView();
      shoot(v, name + "-open");
    }
  }

  // A view that ReplaceViewCopyWithView made a window on its base has no node
  // making it, but is still a use of its base: a dashed box fed by the base
  // and feeding its readers (mobilenet_v2's flatten before the classifier
  // once had neither edge, and the classifier floated beside the input).
  void removedViewsKeepTheirEdges() {
    Pipeline p(sample("mobilenet_v2"), ExecutorchBackendConfig{});
    p.runToEnd();
    QVERIFY(!p.failed());
    const Method& m = p.current()->methods[0];
    auto g = ui::GraphModel::build(m);
    auto hasEdge = [&](int from, int to) {
      return std::any_of(g.edges.begin(), g.edges.end(), [&](const auto& e) { return e.from == from && e.to == to; });
    };
    int views = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i)
      for (ValueId a : m.nodes[i].args) {
        std::vector<ValueId> ts;
        tensorsOf(m, a, ts);
        for (ValueId v : ts) {
          const TensorSpec& t = m.values[v].tensor();
          if (t.viewOf == kNoValue) continue;
          ++views;
          int box = g.nodeOfValue[v];
          QVERIFY(box >= 0);
          QCOMPARE(g.nodes[box].kind, ui::VisualKind::View);
          QVERIFY(g.nodeOfValue[t.viewOf] >= 0);
          QVERIFY(hasEdge(g.nodeOfValue[t.viewOf], box));
          QVERIFY(hasEdge(box, g.nodeOfMethodNode[i]));
        }
      }
    QVERIFY(views > 0);
  }

  // Every method of every real program: each node gets its own box once its
  // groups are open, delegates become groups, nothing crashes on odd graphs.
  void realPrograms() {
    LSTUDIO_REQUIRE_FIXTURES();
    QStringList files = fixtureFiles("pte", {"*.pte"}) + fixtureFiles("pt2", {"*.pt2"}) +
                        fixtureFiles("other", {"*.bpte", "*.bin"});
    QVERIFY(!files.isEmpty());
    int delegates = 0;
    for (const QString& f : files) {
      auto opened = openProgramFile(f.toStdString());
      if (!opened.ok()) continue;  // the readers' tests cover broken files
      auto p = std::make_shared<const Program>(std::move(opened.value()));
      for (size_t mi = 0; mi < p->methods.size(); ++mi) {
        const Method& m = p->methods[mi];
        GraphView v;
        v.resize(800, 600);
        v.show();
        v.setGraph(p, int(mi));
        QVERIFY2(settle(v), qPrintable(f));
        for (const auto& g : v.model()->groups) {
          delegates += g.delegate;
          v.setGroupCollapsed(QString::fromStdString(g.path), false);
        }
        QVERIFY2(settle(v), qPrintable(f));
        QVERIFY2(v.visibleItemCount() >= int(m.nodes.size() + 1), qPrintable(f));
        QCOMPARE(v.visibleGroupBoxCount(), 0);
        int kinds[8] = {};
        for (const auto& n : v.model()->nodes) kinds[int(n.kind)] += n.delegateCall < 0;  // payload operators apart
        int delegateNodes = 0;
        for (const Node& n : m.nodes) delegateNodes += n.kind == NodeKind::Delegate;
        QCOMPARE(kinds[int(ui::VisualKind::Delegate)], delegateNodes);
        QCOMPARE(kinds[int(ui::VisualKind::Output)], 1);
      }
    }
    qInfo("%d delegate groups", delegates);
  }

  // A decoded XNNPACK delegate starts as one closed group and opens into its
  // own operators: inputs enter at the call, results leave from the operator
  // that writes them, and a click on an operator selects its delegate call.
  void delegatesOpenIntoTheirOperators() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto opened = openProgramFile(fixture("pte/djl_stress_mlp.pte").toStdString());
    QVERIFY(opened.ok());
    auto p = std::make_shared<const Program>(std::move(opened.value()));
    const Method& m = p->methods[0];
    auto g = ui::GraphModel::build(m);
    int call = -1;
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (m.nodes[i].kind == NodeKind::Delegate && m.nodes[i].delegate == 1) call = int(i);
    QVERIFY(call >= 0);
    std::vector<int> payload;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].delegateCall == call) payload.push_back(int(i));
    QCOMPARE(payload.size(), size_t(11));  // 8 fully connected, 3 adds
    QCOMPARE(std::count_if(payload.begin(), payload.end(), [&](int i) { return g.nodes[i].title == "FullyConnected"; }), 8);
    const int callBox = g.nodeOfMethodNode[call];
    for (int i : payload) QCOMPARE(g.nodes[i].group, g.nodes[callBox].group);
    auto from = [&](int a, int b) {
      return std::any_of(g.edges.begin(), g.edges.end(), [&](const auto& e) { return e.from == a && e.to == b; });
    };
    QVERIFY(std::any_of(payload.begin(), payload.end(), [&](int i) { return from(callBox, i); }));
    // The delegate's result now comes from a payload operator.
    ValueId result = m.nodes[call].args.back();
    QVERIFY(std::find(payload.begin(), payload.end(), g.nodeOfValue[result]) != payload.end());
    QVERIFY(std::none_of(g.edges.begin(), g.edges.end(), [&](const auto& e) { return e.from == callBox && e.value == result; }));
    // ... and is not drawn as an input of the call (a .pte names no results of a delegate call).
    QVERIFY(std::none_of(g.nodes.begin(), g.nodes.end(), [&](const auto& n) { return n.node < 0 && n.value == result; }));

    GraphView v;
    v.resize(1100, 800);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    const QString group = QString::fromStdString(g.groups[g.nodes[callBox].group].path);
    QVERIFY(v.isGroupCollapsed(group));  // closed until asked
    v.setGroupCollapsed(group, true);
    QVERIFY(settle(v));
    const int closed = v.visibleItemCount();
    v.setGroupCollapsed(group, false);
    QVERIFY(settle(v));
    int inside = 0;  // the call, its 11 operators, and weights only it reads
    for (size_t i = 0; i < g.nodes.size(); ++i) inside += g.nodes[i].group == g.nodes[callBox].group;
    QVERIFY(inside >= 12);
    QCOMPARE(v.visibleItemCount(), closed - 1 + inside);
    v.fitToView();
    shoot(v, "delegate-open");
    QSignalSpy spy(&v, &GraphView::nodeSelected);
    QVERIFY(!v.viewportPosOfNode(payload[0]).isNull());
    QTest::mouseClick(v.canvas()->viewport(), Qt::LeftButton, {}, v.viewportPosOfNode(payload[0]));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toInt(), call);
  }

  void kindsFollowTheOps() {
    auto p = sample("mlp");
    GraphView v;
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    std::map<ui::VisualKind, int> kinds;
    for (const auto& n : v.model()->nodes) ++kinds[n.kind];
    QCOMPARE(kinds[ui::VisualKind::View], 3);     // the permutes of the weights
    QCOMPARE(kinds[ui::VisualKind::Compute], 5);  // 3 addmm + 2 relu
    QCOMPARE(kinds[ui::VisualKind::Parameter], 6);
    QCOMPARE(kinds[ui::VisualKind::Input], 1);
    QCOMPARE(kinds[ui::VisualKind::Output], 1);
  }

  void bigGraphStartsCollapsed() {
    auto p = sample("llama", 32);
    QVERIFY(p);
    const Method& m = p->methods[0];
    QVERIFY(m.nodes.size() > 3000);
    GraphView v;
    v.resize(1200, 900);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    QVERIFY(v.isGroupCollapsed("layers.3"));
    QVERIFY(v.visibleGroupBoxCount() >= 32);
    QVERIFY(v.visibleItemCount() < 150);
    QVERIFY(!v.viewportPosOfGroup("layers.0").isNull());
    shoot(v, "llama-collapsed");
    const int before = v.visibleItemCount();

    QVERIFY(v.setGroupCollapsed("layers.3", false));
    QVERIFY(v.layoutPending());
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.3"));
    // Its children are groups too (attention, feed_forward, norms): they stay folded.
    QVERIFY(v.visibleItemCount() > before);
    QVERIFY(v.isGroupCollapsed("layers.3.attention"));
    QVERIFY(v.setGroupCollapsed("layers.3.attention", false));
    QVERIFY(settle(v));
    int attention = nodeInModule(m, "layers.3.attention", "mm");
    QVERIFY(attention >= 0);
    QVERIFY(!v.viewportPosOfMethodNode(attention).isNull());
    QVERIFY(v.viewportPosOfMethodNode(nodeInModule(m, "layers.4.")).isNull() ||
            v.isGroupCollapsed("layers.4"));
    QVERIFY(v.setGroupCollapsed("layers.3.attention.SDPA", false));
    QVERIFY(settle(v));
    shoot(v, "llama-layer3");

    QVERIFY(v.setGroupCollapsed("layers.3", true));
    QVERIFY(settle(v));
    QCOMPARE(v.visibleItemCount(), before);
    QVERIFY(!v.setGroupCollapsed("no.such.module", false));
  }

  // A big program without module information (.pte files have none) is
  // folded into runs of consecutive nodes so that it still opens at once.
  void flatProgramsFoldByExecutionOrder() {
    auto p = sample("llama", 4);
    Program flat = *p;
    for (Node& n : flat.methods[0].nodes) n.meta.moduleStack.clear();
    const size_t count = flat.methods[0].nodes.size();
    QVERIFY(count > 300);
    auto shared = std::make_shared<const Program>(std::move(flat));
    GraphView v;
    v.resize(900, 700);
    v.show();
    v.setGraph(shared, 0);
    QVERIFY(settle(v));
    const auto& model = *v.model();
    QCOMPARE(model.groups.size(), (count + 149) / 150);
    for (size_t i = 0; i < count; ++i) {
      const auto& n = model.nodes[model.nodeOfMethodNode[i]];
      QVERIFY(n.group >= 0);
      QCOMPARE(model.groups[n.group].path, "nodes " + std::to_string(i / 150 * 150));
    }
    // All folded, except that a view of a handful of boxes opens its largest one.
    QVERIFY(v.visibleGroupBoxCount() >= int(model.groups.size()) - 1);
    QVERIFY(v.visibleItemCount() < 200);
    QVERIFY(v.setGroupCollapsed("nodes 150", false));
    QVERIFY(settle(v));
    QVERIFY(!v.viewportPosOfMethodNode(200).isNull());
  }

  void selectNodeOpensItsGroup() {
    auto p = sample("llama", 8);
    const Method& m = p->methods[0];
    GraphView v;
    v.resize(900, 700);
    v.show();
    v.setGraph(p, 0, {});
    QVERIFY(settle(v));
    QVERIFY(v.model()->nodes.size() > 300);
    int target = nodeInModule(m, "layers.6.feed_forward");
    QVERIFY(target >= 0);
    QVERIFY(v.isGroupCollapsed("layers.6"));
    QSignalSpy emitted(&v, &GraphView::nodeSelected);
    v.selectNode(target);
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.6"));
    QCOMPARE(v.selectedNode(), target);
    QCOMPARE(emitted.count(), 0);
    // Centered: the node is inside the viewport.
    QVERIFY(v.canvas()->viewport()->rect().contains(v.viewportPosOfMethodNode(target)));

    // A value selects its producer; a weight its placeholder (no node).
    ValueId produced = m.nodes[target].outputs.at(0);
    v.selectValue(produced);
    QVERIFY(settle(v));
    QCOMPARE(v.selectedNode(), target);
    v.selectValue(m.inputs.at(0));
    QVERIFY(settle(v));
    QCOMPARE(v.selectedNode(), -1);
    QVERIFY(v.selectNodeByName(QString::fromStdString(m.nodes[target].name)));
    QVERIFY(settle(v));
    QCOMPARE(v.selectedNode(), target);
    QVERIFY(!v.selectNodeByName("no_such_node"));

    // Asked for before the model is even built: applied when it is.
    GraphView w;
    w.show();
    w.setGraph(p, 0);
    w.selectNode(target);
    QCOMPARE(w.selectedNode(), target);
    QVERIFY(settle(w));
    QCOMPARE(w.selectedNode(), target);
    QVERIFY(!w.isGroupCollapsed("layers.6"));
    QVERIFY(w.canvas()->viewport()->rect().contains(w.viewportPosOfMethodNode(target)));
  }

  void findNextAndPrevious() {
    auto p = sample("mlp");
    const Method& m = p->methods[0];
    std::vector<int> addmm;
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (m.nodes[i].target.find("addmm") != std::string::npos) addmm.push_back(int(i));
    QCOMPARE(addmm.size(), size_t(3));
    GraphView v;
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    QVERIFY(v.find("ADDMM"));
    QVERIFY(settle(v));
    QCOMPARE(v.selectedNode(), addmm[0]);
    QVERIFY(v.find("addmm"));
    QCOMPARE(v.selectedNode(), addmm[1]);
    QVERIFY(v.find("addmm"));
    QCOMPARE(v.selectedNode(), addmm[2]);
    QVERIFY(v.find("addmm"));  // wraps around
    QCOMPARE(v.selectedNode(), addmm[0]);
    QVERIFY(v.find("addmm", true));
    QCOMPARE(v.selectedNode(), addmm[2]);
    QVERIFY(v.find("addmm", true));
    QCOMPARE(v.selectedNode(), addmm[1]);
    QTest::keyClick(v.canvas(), Qt::Key_F3);  // F3 repeats the last text: "addmm"
    QCOMPARE(v.selectedNode(), addmm[2]);
    QTest::keyClick(v.canvas(), Qt::Key_F3, Qt::ShiftModifier);
    QCOMPARE(v.selectedNode(), addmm[1]);
    QVERIFY(!v.find("conv2d"));
    QCOMPARE(v.selectedNode(), addmm[1]);
  }

  void findByModulePathOpensGroups() {
    auto p = sample("llama", 8);
    const Method& m = p->methods[0];
    GraphView v;
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    QVERIFY(v.isGroupCollapsed("layers.5"));
    QVERIFY(v.find("layers.5.attention.wq"));
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.5"));
    // The first match may be the weight's placeholder; the next is the node reading it.
    if (v.selectedNode() < 0) {
      QVERIFY(v.find("layers.5.attention.wq"));
      QVERIFY(settle(v));
    }
    int sel = v.selectedNode();
    QVERIFY(sel >= 0);
    bool inside = false;
    for (const auto& f : m.nodes[sel].meta.moduleStack) inside |= f.path == "layers.5.attention.wq";
    QVERIFY(inside);
  }

  void clickSelectsAndEmits() {
    auto p = sample("mlp");
    const Method& m = p->methods[0];
    GraphView v;
    v.resize(1000, 800);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    v.fitToView();
    QSignalSpy nodes(&v, &GraphView::nodeSelected), values(&v, &GraphView::valueSelected);
    for (int target : {1, 5}) {
      QPoint at = v.viewportPosOfMethodNode(target);
      QVERIFY(v.canvas()->viewport()->rect().contains(at));
      QTest::mouseClick(v.canvas()->viewport(), Qt::LeftButton, {}, at);
      QCOMPARE(nodes.count(), 1);
      QCOMPARE(nodes.takeFirst().at(0).toInt(), target);
      QCOMPARE(v.selectedNode(), target);
    }
    // The user input placeholder emits its value.
    int placeholder = v.model()->nodeOfValue[m.inputs.back()];
    QVERIFY(placeholder >= 0);
    QTest::mouseClick(v.canvas()->viewport(), Qt::LeftButton, {}, v.viewportPosOfNode(placeholder));
    QCOMPARE(values.count(), 1);
    QCOMPARE(values.first().at(0).toInt(), m.inputs.back());
    QCOMPARE(v.selectedNode(), -1);
    QCOMPARE(nodes.count(), 0);
  }

  void keyboardZoomAndGroups() {
    auto p = sample("llama", 4);
    GraphView v;
    v.resize(900, 700);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    double z = v.zoom();
    QTest::keyClick(v.canvas(), Qt::Key_Plus);
    QVERIFY(v.zoom() > z * 1.1);
    QTest::keyClick(v.canvas(), Qt::Key_Minus);
    QVERIFY(qAbs(v.zoom() - z) < 1e-6);
    // Click a folded layer, Return opens it, Shift+Return on a node inside folds it again.
    v.fitToView();
    QPoint box = v.viewportPosOfGroup("layers.2");
    QVERIFY(!box.isNull());
    QTest::mouseClick(v.canvas()->viewport(), Qt::LeftButton, {}, box);
    QTest::keyClick(v.canvas(), Qt::Key_Return);
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.2"));
    QTest::mouseDClick(v.canvas()->viewport(), Qt::LeftButton, {}, v.viewportPosOfGroup("layers.2.attention"));
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.2.attention"));
  }

  void marksAreDrawn() {
    auto p = sample("mlp");
    const Method& m = p->methods[0];
    std::vector<ui::NodeMark> marks(m.nodes.size(), ui::NodeMark::None);
    marks[1] = ui::NodeMark::Added;
    marks[4] = ui::NodeMark::Modified;
    GraphView v;
    v.resize(900, 650);
    v.show();
    v.setGraph(p, 0, marks);
    QVERIFY(settle(v));
    QCOMPARE(v.markedItemCount(), 2);
    v.selectNode(4);
    shoot(v, "mlp-marks");
    v.setGraph(p, 0, std::vector<ui::NodeMark>(3, ui::NodeMark::Added));  // wrong size: ignored
    QVERIFY(settle(v));
    QCOMPARE(v.markedItemCount(), 0);

    // A mark inside a folded layer marks the layer's box.
    auto big = sample("llama", 4);
    const Method& bm = big->methods[0];
    std::vector<ui::NodeMark> bmarks(bm.nodes.size(), ui::NodeMark::None);
    bmarks[nodeInModule(bm, "layers.1.")] = ui::NodeMark::Modified;
    v.setGraph(big, 0, bmarks);
    QVERIFY(settle(v));
    QVERIFY(v.isGroupCollapsed("layers.1"));
    QCOMPARE(v.markedItemCount(), 1);
  }

  void staleLayoutsAreDropped() {
    auto big = sample("llama", 32), small = sample("mlp");
    GraphView v;
    v.show();
    QSignalSpy done(&v, &GraphView::layoutFinished);
    v.setGraph(big, 0);
    v.setGraph(small, 0);
    QVERIFY(settle(v));
    QCOMPARE(done.count(), 1);
    QCOMPARE(v.visibleItemCount(), int(small->methods[0].nodes.size() + small->methods[0].inputs.size() + 1));
    v.clear();
    QVERIFY(!v.layoutPending());
    QCOMPARE(v.visibleItemCount(), 0);
    v.setGraph(small, 7);  // no such method: stays empty
    QVERIFY(!v.layoutPending());
    QCOMPARE(v.selectedNode(), -1);
    QVERIFY(!v.find("addmm"));
  }
};

QTEST_MAIN(TestGraphView)
#include "tst_graphview.moc"
