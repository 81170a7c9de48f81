#include <cmath>
#include <cstring>
// XnnpackPartitioner in the studio: which nodes a partition takes, why the rest stay
// out, how groups merge (never into a cycle), the operators to_edge_transform_and_lower
// keeps whole for it, and the config that asks for it. Upstream's partitions are compared
// node for node by tests/conformance/partition.py.
#include <QtTest>

#include "engine/lowering/ConfigPython.h"
#include "engine/lowering/Executable.h"
#include "engine/lowering/Export.h"
#include "engine/lowering/Pipeline.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/delegates/XnnpackPayload.h"
#include "engine/formats/delegates/XnnpackWriter.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/run/Interpreter.h"
#include "engine/samples/GraphBuilder.h"

using namespace lstudio;

namespace {

/// x: float32[2, 16] -> linear -> relu -> linear -> (+ an int64 side: add of two int64 inputs, and argmax).
Program mixedProgram(bool weightIsInput = false) {
  GraphBuilder b;
  TensorRef x = b.input("x", ScalarType::Float, {2, 16});
  TensorRef w1 = weightIsInput ? b.input("w1", ScalarType::Float, {32, 16}) : b.parameter("fc1.weight", ScalarType::Float, {32, 16});
  TensorRef b1 = b.parameter("fc1.bias", ScalarType::Float, {32});
  TensorRef w2 = b.parameter("fc2.weight", ScalarType::Float, {8, 32});
  TensorRef b2 = b.parameter("fc2.bias", ScalarType::Float, {8});
  TensorRef i = b.input("i", ScalarType::Long, {2, 8});
  TensorRef h = b.op("aten.relu.default", {b.op("aten.linear.default", {x, w1, b1})});
  TensorRef y = b.op("aten.linear.default", {h, w2, b2});
  b.output(y);
  b.output(b.op("aten.add.Tensor", {i, i}));
  b.output(b.op("aten.argmax.default", {y, int64_t(1)}));
  auto p = b.finish("mixed");
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::move(p.value());
}

ExecutorchBackendConfig withXnnpack(PartitionerSpec spec = {}) {
  ExecutorchBackendConfig c;
  c.partitioners.push_back(spec);
  return c;
}

/// The program lowered to the end with XnnpackPartitioner, exported to `out` and read back.
Result<Program> exportedWithXnnpack(Program p, const std::string& out) {
  Pipeline pipeline(std::make_shared<const Program>(std::move(p)), withXnnpack());
  pipeline.runToEnd();
  if (pipeline.failed()) return Error{ErrorCode::Invalid, out, std::nullopt, "the pipeline", "every pass run", "a failed pass"};
  auto written = exportToFiles(*pipeline.current(), withXnnpack(), out, {});
  if (!written) return written.error();
  return openProgramFile(out);
}

/// The payload of `back`'s only delegate call, decoded; an error when it has other than one.
Result<xnnpack::Graph> solePayload(const Program& back, const std::string& out) {
  const Method& m = back.methods.at(0);
  if (m.delegates.size() != 1)
    return Error{ErrorCode::Invalid, out, std::nullopt, "one delegate call", "", std::to_string(m.delegates.size())};
  return xnnpack::decode(m.delegates[0].blob, out);
}

/// The payload's node types, in order ("XNNConv2d", ...).
std::vector<std::string> nodeTypes(const xnnpack::Graph& graph) {
  std::vector<std::string> types;
  for (const auto& n : graph.nodes) types.push_back(n.type);
  return types;
}

/// The program after the partitioner ran (or after to_edge when the config has none).
std::shared_ptr<const Program> partitioned(Program p, const ExecutorchBackendConfig& c) {
  Pipeline pipeline(std::make_shared<const Program>(std::move(p)), c);
  pipeline.runTo(c.partitioners.empty() ? "MemoryFormatOpsPass" : "XnnpackPartitioner");
  if (pipeline.failed()) {
    const auto& r = pipeline.records()[pipeline.position() - 1];
    qWarning("%s failed: %s", r.name.c_str(), r.diagnostics.empty() ? "" : r.diagnostics[0].message.c_str());
    return nullptr;
  }
  return pipeline.current();
}

const Node* nodeCalling(const Method& m, const std::string& op, int nth = 0) {
  for (const Node& n : m.nodes)
    if (n.op >= 0 && m.operators[n.op].name == op && nth-- == 0) return &n;
  return nullptr;
}

}  // namespace

class TestPartition : public QObject {
  Q_OBJECT

  /// `delegated` (run to its end) on iota inputs, each call through its lowered module, gives
  /// `outputs` outputs, each bit-identical to `program` lowered to the end without a partitioner.
  static void runsAsUndelegated(const Pipeline& delegated, Program program, size_t outputs) {
    Pipeline plain(std::make_shared<const Program>(std::move(program)), ExecutorchBackendConfig{});
    plain.runToEnd();
    QVERIFY(!plain.failed());
    auto withCalls = executableSnapshot(delegated, delegated.position());
    auto without = executableSnapshot(plain, plain.position());
    QVERIFY2(withCalls.ok(), withCalls.ok() ? "" : withCalls.error().message().c_str());
    QVERIFY(without.ok());
    auto a = run::runProgram(withCalls.value(), throughDelegates({}));
    auto b = run::runProgram(without.value(), {});
    QVERIFY2(a.ok(), a.ok() ? "" : a.error().message().c_str());
    QVERIFY(b.ok());
    QCOMPARE(a->outputs.size(), outputs);
    for (size_t i = 0; i < outputs; ++i) QCOMPARE(run::maxDifference(a->outputs[i], b->outputs.at(i)), 0.0);
  }

