// The graph view, offscreen: what it draws against the method it shows,
// module groups folding and unfolding, find, selection by click and API,
// diff marks, and stale layouts being dropped. Set LSTUDIO_SCREENSHOT_DIR to
// keep PNGs of the mlp, mobilenet_v2 and llama views.
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <set>

#include "engine/formats/OpenProgram.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Pipeline.h"
#include "engine/samples/GraphBuilder.h"
#include "engine/samples/SampleZoo.h"
#include "engine/formats/Pt2Reader.h"
#include "tests/TestSupport.h"
#include "tests/support/Pt2Samples.h"
#include "tests/support/ZipWriter.h"
#include "ui/graph/GraphView.h"
#include "ui/graph/Inspector.h"
#include "ui/window/MainWindow.h"

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

/// A zoo sample as a user's .pte: written as .pt2, opened, lowered to the end,
/// emitted and written into `dir`, read back (no module stack, no signature).
std::shared_ptr<const Program> exportedPte(const QString& dir, const std::string& name, SampleOptions o,
                                           const ExecutorchBackendConfig& c = {}) {
  auto built = buildSample(name, o);
  if (!built) return nullptr;
  const std::string stem = (dir + "/" + QString::fromStdString(name)).toStdString() + std::to_string(o.layers) + o.attention;
  if (!writePt2(built.value(), stem + ".pt2")) return nullptr;
  auto opened = openProgramFile(stem + ".pt2");
  if (!opened) return nullptr;
  Pipeline p(std::make_shared<const Program>(std::move(opened.value())), c);
  p.runToEnd();
  if (p.failed()) return nullptr;
  auto emitted = emitProgram(*p.current(), c);
  if (!emitted || !writePte(emitted.value(), stem + ".pte", writeOptionsFor(c))) return nullptr;
  auto read = readProgramFile(stem + ".pte");
  return read ? std::make_shared<const Program>(std::move(read.value())) : nullptr;
}

/// Its weights named in the file: in a .ptd (ExecuTorch names only external tensors and mutable buffers).
ExecutorchBackendConfig namedWeights() {
  ExecutorchBackendConfig c;
  c.externalConstants = true;
  c.emitMutableBufferNames = true;
  return c;
}

