// The sample zoo and the PT2 archive writer: every sample imports back
// through the .pt2 reader, passes the edge-dialect check, has the numbers
// its architecture implies, and sample -> .pt2 -> import -> .pt2 is
// byte-identical.
#include <QDir>
#include <QTemporaryDir>
#include <unistd.h>
#include <QtTest>
#include <cstring>

#include "engine/ir/EdgeDialect.h"
#include "engine/inspect/Inspect.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/ZipArchive.h"
#include "engine/support/MappedFile.h"
#include "engine/samples/SampleZoo.h"
#include "tests/TestSupport.h"

using namespace lstudio;
using namespace lstudio::test;

namespace {

uint64_t parameterCount(const Method& m) {
  uint64_t n = 0;
  for (const auto& in : m.signature.inputs)
    if (in.kind == InputSpec::Kind::Parameter) n += m.values[in.value].tensor().numel().value_or(0);
  return n;
}

size_t userInputs(const Method& m) {
  size_t n = 0;
  for (const auto& in : m.signature.inputs) n += in.kind == InputSpec::Kind::User;
  return n;
}

SampleOptions staticAttention(int layers = 0, int dim = 0) {
  SampleOptions o;
  o.attention = "static";
  o.layers = layers;
  o.dim = dim;
  return o;
}

/// Problems the edge-dialect check finds (operators unknown, outside core ATen, bad arguments).
size_t edgeProblems(const Program& p) {
  Method m = p.methods[0];
  return resolveEdgeDialect(m);
}

}  // namespace

