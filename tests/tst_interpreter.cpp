// The interpreter (engine/run): what it refuses, and that it runs the program the file holds.
// Its numbers are checked against ExecuTorch's runtime in tests/conformance/interpreter.py
// (every corpus program and fixture it runs); these tests check the rest: a .pte and the
// program it was written from run alike, a wrong plan gives wrong numbers, the iota input
// rule, the .npy files, and a clear error (never a crash) for what it cannot run.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/Cli.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/formats/OpenProgram.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Executable.h"
#include "engine/lowering/Pipeline.h"
#include "engine/run/Interpreter.h"
#include "engine/run/KernelSupport.h"
#include "engine/run/Expected.h"
#include "engine/run/Npy.h"
#include "engine/support/AtomicFile.h"
#include "engine/samples/SampleZoo.h"
#include "tests/TestSupport.h"
#include "tests/support/EmittedSample.h"

using namespace lstudio;

namespace {

/// A pass that changes what the program computes: its first relu becomes a sigmoid.
class ReluToSigmoid : public Pass {
 public:
  std::string name() const override { return "ReluToSigmoid"; }
  std::string description() const override { return "a deliberate change of the numbers (tests)"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    for (Method& m : p.methods)
      for (OperatorRef& op : m.operators)
        if (op.name == "aten::relu") {
          op.name = "aten::sigmoid";
          return PassOutcome{true, false, {}};
        }
    return {};
  }
};

std::string message(const Result<run::RunResult>& r) { return r ? std::string() : r.error().message(); }

}  // namespace

namespace {

/// A kernel's tensor argument built by hand over `data` (`capacity` bytes).
void tensorArgument(run::RunValue& t, ScalarType dtype, std::vector<int64_t> sizes, void* data, uint64_t capacity) {
  t.kind = ValueKind::Tensor;
  t.t.dtype = dtype;
  t.t.sizes = std::move(sizes);
  t.t.data = static_cast<uint8_t*>(data);
  t.t.capacity = capacity;
}

/// v[at] made an IntList of `xs`, its Int items at v[itemsFrom], v[itemsFrom + 1], ...
void intListArgument(std::vector<run::RunValue>& v, size_t at, const std::vector<int64_t>& xs, size_t itemsFrom) {
  v[at].kind = ValueKind::IntList;
  v[at].items.clear();
  for (size_t i = 0; i < xs.size(); ++i) {
    v[itemsFrom + i].kind = ValueKind::Int;
    v[itemsFrom + i].i = xs[i];
    v[at].items.push_back(static_cast<ValueId>(itemsFrom + i));
  }
}

}  // namespace

