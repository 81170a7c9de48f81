// Malformed files: truncations, flipped bytes, bad magic, out-of-range
// offsets and indices, absurd counts. Each gives an error naming the file;
// none crashes (the suite also runs under ASan + UBSan).
#include <QtTest>

#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/inspect/Inspect.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/PtdReader.h"
#include "app/Cli.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/schema/program_generated.h"
#include "tests/TestSupport.h"
#include "tests/support/Pt2Samples.h"
#include "tests/support/SyntheticPte.h"
#include "tests/support/ZipWriter.h"

using namespace lstudio;
using namespace lstudio::test;
namespace fb = executorch_flatbuffer;

namespace {

Result<Program> readPte(const QByteArray& bytes, const char* name = "corrupt.pte") {
  return readProgram(MappedFile::fromBytes(name, bytes.constData(), static_cast<uint64_t>(bytes.size())));
}
Result<DataFile> readPtd(const QByteArray& bytes) {
  return readDataFile(MappedFile::fromBytes("corrupt.ptd", bytes.constData(), static_cast<uint64_t>(bytes.size())));
}

/// Lengths to truncate to: every length up to 64, then about 100 spread over the file.
QList<qsizetype> truncationLengths(qsizetype size) {
  QList<qsizetype> out;
  for (qsizetype n = 0; n < std::min<qsizetype>(size, 64); ++n) out << n;
  qsizetype step = std::max<qsizetype>(1, size / 100);
  for (qsizetype n = 64; n < size; n += step) out << n;
  out << size - 1;
  return out;
}

/// Reading a mutated program must fail with `code`, and name the file.
void expectError(const QByteArray& bytes, ErrorCode code, const char* needle) {
  auto p = readPte(bytes);
  QVERIFY2(!p.ok(), needle);
  QVERIFY2(p.error().code == code, qPrintable(QString("%1: got %2: %3").arg(needle, errorCodeName(p.error().code),
                                                                          QString::fromStdString(p.error().message()))));
  QVERIFY2(p.error().message().find(needle) != std::string::npos, p.error().message().c_str());
  QVERIFY(p.error().message().rfind("corrupt.pte: ", 0) == 0);
}

/// Peak resident set of this process so far, in MiB.
long peakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

/// Runs `read` (which must fail, naming `file`) and checks it neither takes
/// long nor raises the peak RSS by more than `maxMiB`: an absurd size in a
/// file must be refused before anything of that size is allocated. The bounds
/// are generous (sanitizer builds are slow and have their own overhead); a
/// reader that believed the size would need gigabytes or minutes.
template <class Read>
void expectFastFailure(const char* file, Read read, long maxMiB = 256) {
  long before = peakRssMiB();
  auto t0 = std::chrono::steady_clock::now();
  auto r = read();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  QVERIFY2(!r.ok(), file);
  QVERIFY2(r.error().message().find(file) != std::string::npos, r.error().message().c_str());
  QVERIFY2(peakRssMiB() - before <= maxMiB,
           qPrintable(QString("peak RSS grew by %1 MiB: %2").arg(peakRssMiB() - before).arg(QString::fromStdString(r.error().message()))));
  QVERIFY2(seconds < 30, qPrintable(QString("took %1 s").arg(seconds)));
}

/// A valid synthetic program: one float tensor of `sizes` at (mem_id 1, offset 0)
/// added to itself, and `constants` bytes of constant data when non-zero.
std::vector<uint8_t> planProgram(std::vector<int32_t> sizes, int64_t arena, uint64_t constants = 0) {
  test::SynthProgram p;
  p.tensors.push_back({ScalarType::Float, sizes, std::make_pair(1u, uint64_t{0}), 0, {}});
  if (constants) {
    p.tensors.push_back({ScalarType::Float, {static_cast<int32_t>(constants / 4)}, std::nullopt, 1, {}});
    p.constantSizes = {constants};
  }
  p.kernels.push_back({"aten::add", "out", {0, 0, 0}});
  p.inputs = {0};
  p.outputs = {0};
  p.arenas = {0, arena};
  return test::buildSyntheticPte(p);
}

fb::Program* mutableProgram(QByteArray& bytes) { return fb::GetMutableProgram(bytes.data()); }

/// The tensor values of a plan, mutable.
std::vector<fb::Tensor*> tensorsOf(fb::ExecutionPlan* plan) {
  std::vector<fb::Tensor*> out;
  auto* values = plan->mutable_values();
  for (uint32_t i = 0; i < values->size(); ++i) {
    auto* v = values->GetMutableObject(i);
    if (v->val_type() == fb::KernelTypes::Tensor) out.push_back(static_cast<fb::Tensor*>(v->mutable_val()));
  }
  return out;
}

}  // namespace

