// Delegates and sizes: XNNPACK payloads decoded (real ones from the fixtures, whose
// decoding the conformance step checks against ExecuTorch's own reading, and
// synthetic ones built here with the schema), every corruption a clear error
// or a listed problem, the delegate report the CLI and Inspector show, and the
// size breakdown that puts every byte of a file in one part.
#include <QtTest>

#include <functional>

#include <flatbuffers/flatbuffers.h>
#include <nlohmann/json.hpp>

#include "app/Cli.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/delegates/XnnpackPayload.h"
#include "engine/formats/schema/xnnpack_generated.h"
#include "engine/inspect/DelegateReport.h"
#include "engine/inspect/SizeBreakdown.h"
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/support/FormatUtil.h"
#include "tests/TestSupport.h"
#include "tests/support/ZipWriter.h"
#include "ui/graph/Inspector.h"

using namespace lstudio;
using namespace lstudio::test;
namespace xfb = xnnpack_flatbuffer;

namespace {

/// A two-node graph: %0 (input) + %1 (constant 1) -> %2, fully connected with
/// %3 (qcint8 per-channel constant 2) -> %4 (output). With `header`, XN01
/// behind an XH00 header with `constantBytes` of constant data; else bare XN00.
std::vector<uint8_t> buildPayload(bool header, uint64_t constantBytes = 64, uint32_t badInput = 0) {
  flatbuffers::FlatBufferBuilder b;
  auto tensor = [&](xfb::XNNDatatype dt, std::vector<uint32_t> dims, uint32_t constant, uint32_t ext, uint32_t flags,
                    uint32_t id) {
    return xfb::CreateXNNTensorValue(b, dt, uint32_t(dims.size()), b.CreateVector(dims), constant, ext, flags, id);
  };
  std::vector<flatbuffers::Offset<xfb::XValue>> values;
  values.push_back(xfb::CreateXValue(b, xfb::XValueUnion::XNNTensorValue,
                                     tensor(xfb::XNNDatatype::xnn_datatype_fp32, {2, 4}, 0, 0, 1, 0).Union()));
  values.push_back(xfb::CreateXValue(b, xfb::XValueUnion::XNNTensorValue,
                                     tensor(xfb::XNNDatatype::xnn_datatype_fp32, {2, 4}, 1, 0xFFFFFFFF, 0, 1).Union()));
  values.push_back(xfb::CreateXValue(b, xfb::XValueUnion::XNNTensorValue,
                                     tensor(xfb::XNNDatatype::xnn_datatype_fp32, {2, 4}, 0, 0xFFFFFFFF, 0, 2).Union()));
  auto scales = b.CreateVector(std::vector<float>{0.5f, 0.25f, 0.125f});
  auto perChannel = xfb::CreatePerChannelQuant(b, scales, 0);
  auto q = xfb::CreateXNNQuantizedTensorValue(b, tensor(xfb::XNNDatatype::xnn_datatype_qcint8, {3, 4}, 2, 0xFFFFFFFF, 0, 3),
                                              xfb::XNNQuantParams::PerChannelQuant, perChannel.Union());
  values.push_back(xfb::CreateXValue(b, xfb::XValueUnion::XNNQuantizedTensorValue, q.Union()));
  values.push_back(xfb::CreateXValue(b, xfb::XValueUnion::XNNTensorValue,
                                     tensor(xfb::XNNDatatype::xnn_datatype_fp32, {2, 3}, 0, 1, 2, 4).Union()));
  std::vector<flatbuffers::Offset<xfb::XNode>> nodes;
  auto add = xfb::Create_XNNNode2x1(b, badInput ? badInput : 0, 1, 2, 0);
  nodes.push_back(xfb::CreateXNode(b, xfb::XNodeUnion::XNNAdd, add.Union(), 7));
  auto fc = xfb::CreateXNNFullyConnected(b, 2, 3, 0xFFFFFFFF, 4, 0);
  nodes.push_back(xfb::CreateXNode(b, xfb::XNodeUnion::XNNFullyConnected, fc.Union(), 8,
                                   xfb::CreateOutputMinMax(b, 0.0f, 6.0f)));
  auto version = b.CreateString("1");
  auto vNodes = b.CreateVector(nodes);
  auto vValues = b.CreateVector(values);
  auto ins = b.CreateVector(std::vector<uint32_t>{0});
  auto outs = b.CreateVector(std::vector<uint32_t>{4});
  flatbuffers::Offset<xfb::XNNGraph> g;
  if (header) {
    std::vector<flatbuffers::Offset<xfb::ConstantDataOffset>> cd;
    cd.push_back(xfb::CreateConstantDataOffset(b, 0, 0));
    cd.push_back(xfb::CreateConstantDataOffset(b, 0, 32));
    cd.push_back(xfb::CreateConstantDataOffset(b, UINT64_MAX, 12, b.CreateString("fc.weight")));
    g = xfb::CreateXNNGraph(b, version, vNodes, vValues, 2, ins, outs, 0, 0, b.CreateVector(cd));
  } else {
    std::vector<flatbuffers::Offset<xfb::Buffer>> bufs;
    bufs.push_back(xfb::CreateBuffer(b));
    std::vector<uint8_t> c1(32, 1), c2(12, 2);
    bufs.push_back(xfb::CreateBuffer(b, b.CreateVector(c1)));
    bufs.push_back(xfb::CreateBuffer(b, b.CreateVector(c2)));
    g = xfb::CreateXNNGraph(b, version, vNodes, vValues, 2, ins, outs, b.CreateVector(bufs));
  }
  b.Finish(g, header ? "XN01" : "XN00");
  std::vector<uint8_t> fbBytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  if (!header) return fbBytes;
  const uint32_t fbOffset = 32, fbSize = uint32_t(fbBytes.size());
  const uint32_t constOffset = fbOffset + ((fbSize + 15) / 16) * 16;
  std::vector<uint8_t> out(constOffset + constantBytes, 0);
  std::memcpy(out.data() + 4, "XH00", 4);
  out[8] = 30;
  auto put32 = [&](size_t at, uint32_t v) { std::memcpy(out.data() + at, &v, 4); };
  put32(10, fbOffset);
  put32(14, fbSize);
  put32(18, constOffset);
  std::memcpy(out.data() + 22, &constantBytes, 8);
  std::memcpy(out.data() + fbOffset, fbBytes.data(), fbBytes.size());
  return out;
}

Result<xnnpack::Graph> decodeBytes(const std::vector<uint8_t>& v) {
  return xnnpack::decode(Bytes{v.data(), v.size(), 1000}, "model.pte");
}

std::string base64(const std::vector<uint8_t>& b) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < b.size(); i += 3) {
    uint32_t n = uint32_t(b[i]) << 16 | (i + 1 < b.size() ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < b.size() ? b[i + 2] : 0);
    out += k[n >> 18 & 63];
    out += k[n >> 12 & 63];
    out += i + 1 < b.size() ? k[n >> 6 & 63] : '=';
    out += i + 2 < b.size() ? k[n & 63] : '=';
  }
  return out;
}

