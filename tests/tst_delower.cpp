// De-lowering a .pte (engine/lowering/Delower) and lowering it again.
//
// Every real .pte of the fixtures is read, de-lowered, lowered under the
// config matching how it was made (configMatching), emitted, written and read
// back; the result must be the same program: the same instructions in the
// same order (operator and overload, or delegate backend and blob), the same
// arguments (constant bytes equal, tensors of the same dtype and shape,
// scalars equal), the same operator table, inputs and outputs, and no arena
// larger than the file's own. Zoo samples go the same way from their first
// export. Where the studio differs on purpose:
//   - value tables are not compared: the emitter drops values nothing uses
//     and adds schema defaults the .pte left out;
//   - a removed view (a tensor sharing its base's slot with no instruction)
//     comes back as view_copy and is removed again: the count of
//     instructions is unchanged, the view's value is a new one;
//   - arenas may shrink (the studio's planner suite keeps the smallest).
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "app/Cli.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Delower.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Pipeline.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/formats/schema/program_generated.h"
#include "tests/TestSupport.h"
#include "tests/support/Pt2Samples.h"
#include "tests/support/SyntheticPte.h"
#include "tests/support/ZipWriter.h"

using namespace lstudio;

namespace {

std::string overloadName(const OperatorRef& r) { return r.overload.empty() ? "default" : r.overload; }
std::string opName(const Method& m, const Node& n) {
  if (n.kind == NodeKind::Delegate) return "delegate " + m.delegates.at(n.delegate).backendId;
  return m.operators.at(n.op).name + "." + overloadName(m.operators.at(n.op));
}

bool sameBytes(const Bytes& a, const Bytes& b) {
  return a.size == b.size && (a.size == 0 || std::memcmp(a.data, b.data, a.size) == 0);
}

/// Empty when argument `a` of `was` and `b` of `is` are the same value.
std::string compareValue(const Method& was, ValueId a, const Method& is, ValueId b) {
  const Value& x = was.values.at(a);
  const Value& y = is.values.at(b);
  if (x.kind() != y.kind()) return std::string(valueKindName(x.kind())) + " became " + valueKindName(y.kind());
  if (auto* t = x.tensorIf()) {
    const TensorSpec& u = y.tensor();
    if (t->dtype != u.dtype || t->sizes != u.sizes) return t->shapeString() + " became " + u.shapeString();
    bool c1 = t->storage() == TensorStorage::Constant || t->storage() == TensorStorage::External;
    bool c2 = u.storage() == TensorStorage::Constant || u.storage() == TensorStorage::External;
    if (c1 != c2) return std::string("storage ") + tensorStorageName(t->storage()) + " became " + tensorStorageName(u.storage());
    if (t->external != u.external) return "external flag changed";
    if (t->external && t->fqn != u.fqn) return "external name " + t->fqn + " became " + u.fqn;
    if (c1 && !t->data.empty() && !sameBytes(t->data, u.data)) return "constant bytes differ";
    return {};
  }
  if (auto* i = std::get_if<int64_t>(&x.payload)) return *i == std::get<int64_t>(y.payload) ? "" : "int differs";
  if (auto* d = std::get_if<double>(&x.payload)) return *d == std::get<double>(y.payload) ? "" : "double differs";
  if (auto* f = std::get_if<bool>(&x.payload)) return *f == std::get<bool>(y.payload) ? "" : "bool differs";
  if (auto* s = std::get_if<std::string>(&x.payload)) return *s == std::get<std::string>(y.payload) ? "" : "string differs";
  auto items = [](const Value& v) -> std::vector<ValueId> {
    if (auto* l = std::get_if<IntList>(&v.payload)) return l->items;
    if (auto* l = std::get_if<TensorList>(&v.payload)) return l->items;
    if (auto* l = std::get_if<OptionalTensorList>(&v.payload)) return l->items;
    return {};
  };
  auto xi = items(x), yi = items(y);
  if (xi.size() != yi.size()) return "list length differs";
  for (size_t k = 0; k < xi.size(); ++k) {
    if ((xi[k] < 0) != (yi[k] < 0)) return "list item None differs";
    if (xi[k] >= 0)
      if (std::string d = compareValue(was, xi[k], is, yi[k]); !d.empty()) return "item " + std::to_string(k) + ": " + d;
  }
  if (auto* l = std::get_if<DoubleList>(&x.payload)) return l->items == std::get<DoubleList>(y.payload).items ? "" : "doubles differ";
  if (auto* l = std::get_if<BoolList>(&x.payload)) return l->items == std::get<BoolList>(y.payload).items ? "" : "bools differ";
  return {};
}

/// Empty when `is` is the same program as `was` (see the file comment).
std::string compareProgram(const Program& was, const Program& is) {
  if (was.methods.size() != is.methods.size()) return "method count";
  for (size_t mi = 0; mi < was.methods.size(); ++mi) {
    const Method& a = was.methods[mi];
    const Method* bp = is.method(a.name);
    if (!bp) return "method " + a.name + " is missing";
    const Method& b = *bp;
    std::string w = a.name + ": ";
    if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return w + "inputs/outputs count";
    for (size_t k = 0; k < a.inputs.size(); ++k)
      if (std::string d = compareValue(a, a.inputs[k], b, b.inputs[k]); !d.empty()) return w + "input " + std::to_string(k) + ": " + d;
    for (size_t k = 0; k < a.outputs.size(); ++k)
      if (std::string d = compareValue(a, a.outputs[k], b, b.outputs[k]); !d.empty()) return w + "output " + std::to_string(k) + ": " + d;
    if (a.nodes.size() != b.nodes.size())
      return w + std::to_string(a.nodes.size()) + " instructions became " + std::to_string(b.nodes.size());
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      const Node& x = a.nodes[i];
      const Node& y = b.nodes[i];
      std::string wi = w + "instruction " + std::to_string(i) + " (" + opName(a, x) + "): ";
      if (x.kind != y.kind || opName(a, x) != opName(b, y)) return wi + "became " + opName(b, y);
      if (x.kind == NodeKind::Delegate && !sameBytes(a.delegates[x.delegate].blob, b.delegates[y.delegate].blob))
        return wi + "delegate blob differs";
      if (x.args.size() != y.args.size()) return wi + "argument count differs";
      for (size_t k = 0; k < x.args.size(); ++k)
        if (std::string d = compareValue(a, x.args[k], b, y.args[k]); !d.empty()) return wi + "argument " + std::to_string(k) + ": " + d;
    }
    std::set<std::string> ops1, ops2;
    for (const auto& o : a.operators) ops1.insert(o.name + "." + overloadName(o));
    for (const auto& o : b.operators) ops2.insert(o.name + "." + overloadName(o));
    if (ops1 != ops2) return w + "operator tables differ";
    if (a.nonConstBufferSizes.size() != b.nonConstBufferSizes.size())
      return w + std::to_string(a.nonConstBufferSizes.size()) + " arenas became " + std::to_string(b.nonConstBufferSizes.size());
    // The container meta as stored (a synthetic .pte without one gets the default).
    if (!a.encodedInputSpec.empty() && a.encodedInputSpec != b.encodedInputSpec)
      return w + "input spec " + a.encodedInputSpec + " became " + b.encodedInputSpec;
    if (!a.encodedOutputSpec.empty() && a.encodedOutputSpec != b.encodedOutputSpec)
      return w + "output spec " + a.encodedOutputSpec + " became " + b.encodedOutputSpec;
    for (size_t id = 1; id < b.nonConstBufferSizes.size(); ++id) {
      int64_t before = id < a.nonConstBufferSizes.size() ? a.nonConstBufferSizes[id] : 0;
      if (b.nonConstBufferSizes[id] > before)
        return w + "arena " + std::to_string(id) + " grew from " + std::to_string(before) + " to " +
               std::to_string(b.nonConstBufferSizes[id]);
    }
  }
  return {};
}

