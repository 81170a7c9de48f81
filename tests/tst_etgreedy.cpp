// ExecuTorch's greedy planner: hand-computed plans for each of its rules, its
// known weakness, the legacy generation, random problems checked for
// validity, and re-planning the real programs in ../shared/fixtures.
#include <QtTest>

#include <algorithm>
#include <map>
#include <random>

#include "engine/planning/EtGreedyPlanner.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/formats/PteReader.h"
#include "tests/TestSupport.h"

using namespace lstudio;

namespace {

PlanTensor T(uint64_t size, int32_t first, int32_t last, uint32_t memId = 1) { return PlanTensor{size, first, last, memId}; }

PlanProblem problem(std::vector<PlanTensor> tensors, uint64_t alignment = 16) {
  PlanProblem p;
  p.tensors = std::move(tensors);
  p.alignment = alignment;
  return p;
}

using U64s = std::vector<uint64_t>;

/// verifyPlan's verdict, with its message when it fails.
QString verdict(const PlanProblem& p, const PlanResult& r) {
  Status s = verifyPlan(p, r);
  return s.ok() ? QString() : QString::fromStdString(s.error().message());
}

#define VERIFY_PLAN(p, r) QCOMPARE(verdict(p, r), QString())

EtGreedyOptions legacy() {
  EtGreedyOptions o;
  o.generation = EtGreedyGeneration::Legacy;
  return o;
}

uint64_t roundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

/// Storages in the order ExecuTorch collected their specs: placeholders
/// first, then graph order, which is the order in which its emitter created
/// the values, so by each storage's first value id.
std::vector<Storage> collectionOrder(std::vector<Storage> st) {
  auto firstValue = [](const Storage& s) { return *std::min_element(s.tensors.begin(), s.tensors.end()); };
  std::sort(st.begin(), st.end(), [&](const Storage& a, const Storage& b) { return firstValue(a) < firstValue(b); });
  return st;
}

PlanProblem problemOf(const std::vector<Storage>& st, uint64_t alignment) {
  PlanProblem p;
  p.alignment = alignment;
  for (const Storage& s : st) p.tensors.push_back(PlanTensor{roundUp(s.size, alignment), s.first, s.last, s.memId});
  return p;
}

}  // namespace

class TestEtGreedy : public QObject {
  Q_OBJECT
 private slots:
  void name() { QCOMPARE(EtGreedyPlanner().name(), std::string("et-greedy")); }

  void emptyProblemGivesTwoZeroArenas() {
    // _compute_total_sizes returns [0, 0] before any padding is added.
    EtGreedyOptions o;
    o.extraPadding = 64;
    EtGreedyPlanner g(o);
    PlanResult r = g.plan(problem({}));
    QCOMPARE(r.algorithm, std::string("et-greedy"));
    QCOMPARE(r.arenaSizes, (U64s{0, 0}));
    QVERIFY(r.offsets.empty());
  }

  void chainReusesTheFirstFreeObject() {
    // t0 [0,1], t1 [1,2], t2 [2,3], all 64 bytes. Equal sizes are visited in
    // reverse collection order: t2, t1, t0.
    //  t2: no object yet -> object 0 (64 bytes), offset 0.
    //  t1: alive with t2 at step 2 -> not in object 0 at 0; above t2 would
    //      need 64 + 64 > 64 -> object 1 (64 bytes).
    //  t0: object 0 holds only t2, which t0 never meets -> object 0, offset 0.
    // Objects end to end: object 0 at 0, object 1 at 64; arena 128.
    auto p = problem({T(64, 0, 1), T(64, 1, 2), T(64, 2, 3)});
    EtGreedyTrace t = EtGreedyPlanner().planTraced(p);
    QCOMPARE(t.order, (std::vector<size_t>{2, 1, 0}));
    QCOMPARE(t.result.offsets, (U64s{0, 64, 0}));
    QCOMPARE(t.result.arenaSizes, (U64s{0, 128}));
    QCOMPARE(t.memObjId, (std::vector<int32_t>{0, 1, 0}));
    QCOMPARE(t.objects.size(), size_t(2));
    QCOMPARE(t.objects[0].first, 0);  // hull of t2 and t0
    QCOMPARE(t.objects[0].last, 3);
  }