 private slots:
  // The float chain is one partition with its four weights; the int64 add and the argmax stay
  // out, each with the partitioner's reason.
  void takesTheFloatChainAndSaysWhyNot() {
    auto p = partitioned(mixedProgram(), withXnnpack());
    QVERIFY(p);
    const Method& m = p->methods[0];
    const Node* fc1 = nodeCalling(m, "aten::linear");
    const Node* relu = nodeCalling(m, "aten::relu");
    const Node* fc2 = nodeCalling(m, "aten::linear", 1);
    const Node* add = nodeCalling(m, "aten::add");
    const Node* argmax = nodeCalling(m, "aten::argmax");
    QVERIFY(fc1 && relu && fc2 && add && argmax);
    QCOMPARE(fc1->meta.delegationTag, std::string("tag0"));
    QCOMPARE(relu->meta.delegationTag, std::string("tag0"));
    QCOMPARE(fc2->meta.delegationTag, std::string("tag0"));
    QVERIFY(add->meta.delegationTag.empty());
    QVERIFY2(add->meta.notDelegatedBecause.find("int64 is not supported") != std::string::npos, add->meta.notDelegatedBecause.c_str());
    QVERIFY(argmax->meta.delegationTag.empty());
    QVERIFY2(argmax->meta.notDelegatedBecause.find("no config for argmax") != std::string::npos,
             argmax->meta.notDelegatedBecause.c_str());
    XnnpackPartitioning r = partitionForXnnpack(m, PartitionerSpec{});
    QCOMPARE(r.partitions.size(), size_t(1));
    QCOMPARE(r.partitions[0].constants.size(), size_t(4));  // both layers' weights and biases
    QCOMPARE(r.configOf[fc1 - m.nodes.data()], std::string("LinearConfig"));
    QCOMPARE(r.configOf[relu - m.nodes.data()], std::string("LinearConfig"));  // fused into the linear before it
  }

  // to_edge_transform_and_lower keeps linear whole for XNNPACK; to_edge alone decomposes it.
  void keepsItsOperatorsWhole() {
    auto kept = partitioned(mixedProgram(), withXnnpack());
    auto plain = partitioned(mixedProgram(), ExecutorchBackendConfig{});
    QVERIFY(kept && plain);
    QVERIFY(nodeCalling(kept->methods[0], "aten::linear"));
    QVERIFY(!nodeCalling(plain->methods[0], "aten::linear"));
    QVERIFY(nodeCalling(plain->methods[0], "aten::addmm"));
    // A linear whose weight is an input fails LinearConfig's check: it is decomposed, and the
    // addmm it becomes is left out because its weight is not a constant.
    auto input = partitioned(mixedProgram(true), withXnnpack());
    QVERIFY(input);
    const Method& m = input->methods[0];
    QVERIFY(nodeCalling(m, "aten::linear"));  // the second layer's, whose weight is a parameter
    QVERIFY(!nodeCalling(m, "aten::linear", 1));
    const Node* addmm = nodeCalling(m, "aten::addmm");
    QVERIFY(addmm);
    QVERIFY(addmm->meta.delegationTag.empty());
    QVERIFY2(addmm->meta.notDelegatedBecause.find("not a constant") != std::string::npos, addmm->meta.notDelegatedBecause.c_str());
  }

