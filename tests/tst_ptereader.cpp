// The .pte reader on every real program in shared/fixtures and on synthetic ones.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "engine/inspect/Inspect.h"
#include "engine/formats/EtRecordLink.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/ZipArchive.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/PteReader.h"
#include "tests/TestSupport.h"
#include "tests/support/SyntheticPte.h"
#include "tests/support/ZipWriter.h"
#include "ui/run/ProgramLoader.h"

using namespace lstudio;
using namespace lstudio::test;

class TestPteReader : public QObject {
  Q_OBJECT
 private:
  static void addProgramRows(bool withBundled) {
    QTest::addColumn<QString>("path");
    QStringList files = fixtureFiles("pte", {"*.pte"});
    if (withBundled) files += fixtureFiles("other", {"*.bpte"});
    if (files.isEmpty()) QSKIP("../shared/fixtures is absent");
    for (const QString& f : files) QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }

 private slots:
  void everyFixtureOpens_data() { addProgramRows(true); }
  void everyFixtureOpens() {
    QFETCH(QString, path);
    auto p = readProgramFile(path.toStdString());
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QVERIFY(!p->methods.empty());
    ProgramSummary s = summarize(p.value());
    for (const auto& m : s.methods) {
      QVERIFY2(m.plan.overlapFree(), qPrintable(QString::fromStdString(m.name)));
      for (const auto& a : m.plan.arenas) {
        QVERIFY2(a.size >= a.lowerBound,
                 qPrintable(QString("%1 mem_id %2: arena %3 < lower bound %4")
                                .arg(QString::fromStdString(m.name)).arg(a.memId).arg(a.size).arg(a.lowerBound)));
        QVERIFY(a.size >= a.highWater);
      }
    }
    // Constants are referenced in the mapping, never copied.
    const uint8_t* lo = p->backing->data();
    const uint8_t* hi = lo + p->backing->size();
    for (const auto& m : p->methods)
      for (const auto& v : m.values)
        if (auto* t = v.tensorIf(); t && t->data.size)
          QVERIFY(t->data.data >= lo && t->data.data + t->data.size <= hi);
  }

  // The reader's counts equal those of flatc's JSON dump of the same file.
  void countsMatchFlatc_data() { addProgramRows(false); }
  void countsMatchFlatc() {
    QFETCH(QString, path);
    QTemporaryDir dir;
    QProcess flatc;
    flatc.start(LSTUDIO_FLATC, {"--json", "--strict-json", "--raw-binary", "--defaults-json", "-o", dir.path(),
                                LSTUDIO_SOURCE_DIR "/engine/formats/schema/program.fbs", "--", path});
    QVERIFY(flatc.waitForFinished(60000));
    QCOMPARE(flatc.exitCode(), 0);
    QByteArray text = readAll(dir.path() + "/" + QFileInfo(path).completeBaseName() + ".json");
    QVERIFY(!text.isEmpty());
    auto j = nlohmann::json::parse(text.toStdString());
    auto p = readProgramFile(path.toStdString());
    QVERIFY(p.ok());
    const auto& plans = j["execution_plan"];
    QCOMPARE(p->methods.size(), plans.size());
    QCOMPARE(p->segments.size(), j.value("segments", nlohmann::json::array()).size());
    QCOMPARE(p->namedData.size(), j.value("named_data", nlohmann::json::array()).size());
    for (size_t i = 0; i < plans.size(); ++i) {
      const auto& jp = plans[i];
      const Method& m = p->methods[i];
      QCOMPARE(m.name, jp["name"].get<std::string>());
      QCOMPARE(m.values.size(), jp.value("values", nlohmann::json::array()).size());
      size_t instr = 0;
      for (const auto& c : jp.value("chains", nlohmann::json::array()))
        instr += c.value("instructions", nlohmann::json::array()).size();
      QCOMPARE(m.nodes.size(), instr);
      const auto ops = jp.value("operators", nlohmann::json::array());
      QCOMPARE(m.operators.size(), ops.size());
      for (size_t k = 0; k < ops.size(); ++k) {
        QCOMPARE(m.operators[k].name, ops[k]["name"].get<std::string>());
        QCOMPARE(m.operators[k].overload, ops[k].value("overload", std::string()));
      }
      const auto ds = jp.value("delegates", nlohmann::json::array());
      QCOMPARE(m.delegates.size(), ds.size());
      for (size_t k = 0; k < ds.size(); ++k) QCOMPARE(m.delegates[k].backendId, ds[k]["id"].get<std::string>());
      std::vector<int64_t> sizes = jp.value("non_const_buffer_sizes", std::vector<int64_t>{});
      QCOMPARE(m.nonConstBufferSizes, sizes);
      ProgramSummary s = summarize(p.value());
      QCOMPARE(s.methods[i].plan.arenas.size(), sizes.empty() ? 0 : sizes.size() - 1);
      for (const auto& a : s.methods[i].plan.arenas) QCOMPARE(static_cast<int64_t>(a.size), sizes[a.memId]);
    }
  }