/// torch.export's serde TensorMeta of a contiguous float32 tensor.
nlohmann::json floatTensor(const std::vector<int>& sizes) {
  nlohmann::json s = nlohmann::json::array(), st = nlohmann::json::array();
  for (int x : sizes) s.push_back({{"as_int", x}});
  for (size_t i = 0; i < sizes.size(); ++i) st.push_back({{"as_int", i + 1 < sizes.size() ? sizes.back() : 1}});
  return nlohmann::json{{"dtype", 7}, {"sizes", s}, {"requires_grad", true}, {"device", {{"type", "cpu"}}},
                        {"strides", st}, {"storage_offset", {{"as_int", 0}}}, {"layout", 7}};
}

/// One serde graph module: `nodes` from input x to `output`, the tensors' sizes in `tensors`.
nlohmann::json graphModule(nlohmann::json nodes, const std::string& output,
                           const std::vector<std::pair<std::string, std::vector<int>>>& tensors) {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [name, sizes] : tensors) values[name] = floatTensor(sizes);
  return {{"graph",
           {{"inputs", {{{"as_tensor", {{"name", "x"}}}}}},
            {"outputs", {{{"as_tensor", {{"name", output}}}}}},
            {"nodes", std::move(nodes)},
            {"tensor_values", values},
            {"sym_int_values", nlohmann::json::object()},
            {"sym_bool_values", nlohmann::json::object()},
            {"is_single_tensor_return", false}}},
          {"signature",
           {{"input_specs", {{{"user_input", {{"arg", {{"as_tensor", {{"name", "x"}}}}}}}}}},
            {"output_specs", {{{"user_output", {{"arg", {{"as_tensor", {{"name", output}}}}}}}}}}}},
          {"module_call_graph", nlohmann::json::array()}};
}

/// An edge program as ExecuTorch's serde writes it.
nlohmann::json edgeProgram(nlohmann::json graphModule) {
  return {{"graph_module", std::move(graphModule)},
          {"opset_version", {{"aten", 10}}},
          {"range_constraints", nlohmann::json::object()},
          {"schema_version", {{"major", 5}, {"minor", 4}}},
          {"dialect", "EDGE"},
          {"verifiers", nlohmann::json::array()}};
}

/// What ExecuTorch's partitioner hands XNNPACK for y = x * x + x on a 2x3 x: the program a
/// lowered module keeps as its original_module.
nlohmann::json squarePlusOriginal() {
  auto call = [](const char* op, const char* a, const char* b, const char* out) {
    return nlohmann::json{{"target", std::string("executorch.exir.dialects.edge.ops.aten.") + op},
                          {"inputs", {{{"name", "self"}, {"arg", {{"as_tensor", {{"name", a}}}}}},
                                      {{"name", "other"}, {"arg", {{"as_tensor", {{"name", b}}}}}}}},
                          {"outputs", {{{"as_tensor", {{"name", out}}}}}},
                          {"metadata", {{"debug_handle", "7"}}}};
  };
  return edgeProgram(graphModule({call("mul.Tensor", "x", "x", "aten_mul_tensor"),
                                  call("add.Tensor", "aten_mul_tensor", "x", "aten_add_tensor")},
                                 "aten_add_tensor", {{"x", {2, 3}}, {"aten_mul_tensor", {2, 3}}, {"aten_add_tensor", {2, 3}}}));
}