  // ExecuTorch 1.5 also places each copy_ write-back's own result (a stale
  // spec on the output node, alive there only), met last: it shapes where the
  // real tensors go (conformance: llama_kv, prefill_decode, constant_buffers
  // under et-greedy) though no value takes its offset.
  void staleWriteBacksShapeThePlan() {
    // state [0,5], t1 [1,2], output [3,5]; the write-back's result [5,5].
    auto p = problem({T(16, 0, 5), T(16, 1, 2), T(16, 3, 5)});
    PlanResult without = EtGreedyPlanner().plan(p);
    QCOMPARE(without.offsets, (U64s{16, 0, 0}));
    p.staleWriteBacks = {T(16, 5, 5)};
    EtGreedyTrace t = EtGreedyPlanner().planTraced(p);
    // The same as planning it as a fourth tensor, which is then dropped.
    auto all = problem({T(16, 0, 5), T(16, 1, 2), T(16, 3, 5), T(16, 5, 5)});
    PlanResult four = EtGreedyPlanner().plan(all);
    QCOMPARE(t.result.offsets, (U64s(four.offsets.begin(), four.offsets.begin() + 3)));
    QCOMPARE(t.result.arenaSizes, four.arenaSizes);
    QCOMPARE(t.result.offsets, (U64s{32, 0, 16}));
    QCOMPARE(t.order.size(), size_t(3));
    QCOMPARE(t.memObjId.size(), size_t(3));
    for (const auto& o : t.objects)
      for (size_t i : o.tensors) QVERIFY(i < 3);
    QVERIFY(verifyPlan(p, t.result).ok());
  }

  void tiesComeInReverseCollectionOrder() {
    // A [0,1], B [1,2], C [3,3], 32 bytes each. Visit order C, B, A:
    //  C -> object 0. B never meets C -> object 0 at 0. A meets B at step 1,
    //  32 + 32 > 32 above it -> object 1 at 32.
    // Visiting in collection order would have given A 0, B 32 instead.
    auto p = problem({T(32, 0, 1), T(32, 1, 2), T(32, 3, 3)});
    PlanResult r = EtGreedyPlanner().plan(p);
    QCOMPARE(r.offsets, (U64s{32, 0, 0}));
    QCOMPARE(r.arenaSizes, (U64s{0, 64}));
  }

  void largestFirstWhateverTheCollectionOrder() {
    // Collection order small, large: the 96-byte tensor is still placed first
    // and its object (offset 0) is the one the 32-byte tensor then joins.
    auto p = problem({T(32, 2, 3), T(96, 0, 1)});
    EtGreedyTrace t = EtGreedyPlanner().planTraced(p);
    QCOMPARE(t.order, (std::vector<size_t>{1, 0}));
    QCOMPARE(t.result.offsets, (U64s{0, 0}));
    QCOMPARE(t.result.arenaSizes, (U64s{0, 96}));
  }

  void stacksAboveOverlappingTensorsInsideAnObject() {
    // B 128 [0,0], c 64 [1,2], d 32 [2,3], e 32 [1,1]; visit B, c, e, d
    // (d and e tie; e was collected last so it comes first).
    //  B -> object 0 (128). c never meets B -> object 0 at 0.
    //  e meets c: no object is free; above c (end 64) 64 + 32 <= 128 -> 64.
    //  d meets c (step 2) but not e nor B: highest end among those it meets
    //  is c's 64 -> 64 (e is dead by then, so d and e share bytes safely).
    auto p = problem({T(128, 0, 0), T(64, 1, 2), T(32, 2, 3), T(32, 1, 1)});
    EtGreedyTrace t = EtGreedyPlanner().planTraced(p);
    QCOMPARE(t.order, (std::vector<size_t>{0, 1, 3, 2}));
    QCOMPARE(t.result.offsets, (U64s{0, 0, 64, 64}));
    QCOMPARE(t.result.arenaSizes, (U64s{0, 128}));
    QCOMPARE(t.objects.size(), size_t(1));
    QCOMPARE(t.objectOffset[2], uint64_t(64));
    VERIFY_PLAN(p, t.result);

    // Without overlapping allocations (Vulkan): e gets object 1 (32 bytes,
    // at 128); d then finds object 1 free (e is dead at 2..3) -> 128 too.
    EtGreedyOptions o;
    o.allowOverlappingAllocations = false;
    EtGreedyPlanner noOverlap(o);
    PlanResult r = noOverlap.plan(p);
    QCOMPARE(r.offsets, (U64s{0, 0, 128, 128}));
    QCOMPARE(r.arenaSizes, (U64s{0, 160}));
    VERIFY_PLAN(p, r);
  }