bool isWeightBox(const ui::GraphNode& n) {
  return n.node < 0 && (n.kind == ui::VisualKind::Parameter || n.kind == ui::VisualKind::Constant);
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
    // One box per node, per input, and the outputs marker (zoo samples lift every weight to an
    // input); but a weight is a line in each box reading it, not a box with edges of its own.
    const auto& g = *v.model();
    std::set<int> weightInputs;
    for (size_t k = 0; k < m.inputs.size(); ++k)
      if (g.nodes[g.nodeOfValue[m.inputs[k]]].host >= 0) weightInputs.insert(-1 - int(k));
    QVERIFY(!weightInputs.empty());
    QCOMPARE(v.visibleItemCount(), int(m.nodes.size() + m.inputs.size() - weightInputs.size() + 1));
    int flows = 0, lines = 0;
    for (const auto& [from, to] : dataFlow(m)) flows += !weightInputs.count(from);
    for (const auto& n : g.nodes) lines += int(n.weights.size());
    QCOMPARE(v.visibleEdgeCount(), flows);
    QCOMPARE(lines, int(dataFlow(m).size()) - flows);
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

  // A size computed at run time flows to the calls that read it: an exported
  // program's sym_size.int -> mul -> view, and the same in the lowered program,
  // where the prim ops list their result as last argument.
  void symbolicSizesHaveEdges() {
    GraphBuilder b;
    b.symbol("s0", 5, 2, 16);
    TensorRef x = b.input("x", ScalarType::Float, {2, 16, 8}, {"", "s0", ""});
    TensorRef w = b.parameter("fc.weight", ScalarType::Float, {4, 8}), bias = b.parameter("fc.bias", ScalarType::Float, {4});
    b.output(b.op("aten.linear.default", {x, w, bias}));
    auto made = b.finish("dynamic_linear");
    QVERIFY(made.ok());
    Pipeline p(std::make_shared<const Program>(std::move(made.value())), ExecutorchBackendConfig{});
    for (const char* stage : {"run_decompositions", "MemoryPlanningPass"}) {
      QVERIFY(p.runTo(stage));
      const Method& m = p.current()->methods[0];
      const auto g = ui::GraphModel::build(m);
      auto box = [&](const std::string& op) {
        for (size_t i = 0; i < m.nodes.size(); ++i)
          if (m.nodes[i].op >= 0 && m.operators[m.nodes[i].op].name == op) return g.nodeOfMethodNode[i];
        return -1;
      };
      auto hasEdge = [&](int from, int to) {
        return from >= 0 && to >= 0 &&
               std::any_of(g.edges.begin(), g.edges.end(), [&](const auto& e) { return e.from == from && e.to == to; });
      };
      const int size = box("aten::sym_size"), mul = box(std::string(stage) == "run_decompositions" ? "_operator::mul" : "executorch_prim::mul");
      const int view = box(std::string(stage) == "run_decompositions" ? "aten::view" : "executorch_prim::et_view");
      QVERIFY2(hasEdge(size, mul), stage);
      QVERIFY2(hasEdge(mul, view), stage);
    }
    // The Inspector says what the size is (before emission, where the node names its result).
    Pipeline q(p.snapshot(0), ExecutorchBackendConfig{});
    QVERIFY(q.runTo("run_decompositions"));
    const Method& m = q.current()->methods[0];
    int symSize = -1;
    for (size_t i = 0; i < m.nodes.size() && symSize < 0; ++i)
      if (m.nodes[i].op >= 0 && m.operators[m.nodes[i].op].name == "aten::sym_size") symSize = static_cast<int>(i);
    QVERIFY(symSize >= 0);
    const QString html = ui::nodeDetails(m, symSize, nullptr);
    QVERIFY2(html.contains("computed when the method runs") && html.contains("s0, dimension 1"), qPrintable(html));
  }

  // A dtype argument is c10's number in the file; the Inspector names it (scalar_tensor's
  // int32 that SymToTensorPass writes read "3" before).
  void dtypeArgumentsAreNamed() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {2});
    b.output(b.op("aten._to_copy.default", {x, ScalarType::Half}));
    auto made = b.finish("cast");
    QVERIFY2(made.ok(), made.ok() ? "" : made.error().message().c_str());
    const QString html = ui::nodeDetails(made.value().methods[0], 0, nullptr);
    QVERIFY2(html.contains("float16"), qPrintable(html));
  }

  // A cond node's branches are graphs the canvas does not draw: the Inspector shows each.
  void condNodeShowsItsBranches() {
    std::string zip = test::zipBytes(test::archiveRecords(test::condProgramJson(), test::weightsConfig(), test::floats({1, 2, 3, 4})));
    auto read = readExport(MappedFile::fromBytes("cond.pt2", zip.data(), zip.size()));
    QVERIFY2(read.ok(), read.ok() ? "" : read.error().message().c_str());
    const QString html = ui::nodeDetails(read.value().methods[0], 2, nullptr);
    QVERIFY2(html.contains("When pred is true: true_graph_0") && html.contains("Otherwise: false_graph_0"), qPrintable(html));
    QVERIFY2(html.contains("aten::cos.default"), qPrintable(html));
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
    // The 32 identical layers are one box that fits on screen, and opens into the layers.
    QVERIFY(v.isGroupCollapsed("layers.0-31"));
    QVERIFY(v.visibleItemCount() < 30);
    QVERIFY(v.canvas()->viewport()->rect().contains(v.viewportPosOfGroup("layers.0-31")));
    shoot(v, "llama-collapsed");
    QVERIFY(v.setGroupCollapsed("layers.0-31", false));
    QVERIFY(settle(v));
    QVERIFY(v.isGroupCollapsed("layers.3"));
    QVERIFY(v.visibleGroupBoxCount() >= 32);
    QVERIFY(v.visibleItemCount() < 150);
    QVERIFY(!v.viewportPosOfGroup("layers.0").isNull());
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

  // A big flat program with no names of modules in its constants: the
  // longest run of one operator sequence repeated back to back (the decoder
  // layers) becomes blocks, folded as one family.
  void flatUnnamedProgramsFoldByRepetition() {
    auto p = sample("llama", 4);
    Program flat = *p;
    for (Node& n : flat.methods[0].nodes) n.meta.moduleStack.clear();
    for (InputSpec& in : flat.methods[0].signature.inputs) in.target.clear();
    const auto g = ui::GraphModel::build(flat.methods[0]);
    std::map<std::string, int> group;
    for (size_t k = 0; k < g.groups.size(); ++k) group[g.groups[k].path] = int(k);
    QVERIFY(group.count("block.0-3"));
    QCOMPARE(g.groups[group["block.0-3"]].repeat, 4);
    std::string ops[4];
    int top = 0;
    for (size_t i = 0; i < flat.methods[0].nodes.size(); ++i) {
      const auto& n = g.nodes[g.nodeOfMethodNode[i]];
      top += n.group < 0;
      for (int k = 0; k < 4; ++k)
        if (n.group == group["block." + std::to_string(k)]) ops[k] += n.title + ";";
    }
    QVERIFY(ops[0].size() > 100);
    for (int k = 1; k < 4; ++k) QCOMPARE(ops[k], ops[0]);
    QVERIFY(top < 100);  // the embedding before, the norm and output after
  }

  // A big program with neither module information, names, nor repetition is
  // folded into runs of consecutive nodes so that it still opens at once.
  void flatProgramsFoldByExecutionOrder() {
    auto p = sample("llama", 4);
    Program flat = *p;
    for (Node& n : flat.methods[0].nodes) n.meta.moduleStack.clear();
    for (InputSpec& in : flat.methods[0].signature.inputs) in.target.clear();
    for (size_t i = 0; i < flat.methods[0].nodes.size(); ++i) {  // every operator another: nothing repeats
      flat.methods[0].nodes[i].op = -1;
      flat.methods[0].nodes[i].target = "test::op" + std::to_string(i);
    }
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

  // The overview sits bottom right, but never on the selected node: scrolled under it, the
  // node pushes it to another corner.
  void minimapMovesOffTheSelectedNode() {
    auto p = sample("llama", 8);
    const Method& m = p->methods[0];
    GraphView v;
    v.resize(900, 700);
    v.show();
    v.setGraph(p, 0, {});
    QVERIFY(settle(v));
    int target = nodeInModule(m, "layers.3.feed_forward");
    QVERIFY(target >= 0);
    v.selectNode(target);
    QVERIFY(settle(v));
    v.zoomBy(3);  // wider than the view: it scrolls both ways
    QVERIFY(settle(v));
    QWidget* vp = v.canvas()->viewport();
    QPoint at = v.viewportPosOfMethodNode(target);
    // Scroll so that the node's centre lies where the overview is drawn by default.
    const QPoint want(vp->width() - 60, vp->height() - 50);
    auto* h = v.canvas()->horizontalScrollBar();
    auto* s = v.canvas()->verticalScrollBar();
    h->setValue(h->value() - (want.x() - at.x()));
    s->setValue(s->value() - (want.y() - at.y()));
    QCoreApplication::processEvents();
    at = vp->mapTo(&v, v.viewportPosOfMethodNode(target));
    QVERIFY(v.minimap()->isVisible());
    const int margin = 10;
    QRect usual(QPoint(v.width() - v.minimap()->width() - margin - (s->isVisible() ? s->width() : 0),
                       v.height() - v.minimap()->height() - margin - (h->isVisible() ? h->height() : 0)),
                v.minimap()->size());
    QVERIFY2(usual.contains(at), qPrintable(QString("the scroll did not bring the node (%1,%2) under the usual corner %3,%4 %5x%6; h %7..%8 v %9..%10")
                                              .arg(at.x()).arg(at.y()).arg(usual.x()).arg(usual.y()).arg(usual.width()).arg(usual.height())
                                              .arg(h->minimum()).arg(h->maximum()).arg(s->minimum()).arg(s->maximum())));
    QVERIFY(!v.minimap()->geometry().contains(at));
    // Scrolled away again, it goes back to its corner.
    s->setValue(s->minimum());
    h->setValue(h->minimum());
    QCoreApplication::processEvents();
    if (!usual.contains(vp->mapTo(&v, v.viewportPosOfMethodNode(target)))) QCOMPARE(v.minimap()->geometry(), usual);
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

  // Issue #23: each selection opened the groups of its node and none closed
  // again, so that selecting around a big program made its layout grow until
  // it took minutes. A selection that has to open groups closes what the
  // previous one opened; groups the user opened stay open.
  void selectionClosesWhatThePreviousOneOpened() {
    auto p = sample("llama", 8);
    const Method& m = p->methods[0];
    GraphView v;
    v.resize(900, 700);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    QVERIFY(v.setGroupCollapsed("layers.4", false));  // by hand
    QVERIFY(settle(v));
    const QStringList byHand = v.expandedGroups();
    const int a = nodeInModule(m, "layers.2.feed_forward"), b = nodeInModule(m, "layers.6.attention", "mm");
    QVERIFY(a >= 0 && b >= 0);
    v.selectNode(a);
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.2"));
    v.selectNode(b);
    QVERIFY(settle(v));
    QCOMPARE(v.selectedNode(), b);
    // Open now: what was open before the selections, and the groups above b.
    QStringList expected = byHand;
    for (int g = v.model()->nodes[v.model()->nodeOfMethodNode[b]].group; g >= 0; g = v.model()->groups[g].parent)
      expected << QString::fromStdString(v.model()->groups[g].path);
    expected.removeDuplicates();
    QStringList open = v.expandedGroups();
    open.sort();
    expected.sort();
    QCOMPARE(open, expected);
    QVERIFY(v.isGroupCollapsed("layers.2") && !v.isGroupCollapsed("layers.4"));
    QVERIFY(v.canvas()->viewport()->rect().contains(v.viewportPosOfMethodNode(b)));
    // A value (the Memory Plan's selection) behaves the same: b's groups close, a's open.
    v.selectValue(m.nodes[a].outputs.at(0));
    QVERIFY(settle(v));
    QVERIFY(v.isGroupCollapsed("layers.6") && !v.isGroupCollapsed("layers.2") && !v.isGroupCollapsed("layers.4"));
    // A node already on screen opens nothing and closes nothing.
    const QStringList before = v.expandedGroups();
    v.selectNode(a);
    QVERIFY(!v.layoutPending());
    QCOMPARE(v.expandedGroups(), before);
  }

  // Compare mode carries the open groups to the next pass's graph
  // (setExpandedGroups): those a selection opened came back as if opened by
  // hand, so that selecting around while stepping left more and more layers
  // open in both panes (seconds per layout on the static-attention .pte).
  // They stay the next selection's to close.
  void revealedGroupsCarryToTheNextGraph() {
    auto p = sample("llama", 8);
    const Method& m = p->methods[0];
    GraphView v;
    v.resize(900, 700);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    QVERIFY(v.setGroupCollapsed("layers.4", false));  // by hand
    QVERIFY(settle(v));
    v.selectNode(nodeInModule(m, "layers.2.feed_forward"));
    QVERIFY(settle(v));
    const QStringList open = v.expandedGroups();
    QVERIFY(open.contains("layers.2") && open.contains("layers.4"));
    v.setGraph(p, 0);  // the next pass's snapshot, with the same groups open
    v.setExpandedGroups(open);
    QVERIFY(settle(v));
    QVERIFY(!v.isGroupCollapsed("layers.2") && !v.isGroupCollapsed("layers.4"));
    v.selectNode(nodeInModule(m, "layers.6.attention", "mm"));
    QVERIFY(settle(v));
    QVERIFY(v.isGroupCollapsed("layers.2"));
    QVERIFY(!v.isGroupCollapsed("layers.4") && !v.isGroupCollapsed("layers.6"));
  }

  // The same in compare mode, where both panes keep their open groups from
  // pass to pass and each selection opens its node's groups in both: the
  // groups one pane's selection opened are the next selection's to close in
  // both panes (bench_studio --pte --attention static: 5-21 s a selection).
  void compareClosesWhatTheLastSelectionOpened() {
    QStandardPaths::setTestModeEnabled(true);
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.resize(1366, 768);
    w.show();
    w.openProgram(sample("llama", 8), "llama");
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(w.runToPass("ToOutVarPass"));
    w.runner()->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    ui::GraphView *after = w.graphView(), *before = w.beforeView();
    w.selectNode(nodeInModule(w.shownProgram()->methods[0], "layers.2.feed_forward"));  // before comparing
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    w.setCompare(true);  // the earlier pane opens what the other has open
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(!after->isGroupCollapsed("layers.2") && !before->isGroupCollapsed("layers.2"));
    w.showSnapshot(w.shownSnapshot() - 2);  // another pair of snapshots: still open in both
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    QVERIFY(after->model() && before->model());
    QVERIFY(!after->isGroupCollapsed("layers.2") && !before->isGroupCollapsed("layers.2"));
    w.selectNode(nodeInModule(w.shownProgram()->methods[0], "layers.6.attention", "mm"));
    QTRY_VERIFY_WITH_TIMEOUT(w.idle(), 30000);
    for (GraphView* v : {after, before}) {
      QVERIFY(!v->isGroupCollapsed("layers.6"));
      QVERIFY(v->isGroupCollapsed("layers.2"));
    }
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
    QVERIFY(v.setGroupCollapsed("layers.0-3", false));  // the family of identical layers
    QVERIFY(settle(v));
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

  // A .pte's constants are lines inside the operators reading them, not
  // boxes of their own; a line selects its constant, and the constant
  // (from the Constants table) selects its line.
  void pteConstantsAreLinesOfTheirReaders() {
    QTemporaryDir dir;
    auto p = exportedPte(dir.path(), "mobilenet_v2", {});
    QVERIFY(p);
    const Method& m = p->methods[0];
    for (const Node& n : m.nodes) QVERIFY(n.meta.moduleStack.empty());
    GraphView v;
    v.resize(1366, 768);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    shoot(v, "mv2-pte");
    const auto& g = *v.model();
    int weights = 0, hosted = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!isWeightBox(g.nodes[i])) continue;
      ++weights;
      QVERIFY2(g.nodes[i].host >= 0, g.nodes[i].title.c_str());  // every constant is read by an operator here
      QVERIFY(!isWeightBox(g.nodes[g.nodes[i].host]));
      const auto& lines = g.nodes[g.nodes[i].host].weights;
      QVERIFY(std::find(lines.begin(), lines.end(), int(i)) != lines.end());
      if (hosted < 0 && g.nodes[g.nodes[i].host].node >= 0) hosted = int(i);
    }
    QVERIFY(weights > 100);  // the convolutions' and batch norms' parameters
    // Every box drawn is an operator, an input or the outputs marker: no constant of its own.
    int drawn = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!v.viewportPosOfNode(int(i)).isNull() && v.model()->nodes[i].host < 0) {
        QVERIFY2(!isWeightBox(g.nodes[i]), g.nodes[i].title.c_str());
        ++drawn;
      }
    QVERIFY(drawn > 10);
    // Its line, clicked, selects the constant; the constant, selected, its line.
    QVERIFY(hosted >= 0);
    v.selectValue(g.nodes[hosted].value);
    QVERIFY(settle(v));
    QCOMPARE(v.selectedNode(), -1);
    const QPoint line = v.viewportPosOfNode(hosted);
    QVERIFY(v.canvas()->viewport()->rect().contains(line));
    QVERIFY(line != v.viewportPosOfNode(g.nodes[hosted].host));  // the line, not the box's centre
    QSignalSpy values(&v, &GraphView::valueSelected), nodes(&v, &GraphView::nodeSelected);
    QTest::mouseClick(v.canvas()->viewport(), Qt::LeftButton, {}, v.viewportPosOfNode(g.nodes[hosted].host) + QPoint(0, -10));
    QCOMPARE(nodes.count(), 1);  // the title: the operator
    QCOMPARE(nodes.first().at(0).toInt(), g.nodes[g.nodes[hosted].host].node);
    QTest::mouseClick(v.canvas()->viewport(), Qt::LeftButton, {}, line);
    QCOMPARE(values.count(), 1);
    QCOMPARE(values.first().at(0).toInt(), g.nodes[hosted].value);
    QCOMPARE(v.selectedNode(), -1);
    shoot(v, "mv2-pte-constant");
  }

  // A flat program is grouped by the names of what its operators read: the
  // reader of layers.3.attention.wq.weight belongs to layers.3.attention, and
  // the operators between two readers of one module join it.
  void pteGroupsByConstantNames() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 4;
    auto p = exportedPte(dir.path(), "llama", o, namedWeights());
    QVERIFY(p);
    const Method& m = p->methods[0];
    for (const Node& n : m.nodes) QVERIFY(n.meta.moduleStack.empty());
    const auto g = ui::GraphModel::build(m);
    int readers = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].title != "layers.3.attention.wq.weight") continue;
      for (const auto& e : g.edges)
        if (e.from == int(i)) {
          ++readers;
          const int grp = g.nodes[e.to].group;
          QVERIFY(grp >= 0);
          QCOMPARE(g.groups[grp].path, std::string("layers.3.attention"));
          QCOMPARE(g.groups[g.groups[grp].parent].path, std::string("layers.3"));
        }
    }
    QVERIFY(readers >= 1);
    // From the first operator of layers.2 to the first of layers.3, every operator is inside
    // layers.2 (the caches' write-backs at the end of the program go to their module too).
    int layer2 = -1, layer3 = -1;
    for (size_t k = 0; k < g.groups.size(); ++k) {
      if (g.groups[k].path == "layers.2") layer2 = int(k);
      if (g.groups[k].path == "layers.3") layer3 = int(k);
    }
    QVERIFY(layer2 >= 0 && layer3 >= 0);
    int first = -1, next = -1;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (first < 0 && g.inGroup(g.nodeOfMethodNode[i], layer2)) first = int(i);
      if (next < 0 && g.inGroup(g.nodeOfMethodNode[i], layer3)) next = int(i);
    }
    QVERIFY(first >= 0 && next - first > 20);
    for (int i = first; i < next; ++i) {
      const auto& n = g.nodes[g.nodeOfMethodNode[i]];
      QVERIFY2(g.inGroup(g.nodeOfMethodNode[i], layer2),
               qPrintable(QString("%1 %2 in %3").arg(i).arg(n.title.c_str()).arg(n.group >= 0 ? g.groups[n.group].path.c_str() : "top")));
    }
  }

  // Identical layers fold into one family box, so that a 32-layer program
  // opens onto a view that fits; the family opens into its layers.
  void repeatedLayersFold() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 32;
    auto p = exportedPte(dir.path(), "llama", o, namedWeights());
    QVERIFY(p);
    GraphView v;
    v.resize(1366, 768);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    shoot(v, "llama32-pte");
    const auto& g = *v.model();
    int family = -1;
    for (size_t k = 0; k < g.groups.size(); ++k)
      if (g.groups[k].repeat) family = int(k);
    QVERIFY(family >= 0);
    // The last layer also selects the last token before the final norm (pulled into it, as the
    // next layer's norm is into each other layer): up to there it runs what its siblings run,
    // so it is one of the family and what follows it is outside (issue #23).
    QCOMPARE(g.groups[family].path, std::string("layers.0-31"));
    QCOMPARE(g.groups[family].repeat, 32);
    int last = -1;
    for (size_t k = 0; k < g.groups.size(); ++k)
      if (g.groups[k].path == "layers.31") last = int(k);
    QVERIFY(last >= 0);
    QCOMPARE(g.groups[last].parent, family);
    const Method& m = p->methods[0];
    int select = -1;
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (g.nodes[g.nodeOfMethodNode[i]].title.starts_with("select_copy")) select = g.nodeOfMethodNode[i];
    QVERIFY(select >= 0);
    QVERIFY(!g.inGroup(select, family));
    for (const auto& e : g.edges)  // it selects from the last layer's result
      if (e.to == select) QVERIFY(g.inGroup(e.from, last));
    QVERIFY(v.isGroupCollapsed("layers.0-31"));
    QVERIFY(v.visibleItemCount() < 30);
    const QRect vp = v.canvas()->viewport()->rect();
    QVERIFY(!v.viewportPosOfGroup("layers.0-31").isNull());
    v.fitToView();  // the whole program, still readable
    QVERIFY(v.zoom() > 0.3);
    QVERIFY(vp.contains(v.viewportPosOfGroup("layers.0-31")));
    QVERIFY(v.setGroupCollapsed("layers.0-31", false));
    QVERIFY(settle(v));
    for (int k = 0; k < 32; ++k) QVERIFY(v.isGroupCollapsed(QString("layers.%1").arg(k)));
    QVERIFY(!v.viewportPosOfGroup("layers.31").isNull());
    QVERIFY(v.visibleGroupBoxCount() >= 32);
  }

  // The first view starts at the inputs with boxes on screen, even for a very
  // wide flat program (static attention: every head's caches are inputs).
  void firstViewStartsAtTheInputs() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 32;
    o.attention = "static";
    auto p = exportedPte(dir.path(), "llama", o);
    QVERIFY(p);
    GraphView v;
    v.resize(600, 430);  // the graph's pane in a 1366x768 window
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    shoot(v, "llama32-static-pte");
    const auto& g = *v.model();
    const QRect vp = v.canvas()->viewport()->rect();
    std::set<std::pair<int, int>> onScreen;  // boxes (a folded group's nodes share one)
    int inputs = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].host >= 0) continue;
      const QPoint at = v.viewportPosOfNode(int(i));
      if (at.isNull() || !vp.contains(at)) continue;
      onScreen.insert({at.x(), at.y()});
      inputs += g.nodes[i].kind == ui::VisualKind::Input;
    }
    QVERIFY2(onScreen.size() >= 5, qPrintable(QString::number(onScreen.size())));
    QVERIFY(inputs >= 1);
    // Issue #23: its 128 caches, each read by one layer, opened as one row of 128 boxes
    // above the folded layers. Each goes with its layer (and folds with it).
    QVERIFY(p->methods[0].inputs.size() > 128);
    int topInputs = 0, inLayers = 0;
    for (const auto& n : g.nodes) {
      if (n.kind != ui::VisualKind::Input) continue;
      bool folded = false;
      for (int k = n.group; k >= 0; k = g.groups[k].parent) folded |= g.groups[k].repeat > 0;
      topInputs += n.group < 0;
      inLayers += folded;
    }
    QVERIFY2(topInputs <= 4, qPrintable(QString::number(topInputs)));
    QVERIFY2(inLayers >= 128, qPrintable(QString::number(inLayers)));
    QVERIFY2(v.visibleItemCount() < 40, qPrintable(QString::number(v.visibleItemCount())));
  }

  // Issue #23: the KV caches' write-backs at the end of an exported llama
  // (a copy_ into each layer's two buffers) were one wide row of boxes under
  // the folded layers, each with a long edge from it. Each goes with the
  // layer that computes what it writes, and folds with it.
  void cacheWriteBacksFoldWithTheirLayers() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 16;
    auto p = exportedPte(dir.path(), "llama", o);
    QVERIFY(p);
    const Method& m = p->methods[0];
    const auto g = ui::GraphModel::build(m);
    int copies = 0, folded = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const auto& n = g.nodes[g.nodeOfMethodNode[i]];
      if (!n.title.starts_with("copy_")) continue;
      ++copies;
      for (int k = n.group; k >= 0; k = g.groups[k].parent)
        if (g.groups[k].repeat == 16) {
          ++folded;
          break;
        }
    }
    QCOMPARE(copies, 32);
    QCOMPARE(folded, 32);
    GraphView v;
    v.resize(1140, 740);
    v.show();
    v.setGraph(p, 0);
    QVERIFY(settle(v));
    QVERIFY2(v.visibleItemCount() < 30, qPrintable(QString::number(v.visibleItemCount())));
  }

  // The same for the lowered .pt2: InsertWriteBackForBuffersPass's copy_
  // nodes carry no module, and each layer's KV-cache buffers, returned as
  // mutated (an edge into the outputs marker), were drawn as a row of 64
  // boxes above the layers. Buffers go with the write-backs into their layer.
  void cacheBuffersFoldWithTheirLayers() {
    SampleOptions o;
    o.layers = 16;
    auto built = buildSample("llama", o);
    QVERIFY(built.ok());
    Pipeline lowering(std::make_shared<const Program>(std::move(built.value())), ExecutorchBackendConfig{});
    lowering.runToEnd();
    QVERIFY(!lowering.failed());
    const auto g = ui::GraphModel::build(lowering.current()->methods[0]);
    int buffers = 0, folded = 0;
    for (const auto& n : g.nodes) {
      if (n.node >= 0 || n.title.find("kv_cache") == std::string::npos) continue;
      ++buffers;
      for (int k = n.group; k >= 0; k = g.groups[k].parent)
        if (g.groups[k].repeat == 16) {
          ++folded;
          break;
        }
    }
    QCOMPARE(buffers, 32);
    QCOMPARE(folded, 32);
    const auto shown = ui::visibleGraph(g, ui::initialCollapsed(g));
    QVERIFY2(shown.items.size() < 20, qPrintable(QString::number(shown.items.size())));
  }

  // Issue #23: the exported 32-layer llama (MHA) opened onto the end of the
  // program: its layers fold into one box, so the last operators and the row
  // of cache write-backs share the top band with the inputs, and the view
  // went to that band's densest stretch. It starts at the inputs.
  void firstViewShowsTheInputsOfAShallowProgram() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 32;
    auto p = exportedPte(dir.path(), "llama", o);
    QVERIFY(p);
    const Method& m = p->methods[0];
    QCOMPARE(m.inputs.size(), size_t(2));  // tokens, input_pos
    for (QSize size : {QSize(600, 430), QSize(780, 560), QSize(1140, 740)}) {  // the graph's pane at 1366x768, 1600x1000, 1920x1080
      GraphView v;
      v.resize(size);
      v.show();
      v.setGraph(p, 0);
      QVERIFY(settle(v));
      shoot(v, QString("llama32-pte-%1").arg(size.width()));
      const QRect vp = v.canvas()->viewport()->rect();
      for (ValueId in : m.inputs) {
        const QPoint at = v.viewportPosOfNode(v.model()->nodeOfValue[in]);
        QVERIFY2(!at.isNull() && vp.contains(at), qPrintable(QString("input %1 at %2,%3 in a %4x%5 view").arg(in).arg(at.x()).arg(at.y()).arg(size.width()).arg(size.height())));
      }
      // Filled: more than the inputs on screen.
      int onScreen = 0;
      for (size_t i = 0; i < v.model()->nodes.size(); ++i)
        if (v.model()->nodes[i].host < 0 && vp.contains(v.viewportPosOfNode(int(i))) && !v.viewportPosOfNode(int(i)).isNull()) ++onScreen;
      QVERIFY(onScreen >= 5);
    }
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
    int boxes = 0;
    for (const auto& n : v.model()->nodes) boxes += n.host < 0;
    QCOMPARE(v.visibleItemCount(), boxes);
    v.clear();
    QVERIFY(!v.layoutPending());
    QCOMPARE(v.visibleItemCount(), 0);
    v.setGraph(small, 7);  // no such method: stays empty
    QVERIFY(!v.layoutPending());
    QCOMPARE(v.selectedNode(), -1);
    QVERIFY(!v.find("addmm"));
  }

  // Issue #23 item 9: between two graphs the canvas keeps the previous picture
  // (dimmed, inert) until the new layout replaces it, never a blank one.
  void previousGraphStaysUntilTheNewLayout() {
    auto first = sample("mlp"), second = sample("llama", 2);
    GraphView v;
    v.resize(800, 600);
    v.show();
    v.setGraph(first, 0);
    QVERIFY(settle(v));
    const int drawn = int(v.canvas()->scene()->items().size());
    QVERIFY(drawn > 0);
    v.setGraph(second, 0);
    QVERIFY(v.layoutPending());
    QCOMPARE(int(v.canvas()->scene()->items().size()), drawn);
    QVERIFY(v.showsPreviousGraph());
    shoot(v, "previous-while-laying-out");
    QCOMPARE(v.visibleItemCount(), 0);  // nothing of the old graph answers as the new one
    QVERIFY(settle(v));
    QVERIFY(!v.showsPreviousGraph());
    QVERIFY(v.visibleItemCount() > 0);
    v.clear();  // no program: the canvas does empty
    QCOMPARE(int(v.canvas()->scene()->items().size()), 0);
  }

  // Issue #23 item 12: a method that only returns constants shows them, with their values.
  void constantGettersShowTheirValues() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto opened = openProgramFile(fixture("pte/numpyrt_const_methods.pte").toStdString());
    QVERIFY(opened.ok());
    auto p = std::make_shared<const Program>(std::move(opened.value()));
    int getters = 0;
    for (size_t mi = 0; mi < p->methods.size(); ++mi) {
      const Method& m = p->methods[mi];
      if (!m.isConstantGetter()) continue;
      ++getters;
      GraphView v;
      v.resize(800, 600);
      v.show();
      v.setGraph(p, int(mi));
      QVERIFY(settle(v));
      QStringList titles;
      for (const auto& n : v.model()->nodes) titles << QString::fromStdString(n.title);
      const QString prefix = QString::fromStdString(m.name) + (m.outputs.size() > 1 ? "[0]" : "") + " \u2192 ";
      QVERIFY2(!titles.filter(prefix).isEmpty(), qPrintable(titles.join(" | ")));
      QCOMPARE(v.visibleItemCount(), int(m.outputs.size()) + 1);  // the values and the outputs marker
      QCOMPARE(v.visibleEdgeCount(), int(m.outputs.size()));
      shoot(v, QString::fromStdString(m.name));
    }
    QCOMPARE(getters, 4);
    // A returned int is shown with its value ("get_scalar → int 3").
    int ints = 0;
    for (const Method& m : p->methods)
      if (m.isConstantGetter() && m.outputs.size() == 1 && m.values[m.outputs[0]].kind() == ValueKind::Int) {
        ++ints;
        const std::string title = ui::GraphModel::build(m).nodes[0].title;
        const std::string value = "int " + std::to_string(std::get<int64_t>(m.values[m.outputs[0]].payload));
        QVERIFY2(title.find(value) != std::string::npos, title.c_str());
      }
    QVERIFY(ints > 0);
  }
};

QTEST_MAIN(TestGraphView)
#include "tst_graphview.moc"
