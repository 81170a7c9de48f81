// The engine's folders are layers: every #include points down (or within its own folder),
// and the engine never includes Qt, the UI or the apps. engine/README.md names the layers.
#include <QDirIterator>
#include <QFile>
#include <QRegularExpression>
#include <QtTest>

namespace {

// Rank of each engine folder; a file may include its own folder and folders of lower rank.
int layerRank(const QString& folder) {
  static const QHash<QString, int> ranks = {
      {"support", 0}, {"ir", 1},      {"formats", 2},  {"planning", 2},
      {"samples", 2}, {"run", 2},     {"inspect", 3}, {"lowering", 4}, {"workspace", 5}};
  return ranks.value(folder, -1);
}

// "engine/lowering/passes/X.h" -> "lowering"; "" outside the engine.
QString folderOf(const QString& path) {
  const QStringList parts = path.split('/');
  return parts.size() >= 3 && parts[0] == "engine" ? parts[1] : QString();
}

}  // namespace

class TestLayering : public QObject {
  Q_OBJECT
 private slots:
  void everyFileIsInALayer();
  void includesPointDown();
  void rankRules_data();
  void rankRules();
};

void TestLayering::everyFileIsInALayer() {
  const QString root = LSTUDIO_SOURCE_DIR;
  QDirIterator it(root + "/engine", {"*.h", "*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
  int files = 0;
  while (it.hasNext()) {
    const QString rel = QDir(root).relativeFilePath(it.next());
    QVERIFY2(layerRank(folderOf(rel)) >= 0, qPrintable(rel + " is in no layer (engine/README.md)"));
    ++files;
  }
  QVERIFY(files > 50);
}

void TestLayering::includesPointDown() {
  const QString root = LSTUDIO_SOURCE_DIR;
  static const QRegularExpression include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  QStringList violations;
  int includes = 0;
  QDirIterator it(root + "/engine", {"*.h", "*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    const QString rel = QDir(root).relativeFilePath(path);
    const QString from = folderOf(rel);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    int line = 0;
    while (!f.atEnd()) {
      ++line;
      const auto m = include.match(QString::fromUtf8(f.readLine()));
      if (!m.hasMatch()) continue;
      const QString target = m.captured(1);
      const QString where = QStringLiteral("%1:%2 includes %3").arg(rel).arg(line).arg(target);
      if (target.startsWith("Q") || target.startsWith("ui/") || target.startsWith("app/")) {
        violations << where + " (the engine knows no Qt, UI or app)";
        continue;
      }
      if (!target.startsWith("engine/")) continue;
      ++includes;
      const QString to = folderOf(target);
      if (to == from) continue;
      if (layerRank(to) < 0 || layerRank(to) >= layerRank(from))
        violations << where + QStringLiteral(" (%1 is not below %2)").arg(to, from);
    }
  }
  QVERIFY(includes > 100);
  QVERIFY2(violations.isEmpty(), qPrintable(violations.join('\n')));
}

// The rule itself: down is allowed, up and sideways are not.
void TestLayering::rankRules_data() {
  QTest::addColumn<QString>("from");
  QTest::addColumn<QString>("to");
  QTest::addColumn<bool>("allowed");
  QTest::addRow("lowering -> ir") << "lowering" << "ir" << true;
  QTest::addRow("ir -> lowering") << "ir" << "lowering" << false;
  QTest::addRow("formats -> planning") << "formats" << "planning" << false;
  QTest::addRow("workspace -> lowering") << "workspace" << "lowering" << true;
}

void TestLayering::rankRules() {
  QFETCH(QString, from);
  QFETCH(QString, to);
  QFETCH(bool, allowed);
  QCOMPARE(layerRank(to) < layerRank(from), allowed);
}

QTEST_GUILESS_MAIN(TestLayering)
#include "tst_layering.moc"