  void zeroSizeTensorsNeverStackOnEachOther() {
    // Step 2 only uses an object when the highest end of the tensors met is
    // above 0. A 32 [5,5], Z1 0 [0,0], Z2 0 [0,0]; visit A, Z2, Z1.
    //  A -> object 0 (32). Z2 never meets A -> object 0 at 0. Z1 meets Z2,
    //  whose end is 0 -> step 2 skips object 0 -> object 1 (0 bytes), which
    //  starts where object 0 ends: offset 32.
    auto p = problem({T(32, 5, 5), T(0, 0, 0), T(0, 0, 0)});
    EtGreedyTrace t = EtGreedyPlanner().planTraced(p);
    QCOMPARE(t.result.offsets, (U64s{0, 32, 0}));
    QCOMPARE(t.memObjId, (std::vector<int32_t>{0, 1, 0}));
    QCOMPARE(t.result.arenaSizes, (U64s{0, 32}));
    VERIFY_PLAN(p, t.result);
  }

  void knownWeakness() {
    // Objects never grow. X 48 [0,0], Y 32 [1,1], Z 32 [1,1]; visit X, Z, Y.
    //  X -> object 0 (48). Z never meets X -> object 0 at 0. Y meets Z:
    //  above Z 32 + 32 > 48 -> object 1 (32) at 48. Arena 80.
    // Peak live bytes are 64 (Y + Z at step 1), and 64 is reachable:
    // X 0, Y 0, Z 32.
    auto p = problem({T(48, 0, 0), T(32, 1, 1), T(32, 1, 1)});
    PlanResult r = EtGreedyPlanner().plan(p);
    QCOMPARE(r.offsets, (U64s{0, 48, 0}));
    QCOMPARE(r.arenaSizes, (U64s{0, 80}));
    QCOMPARE(lowerBounds(p)[1], uint64_t(64));
    PlanResult best{"by hand", {0, 0, 32}, {0, 64}};
    VERIFY_PLAN(p, best);

    // Stacking ignores gaps below. P 64 [0,0], then (collected S, R, Q so
    // that they are visited Q, R, S) Q 32 [1,1], R 32 [1,3], S 32 [3,3].
    //  P -> object 0 (64). Q never meets P -> 0. R meets Q -> above it, 32.
    //  S meets only R: above R is 64 + 32 > 64 -> object 1 at 64, though
    //  Q's bytes at 0 are free from step 2 on. Arena 96, peak 64.
    auto q = problem({T(64, 0, 0), T(32, 3, 3), T(32, 1, 3), T(32, 1, 1)});
    r = EtGreedyPlanner().plan(q);
    QCOMPARE(r.offsets, (U64s{0, 64, 32, 0}));
    QCOMPARE(r.arenaSizes, (U64s{0, 96}));
    QCOMPARE(lowerBounds(q)[1], uint64_t(64));
  }

  void arenasPerMemIdWithPadding() {
    // a 32 [0,1] m1, b 64 [0,1] m3, c 32 [1,2] m1, d 16 [2,2] m3.
    // Visit b, c, a, d (a and c tie: c first). Each mem_id has its own objects:
    //  b -> m3 object 0 (64). c -> m1 object 0 (32). a meets c, no room
    //  above it -> m1 object 1 at 32. d never meets b -> m3 object 0 at 0.
    // Arena m1 = 64 + 64 padding, m3 = 64 + 64; m2 has no tensor: 0, unpadded.
    auto p = problem({T(32, 0, 1, 1), T(64, 0, 1, 3), T(32, 1, 2, 1), T(16, 2, 2, 3)});
    EtGreedyOptions o;
    o.extraPadding = 64;
    EtGreedyPlanner padded(o);
    PlanResult r = padded.plan(p);
    QCOMPARE(r.offsets, (U64s{32, 0, 0, 0}));
    QCOMPARE(r.arenaSizes, (U64s{0, 128, 0, 128}));
    VERIFY_PLAN(p, r);

    // A reserved prefix (submodule arenas) moves m1's objects up by 48; m3
    // has no entry and starts at 0.
    o.reservedPrefix = {0, 48};
    EtGreedyPlanner reserved(o);
    r = reserved.plan(p);
    QCOMPARE(r.offsets, (U64s{80, 0, 48, 0}));
    QCOMPARE(r.arenaSizes, (U64s{0, 176, 0, 128}));
  }

