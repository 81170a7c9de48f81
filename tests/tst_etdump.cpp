// ETDumps (engine/formats/EtdumpReader, engine/inspect/EtdumpReport, `lowering-cli etdump`):
// what is read and how it links to a program, and that a wrong file is a clear error.
// Real ETDumps from ExecuTorch's runtime are read against ExecuTorch's own parser, and their
// logged values against the interpreter, in tests/conformance/interpreter.py; these ETDumps
// are built here, so that each field and each refusal can be set on purpose.
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <sstream>

#include "app/Cli.h"
#include "engine/formats/EtdumpReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/inspect/EtdumpReport.h"
#include "engine/run/Interpreter.h"
#include "engine/support/AtomicFile.h"
#include "tests/support/EmittedSample.h"
#include "tests/support/EtdumpBuilder.h"

using namespace lstudio;

namespace {

std::shared_ptr<const MappedFile> bytesFile(const std::string& name, const std::vector<uint8_t>& bytes) {
  return MappedFile::fromBytes(name, bytes.data(), bytes.size());
}

}  // namespace

class TestEtdump : public QObject {
  Q_OBJECT
 private slots:
  // Each instruction's call times over the executions, their median, and Method::execute;
  // an ETDump whose kernel names differ from the program's is refused naming the instruction.
  void timingsLinkToInstructions() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    const Method& m = emitted->methods[0];
    auto bytes = buildEtdump(m, {100, 300, 200}, {});
    auto dump = readEtdump(*bytesFile("t.etdp", bytes));
    QVERIFY2(dump, dump ? "" : dump.error().message().c_str());
    QCOMPARE(dump->blocks.size(), size_t(4));
    QCOMPARE(dump->blocks[1].name, std::string("Execute"));
    auto report = linkEtdump(dump.value(), emitted.value());
    QVERIFY2(report, report ? "" : report.error().message().c_str());
    QCOMPARE(report->method, m.name);
    QCOMPARE(report->executions, size_t(3));
    QCOMPARE(report->loadTicks, std::vector<uint64_t>{50});
    size_t kernels = 0;
    for (const Node& n : m.nodes) kernels += n.kind == NodeKind::Kernel;
    QCOMPARE(report->instructions.size(), kernels);
    for (const ProfiledInstruction& t : report->instructions) {
      uint64_t k = t.instruction + 1;
      QCOMPARE(t.ticks, (std::vector<uint64_t>{100 * k, 300 * k, 200 * k}));
      QCOMPARE(medianOf(t.ticks), 200 * k);
      QCOMPARE(t.what, m.operators[static_cast<size_t>(m.nodes[t.instruction].op)].fullName());
    }
    QCOMPARE(report->executeTicks.size(), size_t(3));