/// Opens `pt2`, lowers it under `c`, emits it and writes `pte`: the emitted program.
Result<Program> lowerToPte(const std::string& pt2, const std::string& pte, const ExecutorchBackendConfig& c) {
  auto opened = openProgramFile(pt2);
  if (!opened) return opened.error();
  Pipeline p(std::make_shared<const Program>(std::move(opened.value())), c);
  p.runToEnd();
  if (p.failed()) return Error{ErrorCode::Invalid, pt2, std::nullopt, "lowering", "success", p.records()[p.position() - 1].name};
  auto emitted = emitProgram(*p.current(), c);
  if (!emitted) return emitted.error();
  if (auto w = writePte(emitted.value(), pte, writeOptionsFor(c)); !w) return w.error();
  return emitted;
}

/// A sample torch.export program (tests/support/Pt2Samples) saved as DIR/NAME.pt2,
/// lowered under `c`, emitted and written as DIR/NAME.pte.
struct EmittedSample {
  Program program;
  std::string pte;
};
Result<EmittedSample> emitSample(const std::string& json, const QString& dir, const std::string& name,
                                 const ExecutorchBackendConfig& c) {
  std::string zip = test::zipBytes(test::archiveRecords(json, test::weightsConfig(), test::floats({1, 2, 3, 4})));
  const std::string base = (dir + "/").toStdString() + name;
  {
    std::ofstream f(base + ".pt2", std::ios::binary);
    f << zip;
  }
  auto emitted = lowerToPte(base + ".pt2", base + ".pte", c);
  if (!emitted) return emitted.error();
  return EmittedSample{std::move(emitted.value()), base + ".pte"};
}