  void legacyGeneration() {
    // ExecuTorch <= 0.5, collection order. a 64 [0,0], b 16 [0,0],
    // c 16 [1,2], d 64 [2,3], e 32 [4,4].
    //  a -> object 0 (64, busy to 0). b starts at 0, not after 0 -> object 1
    //  (16, busy to 0). c: both free; object 0 first (|64-16| = 48, now busy
    //  to 2), then object 1 (|16-16| = 0 < 48) wins -> object 1; object 0
    //  stays busy to 2 with nothing new in it. d starts at 2, not after 2 in
    //  either -> object 2 (64). e: object 0 (diff 32, claimed), object 1
    //  (diff 16 < 32, grows to 32) wins, object 2 (diff 32) does not.
    // Objects: 0 at 0 (64), 1 at 64 (32), 2 at 96 (64); arena 160.
    auto p = problem({T(64, 0, 0), T(16, 0, 0), T(16, 1, 2), T(64, 2, 3), T(32, 4, 4)});
    EtGreedyTrace t = EtGreedyPlanner(legacy()).planTraced(p);
    QCOMPARE(t.order, (std::vector<size_t>{0, 1, 2, 3, 4}));
    QCOMPARE(t.result.offsets, (U64s{0, 64, 64, 96, 64}));
    QCOMPARE(t.result.arenaSizes, (U64s{0, 160}));
    QCOMPARE(t.objects[1].size, uint64_t(32));
    VERIFY_PLAN(p, t.result);

    // The current generation on the same problem: visit d, a (64s, reverse
    // collection order), e, c, b (16s, reverse). d -> object 0; a and e meet
    // nobody in object 0 -> 0. c meets d, above d 64 + 16 > 64 -> object 1
    // (16) at 64. b meets a in object 0; object 1 holds c [1,2] -> 64.
    // Arena 80, the peak (a + b at step 0).
    PlanResult r = EtGreedyPlanner().plan(p);
    QCOMPARE(r.offsets, (U64s{0, 64, 64, 0, 0}));
    QCOMPARE(r.arenaSizes, (U64s{0, 80}));
    QCOMPARE(lowerBounds(p)[1], uint64_t(80));
  }

  void sortKeyIsTheSizeAlignedTo16() {
    // Alignment 32, collection order x (32 bytes), y (16), z (16), all
    // rounded to 32. x [0,1], y [1,2], z [3,3].
    // ExecuTorch sorts by the size rounded to 16 (32, 16, 16): visit x, z, y.
    //  x -> object 0. z never meets x -> 0. y meets x -> object 1 at 32.
    auto p = problem({T(32, 0, 1), T(32, 1, 2), T(32, 3, 3)}, 32);
    PlanProblem unknown = p;  // bytes 0: the aligned size stands in
    p.tensors[0].bytes = 32, p.tensors[1].bytes = 16, p.tensors[2].bytes = 16;
    EtGreedyTrace t = EtGreedyPlanner().planTraced(p);
    QCOMPARE(t.order, (std::vector<size_t>{0, 2, 1}));
    QCOMPARE(t.result.offsets, (U64s{0, 32, 0}));
    // Without the unaligned sizes all keys are 32: visit z, y, x -> x is the one moved.
    PlanResult r = EtGreedyPlanner().plan(unknown);
    QCOMPARE(r.offsets, (U64s{32, 0, 0}));
    QCOMPARE(t.result.arenaSizes, r.arenaSizes);
    QVERIFY(!t.unsortedSpecs);

    // Alignment 4: b 30 -> 32 bytes, a 20 -> 20 bytes; both keys are 32, so
    // a (collected last) comes first and makes a 20-byte object that b,
    // though it never meets a, cannot use. ExecuTorch stops with "Allocation
    // specs are not sorted"; the planner flags it and opens object 1.
    auto q = problem({T(32, 1, 1), T(20, 0, 0)}, 4);
    q.tensors[0].bytes = 30, q.tensors[1].bytes = 20;
    EtGreedyTrace u = EtGreedyPlanner().planTraced(q);
    QVERIFY(u.unsortedSpecs);
    QCOMPARE(u.result.offsets, (U64s{20, 0}));
    QCOMPARE(u.result.arenaSizes, (U64s{0, 52}));
    VERIFY_PLAN(q, u.result);
  }

