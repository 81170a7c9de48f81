// The emitter: every zoo sample that lowers is exported under the default
// config and under each switch, read back with PteReader and PtdReader, and
// checked (no overlapping live tensors, weights equal to the .pt2's byte for
// byte and never copied, operators and instructions as lowered, inputs only
// the user's); what cannot be emitted, and outputs that cannot be written,
// fail with clear errors and leave existing files alone.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <set>
#include <sstream>

#include "app/Cli.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/samples/SampleZoo.h"
#include "engine/ir/OpRegistry.h"
#include "engine/ir/TreeSpec.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Pipeline.h"
#include "tests/TestSupport.h"

using namespace lstudio;

namespace {

const char* msg(const Error& e) {
  static thread_local std::string s;
  s = e.message();
  return s.c_str();
}

bool sameContent(const Bytes& a, const Bytes& b) {
  return a.size == b.size && (a.size == 0 || std::memcmp(a.data, b.data, a.size) == 0);
}

bool inside(const Bytes& b, const MappedFile& f) {
  return b.size == 0 || (b.data >= f.data() && b.data + b.size <= f.data() + f.size());
}

struct Lowered {
  std::shared_ptr<const Program> pt2;      ///< as read from the archive
  std::shared_ptr<const Program> planned;  ///< after the pipeline
};

/// Writes the sample as a .pt2 in `dir` and lowers it under `config`; null when the pipeline fails.
std::optional<Lowered> lowerSample(const QString& dir, const std::string& name, const ExecutorchBackendConfig& config,
                                   std::string* why, const SampleOptions& options = {}) {
  auto built = buildSample(name, options);
  if (!built) return *why = built.error().message(), std::nullopt;
  std::string path = (dir + "/" + QString::fromStdString(name) + ".pt2").toStdString();
  if (auto s = writePt2(built.value(), path); !s) return *why = s.error().message(), std::nullopt;
  auto opened = openProgramFile(path);
  if (!opened) return *why = opened.error().message(), std::nullopt;
  Lowered l;
  l.pt2 = std::make_shared<const Program>(std::move(opened.value()));
  Pipeline p(l.pt2, config);
  p.runToEnd();
  if (p.failed()) {
    const PassRecord& r = p.records()[p.position() - 1];
    *why = r.name + (r.diagnostics.empty() ? std::string() : ": " + r.diagnostics[0].message);
    return std::nullopt;
  }
  l.planned = p.current();
  return l;
}

struct Exported {
  Program emitted;
  Program back;  ///< read from the written files, external tensors resolved
  PteWriteReport report;
};

/// Emits and writes `l` to dir/out.pte (+ .ptd files), reads it back; empty string on success.
std::string exportAndRead(const Lowered& l, const ExecutorchBackendConfig& config, const QString& dir, Exported& x) {
  auto emitted = emitProgram(*l.planned, config);
  if (!emitted) return "emit: " + emitted.error().message();
  x.emitted = std::move(emitted.value());
  PteWriteOptions o = writeOptionsFor(config);
  std::string out = (dir + "/out.pte").toStdString();
  auto report = writePte(x.emitted, out, o);
  if (!report) return "write: " + report.error().message();
  x.report = report.value();
  auto back = readProgramFile(out);
  if (!back) return "read back: " + back.error().message();
  x.back = std::move(back.value());
  std::vector<DataFile> files;
  for (size_t i = 1; i < x.report.files.size(); ++i) {
    auto d = readDataFile(x.report.files[i].path);
    if (!d) return "read back .ptd: " + d.error().message();
    files.push_back(std::move(d.value()));
  }
  if (!files.empty())
    if (auto s = resolveExternalTensors(x.back, files); !s) return "resolve: " + s.error().message();
  return {};
}

/// Everything the emitted and re-read program must satisfy; empty when it does.
std::string verify(const Lowered& l, const Exported& x, const ExecutorchBackendConfig& config) {
  const MappedFile& archive = *l.pt2->backing;
  // A training program gains ExecuTorch's __et_training_* getters after its methods.
  size_t getters = 0;
  for (const Method& m : x.back.methods) getters += m.name.rfind("__et_training_", 0) == 0;
  if (x.back.methods.size() != l.planned->methods.size() + getters) return "method count";
  for (size_t mi = 0; mi < l.planned->methods.size(); ++mi) {
    const Method& lowered = l.planned->methods[mi];
    const Method& e = x.emitted.methods[mi];
    const Method& b = x.back.methods[mi];
    std::string w = b.name + ": ";
    MemoryPlanReport plan = analyzeMemoryPlan(b);
    if (!plan.overlapFree()) return w + std::to_string(plan.overlapCount) + " overlapping live tensors";
    if (b.nonConstBufferSizes != lowered.nonConstBufferSizes) return w + "arena sizes differ from the plan";
    if (b.nodes.size() != lowered.nodes.size()) return w + "instruction count " + std::to_string(b.nodes.size());
    for (size_t i = 0; i < b.nodes.size(); ++i) {
      const OperatorRef& got = b.operators[b.nodes[i].op];
      const OperatorRef& want = lowered.operators[lowered.nodes[i].op];
      // A default overload is written as "" (ExecuTorch's emitter does the same).
      if (got.name != want.name || got.overload != (want.overload == "default" ? std::string() : want.overload))
        return w + "instruction " + std::to_string(i) + " calls " + got.fullName() + ", lowered " + want.fullName();
      // An in-place call gains its return value (self again) after its arguments.
      const size_t returns = b.nodes[i].args.size() == lowered.nodes[i].args.size() + 1 && got.name.ends_with("_") &&
                             b.nodes[i].args.back() == b.nodes[i].args.front();
      if (b.nodes[i].args.size() != lowered.nodes[i].args.size() + returns)
        return w + "argument count of instruction " + std::to_string(i);
    }
    // Inputs: the user's only, in order, with their shapes.
    std::vector<ValueId> user;
    for (const InputSpec& in : lowered.signature.inputs)
      if (in.kind == InputSpec::Kind::User) user.push_back(in.value);
    if (b.inputs.size() != user.size()) return w + "inputs " + std::to_string(b.inputs.size());
    for (size_t i = 0; i < user.size(); ++i) {
      const TensorSpec* want = lowered.values[user[i]].tensorIf();
      const TensorSpec* got = b.values[b.inputs[i]].tensorIf();
      if (!want != !got || (want && (want->sizes != got->sizes || want->dtype != got->dtype)))
        return w + "input " + std::to_string(i) + " differs";
    }
    // Outputs: the user's only; buffer mutations are written back in place, not returned.
    size_t mutations = 0;
    for (const OutputSpec& o : lowered.signature.outputs) mutations += o.kind == OutputSpec::Kind::BufferMutation;
    if (b.outputs.size() != lowered.outputs.size() - mutations) return w + "outputs " + std::to_string(b.outputs.size());
    if (b.encodedInputSpec != treespecArgs(user.size())) return w + "input spec " + b.encodedInputSpec;
    // Weights: every parameter, constant and unmutated buffer of the archive is
    // a constant or external tensor with the archive's bytes; the emitted IR
    // points into the mapped archive (nothing copied).
    size_t weights = 0;
    for (size_t v = 0; v < e.values.size(); ++v) {
      const TensorSpec* et = e.values[v].tensorIf();
      const TensorSpec* bt = b.values[v].tensorIf();
      if (!et != !bt) return w + "value " + std::to_string(v) + " kind";
      if (!et || et->data.empty()) continue;
      if (e.values[v].name.rfind("_lifted_tensor_constant", 0) == 0) {
        // A scalar made a 0-dim constant (ScalarToTensorPass): its bytes are the emitter's.
        if (!et->sizes.empty() || bt->external || !sameContent(et->data, bt->data)) return w + "lifted scalar " + std::to_string(v);
        continue;
      }
      ++weights;
      if (!inside(et->data, archive)) return w + "value " + std::to_string(v) + " was copied out of the archive";
      if (et->external != bt->external) return w + "value " + std::to_string(v) + " external flag";
      // Only state is planned: a trained weight keeps its initial value (ExecuTorch plans it).
      if (bt->slot && !et->slot) return w + "constant " + std::to_string(v) + " is planned";
      if (!sameContent(et->data, bt->data)) return w + "value " + std::to_string(v) + " bytes differ after the round trip";
    }
    size_t expectedWeights = 0;
    std::set<std::string> mutated;
    for (const OutputSpec& o : lowered.signature.outputs)
      if (o.kind == OutputSpec::Kind::BufferMutation) mutated.insert(o.target);
    for (const InputSpec& in : lowered.signature.inputs) {
      if (in.kind == InputSpec::Kind::User || mutated.count(in.target)) continue;
      const TensorSpec& t = lowered.values[in.value].tensor();
      if (t.nbytes().value_or(0) == 0) continue;
      ++expectedWeights;
      // The archive's bytes for this fqn, found in the re-read program by name or position.
      bool found = false;
      for (size_t v = 0; v < b.values.size() && !found; ++v) {
        const TensorSpec* bt = b.values[v].tensorIf();
        // Unplanned, or a trained weight: planned, its initial value in the mutable segment or a .ptd.
        const bool stored = bt && (!bt->slot || bt->external || bt->mutableSegmentIndex ||
                                   bt->source == ConstantSource::MutableSegment);
        found = stored && sameContent(bt->data, Bytes{t.data.data, t.nbytes().value(), 0}) &&
                (!bt->external || bt->fqn == in.target);
      }
      if (!found) return w + "weight '" + in.target + "' not found with the archive's bytes";
    }
    if (weights != expectedWeights) return w + std::to_string(weights) + " weights, expected " + std::to_string(expectedWeights);
    for (size_t v = 0; v < b.values.size(); ++v)
      if (auto* t = b.values[v].tensorIf(); t && t->external && t->data.empty() && t->nbytes().value_or(0))
        return w + "external tensor '" + t->fqn + "' unresolved";
    if (!config.emitStacktrace)
      for (const Node& n : b.nodes)
        if (!n.meta.stackTrace.empty()) return w + "stack trace written without emit_stacktrace";
  }
  return {};
}

ExecutorchBackendConfig named(const std::string& which) {
  ExecutorchBackendConfig c;
  if (which == "external") c.externalConstants = true;
  if (which == "rules") {
    c.externalConstants = true;
    c.externalConstantRules = {{.namePattern = "*.bias", .file = "biases.ptd"},
                               {.namePattern = "*weight*", .minBytes = 4096, .file = "weights.ptd"}};
  }
  if (which == "keep_view_copy") c.removeViewCopy = false;
  if (which == "naive") c.memoryPlanning.algorithms = {"naive"};
  if (which == "alignments") {
    c.segmentAlignment = 4096;
    c.constantTensorAlignment = 64;
    c.memoryPlanning.alignment = 64;
  }
  if (which == "stacktrace") c.emitStacktrace = true;
  return c;
}

}  // namespace