  // exp -> cumsum -> mul, and exp -> mul: merging {exp} and {mul} would make a partition
  // whose result leaves (to cumsum) and comes back, so they stay two (GroupBasedPartitioner:
  // ids from the output backwards, the lower absorbing the higher when it can).
  void neverMergesIntoACycle() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {4, 8});
    TensorRef e = b.op("aten.exp.default", {x});
    TensorRef c = b.op("aten.cumsum.default", {e, int64_t(1)});
    b.output(b.op("aten.mul.Tensor", {e, c}));
    auto prog = b.finish("cycle");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    auto p = partitioned(std::move(prog.value()), withXnnpack());
    QVERIFY(p);
    const Method& m = p->methods[0];
    QCOMPARE(nodeCalling(m, "aten::mul")->meta.delegationTag, std::string("tag0"));
    QCOMPARE(nodeCalling(m, "aten::exp")->meta.delegationTag, std::string("tag1"));
    QVERIFY(nodeCalling(m, "aten::cumsum")->meta.delegationTag.empty());

    // Two independent float regions merge into one although nothing connects them.
    GraphBuilder b2;
    TensorRef u = b2.input("u", ScalarType::Float, {4});
    TensorRef v = b2.input("v", ScalarType::Float, {4});
    b2.output(b2.op("aten.exp.default", {u}));
    b2.output(b2.op("aten.sin.default", {v}));
    auto apart = b2.finish("apart");
    QVERIFY(apart.ok());
    auto q = partitioned(std::move(apart.value()), withXnnpack());
    QVERIFY(q);
    QCOMPARE(partitionForXnnpack(q->methods[0], {}).partitions.size(), size_t(1));
    // per_op_mode: one partition per match, none merged.
    PartitionerSpec perOp;
    perOp.perOpMode = true;
    QCOMPARE(partitionForXnnpack(q->methods[0], perOp).partitions.size(), size_t(2));
  }

  // Checks of single operators: softmax off the last dim, mean.dim without keepdim, pow by 3.
  void opChecksGiveReasons() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {1, 4, 6, 6});
    b.output(b.op("aten._softmax.default", {x, int64_t(1), false}));
    b.output(b.op("aten.mean.dim", {x, std::vector<int64_t>{2, 3}, false}));
    b.output(b.op("aten.pow.Tensor_Scalar", {x, int64_t(3)}));
    b.output(b.op("aten._softmax.default", {x, int64_t(-1), false}));
    auto prog = b.finish("checks");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    auto p = partitioned(std::move(prog.value()), withXnnpack());
    QVERIFY(p);
    const Method& m = p->methods[0];
    auto why = [&](const std::string& op, int nth = 0) { return nodeCalling(m, op, nth)->meta.notDelegatedBecause; };
    QVERIFY2(why("aten::_softmax").find("dim must be the last dim, got dim = 1") != std::string::npos, why("aten::_softmax").c_str());
    QVERIFY2(why("aten::mean").find("keepdim=True") != std::string::npos, why("aten::mean").c_str());
    QVERIFY2(why("aten::pow").find("power == 2, got 3") != std::string::npos, why("aten::pow").c_str());
    QCOMPARE(nodeCalling(m, "aten::_softmax", 1)->meta.delegationTag, std::string("tag0"));
    // config_precisions without FP32: a float op has no precision left.
    PartitionerSpec quantOnly;
    quantOnly.configPrecisions = {"STATIC_QUANT"};
    XnnpackPartitioning r = partitionForXnnpack(m, quantOnly);
    const int softmax = int(nodeCalling(m, "aten::_softmax", 1) - m.nodes.data());
    QCOMPARE(r.partitionOf[softmax], -1);
    QVERIFY2(r.reasonOf[softmax].find("config_precisions") != std::string::npos, r.reasonOf[softmax].c_str());
  }

  // The config: `partitioner` in the JSON (a name or the options), Copy as Python building the
  // to_edge_transform_and_lower call, unknown partitioners refused.
  // to_backend: the partition becomes one executorch_call_delegate reading x and writing the
  // second linear's result; its lowered module keeps the three operators and the four weights,
  // which leave the method's inputs. Run through that module, the program computes what it
  // computed undelegated.
  void toBackendMakesOneCallPerPartition() {
    Pipeline pipeline(std::make_shared<const Program>(mixedProgram()), withXnnpack());
    QVERIFY(pipeline.runTo("to_backend"));
    QVERIFY(!pipeline.failed());
    const Method& m = pipeline.current()->methods[0];
    QCOMPARE(m.nodes.size(), size_t(3));
    QCOMPARE(m.nodes[0].kind, NodeKind::Delegate);
    QCOMPARE(m.nodes[0].name, std::string("executorch_call_delegate"));
    QVERIFY(nodeCalling(m, "aten::add") == &m.nodes[1]);
    QVERIFY(nodeCalling(m, "aten::argmax") == &m.nodes[2]);
    QCOMPARE(m.inputs.size(), size_t(2));  // x and i: the weights went with the partition
    QCOMPARE(m.delegates.size(), size_t(1));
    const Delegate& d = m.delegates[0];
    QCOMPARE(d.backendId, std::string("XnnpackBackend"));
    QVERIFY(d.original);
    const Method& lm = d.original->methods.at(0);
    QCOMPARE(lm.nodes.size(), size_t(3));
    QVERIFY(nodeCalling(lm, "aten::linear") && nodeCalling(lm, "aten::relu") && nodeCalling(lm, "aten::linear", 1));
    QCOMPARE(lm.signature.inputs.size(), size_t(5));
    QCOMPARE(lm.signature.inputs[4].kind, InputSpec::Kind::User);
    QCOMPARE(lm.signature.inputs[0].target, std::string("fc1.weight"));
    QCOMPARE(m.nodes[0].outputs.size(), size_t(1));
    QCOMPARE(m.nodes[0].args.size(), size_t(2));  // x, then the result
    QVERIFY(std::find(m.nodes[2].args.begin(), m.nodes[2].args.end(), m.nodes[0].outputs[0]) != m.nodes[2].args.end());

    pipeline.runToEnd();
    QVERIFY(!pipeline.failed());
    runsAsUndelegated(pipeline, mixedProgram(), 3);
  }

  // A number where add.Tensor takes a tensor (x + 0.5 after a linear): to_edge lifts it to a
  // constant tensor, which the delegate call reads as upstream's does; it stays a constant of
  // the method (a run reads 0.5, not an arena's leftover).
  void toBackendPassesLiftedScalars() {
    auto program = [] {
      GraphBuilder b;
      TensorRef x = b.input("x", ScalarType::Float, {2, 16});
      TensorRef w = b.parameter("fc.weight", ScalarType::Float, {8, 16});
      b.output(b.op("aten.add.Tensor", {b.op("aten.linear.default", {x, w}), 0.5}));
      auto p = b.finish("lifted");
      if (!p) qFatal("%s", p.error().message().c_str());
      return std::move(p.value());
    };
    Pipeline pipeline(std::make_shared<const Program>(program()), withXnnpack());
    QVERIFY(pipeline.runTo("to_backend"));
    const Method& m = pipeline.current()->methods[0];
    QCOMPARE(m.nodes.size(), size_t(1));
    QCOMPARE(m.nodes[0].kind, NodeKind::Delegate);
    QCOMPARE(m.nodes[0].args.size() - m.nodes[0].outputs.size(), size_t(2));  // x and the lifted 0.5
    const InputSpec* lifted = nullptr;
    for (const InputSpec& in : m.signature.inputs)
      if (in.kind == InputSpec::Kind::ConstantTensor) lifted = &in;
    QVERIFY(lifted);
    QCOMPARE(lifted->target.rfind("_lifted_tensor_constant", 0), size_t(0));
    pipeline.runToEnd();
    QVERIFY(!pipeline.failed());
    runsAsUndelegated(pipeline, program(), 1);
  }

  // Several partitioners are rounds, as to_edge_transform_and_lower calls to_backend once per
  // partitioner, each on the graph the one before lowered. A DYNAMIC_QUANT-only partitioner
  // first takes each linear (upstream's does, float or not) and refuses the hardswish, which its
  // decomposition round then decomposes for good (upstream decomposes per partitioner); the
  // default one takes the decomposed hardswish, between the first round's calls. Upstream's
  // partitions on this model, node for node: partition.py's dynamic+xnnpack rows.
  void partitionersRunInRounds() {
    auto program = [] {
      GraphBuilder b;
      TensorRef x = b.input("x", ScalarType::Float, {2, 16});
      TensorRef h = b.op("aten.linear.default", {x, b.parameter("fc1.weight", ScalarType::Float, {32, 16}),
                                                 b.parameter("fc1.bias", ScalarType::Float, {32})});
      h = b.op("aten.hardswish.default", {h});
      b.output(b.op("aten.linear.default", {h, b.parameter("fc2.weight", ScalarType::Float, {8, 32}),
                                            b.parameter("fc2.bias", ScalarType::Float, {8})}));
      auto p = b.finish("rounds");
      if (!p) qFatal("%s", p.error().message().c_str());
      return std::move(p.value());
    };
    ExecutorchBackendConfig c = withXnnpack(PartitionerSpec{"XnnpackPartitioner", {"DYNAMIC_QUANT"}});
    c.partitioners.push_back(PartitionerSpec{});
    Pipeline pipeline(std::make_shared<const Program>(program()), c);
    std::vector<std::string> names;
    for (const PassRecord& r : pipeline.records()) names.push_back(r.name);
    auto at = std::find(names.begin(), names.end(), "XnnpackPartitioner");
    QVERIFY(at != names.end() && names.end() - at > 4);
    QCOMPARE(std::vector<std::string>(at, at + 4),
             (std::vector<std::string>{"XnnpackPartitioner", "to_backend", "XnnpackPartitioner #2", "to_backend #2"}));

    QVERIFY(pipeline.runTo("to_backend"));
    const Method& first = pipeline.current()->methods[0];
    QCOMPARE(first.delegates.size(), size_t(2));
    QVERIFY(!nodeCalling(first, "aten::hardswish"));
    QVERIFY(nodeCalling(first, "aten::clamp"));
    QVERIFY(pipeline.runTo("to_backend #2"));
    const Method& m = pipeline.current()->methods[0];
    QCOMPARE(m.delegates.size(), size_t(3));
    QVERIFY(!nodeCalling(m, "aten::clamp"));
    const Method& middle = m.delegates[2].original->methods.at(0);
    QVERIFY(nodeCalling(middle, "aten::clamp", 1) && nodeCalling(middle, "aten::div"));
    pipeline.runToEnd();
    QVERIFY(!pipeline.failed());
    runsAsUndelegated(pipeline, program(), 1);

    // One partitioner again: one round.
    pipeline.setConfig(withXnnpack());
    for (const PassRecord& r : pipeline.records()) QVERIFY2(r.name.find(" #") == std::string::npos, r.name.c_str());
  }

  void partitionerConfig() {
    auto set = applySetting(ExecutorchBackendConfig{}, "partitioner=xnnpack");
    QVERIFY2(set.ok(), set.ok() ? "" : set.error().message().c_str());
    QCOMPARE(set.value().partitioners.size(), size_t(1));
    auto json = configFromJson(R"({"partitioner": [{"name": "XnnpackPartitioner", "per_op_mode": true,
                                   "config_precisions": ["FP32"]}]})");
    QVERIFY2(json.ok(), json.ok() ? "" : json.error().message().c_str());
    QVERIFY(json.value().partitioners[0].perOpMode);
    auto back = configFromJson(configToJson(json.value()));
    QVERIFY(back.ok());
    QVERIFY(back.value().partitioners == json.value().partitioners);
    auto other = configFromJson(R"({"partitioner": ["QnnPartitioner"]})");
    QVERIFY(!other.ok());
    QVERIFY2(other.error().message().find("partitioner[0].name") != std::string::npos, other.error().message().c_str());
    auto precision = configFromJson(R"({"partitioner": [{"name": "xnnpack", "config_precisions": ["INT4"]}]})");
    QVERIFY(!precision.ok());
    const std::string py = configToPython(json.value());
    QVERIFY2(py.find("XnnpackPartitioner(config_precisions=[ConfigPrecisionType.FP32], per_op_mode=True)") != std::string::npos,
             py.c_str());
    QVERIFY(py.find("to_edge_transform_and_lower(programs, partitioner=partitioner") != std::string::npos);

  }

  // Export writes XNNPACK's payload as upstream's preprocess does (byte for byte against
  // upstream: partition.py's `.pte identical` rows): the relu fused into the first linear as
  // its output clamp, both linears XNNFullyConnected reading x as external input 0 and
  // writing output 1, and the four weights as named data keyed by the SHA-256 of their bytes.
  void exportWritesTheXnnpackPayload() {
    QTemporaryDir dir;
    const std::string out = (dir.path() + "/out.pte").toStdString();
    auto back = exportedWithXnnpack(mixedProgram(), out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    const Method& m = back->methods.at(0);
    QCOMPARE(m.delegates.size(), size_t(1));
    QCOMPARE(m.delegates[0].backendId, std::string("XnnpackBackend"));
    auto graph = xnnpack::decode(m.delegates[0].blob, out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    QVERIFY(graph->hasHeader);
    QCOMPARE(graph->identifier, std::string("XN01"));
    QVERIFY(graph->problems.empty());
    QCOMPARE(graph->nodes.size(), size_t(2));
    for (const auto& n : graph->nodes) QCOMPARE(n.type, std::string("XNNFullyConnected"));
    QVERIFY(graph->nodes[0].outputMinMax.has_value());
    QCOMPARE(graph->nodes[0].outputMinMax->first, 0.0f);
    QVERIFY(!graph->nodes[1].outputMinMax.has_value());
    QCOMPARE(graph->numExterns, 2u);
    QCOMPARE(graph->inputIds.size(), size_t(1));
    QCOMPARE(graph->outputIds.size(), size_t(1));
    QCOMPARE(graph->constants.size(), size_t(5));  // the reserved slot and four weights
    QCOMPARE(back->namedData.size(), size_t(4));
    for (size_t k = 1; k < graph->constants.size(); ++k) {
      const auto& c = graph->constants[k];
      QCOMPARE(c.source, xnnpack::Constant::Source::NamedData);
      auto named = std::find_if(back->namedData.begin(), back->namedData.end(), [&](const NamedBlob& b) { return b.key == c.namedKey; });
      QVERIFY(named != back->namedData.end());
      QCOMPARE(named->data.size, c.size);
      QCOMPARE(xnnpack::sha256Hex(named->data.data, named->data.size), c.namedKey);
    }
    QCOMPARE(xnnpack::sha256Hex(reinterpret_cast<const uint8_t*>("abc"), 3),
             std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));  // FIPS 180-2's example
  }

  // conv -> batch norm -> relu -> max pool -> mean, as XNNPACK's preprocess writes it: the
  // batch norm folded into the convolution's weight and bias, the relu into its output
  // bound, the whole chain channels-last between one transpose in and one out.
  void exportWritesAChannelsLastConvolution() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {1, 3, 8, 8});
    TensorRef w = b.parameter("conv.weight", ScalarType::Float, {4, 3, 3, 3});
    TensorRef gamma = b.parameter("bn.weight", ScalarType::Float, {4}, {WeightInit::Kind::Constant, 2.0});
    TensorRef beta = b.parameter("bn.bias", ScalarType::Float, {4}, {WeightInit::Kind::Constant, 0.5});
    TensorRef mean = b.buffer("bn.running_mean", ScalarType::Float, {4}, {WeightInit::Kind::Constant, 0.25});
    TensorRef var = b.buffer("bn.running_var", ScalarType::Float, {4}, {WeightInit::Kind::Constant, 3.0});
    TensorRef conv = b.op("aten.convolution.default", {x, w, None{}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1},
                                                       std::vector<int64_t>{1, 1}, false, std::vector<int64_t>{0, 0}, int64_t(1)});
    std::vector<TensorRef> bn = b.call("aten._native_batch_norm_legit_no_training.default", {conv, gamma, beta, mean, var, 0.1, 1e-5});
    std::vector<TensorRef> pooled;
    if (!bn.empty())
      pooled = b.call("aten.max_pool2d.default",
                      {b.op("aten.relu.default", {bn[0]}), std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 2}});
    if (!pooled.empty()) b.output(b.op("aten.mean.dim", {pooled[0], std::vector<int64_t>{-1, -2}, true}));
    auto prog = b.finish("cnn");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    QCOMPARE(bn.size(), size_t(3));
    QCOMPARE(pooled.size(), size_t(1));
    std::string left;  // what the partitioner left out, and why
    const auto tagged = partitioned(prog.value(), withXnnpack());
    for (const Node& n : tagged->methods[0].nodes)
      if (!n.meta.notDelegatedBecause.empty()) left += n.name + ": " + n.meta.notDelegatedBecause + "; ";
    if (!left.empty()) qWarning("%s", left.c_str());
    QVERIFY(left.empty());
    QTemporaryDir dir;
    const std::string out = (dir.path() + "/out.pte").toStdString();
    auto back = exportedWithXnnpack(std::move(prog.value()), out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    auto graph = solePayload(back.value(), out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    QCOMPARE(nodeTypes(graph.value()), (std::vector<std::string>{"XNNStaticTranspose", "XNNConv2d", "XNNMaxPooling2d", "XNNGlobalAvgPooling2d",
                                              "XNNStaticTranspose"}));
    QCOMPARE(graph->nodes[0].debugHandle, 65535u);  // the layout copies the pass adds have no handle
    QVERIFY(graph->nodes[1].outputMinMax.has_value());
    QCOMPARE(graph->nodes[1].outputMinMax->first, 0.0f);
    auto value = [&](uint32_t id) { return graph->values.at(id); };
    QCOMPARE(value(graph->nodes[0].outputs[0]).dims, (std::vector<uint32_t>{1, 8, 8, 3}));  // NHWC
    QCOMPARE(value(graph->nodes[1].outputs[0]).dims, (std::vector<uint32_t>{1, 8, 8, 4}));
    QCOMPARE(value(graph->nodes[4].outputs[0]).dims, (std::vector<uint32_t>{1, 4, 1, 1}));  // back to NCHW
    QVERIFY(value(graph->nodes[4].outputs[0]).isOutput());
    // The conv's inputs: input, filter, bias. The bias is the batch norm's shift:
    // (0 - mean) * 1/sqrt(var + eps) * gamma + beta, in float32.
    QCOMPARE(graph->nodes[1].inputs.size(), size_t(3));
    const auto& bias = graph->constants.at(value(graph->nodes[1].inputs[2]).constantIndex);
    auto blob = std::find_if(back->namedData.begin(), back->namedData.end(), [&](const NamedBlob& nb) { return nb.key == bias.namedKey; });
    QVERIFY(blob != back->namedData.end());
    QCOMPARE(blob->data.size, uint64_t(16));
    float shift[4];
    std::memcpy(shift, blob->data.data, 16);
    const float expected = (0.0f - 0.25f) * (1.0f / std::sqrt(3.0f + float(1e-5))) * 2.0f + 0.5f;
    for (float f : shift) QCOMPARE(f, expected);
    QCOMPARE(value(graph->nodes[1].inputs[1]).dims, (std::vector<uint32_t>{4, 3, 3, 3}));  // filter [out, kh, kw, in]
  }

  // PT2E's static int8 linear (x -> q -> dq -> linear(dq, dq(w int8), bias) -> relu -> q -> dq):
  // the q/dq around the linear fold into its tensors' quantization (qint8 input, weight and
  // output, the bias requantized to int32 at scale input*weight); the q of the float input and
  // the final dq are conversions. Fails on a preprocess that refuses or skips quantization.
  void exportWritesAQuantizedLinear() {
    const double inScale = 0.0625, wScale = 0.01, outScale = 0.125;
    const int64_t inZp = 3, outZp = -128;
    const ScalarType i8 = ScalarType::Char;
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {2, 8});
    TensorRef bias = b.parameter("fc.bias", ScalarType::Float, {4}, {WeightInit::Kind::Pattern, 0, 0.37});
    TensorRef wq = b.buffer("_frozen_param0", i8, {4, 8}, {WeightInit::Kind::Pattern, 0, 127.0});
    auto qdq = [&](TensorRef t, double scale, int64_t zp) {
      TensorRef q = b.op("quantized_decomposed.quantize_per_tensor.default", {t, scale, zp, int64_t(-128), int64_t(127), i8});
      return b.op("quantized_decomposed.dequantize_per_tensor.default", {q, scale, zp, int64_t(-128), int64_t(127), i8});
    };
    TensorRef w = b.op("quantized_decomposed.dequantize_per_tensor.default", {wq, wScale, int64_t(0), int64_t(-127), int64_t(127), i8});
    TensorRef y = b.op("aten.linear.default", {qdq(x, inScale, inZp), w, bias});
    b.output(qdq(b.op("aten.relu.default", {y}), outScale, outZp));
    auto prog = b.finish("qlinear");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    std::vector<float> biasValues(4);
    {
      const Method& m = prog->methods[0];
      auto spec = std::find_if(m.signature.inputs.begin(), m.signature.inputs.end(),
                               [](const InputSpec& i) { return i.target == "fc.bias"; });
      QVERIFY(spec != m.signature.inputs.end());
      const TensorSpec& t = m.values[spec->value].tensor();
      QCOMPARE(t.dtype, ScalarType::Float);
      std::memcpy(biasValues.data(), t.data.data, 16);
    }
    QTemporaryDir dir;
    const std::string out = (dir.path() + "/out.pte").toStdString();
    auto back = exportedWithXnnpack(std::move(prog.value()), out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    auto graph = solePayload(back.value(), out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    QCOMPARE(nodeTypes(graph.value()), (std::vector<std::string>{"XNNConvert", "XNNFullyConnected", "XNNConvert"}));
    auto value = [&](uint32_t id) { return graph->values.at(id); };
    const auto& fc = graph->nodes[1];
    QVERIFY(fc.outputMinMax.has_value());  // the relu, fused
    QCOMPARE(fc.inputs.size(), size_t(3));
    const auto in = value(fc.inputs[0]), filter = value(fc.inputs[1]), b32 = value(fc.inputs[2]), result = value(fc.outputs[0]);
    QCOMPARE(xnnpack::datatypeName(in.datatype), std::string("qint8"));
    QCOMPARE(in.quant.scale, float(inScale));
    QCOMPARE(in.quant.zeroPoint, int32_t(inZp));
    QCOMPARE(in.id, graph->nodes[0].outputs[0]);  // what the first conversion wrote
    QCOMPARE(xnnpack::datatypeName(filter.datatype), std::string("qint8"));
    QCOMPARE(filter.quant.scale, float(wScale));
    QVERIFY(filter.constantIndex != 0);
    QCOMPARE(xnnpack::datatypeName(result.datatype), std::string("qint8"));
    QCOMPARE(result.quant.scale, float(outScale));
    QCOMPARE(result.quant.zeroPoint, int32_t(outZp));
    QCOMPARE(result.id, graph->nodes[2].inputs[0]);
    QVERIFY(value(graph->nodes[2].outputs[0]).isOutput());
    QCOMPARE(xnnpack::datatypeName(value(graph->nodes[2].outputs[0]).datatype), std::string("fp32"));
    // The bias: int32, scale input*weight, each value round(bias / scale) in float32.
    QCOMPARE(xnnpack::datatypeName(b32.datatype), std::string("qint32"));
    QCOMPARE(b32.quant.scale, float(inScale * wScale));
    const auto& c = graph->constants.at(b32.constantIndex);
    auto blob = std::find_if(back->namedData.begin(), back->namedData.end(), [&](const NamedBlob& nb) { return nb.key == c.namedKey; });
    QVERIFY(blob != back->namedData.end());
    QCOMPARE(blob->data.size, uint64_t(16));
    int32_t stored[4];
    std::memcpy(stored, blob->data.data, 16);
    for (size_t i = 0; i < 4; ++i)
      QCOMPARE(stored[i], int32_t(std::nearbyint(biasValues[i] * float(1.0 / (inScale * wScale)))));
    QVERIFY(std::any_of(std::begin(stored), std::end(stored), [](int32_t v) { return v != 0; }));
  }

  // After to_backend a delegate's results require grad when it reads a parameter, and the
  // retrace carries that on to their readers, but never to full_like's (autograd does not
  // track the *_like factories). Upstream's quantized ViT: full_like of an attention score.
  void likeFactoriesNeverRequireGrad() {
    const ScalarType i8 = ScalarType::Char;
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {2, 8});
    TensorRef bias = b.parameter("fc.bias", ScalarType::Float, {4});
    TensorRef wq = b.buffer("_frozen_param0", i8, {4, 8}, {WeightInit::Kind::Pattern, 0, 127.0});
    auto qdq = [&](TensorRef t) {
      TensorRef q = b.op("quantized_decomposed.quantize_per_tensor.default", {t, 0.05, int64_t(0), int64_t(-128), int64_t(127), i8});
      return b.op("quantized_decomposed.dequantize_per_tensor.default", {q, 0.05, int64_t(0), int64_t(-128), int64_t(127), i8});
    };
    TensorRef w = b.op("quantized_decomposed.dequantize_per_tensor.default", {wq, 0.01, int64_t(0), int64_t(-127), int64_t(127), i8});
    // fmod with a parameter: not XNNPACK's, and its result requires grad
    TensorRef angle = b.op("aten.fmod.Tensor", {x, b.parameter("p", ScalarType::Float, {2, 8})});
    TensorRef y = qdq(b.op("aten.linear.default", {qdq(angle), w, bias}));
    b.output(y);
    b.output(b.op("aten.full_like.default", {y, 0.0}));
    auto prog = b.finish("like");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    Pipeline pipeline(std::make_shared<const Program>(std::move(prog.value())), withXnnpack());
    pipeline.runTo("to_backend");
    QVERIFY(!pipeline.failed());
    const Method& m = pipeline.current()->methods[0];
    const Node* call = nullptr;
    for (const Node& n : m.nodes)
      if (n.kind == NodeKind::Delegate) call = &n;
    QVERIFY(call);
    QVERIFY(m.values[call->outputs.at(0)].tensor().requiresGrad);  // it reads fmod's result
    const Node* like = nodeCalling(m, "aten::full_like");
    QVERIFY(like);
    QVERIFY(!m.values[like->outputs.at(0)].tensor().requiresGrad);
  }

  // upsample_bilinear2d.vec, kept whole for XNNPACK, is a static bilinear resize in NHWC, its
  // size the result's and align_corners a flag.
  void exportWritesABilinearResize() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {1, 2, 4, 4});
    b.output(b.op("aten.upsample_bilinear2d.vec", {x, std::vector<int64_t>{8, 6}, true, None{}}));
    auto prog = b.finish("resize");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    QTemporaryDir dir;
    const std::string out = (dir.path() + "/out.pte").toStdString();
    auto back = exportedWithXnnpack(std::move(prog.value()), out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    auto graph = solePayload(back.value(), out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    QCOMPARE(nodeTypes(graph.value()), (std::vector<std::string>{"XNNStaticTranspose", "XNNStaticResizeBilinear2D", "XNNStaticTranspose"}));
    const auto& resize = graph->nodes[1];
    QCOMPARE(resize.flags, 0x8u);  // XNN_FLAG_ALIGN_CORNERS
    auto param = [&](const std::string& k) {
      for (const auto& [key, v] : resize.params)
        if (key == k) return v;
      return std::string();
    };
    QCOMPARE(param("new size"), std::string("8×6"));
    QCOMPARE(graph->values.at(resize.outputs[0]).dims, (std::vector<uint32_t>{1, 8, 6, 2}));  // NHWC
  }

  // InsertPadQDQPass: a zero pad of a dequantized tensor is written quantized (an implicit
  // q/dq pair after it), even when its input arrives as float32 (tiny_vit's window padding).
  void exportQuantizesAZeroPadOfADequantizedTensor() {
    const ScalarType i8 = ScalarType::Char;
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {1, 2, 4, 4});
    TensorRef q = b.op("quantized_decomposed.quantize_per_tensor.default", {x, 0.05, int64_t(1), int64_t(-128), int64_t(127), i8});
    TensorRef dq = b.op("quantized_decomposed.dequantize_per_tensor.default", {q, 0.05, int64_t(1), int64_t(-128), int64_t(127), i8});
    TensorRef pad = b.op("aten.constant_pad_nd.default", {dq, std::vector<int64_t>{1, 1}});
    b.output(b.op("aten.relu.default", {pad}));
    auto prog = b.finish("pad");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    QTemporaryDir dir;
    const std::string out = (dir.path() + "/out.pte").toStdString();
    auto back = exportedWithXnnpack(std::move(prog.value()), out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    auto graph = solePayload(back.value(), out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    const xnnpack::Node* padNode = nullptr;
    for (const auto& n : graph->nodes)
      if (n.type == "XNNStaticConstantPad") padNode = &n;
    QVERIFY(padNode);
    const auto result = graph->values.at(padNode->outputs[0]);
    QCOMPARE(xnnpack::datatypeName(result.datatype), std::string("qint8"));
    QCOMPARE(result.quant.scale, 0.05f);
    QCOMPARE(result.quant.zeroPoint, int32_t(1));
  }

  // float16 values stay float16 in the payload; a convolution's weight and bias are written
  // float32 (upstream forces them), converted exactly.
  void exportWritesFloat16() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Half, {1, 2, 4, 4});
    TensorRef w = b.parameter("conv.weight", ScalarType::Half, {3, 2, 1, 1}, {WeightInit::Kind::Constant, 0.5});
    TensorRef conv = b.op("aten.convolution.default", {x, w, None{}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{0, 0},
                                                       std::vector<int64_t>{1, 1}, false, std::vector<int64_t>{0, 0}, int64_t(1)});
    b.output(b.op("aten.mul.Tensor", {conv, conv}));
    auto prog = b.finish("half");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    QTemporaryDir dir;
    const std::string out = (dir.path() + "/out.pte").toStdString();
    auto back = exportedWithXnnpack(std::move(prog.value()), out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    auto graph = solePayload(back.value(), out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    const xnnpack::Node* conv2d = nullptr;
    const xnnpack::Node* mul = nullptr;
    for (const auto& n : graph->nodes) {
      if (n.type == "XNNConv2d") conv2d = &n;
      if (n.type == "XNNMultiply") mul = &n;
    }
    QVERIFY(conv2d && mul);
    QCOMPARE(xnnpack::datatypeName(graph->values.at(conv2d->inputs[0]).datatype), std::string("fp16"));
    QCOMPARE(xnnpack::datatypeName(graph->values.at(mul->outputs[0]).datatype), std::string("fp16"));
    const auto filter = graph->values.at(conv2d->inputs[1]);
    QCOMPARE(xnnpack::datatypeName(filter.datatype), std::string("fp32"));
    const auto& c = graph->constants.at(filter.constantIndex);
    auto blob = std::find_if(back->namedData.begin(), back->namedData.end(), [&](const NamedBlob& nb) { return nb.key == c.namedKey; });
    QVERIFY(blob != back->namedData.end());
    QCOMPARE(blob->data.size, uint64_t(6 * 4));
    float first;
    std::memcpy(&first, blob->data.data, 4);
    QCOMPARE(first, 0.5f);
  }

  // A partition the studio's XNNPACK preprocess cannot compile (an addmm with beta 2, which a
  // fully connected layer cannot express) is never written without its payload: export names
  // the node.
  void exportRefusesAPartitionItCannotCompile() {
    GraphBuilder b;
    TensorRef x = b.input("x", ScalarType::Float, {2, 8});
    TensorRef w = b.parameter("w", ScalarType::Float, {8, 4}), bias = b.parameter("b", ScalarType::Float, {4});
    b.output(b.op("aten.addmm.default", {bias, x, w, 2.0, 1.0}));
    auto prog = b.finish("beta");
    QVERIFY2(prog.ok(), prog.ok() ? "" : prog.error().message().c_str());
    Pipeline pipeline(std::make_shared<const Program>(std::move(prog.value())), withXnnpack());
    pipeline.runToEnd();
    QVERIFY(!pipeline.failed());
    QCOMPARE(pipeline.current()->methods[0].delegates.size(), size_t(1));
    QVERIFY(!pipeline.current()->methods[0].delegates[0].payloadError.empty());
    QTemporaryDir dir;
    auto written = exportToFiles(*pipeline.current(), withXnnpack(), (dir.path() + "/out.pte").toStdString(), {});
    QVERIFY(!written.ok());
    const std::string msg = written.error().message();
    QVERIFY2(msg.find("XNNPACK's preprocess") != std::string::npos && msg.find("aten::addmm") != std::string::npos, msg.c_str());
    QVERIFY(!QFile::exists(dir.path() + "/out.pte"));
  }
};

QTEST_MAIN(TestPartition)
#include "tst_partition.moc"
