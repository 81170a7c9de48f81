// torch.export archives: the real .pt2 and ETRecord fixtures, refusals, and
// synthetic archives for both container generations and malformed cases.
#include <QTemporaryDir>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <QtTest>

#include "engine/inspect/Inspect.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/StoredZipWriter.h"
#include "engine/formats/ZipArchive.h"
#include "tests/TestSupport.h"
#include "tests/support/Pt2Samples.h"
#include "tests/support/ZipWriter.h"

using namespace lstudio;
using namespace lstudio::test;

namespace {

Result<Program> importBytes(const std::string& bytes, const char* name = "synthetic.pt2") {
  return readExport(MappedFile::fromBytes(name, bytes.data(), bytes.size()));
}

/// Element i of a float32 tensor's bytes (records in a zip need not be aligned).
float floatAt(const Bytes& b, size_t i) {
  float f;
  std::memcpy(&f, b.data + i * 4, 4);
  return f;
}

const InputSpec* inputFor(const Method& m, const std::string& target) {
  for (const auto& in : m.signature.inputs)
    if (in.target == target) return &in;
  return nullptr;
}

}  // namespace

class TestPt2Reader : public QObject {
  Q_OBJECT
 private slots:
  // torch.cond: serde writes each branch as a graph of its own (as_graph, with its own
  // tensor_values) inside the node's arguments. They become subgraphs of the method, the
  // node reads the predicate and the operands, and inspect lists the branches.
  void condBranchesAreGraphsOfTheirOwn() {
    auto p = importBytes(zipBytes(archiveRecords(condProgramJson(), weightsConfig(), floats({1, 2, 3, 4}))));
    QVERIFY2(p, p ? "" : p.error().message().c_str());
    const Method& m = p->methods[0];
    QCOMPARE(m.nodes.size(), size_t(3));
    const Node& cond = m.nodes[2];
    QCOMPARE(cond.kind, NodeKind::Cond);
    QCOMPARE(cond.name, std::string("getitem"));
    QCOMPARE(cond.args.size(), size_t(3));
    QCOMPARE(m.values[cond.args[0]].name, std::string("gt"));
    QCOMPARE(m.values[cond.args[1]].name, std::string("x"));
    QCOMPARE(m.values[cond.args[2]].name, std::string("p_w"));
    QCOMPARE(cond.subgraphs, (std::vector<int32_t>{0, 1}));
    QCOMPARE(m.operators.size(), size_t(2));  // sum and gt: a cond is no operator
    const Method& f = m.subgraphs[1];
    QCOMPARE(f.name, std::string("false_graph_0"));
    QCOMPARE(f.inputs.size(), size_t(2));
    QCOMPARE(f.nodes.size(), size_t(2));
    QCOMPARE(f.operators[f.nodes[1].op].fullName(), std::string("aten::mul.Tensor"));
    QCOMPARE(f.values[f.outputs[0]].name, std::string("mul_1"));
    QCOMPARE(f.values[f.nodes[1].args[1]].kind(), ValueKind::Double);  // the branch's own 2.0
    std::string text = toText(summarize(p.value()));
    QVERIFY2(text.find("control-flow branches 2:") != std::string::npos, text.c_str());
    QVERIFY2(text.find("false_graph_0: 2 nodes (aten::cos.default, aten::mul.Tensor)") != std::string::npos, text.c_str());
    // A cond whose operands are not a list of tensors is refused where it stands.
    std::string bad = condProgramJson();
    const std::string operands = R"("as_tensors": [{"name": "x"}, {"name": "p_w"}])";
    bad.replace(bad.find(operands), operands.size(), R"("as_int": 3)");
    auto refused = importBytes(zipBytes(archiveRecords(bad, weightsConfig(), floats({1, 2, 3, 4}))));
    QVERIFY(!refused);
    QVERIFY2(refused.error().message().find("operands as a list of tensors") != std::string::npos,
             refused.error().message().c_str());
  }