class TestEmitter : public QObject {
  Q_OBJECT
 private slots:
  // The specs byte for byte as ExecuTorch stores them (torch's treespec_dumps).
  void pytreeSpecs() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto add = readProgramFile(test::fixture("pte/add.pte").toStdString());  // forward(x, y) -> z
    QVERIFY(add.ok());
    QCOMPARE(treespecArgs(2), add->methods[0].encodedInputSpec);
    QCOMPARE(treespecOutputs(1), add->methods[0].encodedOutputSpec);
    auto xr = readProgramFile(test::fixture("pte/xor.pte").toStdString());  // returns (loss, pred)
    QVERIFY(xr.ok());
    QCOMPARE(treespecOutputs(2), xr->methods[0].encodedOutputSpec);
    // A .pt2's own specs are what the emitter writes (linear.pt2: forward(x) -> y).
    auto pt2 = openProgramFile(test::fixture("pt2/linear.pt2").toStdString());
    QVERIFY(pt2.ok());
    QCOMPARE(pt2->methods[0].moduleCalls.at(0).inSpec, treespecArgs(1));
    QCOMPARE(pt2->methods[0].moduleCalls.at(0).outSpec, treespecOutputs(1));
  }

  void zoo_data() {
    QTest::addColumn<QString>("sample");
    QTest::addColumn<QString>("config");
    for (const auto& s : sampleList())
      for (const char* c : {"default", "external", "rules", "keep_view_copy", "naive", "alignments", "stacktrace"})
        QTest::newRow((s.name + "/" + c).c_str()) << QString::fromStdString(s.name) << QString(c);
  }
  void zoo() {
    QFETCH(QString, sample);
    QFETCH(QString, config);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    ExecutorchBackendConfig c = named(config.toStdString());
    SampleOptions small;
    if (sample == "llama") small.layers = 2;
    std::string why;
    auto l = lowerSample(dir.path(), sample.toStdString(), c, &why, small);
    if (!l) {
      // The runnable samples must lower; the others may stop at a pass (named in the skip).
      QVERIFY2(sample != "mlp" && sample != "dynamic_batch" && sample != "llama" && sample != "mobilenet_v2", why.c_str());
      QSKIP(("does not lower: " + why).c_str());
    }
    Exported x;
    std::string err = exportAndRead(*l, c, dir.path(), x);
    QVERIFY2(err.empty(), err.c_str());
    std::string bad = verify(*l, x, c);
    QVERIFY2(bad.empty(), bad.c_str());
    // Where the weights went.
    size_t ptds = x.report.files.size() - 1;
    if (config == "external") {
      QCOMPARE(ptds, size_t(1));
      QVERIFY(x.report.files[1].path.ends_with("/_default_external_constant.ptd"));
      // Only lifted constants (never external in ExecuTorch) stay in the .pte.
      for (const Value& v : x.emitted.methods[0].values)
        if (auto* t = v.tensorIf(); t && !t->data.empty() && !t->external)
          QVERIFY2(v.name.find("_lifted_tensor") != std::string::npos, v.name.c_str());
      QVERIFY(x.report.externalTensors > 0);
    } else if (config == "rules") {
      QVERIFY2(ptds >= 1, "the rules send weights to .ptd files");
      for (size_t i = 1; i < x.report.files.size(); ++i)
        QVERIFY(x.report.files[i].path.ends_with("/weights.ptd") || x.report.files[i].path.ends_with("/biases.ptd"));
    } else {
      QCOMPARE(ptds, size_t(0));
      QCOMPARE(x.report.externalTensors, size_t(0));
    }
    if (config == "alignments") {
      for (const Segment& s : x.back.segments) QCOMPARE(s.offset % 4096, uint64_t(0));
    }
    if (config == "keep_view_copy") {
      bool viewCopy = false;
      for (const OperatorRef& o : x.back.methods[0].operators) viewCopy = viewCopy || o.name == "aten::view_copy";
      bool hadView = false;
      for (const OperatorRef& o : l->pt2->methods[0].operators) hadView = hadView || o.name == "aten::view";
      QCOMPARE(viewCopy, hadView);
    }
    if (config == "stacktrace") {
      bool any = false;
      for (const Node& n : l->planned->methods[0].nodes) any = any || !n.meta.stackTrace.empty();
      bool written = false;
      for (const Node& n : x.back.methods[0].nodes) written = written || !n.meta.stackTrace.empty();
      QCOMPARE(written, any);
    }
  }

  // Two rules send biases and weights to two .ptd files; each holds exactly its keys.
  void rulesSplitFiles() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c = named("rules");
    std::string why;
    auto l = lowerSample(dir.path(), "mlp", c, &why);
    QVERIFY2(l, why.c_str());
    Exported x;
    std::string err = exportAndRead(*l, c, dir.path(), x);
    QVERIFY2(err.empty(), err.c_str());
    QCOMPARE(x.report.files.size(), size_t(3));
    for (size_t i = 1; i < 3; ++i) {
      auto d = readDataFile(x.report.files[i].path);
      QVERIFY2(d, d ? "" : msg(d.error()));
      bool biases = x.report.files[i].path.ends_with("/biases.ptd");
      QVERIFY(!d->entries.empty());
      for (const auto& t : d->entries) QVERIFY2(QString::fromStdString(t.key).endsWith(biases ? ".bias" : ".weight"), t.key.c_str());
    }
  }

  // Values in ExecuTorch's emission order (tests/conformance: the flatbuffer
  // content then equals upstream's field for field, value numbers included):
  // an out variant's result before its other arguments (memory.alloc precedes
  // the call), lifted scalars before the user inputs. (Views before the node
  // that reads them: the emitted values no longer say which are views; the
  // harness's identical rows check it.)
  void valuesInExecuTorchOrder() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    std::string why;
    SampleOptions o;
    o.layers = 1;
    auto l = lowerSample(dir.path(), "llama", c, &why, o);
    QVERIFY2(l, why.c_str());
    auto e = emitProgram(*l->planned, c);
    QVERIFY2(e, e ? "" : msg(e.error()));
    const Method& m = e->methods[0];
    size_t outVariants = 0;
    for (const Node& n : m.nodes) {
      const OpSchema* s = OpRegistry::builtin().find(m.operators[n.op].name, m.operators[n.op].overload);
      if (!s || !s->isOutVariant()) continue;
      ValueId out = kNoValue;
      for (size_t i = 0; i < s->arguments.size() && i < n.args.size(); ++i)
        if (s->arguments[i].kwargOnly && s->arguments[i].isWrite && out == kNoValue) out = n.args[i];
      QVERIFY(out != kNoValue);
      ++outVariants;
      for (size_t i = 0; i < s->arguments.size() && i < n.args.size(); ++i) {
        const Value& v = m.values[n.args[i]];
        // Scalars and lists the call takes are numbered after its result.
        if (n.args[i] > out || v.kind() == ValueKind::Tensor || v.kind() == ValueKind::None) continue;
        if (v.kind() == ValueKind::Int || v.kind() == ValueKind::IntList || v.kind() == ValueKind::Bool)
          QFAIL(qPrintable(QString("%1: argument %2 (value %3) before its result (value %4)")
                               .arg(QString::fromStdString(m.operators[n.op].name)).arg(i).arg(n.args[i]).arg(out)));
      }
    }
    QVERIFY(outVariants > 50);
    // ReplaceViewCopyWithViewPass leaves each view its place: the node that
    // followed its view_copy, which the emitter numbers it before.
    const Method& planned = l->planned->methods[0];
    size_t placed = 0;
    for (const Value& v : planned.values)
      if (const TensorSpec* t = v.tensorIf(); t && t->viewOf != kNoValue && t->viewBefore != kNoValue) {
        ++placed;
        bool made = false;
        for (const Node& n : planned.nodes)
          made = made || std::find(n.outputs.begin(), n.outputs.end(), t->viewBefore) != n.outputs.end();
        QVERIFY2(made, v.name.c_str());
      }
    QVERIFY(placed > 5);
    // The 0-dim constants lifted from scalars come before the first user input.
    ValueId firstUser = m.inputs.front(), lastConstant = kNoValue;
    for (size_t v = 0; v < m.values.size(); ++v)
      if (const TensorSpec* t = m.values[v].tensorIf(); t && t->sizes.empty() && !t->data.empty())
        lastConstant = static_cast<ValueId>(v);
    QVERIFY(lastConstant != kNoValue);
    QVERIFY(lastConstant < firstUser);
  }

  void mutableBuffers() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    std::string why;
    SampleOptions o;
    o.layers = 1;
    auto l = lowerSample(dir.path(), "llama", c, &why, o);
    QVERIFY2(l, why.c_str());
    size_t caches = 0;
    for (const OutputSpec& s : l->planned->methods[0].signature.outputs) caches += s.kind == OutputSpec::Kind::BufferMutation;
    QVERIFY(caches >= 2);
    EmitReport r;
    auto e = emitProgram(*l->planned, c, &r);
    QVERIFY2(e, e ? "" : msg(e.error()));
    QCOMPARE(r.mutableBuffers, caches);
    // InsertWriteBackForBuffersPass copies each new cache into its buffer: no
    // "never written back" note, one copy_ per cache, emitted with ExecuTorch's
    // empty overload for a default overload (the runtime's kernel key is "aten::copy_").
    size_t writeBackNotes = 0;
    for (const auto& note : r.notes) writeBackNotes += note.find("never written back") != std::string::npos;
    QCOMPARE(writeBackNotes, size_t(0));
    size_t copies = 0;
    for (const Node& nd : e->methods[0].nodes)
      if (e->methods[0].operators[nd.op].name == "aten::copy_") {
        ++copies;
        QCOMPARE(e->methods[0].operators[nd.op].overload, std::string());
      }
    QCOMPARE(copies, caches);
    size_t planned = 0, named = 0;
    for (const Value& v : e->methods[0].values)
      if (auto* t = v.tensorIf(); t && t->slot && t->data.empty()) named += !t->fqn.empty(), ++planned;
    QCOMPARE(named, size_t(0));  // no names without emit_mutable_buffer_names
    // RMSNorm's `+ eps` reaches the emitter as add.Tensor(x, 1e-05): the scalar becomes a 0-dim float tensor.
    const Method& em = e->methods[0];
    bool lifted = false;
    for (const Node& nd : em.nodes) {
      if (em.operators[nd.op].fullName() != "aten::add.out") continue;
      const TensorSpec* other = em.values[nd.args[1]].tensorIf();
      QVERIFY2(other, "add.out's other is a tensor");
      if (other->sizes.empty() && !other->data.empty()) {
        float f = 0;
        std::memcpy(&f, other->data.data, 4);
        QCOMPARE(other->dtype, ScalarType::Float);
        QCOMPARE(f, 1e-5f);
        lifted = true;
      }
    }
    QVERIFY(lifted);
    c.emitMutableBufferNames = true;
    auto n = emitProgram(*l->planned, c);
    QVERIFY(n);
    named = 0;
    for (const Value& v : n->methods[0].values)
      if (auto* t = v.tensorIf(); t && !t->fqn.empty()) {
        ++named;
        QVERIFY(t->slot.has_value());
        QVERIFY(!t->external);
        QVERIFY(t->data.empty());  // ExecuTorch keeps no initial state
      }
    QCOMPARE(named, caches);
    // Written and read back, the names are there (ExtraTensorInfo, location SEGMENT).
    auto bytes = serializePte(n.value());
    QVERIFY(bytes);
    QString path = dir.path() + "/named.pte";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes->data(), static_cast<qint64>(bytes->size()));
    f.close();
    auto back = readProgramFile(path.toStdString());
    QVERIFY2(back, back ? "" : msg(back.error()));
    size_t backNamed = 0;
    for (const Value& v : back->methods[0].values)
      if (auto* t = v.tensorIf(); t && !t->fqn.empty()) backNamed += !t->external;
    QCOMPARE(backNamed, caches);
  }

  // ExecuTorch's runtime checks a kernel's argument count: an in-place call is
  // emitted with its schema arguments then its return value (self again), so
  // aten::copy_ takes 4 (self, src, non_blocking, self); and a method returns
  // only the user's outputs, not the buffer mutations written back by copy_.
  void writeBackCallsAndUserOutputs() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    std::string why;
    SampleOptions o;
    o.layers = 2;
    auto l = lowerSample(dir.path(), "llama", c, &why, o);
    QVERIFY2(l, why.c_str());
    const Method& planned = l->planned->methods[0];
    size_t user = 0, mutations = 0;
    for (const OutputSpec& s : planned.signature.outputs) {
      user += s.kind == OutputSpec::Kind::User;
      mutations += s.kind == OutputSpec::Kind::BufferMutation;
    }
    QCOMPARE(user, size_t(1));  // the logits
    QCOMPARE(mutations, size_t(4));  // 2 layers x (k, v) caches
    Exported x;
    std::string err = exportAndRead(*l, c, dir.path(), x);
    QVERIFY2(err.empty(), err.c_str());
    const Method& back = x.back.methods[0];
    QCOMPARE(back.outputs.size(), user);
    QVERIFY(back.values[back.outputs[0]].tensorIf());
    size_t copies = 0;
    for (const Node& n : back.nodes) {
      if (back.operators[n.op].name != "aten::copy_") continue;
      ++copies;
      QCOMPARE(n.args.size(), size_t(4));
      QCOMPARE(n.args[3], n.args[0]);  // the return value aliases self
      QVERIFY(n.args[0] != back.outputs[0]);  // the output is the logits, not a cache
    }
    QCOMPARE(copies, mutations);
  }

  // A training program carries ExecuTorch's getters, which TrainingModule reads:
  // where the gradients start among the outputs, the parameters' names, and
  // where the trained weights start (exir/emit/_emit_program.py).
  void trainingGetters() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    std::string why;
    auto l = lowerSample(dir.path(), "training", c, &why);
    QVERIFY2(l, why.c_str());
    Exported x;
    std::string err = exportAndRead(*l, c, dir.path(), x);
    QVERIFY2(err.empty(), err.c_str());
    const Method& fwd = l->planned->methods[0];
    int64_t firstGradient = -1, firstWeight = -1;
    std::vector<std::string> fqns;
    for (size_t i = 0; i < fwd.signature.outputs.size(); ++i) {
      const OutputSpec& s = fwd.signature.outputs[i];
      if (s.kind == OutputSpec::Kind::GradientToParameter) {
        if (firstGradient < 0) firstGradient = static_cast<int64_t>(i);
        fqns.push_back(s.target);
      } else if (s.kind == OutputSpec::Kind::Token && firstGradient >= 0 && firstWeight < 0) {
        firstWeight = static_cast<int64_t>(i);
      }
    }
    QVERIFY(firstGradient > 0 && firstWeight > firstGradient && !fqns.empty());
    const std::string m = fwd.name;
    QCOMPARE(x.back.methods.size(), size_t(4));
    QCOMPARE(x.back.methods[1].name, "__et_training_gradients_index_" + m);
    QCOMPARE(x.back.methods[2].name, "__et_training_fqn_" + m);
    QCOMPARE(x.back.methods[3].name, "__et_training_parameters_index_" + m);
    auto intOut = [](const Method& g) { return std::get<int64_t>(g.values[g.outputs.at(0)].payload); };
    QCOMPARE(intOut(x.back.methods[1]), firstGradient);
    QCOMPARE(intOut(x.back.methods[3]), firstWeight);
    const Method& names = x.back.methods[2];
    QCOMPARE(names.outputs.size(), fqns.size());
    for (size_t i = 0; i < fqns.size(); ++i) QCOMPARE(std::get<std::string>(names.values[names.outputs[i]].payload), fqns[i]);
    QCOMPARE(names.nonConstBufferSizes, std::vector<int64_t>{0});
  }

  void unplannedMutableBufferNeedsName() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    c.memoryPlanning.allocMutableBuffers = false;
    std::string why;
    SampleOptions o;
    o.layers = 1;
    auto l = lowerSample(dir.path(), "llama", c, &why, o);
    QVERIFY2(l, why.c_str());
    auto e = emitProgram(*l->planned, c);
    QVERIFY(!e);
    QVERIFY2(e.error().message().find("emit_mutable_buffer_names") != std::string::npos, msg(e.error()));
    c.emitMutableBufferNames = true;
    QVERIFY(emitProgram(*l->planned, c));
  }

  void cannotEmit() {
    QTemporaryDir dir;
    std::string why;
    auto l = lowerSample(dir.path(), "mlp", ExecutorchBackendConfig{}, &why);
    QVERIFY2(l, why.c_str());
    // A functional operator left without its out variant.
    Program p = *l->planned;
    Method& m = p.methods[0];
    m.operators.push_back(OperatorRef{"aten::relu", "default"});
    m.nodes[1].op = static_cast<int32_t>(m.operators.size() - 1);
    auto e = emitProgram(p, ExecutorchBackendConfig{});
    QVERIFY(!e);
    QVERIFY2(e.error().message().find("'" + m.nodes[1].name + "'") != std::string::npos, msg(e.error()));
    QVERIFY2(e.error().message().find("aten::relu") != std::string::npos, msg(e.error()));
    QVERIFY2(e.error().message().find("out variant") != std::string::npos, msg(e.error()));
    // A delegate call.
    Program d = *l->planned;
    d.methods[0].nodes[0].kind = NodeKind::Delegate;
    e = emitProgram(d, ExecutorchBackendConfig{});
    QVERIFY(!e);
    QVERIFY2(e.error().message().find("delegate") != std::string::npos, msg(e.error()));
    // Not planned yet.
    auto unplanned = emitProgram(*l->pt2, ExecutorchBackendConfig{});
    QVERIFY(!unplanned);
    QVERIFY2(unplanned.error().message().find("MemoryPlanningPass") != std::string::npos, msg(unplanned.error()));
  }

  // A write that fails leaves the files that were there.
  void failedWriteKeepsOldFiles() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c = named("external");
    std::string why;
    auto l = lowerSample(dir.path(), "mlp", c, &why);
    QVERIFY2(l, why.c_str());
    auto e = emitProgram(*l->planned, c);
    QVERIFY(e);
    QString out = dir.path() + "/out.pte";
    QFile old(out);
    QVERIFY(old.open(QIODevice::WriteOnly));
    old.write("old program");
    old.close();
    // The .ptd folder is a regular file: the .ptd cannot be created, so nothing is replaced.
    QFile blocker(dir.path() + "/notadir");
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    PteWriteOptions o = writeOptionsFor(c);
    o.ptdDir = (dir.path() + "/notadir").toStdString();
    auto r = writePte(e.value(), out.toStdString(), o);
    QVERIFY(!r);
    QVERIFY2(r.error().message().find("notadir") != std::string::npos, msg(r.error()));
    QCOMPARE(lstudio::test::readAll(out), QByteArray("old program"));
    // An output folder that does not exist.
    auto r2 = writePte(e.value(), (dir.path() + "/missing/out.pte").toStdString(), writeOptionsFor(c));
    QVERIFY(!r2);
    QVERIFY2(r2.error().message().find("/missing/") != std::string::npos, msg(r2.error()));
    QStringList left = QDir(dir.path()).entryList(QStringList{"*.tmp-*"}, QDir::Files);
    QVERIFY2(left.isEmpty(), qPrintable(left.join(",")));
  }

  void cliExportsPt2() {
    QTemporaryDir dir;
    auto built = buildSample("mlp");
    QVERIFY(built);
    std::string pt2 = (dir.path() + "/mlp.pt2").toStdString();
    QVERIFY(writePt2(built.value(), pt2));
    QFile cfg(dir.path() + "/cfg.json");
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write("{\"external_constants\": true}");
    cfg.close();
    std::ostringstream out, err;
    std::string pte = (dir.path() + "/mlp.pte").toStdString();
    std::string ptdDir = (dir.path() + "/data").toStdString();
    int rc = cli::run({"export", pt2, "--config", cfg.fileName().toStdString(), "-o", pte, "--ptd-dir", ptdDir}, out, err);
    QVERIFY2(rc == 0, err.str().c_str());
    QVERIFY2(out.str().find("wrote " + pte) != std::string::npos, out.str().c_str());
    QVERIFY2(out.str().find("wrote " + ptdDir + "/_default_external_constant.ptd") != std::string::npos, out.str().c_str());
    QVERIFY2(out.str().find("mem_id 1: arena") != std::string::npos, out.str().c_str());
    auto back = readProgramFile(pte);
    QVERIFY2(back, back ? "" : msg(back.error()));
    QCOMPARE(back->methods[0].inputs.size(), size_t(1));
    // A corrupt archive is a clear error, and nothing is written.
    QFile bad(dir.path() + "/bad.pt2");
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("PK\x03\x04 not really a zip");
    bad.close();
    std::ostringstream o2, e2;
    std::string badOut = (dir.path() + "/bad.pte").toStdString();
    QCOMPARE(cli::run({"export", bad.fileName().toStdString(), "-o", badOut}, o2, e2), int(cli::kBadFile));
    QVERIFY2(e2.str().find("bad.pt2") != std::string::npos, e2.str().c_str());
    QVERIFY(!QFile::exists(QString::fromStdString(badOut)));
  }
};

QTEST_GUILESS_MAIN(TestEmitter)
#include "tst_emitter.moc"
