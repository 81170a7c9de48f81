// Shared helpers for the Qt Test units: where the real fixtures are, golden files.
#pragma once

#include <QDir>
#include <QFile>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTest>

#include "engine/ir/CallBuilder.h"
#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio::test {

/// A number `m` computes when it runs (a SymInt), `hint` its example value.
inline ValueId symbolicInt(Method& m, const std::string& name, int64_t hint) {
  Value v{hint, name};
  v.symbolic = true;
  return passes::addValue(m, std::move(v));
}

/// sym_size.int(tensor, dim) put first in `m`, where torch.export binds an input's sizes; its result.
inline ValueId symSizeFirst(Method& m, ValueId tensor, int64_t dim, int64_t hint) {
  Node size;
  size.kind = NodeKind::Kernel;
  size.target = "torch.ops.aten.sym_size.int";
  size.op = operatorIndexOf(m, OperatorRef{"aten::sym_size", "int"});
  size.args = {tensor, passes::addValue(m, Value{dim, {}})};
  size.argNames = {"self", "dim"};
  size.outputs = {symbolicInt(m, "sym_size", hint)};
  size.name = "sym_size";
  m.nodes.insert(m.nodes.begin(), size);
  return size.outputs[0];
}

/// ../shared/fixtures beside the checkout (or $LSTUDIO_FIXTURES); empty when absent.
inline QString fixturesDir() {
  QString env = qEnvironmentVariable("LSTUDIO_FIXTURES");
  QString dir = env.isEmpty() ? QStringLiteral(LSTUDIO_SOURCE_DIR "/../shared/fixtures") : env;
  return QDir(dir).exists() ? QDir(dir).canonicalPath() : QString();
}

/// Fixture files under `sub` matching `patterns`, sorted; empty when absent.
inline QStringList fixtureFiles(const QString& sub, const QStringList& patterns) {
  QString root = fixturesDir();
  if (root.isEmpty()) return {};
  QStringList out;
  for (const QString& f : QDir(root + "/" + sub).entryList(patterns, QDir::Files, QDir::Name))
    out << root + "/" + sub + "/" + f;
  return out;
}

inline QString fixture(const QString& rel) { return fixturesDir() + "/" + rel; }

inline QByteArray readAll(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

/// Compares `actual` with tests/data/golden/NAME. On mismatch writes NAME.actual
/// beside it and returns false with a line diff in `why`. With
/// LSTUDIO_REGENERATE_GOLDEN=1 the golden file is rewritten instead.
inline bool matchesGolden(const QString& name, const QByteArray& actual, QString* why) {
  QString path = QStringLiteral(LSTUDIO_SOURCE_DIR "/tests/data/golden/") + name;
  if (qEnvironmentVariableIntValue("LSTUDIO_REGENERATE_GOLDEN") == 1) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return false;
    f.write(actual);
    return true;
  }
  QByteArray expected = readAll(path);
  if (expected == actual) return true;
  QFile out(path + ".actual");
  if (out.open(QIODevice::WriteOnly)) out.write(actual);
  QList<QByteArray> e = expected.split('\n'), a = actual.split('\n');
  *why = QString("%1 differs from golden (wrote %1.actual)").arg(name);
  for (qsizetype i = 0; i < std::max(e.size(), a.size()); ++i) {
    QByteArray el = i < e.size() ? e[i] : "<none>", al = i < a.size() ? a[i] : "<none>";
    if (el != al) {
      *why += QString("\nline %1:\n- %2\n+ %3").arg(i + 1).arg(QString(el), QString(al));
      break;
    }
  }
  return false;
}

}  // namespace lstudio::test

#define LSTUDIO_REQUIRE_FIXTURES()                                                  \
  do {                                                                              \
    if (lstudio::test::fixturesDir().isEmpty()) QSKIP("../shared/fixtures is absent"); \
  } while (0)