/// De-lowers and lowers `pte` under `config`, emits and writes it to `out`, reads it back.
Result<Program> relower(const Program& pte, const ExecutorchBackendConfig& config, const std::string& out) {
  Pipeline p(std::make_shared<const Program>(pte), config);
  p.runToEnd();
  if (p.failed()) {
    const PassRecord& r = p.records()[p.position() - 1];
    return Error{ErrorCode::Invalid, pte.path, std::nullopt, r.name,
                 "a pass that succeeds", r.diagnostics.empty() ? "failed" : r.diagnostics[0].message};
  }
  auto emitted = emitProgram(*p.current(), config);
  if (!emitted) return emitted.error();
  PteWriteOptions o = writeOptionsFor(config);
  o.writeDataFiles = unresolvedExternalKeys(emitted.value()).empty();
  auto written = writePte(emitted.value(), out, o);
  if (!written) return written.error();
  auto back = readProgramFile(out);
  if (!back) return back.error();
  std::vector<DataFile> files;
  for (size_t i = 1; i < written->files.size(); ++i) {
    auto d = readDataFile(written->files[i].path);
    if (!d) return d.error();
    files.push_back(std::move(d.value()));
  }
  if (!files.empty())
    if (auto s = resolveExternalTensors(back.value(), files); !s) return s.error();
  return back;
}

/// A fixture .pte with the .ptd of the same stem resolved when there is one.
Result<Program> readFixture(const QString& path) {
  auto p = readProgramFile(path.toStdString());
  if (!p) return p;
  QString stem = QFileInfo(path).completeBaseName();
  for (const QString& ptd : test::fixtureFiles("ptd", {"*.ptd"})) {
    QString s = QFileInfo(ptd).completeBaseName();
    if (s == stem || (stem == "rs_data_map_model" && s == "rs_default_external_constant")) {
      auto d = readDataFile(ptd.toStdString());
      if (!d) return d.error();
      if (auto r = resolveExternalTensors(p.value(), {d.value()}); !r) return r.error();
    }
  }
  return p;
}

/// A .pt2 of a zoo sample, lowered with the default config and exported to dir/NAME.pte, read back.
Result<Program> exportedSample(const QString& dir, const std::string& name, const SampleOptions& options = {},
                               ExecutorchBackendConfig c = {}) {
  auto built = buildSample(name, options);
  if (!built) return built.error();
  std::string pt2 = (dir + "/" + QString::fromStdString(name) + ".pt2").toStdString();
  if (auto s = writePt2(built.value(), pt2); !s) return s.error();
  c.emitMutableBufferNames = c.emitMutableBufferNames || name == "llama";
  std::string pte = (dir + "/" + QString::fromStdString(name) + ".pte").toStdString();
  if (auto emitted = lowerToPte(pt2, pte, c); !emitted) return emitted.error();
  return readProgramFile(pte);
}

}  // namespace