  void randomProblemsGiveValidPlans() {
    std::mt19937 rng(20250128);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int checked = 0;
    for (int round = 0; round < 300; ++round) {
      PlanProblem p;
      const int n = pick(0, 40), steps = pick(1, 30), memIds = pick(1, 3);
      for (int i = 0; i < n; ++i) {
        int a = pick(0, steps - 1), b = pick(0, steps - 1);
        uint64_t size = pick(0, 9) == 0 ? 0 : uint64_t(pick(1, 64)) * 16;
        if (i > 0 && pick(0, 3) == 0) size = p.tensors[size_t(pick(0, i - 1))].size;  // many ties
        p.tensors.push_back(T(size, std::min(a, b), std::max(a, b), uint32_t(pick(1, memIds))));
      }
      const uint64_t padding = pick(0, 1) ? 64 : 0;
      std::vector<EtGreedyOptions> variants(3);
      variants[1].allowOverlappingAllocations = false;
      variants[1].reservedPrefix = {0, 32, 64};
      variants[2] = legacy();
      for (auto& v : variants) v.extraPadding = padding;
      QVERIFY(validateProblem(p).ok());
      const auto peaks = lowerBounds(p);
      for (const auto& options : variants) {
        EtGreedyTrace t = EtGreedyPlanner(options).planTraced(p);
        QString why = verdict(p, t.result);
        if (!why.isEmpty()) QFAIL(qPrintable(QString("round %1: %2").arg(round).arg(why)));
        QVERIFY(!t.unsortedSpecs);
        QCOMPARE(t.order.size(), p.tensors.size());
        // Objects lie end to end; the arena is their end plus the padding.
        std::map<uint32_t, uint64_t> end;
        for (const auto& o : t.objects) {
          uint64_t start = o.memId < options.reservedPrefix.size() ? options.reservedPrefix[o.memId] : 0;
          QCOMPARE(o.offset, end.count(o.memId) ? end[o.memId] : start);
          end[o.memId] = o.offset + o.size;
        }
        for (size_t m = 1; m < t.result.arenaSizes.size(); ++m) {
          uint64_t expected = end.count(uint32_t(m)) ? end[uint32_t(m)] + padding : 0;
          QCOMPARE(t.result.arenaSizes[m], expected);
          if (m < peaks.size() && end.count(uint32_t(m))) QVERIFY(t.result.arenaSizes[m] >= peaks[m] + padding);
        }
        if (options.generation == EtGreedyGeneration::Current)  // objects are sized by their first tensor
          for (const auto& o : t.objects) QCOMPARE(o.size, p.tensors[o.tensors.front()].size);
        QCOMPARE(EtGreedyPlanner(options).plan(p).offsets, t.result.offsets);  // deterministic
        ++checked;
      }
    }
    QCOMPARE(checked, 900);
  }

