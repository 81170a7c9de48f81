// Constant tagging: which constants leave the .pte for which .ptd file
// (external_constants as a boolean or as rules, external_mutable_weights).
#include <QtTest>

#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/ConstantTagging.h"
#include "engine/lowering/Pipeline.h"
#include "tests/TestSupport.h"

using namespace lstudio;

namespace {

std::shared_ptr<const Program> sample(const std::string& name, SampleOptions o = {}) {
  auto p = buildSample(name, o);
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::make_shared<const Program>(std::move(p.value()));
}

const ConstantEntry* find(const std::vector<ConstantEntry>& es, const std::string& name) {
  for (const auto& e : es)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace

class TestTagging : public QObject {
  Q_OBJECT
 private slots:
  void globAndFileNames() {
    QVERIFY(globMatch("*.weight", "layers.0.attention.wq.weight"));
    QVERIFY(!globMatch("*.weight", "layers.0.attention.wq.bias"));
    QVERIFY(globMatch("layers.?.*", "layers.3.ffn.w1.weight"));
    QVERIFY(!globMatch("layers.?.*", "layers.12.ffn.w1.weight"));
    QVERIFY(globMatch("*", ""));
    QVERIFY(!globMatch("a", ""));
    QVERIFY(globMatch("**a*b**", "xxaxxbxx"));
    QVERIFY(!globMatch("*a*b", "xxaxxbxx"));
    QCOMPARE(tagFromFileName("weights.ptd"), std::string("weights"));
    QCOMPARE(tagFromFileName("out/dir/w.ptd"), std::string("w"));
    QCOMPARE(tagFromFileName("plain"), std::string("plain"));
  }

  void ruleConditions() {
    ConstantEntry c;
    c.name = "layers.1.attention.wq.weight";
    c.module = "layers.1.attention.wq";
    c.op = "aten::permute_copy";
    c.bytes = 4096;
    QVERIFY(ruleMatches({.modulePrefix = "layers.1"}, c));
    QVERIFY(ruleMatches({.modulePrefix = "layers.1."}, c));
    QVERIFY(!ruleMatches({.modulePrefix = "layers.10"}, c));  // a prefix of the path, not of the text
    QVERIFY(ruleMatches({.op = "aten::permute_copy"}, c));
    QVERIFY(ruleMatches({.op = "permute_copy"}, c));
    QVERIFY(!ruleMatches({.op = "aten::embedding"}, c));
    QVERIFY(ruleMatches({.minBytes = 4096}, c));
    QVERIFY(!ruleMatches({.minBytes = 4097}, c));
    QVERIFY(!ruleMatches({.namePattern = "*.bias", .minBytes = 1}, c));
  }

  void llamaConstantsAndRules() {
    auto p = sample("llama", {.layers = 2});
    const Method& m = p->methods[0];
    ExecutorchBackendConfig off;
    auto all = listConstants(m, off);
    // Parameters and the buffers nobody mutates are constants; the KV caches are state.
    QVERIFY(find(all, "layers.0.attention.wq.weight"));
    QVERIFY(find(all, "freqs_cos"));
    QVERIFY(!find(all, "layers.0.attention.kv_cache.k_cache"));
    QVERIFY(!find(all, "layers.1.attention.kv_cache.v_cache"));
    for (const auto& e : all) QVERIFY2(e.destination.empty(), e.name.c_str());
    const ConstantEntry* wq = find(all, "layers.1.attention.wq.weight");
    QCOMPARE(wq->module, std::string("layers.1.attention.wq"));
    QCOMPARE(wq->bytes, uint64_t(256 * 256 * 4));
    QVERIFY(!wq->op.empty());

    ExecutorchBackendConfig every;
    every.externalConstants = true;
    for (const auto& e : listConstants(m, every)) QCOMPARE(e.destination, std::string(kDefaultExternalTag));

    // First matching rule wins; a rule with no file keeps the constant inside.
    ExecutorchBackendConfig rules;
    rules.externalConstants = true;
    rules.externalConstantRules = {{.modulePrefix = "layers.1", .file = ""},
                                   {.minBytes = 512 * 1024, .file = "weights.ptd"},
                                   {.namePattern = "*norm*", .file = "norms.ptd"}};
    auto tagged = listConstants(m, rules);
    QCOMPARE(find(tagged, "layers.1.feed_forward.w1.weight")->destination, std::string());
    QCOMPARE(find(tagged, "layers.0.feed_forward.w1.weight")->destination, std::string("weights"));
    QCOMPARE(find(tagged, "tok_embeddings.weight")->destination, std::string("weights"));
    QCOMPARE(find(tagged, "layers.0.attention_norm.weight")->destination, std::string("norms"));
    QCOMPARE(find(tagged, "layers.1.attention_norm.weight")->destination, std::string());
    QCOMPARE(find(tagged, "freqs_cos")->destination, std::string());  // 8 KiB, no rule matches
  }

  void passTagsSpecsBeforePlanning() {
    auto p = sample("llama", {.layers = 1});
    ExecutorchBackendConfig c;
    Pipeline off(p, c);
    off.runToEnd();
    QVERIFY(!off.failed());
    bool skipped = false;
    for (const auto& r : off.records())
      if (r.name == "ExternalConstantsPass") skipped = r.state == PassRecord::State::Skipped;
    QVERIFY(skipped);

    c.externalConstants = true;
    c.externalConstantRules = {{.minBytes = 512 * 1024, .file = "big.ptd"}};
    Pipeline on(p, c);
    on.runToEnd();
    QVERIFY(!on.failed());
    const Method& m = on.current()->methods[0];
    size_t external = 0;
    for (const InputSpec& in : m.signature.inputs) {
      if (in.value == kNoValue) continue;
      const TensorSpec& t = m.value(in.value).tensor();
      bool big = t.nbytes().value_or(0) >= 512 * 1024 && in.kind == InputSpec::Kind::Parameter;
      QCOMPARE(t.external, big);
      if (big) {
        ++external;
        QCOMPARE(t.constantTag, std::string("big"));
        QCOMPARE(t.fqn, in.target);
        QVERIFY(!t.slot);  // constants are never planned
      }
    }
    QCOMPARE(external, size_t(5));  // embedding, w1, w2, w3, output head
  }

  void mutableWeightsOfTraining() {
    auto p = sample("training");
    ExecutorchBackendConfig c;
    c.externalMutableWeights = true;
    auto es = listConstants(p->methods[0], c);
    size_t mutableWeights = 0;
    for (const auto& e : es) {
      QCOMPARE(e.destination.empty(), !e.mutableWeight);
      mutableWeights += e.mutableWeight;
    }
    size_t gradients = 0;
    for (const auto& o : p->methods[0].signature.outputs) gradients += o.kind == OutputSpec::Kind::GradientToParameter;
    QVERIFY(gradients > 0);
    QCOMPARE(mutableWeights, gradients);
  }

  void pteExternalTensorsKeepTheirFile() {
    LSTUDIO_REQUIRE_FIXTURES();
    QString dir = test::fixturesDir();
    auto p = openProgramFile((dir + "/pte/linear.pte").toStdString());
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    auto d = readDataFile((dir + "/ptd/linear.ptd").toStdString());
    QVERIFY(d.ok());
    QVERIFY(resolveExternalTensors(p.value(), {d.value()}).ok());
    auto es = listConstants(p->methods[0], ExecutorchBackendConfig{});
    QCOMPARE(es.size(), size_t(2));
    for (const auto& e : es) QCOMPARE(e.destination, std::string("linear"));
    ExecutorchBackendConfig inside;
    inside.externalConstants = true;
    inside.externalConstantRules = {{.file = ""}};
    for (const auto& e : listConstants(p->methods[0], inside)) QCOMPARE(e.destination, std::string());
  }
};

QTEST_GUILESS_MAIN(TestTagging)
#include "tst_tagging.moc"