/// An ETRecord whose edge program is one XNNPACK delegate call from x (`inSizes`) to a 2x3
/// result, serialized as ExecuTorch's serde does: the lowered module as a JSON string
/// argument. Its original_module is `original`, or when null a graph of one add that only
/// names its debug handle and module.
std::string delegatedEtRecord(const std::vector<uint8_t>& payload, const std::string& processed = {},
                              nlohmann::json original = nullptr, std::vector<int> inSizes = {2, 4}) {
  nlohmann::json store = {{"buffers", {base64(std::vector<uint8_t>(12, 7))}},
                          {"pte_data", {{"fc.weight", {{"buffer_index", 0}, {"alignment", 16}, {"tensor_layout", nullptr}}}}},
                          {"external_data", nlohmann::json::object()}};
  if (original.is_null())
    original = {{"graph_module",
                 {{"graph",
                   {{"nodes",
                     {{{"target", "executorch.exir.dialects.edge.ops.aten.add.Tensor"},
                       {"outputs", {{{"as_tensor", {{"name", "aten_add_tensor"}}}}}},
                       {"metadata",
                        {{"debug_handle", "7"}, {"nn_module_stack", "L__self__,,M;L__self___blk,blk,m.Block"}}}}}}}}}}};
  nlohmann::json lowered = {{"backend_id", "XnnpackBackend"},
                            {"processed_bytes", processed.empty() ? base64(payload) : processed},
                            {"compile_specs", {{{"key", "target"}, {"value", base64({'c', 'p', 'u'})}}}},
                            {"original_module", std::move(original)},
                            {"original_state_dict", ""},
                            {"named_data_store", store.dump()}};
  nlohmann::json node = {
      {"target", "torch.ops.higher_order.executorch_call_delegate"},
      {"inputs", {{{"name", "lowered_module_0"}, {"arg", {{"as_string", lowered.dump()}}}},
                  {{"name", "delegate_arg_0"}, {"arg", {{"as_tensor", {{"name", "x"}}}}}}}},
      {"outputs", {{{"as_tensors", {{{"name", "getitem"}}}}}}},
      {"metadata", nlohmann::json::object()}};
  nlohmann::json program = edgeProgram(graphModule(nlohmann::json::array({node}), "getitem", {{"x", inSizes}, {"getitem", {2, 3}}}));
  return zipBytes({{"ETRECORD_V0", ""}, {"edge_dialect_exported_program/forward", program.dump()}});
}