class TestDelower : public QObject {
  Q_OBJECT
 private slots:
  // A .pte with torch.cond holds jumps and moves (ExecuTorch's _emit_cond); de-lowered,
  // they are a cond node again whose branches are graphs of their own, and lowered
  // again the file has the same layout and runs both branches alike.
  void condJumpsBecomeACondAgain() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    auto sample = emitSample(test::condProgramJson(), dir.path(), "cond", c);
    QVERIFY2(sample, sample ? "" : sample.error().message().c_str());
    const Program& emitted = sample->program;
    auto read = readProgramFile(sample->pte);
    QVERIFY(read);
    auto kinds = [](const Method& m) {
      std::vector<NodeKind> k;
      for (const Node& n : m.nodes) k.push_back(n.kind);
      return k;
    };
    auto back = delowerProgram(read.value());
    QVERIFY2(back, back ? "" : back.error().message().c_str());
    const Method& d = back->methods[0];
    QCOMPARE(d.subgraphs.size(), size_t(2));
    QCOMPARE(d.nodes.size(), size_t(3));
    const Node& cond = d.nodes[2];
    QCOMPARE(cond.kind, NodeKind::Cond);
    QCOMPARE(cond.outputs, d.outputs);
    QCOMPARE(cond.subgraphs, (std::vector<int32_t>{0, 1}));
    const Method& whenFalse = d.subgraphs[1];
    QCOMPARE(whenFalse.nodes.size(), size_t(2));
    QCOMPARE(whenFalse.operators[whenFalse.nodes[0].op].fullName(), std::string("aten::cos.default"));
    QCOMPARE(whenFalse.inputs, std::vector<ValueId>(cond.args.begin() + 1, cond.args.end()));
    QCOMPARE(whenFalse.outputs, whenFalse.nodes[1].outputs);
    // pred, x and w; the 2.0 the emitter made a constant tensor in the false
    // branch stays that branch's own (ExecuTorch lifts it there), not an operand.
    QCOMPARE(cond.args.size(), size_t(3));
    const TensorSpec* two = whenFalse.values[whenFalse.nodes[1].args[1]].tensorIf();
    QVERIFY(two && two->sizes.empty() && two->data.size == 4);
    ExecutorchBackendConfig matching = configMatching(read.value());
    Pipeline again(std::make_shared<const Program>(std::move(read.value())), matching);
    again.runToEnd();
    QVERIFY(!again.failed());
    auto reemitted = emitProgram(*again.current(), c);
    QVERIFY2(reemitted, reemitted ? "" : reemitted.error().message().c_str());
    QCOMPARE(kinds(reemitted->methods[0]), kinds(emitted.methods[0]));
    QCOMPARE(reemitted->methods[0].nonConstBufferSizes, emitted.methods[0].nonConstBufferSizes);
    // A jump that is not a cond's is refused, naming the instruction.
    Program odd = emitted;
    odd.methods[0].nodes[2].jumpTarget = 4;
    auto refused = delowerProgram(odd);
    QVERIFY(!refused);
    QVERIFY2(refused.error().message().find("instruction 2") != std::string::npos, refused.error().message().c_str());
  }

  // ExecuTorch's map and scan loops (sym_size, select_copy per row, body,
  // et_copy_index, add/eq, a jump back, sub) de-lower to map and scan nodes
  // whose bodies read the weights as operands; lowered again, the file is the same.
  void loopsBecomeMapAndScanAgain_data() {
    QTest::addColumn<QString>("which");
    QTest::newRow("map") << "map";
    QTest::newRow("scan") << "scan";
  }
  void loopsBecomeMapAndScanAgain() {
    QFETCH(QString, which);
    const bool isMap = which == "map";
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    c.memoryPlanning.algorithms = {"et-greedy"};
    auto sample = emitSample(isMap ? test::mapProgramJson() : test::scanProgramJson(), dir.path(), "loop", c);
    QVERIFY2(sample, sample ? "" : sample.error().message().c_str());
    const Program& emitted = sample->program;
    const std::string& pte = sample->pte;
    auto read = readProgramFile(pte);
    QVERIFY(read);
    auto back = delowerProgram(read.value());
    QVERIFY2(back, back ? "" : back.error().message().c_str());
    const Method& d = back->methods[0];
    QCOMPARE(d.nodes.size(), size_t(1));
    const Node& loop = d.nodes[0];
    QCOMPARE(loop.kind, isMap ? NodeKind::Map : NodeKind::Scan);
    QCOMPARE(loop.outputs, d.outputs);
    QCOMPARE(d.subgraphs.size(), size_t(1));
    const Method& body = d.subgraphs[0];
    QCOMPARE(body.inputs.size(), size_t(3));  // map: row, y, w; scan: h, row, w
    QCOMPARE(body.nodes.size(), size_t(3));   // sin, mul, add / mul, add, sin: functional again
    QCOMPARE(body.outputs.size(), isMap ? size_t(1) : size_t(2));
    QCOMPARE(loop.argNames, isMap ? (std::vector<std::string>{"xs", "operands", "operands"})
                                  : (std::vector<std::string>{"init", "xs", "additional_inputs"}));
    ExecutorchBackendConfig matching = configMatching(read.value());
    matching.memoryPlanning.algorithms = {"et-greedy"};
    std::string again = (dir.path() + "/again.pte").toStdString();
    auto relowered = relower(read.value(), matching, again);
    QVERIFY2(relowered, relowered ? "" : relowered.error().message().c_str());
    auto bytes = [](const std::string& path) {
      std::ifstream f(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(f), {});
    };
    QVERIFY(!bytes(pte).empty());
    QVERIFY(bytes(again) == bytes(pte));
    // A jump back that is not a loop's is refused, naming the instruction.
    Program odd = emitted;
    const size_t jump = isMap ? 8 : 10;
    odd.methods[0].nodes[jump - 1] = odd.methods[0].nodes[jump - 2];  // no eq.Scalar before the jump
    auto refused = delowerProgram(odd);
    QVERIFY(!refused);
    QVERIFY2(refused.error().message().find("instruction " + std::to_string(jump)) != std::string::npos,
             refused.error().message().c_str());
  }

  void fixturesRoundTrip_data() {
    QTest::addColumn<QString>("path");
    const QStringList files = test::fixtureFiles("pte", {"*.pte"}) + test::fixtureFiles("other", {"*.bpte"});
    if (files.isEmpty()) QSKIP("../shared/fixtures is absent");
    for (const QString& f : files) QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }
  void fixturesRoundTrip() {
    QFETCH(QString, path);
    auto pte = readFixture(path);
    QVERIFY2(pte, pte ? "" : qPrintable(QString::fromStdString(pte.error().message())));
    QTemporaryDir dir;
    auto back = relower(pte.value(), configMatching(pte.value()), (dir.path() + "/out.pte").toStdString());
    QVERIFY2(back, back ? "" : qPrintable(QString::fromStdString(back.error().message())));
    std::string diff = compareProgram(pte.value(), back.value());
    QVERIFY2(diff.empty(), diff.c_str());
  }

  void zooSamplesRoundTrip_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("attention");
    for (const char* s : {"mlp", "dynamic_batch", "llama", "quantized_linear", "training", "mobilenet_v2"})
      QTest::newRow(s) << s << QString();
    QTest::newRow("llama --attention static") << "llama" << "static";
  }
  void zooSamplesRoundTrip() {
    QFETCH(QString, name);
    QFETCH(QString, attention);
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 2;
    o.attention = attention.toStdString();
    auto first = exportedSample(dir.path(), name.toStdString(), o);
    QVERIFY2(first, first ? "" : qPrintable(QString::fromStdString(first.error().message())));
    ExecutorchBackendConfig c = configMatching(first.value());
    c.emitMutableBufferNames = name == "llama";
    auto back = relower(first.value(), c, (dir.path() + "/again.pte").toStdString());
    QVERIFY2(back, back ? "" : qPrintable(QString::fromStdString(back.error().message())));
    std::string diff = compareProgram(first.value(), back.value());
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // The de-lowered graph itself: functional operators, no plan, torch.export's signature.
  void delowersLlamaToAnExportedGraph() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 1;
    auto pte = exportedSample(dir.path(), "llama", o);
    QVERIFY(pte);
    DelowerReport r;
    auto d = delowerProgram(pte.value(), &r);
    QVERIFY2(d, d ? "" : qPrintable(QString::fromStdString(d.error().message())));
    const Method& m = d->methods[0];
    QVERIFY(m.nonConstBufferSizes.empty());
    for (const Value& v : m.values)
      if (auto* t = v.tensorIf()) QVERIFY(!t->slot && t->viewOf == kNoValue);
    for (const OperatorRef& op : m.operators) {
      QVERIFY2(op.overload != "out" && !op.overload.ends_with("_out"), op.fullName().c_str());
      QVERIFY(op.name != "executorch_prim::et_view");
    }
    QVERIFY(r.functionalized > 10);
    // The KV caches are buffers the method returns mutated, by their names (emit_mutable_buffer_names).
    std::set<std::string> buffers, mutated;
    for (const InputSpec& in : m.signature.inputs)
      if (in.kind == InputSpec::Kind::Buffer) buffers.insert(in.target);
    for (const OutputSpec& out : m.signature.outputs)
      if (out.kind == OutputSpec::Kind::BufferMutation) mutated.insert(out.target);
    QCOMPARE(buffers.size(), size_t(2));
    QCOMPARE(mutated, buffers);
    QVERIFY(buffers.count("layers.0.attention.kv_cache.k_cache"));
    // Constants are parameters in front of the user inputs, every placeholder is an input.
    QCOMPARE(m.signature.inputs.size(), m.inputs.size());
    QCOMPARE(m.signature.inputs.back().kind, InputSpec::Kind::User);
    QVERIFY(r.parameters > 5);
    QCOMPARE(r.userInputs, pte->methods[0].inputs.size());
    QVERIFY(verifyProgram(d.value()).empty());
  }

  // A removed view (no instruction; it shares its base's slot) comes back as
  // view_copy; scratch tensors of a backend's kernels become its results.
  void restoresRemovedViewsAndScratch() {
    QString path = test::fixture("pte/arduino_KeywordSpotting_model.pte");
    if (!QFile::exists(path)) QSKIP("fixture absent");
    auto pte = readProgramFile(path.toStdString());
    QVERIFY(pte);
    DelowerReport r;
    auto d = delowerProgram(pte.value(), &r);
    QVERIFY(d);
    const Method& m = d->methods[0];
    QCOMPARE(r.views, size_t(1));
    QCOMPARE(m.nodes.size(), pte->methods[0].nodes.size() + 1);
    QCOMPARE(r.buffers, size_t(0));  // no state: scratch and views are accounted for
    int scratchOutputs = 0;
    for (const Node& n : m.nodes)
      for (ValueId o : n.outputs) scratchOutputs += m.values[o].tensor().dtype == ScalarType::Byte;
    QVERIFY(scratchOutputs >= 9);
  }

  // A call that does not fit the studio's schema (add.out without alpha, as
  // another version of the operator might be written) is kept as called.
  void keepsCallsThatDoNotFitTheSchema() {
    test::SynthProgram p;
    p.tensors.push_back({ScalarType::Float, {4}, std::make_pair(1u, uint64_t{0}), 0, {}});
    p.tensors.push_back({ScalarType::Float, {4}, std::make_pair(1u, uint64_t{16}), 0, {}});
    p.tensors.push_back({ScalarType::Float, {4}, std::make_pair(1u, uint64_t{32}), 0, {}});
    p.kernels.push_back({"aten::add", "out", {0, 1, 2, 2}});
    p.inputs = {0, 1};
    p.outputs = {2};
    p.arenas = {0, 48};
    QTemporaryDir dir;
    std::string path = (dir.path() + "/old_add.pte").toStdString(), error;
    QVERIFY2(test::writeSyntheticPte(path, p, &error), error.c_str());
    auto pte = readProgramFile(path);
    QVERIFY(pte);
    DelowerReport r;
    auto d = delowerProgram(pte.value(), &r);
    QVERIFY(d);
    QCOMPARE(r.kept, size_t(1));
    QCOMPARE(r.functionalized, size_t(0));
    QVERIFY(!r.notes.empty() && r.notes[0].find("kept as called") != std::string::npos);
    QCOMPARE(d->methods[0].nodes[0].outputs, std::vector<ValueId>{2});
    auto back = relower(pte.value(), configMatching(pte.value()), (dir.path() + "/again.pte").toStdString());
    QVERIFY2(back, back ? "" : qPrintable(QString::fromStdString(back.error().message())));
    std::string diff = compareProgram(pte.value(), back.value());
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // Found by tools/fuzz.sh (delower): optest_maxpool2d with an arena of
  // INT64_MAX bytes overflowed the pipeline's program fingerprint (UBSan).
  // De-lowering drops the stored plan; the new one is small and sound.
  // ExecuTorch's planner adds 64 bytes to every arena of a method holding an
  // XNNPACK delegate (its kernels read past a tensor's end); a re-lowered
  // delegated program must too, or it overruns its arena at run time.
  void xnnpackArenaPadding() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto pte = readFixture(test::fixture("pte/djl_add.pte"));
    QVERIFY2(pte, pte ? "" : qPrintable(QString::fromStdString(pte.error().message())));
    Pipeline p(std::make_shared<const Program>(pte.value()), configMatching(pte.value()));
    p.runToEnd();
    QVERIFY(!p.failed());
    const Method& m = p.current()->methods[0];
    QVERIFY(!m.delegates.empty());
    QCOMPARE(m.nonConstBufferSizes.size(), size_t(2));
    const MemoryPlanReport r = analyzeMemoryPlan(m);
    QVERIFY(!r.arenas.empty());
    for (const ArenaStats& a : r.arenas)
      QVERIFY2(a.size >= a.lowerBound && a.lowerBound >= 64,
               qPrintable(QString("arena %1 B, lower bound %2 B").arg(a.size).arg(a.lowerBound)));
    QVERIFY(m.nonConstBufferSizes[1] <= pte->methods[0].nonConstBufferSizes[1]);
  }

  void absurdStoredArena() {
    QString path = test::fixture("pte/optest_maxpool2d_pte__maxpool2d.pte");
    if (!QFile::exists(path)) QSKIP("fixture absent");
    QByteArray bytes = test::readAll(path);
    auto* plan = executorch_flatbuffer::GetMutableProgram(bytes.data())->mutable_execution_plan()->GetMutableObject(0);
    plan->mutable_non_const_buffer_sizes()->Mutate(1, INT64_MAX);
    auto pte = readProgram(MappedFile::fromBytes("huge-arena.pte", bytes.constData(), uint64_t(bytes.size())));
    QVERIFY(pte);
    QCOMPARE(pte->methods[0].nonConstBufferSizes[1], INT64_MAX);
    Pipeline p(std::make_shared<const Program>(std::move(pte.value())), configMatching(pte.value()));
    p.runToEnd();
    QVERIFY(!p.failed());
    QVERIFY(p.current()->methods[0].nonConstBufferSizes[1] < (int64_t(1) << 30));
  }

  // State written in place twice (two copy_ into one buffer) is a buffer the
  // method mutates; in-place writes are not second definitions.
  void bufferWrittenInPlaceTwice() {
    Program p;
    p.path = "state.pte";
    Method m;
    m.name = "forward";
    TensorSpec x;
    x.sizes = {4};
    x.dimOrder = {0};
    x.slot = PlannedSlot{1, 0};
    TensorSpec buf = x;
    buf.slot = PlannedSlot{1, 16};
    m.values = {Value{x, {}}, Value{buf, {}}, Value{false, {}}};
    m.operators = {{"aten::copy_", ""}};
    for (int i = 0; i < 2; ++i) {
      Node n;
      n.op = 0;
      n.args = {1, 0, 2, 1};
      n.outputs = {1};
      m.nodes.push_back(n);
    }
    m.inputs = {0};
    m.outputs = {1};
    m.nonConstBufferSizes = {0, 32};
    p.methods.push_back(m);
    DelowerReport r;
    auto d = delowerProgram(p, &r);
    QVERIFY(d);
    QCOMPARE(r.buffers, size_t(1));
    QCOMPARE(d->methods[0].signature.outputs.at(0).kind, OutputSpec::Kind::BufferMutation);
    Pipeline pipe(std::make_shared<const Program>(p), configMatching(p));
    pipe.runToEnd();
    QVERIFY2(!pipe.failed(), pipe.failed() ? pipe.records()[pipe.position() - 1].diagnostics.at(0).message.c_str() : "");
    auto e = emitProgram(*pipe.current(), configMatching(p));
    QVERIFY(e);
    QCOMPARE(e->methods[0].nodes.size(), size_t(2));
    QVERIFY(e->methods[0].outputs.empty());  // the state is written back in place, not returned
    QVERIFY(e->methods[0].values[e->methods[0].nodes[0].args[0]].tensor().slot);  // the buffer is planned
  }

  void configMatchesTheFile() {
    QString path = test::fixture("pte/stories260k_hybrid_llama_qnn.pte");
    if (!QFile::exists(path)) QSKIP("fixture absent");
    auto pte = readProgramFile(path.toStdString());
    QVERIFY(pte);
    ExecutorchBackendConfig c = configMatching(pte.value());
    // Its inputs and outputs are not planned: the runtime's caller provides them.
    QVERIFY(!c.memoryPlanning.allocGraphInput);
    QVERIFY(!c.memoryPlanning.allocGraphOutput);
    QCOMPARE(c.segmentAlignment, pte->facts.segmentAlignment);
  }

  // ExecuTorch pads the eh00 header to the schema's largest force_align: a raised
  // constant_tensor_alignment shows there, and re-lowering keeps it.
  void configMatchesRaisedAlignments() {
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 1;
    auto plain = exportedSample(dir.path(), "mlp", o);
    QVERIFY(plain);
    QCOMPARE(plain->facts.headerPadding, 32u);
    QVERIFY(!configMatching(plain.value()).constantTensorAlignment);
    for (uint64_t alignment : {64u, 256u}) {
      ExecutorchBackendConfig c;
      c.constantTensorAlignment = alignment;
      auto pte = exportedSample(dir.path(), "mlp", o, c);
      QVERIFY(pte);
      QCOMPARE(uint64_t(pte->facts.headerPadding), alignment);
      ExecutorchBackendConfig matched = configMatching(pte.value());
      QCOMPARE(matched.constantTensorAlignment.value_or(0), alignment);
      QVERIFY(!matched.delegateAlignment);
    }
  }

  // A MemoryPlanningPass(alignment=N) shows in the plan: every offset and arena is a multiple
  // of N. Re-lowering keeps it (it came back at 16), and the file comes back byte for byte; a
  // plan at 16 may read higher, and planning again with what it reads gives the same file.
  void configMatchesThePlanAlignment_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<qulonglong>("alignment");
    for (const char* s : {"mlp", "llama"})
      for (qulonglong a : {16ull, 64ull, 4096ull}) QTest::newRow(qPrintable(QString("%1 %2").arg(s).arg(a))) << s << a;
  }
  void configMatchesThePlanAlignment() {
    QFETCH(QString, name);
    QFETCH(qulonglong, alignment);
    QTemporaryDir dir;
    SampleOptions o;
    o.layers = 2;
    ExecutorchBackendConfig c;
    c.memoryPlanning.alignment = alignment;
    auto first = exportedSample(dir.path(), name.toStdString(), o, c);
    QVERIFY2(first, first ? "" : qPrintable(QString::fromStdString(first.error().message())));
    ExecutorchBackendConfig matched = configMatching(first.value());
    QVERIFY2(matched.memoryPlanning.alignment >= alignment, qPrintable(QString::number(matched.memoryPlanning.alignment)));
    matched.emitMutableBufferNames = name == "llama";
    const QString again = dir.path() + "/again.pte";
    auto back = relower(first.value(), matched, again.toStdString());
    QVERIFY2(back, back ? "" : qPrintable(QString::fromStdString(back.error().message())));
    const std::string diff = compareProgram(first.value(), back.value());
    QVERIFY2(diff.empty(), diff.c_str());
    for (const Method& m : back->methods)
      for (const Value& v : m.values)
        if (const TensorSpec* t = v.tensorIf(); t && t->slot)
          QVERIFY2(t->slot->offset % alignment == 0, qPrintable(QString("%1 at offset %2").arg(QString::fromStdString(v.name)).arg(t->slot->offset)));
    if (name == "mlp") {  // the whole file comes back byte for byte
      QFile a(dir.path() + "/" + name + ".pte"), b(again);
      QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
      QVERIFY(a.readAll() == b.readAll());
    }
  }

  void refusesWhatCannotBeUndone() {
    Program p;
    p.path = "made.pte";
    Method m;
    m.name = "forward";
    m.values.push_back(Value{true, {}});
    Node j;
    j.kind = NodeKind::JumpFalse;
    j.args = {0};
    j.jumpTarget = 0;
    m.nodes.push_back(j);
    p.methods.push_back(m);
    auto d = delowerProgram(p);
    QVERIFY(!d);
    QString text = QString::fromStdString(d.error().message());
    QVERIFY2(text.contains("made.pte") && text.contains("a jump back"), qPrintable(text));
    p.format = SourceFormat::Pt2;
    auto e = delowerProgram(p);
    QVERIFY(!e);
    QVERIFY(QString::fromStdString(e.error().message()).contains("a program read from a .pte"));
  }

  // lowering-cli: a .pte runs through DelowerPtePass and the whole pipeline, and exports.
  void cliLowersAndExportsAPte() {
    QString path = test::fixture("pte/xor.pte");
    if (!QFile::exists(path)) QSKIP("fixture absent");
    std::ostringstream out, err;
    QCOMPARE(cli::run({"lower", path.toStdString()}, out, err), int(cli::kOk));
    QVERIFY2(out.str().find("DelowerPtePass: changed") != std::string::npos, out.str().c_str());
    QVERIFY(out.str().find("MemoryPlanningPass: changed") != std::string::npos);
    QTemporaryDir dir;
    std::ostringstream out2, err2;
    std::string target = (dir.path() + "/xor.pte").toStdString();
    QCOMPARE(cli::run({"export", path.toStdString(), "-o", target}, out2, err2), int(cli::kOk));
    QVERIFY2(out2.str().find("method forward: 2 inputs, 10 outputs, 66 instructions") != std::string::npos, out2.str().c_str());
    auto back = readProgramFile(target);
    QVERIFY(back);
  }
};

QTEST_GUILESS_MAIN(TestDelower)
#include "tst_delower.moc"
