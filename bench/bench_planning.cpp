// Memory planning on every real program (and a large synthetic problem):
// the arena of naive, et-greedy, best-fit and the default suite against the
// stored arena and the lower bound, plus planning times (medians).
//
//   bench_planning [FIXTURES_DIR] [--tensors N] [--runs R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/planning/MemoryPlanning.h"
#include "engine/planning/Planners.h"
#include "engine/formats/PteReader.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Pipeline.h"

using namespace lstudio;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A synthetic activation pattern: a long chain with skip connections.
PlanProblem chainProblem(int n) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> size(1, 256), skip(1, 8), longLived(0, 49);
  PlanProblem p;
  for (int i = 0; i < n; ++i) {
    int last = longLived(rng) == 0 ? std::min(n, i + n / 4) : std::min(n, i + skip(rng));
    p.tensors.push_back(PlanTensor{uint64_t(size(rng)) * 64, i, last, 1});
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/fixtures";
  int tensors = 10000, runs = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tensors" && i + 1 < argc) tensors = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else dir = a;
  }
  const char* names[] = {"naive", "et-greedy", "best-fit", "suite"};
  std::printf("%-48s %7s %10s %10s %10s %10s %10s %10s %7s %7s\n", "program / method", "tensors", "stored", "naive",
              "et-greedy", "best-fit", "suite", "bound", "st/bd", "su/bd");
  double sumRatioSuite = 0, sumRatioStored = 0;
  int rows = 0, reproduced = 0, withStored = 0, withStoredRows = 0;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/pte", ec))
    if (e.path().extension() == ".pte") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto p = readProgramFile(f);
    if (!p) continue;
    for (const Method& m : p->methods) {
      uint64_t arena[4] = {};
      std::optional<uint64_t> stored;
      uint64_t bound = 0;
      size_t count = 0;
      for (int k = 0; k < 4; ++k) {
        auto mp = planMethod(m, PlanOptions{names[k], 0});
        if (!mp || mp->arenas.empty()) continue;
        count = mp->problem.tensors.size();
        for (const auto& a : mp->arenas) {
          arena[k] += a.planned;
          if (k == 0) bound += a.lowerBound;
          if (k == 0 && a.stored) stored = stored.value_or(0) + *a.stored;
        }
      }
      if (count == 0) continue;
      ++rows;
      double rs = bound ? double(arena[3]) / bound : 1.0, rst = bound && stored ? double(*stored) / bound : 1.0;
      sumRatioSuite += rs;
      sumRatioStored += rst;
      ++withStoredRows;
      if (stored) {
        ++withStored;
        reproduced += arena[1] == *stored;
      }
      std::string label = std::filesystem::path(f).stem().string() + " / " + m.name;
      if (label.size() > 48) label = label.substr(0, 45) + "...";
      std::printf("%-48s %7zu %10s %10llu %10llu %10llu %10llu %10llu %7.3f %7.3f\n", label.c_str(), count,
                  stored ? std::to_string(*stored).c_str() : "-", (unsigned long long)arena[0], (unsigned long long)arena[1],
                  (unsigned long long)arena[2], (unsigned long long)arena[3], (unsigned long long)bound, rst, rs);
    }
  }
  // The zoo: each sample lowered with the default config, then re-planned
  // with every algorithm (no stored arena: the pipeline planned it).
  struct ZooCase {
    const char* name;
    SampleOptions options;
  };
  SampleOptions llama32;
  llama32.layers = 32;
  llama32.dim = 1024;
  for (const ZooCase& z : {ZooCase{"mlp", {}}, ZooCase{"dynamic_batch", {}}, ZooCase{"mobilenet_v2", {}}, ZooCase{"llama", {}},
                           ZooCase{"quantized_linear", {}}, ZooCase{"training", {}}, ZooCase{"llama --layers 32 --dim 1024", llama32}}) {
    std::string sampleName = z.name;
    sampleName = sampleName.substr(0, sampleName.find(' '));
    auto built = buildSample(sampleName, z.options);
    if (!built) continue;
    Pipeline pipeline(std::make_shared<const Program>(std::move(built.value())), ExecutorchBackendConfig{});
    pipeline.runToEnd();
    if (pipeline.failed()) {
      std::printf("%-48s lowering failed\n", z.name);
      continue;
    }
    const Method& m = pipeline.current()->methods[0];
    uint64_t arena[4] = {}, bound = 0;
    size_t count = 0;
    double ms = 0;
    for (int k = 0; k < 4; ++k) {
      auto mp = planMethod(m, PlanOptions{names[k], 0});
      if (!mp) continue;
      count = mp->problem.tensors.size();
      if (k == 3) ms = mp->planMilliseconds;
      for (const auto& a : mp->arenas) {
        arena[k] += a.planned;
        if (k == 0) bound += a.lowerBound;
      }
    }
    ++rows;
    double rs = bound ? double(arena[3]) / bound : 1.0;
    sumRatioSuite += rs;
    sumRatioStored += 1.0;
    std::printf("%-48s %7zu %10s %10llu %10llu %10llu %10llu %10llu %7s %7.3f  (suite %.1f ms)\n", (std::string("zoo ") + z.name).c_str(),
                count, "-", (unsigned long long)arena[0], (unsigned long long)arena[1], (unsigned long long)arena[2],
                (unsigned long long)arena[3], (unsigned long long)bound, "-", rs, ms);
  }

  if (rows)
    std::printf("\n%d rows: mean suite/bound %.4f over all rows; stored/bound %.4f over the fixture rows; et-greedy reproduces "
                "the stored arena in %d of %d\n",
                rows, sumRatioSuite / rows, (sumRatioStored - (rows - withStoredRows)) / std::max(withStoredRows, 1), reproduced,
                withStored);

  PlanProblem big = chainProblem(tensors);
  uint64_t bound = lowerBounds(big)[1];
  std::printf("\nsynthetic chain, %d tensors (lower bound %llu bytes):\n", tensors, (unsigned long long)bound);
  for (const char* n : names) {
    auto planner = plannerByName(n);
    std::vector<double> ms;
    PlanResult r;
    for (int k = 0; k < runs; ++k) {
      auto t0 = Clock::now();
      r = planner->plan(big);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    bool ok = verifyPlan(big, r).ok();
    std::printf("  %-10s arena %10llu (%.3fx bound)  median %8.2f ms over %d runs%s\n", n, (unsigned long long)r.total(),
                double(r.total()) / bound, median(ms), runs, ok ? "" : "  INVALID PLAN");
  }
  return 0;
}