bool hasProblem(const xnnpack::Graph& g, const std::string& needle) {
  for (const auto& p : g.problems)
    if (p.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

class TestDelegates : public QObject {
  Q_OBJECT

 private slots:
  void decodesHeaderAndNamedConstants() {
    auto g = decodeBytes(buildPayload(true));
    QVERIFY2(g.ok(), g.ok() ? "" : g.error().message().c_str());
    QCOMPARE(g->identifier, std::string("XN01"));
    QVERIFY(g->hasHeader);
    QCOMPARE(g->flatbufferOffset, uint64_t(32));
    QCOMPARE(g->constantDataSize, uint64_t(64));
    QCOMPARE(g->nodes.size(), size_t(2));
    QCOMPARE(g->nodes[0].type, std::string("XNNAdd"));
    QCOMPARE(g->nodes[0].inputs, (std::vector<uint32_t>{0, 1}));
    QCOMPARE(g->nodes[0].debugHandle, 7u);
    QCOMPARE(g->nodes[1].type, std::string("XNNFullyConnected"));
    QCOMPARE(g->nodes[1].inputs, (std::vector<uint32_t>{2, 3}));  // no bias: the invalid id is left out
    QCOMPARE(g->nodes[1].outputs, (std::vector<uint32_t>{4}));
    QVERIFY(g->nodes[1].outputMinMax && g->nodes[1].outputMinMax->second == 6.0f);
    QCOMPARE(g->values.size(), size_t(5));
    const auto* w = g->value(3);
    QVERIFY(w);
    QCOMPARE(xnnpack::datatypeName(w->datatype), std::string("qcint8"));
    QCOMPARE(w->quant.kind, xnnpack::Quantization::Kind::PerChannel);
    QCOMPARE(w->quant.scales, (std::vector<float>{0.5f, 0.25f, 0.125f}));
    QVERIFY(g->value(0)->isInput() && g->value(4)->isOutput());
    QCOMPARE(g->constants.size(), size_t(3));
    QCOMPARE(g->constants[2].source, xnnpack::Constant::Source::NamedData);
    QCOMPARE(g->constants[2].namedKey, std::string("fc.weight"));
    QCOMPARE(g->constantBytes(), uint64_t(44));
    QVERIFY2(g->problems.empty(), g->problems.empty() ? "" : g->problems[0].c_str());
  }

  void decodesBareXn00WithInlineConstants() {
    auto g = decodeBytes(buildPayload(false));
    QVERIFY2(g.ok(), g.ok() ? "" : g.error().message().c_str());
    QCOMPARE(g->identifier, std::string("XN00"));
    QVERIFY(!g->hasHeader);
    QCOMPARE(g->constants.size(), size_t(3));
    QCOMPARE(g->constants[1].source, xnnpack::Constant::Source::Flatbuffer);
    QCOMPARE(g->constants[1].size, uint64_t(32));
    QCOMPARE(g->constantBytes(), uint64_t(44));
  }

  void brokenReferencesAreProblemsNotFailures() {
    auto g = decodeBytes(buildPayload(true, 64, 99));  // the add reads value 99
    QVERIFY(g.ok());
    QVERIFY2(hasProblem(*g, "names value 99, which does not exist"), g->problems.empty() ? "none" : g->problems[0].c_str());
    auto short_ = decodeBytes(buildPayload(true, 16));  // constant 1 is 32 bytes of 16
    QVERIFY(short_.ok());
    QVERIFY(hasProblem(*short_, "lies past the 16-byte constant data"));
  }

  void corruptHeadersNameTheFileOffsetAndExpectation() {
    auto good = buildPayload(true);
    auto expect = [&](std::vector<uint8_t> bytes, ErrorCode code, const char* needle) {
      auto g = decodeBytes(bytes);
      QVERIFY2(!g.ok(), needle);
      QVERIFY2(g.error().code == code, g.error().message().c_str());
      std::string msg = g.error().message();
      QVERIFY2(msg.find(needle) != std::string::npos, msg.c_str());
      QVERIFY2(msg.rfind("model.pte: at byte ", 0) == 0, msg.c_str());
    };
    auto b = good;
    b[8] = 12;  // header length below 30
    expect(b, ErrorCode::BadHeader, "XH00 header length");
    b = good;
    uint32_t huge = 1u << 30;
    std::memcpy(b.data() + 14, &huge, 4);  // flatbuffer size past the payload
    expect(b, ErrorCode::OutOfRange, "XH00 flatbuffer range");
    b = good;
    uint32_t early = 40;
    std::memcpy(b.data() + 18, &early, 4);  // constant data inside the flatbuffer
    expect(b, ErrorCode::OutOfRange, "XH00 constant data range");
    b = good;
    std::memcpy(b.data() + 32 + 4, "XN99", 4);
    expect(b, ErrorCode::BadMagic, "\"XN99\"");
    b = good;
    uint32_t badRoot = 0xFFFFFF00u;
    std::memcpy(b.data() + 32, &badRoot, 4);
    expect(b, ErrorCode::Verification, "XNNGraph flatbuffer");
  }

  void everyTruncationAndFlipIsHandled() {
    for (bool header : {true, false}) {
      auto good = buildPayload(header);
      for (size_t n = 0; n < good.size(); ++n) {
        std::vector<uint8_t> cut(good.begin(), good.begin() + long(n));
        auto g = decodeBytes(cut);
        if (g.ok()) continue;  // a cut in the constant data still decodes (with problems)
        QVERIFY(!g.error().message().empty());
      }
      // Each byte flipped: an error or a decode, never a crash (ASan runs this too).
      size_t decoded = 0;
      for (size_t i = 0; i < good.size(); ++i) {
        auto flipped = good;
        flipped[i] ^= 0xFF;
        auto g = decodeBytes(flipped);
        decoded += g.ok();
        if (!g.ok()) continue;
        DelegateReport r{.xnnpack = g.value()};
        (void)delegateText(r, Method{}, true);
        // Strings are not checked for UTF-8 by the verifier: dumped as the CLI does.
        (void)delegateJson(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      QVERIFY(decoded > 0);
    }
  }

  void decodesRealPayloadsOfTheFixtures() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pte/djl_stress_mlp.pte").toStdString());
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const Method& m = p->methods.at(0);
    QCOMPARE(m.delegates.size(), size_t(2));
    DelegateReport r = reportDelegate(*p, m, 1);
    QVERIFY2(r.xnnpack, r.decodeError.c_str());
    QCOMPARE(r.format, std::string("XNNPACK XN01 with XH00 header"));
    std::map<std::string, int> types;
    for (const auto& n : r.xnnpack->nodes) ++types[n.type];
    QCOMPARE(types["XNNFullyConnected"], 8);
    QCOMPARE(types["XNNAdd"], 3);
    QCOMPARE(r.xnnpack->values.size(), size_t(31));
    QCOMPARE(r.namedData.size(), size_t(16));
    uint64_t named = 0;
    for (const auto& u : r.namedData) {
      QCOMPARE(u.location, std::string("the .pte"));
      named += u.bytes;
    }
    QCOMPARE(named, r.xnnpack->constantBytes());
    QCOMPARE(r.inputs.size(), size_t(4));
    QCOMPARE(r.outputs.size(), size_t(1));

    auto q = openProgramFile(fixture("pte/numpyrt_quantized.pte").toStdString());
    QVERIFY(q.ok());
    DelegateReport rq = reportDelegate(*q, q->methods.at(0), 0);
    QVERIFY(rq.xnnpack);
    int quantized = 0;
    for (const auto& v : rq.xnnpack->values) quantized += v.quant.kind != xnnpack::Quantization::Kind::None;
    QVERIFY(quantized > 0);
  }

  void otherBackendsShowTheirCompileSpecs() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pte/cmsis_ethos_u_minimal_example.pte").toStdString());
    QVERIFY(p.ok());
    DelegateReport r = reportDelegate(*p, p->methods.at(0), 0);
    QCOMPARE(r.backend, std::string("EthosUBackend"));
    QVERIFY(!r.xnnpack && r.decodeError.empty());
    bool target = false;
    for (const auto& s : r.compileSpecs) target |= s.key == "target" && s.value == "\"ethos-u85-256\"";
    QVERIFY(target);
  }

  void ethosUStreamIsFramed() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pte/cmsis_ethos_u_minimal_example.pte").toStdString());
    QVERIFY(p.ok());
    DelegateReport r = reportDelegate(*p, p->methods.at(0), 0);
    QCOMPARE(r.format, std::string("Ethos-U Vela stream"));
    QVERIFY2(r.decodeError.empty(), r.decodeError.c_str());
    std::map<std::string, std::string> facts(r.layout.facts.begin(), r.layout.facts.end());
    QCOMPARE(facts["command stream"], std::string("512 B"));
    QCOMPARE(facts["scratch"], std::string("48 B"));
    QVERIFY(facts.count("input 1") && facts.count("output 0") && !facts.count("input 2"));
    uint64_t framed = 0;
    for (const auto& sec : r.layout.sections) framed += sec.size;
    QCOMPARE(framed, r.blobBytes);  // the blocks cover the payload exactly
    // Every truncation is framed up to where it stops, with the offset named.
    const Bytes& blob = p->methods.at(0).delegates.at(0).blob;
    for (uint64_t n = 16; n < blob.size; n += 8) {
      PayloadLayout l = describePayload(Bytes{blob.data, n, 0});
      QVERIFY2(l.error.rfind("at byte ", 0) == 0, l.error.c_str());
    }
  }

  void vulkanHeaderIsChecked() {
    std::vector<uint8_t> b(30 + 16 + 8, 0);
    std::memcpy(b.data() + 4, "VH00", 4);
    b[8] = 30;
    auto put32 = [&](size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); };
    put32(10, 30);
    put32(14, 16);
    put32(18, 46);
    b[22] = 8;
    std::memcpy(b.data() + 30 + 4, "VK00", 4);
    PayloadLayout l = describePayload(Bytes{b.data(), b.size(), 0});
    QCOMPARE(l.format, std::string("Vulkan VH00"));
    QVERIFY(l.error.empty());
    QCOMPARE(l.sections.size(), size_t(3));
    QCOMPARE(l.facts.at(0).second, std::string("\"VK00\""));
    b[22] = 200;  // constant bytes past the end
    l = describePayload(Bytes{b.data(), b.size(), 0});
    QVERIFY2(l.error.find("pass the 54-byte payload") != std::string::npos, l.error.c_str());
  }

  void compileSpecValuesAreReadable() {
    Program p;
    Method m;
    Delegate d;
    d.backendId = "SomeBackend";
    d.compileSpecs = {{"name", {'c', 'p', 'u'}}, {"level", {3, 0, 0, 0}}, {"blob", std::vector<uint8_t>(20, 0)}};
    m.delegates.push_back(d);
    DelegateReport r = reportDelegate(p, m, 0);
    QCOMPARE(r.compileSpecs.at(0).value, std::string("\"cpu\""));
    QCOMPARE(r.compileSpecs.at(1).value, std::string("3"));
    QVERIFY(r.compileSpecs.at(2).value.rfind("20 bytes: 00 00", 0) == 0);
    QCOMPARE(r.callNode, -1);
  }

  void sizeBreakdownAddsUpForEveryFixture() {
    LSTUDIO_REQUIRE_FIXTURES();
    int files = 0;
    for (const char* dir : {"pte", "ptd", "other"}) {
      for (const QFileInfo& f : QDir(fixture(dir)).entryInfoList(QDir::Files)) {
        std::string path = f.absoluteFilePath().toStdString();
        SizeBreakdown b;
        if (f.suffix() == "ptd") {
          auto d = readDataFile(path);
          QVERIFY2(d.ok(), path.c_str());
          b = sizeBreakdown(d.value());
        } else {
          auto p = openProgramFile(path);
          if (!p.ok() || p->format != SourceFormat::Pte) continue;  // the ETRecord is not a .pte
          b = sizeBreakdown(p.value());
        }
        QCOMPARE(b.fileBytes, uint64_t(f.size()));
        QVERIFY2(b.total() == b.fileBytes, qPrintable(f.fileName()));
        // Every segment is attributed and padding stays padding: a kind of
        // range the breakdown missed would show up in one of these.
        for (const auto& part : b.parts) {
          QVERIFY2(part.name.rfind("segments no", 0) != 0, qPrintable(f.fileName() + ": unattributed segment"));
          if (part.name == "padding and alignment")
            QVERIFY2(part.bytes <= 256 || part.bytes * 20 < b.fileBytes, qPrintable(f.fileName()));
        }
        ++files;
      }
    }
    QVERIFY(files >= 40);
  }

  void sizeBreakdownNamesWhatItFinds() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pte/djl_stress_mlp.pte").toStdString());
    QVERIFY(p.ok());
    SizeBreakdown b = sizeBreakdown(p.value());
    std::map<std::string, const SizePart*> parts;
    for (const auto& part : b.parts) parts[part.name] = &part;
    uint64_t named = 0;
    for (const auto& n : p->namedData) named += n.data.size;
    QVERIFY(parts.count("named data read by XnnpackBackend"));
    QCOMPARE(parts["named data read by XnnpackBackend"]->bytes, named);
    QCOMPARE(parts["named data read by XnnpackBackend"]->items.size(), size_t(16));
    QVERIFY(parts.count("XNNPACK graphs (nodes and values)"));
    QCOMPARE(parts["XNNPACK graphs (nodes and values)"]->items.size(), size_t(2));
    QCOMPARE(parts["program flatbuffer"]->bytes, p->facts.programSize);
    // ... by what its tables hold: values and instructions of forward, and what lies between them.
    std::map<std::string, uint64_t> fbItems;
    for (const auto& i : parts["program flatbuffer"]->items) fbItems[i.name] = i.bytes;
    QVERIFY(fbItems["forward: values"] > 1000);  // 45 values, 22 of them tensors
    QVERIFY(fbItems["forward: instructions"] > 200);
    QVERIFY(fbItems["forward: operators"] > 50);
    QVERIFY2(fbItems["header, vtables shared, offsets and alignment"] * 4 < p->facts.programSize,
             "most of the flatbuffer is attributed");
    QCOMPARE(b.parts.front().name, std::string("named data read by XnnpackBackend"));  // largest first

    auto qnn = openProgramFile(fixture("pte/stories260k_hybrid_llama_qnn.pte").toStdString());
    QVERIFY(qnn.ok());
    SizeBreakdown bq = sizeBreakdown(qnn.value());
    QCOMPARE(bq.parts.front().name, std::string("delegate payloads (QnnBackend)"));
    QCOMPARE(bq.parts.front().bytes, qnn->methods.at(0).delegates.at(0).blob.size);
  }

  // Inside a payload, constants are counted against the operator that reads them.
  void sizeBreakdownNamesTheOperatorOfEachConstant() {
    auto payload = buildPayload(true);
    std::vector<uint8_t> named(12, 9);
    std::vector<uint8_t> file(payload);
    file.insert(file.end(), named.begin(), named.end());
    Program p;
    p.backing = MappedFile::fromBytes("model.pte", file.data(), file.size());
    Method m;
    m.name = "forward";
    Delegate d;
    d.backendId = "XnnpackBackend";
    d.blob = Bytes{p.backing->data(), payload.size(), 0};
    m.delegates.push_back(d);
    p.methods.push_back(m);
    p.namedData.push_back(NamedBlob{"fc.weight", 0, Bytes{p.backing->data() + payload.size(), 12, payload.size()}});
    SizeBreakdown b = sizeBreakdown(p);
    QCOMPARE(b.total(), uint64_t(file.size()));
    std::map<std::string, uint64_t> items;
    for (const auto& part : b.parts)
      for (const auto& i : part.items) items[part.name + " / " + i.name] = i.bytes;
    QCOMPARE(items["XNNPACK constant data (in the payload) / forward delegate 0 (XnnpackBackend): node 0 XNNAdd"],
             uint64_t(32));
    QCOMPARE(items["named data read by XnnpackBackend / forward delegate 0: node 1 XNNFullyConnected (fc.weight)"],
             uint64_t(12));
  }

  void inspectorShowsThePayload() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pte/djl_stress_mlp.pte").toStdString());
    QVERIFY(p.ok());
    const Method& m = p->methods.at(0);
    int call = -1;
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (m.nodes[i].kind == NodeKind::Delegate && m.nodes[i].delegate == 1) call = int(i);
    QVERIFY(call >= 0);
    QString h = ui::nodeDetails(m, call, nullptr, &p.value());
    for (const char* needle : {"XnnpackBackend", "<b>Inputs</b>", "<b>Outputs</b>", "11 nodes", "8× XNNFullyConnected",
                               "Named data it reads", "the .pte"})
      QVERIFY2(h.contains(needle), needle);
    // Inputs and outputs apart: the one output is the last argument.
    QCOMPARE(h.count("<tr><td class=k>#0</td>"), 2);
  }

  // Issue 43: to_edge_transform_and_lower records its edge program from before partitioning;
  // its delegate_map says what was delegated. Never exported undelegated without a word: the
  // CLI lowers it with XnnpackPartitioner (export writes the payloads), and export without a
  // partitioner is refused.
  void etRecordFromBeforePartitioning() {
    QTemporaryDir dir;
    auto write = [&](const char* name, const std::string& bytes) {
      QFile f(dir.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(bytes.data(), qint64(bytes.size()));
      return dir.filePath(name).toStdString();
    };
    const std::string program = squarePlusOriginal().dump();
    const std::string map = R"({"forward": {"0": {"name": "XnnpackBackend", "delegate_map": {}}}})";
    const std::string etr = write("etrecord.bin", zipBytes({{"ETRECORD_V0", ""},
                                                          {"edge_dialect_exported_program/forward", program},
                                                          {"delegate_map", map}}));
    auto p = openProgramFile(etr);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->exportFacts.delegatedTo, std::vector<std::string>{"XnnpackBackend"});
    QCOMPARE(recordedPartitioners(p.value()).size(), size_t(1));

    std::ostringstream o, e;
    QCOMPARE(cli::run({"config", etr}, o, e), 0);
    QVERIFY2(o.str().find("\"partitioner\"") != std::string::npos, o.str().c_str());
    o.str({}), e.str({});
    QCOMPARE(cli::run({"partition", etr, "--json"}, o, e), 0);
    auto doc = nlohmann::json::parse(o.str());
    QCOMPARE(doc["methods"][0]["rounds"].size(), size_t(1));  // one partitioner, one round
    const auto& parts = doc["methods"][0]["rounds"][0]["partitions"];
    QCOMPARE(parts.size(), size_t(1));  // mul and add in one partition
    QCOMPARE(parts[0]["nodes"].size(), size_t(2));
    o.str({}), e.str({});
    const std::string out = dir.filePath("out.pte").toStdString();
    // Exported with the partitioner it records: delegated again, the payload XNNPACK's
    // preprocess writes (the mul and the add as XNNGraph nodes).
    QVERIFY2(cli::run({"export", etr, "-o", out}, o, e) == 0, e.str().c_str());
    auto exported = openProgramFile(out);
    QVERIFY2(exported.ok(), exported.ok() ? "" : exported.error().message().c_str());
    QCOMPARE(exported->methods.at(0).delegates.size(), size_t(1));
    auto graph = xnnpack::decode(exported->methods[0].delegates[0].blob, out);
    QVERIFY2(graph.ok(), graph.ok() ? "" : graph.error().message().c_str());
    QCOMPARE(graph->nodes.size(), size_t(2));
    QFile::remove(QString::fromStdString(out));
    // A config without a partitioner: refused, naming the backend and the setting that fits.
    const std::string cfg = write("plain.json", "{}");
    o.str({}), e.str({});
    QVERIFY(cli::run({"export", etr, "--config", cfg, "-o", out}, o, e) != 0);
    QVERIFY2(e.str().find("XnnpackBackend") != std::string::npos && e.str().find("partitioner=xnnpack") != std::string::npos,
             e.str().c_str());
    QVERIFY(!QFile::exists(QString::fromStdString(out)));

    // An edge program that has its delegate calls already exports as it is (no map kept).
    auto delegated = openProgramFile(write("delegated.bin", delegatedEtRecord(buildPayload(true))));
    QVERIFY(delegated.ok() && delegated->exportFacts.delegatedTo.empty());
    // A delegate_map that is not what ExecuTorch writes names the file and the entry.
    auto bad = openProgramFile(write("bad.bin", zipBytes({{"ETRECORD_V0", ""},
                                                        {"edge_dialect_exported_program/forward", program},
                                                        {"delegate_map", R"({"forward": {"0": {}}})"}})));
    QVERIFY(!bad.ok());
    QVERIFY2(bad.error().message().find("bad.bin:delegate_map") != std::string::npos, bad.error().message().c_str());
  }

  void etRecordLoweredModulesBecomeDelegates() {
    QTemporaryDir dir;
    const std::string etr = dir.filePath("etrecord.bin").toStdString(), out = dir.filePath("out.pte").toStdString();
    auto payload = buildPayload(true);
    std::string bytes = delegatedEtRecord(payload);
    QFile f(QString::fromStdString(etr));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes.data(), qint64(bytes.size()));
    f.close();
    auto p = openProgramFile(etr);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const Method& m = p->methods.at(0);
    QCOMPARE(m.nodes.size(), size_t(1));
    QCOMPARE(m.nodes[0].kind, NodeKind::Delegate);
    QCOMPARE(m.delegates.at(0).backendId, std::string("XnnpackBackend"));
    QCOMPARE(m.delegates[0].blob.size, uint64_t(payload.size()));
    QVERIFY(std::equal(payload.begin(), payload.end(), m.delegates[0].blob.data));
    QCOMPARE(m.delegates[0].compileSpecs.at(0).key, std::string("target"));
    QVERIFY(m.diagnostics.empty());  // no "unknown operator executorch_call_delegate"
    QCOMPARE(p->namedData.size(), size_t(1));
    QCOMPARE(p->namedData[0].key, std::string("fc.weight"));
    QVERIFY(!m.values[m.nodes[0].outputs.at(0)].tensor().requiresGrad);  // as ExecuTorch writes it
    DelegateReport r = reportDelegate(*p, m, 0);
    QCOMPARE(r.namedData.at(0).location, std::string("the .pte"));
    // The payload's add (debug handle 7) links back to the node it was made from.
    QCOMPARE(originText(r, 7), std::string("aten.add.Tensor (aten_add_tensor, in blk)"));
    QVERIFY(originText(r, 8).empty());
    // Exported, the .pte carries the same payload and its named data.
    std::ostringstream o, e;
    QCOMPARE(cli::run({"export", etr, "-o", out}, o, e), 0);
    auto back = openProgramFile(out);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
    const Delegate& d = back->methods.at(0).delegates.at(0);
    QVERIFY(d.blob.size == payload.size() && std::equal(payload.begin(), payload.end(), d.blob.data));
    QCOMPARE(back->namedData.at(0).key, std::string("fc.weight"));
    QCOMPARE(back->namedData.at(0).data.size, uint64_t(12));
  }

  // A delegate call runs in the studio through the program its backend was given (the
  // lowered module's original_module): the run goes on past it with that program's values.
  void delegateCallRunsItsOriginalProgram() {
    QTemporaryDir dir;
    auto write = [&](const QString& name, const std::string& bytes) {
      QFile f(dir.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) return std::string();
      f.write(bytes.data(), qint64(bytes.size()));
      return dir.filePath(name).toStdString();
    };
    const std::string etr = write("etrecord.bin", delegatedEtRecord(buildPayload(true), {}, squarePlusOriginal(), {2, 3}));
    auto p = openProgramFile(etr);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const Delegate& d = p->methods.at(0).delegates.at(0);
    QVERIFY2(d.original, d.originalError.c_str());
    QCOMPARE(d.original->methods.at(0).nodes.size(), size_t(2));
    // The Inspector says what a run does at the call.
    QVERIFY(ui::nodeDetails(p->methods[0], 0, nullptr, &p.value()).contains("its program before delegation (2 nodes"));
    // iota x = -0.5, -0.25, 0, 0.25, 0.5, 0.75: x * x + x
    std::ostringstream out, err;
    QCOMPARE(cli::run({"run", etr, "--json"}, out, err), 0);
    auto j = nlohmann::json::parse(out.str());
    std::vector<double> want = {-0.25, -0.1875, 0, 0.3125, 0.75, 1.3125};
    QCOMPARE(j["outputs"][0]["first"].get<std::vector<double>>(), want);
    // Without it the call is where the run stops, and the message says what would run it.
    const std::string bare = write("bare.bin", delegatedEtRecord(buildPayload(true), {}, nullptr, {2, 3}));
    std::ostringstream out2, err2;
    QCOMPARE(cli::run({"run", bare}, out2, err2), 5);
    QVERIFY2(err2.str().find("XnnpackBackend delegate") != std::string::npos, err2.str().c_str());
    QVERIFY2(err2.str().find("program before delegation could not be read") != std::string::npos, err2.str().c_str());
    auto bareProgram = openProgramFile(bare);
    QVERIFY(bareProgram.ok());
    QVERIFY(ui::nodeDetails(bareProgram->methods[0], 0, nullptr, &bareProgram.value())
                .contains("its program before delegation cannot be read"));
  }

  void etRecordLoweredModuleErrorsNameTheNode() {
    QTemporaryDir dir;
    const std::string etr = dir.filePath("bad.bin").toStdString();
    std::string bytes = delegatedEtRecord(buildPayload(true), "AAA!");  // not base64
    QFile f(QString::fromStdString(etr));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes.data(), qint64(bytes.size()));
    f.close();
    auto p = openProgramFile(etr);
    QVERIFY(!p.ok());
    QVERIFY2(p.error().message().find("processed_bytes") != std::string::npos, p.error().message().c_str());
    QVERIFY2(p.error().message().find("executorch_call_delegate") != std::string::npos, p.error().message().c_str());
  }

  void cliListsDelegates() {
    LSTUDIO_REQUIRE_FIXTURES();
    std::ostringstream out, err;
    int rc = cli::run({"delegates", fixture("pte/djl_conv.pte").toStdString(), "--full"}, out, err);
    QCOMPARE(rc, 0);
    QVERIFY2(out.str().find("XNNConv2d") != std::string::npos, out.str().c_str());
    QVERIFY(out.str().find("kernel 3×3") != std::string::npos || out.str().find("kernel ") != std::string::npos);
    std::ostringstream jout;
    QCOMPARE(cli::run({"delegates", fixture("pte/djl_conv.pte").toStdString(), "--json"}, jout, err), 0);
    auto j = nlohmann::json::parse(jout.str());
    QCOMPARE(j["methods"][0]["delegates"][0]["xnnpack"]["identifier"].get<std::string>(), std::string("XN01"));
    // inspect --json: per XNNPACK delegate its nodes and values; --size: leaves adding up to the file.
    std::ostringstream sizes;
    QCOMPARE(cli::run({"inspect", fixture("pte/djl_stress_mlp.pte").toStdString(), "--size", "--json"}, sizes, err), 0);
    auto js = nlohmann::json::parse(sizes.str());
    const auto& d1 = js["methods"][0]["delegates"][1];
    QCOMPARE(d1["xnnpack"]["nodes"].size(), size_t(11));
    QCOMPARE(d1["xnnpack"]["nodes"][0]["type"].get<std::string>().rfind("XNN", 0), size_t(0));
    QCOMPARE(d1["xnnpack"]["values"].size(), size_t(31));
    int inconsistent = 0;  // parts whose children do not add up to them
    std::function<uint64_t(const nlohmann::json&)> leaves = [&](const nlohmann::json& parts) -> uint64_t {
      uint64_t sum = 0;
      for (const auto& p : parts) {
        uint64_t below = leaves(p["parts"]);
        inconsistent += !p["parts"].empty() && below != p["bytes"].get<uint64_t>();
        sum += p["parts"].empty() ? p["bytes"].get<uint64_t>() : below;
      }
      return sum;
    };
    QCOMPARE(leaves(js["size"]["parts"]), uint64_t(QFileInfo(fixture("pte/djl_stress_mlp.pte")).size()));
    QCOMPARE(inconsistent, 0);
    QCOMPARE(js["size"]["total"].get<uint64_t>(), uint64_t(QFileInfo(fixture("pte/djl_stress_mlp.pte")).size()));
    // Two files side by side: the differences per part add up to the difference of their sizes.
    std::ostringstream diff;
    QCOMPARE(cli::run({"inspect", fixture("pte/djl_lin129.pte").toStdString(), "--size", "--against",
                       fixture("pte/djl_stress_mlp.pte").toStdString(), "--json"}, diff, err), 0);
    auto jd = nlohmann::json::parse(diff.str())["size_diff"];
    int64_t sum = 0;
    for (const auto& part : jd["parts"]) sum += part["delta"].get<int64_t>();
    QCOMPARE(sum, jd["b_bytes"].get<int64_t>() - jd["a_bytes"].get<int64_t>());
    QVERIFY(std::abs(jd["parts"][0]["delta"].get<int64_t>()) >= std::abs(jd["parts"].back()["delta"].get<int64_t>()));
    std::ostringstream none;
    QCOMPARE(cli::run({"delegates", fixture("pte/add.pte").toStdString()}, none, err), 0);
    QVERIFY2(none.str().find("no delegates") != std::string::npos, none.str().c_str());
  }
};

QTEST_GUILESS_MAIN(TestDelegates)
#include "tst_delegates.moc"
