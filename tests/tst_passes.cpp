// The to_executorch passes one by one on small GraphBuilder graphs: the graph
// before and after each pass as golden text, plus checks on computed results.
// Each test says where the studio deliberately differs from ExecuTorch's Python.
#include <QtTest>

#include <cstring>

#include "engine/samples/GraphBuilder.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/GraphText.h"
#include "engine/lowering/Pipeline.h"
#include "engine/lowering/ConfigPython.h"
#include "engine/lowering/Delower.h"
#include "engine/lowering/Emitter.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/formats/schema/program_generated.h"
#include "engine/lowering/passes/Passes.h"
#include "engine/planning/MemoryAwareOrder.h"
#include "tests/TestSupport.h"

using namespace lstudio;

namespace {

constexpr const char* kQ = "quantized_decomposed.quantize_per_tensor.default";
constexpr const char* kDq = "quantized_decomposed.dequantize_per_tensor.default";
constexpr ScalarType F = ScalarType::Float;
constexpr ScalarType U8 = ScalarType::Byte;
constexpr ScalarType I8 = ScalarType::Char;

Program finish(GraphBuilder& b, const std::string& name) {
  auto p = b.finish(name);
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::move(p.value());
}

struct Run {
  Program before, after;
  PassOutcome outcome;
};

/// Runs `prep` passes, then `pass` (directly, no pipeline), keeping both programs.
Run runPass(Program p, const std::shared_ptr<const Pass>& pass, const ExecutorchBackendConfig& c = {},
            const std::vector<std::shared_ptr<const Pass>>& prep = {passes::replaceViewOpsWithViewCopyOps()}) {
  for (const auto& x : prep) x->run(p, c);
  Run r{p, p, {}};
  r.outcome = pass->run(r.after, c);
  return r;
}

QByteArray beforeAfter(const Run& r) {
  std::string s = "# before\n";
  for (const Method& m : r.before.methods) s += graphText(m);
  s += "# after\n";
  for (const Method& m : r.after.methods) s += graphText(m);
  for (const auto& d : r.outcome.diagnostics) s += "# " + d.message + "\n";
  return QByteArray::fromStdString(s);
}

#define GOLDEN(name, run)                                           \
  do {                                                              \
    QString why;                                                    \
    QVERIFY2(test::matchesGolden(name, beforeAfter(run), &why), qPrintable(why)); \
  } while (0)

bool hasOp(const Method& m, const std::string& name) {
  for (const Node& n : m.nodes)
    if (n.kind == NodeKind::Kernel && n.op >= 0 && m.operators[n.op].name == name) return true;
  return false;
}

/// A mutable buffer updated by index_put and returned as a buffer mutation (a one-layer KV cache).
Program cacheUpdate(bool readCacheAfter) {
  GraphBuilder b;
  TensorRef pos = b.input("input_pos", ScalarType::Long, {1});
  TensorRef v = b.input("v", F, {1, 3});
  TensorRef cache = b.buffer("cache", F, {4, 3}, WeightInit{WeightInit::Kind::Zeros});
  TensorRef updated = b.op("aten.index_put.default", {cache, std::vector<TensorRef>{pos}, v});
  TensorRef y = b.op("aten.add.Tensor", {updated, readCacheAfter ? cache : updated});
  b.bufferMutation(updated, "cache");
  b.output(y);
  return finish(b, "cache");
}

/// Two branches that each make a large tensor and reduce it: x[64, 64] -> mm(x, x) -> mm(., v[64, 1]),
/// twice, summed. As written both large products are alive at once; a memory-aware order
/// finishes one branch before starting the other.
Program twoBranches() {
  GraphBuilder b;
  TensorRef x = b.input("x", F, {64, 64});
  TensorRef v = b.parameter("v", F, {64, 1});
  TensorRef a1 = b.op("aten.mm.default", {x, x});
  TensorRef b1 = b.op("aten.mm.default", {x, x});
  TensorRef a2 = b.op("aten.mm.default", {a1, v});
  TensorRef b2 = b.op("aten.mm.default", {b1, v});
  b.output(b.op("aten.add.Tensor", {a2, b2}));
  return finish(b, "branches");
}

/// The program after the whole pipeline under `c`.
Program lowered(Program p, const ExecutorchBackendConfig& c) {
  Pipeline pipe(std::make_shared<const Program>(std::move(p)), c);
  pipe.runToEnd();
  if (pipe.failed()) qFatal("the pipeline failed");
  return *pipe.current();
}

/// Every value a node reads is a graph input, a constant, or written by an earlier node.
bool readsFollowWrites(const Method& m) {
  std::vector<bool> ready(m.values.size(), false);
  for (ValueId v : m.inputs) ready[v] = true;
  for (size_t i = 0; i < m.values.size(); ++i)
    if (const TensorSpec* t = m.values[i].tensorIf(); !t || !t->data.empty() || t->external) ready[i] = true;
  for (const Node& n : m.nodes) {
    for (ValueId a : n.args)
      if (std::find(n.outputs.begin(), n.outputs.end(), a) == n.outputs.end() && !ready[a]) return false;
    for (ValueId o : n.outputs) ready[o] = true;
  }
  return true;
}

const TensorSpec& tensorNamed(const Method& m, const std::string& name) {
  for (const Value& v : m.values)
    if (v.name == name && v.isTensor()) return v.tensor();
  qFatal("no tensor %s", name.c_str());
}

}  // namespace

class TestPasses : public QObject {
  Q_OBJECT
 private slots:
  // ---- QuantFusionPass ----
  // Differs from ExecuTorch: patterns are matched structurally (fx's subgraph
  // rewriter matches any graph); reshape (_reshape_alias_copy), add.scalar and
  // the embedding patterns are not reproduced; quantized cat requires the cat
  // result to have no other reader (ExecuTorch rewires them all).
  void quantFusionAddAndRelu() {
    GraphBuilder b;
    TensorRef xq = b.input("xq", U8, {2, 3});
    TensorRef yq = b.input("yq", U8, {2, 3});
    TensorRef x = b.op(kDq, {xq, 0.5, int64_t(3), int64_t(0), int64_t(255), U8});
    TensorRef y = b.op(kDq, {yq, 0.25, int64_t(7), int64_t(0), int64_t(255), U8});
    TensorRef s = b.op("aten.add.Tensor", {x, y});
    b.output(b.op(kQ, {s, 0.75, int64_t(1), int64_t(0), int64_t(255), U8}));
    TensorRef x2 = b.op(kDq, {xq, 0.5, int64_t(3), int64_t(0), int64_t(255), U8});
    TensorRef y2 = b.op(kDq, {yq, 0.25, int64_t(7), int64_t(0), int64_t(255), U8});
    TensorRef r = b.op("aten.relu.default", {b.op("aten.add.Tensor", {x2, y2})});
    b.output(b.op(kQ, {r, 0.75, int64_t(1), int64_t(0), int64_t(255), U8}));
    ExecutorchBackendConfig c;
    c.doQuantFusionAndConstProp = true;
    Run run = runPass(finish(b, "qadd"), passes::quantFusion(), c);
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QVERIFY(hasOp(m, "quantized_decomposed::add"));
    QVERIFY(hasOp(m, "quantized_decomposed::add_relu"));
    QVERIFY(!hasOp(m, "quantized_decomposed::dequantize_per_tensor"));
    QCOMPARE(m.nodes.size(), size_t(2));
    QCOMPARE(m.values[m.outputs[0]].tensor().dtype, U8);  // the integer result is the quantize's
    GOLDEN("passes/quant_fusion_add.txt", run);
  }