  void replansFixturesLikeExecuTorch() {
    LSTUDIO_REQUIRE_FIXTURES();
    // Which generation reproduces each stored plan exactly: every arena size
    // and the offset of every storage. Both: too small to tell them apart.
    // Fixtures not listed are only reported.
    enum Gen { Current, Legacy, Both, Neither };
    const std::map<QString, Gen> expected = {
        {"ModuleLinear-no-constant-segment.pte", Both},
        {"add.pte", Current},
        {"arduino_AddModel_model.pte", Current},
        {"arduino_KeywordSpotting_model.pte", Current},  // 16 storages after folding 4 views
        {"berry_id.pte", Both},
        {"berry_two.pte", Legacy},  // exported with ExecuTorch ~0.4 (2024-10)
        {"cmsis_ethos_u_minimal_example.pte", Both},
        {"djl_add.pte", Current},  // XNNPACK: + 64 bytes
        {"djl_add_unplanned.pte", Both},
        {"djl_clamp5.pte", Both},
        {"djl_conv.pte", Current},
        {"djl_dtypes.pte", Current},
        {"djl_lin129.pte", Both},
        {"djl_lin129_planned.pte", Both},
        {"djl_lstm.pte", Current},
        {"djl_med_output.pte", Current},
        {"djl_openvino_tiny.pte", Current},
        {"djl_priced.pte", Current},
        {"djl_prim_input.pte", Current},
        {"djl_stress_mlp.pte", Current},  // 17 storages after folding 2 views of clamp results
        {"dnf.pte", Current},             // training program, 28 storages
        // 2024-03 or older: its offsets fit the legacy rules only if the
        // output had been collected first; the arena size matches.
        {"extension_module_test_resources__model.pte", Neither},
        {"linear.pte", Current},
        {"numpyrt_add.pte", Current},
        {"numpyrt_const_methods.pte", Current},
        {"numpyrt_dynamic.pte", Current},
        {"numpyrt_multi.pte", Current},
        {"numpyrt_quantized.pte", Current},
        {"optest_conv2d_pte1__conv2d_layer6_conv4b_1.pte", Current},
        {"optest_conv2d_pte__conv2d_quantized.pte", Current},
        {"optest_maxpool2d_pte__maxpool2d.pte", Current},
        {"optest_softmax_pte__softmax.pte", Current},
        {"rs_data_map_model.pte", Both},
        {"rs_hello_world_add_model.pte", Legacy},
        {"stories260k_hybrid_llama_qnn.pte", Both},  // nothing planned: {0, 0}
        {"xor.pte", Current},                        // 72 storages, arena 1.11x the lower bound
        {"bundled_program.bpte", Current},
    };
    QStringList files = test::fixtureFiles("pte", {"*.pte"});
    files << test::fixtureFiles("other", {"*.bpte"});
    int compared = 0;
    for (const QString& path : files) {
      auto program = readProgramFile(path.toStdString());
      QVERIFY2(program.ok(), qPrintable(path));
      const QString file = QFileInfo(path).fileName();
      for (const Method& m : program->methods) {
        if (m.nonConstBufferSizes.size() < 2) continue;
        MemoryPlanReport report = analyzeMemoryPlan(m);
        std::vector<Storage> storages = collectionOrder(report.storages);
        PlanProblem p = problemOf(storages, report.alignment);
        U64s stored(m.nonConstBufferSizes.begin(), m.nonConstBufferSizes.end());
        EtGreedyOptions options;
        options.extraPadding = etGreedyExtraPadding(m);
        PlanResult cur = EtGreedyPlanner(options).plan(p);
        VERIFY_PLAN(p, cur);
        options.generation = EtGreedyGeneration::Legacy;
        PlanResult old = EtGreedyPlanner(options).plan(p);
        auto reproduces = [&](const PlanResult& r, size_t* sameOffsets) {
          *sameOffsets = 0;
          for (size_t k = 0; k < storages.size(); ++k) *sameOffsets += r.offsets[k] == storages[k].offset;
          U64s a = r.arenaSizes, b = stored;
          a.resize(std::max(a.size(), b.size()), 0);
          b.resize(a.size(), 0);
          return a == b && *sameOffsets == storages.size();
        };
        size_t curSame = 0, oldSame = 0;
        const bool c = reproduces(cur, &curSame), l = reproduces(old, &oldSame);
        const Gen got = c && l ? Both : c ? Current : l ? Legacy : Neither;
        const char* names[] = {"current", "legacy", "both", "neither"};
        QString sizes, mine;
        for (size_t i = 1; i < stored.size(); ++i) sizes += QString(" %1").arg(stored[i]);
        for (size_t i = 1; i < cur.arenaSizes.size(); ++i) mine += QString(" %1").arg(cur.arenaSizes[i]);
        qInfo("%s/%s: arenas stored%s, et-greedy%s; offsets %zu/%zu current, %zu/%zu legacy -> %s", qPrintable(file),
              m.name.c_str(), qPrintable(sizes), qPrintable(mine), curSame, storages.size(), oldSame, storages.size(),
              names[got]);
        auto it = expected.find(file);
        if (it == expected.end()) continue;
        if (it->second != Neither) QVERIFY(c || l);
        QVERIFY2(got == it->second, qPrintable(QString("%1/%2: expected %3, got %4")
                                                   .arg(file, QString::fromStdString(m.name), names[it->second], names[got])));
        ++compared;
      }
    }
    QVERIFY(compared > 0);
  }
};

QTEST_GUILESS_MAIN(TestEtGreedy)
#include "tst_etgreedy.moc"
