// The sample zoo and the PT2 archive writer: every sample imports back
// through the .pt2 reader, passes the edge-dialect check, has the numbers
// its architecture implies, and sample -> .pt2 -> import -> .pt2 is
// byte-identical.
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>

#include "engine/Inspect.h"
#include "engine/Pt2Reader.h"
#include "engine/Pt2Writer.h"
#include "engine/SampleZoo.h"
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

}  // namespace

class TestZoo : public QObject {
  Q_OBJECT
 private slots:
  void roundTrip_data() {
    QTest::addColumn<QString>("name");
    for (const auto& s : sampleList()) QTest::newRow(s.name.c_str()) << QString::fromStdString(s.name);
  }
  void roundTrip() {
    QFETCH(QString, name);
    auto sample = buildSample(name.toStdString());
    QVERIFY2(sample.ok(), sample.ok() ? "" : sample.error().message().c_str());
    QTemporaryDir a, b;
    std::string first = (a.path() + "/" + name + ".pt2").toStdString(), second = (b.path() + "/" + name + ".pt2").toStdString();
    auto w = writePt2(sample.value(), first);
    QVERIFY2(w.ok(), w.ok() ? "" : w.error().message().c_str());
    auto imported = readExportFile(first);
    QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message().c_str());
    const Method& m = imported->methods[0];
    QVERIFY2(m.diagnostics.empty(), m.diagnostics.empty() ? "" : m.diagnostics[0].message.c_str());
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

  void mlpNumbers() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    QCOMPARE(parameterCount(p->methods[0]), uint64_t(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10));
    QCOMPARE(p->methods[0].nodes.size(), size_t(8));  // 3 x (permute, addmm) + 2 relu
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