  // FoldRedundantDequantizeQuantizePass (ExecuTorch 1.5's to_edge): a quantize of a dequantize
  // with the same parameters (what an eval-mode dropout between them leaves) reads the integers;
  // one with other parameters stays. Out_dtype, keyword-only, is not compared.
  void foldsRedundantDequantizeQuantize() {
    GraphBuilder b;
    TensorRef xq = b.input("xq", I8, {2, 3});
    TensorRef x = b.op(kDq, {xq, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8});
    TensorRef same = b.op(kQ, {x, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8});
    TensorRef other = b.op(kQ, {x, 0.25, int64_t(0), int64_t(-128), int64_t(127), I8});
    b.output(b.op("aten.relu.default", {b.op(kDq, {same, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8})}));
    b.output(other);
    Run run = runPass(finish(b, "dqq"), passes::foldRedundantDequantizeQuantize());
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    int quantizes = 0;
    for (const Node& n : m.nodes)
      quantizes += n.op >= 0 && m.operators[n.op].name == "quantized_decomposed::quantize_per_tensor";
    QCOMPARE(quantizes, 1);  // the 0.25 one
    QCOMPARE(m.nodes.size(), size_t(4));  // dq(xq), q 0.25, dq(xq) again, relu
    // Nothing to fold: unchanged.
    Run again = runPass(run.after, passes::foldRedundantDequantizeQuantize());
    QVERIFY(!again.outcome.changed);
  }

  void quantFusionCatAndSliceKeepIntegers() {
    GraphBuilder b;
    TensorRef aq = b.input("aq", I8, {2, 3});
    TensorRef bq = b.input("bq", I8, {2, 3});
    auto dq = [&](TensorRef t) { return b.op(kDq, {t, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8}); };
    TensorRef cat = b.op("aten.cat.default", {std::vector<TensorRef>{dq(aq), dq(bq)}, int64_t(0)});
    b.output(b.op(kQ, {cat, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8}));
    ExecutorchBackendConfig c;
    c.doQuantFusionAndConstProp = true;
    Run run = runPass(finish(b, "qcat"), passes::quantFusion(), c);
    const Method& m = run.after.methods[0];
    QVERIFY(!hasOp(m, "quantized_decomposed::quantize_per_tensor"));
    QVERIFY(!hasOp(m, "quantized_decomposed::dequantize_per_tensor"));
    QCOMPARE(m.values[m.outputs[0]].tensor().dtype, I8);
    QCOMPARE(m.values[m.outputs[0]].tensor().sizes, (std::vector<int64_t>{4, 3}));
    GOLDEN("passes/quant_fusion_cat.txt", run);
  }

  void quantFusionLeavesOtherPatterns() {
    // int8 add: ExecuTorch's add pattern is traced with torch.uint8, so it does not match.
    GraphBuilder b;
    TensorRef xq = b.input("xq", I8, {2, 3});
    TensorRef x = b.op(kDq, {xq, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8});
    TensorRef s = b.op("aten.add.Tensor", {x, x});
    b.output(b.op(kQ, {s, 0.5, int64_t(0), int64_t(-128), int64_t(127), I8}));
    ExecutorchBackendConfig c;
    c.doQuantFusionAndConstProp = true;
    Run run = runPass(finish(b, "qadd8"), passes::quantFusion(), c);
    QVERIFY(!run.outcome.changed);
    QCOMPARE(graphText(run.after.methods[0]), graphText(run.before.methods[0]));
    // The quantized MLP: ExecuTorch has no linear/addmm pattern; everything stays.
    auto q = buildSample("quantized_linear");
    QVERIFY(q.ok());
    Run ql = runPass(std::move(q.value()), passes::quantFusion(), c);
    QVERIFY(!ql.outcome.failed);
    QCOMPARE(graphText(ql.after.methods[0]), graphText(ql.before.methods[0]));
  }

  void trainingRefusesQuantFusion() {
    auto t = buildSample("training");
    QVERIFY(t.ok());
    ExecutorchBackendConfig c;
    c.doQuantFusionAndConstProp = true;
    Pipeline p(std::make_shared<const Program>(std::move(t.value())), c);
    p.runToEnd();
    QVERIFY(p.failed());
    const PassRecord& r = p.records()[p.position() - 1];
    QCOMPARE(r.name, std::string("QuantFusionPass"));
    QVERIFY(!r.diagnostics.empty());
    QVERIFY2(r.diagnostics[0].message.find("backward signature") != std::string::npos, r.diagnostics[0].message.c_str());
    QVERIFY(r.diagnostics[0].message.find("do_quant_fusion_and_const_prop") != std::string::npos);
    c.doQuantFusionAndConstProp = false;
    p.setConfig(c);
    p.runToEnd();
    QVERIFY(!p.failed());
  }