  void goldenSummaries_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("ptd");
    LSTUDIO_REQUIRE_FIXTURES();
    QTest::newRow("add") << "pte/add.pte" << "";
    QTest::newRow("ModuleLinear-no-constant-segment") << "pte/ModuleLinear-no-constant-segment.pte" << "";
    QTest::newRow("linear+ptd") << "pte/linear.pte" << "ptd/linear.ptd";
    QTest::newRow("xor+ptd (training, mutable)") << "pte/xor.pte" << "ptd/xor.ptd";
    QTest::newRow("dnf (training)") << "pte/dnf.pte" << "";
    QTest::newRow("djl_stress_mlp (xnnpack, named data)") << "pte/djl_stress_mlp.pte" << "";
    QTest::newRow("numpyrt_dynamic") << "pte/numpyrt_dynamic.pte" << "";
    QTest::newRow("cmsis_ethos_u") << "pte/cmsis_ethos_u_minimal_example.pte" << "";
    QTest::newRow("arduino_KeywordSpotting (cortex_m)") << "pte/arduino_KeywordSpotting_model.pte" << "";
    QTest::newRow("stories260k_qnn (many methods)") << "pte/stories260k_hybrid_llama_qnn.pte" << "";
    QTest::newRow("bundled_program") << "other/bundled_program.bpte" << "";
    QTest::newRow("linear.pt2 (torch.export archive)") << "pt2/linear.pt2" << "";
    QTest::newRow("etrecord") << "other/etrecord.bin" << "";
  }
  void goldenSummaries() {
    QFETCH(QString, file);
    QFETCH(QString, ptd);
    auto p = openProgramFile(fixture(file).toStdString());
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    std::vector<DataFile> data;
    if (!ptd.isEmpty()) {
      auto d = readDataFile(fixture(ptd).toStdString());
      QVERIFY(d.ok());
      data.push_back(std::move(d.value()));
      QVERIFY(resolveExternalTensors(p.value(), data).ok());
    }
    ProgramSummary s = summarize(p.value(), data);
    // Paths differ per machine: golden files name fixtures relative to their folder.
    std::string prefix = fixturesDir().toStdString() + "/";
    auto strip = [&](std::string& x) {
      if (x.rfind(prefix, 0) == 0) x = x.substr(prefix.size());
    };
    strip(s.file);
    for (auto& d : s.dataFiles) strip(d);
    QString name = QFileInfo(file).completeBaseName() + (file.endsWith(".pt2") ? ".pt2.txt" : ".txt");
    QString why;
    QVERIFY2(matchesGolden(name, QByteArray::fromStdString(toText(s)), &why), qPrintable(why));
  }

  // Out-variant kernels: the repeated tail of args is what they write.
  void kernelOutputsFromRepeatedReturns() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = readProgramFile(fixture("pte/add.pte").toStdString());
    QVERIFY(p.ok());
    const Node& n = p->methods[0].nodes[0];
    QCOMPARE(n.kind, NodeKind::Kernel);
    QCOMPARE(n.args.size(), size_t(5));  // a, b, alpha, out, out
    QCOMPARE(n.outputs, std::vector<ValueId>{n.args[3]});
    QCOMPARE(p->methods[0].outputs, n.outputs);
  }

  void syntheticRoundTrip() {
    SynthProgram sp;
    sp.tensors = {{ScalarType::Float, {2, 3}, std::pair<uint32_t, uint64_t>{1, 0}},
                  {ScalarType::Float, {2, 3}, std::nullopt, 1},
                  {ScalarType::Float, {2, 3}, std::pair<uint32_t, uint64_t>{1, 32}},
                  {ScalarType::Long, {4}, std::nullopt, 0, "model.table"}};
    sp.constantSizes = {24};
    sp.kernels = {{"aten::mul", "out", {0, 1, 2, 2}}};
    sp.inputs = {0};
    sp.outputs = {2};
    sp.arenas = {0, 64};
    auto bytes = buildSyntheticPte(sp);
    auto file = MappedFile::fromBytes("synthetic.pte", bytes.data(), bytes.size());
    auto p = readProgram(file);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    QCOMPARE(p->facts.header, ContainerFacts::Header::Eh00);
    QCOMPARE(p->facts.segmentAlignment, uint64_t(128));
    const Method& m = p->methods[0];
    QCOMPARE(m.values.size(), size_t(4));
    QCOMPARE(m.value(0).tensor().storage(), TensorStorage::Planned);
    QCOMPARE(m.value(1).tensor().storage(), TensorStorage::Constant);
    QCOMPARE(m.value(3).tensor().storage(), TensorStorage::External);
    QCOMPARE(m.value(3).tensor().fqn, std::string("model.table"));
    QCOMPARE(m.value(2).tensor().slot->offset, uint64_t(32));
    const Bytes& c = m.value(1).tensor().data;
    QCOMPARE(c.size, uint64_t(24));
    QCOMPARE(c.data[5], uint8_t(5 + 0 * 31));  // SyntheticPte's fill pattern
    QCOMPARE(m.nodes[0].outputs, std::vector<ValueId>{2});
    QCOMPARE(unresolvedExternalKeys(p.value()), std::vector<std::string>{"model.table"});
  }

  void sixtyFourBitPlannedOffsets() {
    SynthProgram sp;
    uint64_t big = (uint64_t(1) << 32) + 64;
    sp.tensors = {{ScalarType::Byte, {16}, std::pair<uint32_t, uint64_t>{1, big}}};
    sp.inputs = {0};
    sp.outputs = {0};
    sp.arenas = {0, static_cast<int64_t>(big + 16)};
    auto bytes = buildSyntheticPte(sp);
    auto p = readProgram(MappedFile::fromBytes("big.pte", bytes.data(), bytes.size()));
    QVERIFY(p.ok());
    QCOMPARE(p->methods[0].value(0).tensor().slot->offset, big);
  }

  // An ETRecord links instructions to the edge nodes of the same debug handle;
  // one that names instructions the .pte lacks was written with another program
  // and is refused whole, naming the file. (The conformance script
  // etrecord_link.py checks real pairs against upstream's maps.)
  void etRecordLinksInstructionsByDebugHandle() {
    LSTUDIO_REQUIRE_FIXTURES();
    // The fixture ETRecord's edge program: one mul node, debug handle 2.
    auto file = MappedFile::open(fixture("other/etrecord.bin").toStdString());
    QVERIFY(file.ok());
    auto zip = ZipArchive::open(file.value());
    QVERIFY(zip.ok());
    QTemporaryDir dir;
    auto writeEtRecord = [&](const std::string& map) {
      std::vector<ZipRecord> records;
      for (const ZipEntry& e : zip->entries())
        if (e.name != "debug_handle_map") records.push_back({e.name, zip->read(e, 1 << 20).value()});
      if (!map.empty()) records.push_back({"debug_handle_map", map});
      std::string path = dir.filePath("etrecord.bin").toStdString();
      writeZip(path, records);
      return path;
    };
    auto withMap = [&](const std::string& map) {
      std::string path = writeEtRecord(map);
      auto pte = readProgramFile(fixture("pte/add.pte").toStdString());
      auto link = linkEtRecord(pte.value(), path);
      return std::make_pair(std::move(pte.value()), std::move(link));
    };
    auto [linked, ok] = withMap(R"({"forward": {"0": 2}})");
    QVERIFY2(ok.ok(), ok.ok() ? "" : ok.error().message().c_str());
    QCOMPARE(ok->linked, size_t(1));
    QCOMPARE(linked.methods[0].nodes[0].meta.debugHandle.value_or(-1), int64_t(2));
    auto [other, wrong] = withMap(R"({"forward": {"99": 2}})");
    QVERIFY(!wrong.ok());
    QVERIFY2(wrong.error().message().find("etrecord.bin") != std::string::npos, wrong.error().message().c_str());
    QVERIFY2(wrong.error().message().find("another program") != std::string::npos, wrong.error().message().c_str());
    QVERIFY(!other.methods[0].nodes[0].meta.debugHandle);
    auto [none, missing] = withMap("");
    QVERIFY(!missing.ok());
    QVERIFY2(missing.error().message().find("debug_handle_map") != std::string::npos, missing.error().message().c_str());

    // The studio links an ETRecord beside the .pte on its own; one that does
    // not fit is reported and the .pte opens as it is.
    QVERIFY(QFile::copy(fixture("pte/add.pte"), dir.filePath("add.pte")));
    const std::string pte = dir.filePath("add.pte").toStdString();
    writeEtRecord(R"({"forward": {"0": 2}})");
    QCOMPARE(ui::etRecordBeside(pte), dir.filePath("etrecord.bin").toStdString());
    ui::LoadedProgram loaded = ui::loadProgram(pte, {});
    QVERIFY(loaded.ok);
    QVERIFY2(loaded.etRecordNote.find("1 of ") != std::string::npos, loaded.etRecordNote.c_str());
    QCOMPARE(loaded.program->methods[0].nodes[0].meta.debugHandle.value_or(-1), int64_t(2));
    QVERIFY(loaded.report.find(loaded.etRecordNote) != std::string::npos);
    writeEtRecord(R"({"forward": {"99": 2}})");
    loaded = ui::loadProgram(pte, {});
    QVERIFY(loaded.ok);
    QVERIFY2(loaded.etRecordNote.find("not linked") != std::string::npos, loaded.etRecordNote.c_str());
    QVERIFY(!loaded.program->methods[0].nodes[0].meta.debugHandle);
  }
};

QTEST_GUILESS_MAIN(TestPteReader)
#include "tst_ptereader.moc"