class TestInterpreter : public QObject {
  Q_OBJECT
 private slots:
  // The emitted program and the .pte written from it give the same bytes.
  void fileAndProgramRunAlike_data() {
    QTest::addColumn<QString>("name");
    for (const char* s : {"mlp", "mobilenet_v2", "llama"}) QTest::newRow(s) << s;
  }
  void fileAndProgramRunAlike() {
    QFETCH(QString, name);
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), name.toStdString());
    QVERIFY2(emitted, emitted ? "" : emitted.error().message().c_str());
    auto inMemory = run::runProgram(emitted.value());
    QVERIFY2(inMemory, message(inMemory).c_str());
    std::string pte = (dir.path() + "/" + name + ".pte").toStdString();
    QVERIFY(writePte(emitted.value(), pte, PteWriteOptions{}));
    auto read = readProgramFile(pte);
    QVERIFY(read);
    auto fromFile = run::runProgram(read.value());
    QVERIFY2(fromFile, message(fromFile).c_str());
    QCOMPARE(fromFile->outputs.size(), inMemory->outputs.size());
    QVERIFY(!fromFile->outputs.empty());
    for (size_t i = 0; i < fromFile->outputs.size(); ++i) {
      QCOMPARE(fromFile->outputs[i].sizes, inMemory->outputs[i].sizes);
      QCOMPARE(fromFile->outputs[i].checksum, inMemory->outputs[i].checksum);
    }
    // Not all zeros: the weights and inputs reached the kernels.
    const auto& b = fromFile->outputs[0].bytes;
    QVERIFY(std::any_of(b.begin(), b.end(), [](uint8_t x) { return x != 0; }));
  }

  // Planned tensors live at their offsets: one put on top of a live one changes the output.
  void aWrongPlanGivesWrongNumbers() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    auto good = run::runProgram(emitted.value());
    QVERIFY(good);
    Program bad = emitted.value();
    size_t moved = 0;
    for (Value& v : bad.methods[0].values)
      if (auto* t = std::get_if<TensorSpec>(&v.payload); t && t->slot && t->slot->memId == 1) {
        t->slot->offset = 0;  // every activation in one place
        ++moved;
      }
    QVERIFY(moved >= 3);
    auto wrong = run::runProgram(bad);
    QVERIFY2(wrong, message(wrong).c_str());
    QVERIFY(wrong->outputs[0].checksum != good->outputs[0].checksum);
  }

  // Every snapshot from to_edge's conversion on runs; the numerics-neutral passes keep the
  // numbers bit for bit, and a pass that changes them is found at the node it changed.
  void snapshotsAndTheFirstDifferingNode() {
    QTemporaryDir dir;
    auto built = buildSample("mlp", SampleOptions{});
    QVERIFY(built);
    std::string pt2 = (dir.path() + "/mlp.pt2").toStdString();
    QVERIFY(writePt2(built.value(), pt2));
    auto opened = openProgramFile(pt2);
    QVERIFY(opened);
    std::vector<std::shared_ptr<const Pass>> passes = defaultPasses();
    size_t at = 0;
    for (size_t i = 0; i < passes.size(); ++i)
      if (passes[i]->name() == "ReinplacePass") at = i + 1;
    QVERIFY(at > 0);
    passes.insert(passes.begin() + static_cast<long>(at), std::make_shared<ReluToSigmoid>());
    Pipeline p(std::make_shared<const Program>(std::move(opened.value())), ExecutorchBackendConfig{}, passes);
    p.runToEnd();
    QVERIFY(!p.failed());
    size_t perturb = 0, converted = 0;
    for (size_t i = 0; i < p.records().size(); ++i) {
      if (p.records()[i].name == "ReluToSigmoid") perturb = i + 1;
      if (p.records()[i].name == "ReplaceViewOpsWithViewCopyOpsPass") converted = i + 1;
    }
    QVERIFY(perturb > converted && converted > 0);
    run::RunOptions traced;
    traced.trace = true;
    auto runAt = [&](size_t k) -> Result<run::RunResult> {
      auto e = executableSnapshot(p, k);
      if (!e) return e.error();
      return run::runProgram(e.value(), traced);
    };
    std::vector<uint64_t> checksums;
    for (size_t k = converted; k <= p.records().size(); ++k) {
      auto r = runAt(k);
      QVERIFY2(r, (p.records()[k - 1].name + ": " + message(r)).c_str());
      checksums.push_back(r->outputs[0].checksum);
    }
    for (size_t k = converted; k <= p.records().size(); ++k)
      QCOMPARE(checksums[k - converted], checksums[(k < perturb ? converted : perturb) - converted]);
    QVERIFY(checksums.front() != checksums.back());
    auto before = runAt(perturb - 1), after = runAt(perturb), end = runAt(p.records().size());
    QVERIFY(before && after && end);
    QVERIFY(!before->trace.empty());
    auto first = run::firstDifferingNode(after.value(), before.value(), 0);
    QVERIFY(first);
    QCOMPARE(first->op, std::string("aten::sigmoid.out"));
    QVERIFY2(first->node.find("relu") != std::string::npos, first->node.c_str());
    QVERIFY(first->difference > 0.1);
    QVERIFY(!run::firstDifferingNode(end.value(), after.value(), 0));  // the rest of the passes keep it
    // Every snapshot at once: the injected pass is the one that changed the outputs, at relu.
    std::vector<std::shared_ptr<const Program>> snapshots;
    std::vector<std::string> names;
    for (size_t k = 0; k <= p.records().size(); ++k) snapshots.push_back(p.snapshot(k));
    for (const auto& rec : p.records()) names.push_back(rec.name);
    std::vector<SnapshotValues> rows = runEverySnapshot(snapshots, names, p.config(), run::RunOptions{});
    QCOMPARE(rows.size(), snapshots.size());
    QVERIFY(!rows[0].ran && !rows[0].error.empty());
    QVERIFY(rows[converted].ran && !rows[converted].changed);
    for (size_t k = converted + 1; k < rows.size(); ++k) {
      QVERIFY2(rows[k].ran, rows[k].error.c_str());
      QCOMPARE(rows[k].changed, k == perturb);
    }
    QVERIFY(rows[perturb].firstDifference);
    QCOMPARE(rows[perturb].firstDifference->op, std::string("aten::sigmoid.out"));
    QVERIFY(rows[perturb].difference > 0);
    QCOMPARE(rows.back().checksums.front(), checksums.back());
    // Before to_edge's conversion the ATen program cannot run; the error says from where it can.
    auto input = executableSnapshot(p, 0);
    QVERIFY(!input);
    QVERIFY2(input.error().message().find("ReplaceViewOpsWithViewCopyOpsPass") != std::string::npos,
             input.error().message().c_str());
  }

  void refusesWhatItCannotRun() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    {  // an operator without a kernel: named, before anything runs
      Program p = emitted.value();
      p.methods[0].operators[0].name = "aten::not_a_kernel";
      auto r = run::runProgram(p);
      QVERIFY(!r);
      QVERIFY2(r.error().message().find("no kernel for aten::not_a_kernel.out") != std::string::npos,
               r.error().message().c_str());
    }
    {  // a tensor planned past its arena
      Program p = emitted.value();
      for (Value& v : p.methods[0].values)
        if (auto* t = std::get_if<TensorSpec>(&v.payload); t && t->slot) {
          t->slot->offset = 1u << 30;
          break;
        }
      auto r = run::runProgram(p);
      QVERIFY(!r);
      QVERIFY2(r.error().message().find("inside its arena") != std::string::npos, r.error().message().c_str());
    }
    {  // past the memory and work limits: an error, not an exhausted machine
      run::RunOptions o;
      o.memoryLimit = 64;
      auto r = run::runProgram(emitted.value(), o);
      QVERIFY(!r);
      QVERIFY2(r.error().message().find("memory limit") != std::string::npos, r.error().message().c_str());
      run::RunOptions w;
      w.workLimit = 10;
      auto r2 = run::runProgram(emitted.value(), w);
      QVERIFY(!r2);
      QVERIFY2(r2.error().message().find("work limit") != std::string::npos, r2.error().message().c_str());
    }
    {  // a method that is not there
      run::RunOptions o;
      o.method = "decode";
      auto r = run::runProgram(emitted.value(), o);
      QVERIFY(!r);
      QVERIFY(r.error().message().find("a method named decode") != std::string::npos);
    }
    {  // cancelled from the progress callback
      run::RunOptions o;
      o.progress = [](uint64_t, uint64_t) { return false; };
      auto big = emittedSample(dir.path().toStdString(), "llama");
      QVERIFY(big);
      auto r = run::runProgram(big.value(), o);
      QVERIFY(!r);
      QVERIFY(r.error().message().find("cancelled") != std::string::npos);
    }
  }

  // A float outside an integer type's range, or NaN, becomes what executorch.runtime 1.5.1
  // gives (x86's conversion; the values below were read off it), never undefined behaviour.
  void floatToIntegerAsTheRuntime() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const int64_t lmin = std::numeric_limits<int64_t>::min();
    QCOMPARE(run::integerFrom<int64_t>(1e30), lmin);
    QCOMPARE(run::integerFrom<int64_t>(nan), lmin);
    QCOMPARE(run::integerFrom<int64_t>(1e19), lmin);
    QCOMPARE(run::integerFrom<int64_t>(3e9), int64_t(3000000000));
    QCOMPARE(run::integerFrom<int64_t>(-129.5), int64_t(-129));
    QCOMPARE(run::integerFrom<int32_t>(3e9), std::numeric_limits<int32_t>::min());
    QCOMPARE(run::integerFrom<int32_t>(-1e30), std::numeric_limits<int32_t>::min());
    QCOMPARE(run::integerFrom<int16_t>(70000.2), int16_t(4464));
    QCOMPARE(run::integerFrom<int16_t>(1e30), int16_t(0));
    QCOMPARE(run::integerFrom<int8_t>(300.7), int8_t(44));
    QCOMPARE(run::integerFrom<int8_t>(-129.5), int8_t(127));
    QCOMPARE(run::integerFrom<uint8_t>(-129.5), uint8_t(127));
    QCOMPARE(run::integerFrom<uint8_t>(nan), uint8_t(0));
  }

  // The portable kernels' division (also read off executorch.runtime 1.5.1): floor division
  // rounds toward minus infinity exactly for integers; a float divisor of 0 gives an
  // infinity with the dividend's sign; INT64_MIN / -1 wraps instead of trapping.
  void divisionAsThePortableKernels() {
    using run::kernels::floorDivide;
    QCOMPARE(floorDivide<int64_t>(-7, 2), int64_t(-4));
    QCOMPARE(floorDivide<int64_t>(7, -2), int64_t(-4));
    QCOMPARE(floorDivide<int64_t>(-7, -2), int64_t(3));
    QCOMPARE(floorDivide<int64_t>(std::numeric_limits<int64_t>::max(), 2), int64_t(4611686018427387903));
    QCOMPARE(floorDivide<int64_t>(std::numeric_limits<int64_t>::min(), -1), std::numeric_limits<int64_t>::min());
    QCOMPARE(floorDivide<float>(-7.5f, 2.0f), -4.0f);
    QCOMPARE(floorDivide<float>(0.3f, 0.1f), 3.0f);
    QCOMPARE(floorDivide<float>(-5.0f, 0.0f), -std::numeric_limits<float>::infinity());
    QCOMPARE(floorDivide<float>(0.0f, 0.0f), std::numeric_limits<float>::infinity());
    QCOMPARE(run::kernels::quotient<int64_t>(std::numeric_limits<int64_t>::min(), -1), std::numeric_limits<int64_t>::min());
  }

  // Pooling windows cost only their taps inside the input: a 2e9-wide kernel over a 2x2
  // image (which upstream's padding rule allows, with padding 1e9) is as cheap as a 2x2 one.
  // Padding past half the kernel is refused as the portable kernels refuse it. (CI's fuzzer
  // found the first: the loop over every tap of such a window never ended.)
  // Kernels written for to_edge's decompositions, on values worked out by hand (the
  // conformance run compares them with executorch.runtime on real programs).
  void decompositionKernelsOnHandValues() {
    struct Call {
      std::vector<run::RunValue> v;
      std::vector<std::vector<uint8_t>> storage;
      ValueId tensor(ScalarType dtype, std::vector<int64_t> sizes, std::vector<double> values, size_t capacity = 64) {
        run::RunValue t;
        t.kind = ValueKind::Tensor;
        t.t.dtype = dtype;
        t.t.sizes = std::move(sizes);
        storage.emplace_back(capacity * 8, 0);
        t.t.data = storage.back().data();
        t.t.capacity = storage.back().size();
        for (size_t i = 0; i < values.size(); ++i) run::storeAs<double>(t.t, i, values[i]);
        v.push_back(std::move(t));
        return static_cast<ValueId>(v.size() - 1);
      }
      ValueId integer(int64_t x) {
        run::RunValue r;
        r.kind = ValueKind::Int;
        r.i = x;
        v.push_back(r);
        return static_cast<ValueId>(v.size() - 1);
      }
      ValueId none() {
        v.emplace_back();
        return static_cast<ValueId>(v.size() - 1);
      }
      std::string run(const char* op, const std::vector<ValueId>& args) {
        // Tensor storage must not move once kernels hold pointers into it.
        run::KernelContext c(v);
        const run::Kernel* k = run::findKernel(op);
        if (!k) return std::string("no kernel for ") + op;
        return (*k)(c, args) ? std::string() : c.message();
      }
      std::vector<double> values(ValueId id) {
        std::vector<double> out;
        for (uint64_t i = 0; i < v[id].t.numel(); ++i) out.push_back(run::loadAs<double>(v[id].t, i));
        return out;
      }
    };
    using V = std::vector<double>;
    constexpr ScalarType F = ScalarType::Float, L = ScalarType::Long;
    for (int64_t stride : {1, 2}) {  // 1-d transposed: [1, 2] through taps [1, 10]
      Call c;
      c.storage.reserve(8);
      ValueId in = c.tensor(F, {1, 1, 2}, {1, 2}), w = c.tensor(F, {1, 1, 2}, {1, 10}), out = c.tensor(F, {}, {});
      ValueId bias = c.none(), s = c.integer(stride), pad = c.integer(0), dil = c.integer(1), tr = c.integer(1);
      ValueId opad = c.integer(0), groups = c.integer(1);
      QCOMPARE(c.run("aten::convolution.out", {in, w, bias, s, pad, dil, tr, opad, groups, out}), std::string());
      QCOMPARE(c.values(out), stride == 1 ? V({1, 12, 20}) : V({1, 10, 2, 20}));
    }
    for (auto [offset, want] : std::vector<std::pair<int64_t, V>>{{0, {0, 4, 8}}, {1, {1, 5}}, {-1, {3, 7}}, {5, {}}}) {
      Call c;
      c.storage.reserve(8);
      ValueId in = c.tensor(L, {3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}), out = c.tensor(L, {}, {});
      QCOMPARE(c.run("aten::diagonal_copy.out", {in, c.integer(offset), c.integer(0), c.integer(1), out}), std::string());
      QCOMPARE(c.values(out), want);
    }
    {
      Call c;
      c.storage.reserve(8);
      ValueId in = c.tensor(L, {2}, {1, 2}), reps = c.integer(0), out = c.tensor(L, {}, {});
      c.v[reps].kind = ValueKind::IntList;
      c.v[reps].items = {c.integer(2), c.integer(2)};
      QCOMPARE(c.run("aten::repeat.out", {in, reps, out}), std::string());
      QCOMPARE(c.v[out].t.sizes, (std::vector<int64_t>{2, 4}));
      QCOMPARE(c.values(out), V({1, 2, 1, 2, 1, 2, 1, 2}));
      ValueId flipped = c.tensor(L, {}, {});
      QCOMPARE(c.run("aten::flip.out", {out, c.integer(1), flipped}), std::string());
      QCOMPARE(c.values(flipped), V({2, 1, 2, 1, 2, 1, 2, 1}));
    }
    {
      Call c;
      c.storage.reserve(8);
      ValueId in = c.tensor(L, {3}, {7, -7, 9}), out = c.tensor(L, {}, {});
      QCOMPARE(c.run("aten::fmod.Scalar_out", {in, c.integer(4), out}), std::string());
      QCOMPARE(c.values(out), V({3, -3, 1}));  // the dividend's sign, unlike remainder
      QVERIFY(c.run("aten::fmod.Scalar_out", {in, c.integer(0), out}).find("division by zero") != std::string::npos);
    }
    // Operators upstream's to_edge does not leave in a program (so the conformance run has no
    // file of ExecuTorch's calling them; sort has no kernel in its runtime): by hand.
    for (bool descending : {false, true}) {  // NaN above every number; equal values keep their order
      Call c;
      c.storage.reserve(8);
      ValueId in = c.tensor(F, {2, 3}, {3, NAN, 1, 2, 2, -1}), values = c.tensor(F, {}, {}), indices = c.tensor(L, {}, {});
      QCOMPARE(c.run("aten::sort.values", {in, c.integer(-1), c.integer(descending), values, indices}), std::string());
      std::vector<double> got = c.values(values);
      QCOMPARE(std::isnan(got[descending ? 0 : 2]), true);
      QCOMPARE(c.values(indices), descending ? V({1, 0, 2, 0, 1, 2}) : V({2, 0, 1, 2, 0, 1}));
      QCOMPARE(got[3], descending ? 2.0 : -1.0);
    }
    {
      Call c;
      c.storage.reserve(8);
      ValueId in = c.tensor(L, {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), a = c.tensor(L, {}, {}), b = c.tensor(L, {}, {});
      ValueId outs = c.integer(0);
      c.v[outs].kind = ValueKind::TensorList;
      c.v[outs].items = {a, b};
      QCOMPARE(c.run("aten::split_copy.Tensor_out", {in, c.integer(3), c.integer(1), outs}), std::string());
      QCOMPARE(c.values(a), V({0, 1, 2, 5, 6, 7}));
      QCOMPARE(c.values(b), V({3, 4, 8, 9}));  // the last piece shorter
      ValueId t = c.tensor(L, {}, {});
      QCOMPARE(c.run("aten::transpose_copy.int_out", {in, c.integer(0), c.integer(-1), t}), std::string());
      QCOMPARE(c.v[t].t.sizes, (std::vector<int64_t>{5, 2}));
      QCOMPARE(c.values(t), V({0, 5, 1, 6, 2, 7, 3, 8, 4, 9}));
    }
  }

  void poolingWindowsOverPadding() {
    for (const char* op : {"aten::max_pool2d_with_indices.out", "aten::avg_pool2d.out"}) {
      bool isMax = std::string(op).find("max") != std::string::npos;
      auto pool = [&](int64_t kernel, int64_t padding, std::vector<float>& result) {
        std::vector<float> image{1, 5, 3, 2}, out(4);
        std::vector<int64_t> indices(4);
        std::vector<run::RunValue> v(8);
        auto tensor = [](run::RunValue& t, ScalarType dtype, std::vector<int64_t> sizes, void* data, uint64_t bytes) {
          t.kind = ValueKind::Tensor;
          t.t.dtype = dtype;
          t.t.sizes = std::move(sizes);
          t.t.data = static_cast<uint8_t*>(data);
          t.t.capacity = bytes;
        };
        auto integer = [](run::RunValue& x, int64_t i) { x.kind = ValueKind::Int, x.i = i; };
        tensor(v[0], ScalarType::Float, {1, 1, 2, 2}, image.data(), 16);
        integer(v[1], kernel);
        v[2].kind = ValueKind::IntList;  // stride: empty, so the kernel's
        integer(v[3], padding);
        integer(v[4], isMax ? 1 : 0);  // dilation | ceil_mode
        integer(v[5], isMax ? 0 : 1);  // ceil_mode | count_include_pad
        if (isMax) {
          tensor(v[6], ScalarType::Float, {}, out.data(), 16);
          tensor(v[7], ScalarType::Long, {}, indices.data(), 32);
        } else {
          v[6].kind = ValueKind::None;  // divisor_override
          tensor(v[7], ScalarType::Float, {}, out.data(), 16);
        }
        run::KernelContext c(v);
        c.workLimit = 100;
        const run::Kernel* k = run::findKernel(op);
        bool ok = k && (*k)(c, {0, 1, 2, 3, 4, 5, 6, 7});
        result.assign(out.begin(), out.begin() + (ok ? static_cast<long>(v[isMax ? 6 : 7].t.numel()) : 0));
        return ok ? std::string() : c.message();
      };
      std::vector<float> r;
      QCOMPARE(pool(2'000'000'001, 1'000'000'000, r), std::string());
      QCOMPARE(r.size(), size_t(1));
      QCOMPARE(r[0], isMax ? 5.0f : 11.0f / 4e18f);
      QCOMPARE(pool(3, 1, r), std::string());
      QCOMPARE(r.size(), size_t(1));
      QCOMPARE(r[0], isMax ? 5.0f : 11.0f / 9);
      std::string refused = pool(4, 3, r);
      QVERIFY2(refused.find("more than half the kernel size") != std::string::npos, refused.c_str());
    }
  }

  // A delegate call is a boundary: by default the run fails naming it; with stopAtDelegate
  // (the studio's Run) it returns the values of every instruction up to it, and no outputs.
  void delegateCallIsABoundary() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    Program p = emitted.value();
    Method& m = p.methods[0];
    Delegate d;
    d.backendId = "XnnpackBackend";
    m.delegates.push_back(d);
    m.nodes[2].kind = NodeKind::Delegate;
    m.nodes[2].delegate = 0;
    auto failed = run::runProgram(p);
    QVERIFY(!failed);
    QVERIFY2(failed.error().message().find("XnnpackBackend delegate") != std::string::npos, failed.error().message().c_str());
    run::RunOptions o;
    o.trace = true;
    o.stopAtDelegate = true;
    auto stopped = run::runProgram(p, o);
    QVERIFY2(stopped, message(stopped).c_str());
    QVERIFY2(stopped->stoppedAt.find("instruction 2: a call into the XnnpackBackend delegate") == 0, stopped->stoppedAt.c_str());
    QCOMPARE(stopped->trace.size(), size_t(2));
    QVERIFY(stopped->outputs.empty());
    auto whole = run::runProgram(emitted.value(), o);
    QVERIFY(whole && whole->stoppedAt.empty());
    QCOMPARE(whole->trace[1].values[0].checksum, stopped->trace[1].values[0].checksum);
  }

  // Copies move bits: int64 values past 2^53 come through permute_copy and expand_copy whole
  // (they used to go through double, which rounded them).
  void copiesKeepEveryBit() {
    const int64_t big = (int64_t(1) << 60) + 1, low = -(int64_t(1) << 62) + 5;
    std::vector<int64_t> in{big, big + 2, low, 7}, out(4, 0), expanded(4, 0);
    std::vector<run::RunValue> v(8);
    auto tensor = [](run::RunValue& t, std::vector<int64_t> sizes, void* data) {
      tensorArgument(t, ScalarType::Long, std::move(sizes), data, 32);
    };
    auto ints = [&](size_t at, std::vector<int64_t> xs, size_t itemsFrom) { intListArgument(v, at, xs, itemsFrom); };
    tensor(v[0], {2, 2}, in.data());
    ints(1, {1, 0}, 4);
    tensor(v[2], {}, out.data());
    run::KernelContext c(v);
    QVERIFY(run::findKernel("aten::permute_copy.out"));
    QVERIFY2((*run::findKernel("aten::permute_copy.out"))(c, {0, 1, 2, 2}), c.message().c_str());
    QCOMPARE(out, (std::vector<int64_t>{big, low, big + 2, 7}));
    // expand_copy of the first row ([1, 2] viewed from `in`) to [2, 2]
    tensor(v[0], {1, 2}, in.data());
    ints(1, {2, 2}, 6);
    tensor(v[3], {}, expanded.data());
    QVERIFY2((*run::findKernel("aten::expand_copy.out"))(c, {0, 1, 2, 3, 3}), c.message().c_str());
    QCOMPARE(expanded, (std::vector<int64_t>{big, big + 2, big, big + 2}));
  }

  // run --expect: each output against what the eager model returned (.npy): its largest
  // |difference| and ULPs; past --tolerance, or not comparable (shape), exits 6.
  void expectedOutputs() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    const std::string pte = (dir.path() + "/mlp.pte").toStdString(), saved = (dir.path() + "/outs").toStdString();
    QVERIFY(writePte(emitted.value(), pte, PteWriteOptions{}));
    std::ostringstream out, err;
    QCOMPARE(cli::run({"run", pte, "--save-outputs", saved}, out, err), int(cli::kOk));
    auto got = run::readNpy(saved + "/output_0.npy");
    QVERIFY(got && got->dtype == ScalarType::Float && !got->bytes.empty());
    // Two ULPs up in one element, a number far off in another.
    run::HostValue near = got.value();
    float* f = reinterpret_cast<float*>(near.bytes.data());
    f[0] = std::nextafter(std::nextafter(f[0], 1e30f), 1e30f);
    run::ExpectedDifference d = run::differenceFromExpected(got.value(), near);
    QVERIFY(d.mismatch.empty());
    QCOMPARE(d.maxUlp, 2.0);
    QVERIFY(d.maxAbs > 0 && d.maxAbs < 1e-5);
    const std::string nearFile = (dir.path() + "/near.npy").toStdString();
    QVERIFY(writeFileAtomically(nearFile, run::npyBytes(near)));

    std::ostringstream o1, e1, o2, e2, o3, e3, o4, e4;
    QCOMPARE(cli::run({"run", pte, "--expect", saved + "/output_0.npy"}, o1, e1), int(cli::kOk));
    QVERIFY2(o1.str().find("max |difference| 0, 0 ULP") != std::string::npos, o1.str().c_str());
    QCOMPARE(cli::run({"run", pte, "--expect", nearFile}, o2, e2), int(cli::kNotAsExpected));
    QVERIFY2(o2.str().find("2 ULP  (past the tolerance)") != std::string::npos, o2.str().c_str());
    QCOMPARE(cli::run({"run", pte, "--expect", nearFile, "--tolerance", "0.001", "--json"}, o3, e3), int(cli::kOk));
    auto j = nlohmann::json::parse(o3.str());
    QCOMPARE(j["expected"]["outputs"][0]["max_ulp"].get<double>(), 2.0);
    QVERIFY(j["expected"]["within_tolerance"].get<bool>());
    // Another shape: not compared, exit 6 with the shapes named.
    run::HostValue flat = got.value();
    flat.sizes = {static_cast<int64_t>(flat.bytes.size() / 4)};
    const std::string flatFile = (dir.path() + "/flat.npy").toStdString();
    QVERIFY(writeFileAtomically(flatFile, run::npyBytes(flat)));
    QCOMPARE(cli::run({"run", pte, "--expect", flatFile}, o4, e4), int(cli::kNotAsExpected));
    QVERIFY2(o4.str().find("not compared: shape [") != std::string::npos, o4.str().c_str());
  }

  // Where a gap from the expected outputs comes from: a reference snapshot as expected means
  // the passes after it made the gap, at the first node past the tolerance against it; a
  // reference already off means the gap was there before them.
  void originOfGap() {
    auto value = [](std::vector<float> xs) {
      run::HostValue v;
      v.kind = ValueKind::Tensor;
      v.dtype = ScalarType::Float;
      v.sizes = {static_cast<int64_t>(xs.size())};
      v.bytes.resize(xs.size() * 4);
      std::memcpy(v.bytes.data(), xs.data(), v.bytes.size());
      return v;
    };
    auto runOf = [&](float mid, float out) {
      run::RunResult r;
      r.trace.push_back({0, "aten_mul_tensor", "aten::mul.out", {value({1, 2})}});
      r.trace.push_back({1, "aten_gelu_default", "aten::gelu.out", {value({mid, 4})}});
      r.trace.push_back({2, "aten_add_tensor", "aten::add.out", {value({out, 6})}});
      r.outputs.push_back(value({out, 6}));
      return r;
    };
    const std::vector<run::HostValue> expected{value({5, 6})};
    const run::RunResult reference = runOf(3, 5), lowered = runOf(3.5f, 5.25f);
    run::GapOrigin g = run::originOfGap(lowered, reference, expected, 0.01);
    QVERIFY(g.fromLowering);
    QCOMPARE(g.referenceMaxAbs, 0.0);
    QVERIFY(g.firstNode);
    QCOMPARE(g.firstNode->node, std::string("aten_gelu_default"));
    QCOMPARE(g.firstNode->instruction, size_t(1));
    QCOMPARE(g.firstNode->difference, 0.5);
    // The reference off by 0.25 already: not the passes', no node named.
    g = run::originOfGap(lowered, runOf(3, 5.25f), expected, 0.01);
    QVERIFY(!g.fromLowering);
    QCOMPARE(g.referenceMaxAbs, 0.25);
    QVERIFY(!g.firstNode);
    // Within a wider tolerance the reference counts as expected again.
    QVERIFY(run::originOfGap(lowered, runOf(3, 5.25f), expected, 0.3).fromLowering);
    // Another output count: infinitely apart.
    QVERIFY(std::isinf(run::originOfGap(lowered, reference, {}, 0.01).referenceMaxAbs));
  }

  // run --expect on a .pt2 past the tolerance: the earliest snapshot that runs is already as far
  // from the expected outputs (no pass changes mlp's numbers), so the gap is not the passes'.
  void expectedGapTracedBack() {
    QTemporaryDir dir;
    auto built = buildSample("mlp", SampleOptions{});
    QVERIFY(built);
    const std::string pt2 = (dir.path() + "/mlp.pt2").toStdString(), saved = (dir.path() + "/outs").toStdString();
    QVERIFY(writePt2(built.value(), pt2));
    std::ostringstream out, err;
    QCOMPARE(cli::run({"run", pt2, "--save-outputs", saved}, out, err), int(cli::kOk));
    auto got = run::readNpy(saved + "/output_0.npy");
    QVERIFY(got && got->dtype == ScalarType::Float && got->bytes.size() >= 4);
    run::HostValue off = got.value();
    float* first = reinterpret_cast<float*>(off.bytes.data());
    const float before = *first;
    *first += 0.5f;
    const double gap = double(*first) - double(before);
    const std::string offFile = (dir.path() + "/off.npy").toStdString();
    QVERIFY(writeFileAtomically(offFile, run::npyBytes(off)));
    std::ostringstream o1, e1;
    QCOMPARE(cli::run({"run", pt2, "--expect", offFile, "--tolerance", "0.01"}, o1, e1), int(cli::kNotAsExpected));
    QVERIFY2(o1.str().find("the program after ReplaceViewOpsWithViewCopyOpsPass is already ") != std::string::npos &&
                 o1.str().find(" from them: the gap comes before these passes") != std::string::npos,
             o1.str().c_str());
    std::ostringstream o2, e2;
    QCOMPARE(cli::run({"run", pt2, "--expect", offFile, "--tolerance", "0.01", "--json"}, o2, e2),
             int(cli::kNotAsExpected));
    auto j = nlohmann::json::parse(o2.str());
    QCOMPARE(j["expected"]["origin"]["reference"].get<std::string>(), std::string("ReplaceViewOpsWithViewCopyOpsPass"));
    QVERIFY(!j["expected"]["origin"]["from_lowering"].get<bool>());
    QCOMPARE(j["expected"]["origin"]["reference_max_abs_diff"].get<double>(), gap);
    // As expected: no origin looked for.
    std::ostringstream o3, e3;
    QCOMPARE(cli::run({"run", pt2, "--expect", saved + "/output_0.npy", "--json"}, o3, e3), int(cli::kOk));
    QVERIFY(!nlohmann::json::parse(o3.str())["expected"].contains("origin"));
  }

  // as_strided_copy reads its input's storage with the given strides and offset (upstream's
  // ConvNeXt head writes one after a pooling); a read past the input's end is refused.
  void asStridedCopyReadsTheStorage() {
    std::vector<float> in{0, 1, 2, 3, 4, 5}, out(6, -1);
    std::vector<run::RunValue> v(12);
    tensorArgument(v[0], ScalarType::Float, {6}, in.data(), 24);
    intListArgument(v, 1, {2, 2}, 6);
    intListArgument(v, 2, {1, 2}, 8);  // a transposed 2x2 window
    v[3].kind = ValueKind::Int;
    v[3].i = 1;  // storage_offset
    tensorArgument(v[4], ScalarType::Float, {}, out.data(), 24);
    run::KernelContext c(v);
    const auto* kernel = run::findKernel("aten::as_strided_copy.out");
    QVERIFY(kernel);
    QVERIFY2((*kernel)(c, {0, 1, 2, 3, 4, 4}), c.message().c_str());
    QCOMPARE(out[0], 1.f);
    QCOMPARE(out[1], 3.f);
    QCOMPARE(out[2], 2.f);
    QCOMPARE(out[3], 4.f);
    v[3].i = 3;  // the last element would be storage[3 + 1 + 2] = storage[6]: past the end
    QVERIFY(!(*kernel)(c, {0, 1, 2, 3, 4, 4}));
    QVERIFY2(c.message().find("past the end") != std::string::npos, c.message().c_str());
  }

  // What the Inspector shows of a tensor: statistics over the finite values, NaN and Inf
  // counted apart, a histogram over [min, max].
  // A node in a loop runs once per iteration: its k-th visit is compared with its namesake's k-th.
  void loopVisitsComparedInOrder() {
    auto visit = [](const char* node, float x) {
      run::TracedNode t{1, node, "aten::select_copy.int_out", {}};
      run::HostValue v;
      v.kind = ValueKind::Tensor;
      v.sizes = {1};
      v.bytes.resize(4);
      std::memcpy(v.bytes.data(), &x, 4);
      t.values.push_back(v);
      return t;
    };
    run::RunResult a, b;
    a.trace = {visit("row", 1), visit("row", 2), visit("row", 3)};
    b.trace = a.trace;
    QVERIFY(!run::firstDifferingNode(a, b, 0));  // before: visits 2 and 3 were compared with visit 1
    b.trace[2] = visit("row", 3.5f);
    auto first = run::firstDifferingNode(a, b, 0);
    QVERIFY(first);
    QCOMPARE(first->node, std::string("row"));
    QCOMPARE(first->difference, 0.5);
  }

  void valueStatistics() {
    run::HostValue v;
    v.kind = ValueKind::Tensor;
    v.dtype = ScalarType::Float;
    v.sizes = {6};
    for (float f : {1.0f, 2.0f, 3.0f, 4.0f, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()})
      v.bytes.insert(v.bytes.end(), reinterpret_cast<uint8_t*>(&f), reinterpret_cast<uint8_t*>(&f) + 4);
    run::ValueStats s = run::valueStats(v, 4);
    QCOMPARE(s.count, uint64_t(6));
    QCOMPARE(s.nans, uint64_t(1));
    QCOMPARE(s.infinities, uint64_t(1));
    QCOMPARE(s.min, 1.0);
    QCOMPARE(s.max, 4.0);
    QCOMPARE(s.mean, 2.5);
    QVERIFY(std::fabs(s.stddev - std::sqrt(1.25)) < 1e-12);
    QCOMPARE(s.histogram, (std::vector<uint64_t>{1, 1, 1, 1}));
    run::HostValue other = v;
    float five = 5.0f;
    std::memcpy(other.bytes.data(), &five, 4);
    QCOMPARE(run::maxDifference(other, v), 4.0);
    QCOMPARE(run::maxDifference(v, v), 0.0);
    other.sizes = {3, 2};
    QVERIFY(std::isinf(run::maxDifference(other, v)));
    // Integers print whole (a double would round INT64_MAX).
    run::HostValue big;
    big.kind = ValueKind::Tensor;
    big.dtype = ScalarType::Long;
    big.sizes = {1};
    int64_t m = std::numeric_limits<int64_t>::max();
    big.bytes.assign(reinterpret_cast<uint8_t*>(&m), reinterpret_cast<uint8_t*>(&m) + 8);
    QCOMPARE(run::firstValues(big, 4), std::string("[9223372036854775807]"));
  }

  void iotaInputRule() {
    QCOMPARE(run::iotaElement(ScalarType::Float, 0), -0.5);
    QCOMPARE(run::iotaElement(ScalarType::Float, 6), 1.0);
    QCOMPARE(run::iotaElement(ScalarType::Float, 8), -0.25);
    QCOMPARE(run::iotaElement(ScalarType::BFloat16, 3), 0.25);
    QCOMPARE(run::iotaElement(ScalarType::Long, 7), 2.0);
    QCOMPARE(run::iotaElement(ScalarType::Int, 4), 4.0);
    QCOMPARE(run::iotaElement(ScalarType::Bool, 3), 1.0);
  }

  void npyFiles() {
    run::HostValue o;
    o.kind = ValueKind::Tensor;
    o.dtype = ScalarType::Float;
    o.sizes = {2, 3};
    for (int i = 0; i < 6; ++i) {
      float f = static_cast<float>(i) - 2.5f;
      o.bytes.insert(o.bytes.end(), reinterpret_cast<uint8_t*>(&f), reinterpret_cast<uint8_t*>(&f) + 4);
    }
    std::string f = run::npyBytes(o);
    QCOMPARE(f.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    size_t headerLen = static_cast<uint8_t>(f[8]) | (static_cast<uint8_t>(f[9]) << 8);
    QCOMPARE((10 + headerLen) % 64, size_t(0));
    std::string header = f.substr(10, headerLen);
    QVERIFY2(header.find("'descr': '<f4'") != std::string::npos, header.c_str());
    QVERIFY2(header.find("'shape': (2, 3)") != std::string::npos, header.c_str());
    QCOMPARE(header.back(), '\n');
    QCOMPARE(f.size(), 10 + headerLen + 24);
    // Read back: the same array.
    auto back = run::parseNpy(f, "a.npy");
    QVERIFY2(back, back ? "" : back.error().message().c_str());
    QCOMPARE(back->dtype, ScalarType::Float);
    QCOMPARE(back->sizes, o.sizes);
    QCOMPARE(back->bytes, o.bytes);
    // As NumPy writes it too: version 2.0, double quotes, keys in another order, 0-d, |b1.
    std::string hdr = "{\"shape\": (), \"fortran_order\": False, \"descr\": \"|b1\"}\n";
    std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + std::string(1, char(hdr.size())) + std::string(3, '\0') + hdr + "\x01";
    auto b2 = run::parseNpy(v2, "b.npy");
    QVERIFY2(b2, b2 ? "" : b2.error().message().c_str());
    QCOMPARE(b2->dtype, ScalarType::Bool);
    QVERIFY(b2->sizes.empty());
    o.sizes = {6};
    QVERIFY(run::npyBytes(o).find("'shape': (6,)") != std::string::npos);
    // Thousands of dimensions: a header past 64 KiB, written as version 2.0, reads back.
    run::HostValue tall = o;
    tall.sizes.assign(30000, 1);
    tall.sizes[0] = 6;
    auto tallBack = run::parseNpy(run::npyBytes(tall), "tall.npy");
    QVERIFY2(tallBack, tallBack ? "" : tallBack.error().message().c_str());
    QCOMPARE(tallBack->sizes, tall.sizes);
    QCOMPARE(run::npyBytes(tall)[6], '\x02');
    // What it refuses, with the file and the offset named.
    auto refused = [&](const std::string& bytes, const std::string& needle, uint64_t offset) {
      auto r = run::parseNpy(bytes, "x.npy");
      if (r) return std::string("accepted");
      std::string m = r.error().message();
      if (m.find("x.npy") == std::string::npos || m.find(needle) == std::string::npos ||
          r.error().offset != std::optional<uint64_t>(offset))
        return m;
      return std::string();
    };
    auto withHeader = [&](std::string h, size_t dataBytes) {
      std::string out = std::string("\x93NUMPY\x01\x00", 8) + char(h.size()) + '\0' + h;
      return out + std::string(dataBytes, '\0');
    };
    QCOMPARE(refused("PK\x03\x04 not numpy", "\\x93NUMPY", 0), std::string());
    QCOMPARE(refused(f.substr(0, f.size() - 4), "24 bytes", 10 + headerLen), std::string());
    QCOMPARE(refused(withHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4), ">f4", 10), std::string());
    QCOMPARE(refused(withHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", 4), "C order", 10),
             std::string());
    QCOMPARE(refused(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", 4), "tuple", 60),
             std::string());
    QCOMPARE(refused(withHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8), "<c8", 10),
             std::string());
  }

  // Inputs given as values run like the iota rule's own values; a wrong count, dtype or
  // shape is refused naming the input and what it needs.
  void givenInputs() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    const Method& m = emitted->methods[0];
    QCOMPARE(m.inputs.size(), size_t(1));
    const TensorSpec& spec = m.values[static_cast<size_t>(m.inputs[0])].tensor();
    QCOMPARE(spec.dtype, ScalarType::Float);
    run::HostValue x;
    x.kind = ValueKind::Tensor;
    x.dtype = spec.dtype;
    x.sizes = spec.sizes;
    for (uint64_t i = 0; i < *spec.nbytes() / 4; ++i) {
      float f = static_cast<float>(run::iotaElement(ScalarType::Float, i));
      x.bytes.insert(x.bytes.end(), reinterpret_cast<uint8_t*>(&f), reinterpret_cast<uint8_t*>(&f) + 4);
    }
    auto iota = run::runProgram(emitted.value());
    run::RunOptions o;
    o.inputs = {x};
    auto given = run::runProgram(emitted.value(), o);
    QVERIFY2(given, message(given).c_str());
    QCOMPARE(given->outputs[0].checksum, iota->outputs[0].checksum);
    x.bytes[5] ^= 0x40;  // another input, another output
    o.inputs = {x};
    auto other = run::runProgram(emitted.value(), o);
    QVERIFY(other);
    QVERIFY(other->outputs[0].checksum != iota->outputs[0].checksum);
    o.inputs = {x, x};
    auto two = run::runProgram(emitted.value(), o);
    QVERIFY(!two);
    QVERIFY2(two.error().message().find("1 values") != std::string::npos, two.error().message().c_str());
    run::HostValue wrong = x;
    wrong.dtype = ScalarType::Int;
    o.inputs = {wrong};
    auto typed = run::runProgram(emitted.value(), o);
    QVERIFY(!typed);
    QVERIFY2(typed.error().message().find("input 0") != std::string::npos &&
                 typed.error().message().find(spec.shapeString()) != std::string::npos,
             typed.error().message().c_str());
    wrong = x;
    wrong.sizes.back() -= 1;
    o.inputs = {wrong};
    QVERIFY(!run::runProgram(emitted.value(), o));
  }

  // `run --inputs sample`: the example inputs torch.export.save kept in a .pt2, in order (their
  // values against eager PyTorch's outputs are checked in interpreter.py); a .pte or a .pt2
  // without them is refused saying so.
  void sampleInputs() {
    LSTUDIO_REQUIRE_FIXTURES();
    std::string linear = test::fixture("pt2/linear.pt2").toStdString();
    auto stored = readPt2SampleInputs(linear);
    QVERIFY2(stored, stored ? "" : stored.error().message().c_str());
    QCOMPARE(stored->size(), size_t(1));
    QCOMPARE((*stored)[0].key, std::string("0.0"));
    QCOMPARE((*stored)[0].dtype, ScalarType::Float);
    QCOMPARE((*stored)[0].sizes, std::vector<int64_t>{3});
    QCOMPARE((*stored)[0].bytes.size(), size_t(12));
    std::ostringstream out, err;
    QCOMPARE(cli::run({"run", linear, "--inputs", "sample"}, out, err), int(cli::kOk));
    QVERIFY2(out.str().find("on sample inputs") != std::string::npos, out.str().c_str());
    std::ostringstream iotaOut, iotaErr;
    QCOMPARE(cli::run({"run", linear, "--inputs", "iota"}, iotaOut, iotaErr), int(cli::kOk));
    QVERIFY(iotaOut.str().substr(iotaOut.str().find("fnv1a64")) != out.str().substr(out.str().find("fnv1a64")));
    // A .pt2 with sample inputs runs on them when no inputs are named.
    std::ostringstream byDefault, byDefaultErr;
    QCOMPARE(cli::run({"run", linear}, byDefault, byDefaultErr), int(cli::kOk));
    QCOMPARE(byDefault.str(), out.str());
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");  // writes mlp.pt2 without sample inputs
    QVERIFY(emitted);
    std::string pte = (dir.path() + "/mlp.pte").toStdString();
    QVERIFY(writePte(emitted.value(), pte, PteWriteOptions{}));
    for (const std::string& f : {pte, (dir.path() + "/mlp.pt2").toStdString()}) {
      std::ostringstream o, e;
      QCOMPARE(cli::run({"run", f, "--inputs", "sample"}, o, e), int(cli::kBadFile));
      QVERIFY2(e.str().find("sample inputs") != std::string::npos, e.str().c_str());
      std::ostringstream d, de;  // without them: iota inputs
      QCOMPARE(cli::run({"run", f}, d, de), int(cli::kOk));
      QVERIFY2(d.str().find("on iota inputs") != std::string::npos, d.str().c_str());
    }
  }

  void cliRun() {
    QTemporaryDir dir;
    auto emitted = emittedSample(dir.path().toStdString(), "mlp");
    QVERIFY(emitted);
    std::string pte = (dir.path() + "/mlp.pte").toStdString();
    QVERIFY(writePte(emitted.value(), pte, PteWriteOptions{}));
    std::ostringstream out, err;
    std::string saved = (dir.path() + "/outs").toStdString();
    QCOMPARE(cli::run({"run", pte, "--save-outputs", saved}, out, err), int(cli::kOk));
    QVERIFY2(out.str().find("output 0: float32[") != std::string::npos, out.str().c_str());
    QVERIFY2(out.str().find("fnv1a64 0x") != std::string::npos, out.str().c_str());
    QVERIFY(QFile::exists(QString::fromStdString(saved) + "/output_0.npy"));
    // The input back as a .npy file: the same output; a file that is not one: exit 3.
    const Method& m = emitted->methods[0];
    const TensorSpec& spec = m.values[static_cast<size_t>(m.inputs[0])].tensor();
    run::HostValue x;
    x.kind = ValueKind::Tensor;
    x.sizes = spec.sizes;
    for (uint64_t i = 0; i < *spec.nbytes() / 4; ++i) {
      float f = static_cast<float>(run::iotaElement(ScalarType::Float, i));
      x.bytes.insert(x.bytes.end(), reinterpret_cast<uint8_t*>(&f), reinterpret_cast<uint8_t*>(&f) + 4);
    }
    std::string in = (dir.path() + "/in.npy").toStdString();
    QVERIFY(writeFileAtomically(in, run::npyBytes(x)));
    std::ostringstream outIn, errIn;
    QCOMPARE(cli::run({"run", pte, "--inputs", in}, outIn, errIn), int(cli::kOk));
    QCOMPARE(outIn.str().substr(outIn.str().find("output 0")), out.str().substr(out.str().find("output 0")));
    std::ostringstream outBad, errBad;
    QCOMPARE(cli::run({"run", "--inputs", pte + ".npy", pte}, outBad, errBad), int(cli::kBadFile));
    QVERIFY2(errBad.str().find(pte + ".npy") != std::string::npos, errBad.str().c_str());
    // --after / --compare-to on a .pt2: the same numbers from to_edge's conversion on.
    auto built = buildSample("mlp", SampleOptions{});
    QVERIFY(built);
    std::string pt2 = (dir.path() + "/mlp.pt2").toStdString();
    QVERIFY(writePt2(built.value(), pt2));
    std::ostringstream outCmp, errCmp;
    QCOMPARE(cli::run({"run", pt2, "--after", "ToOutVarPass", "--compare-to", "ReplaceViewOpsWithViewCopyOpsPass"},
                      outCmp, errCmp),
             int(cli::kOk));
    QVERIFY2(outCmp.str().find("forward after ToOutVarPass") != std::string::npos, outCmp.str().c_str());
    QVERIFY2(outCmp.str().find("output 0: max |difference| 0\n") != std::string::npos, outCmp.str().c_str());
    QVERIFY2(outCmp.str().find("no node differs by more than 0") != std::string::npos, outCmp.str().c_str());
    std::ostringstream outJ, errJ;
    QCOMPARE(cli::run({"run", pt2, "--compare-to", "SpecPropPass", "--tolerance", "1e-6", "--json"}, outJ, errJ),
             int(cli::kOk));
    auto j = nlohmann::json::parse(outJ.str());
    QCOMPARE(j["compared_to"]["snapshot"].get<std::string>(), std::string("SpecPropPass"));
    QVERIFY(j["compared_to"]["first_differing_node"].is_null());
    std::ostringstream outU, errU;  // a pass that is not there: the valid names
    QCOMPARE(cli::run({"run", pt2, "--after", "NoSuchPass"}, outU, errU), int(cli::kUsage));
    QVERIFY2(errU.str().find("ToOutVarPass") != std::string::npos, errU.str().c_str());
    std::ostringstream outE, errE;  // every pass at once
    QCOMPARE(cli::run({"run", pt2, "--every-pass"}, outE, errE), int(cli::kOk));
    QVERIFY2(outE.str().find("ReplaceViewOpsWithViewCopyOpsPass      ran: the first snapshot") != std::string::npos,
             outE.str().c_str());
    QVERIFY2(outE.str().find("no pass changed the outputs") != std::string::npos, outE.str().c_str());
    std::ostringstream outA, errA;  // the ATen program before to_edge's conversion: exit 5, and from where it runs
    QCOMPARE(cli::run({"run", pt2, "--after", "input"}, outA, errA), int(cli::kRunFailed));
    QVERIFY2(errA.str().find("runs from after ReplaceViewOpsWithViewCopyOpsPass") != std::string::npos,
             errA.str().c_str());
    // A delegated program (a fixture: checked where ../shared/fixtures is): the delegate is named, exit 5.
    if (!test::fixturesDir().isEmpty()) {
      QString delegated = test::fixture("pte/djl_add.pte");
      std::ostringstream out2, err2;
      QCOMPARE(cli::run({"run", delegated.toStdString()}, out2, err2), int(cli::kRunFailed));
      QVERIFY2(err2.str().find("XnnpackBackend delegate") != std::string::npos, err2.str().c_str());
    }
    // Not a program at all: exit 3 with the file named.
    std::ostringstream out3, err3;
    QCOMPARE(cli::run({"run", (dir.path() + "/outs/output_0.npy").toStdString()}, out3, err3), int(cli::kBadFile));
    QVERIFY(err3.str().find("output_0.npy") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestInterpreter)
#include "tst_interpreter.moc"