  void realArchive() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pt2/linear.pt2").toStdString());
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->format, SourceFormat::Pt2);
    QCOMPARE(p->exportFacts.schemaVersion, std::string("8.12"));
    QVERIFY(p->exportFacts.hasSampleInputs);
    QCOMPARE(p->methods.size(), size_t(1));
    const Method& m = p->methods[0];
    QCOMPARE(m.name, std::string("forward"));
    QCOMPARE(m.nodes.size(), size_t(1));
    QCOMPARE(m.operators[0].fullName(), std::string("aten::linear.default"));
    QCOMPARE(m.nodes[0].argNames, (std::vector<std::string>{"input", "weight", "bias"}));
    QCOMPARE(m.nodes[0].meta.moduleStack.size(), size_t(2));
    QCOMPARE(m.nodes[0].meta.moduleStack[1].path, std::string("linear"));
    QCOMPARE(m.nodes[0].meta.stackTrace.back().line, 134);
    QCOMPARE(m.signature.inputs.size(), size_t(3));
    const InputSpec* w = inputFor(m, "linear.weight");
    const InputSpec* b = inputFor(m, "linear.bias");
    QVERIFY(w && b);
    QCOMPARE(w->kind, InputSpec::Kind::Parameter);
    QCOMPARE(m.signature.inputs[2].kind, InputSpec::Kind::User);
    const TensorSpec& wt = m.value(w->value).tensor();
    QCOMPARE(wt.shapeString(), std::string("float32[3, 3]"));
    QVERIFY(wt.requiresGrad);
    QCOMPARE(wt.data.size, uint64_t(36));
    // Weight values, as the archive stores them (read back with Python's zipfile when this test was written).
    QCOMPARE(floatAt(wt.data, 0), -0.5438879132270813f);
    QCOMPARE(floatAt(wt.data, 8), 0.2006940245628357f);
    QCOMPARE(floatAt(m.value(b->value).tensor().data, 1), 0.32759782671928406f);
    // Zero-copy: the bytes are the stored record inside the mapped file.
    QVERIFY(wt.data.data >= p->backing->data() && wt.data.data + 36 <= p->backing->data() + p->backing->size());
    QCOMPARE(m.signature.outputs.size(), size_t(1));
    QCOMPARE(m.signature.outputs[0].kind, OutputSpec::Kind::User);
  }

  void aotInductorIsRefused() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pt2/aoti_package_preprocess.pt2").toStdString());
    QVERIFY(!p.ok());
    QCOMPARE(p.error().code, ErrorCode::Unsupported);
    QVERIFY2(p.error().message().find("AOTInductor") != std::string::npos, p.error().message().c_str());
    QVERIFY(p.error().message().find("aoti_package_preprocess.pt2") != std::string::npos);
  }

  void etRecordPrograms() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("other/etrecord.bin").toStdString());
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->format, SourceFormat::EtRecord);
    // Its edge program is what to_executorch lowers: one method, forward; the ATen
    // output beside it is not a method of the program.
    QCOMPARE(p->methods.size(), size_t(1));
    const Method* edge = p->method("forward");
    QVERIFY(edge);
    QVERIFY(!edge->nodes.empty());
    bool sawMul = false;
    for (const auto& op : edge->operators) sawMul = sawMul || op.fullName() == "aten::mul.Tensor";
    QVERIFY(sawMul);  // from the target executorch.exir.dialects.edge.ops.aten.mul.Tensor
    QVERIFY(!p->method("aten_dialect_output/forward"));
    QCOMPARE(p->exportFacts.schemaVersion, std::string("1"));  // 2023 files: an integer, all-null union members
  }

  void syntheticArchive() {
    std::string bytes = zipBytes(archiveRecords(programJson(), weightsConfig(), floats({1, 2, 3, 4})));
    auto p = importBytes(bytes);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const Method& m = p->methods[0];
    QCOMPARE(m.nodes.size(), size_t(2));
    QCOMPARE(m.nodes[1].argNames, (std::vector<std::string>{"self", "other", "alpha"}));
    QCOMPARE(std::get<int64_t>(m.value(m.nodes[1].args[2]).payload), int64_t(2));
    QCOMPARE(m.nodes[0].meta.stackTrace.size(), size_t(1));
    QCOMPARE(m.nodes[0].meta.stackTrace[0].context, std::string("return x * self.w + self.b"));
    // Dynamic size: the upper bound from range_constraints, with its symbol.
    const TensorSpec& x = m.value(m.signature.inputs[2].value).tensor();
    QCOMPARE(x.dynamism, ShapeDynamism::DynamicBound);
    QCOMPARE(x.sizes, std::vector<int64_t>{16});
    QCOMPARE(x.symbols, std::vector<std::string>{"s0"});
    const TensorSpec& b = m.value(inputFor(m, "b")->value).tensor();
    QCOMPARE(floatAt(b.data, 3), 40.0f);
    ProgramSummary s = summarize(p.value());
    QCOMPARE(s.methods[0].weightBytes, uint64_t(32));
    QCOMPARE(s.methods[0].moduleDepth, size_t(2));
    QVERIFY(toText(s).find("parameter p_w (w): float32[4], 16 bytes") != std::string::npos);
  }

  // The origin of a node, by which ExecuTorch's DebugHandleGeneratorPass numbers debug handles,
  // is the oldest ancestor its from_node record names ("name.graph_id"), as for PT2E's quantize
  // and dequantize nodes that share their observer's; a node without the record is its own.
  void originIsTheGreatestFromNodeAncestor() {
    // from_node is a JSON string holding a list of records, each with its own from_node.
    const std::string q =
        "\"from_node\": \"[{\\\"name\\\": \\\"quantize_per_tensor_default\\\", \\\"graph_id\\\": 9, \\\"from_node\\\": [{\\\"name\\\": \\\"activation_post_process_0\\\", \\\"graph_id\\\": 7, \\\"from_node\\\": []}]}]\"";
    const std::string dq =
        "\"from_node\": \"[{\\\"name\\\": \\\"dequantize_per_tensor_default\\\", \\\"graph_id\\\": 9, \\\"from_node\\\": [{\\\"name\\\": \\\"x\\\", \\\"graph_id\\\": 3, \\\"from_node\\\": []}, {\\\"name\\\": \\\"activation_post_process_0\\\", \\\"graph_id\\\": 7, \\\"from_node\\\": []}]}]\"";
    std::string json = programJson();
    const std::string first = R"("nn_module_stack": "L__self__,,M;L__self__sub,sub,torch.nn.Module")";
    const std::string second = R"("outputs": [{"as_tensor": {"name": "add"}}], "metadata": {})";
    QVERIFY(json.find(first) != std::string::npos && json.find(second) != std::string::npos);
    auto read = [&](const std::string& a, const std::string& b) -> Result<Program> {
      std::string j = json;
      j.replace(j.find(first), first.size(), first + (a.empty() ? "" : ", " + a));
      j.replace(j.find(second), second.size(),
                second.substr(0, second.size() - 1) + b + "}");  // "metadata": {<b>}
      return importBytes(zipBytes(archiveRecords(j, weightsConfig(), floats({1, 2, 3, 4}))));
    };
    auto shared = read(q, dq);
    QVERIFY2(shared.ok(), shared.ok() ? "" : shared.error().message().c_str());
    QCOMPARE(shared->methods[0].nodes[0].meta.origin, std::string("activation_post_process_0.7"));
    QCOMPARE(shared->methods[0].nodes[1].meta.origin, std::string("activation_post_process_0.7"));
    auto own = read("", dq);
    QVERIFY2(own.ok(), own.ok() ? "" : own.error().message().c_str());
    QCOMPARE(own->methods[0].nodes[0].meta.origin, std::string("mul"));
  }

  // torch 2.13 writes size expressions as sympy's srepr; the studio reads them in the printed
  // form its shape evaluation and its views use ("s0", "2*s0 + 1").
  void sreprSizeExpressions() {
    std::string json = programJson();
    const std::string from = "\"expr_str\": \"s0\"";
    size_t at = json.find(from);
    QVERIFY(at != std::string::npos);
    json.replace(at, from.size(), "\"expr_str\": \"Symbol('s0', positive=True, integer=True)\"");
    auto p = importBytes(zipBytes(archiveRecords(json, weightsConfig(), floats({1, 2, 3, 4}))));
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const TensorSpec& x = p->methods[0].value(p->methods[0].signature.inputs[2].value).tensor();
    QCOMPARE(x.symbols, std::vector<std::string>{"s0"});
    QCOMPARE(x.sizes, std::vector<int64_t>{16});  // the bound of s0 from range_constraints
    json.replace(json.find("Symbol('s0', positive=True, integer=True)"), std::string("Symbol('s0', positive=True, integer=True)").size(),
                 "Add(Mul(Integer(2), Symbol('s0', positive=True, integer=True)), Integer(1))");
    p = importBytes(zipBytes(archiveRecords(json, weightsConfig(), floats({1, 2, 3, 4}))));
    QVERIFY(p.ok());
    QCOMPARE(p->methods[0].value(p->methods[0].signature.inputs[2].value).tensor().symbols,
             std::vector<std::string>{"2*s0 + 1"});
    // A sum as sympy prints it: the number last, a negative one subtracted (SymShapeEvalPass
    // bounds "s0 - 2"; "s0 + -2" it could not read).
    for (auto [srepr, printed] : {std::pair{"Add(Symbol('s0', positive=True, integer=True), Integer(-2))", "s0 - 2"},
                                  std::pair{"Add(Integer(1), Symbol('s0', positive=True, integer=True))", "s0 + 1"}}) {
      std::string j = json;
      const std::string was = "Add(Mul(Integer(2), Symbol('s0', positive=True, integer=True)), Integer(1))";
      j.replace(j.find(was), was.size(), srepr);
      p = importBytes(zipBytes(archiveRecords(j, weightsConfig(), floats({1, 2, 3, 4}))));
      QVERIFY(p.ok());
      QCOMPARE(p->methods[0].value(p->methods[0].signature.inputs[2].value).tensor().symbols, std::vector<std::string>{printed});
    }
  }

  void legacyContainer() {
    // torch <= 2.7: the program JSON beside a torch.save zip of the state dict.
    // The pickle is OrderedDict{"w": tensor on storage "0", "b": tensor on storage "1"}, protocol 2, as
    // torch.save writes it: _rebuild_tensor_v2 with persistent ids ('storage', torch.FloatStorage, key,
    // 'cpu', 4). Made with Python's pickle and stand-in classes for torch's names.
    const unsigned char pkl[] = {0x80, 0x02, 0x63, 0x63, 0x6f, 0x6c, 0x6c, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x0a, 0x4f, 0x72, 0x64, 0x65, 0x72, 0x65, 0x64, 0x44, 0x69, 0x63, 0x74, 0x0a, 0x71, 0x00, 0x29, 0x52, 0x71, 0x01, 0x28, 0x58, 0x01, 0x00, 0x00, 0x00, 0x77, 0x71, 0x02, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2e, 0x5f, 0x75, 0x74, 0x69, 0x6c, 0x73, 0x0a, 0x5f, 0x72, 0x65, 0x62, 0x75, 0x69, 0x6c, 0x64, 0x5f, 0x74, 0x65, 0x6e, 0x73, 0x6f, 0x72, 0x5f, 0x76, 0x32, 0x0a, 0x71, 0x03, 0x28, 0x28, 0x58, 0x07, 0x00, 0x00, 0x00, 0x73, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x71, 0x04, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x46, 0x6c, 0x6f, 0x61, 0x74, 0x53, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x0a, 0x71, 0x05, 0x58, 0x01, 0x00, 0x00, 0x00, 0x30, 0x71, 0x06, 0x58, 0x03, 0x00, 0x00, 0x00, 0x63, 0x70, 0x75, 0x71, 0x07, 0x4b, 0x04, 0x74, 0x71, 0x08, 0x51, 0x4b, 0x00, 0x4b, 0x04, 0x85, 0x71, 0x09, 0x4b, 0x01, 0x85, 0x71, 0x0a, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x0b, 0x74, 0x71, 0x0c, 0x52, 0x71, 0x0d, 0x58, 0x01, 0x00, 0x00, 0x00, 0x62, 0x71, 0x0e, 0x68, 0x03, 0x28, 0x28, 0x68, 0x04, 0x68, 0x05, 0x58, 0x01, 0x00, 0x00, 0x00, 0x31, 0x71, 0x0f, 0x68, 0x07, 0x4b, 0x04, 0x74, 0x71, 0x10, 0x51, 0x4b, 0x00, 0x68, 0x09, 0x68, 0x0a, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x11, 0x74, 0x71, 0x12, 0x52, 0x71, 0x13, 0x75, 0x2e};
    std::string stateDict = zipBytes({{"archive/data.pkl", std::string(reinterpret_cast<const char*>(pkl), sizeof pkl)},
                                      {"archive/data/0", floats({1, 2, 3, 4})},
                                      {"archive/data/1", floats({5, 6, 7, 8})},
                                      {"archive/version", "3"}});
    std::string bytes = zipBytes({{"prog/serialized_exported_program.json", programJson()},
                                  {"prog/serialized_state_dict.pt", stateDict},
                                  {"prog/serialized_constants.pt", ""},
                                  {"prog/version", "1"}});
    auto p = importBytes(bytes, "legacy.pt2");
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->exportFacts.container, std::string("legacy torch.export zip"));
    const Method& m = p->methods[0];
    const TensorSpec& w = m.value(inputFor(m, "w")->value).tensor();
    const TensorSpec& b = m.value(inputFor(m, "b")->value).tensor();
    QCOMPARE(w.data.size, uint64_t(16));
    QCOMPARE(floatAt(w.data, 2), 3.0f);
    QCOMPARE(floatAt(b.data, 0), 5.0f);
    // The nested torch.save zip is read in place: the weights point into the outer file's mapping.
    QVERIFY(w.data.data >= p->backing->data() && w.data.data < p->backing->data() + p->backing->size());

    // torch 2.1: no top-level folder, and the same torch.save archive in a record named .json.
    auto old = importBytes(zipBytes({{"serialized_exported_program.json", programJson()},
                                     {"serialized_state_dict.json", stateDict},
                                     {"serialized_constants.json", ""},
                                     {"version", "1"}}),
                           "torch21.pt2");
    QVERIFY2(old.ok(), old.ok() ? "" : old.error().message().c_str());
    const Method& om = old->methods[0];
    QCOMPARE(floatAt(om.value(inputFor(om, "b")->value).tensor().data, 3), 8.0f);
    // A record of that name that is not a torch.save archive is named, not guessed at.
    auto wrong = importBytes(zipBytes({{"serialized_exported_program.json", programJson()},
                                       {"serialized_state_dict.json", "{\"w\": [1, 2, 3, 4]}"},
                                       {"version", "1"}}),
                             "wrong.pt2");
    QVERIFY(!wrong.ok());
    QVERIFY2(wrong.error().message().find("serialized_state_dict.json") != std::string::npos, wrong.error().message().c_str());
    QVERIFY2(wrong.error().message().find("torch.save archive") != std::string::npos, wrong.error().message().c_str());
    QVERIFY(wrong.error().offset.has_value());
  }

  void edgeDialect() {
    // sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) called with
    // only self and dim; and an operator no schema knows.
    std::string extra =
        ", {\"target\": \"torch.ops.aten.sum.dim_IntList\", \"inputs\": ["
        "{\"name\": \"self\", \"arg\": {\"as_tensor\": {\"name\": \"add\"}}, \"kind\": 1},"
        "{\"name\": \"dim\", \"arg\": {\"as_ints\": [0]}, \"kind\": 1}],"
        " \"outputs\": [{\"as_tensor\": {\"name\": \"mul\"}}]},"
        " {\"target\": \"torch.ops.mylib.frobnicate.default\", \"inputs\": [], \"outputs\": [{\"as_none\": true}]}";
    auto p = importBytes(zipBytes(archiveRecords(programJson("4", extra), weightsConfig(), floats({1, 2, 3, 4}))));
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const Method& m = p->methods[0];
    const Node& sum = m.nodes[2];
    QCOMPARE(sum.argNames, (std::vector<std::string>{"self", "dim", "keepdim", "dtype"}));
    QCOMPARE(std::get<bool>(m.value(sum.args[2]).payload), false);        // default filled in
    QCOMPARE(m.value(sum.args[3]).kind(), ValueKind::None);              // dtype=None
    const Node& add = m.nodes[1];
    QCOMPARE(add.argNames, (std::vector<std::string>{"self", "other", "alpha"}));  // keyword placed
    QCOMPARE(m.diagnostics.size(), size_t(1));
    QCOMPARE(m.diagnostics[0].node, 3);
    QVERIFY(m.diagnostics[0].message.find("unknown operator torch.ops.mylib.frobnicate.default") != std::string::npos);
  }

  void nonCoreOperatorsAreReported() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = openProgramFile(fixture("pt2/linear.pt2").toStdString());
    QVERIFY(p.ok());
    const Method& m = p->methods[0];
    QCOMPARE(m.diagnostics.size(), size_t(1));
    const std::string& msg = m.diagnostics[0].message;
    QVERIFY2(msg.find("aten::linear is not in the core ATen set") != std::string::npos, msg.c_str());
    QVERIFY(msg.find("node 'linear'") != std::string::npos);
    QVERIFY(msg.find("linear.py:134") != std::string::npos);  // stack trace
    // The ETRecord's programs are already core ATen / edge.
    auto e = openProgramFile(fixture("other/etrecord.bin").toStdString());
    QVERIFY(e.ok());
    for (const auto& mm : e->methods) QVERIFY(mm.diagnostics.empty());
  }

  void unionStyles() {
    // The same program with unions written as {"$type": m, "$value": v} (schema 4.x nightlies) and with
    // every member present and the unused ones null (torch 2.1/2.2); Infinity as a bare range bound (5.x).
    std::string json = programJson();
    std::string tagged = json, allNull = json;
    for (const char* member : {"as_tensor", "as_int"}) {
      std::string from = std::string("{\"") + member + "\": ";
      for (size_t pos = 0; (pos = tagged.find(from, pos)) != std::string::npos;) {
        // {"as_tensor": X} -> {"$type": "as_tensor", "$value": X}
        tagged.replace(pos, from.size(), std::string("{\"$type\": \"") + member + "\", \"$value\": ");
        pos += from.size();
      }
      for (size_t pos = 0; (pos = allNull.find(from, pos)) != std::string::npos;) {
        allNull.replace(pos, from.size(), "{\"as_none\": null, \"as_float\": null, " + from.substr(1));
        pos += from.size() + 36;
      }
    }
    size_t r = allNull.find("\"max_val\": 16");
    QVERIFY(r != std::string::npos);
    allNull.replace(r, std::string("\"max_val\": 16").size(), "\"max_val\": Infinity");
    for (const std::string& variant : {tagged, allNull}) {
      auto p = importBytes(zipBytes(archiveRecords(variant, weightsConfig(), floats({1, 2, 3, 4}))));
      QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
      const Method& m = p->methods[0];
      QCOMPARE(m.nodes.size(), size_t(2));
      QCOMPARE(m.nodes[1].args.size(), size_t(3));
      QCOMPARE(std::get<int64_t>(m.value(m.nodes[1].args[2]).payload), int64_t(2));
    }
    auto p = importBytes(zipBytes(archiveRecords(allNull, weightsConfig(), floats({1, 2, 3, 4}))));
    QVERIFY(p.ok());
    QVERIFY(!p->methods[0].symbolRanges[0].max.has_value());  // Infinity: unbounded
  }

  void malformedArchives_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("needle");
    auto rec = [](std::vector<ZipRecord> r) { return QByteArray::fromStdString(zipBytes(r)); };
    QTest::newRow("bad JSON") << rec(archiveRecords("{\"graph_module\": [", weightsConfig(), floats({1, 2, 3, 4})))
                              << "JSON of the exported program";
    QTest::newRow("weights shorter than metadata")
        << rec(archiveRecords(programJson(), weightsConfig(), floats({1, 2}))) << "weights of 'w'";
    std::string dangling = R"(, {"target": "torch.ops.aten.neg.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "ghost"}}, "kind": 1}], "outputs": [{"as_tensor": {"name": "add"}}]})";
    QTest::newRow("dangling node reference")
        << rec(archiveRecords(programJson("4", dangling), weightsConfig(), floats({1, 2, 3, 4}))) << "'ghost'";
    QTest::newRow("missing weights record")
        << rec({{"m/archive_format", "pt2"}, {"m/models/model.json", programJson()},
                {"m/data/weights/model_weights_config.json", weightsConfig()}})
        << "no such record";
    QTest::newRow("not a pt2") << rec({{"readme.txt", "hello"}}) << "without an exported program";
    QTest::newRow("checkpoint") << rec({{"archive/data.pkl", "\x80\x02}q\x00."}}) << "torch.save checkpoint";
    QTest::newRow("newer schema")
        << rec(archiveRecords(QString::fromStdString(programJson()).replace("\"major\": 8", "\"major\": 99").toStdString(),
                              weightsConfig(), floats({1, 2, 3, 4})))
        << "schema version";
  }
  // The .pt2 writer's zip: the same bytes as minizip for stored records
  // (small ones gathered, large ones written in place, CRCs from a thread).
  void storedZipMatchesMinizip() {
    std::string big(3 << 20, '\0');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 12));
    std::vector<test::ZipRecord> want = {{"a/empty", ""}, {"a/one", "x"}, {"a/big", big}, {"a/after", "tail"}};
    std::vector<StoredZipRecord> records;
    for (const auto& r : want) records.push_back({r.name, reinterpret_cast<const uint8_t*>(r.data.data()), r.data.size()});
    QTemporaryDir dir;
    std::string path = (dir.path() + "/w.zip").toStdString();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    QVERIFY(fd >= 0);
    auto s = writeStoredZip(fd, path, records);
    ::close(fd);
    QVERIFY2(s.ok(), s.ok() ? "" : s.error().message().c_str());
    QByteArray got = readAll(QString::fromStdString(path));
    std::string minizip = test::zipBytes(want);
    QVERIFY(!minizip.empty());
    QCOMPARE(got.size(), qsizetype(minizip.size()));
    QVERIFY(std::memcmp(got.data(), minizip.data(), minizip.size()) == 0);
  }

  // More records than the plain end record counts (65,535): zip64 end
  // records carry the count, so a reader sees every record.
  void storedZipManyRecords() {
    const size_t n = 70000;
    std::vector<std::string> names(n), data(n);
    std::vector<StoredZipRecord> records;
    for (size_t i = 0; i < n; ++i) {
      names[i] = "r/" + std::to_string(i);
      data[i] = std::to_string(i * i);
      records.push_back({names[i], reinterpret_cast<const uint8_t*>(data[i].data()), data[i].size()});
    }
    QTemporaryDir dir;
    std::string path = (dir.path() + "/many.zip").toStdString();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    QVERIFY(fd >= 0);
    auto s = writeStoredZip(fd, path, records);
    ::close(fd);
    QVERIFY(s.ok());
    auto file = MappedFile::open(path);
    QVERIFY(file.ok());
    auto zip = ZipArchive::open(file.value());
    QVERIFY2(zip.ok(), zip.ok() ? "" : zip.error().message().c_str());
    QCOMPARE(zip->entries().size(), n);
    const ZipEntry* last = zip->find("r/69999");
    QVERIFY(last);
    auto bytes = zip->bytes(*last);
    QVERIFY(bytes.ok());
    QCOMPARE(std::string(reinterpret_cast<const char*>(bytes->data), bytes->size), data[69999]);
    QCOMPARE(last->crc, uint32_t(crc32_z(0, bytes->data, bytes->size)));
  }

  // A Zip64 extra field in the central directory gives a record's local
  // header offset (records past 4 GiB: an 8B model's archive). Debian's
  // minizip ignores it; the reader must not.
  void zip64LocalHeaderOffsets() {
    std::string zip = test::zipBytes({{"a/first", "one"}, {"a/second", "two, stored"}});
    QVERIFY(!zip.empty());
    auto put = [&](size_t at, uint64_t v, int n) {
      for (int i = 0; i < n; ++i) zip[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    };
    auto get = [&](size_t at, int n) {
      uint64_t v = 0;
      for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(zip[at + i]);
      return v;
    };
    const size_t second = zip.find(std::string("PK\x01\x02", 4), zip.find(std::string("PK\x01\x02", 4)) + 4);
    QVERIFY(second != std::string::npos);
    QCOMPARE(get(second + 30, 2), uint64_t(0));  // no extra field yet
    const uint64_t offset = get(second + 42, 4);
    QVERIFY(offset > 0);
    // Saturate the offset and give it in a Zip64 extra field instead.
    put(second + 42, 0xffffffffu, 4);
    put(second + 30, 12, 2);
    std::string extra(12, '\0');
    extra[0] = 1, extra[2] = 8;
    for (int i = 0; i < 8; ++i) extra[4 + i] = static_cast<char>((offset >> (8 * i)) & 0xff);
    zip.insert(second + 46 + get(second + 28, 2), extra);
    const size_t eocd = zip.rfind(std::string("PK\x05\x06", 4));
    put(eocd + 12, get(eocd + 12, 4) + 12, 4);  // the central directory grew
    auto file = MappedFile::fromBytes("zip64.zip", zip.data(), zip.size());
    auto archive = ZipArchive::open(file);
    QVERIFY2(archive.ok(), archive.ok() ? "" : archive.error().message().c_str());
    const ZipEntry* e = archive->find("a/second");
    QVERIFY(e);
    auto text = archive->read(*e, 100);
    QVERIFY2(text.ok(), text.ok() ? "" : text.error().message().c_str());
    QCOMPARE(text.value(), std::string("two, stored"));
    // An offset past the end is an error naming the record, not a crash.
    put(second + 46 + get(second + 28, 2) + 4, zip.size() + 100, 8);
    auto bad = ZipArchive::open(MappedFile::fromBytes("zip64.zip", zip.data(), zip.size()));
    QVERIFY(!bad.ok());
    QVERIFY2(bad.error().message().find("a/second") != std::string::npos, bad.error().message().c_str());
  }

  void malformedArchives() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, needle);
    QVERIFY(!bytes.isEmpty());
    auto p = importBytes(bytes.toStdString());
    QVERIFY(!p.ok());
    QVERIFY2(p.error().message().find(needle.toStdString()) != std::string::npos, p.error().message().c_str());
  }

  void truncatedArchives() {
    LSTUDIO_REQUIRE_FIXTURES();
    QByteArray full = readAll(fixture("pt2/linear.pt2"));
    for (qsizetype n = 0; n < full.size(); n += std::max<qsizetype>(1, full.size() / 150)) {
      auto p = importBytes(full.left(n).toStdString());
      QVERIFY2(!p.ok(), qPrintable(QString("truncated to %1 bytes was accepted").arg(n)));
    }
  }

  void flippedBytes() {
    LSTUDIO_REQUIRE_FIXTURES();
    const QByteArray full = readAll(fixture("pt2/linear.pt2"));
    int rejected = 0;
    for (qsizetype pos = 0; pos < full.size(); pos += 7) {
      QByteArray b = full;
      b[pos] = static_cast<char>(b[pos] ^ 0x5a);
      auto p = importBytes(b.toStdString());
      if (!p.ok()) ++rejected;
      else (void)toText(summarize(p.value()));
    }
    QVERIFY(rejected > 0);
  }
};

QTEST_GUILESS_MAIN(TestPt2Reader)
#include "tst_pt2reader.moc"
