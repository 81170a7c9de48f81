// What a pass changed: nodes matched by name, modified when their printed line differs.
#include <QtTest>

#include "engine/samples/SampleZoo.h"
#include "engine/lowering/GraphDiff.h"
#include "engine/lowering/GraphText.h"

using namespace lstudio;

class TestGraphDiff : public QObject {
  Q_OBJECT
 private slots:
  void sameMethodHasNoChanges() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    MethodDiff d = diffMethods(p->methods[0], p->methods[0]);
    QVERIFY(d.empty());
    for (size_t i = 0; i < d.matchOf.size(); ++i) QCOMPARE(d.matchOf[i], int(i));
  }

  void addedRemovedModified() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    const Method& before = p->methods[0];
    QVERIFY(before.nodes.size() >= 4);
    Method after = before;
    after.nodes.erase(after.nodes.begin() + 1);         // removed
    after.nodes[0].name = "renamed";                    // removed + added
    after.nodes[1].argNames.assign(after.nodes[1].args.size(), "x");  // modified
    MethodDiff d = diffMethods(before, after);
    QCOMPARE(d.added, size_t(1));
    QCOMPARE(d.after[0], MethodDiff::Mark::Added);
    QCOMPARE(d.after[1], MethodDiff::Mark::Modified);
    QCOMPARE(d.modified, size_t(1));
    QCOMPARE(d.removed, (std::vector<int>{0, 1}));
    QCOMPARE(d.matchOf[1], 2);
    QVERIFY(nodeLine(after, 1).find("x=") != std::string::npos);
  }

  void unnamedNodesMatchByPosition() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    Method before = p->methods[0];
    for (Node& n : before.nodes) n.name.clear();
    Method after = before;
    after.nodes.pop_back();
    MethodDiff d = diffMethods(before, after);
    QCOMPARE(d.added, size_t(0));
    QCOMPARE(d.modified, size_t(0));
    QCOMPARE(d.removed, (std::vector<int>{int(before.nodes.size()) - 1}));
  }
};

QTEST_GUILESS_MAIN(TestGraphDiff)
#include "tst_graphdiff.moc"