  // ---- ConstantPropPass ----
  // Layout operators: permute, transpose, t, expand into new bytes; view-like ops and
  // clones share the input's bytes.
  void constantPropFoldsPermuteOfAWeight() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {4, 3});
    TensorRef w = b.parameter("fc.weight", F, {2, 3});
    TensorRef wt = b.op("aten.permute.default", {w, std::vector<int64_t>{1, 0}});
    TensorRef bias = b.parameter("fc.bias", F, {2});
    TensorRef bv = b.op("aten.view.default", {bias, std::vector<int64_t>{1, 2}});
    TensorRef y = b.op("aten.mm.default", {x, wt});
    b.output(b.op("aten.add.Tensor", {y, bv}));
    Program p = finish(b, "fold");
    ExecutorchBackendConfig c;
    c.doQuantFusionAndConstProp = true;
    Run run = runPass(p, passes::constantProp(), c);
    QVERIFY(run.outcome.changed);
    const Method& before = run.before.methods[0];
    const Method& m = run.after.methods[0];
    QCOMPARE(m.nodes.size(), size_t(2));  // mm and add
    // The weights left the signature; two lifted constants came before the user input.
    QCOMPARE(m.signature.inputs.size(), size_t(3));
    QCOMPARE(m.signature.inputs[0].kind, InputSpec::Kind::ConstantTensor);
    QCOMPARE(m.signature.inputs[1].kind, InputSpec::Kind::ConstantTensor);
    QCOMPARE(m.signature.inputs[2].kind, InputSpec::Kind::User);
    const TensorSpec* wOld = nullptr;
    const TensorSpec* bOld = nullptr;
    for (const auto& in : before.signature.inputs) {
      if (in.target == "fc.weight") wOld = &before.values[in.value].tensor();
      if (in.target == "fc.bias") bOld = &before.values[in.value].tensor();
    }
    QVERIFY(wOld && bOld);
    const TensorSpec* wNew = nullptr;
    const TensorSpec* bNew = nullptr;
    for (const auto& in : m.signature.inputs) {
      if (in.kind != InputSpec::Kind::ConstantTensor) continue;
      const TensorSpec& t = m.values[in.value].tensor();
      (t.sizes == std::vector<int64_t>{3, 2} ? wNew : bNew) = &t;
    }
    QVERIFY(wNew && bNew);
    // The transposed weight holds w[j][i] at [i][j], in bytes the program owns.
    const float* a = reinterpret_cast<const float*>(wOld->data.data);
    const float* t = reinterpret_cast<const float*>(wNew->data.data);
    QCOMPARE(wNew->data.size, uint64_t(24));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) QCOMPARE(t[i * 2 + j], a[j * 3 + i]);
    QCOMPARE(run.after.derivedData.size(), size_t(1));
    QVERIFY(wNew->data.data >= run.after.derivedData[0]->data());
    // The viewed bias is not copied: same bytes as the parameter.
    QCOMPARE(bNew->data.data, bOld->data.data);
    GOLDEN("passes/constant_prop.txt", run);
  }

  void constantPropComputesAnyOperatorWithAKernel() {
    // ExecuTorch runs every operator on constants; the studio runs the interpreter's kernel.
    // w * 2.0 + c: a number in a Tensor slot, then an add, folded into one constant.
    GraphBuilder b;
    TensorRef x = b.input("x", F, {2, 3});
    TensorRef w = b.parameter("w", F, {2, 3}, {WeightInit::Kind::Constant, 1.5});
    TensorRef c = b.constant("c", F, {2, 3}, {WeightInit::Kind::Constant, 0.25});
    TensorRef folded = b.op("aten.add.Tensor", {b.op("aten.mul.Tensor", {w, 2.0}), c});
    TensorRef y = b.op("aten.mul.Tensor", {x, folded});
    b.output(y);
    b.output(b.op("aten.bernoulli.p", {c, 0.5}));        // draws random numbers: never folded
    b.output(b.op("aten.all.default", {c}));  // no kernel: left, and said so
    ExecutorchBackendConfig cfg;
    cfg.doQuantFusionAndConstProp = true;
    Program p = finish(b, "compute");
    p.methods[0].values[p.methods[0].nodes[2].outputs[0]].tensor().requiresGrad = true;  // as torch.export records it
    Run run = runPass(std::move(p), passes::constantProp(), cfg);
    QVERIFY(!run.outcome.failed);
    const Method& m = run.after.methods[0];
    std::vector<std::string> ops;
    for (const Node& n : m.nodes) ops.push_back(m.operators[n.op].name);
    QCOMPARE(ops, (std::vector<std::string>{"aten::mul", "aten::bernoulli", "aten::all"}));
    const TensorSpec* k = nullptr;
    for (const InputSpec& in : m.signature.inputs)
      if (in.target == "_prop_tensor_constant1") k = &m.values[in.value].tensor();
    QVERIFY(k);
    QCOMPARE(k->data.size, uint64_t(24));
    for (int i = 0; i < 6; ++i) QCOMPARE(reinterpret_cast<const float*>(k->data.data)[i], 3.25f);
    // x * constant no longer requires grad: nothing it reads does (SpecPropPass's re-trace upstream).
    QVERIFY(!m.values[m.nodes[0].outputs[0]].tensor().requiresGrad);
    bool warned = false;
    for (const Diagnostic& d : run.outcome.diagnostics)
      if (d.severity == Diagnostic::Severity::Warning) {
        warned = d.message.find("aten::all") != std::string::npos && d.message.find("bernoulli") == std::string::npos;
      }
    QVERIFY(warned);
  }

  void constantPropLeavesResultsPastItsBudget() {
    // An arange whose spec claims 1.2 GB (past the 1 GiB floor for a program of no constants)
    // is left to run, with a warning, instead of being computed while the program lowers.
    GraphBuilder b;
    TensorRef x = b.input("x", F, {4});
    TensorRef big = b.op("aten.arange.start_step", {int64_t(0), int64_t(300000000), int64_t(1), F});
    b.output(b.op("aten.add.Tensor", {x, b.op("aten.sum.default", {big})}));
    ExecutorchBackendConfig cfg;
    cfg.doQuantFusionAndConstProp = true;
    Run run = runPass(finish(b, "budget"), passes::constantProp(), cfg);
    QVERIFY(!run.outcome.failed);
    QCOMPARE(run.after.methods[0].nodes.size(), run.before.methods[0].nodes.size());
    bool warned = false;
    for (const Diagnostic& d : run.outcome.diagnostics)
      warned = warned || (d.severity == Diagnostic::Severity::Warning && d.message.find("1 nodes left unfolded") != std::string::npos);
    QVERIFY(warned);
  }

  void constantPropChainsAndRank3() {
    // permute(view(c)) of a rank-3 constant and expand of a bias: computed, checked element by element.
    GraphBuilder b;
    TensorRef x = b.input("x", F, {4, 3, 2});
    TensorRef c = b.constant("c", F, {2, 12});
    TensorRef v = b.op("aten.view.default", {c, std::vector<int64_t>{2, 3, 4}});
    TensorRef pc = b.op("aten.permute.default", {v, std::vector<int64_t>{2, 1, 0}});  // [4, 3, 2]
    TensorRef bias = b.parameter("bias", F, {2});
    TensorRef e = b.op("aten.expand.default", {bias, std::vector<int64_t>{3, 2}});
    b.output(b.op("aten.add.Tensor", {b.op("aten.add.Tensor", {x, pc}), e}));
    ExecutorchBackendConfig cfg;
    cfg.doQuantFusionAndConstProp = true;
    Run run = runPass(finish(b, "chain"), passes::constantProp(), cfg);
    const Method& before = run.before.methods[0];
    const Method& m = run.after.methods[0];
    QCOMPARE(m.nodes.size(), size_t(2));
    const float* cData = nullptr;
    const float* bData = nullptr;
    for (const auto& in : before.signature.inputs) {
      if (in.target == "c") cData = reinterpret_cast<const float*>(before.values[in.value].tensor().data.data);
      if (in.target == "bias") bData = reinterpret_cast<const float*>(before.values[in.value].tensor().data.data);
    }
    QVERIFY(cData && bData);
    const float* permuted = nullptr;
    const float* expanded = nullptr;
    for (const auto& in : m.signature.inputs) {
      if (in.kind != InputSpec::Kind::ConstantTensor) continue;
      const TensorSpec& t = m.values[in.value].tensor();
      (t.sizes.size() == 3 ? permuted : expanded) = reinterpret_cast<const float*>(t.data.data);
    }
    QVERIFY(permuted && expanded);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 2; ++k) QCOMPARE(permuted[(i * 3 + j) * 2 + k], cData[(k * 3 + j) * 4 + i]);
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 2; ++k) QCOMPARE(expanded[r * 2 + k], bData[k]);
  }

  void constantPropClonesReturnedConstants() {
    // A parameter returned as is comes back through a clone (ExecuTorch's
    // _update_output_node_and_specs), so the output is a planned tensor.
    GraphBuilder b;
    TensorRef x = b.input("x", F, {2});
    TensorRef w = b.parameter("w", F, {2});
    b.output(b.op("aten.add.Tensor", {x, w}));
    b.output(w);
    ExecutorchBackendConfig cfg;
    cfg.doQuantFusionAndConstProp = true;
    Run run = runPass(finish(b, "ret"), passes::constantProp(), cfg);
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QCOMPARE(m.nodes.size(), size_t(2));
    QCOMPARE(m.operators[m.nodes[1].op].name, std::string("aten::clone"));
    QCOMPARE(m.outputs[1], m.nodes[1].outputs[0]);
    QCOMPARE(m.signature.outputs[1].value, m.outputs[1]);
    QVERIFY(m.values[m.outputs[1]].tensor().data.empty());
  }

  void constantPropSkipsQuantPrimitives() {
    auto q = buildSample("quantized_linear");
    QVERIFY(q.ok());
    ExecutorchBackendConfig c;
    c.doQuantFusionAndConstProp = true;
    Run run = runPass(std::move(q.value()), passes::constantProp(), c);
    // dequantize of a frozen weight is never folded, so its permute stays too.
    QVERIFY(!run.outcome.changed);
    QVERIFY(hasOp(run.after.methods[0], "aten::permute_copy"));
  }

  // ---- SymShapeEvalPass ----
  // A derived size ("2*s0 + 1", as torch.export writes it) is bounded from its
  // symbols' ranges, as ExecuTorch's ConstraintBasedSymShapeEvalPass does
  // (bound_sympy): it used to fail the pass ("has no upper bound").
  void symShapeEvalBoundsDerivedSizes() {
    GraphBuilder b;
    b.symbol("s0", 5, 2, 8);
    b.symbol("s1", 3, 1, 4);
    TensorRef x = b.input("x", F, {5, 4}, {"s0", ""});
    b.output(b.op("aten.relu.default", {x}));
    Program p = finish(b, "derived");
    Method& m = p.methods[0];
    const std::vector<std::pair<std::string, std::optional<int64_t>>> cases = {
        {"2*s0 + 1", 17}, {"s0 + s1", 12}, {"Max(s0, 2*s1)", 8}, {"Min(s0, s1)", 4}, {"(s0 + 1)//2", 4},
        {"s0*s1 - 1", 31}, {"s9 + 1", std::nullopt}, {"sqrt(s0)", std::nullopt}};
    for (const auto& [expr, bound] : cases) {
      Program q = p;
      TensorSpec& t = q.methods[0].values[m.inputs[0]].tensor();
      t.symbols = {expr, ""};
      PassOutcome o = passes::symShapeEval()->run(q, ExecutorchBackendConfig{});
      if (bound) {
        QVERIFY2(!o.failed, expr.c_str());
        QCOMPARE(q.methods[0].values[m.inputs[0]].tensor().sizes[0], *bound);
      } else {
        QVERIFY2(o.failed, expr.c_str());
        QVERIFY(o.diagnostics.at(0).message.find(expr) != std::string::npos);
      }
    }
  }

  // ---- ReinplacePass ----
  // Same rules as ExecuTorch's reinplace_pass; the in-place op's result is
  // the mutated input itself in the IR (readers are rewired to it).
  void reinplaceIndexPut() {
    ExecutorchBackendConfig c;
    c.runReinplacePass = true;
    Run run = runPass(cacheUpdate(false), passes::reinplace(), c);
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QVERIFY(hasOp(m, "aten::index_put_"));
    ValueId cache = kNoValue;
    for (const auto& in : m.signature.inputs)
      if (in.target == "cache") cache = in.value;
    for (const auto& o : m.signature.outputs)
      if (o.kind == OutputSpec::Kind::BufferMutation) QCOMPARE(o.value, cache);
    GOLDEN("passes/reinplace.txt", run);
    // The cache is read after the update: not safe, nothing changes.
    Run unsafe = runPass(cacheUpdate(true), passes::reinplace(), c);
    QVERIFY(!unsafe.outcome.changed);
    QVERIFY(hasOp(unsafe.after.methods[0], "aten::index_put"));
    // reinplace_extra_ops with an unknown op is an error naming it.
    c.reinplaceExtraOps = {"aten.no_such_op.default"};
    Run bad = runPass(cacheUpdate(false), passes::reinplace(), c);
    QVERIFY(bad.outcome.failed);
    QVERIFY(bad.outcome.diagnostics[0].message.find("no_such_op") != std::string::npos);
  }

  // ---- WeightsToOutputsPass ----
  // As ExecuTorch: appended in placeholder order, kind TOKEN, no target. The
  // weight_has_gradient flag is not stored: MemoryPlanningPass recognises a
  // parameter returned as a TOKEN output instead (see tst_pipeline).
  void weightsToOutputsOnTraining() {
    auto t = buildSample("training");
    QVERIFY(t.ok());
    Run run = runPass(std::move(t.value()), passes::weightsToOutputs());
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QCOMPARE(m.outputs.size(), run.before.methods[0].outputs.size() + 4);
    size_t tokens = 0;
    for (const auto& o : m.signature.outputs)
      if (o.kind == OutputSpec::Kind::Token) {
        const InputSpec* in = nullptr;
        for (const auto& i : m.signature.inputs)
          if (i.value == o.value) in = &i;
        QVERIFY(in && in->kind == InputSpec::Kind::Parameter);
        ++tokens;
      }
    QCOMPARE(tokens, size_t(4));
    GOLDEN("passes/weights_to_outputs.txt", run);
    Run mlp = runPass(buildSample("mlp").value(), passes::weightsToOutputs());
    QVERIFY(!mlp.outcome.changed);
  }

  // ---- UnsafeRemoveAutoFunctionalizedPass ----
  // No sample or real .pt2 has the wrapper (the importer keeps operator
  // arguments as text), so this graph is made by hand.
  void removeAutoFunctionalized() {
    Program p = cacheUpdate(false);
    Method& m = p.methods[0];
    for (Node& n : m.nodes)
      if (m.operators[n.op].name == "aten::index_put") {
        m.operators.push_back(OperatorRef{"higher_order::auto_functionalized", "default"});
        n.op = static_cast<int32_t>(m.operators.size() - 1);
        n.target = "torch.ops.higher_order.auto_functionalized";
        m.values.push_back(Value{std::string("aten::index_put_.default"), {}});
        n.args.insert(n.args.begin(), static_cast<ValueId>(m.values.size() - 1));
        n.argNames.clear();
      }
    Run run = runPass(p, passes::removeAutoFunctionalized(), {}, {});
    QVERIFY(!run.outcome.failed);
    QVERIFY(run.outcome.changed);
    QVERIFY(hasOp(run.after.methods[0], "aten::index_put_"));
    GOLDEN("passes/remove_auto_functionalized.txt", run);
  }

  // ---- InsertWriteBackForBuffersPass ----
  // Differs from ExecuTorch: copy_ defines no new value; the output is the
  // buffer itself (ExecuTorch returns copy_'s result, an alias of it). The
  // in-place lineage check is "the output already is the buffer", which is
  // what a chain of in-place ops back to it becomes in the IR.
  void insertWriteBack() {
    Run run = runPass(cacheUpdate(false), passes::insertWriteBack());
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QVERIFY(hasOp(m, "aten::copy_"));
    QCOMPARE(m.nodes.back().args[0], m.signature.inputs[0].kind == InputSpec::Kind::Buffer
                                         ? m.signature.inputs[0].value
                                         : m.signature.inputs.back().value);
    GOLDEN("passes/insert_write_back.txt", run);
    // After reinplace the buffer is written in place: no copy.
    ExecutorchBackendConfig c;
    c.runReinplacePass = true;
    Run again = runPass(cacheUpdate(false), passes::insertWriteBack(), c, {passes::replaceViewOpsWithViewCopyOps(), passes::reinplace()});
    QVERIFY(!again.outcome.changed);
    QVERIFY(!hasOp(again.after.methods[0], "aten::copy_"));
  }

  // ---- MemoryFormatOpsPass and LegalizePortableDimOrderPass ----
  // MemoryFormatOpsPass belongs to to_edge in ExecuTorch; imported .pt2 graphs
  // are not edge yet, so the studio runs it right after ReplaceViewOpsWithViewCopyOpsPass. Both passes
  // read dim orders from the tensor specs (ExecuTorch from fake tensors).
  void memoryFormatOps() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {1, 2, 3, 3});
    TensorRef c = b.op("aten.clone.default", {x, int64_t(2)});  // channels_last
    b.output(c);
    b.output(b.op("aten.clone.default", {x}));  // preserve: the input's order
    Program p = finish(b, "fmt");
    // _to_copy(x, dtype=half), added by hand (the builder infers no shape for it).
    Method& m0 = p.methods[0];
    m0.operators.push_back(OperatorRef{"aten::_to_copy", "default"});
    Value half = m0.values[x.id];
    half.name = "_to_copy";
    half.tensor().dtype = ScalarType::Half;
    m0.values.push_back(half);
    m0.values.push_back(Value{int64_t(static_cast<int>(ScalarType::Half)), {}});
    Node n;
    n.name = "_to_copy";
    n.op = static_cast<int32_t>(m0.operators.size() - 1);
    n.args = {x.id, static_cast<ValueId>(m0.values.size() - 1)};
    n.argNames = {"self", "dtype"};
    n.outputs = {static_cast<ValueId>(m0.values.size() - 2)};
    m0.nodes.push_back(n);
    m0.outputs.push_back(n.outputs[0]);
    Run run = runPass(p, passes::memoryFormatOps());
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QVERIFY(hasOp(m, "dim_order_ops::_clone_dim_order"));
    QVERIFY(hasOp(m, "dim_order_ops::_to_dim_order_copy"));
    QVERIFY(!hasOp(m, "aten::clone"));
    GOLDEN("passes/memory_format_ops.txt", run);
  }

  // ---- ReplaceViewCopyWithViewPass ----
  // A view of an input the caller provides (alloc_graph_input off) has no
  // planned storage to share: as ExecuTorch does, an et_view call points it
  // at the caller's bytes at run time.
  void viewOfUnplannedInputBecomesEtView() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {2, 3});
    TensorRef flat = b.op("aten.view.default", {x, std::vector<int64_t>{6}});  // view_copy after to_edge
    b.output(b.op("aten.relu.default", {flat}));
    Program p = finish(b, "flatten");
    ExecutorchBackendConfig planned;
    Run run = runPass(p, passes::replaceViewCopyWithView(), planned);
    QVERIFY(run.outcome.changed);
    QVERIFY(!hasOp(run.after.methods[0], "aten::view_copy"));
    ExecutorchBackendConfig callerInputs;
    callerInputs.memoryPlanning.allocGraphInput = false;
    Run kept = runPass(p, passes::replaceViewCopyWithView(), callerInputs);
    QVERIFY(kept.outcome.changed);
    QVERIFY(!hasOp(kept.after.methods[0], "aten::view_copy"));
    QVERIFY(hasOp(kept.after.methods[0], "executorch_prim::et_view"));
  }

  // A view of a constant (prelu's weight.view(1, C)) is a constant over the
  // same bytes, as ExecuTorch emits it (one data_buffer_idx for both): no copy
  // instruction. State with bytes (a mutated buffer) keeps its copy.
  void viewOfConstantSharesItsBytes() {
    GraphBuilder b;
    TensorRef w = b.parameter("weight", F, {4});
    TensorRef x = b.input("x", F, {3, 4});
    TensorRef wv = b.op("aten.view.default", {w, std::vector<int64_t>{1, 4}});
    b.output(b.op("aten.mul.Tensor", {wv, x}));
    Program p = finish(b, "scaled");
    Run run = runPass(p, passes::replaceViewCopyWithView());
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QVERIFY(!hasOp(m, "aten::view_copy"));
    const TensorSpec& view = m.values[m.nodes[0].args[0]].tensor();
    const TensorSpec& base = m.values[w.id].tensor();
    QCOMPARE(view.viewOf, w.id);
    QVERIFY(view.data.data != nullptr && view.data.data == base.data.data && view.data.size == base.data.size);

    Pipeline pipe(std::make_shared<const Program>(p), ExecutorchBackendConfig{});
    pipe.runToEnd();
    QVERIFY(!pipe.failed());
    const Method& emitted = pipe.current()->methods[0];
    QVERIFY(!hasOp(emitted, "aten::view_copy.out"));
    int constants = 0;
    for (const Value& v : emitted.values)
      if (const TensorSpec* t = v.tensorIf(); t && t->data.data == base.data.data) ++constants;
    QCOMPARE(constants, 2);  // the weight and its view, one set of bytes
  }

  void legalizePortableDimOrder() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {1, 2, 3, 3});
    b.output(b.op("aten.mean.dim", {x, std::vector<int64_t>{-1}, true}));
    Program p = finish(b, "legal");
    p.methods[0].values[p.methods[0].inputs[0]].tensor().dimOrder = {0, 2, 3, 1};  // channels last
    Run run = runPass(p, passes::legalizePortableDimOrder());
    QVERIFY(run.outcome.changed);
    const Method& m = run.after.methods[0];
    QCOMPARE(m.nodes.size(), size_t(2));
    QCOMPARE(m.operators[m.nodes[0].op].name, std::string("dim_order_ops::_to_dim_order_copy"));
    QCOMPARE(m.values[m.nodes[1].args[0]].tensor().dimOrder, (std::vector<uint8_t>{0, 1, 2, 3}));
    GOLDEN("passes/legalize_dim_order.txt", run);
    Run contiguous = runPass(finish(b, "legal"), passes::legalizePortableDimOrder());
    QVERIFY(!contiguous.outcome.changed);
  }

  // ---- PropagateDevicePass, EdgeToBackendOpsPass ----
  // The IR has no device field: every tensor is CPU; another device is a
  // warning (ExecuTorch would record it and insert copies). EdgeToBackendOps:
  // only the symbolic-int renames are visible; ExecuTorch's swap of op
  // objects for backend-dialect twins has no counterpart in the IR.
  // ---- PropagateDevicePass and per-device planning (checked against ExecuTorch by
  // tests/conformance/devices.py; here: the rules, and that a .pte keeps them) ----
  /// x, y -> delegate(x, y) = a -> mul(a, x) = b -> add(b, y); returns (add, a). The
  /// delegate targets `device`.
  static Program delegated(const std::string& device) {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {2, 3});
    TensorRef y = b.input("y", F, {2, 3});
    TensorRef a = b.op("aten.add.Tensor", {x, y});
    TensorRef m = b.op("aten.mul.Tensor", {a, x});
    b.output(b.op("aten.add.Tensor", {m, y}));
    b.output(a);
    Program p = finish(b, "delegated");
    Method& g = p.methods[0];
    Delegate d;
    d.backendId = "DeviceBackend";
    d.compileSpecs.push_back(CompileSpec{"target_device", std::vector<uint8_t>(device.begin(), device.end())});
    g.delegates.push_back(d);
    Node& n = g.nodes[0];
    n.kind = NodeKind::Delegate;
    n.op = -1;
    n.delegate = 0;
    n.argNames.clear();
    n.args = {n.args[0], n.args[1], n.outputs[0]};
    return p;
  }

  void propagateDevice() {
    const Device cuda{DeviceType::Cuda, 0};
    // Copies around the call, device tensors in an arena of their own (mem_id 2).
    Program on = lowered(delegated("CUDA:0"), {});
    const Method& m = on.methods[0];
    QVERIFY(hasOp(m, "et_copy::_h2d_copy") && hasOp(m, "et_copy::_d2h_copy"));
    QCOMPARE(m.nonConstBufferSizes.size(), size_t(3));
    QCOMPARE(m.arenaDevices.size(), size_t(3));
    QVERIFY(m.arenaDevices[1].isCpu() && m.arenaDevices[2] == cuda);
    size_t onDevice = 0;
    for (const Value& v : m.values)
      if (const TensorSpec* t = v.tensorIf(); t && t->slot) {
        QCOMPARE(t->slot->memId, t->device == cuda ? 2u : 1u);
        onDevice += t->device == cuda;
      }
    QCOMPARE(onDevice, size_t(3));  // the two copies in, the result
    for (ValueId o : m.outputs) QVERIFY(m.values[o].tensor().device.isCpu());  // returned through copies
    // Written and read back: the device fields stay.
    auto emitted = emitProgram(on, {});
    QVERIFY2(emitted.ok(), emitted.ok() ? "" : emitted.error().message().c_str());
    auto bytes = serializePte(emitted.value());
    QVERIFY(bytes.ok());
    auto back = readProgram(MappedFile::fromBytes("device.pte", bytes.value().data(), bytes.value().size()));
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    QCOMPARE(back.value().methods[0].arenaDevices.size(), size_t(3));
    QVERIFY(back.value().methods[0].arenaDevices[2] == cuda);
    size_t readBack = 0;
    for (const Value& v : back.value().methods[0].values)
      if (const TensorSpec* t = v.tensorIf()) readBack += t->device == cuda;
    QCOMPARE(readBack, onDevice);
    // And the config it was made with is read back from it.
    QVERIFY(configMatching(back.value()).enableNonCpuMemoryPlanning);
    // A device type the schema does not have is refused by the reader, naming the field.
    std::string bad = bytes.value();
    auto* plan = executorch_flatbuffer::GetMutableProgram(bad.data())->mutable_execution_plan()->GetMutableObject(0);
    bool mutated = false;
    for (uint32_t i = 0; i < plan->values()->size() && !mutated; ++i) {
      auto* v = plan->mutable_values()->GetMutableObject(i);
      auto* t = v->val_type() == executorch_flatbuffer::KernelTypes::Tensor ? static_cast<executorch_flatbuffer::Tensor*>(v->mutable_val()) : nullptr;
      if (t && t->extra_tensor_info())
        mutated = t->mutable_extra_tensor_info()->mutate_device_type(static_cast<executorch_flatbuffer::DeviceType>(7));
    }
    QVERIFY(mutated);
    auto refused = readProgram(MappedFile::fromBytes("bad_device.pte", bad.data(), bad.size()));
    QVERIFY(!refused.ok());
    QVERIFY2(refused.error().message().find("device_type") != std::string::npos, refused.error().message().c_str());

    // enable_non_cpu_memory_planning off: marked, no copies, one CPU arena.
    ExecutorchBackendConfig off;
    off.enableNonCpuMemoryPlanning = false;
    Program marked = lowered(delegated("cuda:0"), off);
    QVERIFY(!hasOp(marked.methods[0], "et_copy::_h2d_copy"));
    QCOMPARE(marked.methods[0].nonConstBufferSizes.size(), size_t(2));
    QVERIFY(marked.methods[0].arenaDevices.empty());
    QCOMPARE(marked.methods[0].value(marked.methods[0].inputs[0]).tensor().device, cuda);

    // A device the schema does not have fails the pass, naming it.
    Run tpu = runPass(delegated("tpu:0"), passes::propagateDevice());
    QVERIFY(tpu.outcome.failed);
    QVERIFY(tpu.outcome.diagnostics[0].message.find("'tpu:0'") != std::string::npos);
    // skip_h2d_for_method_inputs on an input two nodes read is refused, as ExecuTorch refuses it.
    ExecutorchBackendConfig skip;
    skip.propagateDevice.skipH2dForMethodInputs.all = true;
    Run shared = runPass(delegated("cuda:0"), passes::propagateDevice(), skip);
    QVERIFY(shared.outcome.failed);
    QVERIFY(shared.outcome.diagnostics[0].message.find("'x'") != std::string::npos);
  }

  void edgeToBackendOps() {
    Program p = cacheUpdate(false);
    Method& m = p.methods[0];
    m.operators.push_back(OperatorRef{"_operator::mul", "default"});
    m.values.push_back(Value{int64_t(4), "s0", true});
    ValueId s0 = static_cast<ValueId>(m.values.size() - 1);
    m.values.push_back(Value{int64_t(2), {}});
    Node n;
    n.name = "mul";
    n.target = "_operator.mul";
    n.op = static_cast<int32_t>(m.operators.size() - 1);
    n.args = {s0, static_cast<ValueId>(m.values.size() - 1)};
    m.nodes.insert(m.nodes.begin(), n);
    Run run = runPass(p, passes::edgeToBackendOps(), {}, {});
    QVERIFY(run.outcome.changed);
    QVERIFY(hasOp(run.after.methods[0], "executorch_prim::mul"));
    QVERIFY(!hasOp(run.after.methods[0], "_operator::mul"));
    GOLDEN("passes/edge_to_backend_ops.txt", run);
  }

  // ---- ToOutVarPass on an operator without out variant ----
  void missingOutVariantNamesNodeAndOp() {
    auto built = buildSample("mlp");
    QVERIFY(built.ok());
    Program p = std::move(built.value());
    Method& m = p.methods[0];
    int relu = -1;
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (relu < 0 && m.operators[m.nodes[i].op].name == "aten::relu") relu = static_cast<int>(i);
    QVERIFY(relu >= 0);
    m.operators.push_back(OperatorRef{"my_ns::fused_relu", "default"});
    m.nodes[relu].op = static_cast<int32_t>(m.operators.size() - 1);
    m.nodes[relu].target = "torch.ops.my_ns.fused_relu.default";
    Pipeline pipe(std::make_shared<const Program>(p), ExecutorchBackendConfig{});
    pipe.runToEnd();
    QVERIFY(pipe.failed());
    const PassRecord& r = pipe.records()[pipe.position() - 1];
    QCOMPARE(r.name, std::string("ToOutVarPass"));
    QVERIFY(!r.diagnostics.empty());
    const std::string& msg = r.diagnostics[0].message;
    QVERIFY2(msg.find("node '" + m.nodes[relu].name + "'") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("my_ns.fused_relu") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("mlp.py:14") != std::string::npos, msg.c_str());  // the source line
    // The node index points at the failing node in the program before the pass.
    const Method& last = pipe.current()->methods[0];
    QVERIFY(r.diagnostics[0].node >= 0 && static_cast<size_t>(r.diagnostics[0].node) < last.nodes.size());
    QCOMPARE(last.nodes[r.diagnostics[0].node].name, m.nodes[relu].name);
  }

  // ---- MemoryAwareOrderPass and in-place reuse (studio_memory_aware_order) ----
  // Beyond ExecuTorch, which has no such field: ExecuTorch plans in the given
  // order. The conformance script tests/conformance/memory_order.py runs the
  // files made this way in ExecuTorch's runtime (outputs bit-identical).
  void memoryAwareOrderLowersThePeak() {
    ExecutorchBackendConfig c;
    Program plain = lowered(twoBranches(), c);
    c.studioMemoryAwareOrder = true;
    Program ordered = lowered(twoBranches(), c);
    const Method &a = plain.methods[0], &b = ordered.methods[0];
    // As written: x, mm and mm_1 (16 KiB each) alive together. Reordered: x and one product,
    // plus a 256-byte result.
    QCOMPARE(a.nonConstBufferSizes.at(1), int64_t(3 * 16384));
    QCOMPARE(b.nonConstBufferSizes.at(1), int64_t(2 * 16384 + 256));
    QVERIFY(readsFollowWrites(b));
    std::vector<std::string> order;
    for (const Node& n : b.nodes) order.push_back(n.name);
    QCOMPARE(order, (std::vector<std::string>{"mm", "mm_2", "mm_1", "mm_3", "add"}));
    // The stored plan of the plain program knows the bound a reordering would reach.
    MemoryPlanReport r = analyzeMemoryPlan(a);
    addReorderedBounds(a, r);
    QCOMPARE(r.arenas.at(0).lowerBound, uint64_t(3 * 16384));
    QCOMPARE(r.arenas.at(0).reorderedBound, uint64_t(2 * 16384 + 256));
    // The pass says what it did: one node (mm_2) taken out and put back earlier.
    Pipeline pipe(std::make_shared<const Program>(twoBranches()), c);
    pipe.runToEnd();
    bool said = false;
    for (const PassRecord& rec : pipe.records())
      if (rec.name == "MemoryAwareOrderPass")
        for (const auto& d : rec.diagnostics)
          said = said || (d.message.find("48.0 KiB as ordered, 32.2 KiB reordered") != std::string::npos &&
                          d.message.find("1 of 5 nodes moved") != std::string::npos);
    QVERIFY(said);
    // Off (the default), the pass is skipped and the order is the given one.
    QVERIFY(!passes::memoryAwareOrder()->enabled(ExecutorchBackendConfig{}));
  }

  void memoryAwareOrderKeepsWritesInOrder() {
    // A buffer written in place (index_put_ after reinplace) and read before: the read stays
    // before the write, whatever the sizes say.
    ExecutorchBackendConfig c;
    c.runReinplacePass = true;
    c.studioMemoryAwareOrder = true;
    Program p = lowered(cacheUpdate(false), c);
    QVERIFY(readsFollowWrites(p.methods[0]));
    // index_put's indices are an optional tensor list; a None item (kNoValue, as in
    // cache[:, pos] = v) is no value to order by (it was read as values[-1]; ASan saw it).
    Method& m = p.methods[0];
    size_t lists = 0;
    for (Value& v : m.values)
      if (auto* ol = std::get_if<OptionalTensorList>(&v.payload)) ol->items.insert(ol->items.begin(), kNoValue), ++lists;
    QVERIFY(lists > 0);
    auto problem = orderProblem(m, {nullptr, [](ValueId) { return OrderStorage{16, false, false}; }});
    QVERIFY(problem.ok());
    for (size_t i = 0; i < problem->preds.size(); ++i)
      for (int32_t d : problem->preds[i]) QVERIFY(static_cast<size_t>(d) < i);
    for (const auto& t : problem->touches)
      for (int32_t x : t) QVERIFY(problem->roots.at(static_cast<size_t>(x)) >= 0);
  }

  void inPlaceReuseOfDyingArguments() {
    // r = relu(a): a dies there, so r takes a's bytes; y = add(r, a) reads a again, so relu
    // may not write over a, and y takes r's bytes (r dies at the add).
    auto build = [](bool readAAgain) {
      GraphBuilder b;
      TensorRef x = b.input("x", F, {16, 16});
      TensorRef a = b.op("aten.mm.default", {x, x});
      TensorRef r = b.op("aten.relu.default", {a});
      b.output(b.op("aten.add.Tensor", {r, readAAgain ? a : r}));
      return finish(b, "inplace");
    };
    ExecutorchBackendConfig c;
    c.studioMemoryAwareOrder = true;
    Program shared = lowered(build(false), c);
    const Method& m = shared.methods[0];
    QVERIFY(tensorNamed(m, "relu").slot->offset == tensorNamed(m, "mm").slot->offset);
    QVERIFY(tensorNamed(m, "add").slot->offset == tensorNamed(m, "relu").slot->offset);
    QVERIFY(analyzeMemoryPlan(m).overlapFree());
    Program kept = lowered(build(true), c);
    const Method& k = kept.methods[0];
    QVERIFY(tensorNamed(k, "relu").slot->offset != tensorNamed(k, "mm").slot->offset);
    QVERIFY(tensorNamed(k, "add").slot->offset == tensorNamed(k, "relu").slot->offset);
    QVERIFY(analyzeMemoryPlan(k).overlapFree());
    // Off: no result shares an argument's bytes.
    Program plain = lowered(build(false), ExecutorchBackendConfig{});
    QVERIFY(tensorNamed(plain.methods[0], "relu").slot->offset != tensorNamed(plain.methods[0], "mm").slot->offset);
    // Broadcasting: a [16, 1] argument is never written over by a [16, 16] result.
    GraphBuilder b;
    TensorRef x = b.input("x", F, {16, 16});
    TensorRef col = b.op("aten.mm.default", {x, b.parameter("w", F, {16, 1})});
    b.output(b.op("aten.mul.Tensor", {b.op("aten.mm.default", {x, x}), col}));
    Program bc = finish(b, "broadcast");
    const Method& bm = bc.methods[0];
    QCOMPARE(overwritableArgument(bm, bm.nodes.back()), bm.nodes.back().args[0]);
    QVERIFY(overwritableArgument(bm, bm.nodes.back()) != col.id);
  }

  void memoryAwareOrderInConfigAndPython() {
    auto c = configFromJson(R"({"studio_memory_aware_order": true})");
    QVERIFY(c.ok());
    QVERIFY(c->studioMemoryAwareOrder);
    QVERIFY(configToJson(*c).find("\"studio_memory_aware_order\": true") != std::string::npos);
    // ExecuTorch has no such field: Copy as Python says so in a comment, not as an argument.
    std::string py = configToPython(*c);
    QVERIFY(py.find("# studio_memory_aware_order=True: beyond ExecuTorch") != std::string::npos);
    QVERIFY(py.find("    studio_memory_aware_order") == std::string::npos);
    QVERIFY(configToPython(ExecutorchBackendConfig{}).find("studio_memory_aware_order") == std::string::npos);
  }

  // A symbol two inputs share (both operands' batch) is read, in to_executorch's program,
  // from the last input that has it: upstream's passes trace again, and each input's
  // binding of its sizes replaces the one before (einsum on a dynamic batch shows it).
  void aSymbolSharedByInputsIsReadFromTheLast() {
    GraphBuilder b;
    b.symbol("s0", 4, 2, 8);
    TensorRef x = b.input("x", F, {8, 3}, {"s0", ""});
    TensorRef y = b.input("y", F, {8, 5}, {"s0", ""});
    b.output(b.op("aten.relu.default", {x}));
    b.output(b.op("aten.relu.default", {y}));
    auto made = b.finish("two_inputs");
    QVERIFY2(made.ok(), made.ok() ? "" : made.error().message().c_str());
    Program p = std::move(made.value());
    Method& m = p.methods[0];
    test::symSizeFirst(m, m.inputs[0], 0, 4);
    PassOutcome o = passes::specProp()->run(p, ExecutorchBackendConfig{});
    QVERIFY(!o.failed);
    QVERIFY(o.changed);
    QCOMPARE(m.nodes[0].args[0], m.inputs[1]);
    QCOMPARE(std::get<int64_t>(m.values[m.nodes[0].args[1]].payload), int64_t{0});
    QVERIFY(!passes::specProp()->run(p, ExecutorchBackendConfig{}).changed);  // bound once
  }

  // ---- order and gating ----
  void passOrderIsExecuTorchs() {
    std::vector<std::string> names;
    for (const auto& p : defaultPasses()) names.push_back(p->name());
    const std::vector<std::string> expected = {
        "run_decompositions", "RemoveNonCoreAtenOpGraphAssertsPass", "EXIRATenDialectVerifier", "remove_unused_parameters_pass",
        "ReplaceViewOpsWithViewCopyOpsPass", "SymToTensorPass", "RemoveNoopPass", "PruneEmptyTensorsPass", "RemoveToCopyPass",
        "FoldRedundantDequantizeQuantizePass", "RemoveMixedTypeOperators", "MemoryFormatOpsPass", "XnnpackPartitioner", "to_backend", "QuantFusionPass", "ConstantPropPass", "ReinplacePass",
        "WeightsToOutputsPass", "UnsafeRemoveAutoFunctionalizedPass", "InsertWriteBackForBuffersPass",
        "InitializedMutableBufferPass", "LegalizePortableDimOrderPass", "SpecPropPass", "PropagateDevicePass", "EdgeToBackendOpsPass",
        "RemoveGraphAssertsPass", "NormalizeViewCopyBasePass", "DeadCodeEliminationPass",
        "ReplaceViewCopyWithViewPass", "SymShapeEvalPass", "ToOutVarPass", "ExternalConstantsPass", "MemoryAwareOrderPass",
        "MemoryPlanningPass"};
    QCOMPARE(names, expected);
    ExecutorchBackendConfig c;
    QVERIFY(!passes::quantFusion()->enabled(c));
    QVERIFY(!passes::constantProp()->enabled(c));
    QVERIFY(!passes::reinplace()->enabled(c));
    c.reinplaceExtraOps = {"aten::index_copy"};
    QVERIFY(passes::reinplace()->enabled(c));  // reinplace_extra_ops alone turns it on, as in to_executorch
    QVERIFY(!passes::partition()->enabled(c));  // to_edge alone unless the config names a partitioner
    c.partitioners.push_back(PartitionerSpec{});
    QVERIFY(passes::partition()->enabled(c));
  }
};

QTEST_GUILESS_MAIN(TestPasses)
#include "tst_passes.moc"
