// Memory planners behind one interface: validation, the verifier, the lower
// bound, naive / best-fit / suite on hand-made and random problems, and
// re-planning the real programs.
#include <QtTest>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/planning/MemoryPlanning.h"
#include "engine/planning/Planners.h"
#include "engine/formats/PteReader.h"
#include "tests/TestSupport.h"

using namespace lstudio;
using namespace lstudio::test;

namespace {

PlanProblem problem(std::vector<PlanTensor> t, uint64_t alignment = 16) { return PlanProblem{std::move(t), alignment}; }

/// Random problems shaped like real graphs: mostly short lifetimes, a few long ones.
PlanProblem randomProblem(std::mt19937& rng, int n, int memIds = 1) {
  PlanProblem p;
  std::uniform_int_distribution<int> size(1, 64), len(0, 6), longLived(0, 9), mem(1, memIds);
  for (int i = 0; i < n; ++i) {
    int first = i / 2;
    int last = longLived(rng) == 0 ? first + n : first + len(rng);
    p.tensors.push_back(PlanTensor{uint64_t(size(rng)) * 16, first, last, uint32_t(mem(rng))});
  }
  return p;
}

}  // namespace

class TestPlanners : public QObject {
  Q_OBJECT
 private slots:
  void validation() {
    QVERIFY(validateProblem(problem({{16, 0, 1, 1}})).ok());
    QVERIFY(!validateProblem(problem({{16, 2, 1, 1}})).ok());   // first > last
    QVERIFY(!validateProblem(problem({{16, -1, 1, 1}})).ok());  // negative step
    QVERIFY(!validateProblem(problem({{16, 0, 1, 0}})).ok());   // mem_id 0 holds constants
    QVERIFY(!validateProblem(problem({{16, 0, 1, 1}}, 12)).ok());  // alignment not a power of two
    QVERIFY(!validateProblem(problem({{uint64_t(1) << 62, 0, 1, 1}, {uint64_t(1) << 62, 0, 1, 1}})).ok());
  }

  void verifierCatchesOverlaps() {
    PlanProblem p = problem({{32, 0, 2, 1}, {32, 1, 3, 1}});
    PlanResult bad{"hand", {0, 16}, {0, 48}};
    auto s = verifyPlan(p, bad);
    QVERIFY(!s.ok());
    QVERIFY(s.error().message().find("both alive at step 1") != std::string::npos);
    PlanResult outside{"hand", {0, 32}, {0, 48}};
    QVERIFY(!verifyPlan(p, outside).ok());  // second tensor ends at 64 > arena 48
    PlanResult good{"hand", {0, 32}, {0, 64}};
    QVERIFY(verifyPlan(p, good).ok());
    PlanResult disjointInTime{"hand", {0, 0}, {0, 32}};
    QVERIFY(verifyPlan(problem({{32, 0, 1, 1}, {32, 2, 3, 1}}), disjointInTime).ok());
  }

  void lowerBound() {
    // Live sizes per step: 0: 32, 1: 32+64, 2: 64+16, 3: 16 -> peak 96.
    auto b = lowerBounds(problem({{32, 0, 1, 1}, {64, 1, 2, 1}, {16, 2, 3, 1}, {48, 0, 3, 2}}));
    QCOMPARE(b.size(), size_t(3));
    QCOMPARE(b[1], uint64_t(96));
    QCOMPARE(b[2], uint64_t(48));
  }

  void naiveIsTheBaseline() {
    PlanProblem p = problem({{32, 0, 1, 1}, {64, 1, 2, 1}, {16, 2, 3, 1}});
    PlanResult r = NaivePlanner().plan(p);
    QCOMPARE(r.offsets, (std::vector<uint64_t>{0, 32, 96}));
    QCOMPARE(r.arenaSizes[1], uint64_t(112));
    QVERIFY(verifyPlan(p, r).ok());
  }

