// Imports a generated .pt2 archive with large weights (1 GiB by default) and
// reports the time and the resident memory: weights stay mapped, so memory
// must not grow with their size. Compares against a small archive.
//
//   bench_import_pt2 [--mib N] [--runs R] [--wide NODES]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/inspect/Inspect.h"
#include "engine/formats/Pt2Reader.h"
#include "tests/support/ZipWriter.h"

using namespace lstudio;
using Clock = std::chrono::steady_clock;

namespace {

/// A chain of `layers` multiplications, each by its own weight of `elems`
/// floats, or all by one weight when `shared` (keeps the zip under 65,535 records).
std::vector<test::ZipRecord> archive(int layers, int64_t elems, bool shared = false) {
  std::string tensors, nodes, specs, config, inputs;
  auto meta = [](int64_t n) {
    return R"({"dtype": 7, "sizes": [{"as_int": )" + std::to_string(n) +
           R"(}], "requires_grad": false, "device": {"type": "cpu"}, "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7})";
  };
  std::vector<test::ZipRecord> recs;
  std::string prev = "x";
  tensors += "\"x\": " + meta(elems);
  for (int i = 0; i < layers; ++i) {
    bool own = !shared || i == 0;
    std::string w = "p_w" + std::to_string(shared ? 0 : i), out = "mul_" + std::to_string(i);
    if (own) {
      tensors += ", \"" + w + "\": " + meta(elems);
      inputs += "{\"as_tensor\": {\"name\": \"" + w + "\"}}, ";
      specs += "{\"parameter\": {\"arg\": {\"name\": \"" + w + "\"}, \"parameter_name\": \"w" + std::to_string(i) + "\"}}, ";
    }
    tensors += ", \"" + out + "\": " + meta(elems);
    nodes += std::string(i ? ", " : "") + R"({"target": "torch.ops.aten.mul.Tensor", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": ")" +
             prev + R"("}}, "kind": 1}, {"name": "other", "arg": {"as_tensor": {"name": ")" + w +
             R"("}}, "kind": 1}], "outputs": [{"as_tensor": {"name": ")" + out + R"("}}], "metadata": {}})";
    if (own) {
      config += std::string(i ? ", " : "") + "\"w" + std::to_string(i) + "\": {\"path_name\": \"weight_" + std::to_string(i) +
                "\", \"is_param\": true, \"use_pickle\": false, \"tensor_meta\": " + meta(elems) + "}";
      recs.push_back({"b/data/weights/weight_" + std::to_string(i), {}, false, uint64_t(elems) * 4});
    }
    prev = out;
  }
  std::string json = R"({"graph_module": {"graph": {"inputs": [)" + inputs + R"({"as_tensor": {"name": "x"}}], "outputs": [{"as_tensor": {"name": ")" +
                     prev + R"("}}], "nodes": [)" + nodes + R"(], "tensor_values": {)" + tensors +
                     R"(}, "sym_int_values": {}}, "signature": {"input_specs": [)" + specs +
                     R"({"user_input": {"arg": {"as_tensor": {"name": "x"}}}}], "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": ")" +
                     prev + R"("}}}}]}, "module_call_graph": []}, "range_constraints": {}, "schema_version": {"major": 8, "minor": 12}, "torch_version": "2.9"})";
  recs.push_back({"b/archive_format", "pt2"});
  recs.push_back({"b/models/model.json", json});
  recs.push_back({"b/data/weights/model_weights_config.json", "{\"config\": {" + config + "}}"});
  return recs;
}

long maxRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

double importMs(const std::string& path, uint64_t* weightBytes) {
  auto t0 = Clock::now();
  auto p = readExportFile(path);
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().message().c_str());
    std::exit(1);
  }
  ProgramSummary s = summarize(p.value());
  *weightBytes = s.methods[0].weightBytes;
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 1024, runs = 5, wideLayers = 100000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--wide" && i + 1 < argc) wideLayers = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_import_pt2 [--mib N] [--runs R] [--wide NODES]\n");
      return 2;
    }
  }
  auto dir = std::filesystem::temp_directory_path();
  std::string small = (dir / "lstudio-bench-small.pt2").string(), big = (dir / "lstudio-bench-big.pt2").string();
  const int layers = 256;
  if (!test::writeZip(small, archive(layers, 256)) || !test::writeZip(big, archive(layers, int64_t(mib) * 1024 * 256 / layers))) {
    std::fprintf(stderr, "cannot write the archives\n");
    return 1;
  }
  ::sync();  // let writeback finish so the timings measure the reader, not the disk
  std::printf("archives: %s (%.1f MiB), %s (%.1f MiB), %d layers each\n", small.c_str(),
              std::filesystem::file_size(small) / 1048576.0, big.c_str(), std::filesystem::file_size(big) / 1048576.0, layers);
  long rss0 = maxRssKiB();
  uint64_t wSmall = 0, wBig = 0;
  std::vector<double> tSmall, tBig;
  for (int r = 0; r < runs; ++r) tSmall.push_back(importMs(small, &wSmall));
  long rssSmall = maxRssKiB();
  for (int r = 0; r < runs; ++r) tBig.push_back(importMs(big, &wBig));
  long rssBig = maxRssKiB();
  std::sort(tSmall.begin(), tSmall.end());
  std::sort(tBig.begin(), tBig.end());
  std::printf("small: weights %.1f KiB, import + summary median %.2f ms\n", wSmall / 1024.0, tSmall[tSmall.size() / 2]);
  std::printf("big:   weights %.1f MiB, import + summary median %.2f ms\n", wBig / 1048576.0, tBig[tBig.size() / 2]);
  std::printf("peak RSS: start %ld KiB, after small %ld KiB, after big %ld KiB (growth for big: %ld KiB)\n", rss0,
              rssSmall, rssBig, rssBig - rssSmall);
  std::filesystem::remove(small);
  std::filesystem::remove(big);

  // A graph with ~100 MB of program JSON (100,000 nodes): the JSON parse dominates.
  std::string wide = (dir / "lstudio-bench-wide.pt2").string();
  auto recs = archive(wideLayers, 4, true);
  uint64_t jsonBytes = 0;
  for (const auto& r : recs)
    if (r.name.ends_with("model.json")) jsonBytes = r.data.size();
  if (!test::writeZip(wide, recs)) return 1;
  ::sync();
  std::vector<double> tWide;
  uint64_t wWide = 0;
  for (int r = 0; r < std::min(runs, 3); ++r) tWide.push_back(importMs(wide, &wWide));
  std::sort(tWide.begin(), tWide.end());
  std::printf("wide:  %d nodes, program JSON %.1f MiB, import + summary median %.0f ms (%.0f MiB/s)\n", wideLayers,
              jsonBytes / 1048576.0, tWide[tWide.size() / 2], jsonBytes / 1048576.0 / (tWide[tWide.size() / 2] / 1000));
  std::filesystem::remove(wide);
  return 0;
}
