// The engine's folders are layers, and so are the front end's: every #include points down (or
// within its own folder); the engine never includes Qt, the UI or the apps, and the UI never
// includes the apps. engine/README.md and ui/README.md name the layers.
#include <QDirIterator>
#include <QFile>
#include <QRegularExpression>
#include <QtTest>

namespace {

// Rank of each folder of a tree ("engine" or "ui"); a file may include its own folder and
// folders of lower rank in its tree. -1: no layer.
int layerRank(const QString& tree, const QString& folder) {
  static const QHash<QString, int> engine = {
      {"support", 0}, {"ir", 1},      {"formats", 2},  {"planning", 2},
      {"samples", 2}, {"run", 2},     {"inspect", 3}, {"lowering", 4}, {"workspace", 5}};
  static const QHash<QString, int> ui = {{"support", 0}, {"run", 1},    {"graph", 2}, {"plan", 2},
                                         {"size", 2},    {"config", 2}, {"window", 3}};
  return (tree == "engine" ? engine : tree == "ui" ? ui : QHash<QString, int>()).value(folder, -1);
}

// "engine/lowering/passes/X.h" -> "lowering" in tree "engine"; "" outside the tree.
QString folderOf(const QString& path, const QString& tree) {
  const QStringList parts = path.split('/');
  return parts.size() >= 3 && parts[0] == tree ? parts[1] : QString();
}

struct Walk {
  int files = 0;
  int includes = 0;  // of the tree's own headers
  QStringList violations;
};

// Every file of `tree`: in a layer, its includes of the tree pointing down, and none of
// `forbidden` (include prefixes the tree must never reach).
Walk walkTree(const QString& tree, const QStringList& forbidden) {
  const QString root = LSTUDIO_SOURCE_DIR;
  // Not a raw string: moc's tokenizer loses its place in one at namespace scope.
  static const QRegularExpression include("^\\s*#\\s*include\\s*[<\"]([^>\"]+)[>\"]");
  Walk walk;
  QDirIterator it(root + "/" + tree, {"*.h", "*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    const QString rel = QDir(root).relativeFilePath(path);
    const QString from = folderOf(rel, tree);
    ++walk.files;
    if (layerRank(tree, from) < 0) {
      walk.violations << rel + QStringLiteral(" is in no layer (%1/README.md)").arg(tree);
      continue;
    }
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
      walk.violations << rel + " cannot be read";
      continue;
    }
    int line = 0;
    while (!f.atEnd()) {
      ++line;
      const auto m = include.match(QString::fromUtf8(f.readLine()));
      if (!m.hasMatch()) continue;
      const QString target = m.captured(1);
      const QString where = QStringLiteral("%1:%2 includes %3").arg(rel).arg(line).arg(target);
      const bool banned = std::any_of(forbidden.begin(), forbidden.end(),
                                      [&](const QString& p) { return target.startsWith(p); });
      if (banned) {
        walk.violations << where + QStringLiteral(" (%1 may not include it)").arg(tree);
        continue;
      }
      if (!target.startsWith(tree + "/")) continue;
      ++walk.includes;
      const QString to = folderOf(target, tree);
      if (to == from) continue;
      if (layerRank(tree, to) < 0 || layerRank(tree, to) >= layerRank(tree, from))
        walk.violations << where + QStringLiteral(" (%1 is not below %2)").arg(to, from);
    }
  }
  return walk;
}

}  // namespace

class TestLayering : public QObject {
  Q_OBJECT
 private slots:
  void includesPointDown_data();
  void includesPointDown();
  void rankRules_data();
  void rankRules();
};

void TestLayering::includesPointDown_data() {
  QTest::addColumn<QString>("tree");
  QTest::addColumn<QStringList>("forbidden");
  QTest::addColumn<int>("minFiles");
  QTest::addRow("engine") << "engine" << QStringList{"Q", "ui/", "app/"} << 50;
  QTest::addRow("ui") << "ui" << QStringList{"app/"} << 50;
}

void TestLayering::includesPointDown() {
  QFETCH(QString, tree);
  QFETCH(QStringList, forbidden);
  QFETCH(int, minFiles);
  const Walk walk = walkTree(tree, forbidden);
  QVERIFY(walk.files > minFiles);
  QVERIFY(walk.includes > 50);
  QVERIFY2(walk.violations.isEmpty(), qPrintable(walk.violations.join('\n')));
}

// The rule itself: down is allowed, up and sideways are not.
void TestLayering::rankRules_data() {
  QTest::addColumn<QString>("tree");
  QTest::addColumn<QString>("from");
  QTest::addColumn<QString>("to");
  QTest::addColumn<bool>("allowed");
  QTest::addRow("lowering -> ir") << "engine" << "lowering" << "ir" << true;
  QTest::addRow("ir -> lowering") << "engine" << "ir" << "lowering" << false;
  QTest::addRow("formats -> planning") << "engine" << "formats" << "planning" << false;
  QTest::addRow("workspace -> lowering") << "engine" << "workspace" << "lowering" << true;
  QTest::addRow("ui graph -> run") << "ui" << "graph" << "run" << true;
  QTest::addRow("ui window -> plan") << "ui" << "window" << "plan" << true;
  QTest::addRow("ui graph -> plan") << "ui" << "graph" << "plan" << false;
  QTest::addRow("ui run -> window") << "ui" << "run" << "window" << false;
}

void TestLayering::rankRules() {
  QFETCH(QString, tree);
  QFETCH(QString, from);
  QFETCH(QString, to);
  QFETCH(bool, allowed);
  QCOMPARE(layerRank(tree, to) < layerRank(tree, from), allowed);
}

QTEST_GUILESS_MAIN(TestLayering)
#include "tst_layering.moc"