  void bestFitReusesGaps() {
    // a [0,1] 64B, b [1,2] 32B, c [2,3] 64B: c can take a's bytes once a is dead.
    PlanProblem p = problem({{64, 0, 1, 1}, {32, 1, 2, 1}, {64, 2, 3, 1}});
    PlanResult r = BestFitPlanner().plan(p);
    QVERIFY(verifyPlan(p, r).ok());
    QCOMPARE(r.arenaSizes[1], uint64_t(96));  // = the lower bound
    QCOMPARE(r.arenaSizes[1], lowerBounds(p)[1]);
  }

  void randomProblemsVerify() {
    std::mt19937 rng(1234);
    auto suite = plannerByName("suite");
    for (int k = 0; k < 300; ++k) {
      PlanProblem p = randomProblem(rng, 5 + k % 60, 1 + k % 3);
      QVERIFY(validateProblem(p).ok());
      std::vector<uint64_t> bound = lowerBounds(p);
      PlanResult naive = NaivePlanner().plan(p), fit = BestFitPlanner().plan(p), best = suite->plan(p),
                 greedy = plannerByName("et-greedy")->plan(p);
      for (const PlanResult* r : {&naive, &fit, &best, &greedy}) {
        auto s = verifyPlan(p, *r);
        QVERIFY2(s.ok(), s.ok() ? "" : s.error().message().c_str());
        for (size_t id = 1; id < bound.size(); ++id) QVERIFY(r->arenaSizes[id] >= bound[id]);
      }
      QVERIFY(fit.total() <= naive.total());
      QVERIFY(best.total() <= greedy.total());  // the suite includes et-greedy
      QVERIFY(best.total() <= fit.total());
    }
  }

  // The default plan of every real program: verified, never above what
  // ExecuTorch stored, never below the bound.
  void realPrograms_data() {
    QTest::addColumn<QString>("path");
    QStringList files = fixtureFiles("pte", {"*.pte"});
    if (files.isEmpty()) QSKIP("../shared/fixtures is absent");
    for (const QString& f : files) QTest::newRow(qPrintable(QFileInfo(f).fileName())) << f;
  }
  void realPrograms() {
    QFETCH(QString, path);
    auto p = readProgramFile(path.toStdString());
    QVERIFY(p.ok());
    for (const Method& m : p->methods) {
      auto mp = planMethod(m, PlanOptions{});
      QVERIFY2(mp.ok(), mp.ok() ? "" : mp.error().message().c_str());
      for (const ArenaPlan& a : mp->arenas) {
        QVERIFY(a.planned >= a.lowerBound);
        if (a.stored) QVERIFY2(a.planned <= *a.stored, qPrintable(QString("%1: planned %2 > stored %3")
                                                                      .arg(QString::fromStdString(m.name))
                                                                      .arg(a.planned)
                                                                      .arg(*a.stored)));
        uint64_t alive = 0;
        for (const auto& t : a.peak) alive += t.size;
        QCOMPARE(alive + a.padding, a.lowerBound);  // the peak tensors are exactly what the bound counts
      }
    }
  }

  void traceAndCsv() {
    LSTUDIO_REQUIRE_FIXTURES();
    auto p = readProgramFile(fixture("pte/dnf.pte").toStdString());
    QVERIFY(p.ok());
    auto mp = planMethod(p->methods[0], PlanOptions{"best-fit", 0});
    QVERIFY(mp.ok());
    auto trace = nlohmann::json::parse(planTraceJson({mp.value()}));
    size_t slices = 0;
    for (const auto& e : trace["traceEvents"]) slices += e["ph"] == "X";
    QCOMPARE(slices, mp->problem.tensors.size());
    std::string csv = planCsv({mp.value()}, {&p->methods[0]});
    QCOMPARE(size_t(std::count(csv.begin(), csv.end(), '\n')), 1 + mp->problem.tensors.size());
    QVERIFY(csv.rfind("method,mem_id,value,name,bytes,offset,first_step,last_step,producer\n", 0) == 0);
  }
};

QTEST_GUILESS_MAIN(TestPlanners)
#include "tst_planners.moc"
