// Memory-plan analysis on hand-built methods: lifetimes, aliases, loops,
// lower bound and the overlap check.
#include <QtTest>

#include "engine/planning/MemoryPlanAnalysis.h"

using namespace lstudio;

namespace {

/// A method builder for plans: planned float tensors of `bytes` bytes.
struct PlanBuilder {
  Method m;
  ValueId tensor(uint64_t bytes, uint64_t offset, uint32_t memId = 1, bool initialValue = false) {
    TensorSpec t;
    t.dtype = ScalarType::Byte;
    t.sizes = {static_cast<int64_t>(bytes)};
    t.slot = PlannedSlot{memId, offset};
    if (initialValue) t.dataBufferIndex = 1;
    m.values.push_back(Value{std::move(t), {}});
    return static_cast<ValueId>(m.values.size() - 1);
  }
  void kernel(std::vector<ValueId> args) {
    Node n;
    n.args = std::move(args);
    m.nodes.push_back(n);
  }
  void move(ValueId from, ValueId to) {
    Node n;
    n.kind = NodeKind::Move;
    n.args = {from, to};
    m.nodes.push_back(n);
  }
  ValueId constantFalse() {
    m.values.push_back(Value{false, {}});
    return static_cast<ValueId>(m.values.size() - 1);
  }
  void jumpFalse(ValueId cond, int64_t target) {
    Node n;
    n.kind = NodeKind::JumpFalse;
    n.args = {cond};
    n.jumpTarget = target;
    m.nodes.push_back(n);
  }
};

const PlannedTensor& find(const MemoryPlanReport& r, ValueId v) {
  for (const auto& t : r.tensors)
    if (t.value == v) return t;
  qFatal("tensor not planned");
}

}  // namespace

class TestMemoryPlan : public QObject {
  Q_OBJECT
 private slots:
  // A cond as ExecuTorch emits it: JumpFalse(pred), true branch, Move, JumpFalse(false),
  // false branch, Move. The branches never both run, so their tensors may share bytes;
  // a Move hands the branch's tensor itself to the cond's result, so its bytes live on.
  void condBranchesAreExclusiveAndMovesKeepBytesAlive() {
    PlanBuilder b;
    ValueId pred = b.tensor(1, 256), x = b.tensor(16, 128);
    ValueId out = b.tensor(16, 160);
    ValueId whenTrue = b.tensor(16, 16), whenFalse = b.tensor(32, 0);
    ValueId never = b.constantFalse();
    b.m.inputs = {pred, x};
    b.jumpFalse(pred, 4);         // 0
    b.kernel({x, whenTrue, whenTrue});  // 1
    b.move(whenTrue, out);        // 2
    b.jumpFalse(never, 6);        // 3
    b.kernel({x, whenFalse, whenFalse});  // 4: over whenTrue's bytes, in the other branch
    b.move(whenFalse, out);       // 5
    b.m.outputs = {out};
    b.m.nonConstBufferSizes = {0, 272};
    auto r = analyzeMemoryPlan(b.m);
    QVERIFY2(r.overlapFree(), r.overlaps.empty() ? "" : std::to_string(r.overlaps[0].step).c_str());
    QCOMPARE(find(r, whenTrue).last, 5);  // as long as the cond's result
    // A tensor written after the cond over the true branch's result overwrites what the method returns.
    ValueId after = b.tensor(16, 8);
    b.m.nodes.pop_back();
    b.move(whenFalse, out);
    b.kernel({out, after, after});  // 6
    b.m.outputs = {out, after};
    r = analyzeMemoryPlan(b.m);
    QCOMPARE(r.overlapCount, uint64_t(2));  // both branches' results
  }

  void lifetimesFollowInstructionOrder() {
    PlanBuilder b;
    ValueId x = b.tensor(64, 0), a = b.tensor(64, 64), y = b.tensor(64, 0);
    b.m.inputs = {x};
    b.m.outputs = {y};
    b.kernel({x, a, a});  // a = f(x)
    b.kernel({a, y, y});  // y = g(a), reuses x's bytes
    b.m.nonConstBufferSizes = {0, 128};
    auto r = analyzeMemoryPlan(b.m);
    QCOMPARE(find(r, x).first, 0);
    QCOMPARE(find(r, x).last, 0);
    QCOMPARE(find(r, a).first, 0);
    QCOMPARE(find(r, a).last, 1);
    QCOMPARE(find(r, y).first, 1);
    QCOMPARE(find(r, y).last, 1);
    QVERIFY(r.overlapFree());
    QCOMPARE(r.arenas.size(), size_t(1));
    QCOMPARE(r.arenas[0].lowerBound, uint64_t(128));
    QCOMPARE(r.arenas[0].size, uint64_t(128));
    QCOMPARE(r.arenas[0].ratio(), 1.0);
  }

  void detectsOverlaps() {
    PlanBuilder b;
    ValueId x = b.tensor(64, 0), a = b.tensor(64, 32);  // a's bytes start inside x's
    b.m.inputs = {x};
    b.m.outputs = {a};
    b.kernel({x, a, a});
    b.m.nonConstBufferSizes = {0, 96};
    auto r = analyzeMemoryPlan(b.m);
    QCOMPARE(r.overlapCount, size_t(1));
    QCOMPARE(r.overlaps[0].step, 0);
  }

