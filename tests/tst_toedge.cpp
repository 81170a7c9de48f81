// to_edge on torch.export programs: run_decompositions (in-place operators
// made functional, non-core operators decomposed the way PyTorch's table
// does), the ATen dialect check that names what it cannot lower, and the
// passes that only ATen-dialect programs get. The conformance harness
// compares whole programs with ExecuTorch's own to_edge; these tests pin the
// individual rules and the failure messages.
#include <QtTest>

#include "engine/formats/Pt2Reader.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/Executable.h"
#include "engine/lowering/decompositions/Decomposition.h"
#include "engine/lowering/GraphText.h"
#include "engine/lowering/Pipeline.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"
#include "engine/run/Interpreter.h"
#include "engine/samples/GraphBuilder.h"
#include "engine/lowering/Emitter.h"
#include "tests/TestSupport.h"
#include "tests/support/Pt2Samples.h"
#include "tests/support/ZipWriter.h"

using namespace lstudio;

namespace {

constexpr ScalarType F = ScalarType::Float;

std::vector<std::string> ops(const Method& m) {
  std::vector<std::string> out;
  for (const Node& n : m.nodes)
    if (n.kind == NodeKind::Kernel && n.op >= 0) out.push_back(m.operators[n.op].fullName());
  return out;
}

/// x -> relu(x) -> output, with the relu node then turned into `op` (same
/// single argument `self`): a way to put a non-core ATen call in a graph.
Program unary(const std::string& op, bool onBuffer = false) {
  GraphBuilder b;
  b.at("model.py", 7, "forward", "return f(x)");
  TensorRef x = onBuffer ? b.buffer("state", F, {2, 3}) : b.input("x", F, {2, 3});
  TensorRef y = b.op("aten.relu.default", {x});
  b.output(y);
  auto p = b.finish("unary");
  if (!p) qFatal("%s", p.error().message().c_str());
  Method& m = p.value().methods[0];
  OperatorRef ref = operatorFromTarget(op);
  m.operators[m.nodes[0].op] = ref;
  m.nodes[0].target = "torch.ops." + op;
  return std::move(p.value());
}

/// relu(x) on x: float32[s0 <= 16, 8].
Program symbolicRelu() {
  GraphBuilder b;
  b.symbol("s0", 5, 2, 16);
  TensorRef x = b.input("x", F, {16, 8}, {"s0", ""});
  b.output(b.op("aten.relu.default", {x}));
  auto made = b.finish("one");
  if (!made) qFatal("%s", made.error().message().c_str());
  return std::move(made.value());
}

const PassRecord* record(const Pipeline& p, const std::string& name) {
  for (const PassRecord& r : p.records())
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

class TestToEdge : public QObject {
  Q_OBJECT
 private slots:
  // torch.cond as torch.export saves it: the branches are graphs of their own,
  // lowered like the method, planned before it (its tensors go past the
  // largest branch arena) and emitted as ExecuTorch's _emit_cond lays them
  // out. The conformance harness compares a real cond program byte for byte.
  void condBranchesAreLoweredPlannedAndInlined() {
    std::string zip = test::zipBytes(test::archiveRecords(test::condProgramJson(), test::weightsConfig(), test::floats({1, 2, 3, 4})));
    auto read = readExport(MappedFile::fromBytes("cond.pt2", zip.data(), zip.size()));
    QVERIFY2(read, read ? "" : read.error().message().c_str());
    const Method& m = read->methods[0];
    QCOMPARE(m.subgraphs.size(), size_t(2));
    QCOMPARE(m.nodes.size(), size_t(3));
    QCOMPARE(m.nodes[2].kind, NodeKind::Cond);
    QCOMPARE(m.nodes[2].args.size(), size_t(3));  // pred, x, w
    QCOMPARE(m.subgraphs[1].name, std::string("false_graph_0"));
    QCOMPARE(m.subgraphs[1].inputs.size(), size_t(2));
    ExecutorchBackendConfig config;
    config.memoryPlanning.algorithms = {"et-greedy"};
    Pipeline p(std::make_shared<const Program>(std::move(read.value())), config);
    p.runToEnd();
    QVERIFY2(!p.failed(), p.records().back().diagnostics.empty() ? "" : p.records().back().diagnostics[0].message.c_str());
    const Method& low = p.current()->methods[0];
    QCOMPARE(ops(low.subgraphs[1]), (std::vector<std::string>{"aten::cos.out", "aten::mul.out"}));
    uint64_t branchArena = 0;
    for (const Method& b : low.subgraphs) {
      QCOMPARE(b.nonConstBufferSizes.size(), size_t(2));
      branchArena = std::max<uint64_t>(branchArena, static_cast<uint64_t>(b.nonConstBufferSizes[1]));
      for (ValueId in : b.inputs) QVERIFY(!b.values[in].tensor().slot);  // the caller's operands
      QVERIFY(b.values[b.outputs[0]].tensor().slot);
    }
    QCOMPARE(branchArena, uint64_t(32));  // cos and mul_1, 16 bytes each, alive together
    size_t planned = 0;
    for (const Value& v : low.values)
      if (const TensorSpec* t = v.tensorIf(); t && t->slot) {
        QVERIFY2(t->slot->offset >= branchArena, v.name.c_str());
        ++planned;
      }
    QCOMPARE(planned, size_t(4));  // x, sum, gt, the cond's result
    auto pte = emitProgram(*p.current(), config);
    QVERIFY2(pte, pte ? "" : pte.error().message().c_str());
    const Method& e = pte->methods[0];
    std::vector<NodeKind> kinds;
    for (const Node& n : e.nodes) kinds.push_back(n.kind);
    using K = NodeKind;
    QCOMPARE(kinds, (std::vector<NodeKind>{K::Kernel, K::Kernel, K::JumpFalse, K::Kernel, K::Move, K::JumpFalse, K::Kernel,
                                           K::Kernel, K::Move}));
    QCOMPARE(e.nodes[2].jumpTarget, int64_t(6));  // past the true branch and the jump that ends it
    QCOMPARE(e.nodes[5].jumpTarget, int64_t(9));  // the end
    QCOMPARE(e.values[e.nodes[5].args[0]].kind(), ValueKind::Bool);
    QVERIFY(!std::get<bool>(e.values[e.nodes[5].args[0]].payload));
    QCOMPARE(e.nodes[4].args[1], e.outputs[0]);  // both branches move their result to the cond's
    QCOMPARE(e.nodes[8].args[1], e.outputs[0]);
    // The branch taken follows the predicate.
    auto runOn = [&](std::vector<float> x) -> std::vector<float> {
      run::RunOptions o;
      run::HostValue in;
      in.kind = ValueKind::Tensor;
      in.sizes = {4};
      in.bytes.resize(16);
      std::memcpy(in.bytes.data(), x.data(), 16);
      o.inputs.push_back(in);
      auto r = run::runProgram(pte.value(), o);
      if (!r) qFatal("%s", r.error().message().c_str());
      std::vector<float> out(4);
      std::memcpy(out.data(), r->outputs[0].bytes.data(), 16);
      return out;
    };
    QCOMPARE(runOn({1, 2, 3, 4}), (std::vector<float>{1, 4, 9, 16}));  // x * w
    std::vector<float> negative = runOn({-1, -2, -3, -4});
    for (int i = 0; i < 4; ++i) QCOMPARE(negative[i], static_cast<float>(std::cos(-(i + 1.0f))) * 2.0f);
  }

  // torch's map and scan as torch.export saves them: their graphs are lowered
  // like the method, planned on their own with their inputs planned
  // (ExecuTorch's alloc_graph_input=True for them) and emitted as the loops
  // ExecuTorch's _emit_map and _emit_scan lay out; the interpreter runs them.
  // The conformance harness compares real map and scan programs byte for byte.
  void mapAndScanBecomeExecuTorchsLoops() {
    auto lowerAndEmit = [](const std::string& json, const char* name) -> Program {
      std::string zip = test::zipBytes(test::archiveRecords(json, test::weightsConfig(), test::floats({1, 2, 3, 4})));
      auto read = readExport(MappedFile::fromBytes(name, zip.data(), zip.size()));
      if (!read) qFatal("%s", read.error().message().c_str());
      ExecutorchBackendConfig config;
      config.memoryPlanning.algorithms = {"et-greedy"};
      Pipeline p(std::make_shared<const Program>(std::move(read.value())), config);
      p.runToEnd();
      if (p.failed()) qFatal("%s failed", name);
      auto pte = emitProgram(*p.current(), config);
      if (!pte) qFatal("%s", pte.error().message().c_str());
      return std::move(pte.value());
    };
    auto tensor = [](std::vector<int64_t> sizes, std::vector<float> x) {
      run::HostValue v;
      v.kind = ValueKind::Tensor;
      v.sizes = std::move(sizes);
      v.bytes.resize(x.size() * 4);
      std::memcpy(v.bytes.data(), x.data(), v.bytes.size());
      return v;
    };
    auto floatsOf = [](const run::HostValue& v) {
      std::vector<float> f(v.bytes.size() / 4);
      std::memcpy(f.data(), v.bytes.data(), v.bytes.size());
      return f;
    };
    const std::vector<float> rows = {0.5f, -1, 2, 0.25f, 3, -0.5f, 1, 1.5f, -2, 0, 0.75f, 4};
    const std::vector<float> w = {1, 2, 3, 4}, y = {10, 20, 30, 40};
    {
      std::string zip = test::zipBytes(test::archiveRecords(test::mapProgramJson(), test::weightsConfig(), test::floats({1, 2, 3, 4})));
      auto read = readExport(MappedFile::fromBytes("map.pt2", zip.data(), zip.size()));
      QVERIFY2(read, read ? "" : read.error().message().c_str());
      const Node& map = read->methods[0].nodes.at(0);
      QCOMPARE(map.kind, NodeKind::Map);
      QCOMPARE(map.argNames, (std::vector<std::string>{"xs", "operands", "operands"}));
      QCOMPARE(read->methods[0].subgraphs.at(0).inputs.size(), size_t(3));
    }
    Program map = lowerAndEmit(test::mapProgramJson(), "map.pt2");
    const Method& m = map.methods[0];
    // _emit_map: sym_size, then per row select_copy, the body, et_copy_index, the count, a jump back to the select.
    QCOMPARE(ops(m), (std::vector<std::string>{"aten::sym_size.int", "aten::select_copy.int_out", "aten::sin.out",
                                               "aten::mul.out", "aten::add.out", "executorch_prim::et_copy_index.tensor",
                                               "executorch_prim::add.Scalar", "executorch_prim::eq.Scalar",
                                               "executorch_prim::sub.Scalar"}));
    QCOMPARE(m.nodes.at(8).kind, NodeKind::JumpFalse);
    QCOMPARE(m.nodes.at(8).jumpTarget, int64_t(1));
    // The stacked result grows one row per iteration: DYNAMIC_BOUND; the result is
    // numbered first, then the index and the count (as ExecuTorch numbers them).
    const ValueId stacked = m.outputs.at(0);
    QCOMPARE(m.values[stacked].tensor().dynamism, ShapeDynamism::DynamicBound);
    QCOMPARE(m.nodes[5].args, (std::vector<ValueId>{stacked, m.nodes[4].args.back(), stacked + 1}));
    QCOMPARE(m.nodes[0].args.back(), stacked + 2);
    // The body's arena holds its row, its operands' placeholders and its results;
    // the method's tensors go after it.
    for (ValueId in : m.inputs) QVERIFY(m.values[in].tensor().slot->offset >= 64);
    run::RunOptions o;
    o.inputs = {tensor({3, 4}, rows), tensor({4}, y)};
    auto r = run::runProgram(map, o);
    QVERIFY2(r, r ? "" : r.error().message().c_str());
    QCOMPARE(r->outputs.at(0).sizes, (std::vector<int64_t>{3, 4}));
    std::vector<float> got = floatsOf(r->outputs[0]);
    for (size_t i = 0; i < rows.size(); ++i) QCOMPARE(got[i], std::sin(rows[i]) * w[i % 4] + y[i % 4]);

    Program scan = lowerAndEmit(test::scanProgramJson(), "scan.pt2");
    const Method& s = scan.methods[0];
    // _emit_scan: copy_ of init into the carry before the loop; after the body the
    // carry is copied back and y stacked.
    QCOMPARE(ops(s), (std::vector<std::string>{"aten::sym_size.int", "aten::copy_", "aten::select_copy.int_out",
                                               "aten::mul.out", "aten::add.out", "aten::sin.out", "aten::copy_",
                                               "executorch_prim::et_copy_index.tensor", "executorch_prim::add.Scalar",
                                               "executorch_prim::eq.Scalar", "executorch_prim::sub.Scalar"}));
    QCOMPARE(s.nodes.at(10).jumpTarget, int64_t(2));
    QCOMPARE(s.values[s.outputs[0]].tensor().dynamism, ShapeDynamism::Static);  // the carry
    QCOMPARE(s.values[s.outputs[1]].tensor().dynamism, ShapeDynamism::DynamicBound);
    o.inputs = {tensor({4}, {0, 1, 2, 3}), tensor({3, 4}, rows)};
    auto rs = run::runProgram(scan, o);
    QVERIFY2(rs, rs ? "" : rs.error().message().c_str());
    std::vector<float> h = {0, 1, 2, 3}, ys;
    for (int t = 0; t < 3; ++t)
      for (int i = 0; i < 4; ++i) {
        h[i] = rows[t * 4 + i] * w[i] + h[i];
        ys.push_back(std::sin(h[i]));
      }
    QCOMPARE(floatsOf(rs->outputs.at(0)), h);
    QCOMPARE(floatsOf(rs->outputs.at(1)), ys);
  }

  // linear.pt2 is what torch.export.save writes for an nn.Linear on a 1-d
  // input: upstream's run_decompositions makes it view, permute, addmm, view.
  void linearFixtureDecomposesAsUpstream() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto imported = readExportFile(test::fixture("pt2/linear.pt2").toStdString());
    QVERIFY(imported.ok());
    QVERIFY(isAtenDialect(imported.value()));
    Pipeline p(std::make_shared<const Program>(std::move(imported.value())), ExecutorchBackendConfig{});
    QVERIFY(p.runTo("run_decompositions"));
    const Method& m = p.current()->methods[0];
    const std::vector<std::string> expected = {"aten::view.default", "aten::permute.default", "aten::addmm.default",
                                               "aten::view.default"};
    QCOMPARE(ops(m), expected);
    // The node's own result keeps its name and spec; the source line carries over.
    QCOMPARE(m.values[m.outputs[0]].name, std::string("linear"));
    QVERIFY(!m.nodes[2].meta.stackTrace.empty());
    QVERIFY(m.values[m.nodes[1].outputs[0]].tensor().requiresGrad);  // permute of a parameter
    p.runToEnd();
    QVERIFY(!p.failed());
    std::vector<std::string> lowered = ops(p.current()->methods[0]);
    QVERIFY(std::find(lowered.begin(), lowered.end(), "aten::addmm.out") != lowered.end());
    for (const auto& o : lowered) QVERIFY2(o.find("linear") == std::string::npos, o.c_str());
  }

  // ATen's reshape views a contiguous tensor with the shape as given (-1 kept) and a strided
  // one its strides allow with the shape inferred: upstream's pvt_v2 has view_copy [1, 32, 4]
  // for reshape(1, 32, -1) of a channels-last tensor, where XNNPACK's reshape reads it.
  // contiguous(channels_last) of a contiguous tensor is a channels-last clone (it was dropped).
  void reshapeInfersTheSizeOfAStridedView() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {1, 8, 2, 2});
    TensorRef nhwc = b.op("aten.contiguous.default", {x, int64_t(2)});  // channels_last
    b.output(b.op("aten.reshape.default", {nhwc, std::vector<int64_t>{1, 8, -1}}));
    b.output(b.op("aten.reshape.default", {x, std::vector<int64_t>{1, 8, -1}}));
    auto prog = b.finish("reshapes");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    Program p = std::move(prog.value());
    auto out = passes::runDecompositions()->run(p, {});
    QVERIFY(!out.failed);
    const Method& m = p.methods[0];
    QCOMPARE(ops(m), (std::vector<std::string>{"aten::clone.default", "aten::view.default", "aten::view.default"}));
    QCOMPARE(passes::numberOf(m, m.nodes[0].args[1]).value_or(-1), 2.0);  // memory_format channels_last
    auto sizes = [&](const Node& n) {
      std::vector<int64_t> v;
      for (ValueId i : std::get<IntList>(m.values[n.args[1]].payload).items) v.push_back(int64_t(*passes::numberOf(m, i)));
      return v;
    };
    QCOMPARE(sizes(m.nodes[1]), (std::vector<int64_t>{1, 8, 4}));   // strided: inferred
    QCOMPARE(sizes(m.nodes[2]), (std::vector<int64_t>{1, 8, -1}));  // contiguous: as given
  }

  void siluBecomesSigmoidTimesInput() {
    Program p = unary("aten.silu.default");
    auto out = passes::runDecompositions()->run(p, {});
    QVERIFY(!out.failed);
    const Method& m = p.methods[0];
    QCOMPARE(ops(m), (std::vector<std::string>{"aten::sigmoid.default", "aten::mul.Tensor"}));
    QCOMPARE(m.nodes[1].args[0], m.inputs[0]);            // x * sigmoid(x), in that order
    QCOMPARE(m.nodes[1].args[1], m.nodes[0].outputs[0]);
    QCOMPARE(m.nodes[1].outputs[0], m.outputs[0]);        // the result is still the output,
    QCOMPARE(m.values[m.outputs[0]].name, std::string("relu"));  // under its name
    // Values are in traced order: input, sigmoid, the result.
    QVERIFY(m.inputs[0] < m.nodes[0].outputs[0] && m.nodes[0].outputs[0] < m.outputs[0]);
  }

  // An in-place operator on an intermediate becomes functional; on a buffer it
  // also becomes a buffer mutation output, first, as functionalization makes it.
  void inPlaceOnBufferBecomesMutationOutput() {
    Program p = unary("aten.relu_.default", true);
    auto out = passes::runDecompositions()->run(p, {});
    QVERIFY(!out.failed);
    const Method& m = p.methods[0];
    QCOMPARE(ops(m), std::vector<std::string>{"aten::relu.default"});
    QCOMPARE(m.signature.outputs.size(), size_t(2));
    QCOMPARE(m.signature.outputs[0].kind, OutputSpec::Kind::BufferMutation);
    QCOMPARE(m.signature.outputs[0].target, std::string("state"));
    QCOMPARE(m.signature.outputs[0].value, m.nodes[0].outputs[0]);
    QCOMPARE(m.outputs.size(), size_t(2));
  }

  void dropoutInTrainingFailsNamingTheNode() {
    Program p = unary("aten.dropout.default");
    Method& m = p.methods[0];
    Node& n = m.nodes[0];
    n.args.push_back(passes::addValue(m, Value{0.5, {}}));
    n.args.push_back(passes::addValue(m, Value{true, {}}));
    n.argNames = {"input", "p", "train"};
    auto out = passes::runDecompositions()->run(p, {});
    QVERIFY(out.failed);
    QCOMPARE(out.diagnostics.size(), size_t(1));
    const std::string& msg = out.diagnostics[0].message;
    QVERIFY2(msg.find("aten::dropout") != std::string::npos && msg.find("training") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("model.py:7") != std::string::npos, msg.c_str());
    QCOMPARE(out.diagnostics[0].node, 0);
  }

  // Arguments a file got wrong (a dimension out of range) fail the pass with a reason.
  void badArgumentsFailTheRuleNotTheProcess() {
    Program p = unary("aten.transpose.int");
    Method& m = p.methods[0];
    Node& n = m.nodes[0];
    n.args.push_back(passes::addValue(m, Value{int64_t(5), {}}));
    n.args.push_back(passes::addValue(m, Value{int64_t(0), {}}));
    n.argNames = {"self", "dim0", "dim1"};
    auto out = passes::runDecompositions()->run(p, {});
    QVERIFY(out.failed);
    QVERIFY2(out.diagnostics[0].message.find("out of range") != std::string::npos, out.diagnostics[0].message.c_str());
  }

  // A pass that throws (a case nobody foresaw) fails with the reason; the application stays.
  void aThrowingPassFails() {
    struct Throws : Pass {
      std::string name() const override { return "Throws"; }
      std::string description() const override { return "throws"; }
      PassOutcome run(Program&, const ExecutorchBackendConfig&) const override { throw std::out_of_range("vector::at"); }
    };
    Pipeline pipe(std::make_shared<const Program>(unary("aten.relu.default")), ExecutorchBackendConfig{},
                  {std::make_shared<Throws>()});
    pipe.runToEnd();
    QVERIFY(pipe.failed());
    QCOMPARE(pipe.records()[0].state, PassRecord::State::Failed);
    QVERIFY(pipe.records()[0].diagnostics[0].message.find("internal error in Throws: vector::at") != std::string::npos);
  }

  // An operator that is neither core ATen nor decomposed stops to_edge at the
  // ATen check, naming node, operator and source line: lowering it on would
  // write a program the runtime refuses.
  void nonCoreOperatorFailsTheAtenCheck() {
    Program p = unary("aten.multinomial.default");
    Pipeline pipe(std::make_shared<const Program>(std::move(p)), ExecutorchBackendConfig{});
    pipe.runToEnd();
    QVERIFY(pipe.failed());
    const PassRecord& r = pipe.records()[pipe.position() - 1];
    QCOMPARE(r.name, std::string("EXIRATenDialectVerifier"));
    QVERIFY(!r.diagnostics.empty());
    const std::string& msg = r.diagnostics[0].message;
    QVERIFY2(msg.find("aten::multinomial") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("not core ATen") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("node 'relu'") != std::string::npos && msg.find("model.py:7") != std::string::npos, msg.c_str());
    QCOMPARE(r.diagnostics[0].node, 0);
    // The way past names what works: no portable multinomial kernel, so listing it as an
    // exception would only move the failure; upstream's ETRecord is the way.
    QVERIFY2(msg.find("would not give a file ExecuTorch runs") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("generate_etrecord=True") != std::string::npos, msg.c_str());
    // masked_select has a portable out kernel: listing it is the way, and it works.
    Pipeline masked(std::make_shared<const Program>(unary("aten.masked_select.default")), ExecutorchBackendConfig{});
    masked.runToEnd();
    QVERIFY(masked.failed());
    const std::string advice = masked.records()[masked.position() - 1].diagnostics.at(0).message;
    QVERIFY2(advice.find("list it in edge_compile_config._core_aten_ops_exception_list") != std::string::npos &&
                 advice.find("aten::masked_select.out") != std::string::npos, advice.c_str());
    ExecutorchBackendConfig listed;
    listed.edgeCompile.coreAtenOpsExceptionList.push_back("aten::masked_select.default");
    Pipeline past(std::make_shared<const Program>(unary("aten.masked_select.default")), listed);
    past.runTo("EXIRATenDialectVerifier");
    QVERIFY(!past.failed());
  }

  // Custom operators pass the ATen check, as upstream's does.
  // ExecuTorch's verifier lets a few non-core ATen operators through: runtime
  // asserts (dropped later by RemoveGraphAssertsPass), size arithmetic, and
  // operators with kernels of their own. The studio's check does the same.
  void upstreamExceptionsPassTheAtenCheck() {
    for (const char* op : {"aten._assert_scalar.default", "aten.max.default", "aten.dequantize.self"}) {
      Program p = unary(op);
      QVERIFY2(!OpRegistry::builtin().isCoreAten(*OpRegistry::builtin().findByTarget(op)), op);
      auto out = passes::atenDialectVerifier()->run(p, ExecutorchBackendConfig{});
      QVERIFY2(!out.failed, op);
    }
    Program other = unary("aten.multinomial.default");
    QVERIFY(passes::atenDialectVerifier()->run(other, ExecutorchBackendConfig{}).failed);
  }

  void customOperatorPassesTheAtenCheck() {
    Program p = unary("my_ns.fused.default");
    auto out = passes::atenDialectVerifier()->run(p, {});
    QVERIFY(!out.failed);
  }

  // Mixed dtypes: add(int64 tensor, 0.5) gets the tensor cast to float32 first.
  void mixedTypesAreCast() {
    GraphBuilder b;
    TensorRef x = b.input("n", ScalarType::Long, {4});
    TensorRef y = b.op("aten.add.Tensor", {x, 0.5});
    b.output(y);
    auto built = b.finish("mixed");
    QVERIFY(built.ok());
    Program p = std::move(built.value());
    auto out = passes::removeMixedTypeOperators()->run(p, {});
    QVERIFY(out.changed);
    const Method& m = p.methods[0];
    QCOMPARE(ops(m), (std::vector<std::string>{"aten::_to_copy.default", "aten::add.Tensor"}));
    QCOMPARE(m.values[m.nodes[0].outputs[0]].tensor().dtype, F);
    QCOMPARE(m.nodes[1].args[0], m.nodes[0].outputs[0]);
  }

  // preserve_ops: the operator leaves the decomposition table and passes the
  // check; it lowers to its own out variant (upstream keeps aten.linear the same way).
  void preserveOpsKeepsTheOperatorWhole() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto imported = readExportFile(test::fixture("pt2/linear.pt2").toStdString());
    QVERIFY(imported.ok());
    ExecutorchBackendConfig c;
    c.edgeCompile.preserveOps = {"aten::linear"};
    Pipeline p(std::make_shared<const Program>(std::move(imported.value())), c);
    QVERIFY(p.runTo("run_decompositions"));
    QCOMPARE(ops(p.current()->methods[0]), std::vector<std::string>{"aten::linear.default"});
    p.runToEnd();
    QVERIFY2(!p.failed(), p.records()[p.position() - 1].diagnostics.empty()
                              ? "" : p.records()[p.position() - 1].diagnostics[0].message.c_str());
    QCOMPARE(ops(p.current()->methods[0]), std::vector<std::string>{"aten::linear.out"});
  }

  // _core_aten_ops_exception_list lets a listed operator through the check;
  // _check_ir_validity off skips the check altogether.
  void edgeCompileConfigRelaxesTheAtenCheck() {
    Program p = unary("aten.multinomial.default");
    ExecutorchBackendConfig listed;
    listed.edgeCompile.coreAtenOpsExceptionList = {"aten::multinomial"};
    QVERIFY(!passes::atenDialectVerifier()->run(p, listed).failed);
    QVERIFY(passes::atenDialectVerifier()->run(p, {}).failed);
    ExecutorchBackendConfig unchecked;
    unchecked.edgeCompile.checkIrValidity = false;
    Pipeline pipe(std::make_shared<const Program>(p), unchecked);
    QVERIFY(pipe.runTo("EXIRATenDialectVerifier"));
    QCOMPARE(record(pipe, "EXIRATenDialectVerifier")->state, PassRecord::State::Skipped);
  }

  // RemoveNoopPass: a slice_copy over the whole of its input is dropped (readers read
  // the input), a real slice stays; RemoveToCopyPass drops a _to_copy that changes nothing.
  void noopSlicesAndCopiesAreDropped() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {3, 8});
    TensorRef whole = b.op("aten.slice.Tensor", {x, int64_t(0), int64_t(0), int64_t(3)});
    TensorRef part = b.op("aten.slice.Tensor", {x, int64_t(1), int64_t(0), int64_t(4)});
    TensorRef same = b.op("aten._to_copy.default", {whole, None{}, None{}, None{}, None{}, false, None{}});
    b.output(b.op("aten.mul.Tensor", {same, int64_t(2)}));
    b.output(part);
    auto built = b.finish("noops");
    QVERIFY2(built.ok(), built.ok() ? "" : built.error().message().c_str());
    Program p = std::move(built.value());
    passes::replaceViewOpsWithViewCopyOps()->run(p, {});
    QVERIFY(passes::removeNoop()->run(p, {}).changed);
    QCOMPARE(ops(p.methods[0]), (std::vector<std::string>{"aten::slice_copy.Tensor", "aten::_to_copy.default", "aten::mul.Tensor"}));
    QVERIFY(passes::removeToCopy()->run(p, {}).changed);
    const Method& m = p.methods[0];
    QCOMPARE(ops(m), (std::vector<std::string>{"aten::slice_copy.Tensor", "aten::mul.Tensor"}));
    QCOMPARE(m.nodes[1].args[0], x.id);  // mul reads the input itself
  }

  // A write through a select or slice view is written back into the tensor it views
  // (select_scatter, decomposed to where as torch does; slice_scatter), and a view read
  // after its tensor was written is made again from the new value. Checked by running the
  // lowered program on iota inputs against the values worked out by hand.
  void writesThroughViewsReachTheirTensor() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {4, 5});
    TensorRef y = b.op("aten.clone.default", {x});
    TensorRef v = b.op("aten.select.int", {y, int64_t(0), int64_t(1)});  // v = y[1]
    TensorRef before = b.op("aten.mul.Tensor", {v, 2.0});               // read before the write
    TensorRef written = b.op("aten.add_.Tensor", {v, 1.0});             // y[1] += 1
    TensorRef after = b.op("aten.add.Tensor", {written, 1.0});          // reads the new row
    b.op("aten.mul_.Tensor", {y, 2.0});                                 // y *= 2: v is stale now
    TensorRef cols = b.op("aten.slice.Tensor", {y, int64_t(1), int64_t(1), int64_t(3)});
    b.op("aten.mul_.Tensor", {cols, 0.0});                              // y[:, 1:3] = 0
    b.output(y);
    b.output(before);
    b.output(after);
    b.output(v);
    auto built = b.finish("views");
    QVERIFY2(built.ok(), built.ok() ? "" : built.error().message().c_str());
    Pipeline p(std::make_shared<const Program>(std::move(built.value())), ExecutorchBackendConfig{});
    p.runToEnd();
    QVERIFY2(!p.failed(), p.failed() ? p.records().back().diagnostics.front().message.c_str() : "");
    std::vector<std::string> decomposed = ops(p.snapshot(1)->methods[0]);
    QVERIFY(std::count(decomposed.begin(), decomposed.end(), "aten::where.self") == 1);
    QVERIFY(std::count(decomposed.begin(), decomposed.end(), "aten::slice_scatter.default") == 1);
    auto e = executableSnapshot(p, p.records().size());
    QVERIFY2(e, e ? "" : e.error().message().c_str());
    auto r = run::runProgram(e.value());
    QVERIFY2(r, r ? "" : r.error().message().c_str());
    QCOMPARE(r.value().outputs.size(), size_t(4));
    auto at = [&](size_t o, size_t i) { return reinterpret_cast<const float*>(r.value().outputs[o].bytes.data())[i]; };
    auto xi = [](size_t i) { return static_cast<float>(run::iotaElement(F, i)); };
    for (size_t i = 0; i < 20; ++i) {
      size_t row = i / 5, col = i % 5;
      float want = (xi(i) + (row == 1 ? 1.0f : 0.0f)) * 2.0f;
      if (col == 1 || col == 2) want = 0;
      QCOMPARE(at(0, i), want);
    }
    for (size_t j = 0; j < 5; ++j) {
      QCOMPARE(at(1, j), xi(5 + j) * 2.0f);
      QCOMPARE(at(2, j), xi(5 + j) + 2.0f);
      QCOMPARE(at(3, j), at(0, 5 + j));  // the view returned is the tensor's row after every write
    }
  }

  // _skip_dim_order: clone stays clone (no _clone_dim_order), and neither
  // dim-order pass runs.
  void skipDimOrderKeepsMemoryFormatOperators() {
    GraphBuilder b;
    TensorRef x = b.input("x", F, {2, 3});
    TensorRef y = b.op("aten.clone.default", {x});
    b.output(b.op("aten.relu.default", {y}));
    auto built = b.finish("clone");
    QVERIFY(built.ok());
    auto program = std::make_shared<const Program>(std::move(built.value()));
    Pipeline dimOrder(program, ExecutorchBackendConfig{});
    dimOrder.runToEnd();
    QVERIFY(!dimOrder.failed());
    QCOMPARE(ops(dimOrder.current()->methods[0]),
             (std::vector<std::string>{"dim_order_ops::_clone_dim_order.out", "aten::relu.out"}));
    ExecutorchBackendConfig skip;
    skip.edgeCompile.skipDimOrder = true;
    Pipeline kept(program, skip);
    kept.runToEnd();
    QVERIFY(!kept.failed());
    QCOMPARE(ops(kept.current()->methods[0]), (std::vector<std::string>{"aten::clone.out", "aten::relu.out"}));
    QCOMPARE(record(kept, "MemoryFormatOpsPass")->state, PassRecord::State::Skipped);
    QCOMPARE(record(kept, "LegalizePortableDimOrderPass")->state, PassRecord::State::Skipped);
  }

  // The ATen-only passes are not in the timeline of an edge program or a .pte.
  // Two linears on [2, s0, 8] (a dynamic sequence): each spells its flattened
  // size as torch traces it, from one sym_size.int call per symbol at the start
  // of the graph and one mul per expression, shared by both; the lowered
  // program computes them at run time (the prim ops get their result as last
  // argument) and runs at a size below the bound.
  void symbolicSizesAreComputedOncePerExpression() {
    GraphBuilder b;
    b.symbol("s0", 5, 2, 16);
    TensorRef x = b.input("x", F, {2, 16, 8}, {"", "s0", ""});
    TensorRef w1 = b.parameter("up.weight", F, {8, 8}), b1 = b.parameter("up.bias", F, {8});
    TensorRef w2 = b.parameter("down.weight", F, {4, 8}), b2 = b.parameter("down.bias", F, {4});
    TensorRef h = b.op("aten.linear.default", {x, w1, b1});
    b.output(b.op("aten.linear.default", {b.op("aten.relu.default", {h}), w2, b2}));
    auto made = b.finish("two_linears");
    QVERIFY2(made.ok(), made.ok() ? "" : made.error().message().c_str());
    Pipeline p(std::make_shared<const Program>(std::move(made.value())), ExecutorchBackendConfig{});
    QVERIFY(p.runTo("run_decompositions"));
    const Method& m = p.current()->methods[0];
    const std::vector<std::string> got = ops(m);
    QCOMPARE(got.front(), std::string("aten::sym_size.int"));
    QCOMPARE(std::count(got.begin(), got.end(), "aten::sym_size.int"), 1L);
    QCOMPARE(std::count(got.begin(), got.end(), "_operator::mul.default"), 1L);  // 2 * s0, read twice
    QCOMPARE(std::count(got.begin(), got.end(), "aten::addmm.default"), 2L);
    const Node& mul = m.nodes[1];
    QVERIFY(m.values[mul.outputs[0]].symbolic);
    QCOMPARE(std::get<int64_t>(m.values[mul.args[0]].payload), 2L);  // the number first, as torch multiplies
    QCOMPARE(mul.args[1], m.nodes[0].outputs[0]);
    p.runToEnd();
    QVERIFY(!p.failed());
    const Method& lowered = p.current()->methods[0];
    QCOMPARE(ops(lowered).front(), std::string("aten::sym_size.int"));  // dead-code elimination kept it
    auto exe = executableSnapshot(p, p.records().size());
    QVERIFY2(exe.ok(), exe.ok() ? "" : exe.error().message().c_str());
    const Method& e = exe.value().methods[0];
    QCOMPARE(e.nodes[0].args.size(), size_t(3));  // self, dim, and the size it computes
    QCOMPARE(std::get<int64_t>(e.values[e.nodes[0].args[2]].payload), 0L);  // written as 0, as ExecuTorch writes it
    run::HostValue in;
    in.kind = ValueKind::Tensor;
    in.dtype = F;
    in.sizes = {2, 3, 8};
    in.bytes.assign(2 * 3 * 8 * sizeof(float), 0);
    run::RunOptions options;
    options.inputs = {in};
    auto r = run::runProgram(exe.value(), options);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r.value().outputs[0].sizes, (std::vector<int64_t>{2, 3, 4}));
  }

  // A size list that holds a symbolic size says nothing of its expression:
  // shape inference refuses it rather than guessing static sizes.
  void symbolicSizeListNeedsItsSpec() {
    Program p = symbolicRelu();
    Method& m = p.methods[0];
    const TensorRef x{m.inputs[0]};
    Value n{int64_t{5}, "sym_size"};
    n.symbolic = true;
    m.values.push_back(n);
    const ValueId sym = static_cast<ValueId>(m.values.size() - 1);
    auto names = [](const std::string& s) { return s; };
    auto refused = buildCall(m, "aten.view.default", {x, std::vector<SizeRef>{SizeRef{5, sym, "s0"}, SizeRef{8}}}, names);
    QVERIFY(!refused.ok());
    QVERIFY2(refused.error().found.find("symbolic size needs its spec") != std::string::npos, refused.error().found.c_str());
    auto inferred = buildCall(m, "aten.view.default", {x, std::vector<int64_t>{-1, 8}}, names);  // -1 from a symbolic size
    QVERIFY(!inferred.ok());
  }

  // A rule that spells a symbolic tensor's result sizes as numbers (its upper
  // bounds) would write a file that refuses any smaller input: the rewrite fails
  // naming the operator. Amounts that are not sizes (padding) and -1 pass.
  void staticSizesForASymbolicTensorFailTheRule() {
    Program p = symbolicRelu();
    Method& m = p.methods[0];
    const TensorRef x{m.inputs[0]};
    std::vector<Node> out;
    auto fresh = [](const std::string& s) { return s; };
    decompositions::Rewrite fixed(m, m.nodes[0], out, fresh);
    fixed.op("aten.view.default", {x, std::vector<int64_t>{16, 8}});
    QVERIFY(fixed.failure().has_value());
    QVERIFY2(fixed.failure()->find("aten::view with fixed sizes for a tensor of symbolic sizes") != std::string::npos,
             fixed.failure()->c_str());
    QVERIFY(out.empty());
    decompositions::Rewrite padded(m, m.nodes[0], out, fresh);
    const std::vector<TensorSpec> paddedSpec{decompositions::denseSpec(F, {16, 10}, {"s0", ""})};
    padded.op("aten.constant_pad_nd.default", {x, std::vector<int64_t>{1, 1}, 0.0}, &paddedSpec);
    padded.op("aten.expand.default", {x, std::vector<int64_t>{-1, 8}});  // -1 keeps the symbolic size
    QVERIFY2(!padded.failure(), padded.failure() ? padded.failure()->c_str() : "");
    QCOMPARE(out.size(), size_t(2));
    QCOMPARE(m.values[out[1].outputs[0]].tensor().symbols[0], std::string("s0"));
  }

  // An Int the method reads at run time (item() of a position) is not a number a
  // rule may use: its payload is only the example's value.
  void aRunTimeIntIsNotANumberToARule() {
    Program p = symbolicRelu();
    Method& m = p.methods[0];
    const ValueId item = test::symbolicInt(m, "item", 0);
    Node& n = m.nodes[0];
    n.args.push_back(item);
    n.argNames.push_back("start");
    std::vector<Node> out;
    decompositions::SymbolicSizes sizes;
    decompositions::Rewrite r(m, n, out, [](const std::string& s) { return s; }, {}, &sizes);
    QVERIFY(!r.integer("start").has_value());
    QVERIFY(!r.number("start").has_value());
    auto start = r.sizeArg("start");
    QVERIFY(start && start->isSymbolic());
    QCOMPARE(start->symbolic, item);
    // start + 4 is one _operator.add, made once and found again by its expression.
    SizeRef end = r.add(*start, SizeRef{4});
    QVERIFY(end.isSymbolic());
    QCOMPARE(r.add(*start, SizeRef{4}).symbolic, end.symbolic);
    QCOMPARE(out.size(), size_t(1));
    QCOMPARE(m.operators[out[0].op].fullName(), std::string("_operator::add.default"));
    QCOMPARE(r.add(*start, SizeRef{0}).symbolic, item);  // x + 0 is x
  }

  // add.Tensor(x, n) with n a SymInt: SymToTensorPass makes n a 0-dim int32 tensor
  // (scalar_tensor), which RemoveMixedTypeOperators then casts, as upstream's edge program has it.
  void aRunTimeIntWhereATensorIsExpectedBecomesScalarTensor() {
    Program p = symbolicRelu();
    Method& m = p.methods[0];
    const ValueId sym = test::symSizeFirst(m, m.inputs[0], 0, 5);
    Node& add = m.nodes[1];
    add.op = operatorIndexOf(m, OperatorRef{"aten::add", "Tensor"});
    add.target = "torch.ops.aten.add.Tensor";
    add.args = {m.inputs[0], sym, passes::addValue(m, Value{int64_t{1}, {}})};
    add.argNames = {"self", "other", "alpha"};
    Pipeline pipe(std::make_shared<const Program>(std::move(p)), ExecutorchBackendConfig{});
    QVERIFY(pipe.runTo("SymToTensorPass"));
    QCOMPARE(record(pipe, "SymToTensorPass")->state, PassRecord::State::Changed);
    const Method& after = pipe.current()->methods[0];
    QCOMPARE(ops(after), (std::vector<std::string>{"aten::sym_size.int", "aten::scalar_tensor.default", "aten::add.Tensor"}));
    const Node& made = after.nodes[1];
    QCOMPARE(after.values[made.outputs[0]].tensor().dtype, ScalarType::Int);
    QCOMPARE(made.args[0], after.nodes[0].outputs[0]);
    QCOMPARE(after.nodes[2].args[1], made.outputs[0]);
    pipe.runToEnd();
    QVERIFY2(!pipe.failed(), "the program lowers to the end");
    QCOMPARE(ops(pipe.snapshot(record(pipe, "RemoveMixedTypeOperators") - &pipe.records()[0] + 1)->methods[0])[2],
             std::string("aten::_to_copy.default"));
  }

  // detach_ writes nothing: the decompositions drop it and its readers read its input
  // (a loop of renames here once hung the pass).
  void detachInPlaceLeavesNothing() {
    Pipeline p(std::make_shared<const Program>(unary("aten.detach_.default")), ExecutorchBackendConfig{});
    QVERIFY(p.runTo("run_decompositions"));
    QVERIFY(!p.failed());
    const Method& m = p.current()->methods[0];
    QVERIFY(ops(m).empty());
    QCOMPARE(m.outputs[0], m.inputs[0]);
  }

  void edgeProgramsSkipTheAtenPasses() {
    Program p = unary("aten.relu.default");
    p.exportFacts.dialect = "EDGE";
    Pipeline edge(std::make_shared<const Program>(p), ExecutorchBackendConfig{});
    QVERIFY(!record(edge, "run_decompositions"));
    QVERIFY(!record(edge, "EXIRATenDialectVerifier"));
    QVERIFY(record(edge, "ReplaceViewOpsWithViewCopyOpsPass"));
    p.exportFacts.dialect = "TRAINING";
    Pipeline aten(std::make_shared<const Program>(p), ExecutorchBackendConfig{});
    QVERIFY(record(aten, "run_decompositions"));
    QVERIFY(record(aten, "RemoveMixedTypeOperators"));
  }
};

QTEST_GUILESS_MAIN(TestToEdge)
#include "tst_toedge.moc"