    auto other = readEtdump(*bytesFile("other.etdp", buildEtdump(m, {100}, {}, "not_this_op.out")));
    QVERIFY(other);
    auto refused = linkEtdump(other.value(), emitted.value());
    QVERIFY(!refused);
    QCOMPARE(refused.error().code, ErrorCode::Mismatch);
    QVERIFY2(refused.error().message().find("instruction 1") != std::string::npos &&
                 refused.error().message().find("another program") != std::string::npos,
             refused.error().message().c_str());
  }

  // Logged values come out of the debug buffer by their strides, in C order, and compare with
  // the interpreter's: equal where the buffer holds the interpreter's own values (stored
  // column-major here), different where a byte was changed.
  void loggedValuesAgainstTheInterpreter() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    run::RunOptions o;
    o.trace = true;
    auto traced = run::runProgram(emitted.value(), o);
    QVERIFY(traced);
    std::vector<uint8_t> buffer(48, 0xee);  // the runtime starts past a small header too
    std::vector<LoggedTensor> logged;
    for (const run::TracedNode& t : traced->trace) {
      const run::HostValue& v = t.values.back();
      QCOMPARE(v.sizes.size(), size_t(2));
      int64_t rows = v.sizes[0], cols = v.sizes[1];
      logged.push_back({static_cast<int32_t>(t.instruction), v.sizes, {1, rows}, static_cast<int64_t>(buffer.size())});
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r)
          buffer.insert(buffer.end(), v.bytes.begin() + (r * cols + c) * 4, v.bytes.begin() + (r * cols + c + 1) * 4);
    }
    auto dump = readEtdump(*bytesFile("t.etdp", buildEtdump(emitted->methods[0], {100}, logged)));
    QVERIFY(dump);
    auto file = bytesFile("t.debug", buffer);
    auto report = linkEtdump(dump.value(), emitted.value(), {}, file.get());
    QVERIFY2(report, report ? "" : report.error().message().c_str());
    QCOMPARE(report->logged.size(), traced->trace.size());
    compareWithInterpreter(report.value(), traced.value());
    for (const LoggedInstruction& l : report->logged) {
      QVERIFY2(l.difference, l.notCompared.c_str());
      QCOMPARE(*l.difference, 0.0);
      QVERIFY(l.inputsExact);
    }
    // A changed float in the second tensor: a difference there, none elsewhere.
    float changed;
    std::memcpy(&changed, buffer.data() + logged[1].offset, 4);
    changed += 0.5f;
    std::memcpy(buffer.data() + logged[1].offset, &changed, 4);
    auto file2 = bytesFile("t.debug", buffer);
    auto report2 = linkEtdump(dump.value(), emitted.value(), {}, file2.get());
    QVERIFY(report2);
    compareWithInterpreter(report2.value(), traced.value());
    QCOMPARE(*report2->logged[0].difference, 0.0);
    QVERIFY(qAbs(*report2->logged[1].difference - 0.5) < 1e-6);
    // The gap at instruction 1 is its own (its inputs were exact); the next one reads it.
    QVERIFY(report2->logged[1].inputsExact);
    QCOMPARE(report2->logged[2].producers, std::vector<size_t>{report2->logged[1].instruction});
    QVERIFY(!report2->logged[2].inputsExact);
    // A buffer that ends before the last tensor: refused naming the buffer and the offset.
    buffer.resize(static_cast<size_t>(logged.back().offset) + 4);
    auto shortFile = bytesFile("short.debug", buffer);
    auto cut = linkEtdump(dump.value(), emitted.value(), {}, shortFile.get());
    QVERIFY(!cut);
    QCOMPARE(cut.error().code, ErrorCode::OutOfRange);
    QCOMPARE(cut.error().file, std::string("short.debug"));
    QCOMPARE(*cut.error().offset, static_cast<uint64_t>(logged.back().offset));
    // Strides from the file are untrusted (the fuzzer's findings): elements sharing bytes, or a
    // span past 64 bits, are refused before any byte is read.
    std::vector<uint8_t> small(64, 0);
    auto smallFile = bytesFile("small.debug", small);
    for (auto [strides, code] : {std::pair{std::vector<int64_t>{0, 1}, ErrorCode::Invalid},
                                 std::pair{std::vector<int64_t>{int64_t(1) << 62, 1}, ErrorCode::Overflow}}) {
      auto bad = readEtdump(*bytesFile("bad.etdp", buildEtdump(emitted->methods[0], {100}, {{0, {2, 2}, strides, 0}})));
      QVERIFY(bad);
      auto linked = linkEtdump(bad.value(), emitted.value(), {}, smallFile.get());
      QVERIFY(!linked);
      QCOMPARE(linked.error().code, code);
      QCOMPARE(linked.error().file, std::string("small.debug"));
    }
  }

  // A wrong file is an error naming the file and the offset, never a crash: every truncation,
  // another identifier, a size prefix that disagrees, a program, a negative offset.
  void refusesWhatIsNotAnEtdump() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    std::vector<LoggedTensor> logged{{0, {2, 2}, {2, 1}, 0}};
    auto bytes = buildEtdump(emitted->methods[0], {100, 200}, logged);
    for (size_t n = 0; n < bytes.size(); ++n) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
      auto r = readEtdump(*bytesFile("cut.etdp", cut));
      QVERIFY(!r);
      QCOMPARE(r.error().file, std::string("cut.etdp"));
      QVERIFY(r.error().offset.has_value());
    }
    auto other = bytes;
    std::memcpy(other.data() + 8, "ED01", 4);
    auto r = readEtdump(*bytesFile("x.etdp", other));
    QVERIFY(!r);
    QCOMPARE(r.error().code, ErrorCode::BadMagic);
    QCOMPARE(*r.error().offset, uint64_t(8));
    auto longer = bytes;
    longer.push_back(0);
    QCOMPARE(readEtdump(*bytesFile("x.etdp", longer)).error().code, ErrorCode::BadHeader);
    auto pte = serializePte(emitted.value());
    QVERIFY(pte);
    auto program = readEtdump(*MappedFile::fromBytes("mlp.pte", pte->data(), pte->size()));
    QVERIFY(!program);
    QVERIFY2(program.error().message().find("open it as the program") != std::string::npos, program.error().message().c_str());
    auto negative = buildEtdump(emitted->methods[0], {100}, {{0, {2, 2}, {2, 1}, -1}});
    auto n = readEtdump(*bytesFile("neg.etdp", negative));
    QVERIFY(!n);
    QVERIFY2(n.error().message().find("negative debug-buffer offset") != std::string::npos, n.error().message().c_str());
    auto empty = buildEtdump(emitted->methods[0], {100}, {{0, {0}, {1}, -1}});  // the runtime's empty tensor
    QVERIFY(readEtdump(*bytesFile("empty.etdp", empty)));
  }

  // `lowering-cli etdump`: the table, the comparison, and exit 3 for an ETDump of another program.
  void cli() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    std::string pte = (dir.path() + "/mlp.pte").toStdString(), etdp = (dir.path() + "/run.etdp").toStdString();
    QVERIFY(writePte(emitted.value(), pte, PteWriteOptions{}));
    auto bytes = buildEtdump(emitted->methods[0], {100, 300}, {});
    QVERIFY(writeFileAtomically(etdp, std::string(bytes.begin(), bytes.end())));
    std::ostringstream out, err;
    QCOMPARE(cli::run({"etdump", etdp, "--program", pte}, out, err), int(cli::kOk));
    QVERIFY2(out.str().find("2 execution(s) of forward") != std::string::npos, out.str().c_str());
    QVERIFY2(out.str().find("aten::addmm.out") != std::string::npos, out.str().c_str());
    std::ostringstream jout, jerr;
    QCOMPARE(cli::run({"etdump", etdp, "--program", pte, "--json"}, jout, jerr), int(cli::kOk));
    QVERIFY2(jout.str().find("\"median_ticks\": 600") != std::string::npos, jout.str().c_str());  // instruction 1: 200, 600
    auto renamed = buildEtdump(emitted->methods[0], {100}, {}, "relu.out");
    QVERIFY(writeFileAtomically(etdp, std::string(renamed.begin(), renamed.end())));
    std::ostringstream out2, err2;
    QCOMPARE(cli::run({"etdump", etdp, "--program", pte}, out2, err2), int(cli::kBadFile));
    QVERIFY2(err2.str().find("another program") != std::string::npos, err2.str().c_str());
    std::ostringstream out3, err3;
    QCOMPARE(cli::run({"etdump", etdp}, out3, err3), int(cli::kUsage));
  }
};

QTEST_GUILESS_MAIN(TestEtdump)
#include "tst_etdump.moc"
