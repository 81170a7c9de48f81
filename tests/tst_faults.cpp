// Fault injection for export: `lowering-cli export` is killed with SIGKILL at
// chosen byte counts of its output (the LSTUDIO_FAULT_AFTER_BYTES hook in the
// writer, see engine/support/AtomicFile.h), from the first byte to "everything
// written, nothing renamed". The files it would replace must stay
// byte-identical, leftovers must be obviously temporary (NAME.tmp-XXXXXX),
// and the next export must clean them up and succeed.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include "tests/TestSupport.h"
#include "tests/support/SyntheticPte.h"

using namespace lstudio;
using lstudio::test::fixture;

namespace {

QByteArray readBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeBytes(const QString& path, const QByteArray& b) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  QCOMPARE(f.write(b), b.size());
}

struct Run {
  QProcess::ExitStatus status = QProcess::NormalExit;
  int code = -1;
  QString err;
};

Run exportTo(const QStringList& args, qint64 faultAfter = -1) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("LSTUDIO_FAULT_AFTER_BYTES");
  if (faultAfter >= 0) env.insert("LSTUDIO_FAULT_AFTER_BYTES", QString::number(faultAfter));
  p.setProcessEnvironment(env);
  p.start(LSTUDIO_CLI, QStringList{"export"} + args);
  Run r;
  if (!p.waitForFinished(120000)) return r;
  r.status = p.exitStatus();
  r.code = p.exitCode();
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

QStringList temporaries(const QString& dir) {
  return QDir(dir).entryList({"*.tmp-*"}, QDir::Files | QDir::Hidden, QDir::Name);
}

}  // namespace

class TestFaults : public QObject {
  Q_OBJECT

  /// Exports `input` (plus `extra` arguments) to out.pte in a fresh folder,
  /// where `outputs` (file names) hold older contents, killing the export
  /// after each of a spread of byte counts.
  void killDuringExport(const QString& input, const QStringList& extra, const QStringList& outputs) {
    // The reference: the same export, undisturbed, in its own folder.
    QTemporaryDir refDir, dir;
    QVERIFY(refDir.isValid() && dir.isValid());
    Run ref = exportTo(QStringList{input, "-o", refDir.filePath("out.pte")} + extra + QStringList{"--ptd-dir", refDir.path()});
    QVERIFY2(ref.status == QProcess::NormalExit && ref.code == 0, qPrintable(ref.err));
    qint64 total = 0;
    for (const QString& o : outputs) {
      QByteArray b = readBytes(refDir.filePath(o));
      QVERIFY2(!b.isEmpty(), qPrintable(o));
      total += b.size();
    }

    // Older outputs the user would lose: distinct bytes for every file.
    QMap<QString, QByteArray> previous;
    for (const QString& o : outputs) {
      previous[o] = "previous " + o.toUtf8() + QByteArray(1000, char(o.size()));
      writeBytes(dir.filePath(o), previous[o]);
    }
    const QStringList args = QStringList{input, "-o", dir.filePath("out.pte")} + extra + QStringList{"--ptd-dir", dir.path()};
    for (qint64 at : {qint64{0}, qint64{1}, qint64{100}, qint64{4096}, total / 3, total / 2, total - 1, total}) {
      Run r = exportTo(args, at);
      QVERIFY2(r.status == QProcess::CrashExit, qPrintable(QString("not killed at byte %1 of %2: %3").arg(at).arg(total).arg(r.err)));
      for (const QString& o : outputs)
        QVERIFY2(readBytes(dir.filePath(o)) == previous[o],
                 qPrintable(QString("%1 changed by an export killed at byte %2 of %3").arg(o).arg(at).arg(total)));
      // Whatever is left over is named as a temporary of an output.
      for (const QString& t : temporaries(dir.path())) {
        bool ofAnOutput = false;
        for (const QString& o : outputs) ofAnOutput |= t.startsWith(o + ".tmp-") && t.size() == o.size() + 11;
        QVERIFY2(ofAnOutput, qPrintable(t));
      }
    }
    QVERIFY2(!temporaries(dir.path()).isEmpty(), "killing the writer should have left a temporary file");

    // The next export removes the leftovers and writes what the undisturbed one did.
    Run r = exportTo(args);
    QVERIFY2(r.status == QProcess::NormalExit && r.code == 0, qPrintable(r.err));
    for (const QString& o : outputs) QCOMPARE(readBytes(dir.filePath(o)), readBytes(refDir.filePath(o)));
    QCOMPARE(temporaries(dir.path()), QStringList());
  }

 private slots:
  // One .pte with 24 MiB of constants: kills fall before, inside and after
  // the 8 MiB write chunks.
  void killedSingleFileExport() {
    QTemporaryDir src;
    test::SynthProgram p;
    // out = x * constant, as ExecuTorch calls mul.out(self, other, out) -> out.
    p.tensors.push_back({ScalarType::Float, {6 << 20}, std::make_pair(1u, uint64_t{0}), 0, {}});
    p.tensors.push_back({ScalarType::Float, {6 << 20}, std::nullopt, 1, {}});
    p.tensors.push_back({ScalarType::Float, {6 << 20}, std::make_pair(1u, uint64_t{24} << 20), 0, {}});
    p.kernels.push_back({"aten::mul", "out", {0, 1, 2, 2}});
    p.inputs = {0};
    p.outputs = {2};
    p.arenas = {0, int64_t{48} << 20};
    p.constantSizes = {uint64_t{24} << 20};
    std::string error;
    QVERIFY2(test::writeSyntheticPte(src.filePath("big.pte").toStdString(), p, &error), error.c_str());
    killDuringExport(src.filePath("big.pte"), {}, {"out.pte"});
  }

  // A program with external weights: its .ptd is written first, then the
  // .pte; a kill anywhere before the renames leaves both old files.
  void killedExportWithDataFile() {
    LSTUDIO_REQUIRE_FIXTURES();
    killDuringExport(fixture("pte/xor.pte"), {"--ptd", fixture("ptd/xor.ptd")}, {"xor.ptd", "out.pte"});
  }
};

QTEST_GUILESS_MAIN(TestFaults)
#include "tst_faults.moc"
