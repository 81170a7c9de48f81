// The .ptd reader (both FlatTensor generations) and external tensor resolution.
#include <QtTest>

#include "engine/formats/PtdReader.h"
#include "engine/formats/PteReader.h"
#include "tests/TestSupport.h"
#include "tests/support/SyntheticPte.h"

using namespace lstudio;
using namespace lstudio::test;

class TestPtdReader : public QObject {
  Q_OBJECT
 private slots:
  void everyFixtureOpens_data() {
    QTest::addColumn<QString>("path");
    QStringList files = fixtureFiles("ptd", {"*.ptd"});
    if (files.isEmpty()) QSKIP("../shared/fixtures is absent");
    for (const QString& f : files) QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }
  void everyFixtureOpens() {
    QFETCH(QString, path);
    auto d = readDataFile(path.toStdString());
    QVERIFY2(d.ok(), d.ok() ? "" : d.error().message().c_str());
    QVERIFY(!d->entries.empty());
    for (const auto& e : d->entries) {
      QVERIFY(!e.key.empty());
      QVERIFY(e.data.fileOffset + e.data.size <= d->file->size());
    }
  }

  void generations() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto legacy = readDataFile(fixture("ptd/linear.ptd").toStdString());
    QVERIFY(legacy.ok());
    QVERIFY(legacy->legacy);
    QCOMPARE(legacy->entries.size(), size_t(2));
    const auto* bias = legacy->find("linear.bias");
    QVERIFY(bias && bias->layout);
    QCOMPARE(bias->layout->sizes, std::vector<int64_t>{3});
    QCOMPARE(bias->data.fileOffset, legacy->segmentBaseOffset + 48);  // offset inside segment 0
    auto current = readDataFile(fixture("ptd/xor.ptd").toStdString());
    QVERIFY(current.ok());
    QVERIFY(!current->legacy);
  }

  void resolvesExternalTensors_data() {
    QTest::addColumn<QString>("pte");
    QTest::addColumn<QString>("ptd");
    QTest::addColumn<int>("externals");
    LSTUDIO_REQUIRE_FIXTURES();
    QTest::newRow("linear (legacy .ptd)") << "pte/linear.pte" << "ptd/linear.ptd" << 2;
    QTest::newRow("xor (training)") << "pte/xor.pte" << "ptd/xor.ptd" << 0;
    QTest::newRow("rs_data_map") << "pte/rs_data_map_model.pte" << "ptd/rs_default_external_constant.ptd" << 2;
  }
  void resolvesExternalTensors() {
    QFETCH(QString, pte);
    QFETCH(QString, ptd);
    QFETCH(int, externals);
    auto p = readProgramFile(fixture(pte).toStdString());
    QVERIFY(p.ok());
    auto d = readDataFile(fixture(ptd).toStdString());
    QVERIFY(d.ok());
    int before = static_cast<int>(unresolvedExternalKeys(p.value()).size());
    QVERIFY(before >= externals);
    auto s = resolveExternalTensors(p.value(), {d.value()});
    QVERIFY2(s.ok(), s.ok() ? "" : s.error().message().c_str());
    QVERIFY(unresolvedExternalKeys(p.value()).empty());
    for (const auto& m : p->methods)
      for (const auto& v : m.values)
        if (auto* t = v.tensorIf(); t && t->external) {
          const auto* e = d->find(t->fqn);
          QVERIFY(e);
          QCOMPARE(t->data.data, e->data.data);  // points into the mapped .ptd
          QCOMPARE(t->data.size, t->nbytes().value());
        }
  }

  void missingKeyIsAnError() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = readProgramFile(fixture("pte/rs_data_map_model.pte").toStdString());
    auto d = readDataFile(fixture("ptd/xor.ptd").toStdString());
    QVERIFY(p.ok() && d.ok());
    auto s = resolveExternalTensors(p.value(), {d.value()});
    QVERIFY(!s.ok());
    QCOMPARE(s.error().code, ErrorCode::MissingKey);
    QVERIFY(s.error().message().find("xor.ptd") != std::string::npos);
    QVERIFY(s.error().message().find("external tensor 'a'") != std::string::npos);
  }

  void shapeMismatchIsAnError() {
    LSTUDIO_REQUIRE_FIXTURES();
    SynthProgram sp;
    sp.tensors = {{ScalarType::Float, {2, 2}, std::nullopt, 0, "linear.weight"}};
    sp.outputs = {0};
    auto bytes = buildSyntheticPte(sp);
    auto p = readProgram(MappedFile::fromBytes("mismatch.pte", bytes.data(), bytes.size()));
    QVERIFY(p.ok());
    auto d = readDataFile(fixture("ptd/linear.ptd").toStdString());
    QVERIFY(d.ok());
    auto s = resolveExternalTensors(p.value(), {d.value()});
    QVERIFY(!s.ok());
    QCOMPARE(s.error().code, ErrorCode::Mismatch);
    QCOMPARE(s.error().expected, std::string("float32[2, 2]"));
    QCOMPARE(s.error().found, std::string("float32[3, 3]"));
    QVERIFY(s.error().offset.has_value());
  }
};

QTEST_GUILESS_MAIN(TestPtdReader)
#include "tst_ptdreader.moc"
