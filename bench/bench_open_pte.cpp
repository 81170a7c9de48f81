// Opens, verifies and inspects a large generated .pte (1 GiB of constants by
// default), then breaks its size down (inspect --size), and compares the
// times with reading the file once (`cat FILE > /dev/null`). Also counts the
// page faults of each: neither may touch constant bytes it does not need.
//
//   bench_open_pte [--mib N] [--runs R] [--file PATH]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/inspect/Inspect.h"
#include "engine/inspect/SizeBreakdown.h"
#include "engine/formats/PteReader.h"
#include "tests/support/SyntheticPte.h"

using namespace lstudio;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

/// A chain of `n` adds, each with its own 1 MiB float constant: y = x + c0 + c1 + ...
test::SynthProgram bigProgram(int n) {
  test::SynthProgram p;
  const int32_t elems = 1 << 18;  // 1 MiB of float32
  p.tensors.push_back({ScalarType::Float, {elems}, std::pair<uint32_t, uint64_t>{1, 0}});
  for (int i = 0; i < n; ++i) {
    p.tensors.push_back({ScalarType::Float, {elems}, std::nullopt, static_cast<uint32_t>(i + 1)});
    p.constantSizes.push_back(uint64_t(elems) * 4);
  }
  int32_t prev = 0;
  for (int i = 0; i < n; ++i) {
    uint64_t slot = (i % 2 == 0) ? uint64_t(elems) * 4 : 0;
    p.tensors.push_back({ScalarType::Float, {elems}, std::pair<uint32_t, uint64_t>{1, slot}});
    int32_t out = static_cast<int32_t>(p.tensors.size() - 1);
    p.kernels.push_back({"aten::add", "out", {prev, i + 1, out, out}});
    prev = out;
  }
  p.inputs = {0};
  p.outputs = {prev};
  p.arenas = {0, int64_t(elems) * 8};
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 1024, runs = 5;
  std::string path = (std::filesystem::temp_directory_path() / "lstudio-bench-1g.pte").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--file" && i + 1 < argc) path = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_open_pte [--mib N] [--runs R] [--file PATH]\n");
      return 2;
    }
  }
  test::SynthProgram spec = bigProgram(mib);
  std::error_code ec;
  auto t0 = Clock::now();
  std::string err;
  if (!test::writeSyntheticPte(path, spec, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  uint64_t size = std::filesystem::file_size(path, ec);
  std::printf("generated %s: %.1f MiB in %.0f ms\n", path.c_str(), size / 1048576.0, ms(Clock::now() - t0));

  std::vector<double> cat, open, openOnly, sizes;
  long faults = 0, sizeFaults = 0;
  std::string catCmd = "cat '" + path + "' > /dev/null";
  for (int r = 0; r < runs; ++r) {
    auto c0 = Clock::now();
    if (std::system(catCmd.c_str()) != 0) return 1;
    cat.push_back(ms(Clock::now() - c0));

    long f0 = minorFaults();
    auto o0 = Clock::now();
    auto p = readProgramFile(path);
    auto o1 = Clock::now();
    if (!p) {
      std::fprintf(stderr, "%s\n", p.error().message().c_str());
      return 1;
    }
    ProgramSummary s = summarize(p.value());
    std::string text = toText(s);
    open.push_back(ms(Clock::now() - o0));
    openOnly.push_back(ms(o1 - o0));
    faults = minorFaults() - f0;
    if (s.methods[0].constants.count != static_cast<size_t>(mib)) return 1;
    long f1 = minorFaults();
    auto s0 = Clock::now();
    SizeBreakdown b = sizeBreakdown(p.value());
    std::string sizeReport = sizeText(b);
    sizes.push_back(ms(Clock::now() - s0));
    sizeFaults = minorFaults() - f1;
    if (b.total() != size) return 1;
  }
  double c = median(cat), o = median(open);
  std::printf("cat FILE > /dev/null:       median %8.2f ms over %d runs (page cache warm)\n", c, runs);
  std::printf("open + verify:              median %8.2f ms\n", median(openOnly));
  std::printf("open + verify + inspect:    median %8.2f ms  (%.4fx of cat)\n", o, o / c);
  std::printf("size breakdown (--size):     median %8.2f ms  (%.4fx of cat)\n", median(sizes), median(sizes) / c);
  std::printf("page faults during one open + inspect: %ld, one size breakdown: %ld (the file has %llu pages of 4 KiB)\n",
              faults, sizeFaults, static_cast<unsigned long long>(size / 4096));
  std::filesystem::remove(path, ec);
  return 0;
}