class TestZoo : public QObject {
  Q_OBJECT
 private slots:
  void roundTrip_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("attention");
    for (const auto& s : sampleList()) QTest::newRow(s.name.c_str()) << QString::fromStdString(s.name) << QString();
    QTest::newRow("llama --attention static") << "llama" << "static";
  }
  void roundTrip() {
    QFETCH(QString, name);
    QFETCH(QString, attention);
    SampleOptions options;
    options.attention = attention.toStdString();
    auto sample = buildSample(name.toStdString(), options);
    QVERIFY2(sample.ok(), sample.ok() ? "" : sample.error().message().c_str());
    QTemporaryDir a, b;
    std::string first = (a.path() + "/" + name + ".pt2").toStdString(), second = (b.path() + "/" + name + ".pt2").toStdString();
    auto w = writePt2(sample.value(), first);
    QVERIFY2(w.ok(), w.ok() ? "" : w.error().message().c_str());
    auto imported = readExportFile(first);
    QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message().c_str());
    const Method& m = imported->methods[0];
    QVERIFY2(m.diagnostics.empty(), m.diagnostics.empty() ? "" : m.diagnostics[0].message.c_str());
    QCOMPARE(edgeProblems(imported.value()), size_t(0));
    QCOMPARE(m.nodes.size(), sample->methods[0].nodes.size());
    QCOMPARE(parameterCount(m), parameterCount(sample->methods[0]));
    // Weights come back bit for bit.
    for (size_t i = 0; i < m.signature.inputs.size(); ++i) {
      const auto& in = m.signature.inputs[i];
      if (in.kind == InputSpec::Kind::User) continue;
      const Bytes& got = m.values[in.value].tensor().data;
      const Bytes& want = sample->methods[0].values[sample->methods[0].signature.inputs[i].value].tensor().data;
      QCOMPARE(got.size, want.size);
      QVERIFY(std::memcmp(got.data, want.data, got.size) == 0);
    }
    QVERIFY(writePt2(imported.value(), second).ok());
    QByteArray x = readAll(QString::fromStdString(first)), y = readAll(QString::fromStdString(second));
    QVERIFY(!x.isEmpty());
    QVERIFY2(x == y, qPrintable(QString("%1: rewritten archive differs (%2 vs %3 bytes)").arg(name).arg(x.size()).arg(y.size())));
  }

  // Writes are atomic: a killed earlier write's temporary is cleaned up, a
  // failed write leaves the previous archive and no temporary behind.
  void writesAreAtomic() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    QTemporaryDir d;
    const QString path = d.path() + "/mlp.pt2";
    QFile stale(path + ".tmp-Ab12Cd");
    QVERIFY(stale.open(QIODevice::WriteOnly));
    stale.write("half an archive");
    stale.close();
    QVERIFY(writePt2(p.value(), path.toStdString()).ok());
    QVERIFY(!QFile::exists(path + ".tmp-Ab12Cd"));
    const QByteArray first = readAll(path);
    // A folder where the temporary cannot be created: a clear error, the old file untouched.
    QVERIFY(QFile::setPermissions(d.path(), QFileDevice::ReadOwner | QFileDevice::ExeOwner));
    auto w = writePt2(p.value(), path.toStdString());
    QVERIFY(QFile::setPermissions(d.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
    if (::geteuid() != 0) {  // root writes anyway
      QVERIFY(!w.ok());
      QVERIFY(w.error().message().find("mlp.pt2") != std::string::npos);
    }
    QCOMPARE(readAll(path), first);
    QCOMPARE(QDir(d.path()).entryList({"*.tmp-*"}, QDir::Files), QStringList());
  }

  // The records torch.export.load needs: a sample-inputs record for every
  // model (empty: no example inputs), and non-persistent buffers among the
  // constants, not in the state dict (torch's verifier refuses them there).
  // tests/conformance/zoo.py loads every sample with torch.export.load.
  void archiveHasTheRecordsTorchLoads() {
    auto p = buildSample("llama");
    QVERIFY(p.ok());
    QTemporaryDir d;
    const std::string path = (d.path() + "/llama.pt2").toStdString();
    QVERIFY(writePt2(p.value(), path).ok());
    auto file = MappedFile::open(path);
    QVERIFY(file.ok());
    auto zip = ZipArchive::open(file.value());
    QVERIFY(zip.ok());
    const ZipEntry* inputs = zip->find("llama/data/sample_inputs/model.pt");
    QVERIFY(inputs);
    QCOMPARE(inputs->size, uint64_t(0));
    auto text = [&](const char* name) {
      const ZipEntry* e = zip->find(std::string("llama/") + name);
      return e ? zip->read(*e, 1 << 20).value_or(std::string()) : std::string();
    };
    const std::string weights = text("data/weights/model_weights_config.json");
    const std::string constants = text("data/constants/model_constants_config.json");
    QVERIFY(weights.find("\"tok_embeddings.weight\"") != std::string::npos);
    QVERIFY(weights.find("layers.0.attention.kv_cache.k_cache") != std::string::npos);  // persistent
    for (const char* nonPersistent : {"\"freqs_cos\"", "\"layers.0.attention.mask\""}) {
      QVERIFY2(constants.find(nonPersistent) != std::string::npos, nonPersistent);
      QVERIFY2(weights.find(nonPersistent) == std::string::npos, nonPersistent);
    }
    auto back = readExportFile(path);
    QVERIFY(back.ok());
    QVERIFY(!back->exportFacts.hasSampleInputs);
    for (const auto& in : back->methods[0].signature.inputs)
      if (in.target == "freqs_cos") QVERIFY(in.kind == InputSpec::Kind::Buffer && !in.persistent);

    // A loss output's argument is a TensorArgument ({"name": ...}), not an Argument union.
    auto training = buildSample("training");
    QVERIFY(training.ok());
    const std::string model = exportedProgramJson(training.value(), training->methods[0]);
    QVERIFY(model.find("\"loss_output\":{\"arg\":{\"name\":") != std::string::npos);
  }

  void mlpNumbers() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    QCOMPARE(parameterCount(p->methods[0]), uint64_t(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10));
    QCOMPARE(p->methods[0].nodes.size(), size_t(8));  // 3 x (permute, addmm) + 2 relu
  }

  void mobilenetNumbers() {
    auto p = buildSample("mobilenet_v2");
    QVERIFY(p.ok());
    // torchvision's MobileNetV2 (1000 classes): 3,504,872 parameters.
    const double n = double(parameterCount(p->methods[0]));
    QVERIFY2(std::abs(n - 3504872.0) / 3504872.0 < 0.01, qPrintable(QString::number(n, 'f', 0)));
  }

  // The default llama: 2 layers, dim 256, 8 heads of 32, 2 KV heads, hidden 768, vocabulary 512, cache 128.
  void llamaNumbers() {
    auto p = buildSample("llama");
    QVERIFY(p.ok());
    const Method& m = p->methods[0];
    const uint64_t d = 256, kv = 64, h = 768, v = 512, layers = 2;
    const uint64_t perLayer = 2 * d * d + 2 * kv * d + 3 * h * d + 2 * d;
    QCOMPARE(parameterCount(m), layers * perLayer + 2 * v * d + d);
    QCOMPARE(m.nodes.size(), size_t(113 * layers + 12));
    QCOMPARE(userInputs(m), size_t(2));  // tokens, input_pos
    size_t mutations = 0;
    for (const auto& o : m.signature.outputs) mutations += o.kind == OutputSpec::Kind::BufferMutation;
    QCOMPARE(mutations, size_t(2 * layers));  // k and v cache of every layer
  }

  // --attention static: the same parameters split per head, caches as inputs and outputs.
  void staticLlamaNumbers() {
    auto mha = buildSample("llama");
    auto p = buildSample("llama", staticAttention());
    QVERIFY(p.ok() && mha.ok());
    const Method& m = p->methods[0];
    const size_t layers = 2, heads = 8, kvHeads = 2;
    QCOMPARE(parameterCount(m), parameterCount(mha->methods[0]));
    QCOMPARE(m.nodes.size(), layers * (34 + 32 * heads + 22 * kvHeads) + 11);
    QCOMPARE(userInputs(m), 4 + 2 * layers * kvHeads);  // tokens, mask, cos, sin, k and v caches
    QCOMPARE(m.outputs.size(), 1 + 2 * layers * kvHeads);  // logits, new keys and values
    for (const auto& in : m.signature.inputs) QVERIFY(in.kind != InputSpec::Kind::Buffer);
    const TensorSpec& cache = m.values[m.signature.inputs.back().value].tensor();
    QCOMPARE(cache.sizes, (std::vector<int64_t>{1, 127, 32}));  // batch, cache_len = seq - 1, head_dim
    QCOMPARE(m.values[m.signature.inputs.back().value].name, std::string("attn_options_in_cache_state_1_l1_h1"));
    // forward(tokens, attn_options) -> (logits, {"out_cache_state": ...}), as pytree specs.
    const ModuleCall& root = m.moduleCalls.at(0);
    const std::string optionKeys = "\"context\": \"[\\\"masks\\\", \\\"freqs_cos_override\\\", \\\"freqs_sin_override\\\", \\\"in_cache_state\\\"]\"";
    const std::string maskKey = "\"context\": \"[127]\"";
    const std::string cacheKeys = "\"context\": \"[\\\"l0,h0\\\", \\\"l0,h1\\\", \\\"l1,h0\\\", \\\"l1,h1\\\"]\"";
    QVERIFY2(root.inSpec.find(optionKeys) != std::string::npos, root.inSpec.c_str());
    QVERIFY(root.inSpec.find(maskKey) != std::string::npos);
    QVERIFY2(root.outSpec.find(cacheKeys) != std::string::npos, root.outSpec.c_str());
  }

  // ExecuTorch's static layout at 32 layers (default heads) is a graph of more than 10,000 nodes.
  void staticLlama32Layers() {
    auto p = buildSample("llama", staticAttention(32, 64));  // narrow, so the test stays small
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->methods[0].nodes.size(), size_t(32 * (34 + 32 * 8 + 22 * 2) + 11));
    QVERIFY(p->methods[0].nodes.size() >= 10000);
    QCOMPARE(edgeProblems(p.value()), size_t(0));
  }

  // A spec as the studio's sample menu and workspaces keep it: name, then options.
  // A preset gives a released model's shapes in bfloat16; options beside it win.
  void presetShapesAndOverrides() {
    auto p = buildSampleSpec("llama --preset llama3.2-1b --layers 1 --dim 256 --heads 8 --kv-heads 2 --vocab 512");
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    const Method& m = p->methods[0];
    auto weight = [&](const std::string& fqn) -> const TensorSpec* {
      for (const auto& in : m.signature.inputs)
        if (in.target == fqn) return &m.values[in.value].tensor();
      return nullptr;
    };
    const TensorSpec* w1 = weight("layers.0.feed_forward.w1.weight");
    QVERIFY(w1);
    QCOMPARE(w1->sizes, (std::vector<int64_t>{8192, 256}));  // the preset's FFN, the given width
    QCOMPARE(w1->dtype, ScalarType::BFloat16);
    QCOMPARE(weight("layers.0.attention.kv_cache.k_cache")->dtype, ScalarType::BFloat16);
    QVERIFY(!weight("layers.1.feed_forward.w1.weight"));
    // Activations are bfloat16 too (model.to(torch.bfloat16)); the head's logits included.
    QCOMPARE(m.values[m.outputs.back()].tensor().dtype, ScalarType::BFloat16);
    QVERIFY(!buildSampleSpec("llama --preset llama4").ok());
    QVERIFY(!buildSampleSpec("llama --dtype float64").ok());
  }

  // bfloat16 weights are the float32 pattern rounded to nearest even.
  void bfloat16WeightsRoundTheFloatPattern() {
    auto f = buildSampleSpec("llama --layers 1 --vocab 64");
    auto b = buildSampleSpec("llama --layers 1 --vocab 64 --dtype bfloat16");
    QVERIFY(f.ok() && b.ok());
    const Method &fm = f->methods[0], &bm = b->methods[0];
    QCOMPARE(fm.signature.inputs.size(), bm.signature.inputs.size());
    size_t checked = 0;
    for (size_t i = 0; i < fm.signature.inputs.size(); ++i) {
      if (fm.signature.inputs[i].kind != InputSpec::Kind::Parameter) continue;
      const TensorSpec &ft = fm.values[fm.signature.inputs[i].value].tensor(),
                       &bt = bm.values[bm.signature.inputs[i].value].tensor();
      QCOMPARE(bt.data.size * 2, ft.data.size);
      for (uint64_t k = 0; k < bt.data.size / 2; ++k) {
        uint32_t u;
        uint16_t got;
        std::memcpy(&u, ft.data.data + 4 * k, 4);
        std::memcpy(&got, bt.data.data + 2 * k, 2);
        const uint16_t want = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        if (got != want) QFAIL(qPrintable(QString("%1[%2]: %3, want %4").arg(QString::fromStdString(ft.fqn)).arg(k).arg(got).arg(want)));
        ++checked;
      }
    }
    QVERIFY(checked > 100000);
  }

  // Weights generated into a temporary file (weightsDir) are the bytes
  // generated in memory, across the writer's 8 MiB chunks; the file is mapped
  // and gone from the folder.
  void spilledWeightsEqualInMemoryOnes() {
    QTemporaryDir d;
    SampleOptions o;
    o.layers = 1, o.dim = 512, o.vocab = 8192;  // a 16 MiB embedding: two chunks
    auto inMemory = buildSample("llama", o);
    o.weightsDir = d.path().toStdString();
    auto spilled = buildSample("llama", o);
    QVERIFY(inMemory.ok() && spilled.ok());
    QVERIFY(!inMemory->backing->isMapped());
    QVERIFY(spilled->backing->isMapped() && spilled->backing->fd() >= 0);
    QCOMPARE(spilled->backing->size(), inMemory->backing->size());
    QVERIFY(std::memcmp(spilled->backing->data(), inMemory->backing->data(), inMemory->backing->size()) == 0);
    QCOMPARE(QDir(d.path()).entryList(QDir::Files | QDir::Hidden), QStringList());
    // And written out file to file, the archive holds the same bytes.
    QTemporaryDir e, f;  // one file name: the archive's top folder is its stem
    const std::string a = (e.path() + "/x.pt2").toStdString(), b = (f.path() + "/x.pt2").toStdString();
    QVERIFY(writePt2(inMemory.value(), a).ok());
    QVERIFY(writePt2(spilled.value(), b).ok());
    QCOMPARE(readAll(QString::fromStdString(b)), readAll(QString::fromStdString(a)));
    SampleOptions bad;
    bad.weightsDir = d.path().toStdString() + "/missing";
    auto refused = buildSample("llama", bad);
    QVERIFY(!refused.ok());
    QVERIFY(refused.error().message().find("missing") != std::string::npos);
  }

  void sampleSpecs() {
    auto p = buildSampleSpec("llama --layers 3 --attention static");
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->methods[0].nodes.size(), size_t(3 * (34 + 32 * 8 + 22 * 2) + 11));
    QVERIFY(buildSampleSpec("mlp").ok());
    for (const char* bad : {"llama --layers", "llama --layers -2", "llama --bogus 1", "llama --dim x"}) {
      auto b = buildSampleSpec(bad);
      QVERIFY2(!b.ok(), bad);
      QVERIFY(b.error().message().find("sample spec") != std::string::npos);
    }
  }

  void badAttentionOption() {
    SampleOptions o;
    o.attention = "flash";
    auto p = buildSample("llama", o);
    QVERIFY(!p.ok());
    QVERIFY(p.error().message().find("mha or static") != std::string::npos);
  }

  void dynamicBatchRange() {
    auto p = buildSample("dynamic_batch");
    QVERIFY(p.ok());
    QTemporaryDir d;
    std::string path = (d.path() + "/dyn.pt2").toStdString();
    QVERIFY(writePt2(p.value(), path).ok());
    auto back = readExportFile(path);
    QVERIFY(back.ok());
    const Method& m = back->methods[0];
    QCOMPARE(m.symbolRanges.size(), size_t(1));
    QCOMPARE(m.symbolRanges[0].symbol, std::string("s0"));
    QCOMPARE(m.symbolRanges[0].max.value_or(0), int64_t(64));
    const TensorSpec& out = m.values[m.outputs[0]].tensor();
    QCOMPARE(out.symbols.size(), size_t(2));
    QCOMPARE(out.symbols[0], std::string("s0"));  // the batch dimension stays symbolic through the graph
    QCOMPARE(out.dynamism, ShapeDynamism::DynamicBound);
  }

  void unknownSample() {
    auto p = buildSample("resnet9000");
    QVERIFY(!p.ok());
    QVERIFY(p.error().message().find("mlp") != std::string::npos);  // lists what exists
  }
};

QTEST_GUILESS_MAIN(TestZoo)
#include "tst_zoo.moc"