class TestCorruption : public QObject {
  Q_OBJECT
 private slots:
  // Resource limits first: they compare the peak RSS before and after, which
  // later tests (large fixtures) would already have raised.

  // A billion-element tensor is only a size: reading and analysing the plan
  // allocates nothing of it. A billion entries in a vector the file cannot hold
  // is refused by verification.
  void billionValues() {
    auto bytes = planProgram({1000, 1000, 1000}, int64_t{4000000000});
    long before = peakRssMiB();
    auto p = readProgram(MappedFile::fromBytes("billion.pte", bytes.data(), bytes.size()));
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message().c_str());
    auto summary = summarize(p.value());
    QCOMPARE(summary.methods.at(0).plan.arenas.at(0).highWater, uint64_t{4000000000});
    QVERIFY(peakRssMiB() - before <= 64);

    QByteArray b(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
    auto* values = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0)->mutable_values();
    uint32_t billion = 1000000000;
    std::memcpy(b.data() + (reinterpret_cast<const char*>(values) - b.constData()), &billion, 4);
    expectFastFailure("billion.pte", [&] { return readPte(b, "billion.pte"); });
  }

  // A segment announcing 2^60 bytes lies outside the file.
  void hugeSegment() {
    auto bytes = planProgram({4}, 16, 64);
    QByteArray b(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
    QVERIFY(readPte(b).ok());
    auto* segs = mutableProgram(b)->mutable_segments();
    QVERIFY(segs && segs->size() == 1);
    QVERIFY(segs->GetMutableObject(0)->mutate_size(uint64_t{1} << 60));
    expectFastFailure("huge.pte", [&] { return readPte(b, "huge.pte"); });
    QCOMPARE(readPte(b).error().code, ErrorCode::OutOfRange);
  }

  // A node argument nested 100000 lists deep: the JSON parser's depth limit
  // refuses it (no recursion down 100000 levels, no stack overflow).
  void deeplyNestedJson() {
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string zip = test::zipBytes(test::archiveRecords(test::programJson("4", deep), test::weightsConfig(),
                                                          test::floats({1, 2, 3, 4})));
    QVERIFY(!zip.empty());
    expectFastFailure("deep.pt2", [&] { return readExport(MappedFile::fromBytes("deep.pt2", zip.data(), zip.size())); });
  }

  // models/model.json deflated from 512 MiB of a repeating pattern (under 1 MiB
  // in the file): refused from its header's ratio before anything is inflated.
  void zipBomb() {
    auto records = test::archiveRecords(test::programJson(), test::weightsConfig(), test::floats({1, 2, 3, 4}));
    bool found = false;
    for (auto& r : records)
      if (QByteArray::fromStdString(r.name).endsWith("models/model.json")) {
        r.data.clear();
        r.fillSize = uint64_t{512} << 20;
        r.deflate = true;
        found = true;
      }
    QVERIFY(found);
    std::string zip = test::zipBytes(records);
    QVERIFY(!zip.empty());
    QVERIFY2(zip.size() < (uint64_t{16} << 20), qPrintable(QString::number(zip.size())));
    expectFastFailure("bomb.pt2", [&] { return readExport(MappedFile::fromBytes("bomb.pt2", zip.data(), zip.size())); });
  }

  // Found by tools/fuzz.sh (fuzz_ptd): a .ptd whose entry key is not UTF-8
  // made `inspect --json` throw from the JSON serializer (an abort). The key
  // of xor.ptd's net.linear2.weight gets a 0xFF byte in place of its first dot.
  void nonUtf8KeyInJson() {
    LSTUDIO_REQUIRE_FIXTURES();
    QByteArray b = readAll(fixture("ptd/xor.ptd"));
    qsizetype at = b.indexOf("net.linear2.weight");
    QVERIFY(at > 0);
    b[at + 3] = char(0xff);
    QTemporaryDir dir;
    QString path = dir.filePath("bad-key.ptd");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(b);
    f.close();
    std::ostringstream out, err;
    int code = cli::run({"inspect", path.toStdString(), "--json"}, out, err);
    QCOMPARE(code, 0);
    auto j = nlohmann::json::parse(out.str(), nullptr, false);
    QVERIFY2(!j.is_discarded(), out.str().c_str());
    // The broken byte shows as U+FFFD; the rest of the key is kept.
    QVERIFY2(out.str().find("net\xEF\xBF\xBD" "linear2.weight") != std::string::npos, out.str().c_str());
  }

 private:
  static void addFileRows(const QStringList& rel) {
    QTest::addColumn<QString>("path");
    LSTUDIO_REQUIRE_FIXTURES();
    for (const QString& r : rel) QTest::newRow(qPrintable(r)) << fixture(r);
  }
  static QStringList programs() {
    return {"pte/add.pte", "pte/xor.pte", "pte/dnf.pte", "pte/djl_stress_mlp.pte", "pte/cmsis_ethos_u_minimal_example.pte",
            "pte/ModuleLinear-no-constant-segment.pte", "pte/djl_conv.pte", "pte/numpyrt_dynamic.pte",
            "other/bundled_program.bpte"};
  }

 private slots:
  void truncatedPrograms_data() { addFileRows(programs()); }
  void truncatedPrograms() {
    QFETCH(QString, path);
    QByteArray full = readAll(path);
    QVERIFY(readPte(full).ok());
    for (qsizetype n : truncationLengths(full.size())) {
      auto p = readPte(full.left(n));
      QVERIFY2(!p.ok(), qPrintable(QString("truncated to %1 of %2 bytes was accepted").arg(n).arg(full.size())));
      QVERIFY(!p.error().what.empty());
    }
  }

  void flippedBytesInPrograms_data() { addFileRows(programs()); }
  void flippedBytesInPrograms() {
    QFETCH(QString, path);
    QByteArray full = readAll(path);
    // Flips in weights or padding may leave a valid file; flips in the
    // structure must be caught. Either way, nothing may crash, and what is
    // accepted must survive the full analysis.
    int rejected = 0, tried = 0;
    qsizetype step = std::max<qsizetype>(1, full.size() / 400);
    for (qsizetype pos = 0; pos < full.size(); pos += step) {
      for (uint8_t mask : {uint8_t(0xff), uint8_t(0x80), uint8_t(0x01)}) {
        QByteArray b = full;
        b[pos] = static_cast<char>(b[pos] ^ mask);
        auto p = readPte(b);
        ++tried;
        if (!p.ok()) {
          ++rejected;
          continue;
        }
        std::string text = toText(summarize(p.value()));
        QVERIFY(!text.empty());
      }
    }
    qInfo("%s: %d of %d flipped copies rejected", qPrintable(QFileInfo(path).fileName()), rejected, tried);
    QVERIFY(rejected > 0);
  }

  void badMagic() {
    LSTUDIO_REQUIRE_FIXTURES();
    QByteArray b = readAll(fixture("pte/add.pte"));
    b[4] = 'X';
    auto p = readPte(b);
    QVERIFY(!p.ok());
    QCOMPARE(p.error().code, ErrorCode::BadMagic);
    QCOMPARE(p.error().offset.value_or(0), uint64_t(4));
    QCOMPARE(p.error().expected, std::string("\"ET12\""));
    QCOMPARE(p.error().found, std::string("\"XT12\""));
    // A data file opened as a program says what it is.
    auto d = readPte(readAll(fixture("ptd/xor.ptd")));
    QVERIFY(!d.ok());
    QVERIFY(d.error().found.find(".ptd data file") != std::string::npos);
    // An ETDump as the runtime writes it (size prefix, root offset, "ED00"): named, with where to go.
    QByteArray etdump("\xd4\x08\x00\x00\x08\x00\x00\x00" "ED00" "\xf8\xff\xff\xff", 16);
    etdump.append(2244, '\0');
    auto e = readPte(etdump);
    QVERIFY(!e.ok());
    QCOMPARE(e.error().code, ErrorCode::Unsupported);
    QCOMPARE(e.error().offset.value_or(0), uint64_t(8));
    QVERIFY2(e.error().found.find("an ETDump") != std::string::npos && e.error().found.find("open the .pte") != std::string::npos &&
                 e.error().found.find("lowering-cli etdump") != std::string::npos,
             e.error().found.c_str());
  }

  // A file named .pt2 that is not a zip is told as such (it read "expected ET12", as if it
  // were a .pte); an ExecuTorch program misnamed .pt2 opens for what it is.
  void pt2ThatIsNoZip() {
    QTemporaryDir dir;
    const std::string junk = (dir.path() + "/model.pt2").toStdString();
    {
      std::ofstream f(junk, std::ios::binary);
      f << "hello, this is not a model at all";
    }
    auto p = openProgramFile(junk);
    QVERIFY(!p.ok());
    QCOMPARE(p.error().code, ErrorCode::BadMagic);
    QCOMPARE(p.error().offset.value_or(1), uint64_t(0));
    QVERIFY2(p.error().expected.find("zip archive") != std::string::npos, p.error().expected.c_str());
    QVERIFY(p.error().found.find("ET12") == std::string::npos);
    auto synthetic = planProgram({2, 3}, 24);
    const std::string misnamed = (dir.path() + "/program.pt2").toStdString();
    {
      std::ofstream f(misnamed, std::ios::binary);
      f.write(reinterpret_cast<const char*>(synthetic.data()), static_cast<std::streamsize>(synthetic.size()));
    }
    auto q = openProgramFile(misnamed);
    QVERIFY2(q.ok(), q.ok() ? "" : q.error().message().c_str());
    QCOMPARE(q.value().format, SourceFormat::Pte);
  }

  void extendedHeaderFields() {
    LSTUDIO_REQUIRE_FIXTURES();
    const QByteArray full = readAll(fixture("pte/dnf.pte"));
    QVERIFY(full.mid(8, 4) == "eh00");
    auto put64 = [](QByteArray& b, int at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); };
    QByteArray b = full;
    put64(b, 16, static_cast<uint64_t>(full.size()) + 1);
    expectError(b, ErrorCode::BadHeader, "program_size");
    b = full;
    put64(b, 24, uint64_t(1) << 62);
    expectError(b, ErrorCode::BadHeader, "segment_base_offset");
    b = full;
    put64(b, 32, ~uint64_t(0) - 8);
    expectError(b, ErrorCode::Truncated, "segment data");
    b = full;
    uint32_t len = 8;
    std::memcpy(b.data() + 12, &len, 4);
    expectError(b, ErrorCode::BadHeader, "eh00 header length");
  }

  void indicesOutOfRange() {
    LSTUDIO_REQUIRE_FIXTURES();
    const QByteArray full = readAll(fixture("pte/dnf.pte"));
    {
      QByteArray b = full;
      auto* ins = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0)->mutable_chains()->GetMutableObject(0)
                      ->mutable_instructions();
      bool done = false;  // op_index 0 is not stored (flatbuffer default): pick a call with another one
      for (uint32_t i = 0; i < ins->size() && !done; ++i) {
        auto* in = ins->GetMutableObject(i);
        if (in->instr_args_type() != fb::InstructionArguments::KernelCall) continue;
        auto* k = static_cast<fb::KernelCall*>(in->mutable_instr_args());
        if (k->op_index() > 0) done = k->mutate_op_index(999);
      }
      QVERIFY(done);
      expectError(b, ErrorCode::OutOfRange, "op_index");
    }
    {
      QByteArray b = full;
      auto* args = static_cast<fb::KernelCall*>(mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0)->mutable_chains()->GetMutableObject(0)
                       ->mutable_instructions()->GetMutableObject(0)->mutable_instr_args())->mutable_args();
      args->Mutate(0, 1000000);
      expectError(b, ErrorCode::OutOfRange, ".args");
    }
    {
      QByteArray b = full;
      auto* plan = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0);
      bool done = false;
      for (auto* v : tensorsOf(plan)) {
        auto* t = v;
        if (t && t->mutable_allocation_info()) {
          QVERIFY(t->mutable_allocation_info()->mutate_memory_id(7));
          done = true;
          break;
        }
      }
      QVERIFY(done);
      expectError(b, ErrorCode::OutOfRange, "memory_id");
    }
    {
      QByteArray b = full;
      auto* plan = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0);
      bool done = false;
      for (auto* v : tensorsOf(plan)) {
        auto* t = v;
        if (t && t->data_buffer_idx() > 0 && !t->allocation_info()) {
          QVERIFY(t->mutate_data_buffer_idx(9999));
          done = true;
          break;
        }
      }
      QVERIFY(done);
      expectError(b, ErrorCode::OutOfRange, "data_buffer_idx");
    }
    {
      QByteArray b = full;
      auto* plan = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0);
      for (auto* v : tensorsOf(plan))
        if (auto* t = v) {
          QVERIFY(t->mutate_scalar_type(static_cast<fb::ScalarType>(99)));
          break;
        }
      expectError(b, ErrorCode::Invalid, "scalar_type");
    }
    {
      QByteArray b = full;
      QVERIFY(mutableProgram(b)->mutable_segments()->GetMutableObject(0)->mutate_size(uint64_t(1) << 62));
      expectError(b, ErrorCode::OutOfRange, "segments[0]");
    }
    {
      QByteArray b = full;
      auto* plan = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0);
      plan->mutable_outputs()->Mutate(0, -5);
      expectError(b, ErrorCode::OutOfRange, ".outputs");
    }
  }

  void delegateReferencesOutOfRange() {
    LSTUDIO_REQUIRE_FIXTURES();
    QByteArray b = readAll(fixture("pte/djl_stress_mlp.pte"));
    auto* d = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0)->mutable_delegates()->GetMutableObject(0);
    QVERIFY(d->mutable_processed()->mutate_index(99));
    expectError(b, ErrorCode::OutOfRange, "processed.index");
  }

  void absurdCounts() {
    LSTUDIO_REQUIRE_FIXTURES();
    const QByteArray full = readAll(fixture("pte/dnf.pte"));
    QByteArray b = full;
    auto* values = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0)->mutable_values();
    auto lengthAt = reinterpret_cast<const char*>(values) - b.constData();
    uint32_t huge = 0x3fffffff;
    std::memcpy(b.data() + lengthAt, &huge, 4);
    auto p = readPte(b);
    QVERIFY(!p.ok());
    QCOMPARE(p.error().code, ErrorCode::Verification);
    QVERIFY2(p.error().what.find("values") != std::string::npos, p.error().message().c_str());
    QVERIFY(p.error().offset.has_value());

    // Sizes whose product overflows 64 bits.
    b = full;
    auto* plan = mutableProgram(b)->mutable_execution_plan()->GetMutableObject(0);
    for (auto* v : tensorsOf(plan))
      if (auto* t = v; t && t->sizes() && t->sizes()->size() >= 2) {
        for (uint32_t i = 0; i < t->sizes()->size(); ++i) t->mutable_sizes()->Mutate(i, 0x7fffffff);
        break;
      }
    p = readPte(b);
    QVERIFY(!p.ok());
    QVERIFY(p.error().code == ErrorCode::Overflow || p.error().code == ErrorCode::OutOfRange);
  }

  // Found by tools/fuzz.sh: a program whose int64 vector (non_const_buffer_sizes)
  // starts 4-byte aligned. flatbuffers' verifier checks only the length
  // field's alignment; reading the elements would be undefined behaviour.
  void misalignedEightByteVector() {
    const char* hex =
    "3c0000004554313265683030200000003004000000000000800400000000000030020000000000000000000010001800"
    "0000140010000c000800040010000000140000002c0000006c0000006c0000006c000000c0feffff0400000002000000"
    "0000000000000000000000000000000002000000300000000c000000080018000c00040008000000b001000000000000"
    "800000000000000000000000080010000000040008000000040000000000000000000000000000000000000001000000"
    "1c000000000016002800240020001c001800140010000c00080600000000000000000400160000002400000038000000"
    "7000000070000000cc000000d0000000d4000000d8010000240300000200000000000000000000008000000000000000"
    "000000000100000004000000beffffff0c0000000c0000001400000000000000acfeffff01000000000000010e000000"
    "586e6e7061636b4261636b656e64000000000000010000001000000000000a0010000c00080004000a0000000c000000"
    "3c0000003c0000000100000004000000fcfeffff10000000000000020800080000000400080000000400000003000000"
    "01000000000000000200000000000000000000000100000002000000010000000100000003000000c400000064000000"
    "04000000acffffff1c0000000005160016001500000010000c0000000000080000000700160000000000000114000000"
    "180000001c000000000606000800040006000000010000000100000000000000010000000800000008000a0009000400"
    "080000001c0000000005160018001700000010000c000000000008000000070016000000000000011000000018000000"
    "1c00000000000006a4ffffff20000000010000000100000000000000010000000800000008000c000b00040008000000"
    "180000000000000510001400130000000c0008000000040010000000010000000c0000000c0000000000000600000000"
    "0000000008000c0008000400080000000800000044000000390000005b312c207b2274797065223a206e756c6c2c2022"
    "636f6e74657874223a206e756c6c2c20226368696c6472656e5f73706563223a205b5d7d5d000000fe0000005b312c20"
    "7b2274797065223a20226275696c74696e732e7475706c65222c2022636f6e74657874223a20226e756c6c222c202263"
    "68696c6472656e5f73706563223a205b7b2274797065223a20226275696c74696e732e7475706c65222c2022636f6e74"
    "657874223a20226e756c6c222c20226368696c6472656e5f73706563223a205b7b2274797065223a206e756c6c2c2022"
    "636f6e74657874223a206e756c6c2c20226368696c6472656e5f73706563223a205b5d7d5d7d2c207b2274797065223a"
    "20226275696c74696e732e64696374222c2022636f6e74657874223a20225b5d222c20226368696c6472656e5f737065"
    "63223a205b5d7d5d7d5d000007000000666f727761726400000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000040000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000002000000010000000800000008000e0007000800080000000000000118000000000012001c00060008000c0000"
    "0010001400180012000000000001000100000010000000010000000100000001000000010000000100000008000c0007"
    "00080008000000000000011400000010001400060008000c000000000010001000000000000100010000000800000001"
    "0000000100000008000000010000001000000000000a001200070008000c000a0000000000000f140000000100000000"
    "000a000c000000040008000a000000010000000200000001000000300000000000000000000000000001000000030000"
    "0090000000400000000400000084ffffff0000000104000000c6ffffff00000100010000001000000002000000020000"
    "0002000000010000000800000008000e0007000800080000000000000118000000000012001c00060008000c00000010"
    "001400180012000000000001000100000010000000010000000100000001000000010000000100000008000c00070008"
    "0008000000000000011400000010001400060008000c0000000000100010000000000001000100000008000000010000"
    "000100000008000000010000001000000000000a00120007000800000000000f140000000100000000000a000c000000"
    "040008000a000000010000000200000001000000300000000000000000000000";
    QByteArray bytes = QByteArray::fromHex(hex);
    QCOMPARE(bytes.size(), qsizetype(1712));
    auto p = readPte(bytes);
    QVERIFY(!p.ok());
    QVERIFY2(p.error().message().find("misaligned") != std::string::npos, p.error().message().c_str());
  }

  void truncatedDataFiles_data() { addFileRows({"ptd/linear.ptd", "ptd/xor.ptd", "ptd/rs_default_external_constant.ptd"}); }
  void truncatedDataFiles() {
    QFETCH(QString, path);
    QByteArray full = readAll(path);
    QVERIFY(readPtd(full).ok());
    for (qsizetype n : truncationLengths(full.size())) {
      auto d = readPtd(full.left(n));
      QVERIFY2(!d.ok(), qPrintable(QString("truncated to %1 of %2 bytes was accepted").arg(n).arg(full.size())));
    }
  }

  void flippedBytesInDataFiles_data() { truncatedDataFiles_data(); }
  void flippedBytesInDataFiles() {
    QFETCH(QString, path);
    QByteArray full = readAll(path);
    int rejected = 0;
    for (qsizetype pos = 0; pos < full.size(); ++pos)
      for (uint8_t mask : {uint8_t(0xff), uint8_t(0x80), uint8_t(0x01)}) {
        QByteArray b = full;
        b[pos] = static_cast<char>(b[pos] ^ mask);
        if (!readPtd(b).ok()) ++rejected;
      }
    QVERIFY(rejected > 0);
  }

  void dataFileHeaderFields() {
    LSTUDIO_REQUIRE_FIXTURES();
    const QByteArray full = readAll(fixture("ptd/xor.ptd"));
    auto put64 = [](QByteArray& b, int at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); };
    QByteArray b = full;
    b[9] = 'X';  // FH01 -> FX01
    auto d = readPtd(b);
    QVERIFY(!d.ok());
    QCOMPARE(d.error().code, ErrorCode::BadMagic);
    QCOMPARE(d.error().offset.value_or(0), uint64_t(8));
    b = full;
    put64(b, 24, uint64_t(1) << 40);
    d = readPtd(b);
    QVERIFY(!d.ok());
    QCOMPARE(d.error().offset.value_or(0), uint64_t(16));
    b = full;
    put64(b, 40, uint64_t(1) << 40);
    d = readPtd(b);
    QVERIFY(!d.ok());
    QCOMPARE(d.error().code, ErrorCode::Truncated);
  }
};

QTEST_GUILESS_MAIN(TestCorruption)
#include "tst_corruption.moc"
