// Writes the llama sample (32 layers, width 1024: more than 1 GB of weights)
// as a .pt2 archive, as `lowering-cli sample llama` does. Builds the program
// in memory once (the weights generation, timed), then for each run times
// writePt2 (temporary file, fsync, rename), a plain copy of the written
// archive (read + write in 8 MiB chunks + fsync) and coreutils cp followed by
// an fsync of the copy, one after the other so that all three see the same
// state of the disk's write-back. Prints the archive size, the medians in
// seconds and MB/s, and writePt2's throughput as a ratio of both copies'.
//
//   bench_sample [--layers N] [--dim N] [--runs R] [--dir DIR]
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/BenchSupport.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/samples/SampleZoo.h"

using namespace lstudio;
using bench::Clock;
using bench::die;
using bench::median;
using bench::seconds;

namespace {

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// coreutils cp of `from` to `to`, then an fsync of the copy (cp does not
/// flush; the writer does).
double cpOnce(const std::string& from, const std::string& to) {
  auto t0 = Clock::now();
  if (std::system(("cp " + shellQuote(from) + " " + shellQuote(to)).c_str()) != 0) die("cp failed");
  int f = ::open(to.c_str(), O_RDONLY);
  if (f < 0 || ::fsync(f) != 0) die("cannot fsync " + to);
  ::close(f);
  return seconds(t0);
}

/// Removes `path` and flushes everything, so that no timed step pays for
/// freeing the previous file's blocks or for another step's write-back.
void clear(const std::string& path) {
  std::filesystem::remove(path);
  ::sync();
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 32, dim = 1024, runs = 3;
  std::string dir = (std::filesystem::temp_directory_path() / "lstudio-bench-sample").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--layers" && i + 1 < argc) layers = std::atoi(argv[++i]);
    else if (a == "--dim" && i + 1 < argc) dim = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_sample [--layers N] [--dim N] [--runs R] [--dir DIR]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(dir);
  std::string archive = dir + "/llama.pt2", copy = dir + "/copy.pt2", cpCopy = dir + "/cp.pt2";

  SampleOptions o;
  o.layers = layers;
  o.dim = dim;
  auto t0 = Clock::now();
  auto program = buildSample("llama", o);
  if (!program) die(program.error().message());
  double tBuild = seconds(t0);
  uint64_t weightBytes = 0;
  for (const Value& v : program->methods.front().values)
    if (auto* t = v.tensorIf(); t && t->data.data) weightBytes += t->data.size;

  std::vector<double> write, plain, cp;
  uint64_t bytes = 0;
  for (int r = 0; r < runs; ++r) {
    clear(archive);
    t0 = Clock::now();
    if (auto s = writePt2(program.value(), archive); !s) die(s.error().message());
    write.push_back(seconds(t0));
    bytes = std::filesystem::file_size(archive);
    clear(copy);
    plain.push_back(bench::copyOnce(archive, copy));
    clear(cpCopy);
    cp.push_back(cpOnce(archive, cpCopy));
  }

  const double mb = 1e6;
  double tWrite = median(write), tPlain = median(plain), tCp = median(cp);
  double rWrite = bytes / mb / tWrite, rPlain = bytes / mb / tPlain, rCp = bytes / mb / tCp;
  std::printf("llama sample: %d layers, width %d; archive %.1f MB (%.1f MiB), weights %.1f MB; %d runs, medians\n", layers,
              dim, bytes / mb, bytes / 1048576.0, weightBytes / mb, runs);
  std::printf("build (weights generation, once)        %7.3f s  %6.0f MB/s of weights\n", tBuild, weightBytes / mb / tBuild);
  std::printf("writePt2 (temp + fsync + rename)        %7.3f s  %6.0f MB/s\n", tWrite, rWrite);
  std::printf("plain copy (read/write 8 MiB + fsync)   %7.3f s  %6.0f MB/s\n", tPlain, rPlain);
  std::printf("coreutils cp + fsync                    %7.3f s  %6.0f MB/s\n", tCp, rCp);
  std::printf("ratio writePt2 / plain copy %.2fx, writePt2 / cp %.2fx\n", rWrite / rPlain, rWrite / rCp);
  std::filesystem::remove_all(dir);
  return 0;
}
