// Exports the llama sample (32 layers, width 1024: more than 1 GB of
// weights) with external_constants: opens the .pt2, lowers it through the
// pipeline, emits and writes the .pte and its .ptd. Prints the median
// throughput of the whole export and of the write alone against a plain
// copy of the same bytes (read + write + fsync, as the writer flushes too),
// and without the kernel-side copy (copy_file_range; write() from the mapped
// archive instead), and the peak resident memory after a small and after the large export:
// weights are streamed from the mapped archive, so memory must not grow
// with their size.
//
//   bench_export [--layers N] [--dim N] [--small-dim N] [--runs R] [--dir DIR]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/BenchSupport.h"
#include "engine/formats/OpenProgram.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/formats/PteWriter.h"
#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Pipeline.h"

using namespace lstudio;
using bench::Clock;
using bench::copyOnce;
using bench::die;
using bench::median;
using bench::seconds;

namespace {

long maxRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

/// Writes the sample archive in a child process, so that building the
/// weights in memory does not count in this process's peak RSS.
void writeArchive(const std::string& path, int layers, int dim) {
  pid_t pid = ::fork();
  if (pid < 0) die("fork failed");
  if (pid == 0) {
    SampleOptions o;
    o.layers = layers;
    o.dim = dim;
    auto p = buildSample("llama", o);
    if (!p) {
      std::fprintf(stderr, "%s\n", p.error().message().c_str());
      std::_Exit(1);
    }
    auto s = writePt2(p.value(), path);
    if (!s) std::fprintf(stderr, "%s\n", s.error().message().c_str());
    std::_Exit(s ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("cannot write " + path);
}

struct Run {
  double total = 0;  ///< open + lower + emit + write, seconds
  double write = 0;  ///< writePte alone
  uint64_t bytes = 0;
  uint64_t weightBytes = 0;
};

Run exportOnce(const std::string& pt2, const std::string& out, bool kernelCopy = true) {
  ExecutorchBackendConfig c;
  c.externalConstants = true;
  auto t0 = Clock::now();
  auto opened = openProgramFile(pt2);
  if (!opened) die(opened.error().message());
  Pipeline pipeline(std::make_shared<const Program>(std::move(opened.value())), c);
  pipeline.runToEnd();
  if (pipeline.failed()) die("lowering failed in " + pipeline.records()[pipeline.position() - 1].name);
  EmitReport er;
  auto emitted = emitProgram(*pipeline.current(), c, &er);
  if (!emitted) die(emitted.error().message());
  Run r;
  for (const Value& v : emitted->methods[0].values)
    if (auto* t = v.tensorIf(); t && t->external) r.weightBytes += t->data.size;
  auto t1 = Clock::now();
  PteWriteOptions o = writeOptionsFor(c);
  o.kernelCopy = kernelCopy;
  auto report = writePte(emitted.value(), out, o);
  if (!report) die(report.error().message());
  r.write = seconds(t1);
  r.total = seconds(t0);
  for (const auto& f : report->files) r.bytes += f.bytes;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 32, dim = 1024, smallDim = 256, runs = 3;
  std::string dir = (std::filesystem::temp_directory_path() / "lstudio-bench-export").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--layers" && i + 1 < argc) layers = std::atoi(argv[++i]);
    else if (a == "--dim" && i + 1 < argc) dim = std::atoi(argv[++i]);
    else if (a == "--small-dim" && i + 1 < argc) smallDim = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_export [--layers N] [--dim N] [--small-dim N] [--runs R] [--dir DIR]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(dir);
  std::string small = dir + "/llama-small.pt2", big = dir + "/llama-big.pt2";
  writeArchive(small, layers, smallDim);
  writeArchive(big, layers, dim);
  ::sync();
  std::printf("archives: %s (%.1f MiB, dim %d), %s (%.1f MiB, dim %d), %d layers\n", small.c_str(),
              std::filesystem::file_size(small) / 1048576.0, smallDim, big.c_str(),
              std::filesystem::file_size(big) / 1048576.0, dim, layers);

  std::vector<double> total, write;
  Run s;
  for (int r = 0; r < runs; ++r) s = exportOnce(small, dir + "/small.pte");
  long rssSmall = maxRssKiB();
  // Exports and copies alternate, so that both see the same state of the
  // disk's write-back (on a shared machine it dominates the variance).
  Run b;
  std::string ptd = dir + "/_default_external_constant.ptd";
  std::vector<double> copy, writeUser;
  for (int r = 0; r < runs; ++r) {
    b = exportOnce(big, dir + "/big.pte");
    total.push_back(b.total);
    write.push_back(b.write);
    copy.push_back(copyOnce(ptd, dir + "/copy.bin"));
    // The same export with every weight passed through write() from the mapping.
    writeUser.push_back(exportOnce(big, dir + "/big.pte", false).write);
  }
  long rssBig = maxRssKiB();
  uint64_t ptdBytes = std::filesystem::file_size(ptd);

  const double mb = 1e6;
  double tTotal = median(total), tWrite = median(write), tCopy = median(copy);
  double copyRate = ptdBytes / mb / tCopy;
  std::printf("small export: weights %.1f MB, %.1f MB written\n", s.weightBytes / mb, s.bytes / mb);
  std::printf("big export:   weights %.1f MB, %.1f MB written (.pte + .ptd)\n", b.weightBytes / mb, b.bytes / mb);
  std::printf("export (open + lower + emit + write) median %.3f s: %.0f MB/s\n", tTotal, b.bytes / mb / tTotal);
  std::printf("write alone median %.3f s: %.0f MB/s\n", tWrite, b.bytes / mb / tWrite);
  std::printf("plain copy of the .ptd (%.1f MB, read + write + fsync) median %.3f s: %.0f MB/s\n", ptdBytes / mb, tCopy,
              copyRate);
  double tUser = median(writeUser);
  std::printf("write alone without copy_file_range (write() from the mapping) median %.3f s: %.0f MB/s\n", tUser,
              b.bytes / mb / tUser);
  std::printf("ratio to copy: export %.2fx, write %.2fx (%.2fx without copy_file_range)\n", b.bytes / mb / tTotal / copyRate,
              b.bytes / mb / tWrite / copyRate, b.bytes / mb / tUser / copyRate);
  std::printf("peak RSS: %.1f MiB after the small exports, %.1f MiB after the big ones (weights %.0fx larger)\n",
              rssSmall / 1024.0, rssBig / 1024.0, double(b.weightBytes) / double(std::max<uint64_t>(s.weightBytes, 1)));
  std::filesystem::remove_all(dir);
  return 0;
}