  void aliasesAtTheSameOffsetAreOneStorage() {
    PlanBuilder b;
    ValueId x = b.tensor(64, 0), view = b.tensor(64, 0), out = b.tensor(64, 64);
    b.m.inputs = {x};
    b.m.outputs = {out};
    b.kernel({x, view, view});  // an in-place / view result sharing x's storage
    b.kernel({view, out, out});
    b.m.nonConstBufferSizes = {0, 128};
    auto r = analyzeMemoryPlan(b.m);
    QVERIFY(r.overlapFree());
    QCOMPARE(r.storages.size(), size_t(2));
    QCOMPARE(find(r, x).storage, find(r, view).storage);
    QCOMPARE(r.arenas[0].lowerBound, uint64_t(128));
  }

  void reuseAtTheSameOffsetIsNotAnAlias() {
    PlanBuilder b;
    ValueId x = b.tensor(64, 0), a = b.tensor(64, 64), c = b.tensor(64, 0), d = b.tensor(64, 64);
    b.m.inputs = {x};
    b.m.outputs = {d};
    b.kernel({x, a, a});
    b.kernel({a, c, c});
    b.kernel({c, d, d});  // d reuses a's slot after a died at step 1
    b.m.nonConstBufferSizes = {0, 128};
    auto r = analyzeMemoryPlan(b.m);
    QVERIFY(r.overlapFree());
    QCOMPARE(r.storages.size(), size_t(4));
    QCOMPARE(r.arenas[0].lowerBound, uint64_t(128));
  }

  void outputsAndMutableStateLiveToTheEnd() {
    PlanBuilder b;
    ValueId state = b.tensor(16, 0, 1, true), x = b.tensor(16, 16), early = b.tensor(16, 32), t = b.tensor(16, 48);
    b.m.inputs = {x};
    b.m.outputs = {early};
    b.kernel({x, early, early});
    b.kernel({x, t, t});
    b.kernel({t, state, state});
    b.m.nonConstBufferSizes = {0, 64};
    auto r = analyzeMemoryPlan(b.m);
    QCOMPARE(find(r, early).last, 2);
    QCOMPARE(find(r, state).first, 0);
    QCOMPARE(find(r, state).last, 2);
  }

  void loopsStretchLifetimes() {
    PlanBuilder b;
    ValueId x = b.tensor(16, 0), tmp = b.tensor(16, 16), cond = b.tensor(16, 32), out = b.tensor(16, 48);
    b.m.inputs = {x};
    b.m.outputs = {out};
    b.kernel({x, tmp, tmp});      // 0
    b.kernel({tmp, cond, cond});  // 1
    b.jumpFalse(cond, 0);         // 2: loop back to 0
    b.kernel({x, out, out});      // 3
    b.m.nonConstBufferSizes = {0, 64};
    auto r = analyzeMemoryPlan(b.m);
    QVERIFY(r.loops);
    QCOMPARE(find(r, tmp).first, 0);
    QCOMPARE(find(r, tmp).last, 2);
  }

  void lowerBoundRoundsToTheInferredAlignment() {
    PlanBuilder b;
    ValueId x = b.tensor(4, 0), y = b.tensor(4, 16);
    b.m.inputs = {x};
    b.m.outputs = {y};
    b.kernel({x, y, y});
    b.m.nonConstBufferSizes = {0, 32};
    auto r = analyzeMemoryPlan(b.m);
    QCOMPARE(r.alignment, 16u);
    QCOMPARE(r.arenas[0].lowerBound, uint64_t(32));
    PlanBuilder c;  // offsets that are only 4-aligned: the plan used a smaller alignment
    x = c.tensor(4, 0);
    y = c.tensor(4, 4);
    c.m.inputs = {x};
    c.m.outputs = {y};
    c.kernel({x, y, y});
    c.m.nonConstBufferSizes = {0, 8};
    r = analyzeMemoryPlan(c.m);
    QCOMPARE(r.alignment, 4u);
    QCOMPARE(r.arenas[0].lowerBound, uint64_t(8));
  }

  void unreferencedTensorsAreCountedNotPlanned() {
    PlanBuilder b;
    ValueId x = b.tensor(16, 0);
    b.tensor(16, 0);  // planned but never used
    b.m.inputs = {x};
    b.m.nonConstBufferSizes = {0, 16};
    auto r = analyzeMemoryPlan(b.m);
    QCOMPARE(r.unreferenced, size_t(1));
    QVERIFY(r.overlapFree());
  }

  void separateArenasPerMemId() {
    PlanBuilder b;
    ValueId x = b.tensor(32, 0, 1), y = b.tensor(64, 0, 2);
    b.m.inputs = {x};
    b.m.outputs = {y};
    b.kernel({x, y, y});
    b.m.nonConstBufferSizes = {0, 32, 64};
    auto r = analyzeMemoryPlan(b.m);
    QVERIFY(r.overlapFree());  // same offset, different arenas
    QCOMPARE(r.arenas.size(), size_t(2));
    QCOMPARE(r.arenas[0].lowerBound, uint64_t(32));
    QCOMPARE(r.arenas[1].lowerBound, uint64_t(64));
  }
};

QTEST_GUILESS_MAIN(TestMemoryPlan)
#include "tst_memoryplan.moc"
