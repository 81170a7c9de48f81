// Lowering time per pass on the 32-layer llama sample (building the sample,
// the stand-in for import, is not timed): the median wall time of every pass,
// of the to_edge stage (the sample is an ATen-dialect program: run_decompositions
// through MemoryFormatOpsPass) and of the whole pipeline over R runs, for the
// default config, with each gated pass turned on and with XnnpackPartitioner (the partition
// stage of to_edge_transform_and_lower). Target: well under 1 s in total.
//
//   bench_lower [--layers N] [--dim D] [--attention mha|static] [--runs R]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Pipeline.h"

using namespace lstudio;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

long peakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  SampleOptions o;
  o.layers = 32;
  int runs = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--layers" && i + 1 < argc) o.layers = std::atoi(argv[++i]);
    else if (a == "--dim" && i + 1 < argc) o.dim = std::atoi(argv[++i]);
    else if (a == "--attention" && i + 1 < argc) o.attention = argv[++i];
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
  }
  auto built = buildSample("llama", o);
  if (!built) {
    std::fprintf(stderr, "llama: %s\n", built.error().message().c_str());
    return 1;
  }
  auto input = std::make_shared<const Program>(std::move(built.value()));
  uint64_t weightBytes = 0;
  for (const Value& v : input->methods[0].values)
    if (auto* t = v.tensorIf()) weightBytes += t->data.size;
  std::printf("llama, %d layers: %zu nodes, %zu values, %.1f MiB of weights; %d runs, medians; peak RSS after build %ld KiB\n",
              o.layers, input->methods[0].nodes.size(), input->methods[0].values.size(), double(weightBytes) / (1 << 20),
              runs, peakRssKiB());
  struct Variant {
    const char* name;
    ExecutorchBackendConfig config;
  };
  std::vector<Variant> variants(4);
  variants[0].name = "default";
  variants[1].name = "run_reinplace_pass";
  variants[1].config.runReinplacePass = true;
  variants[2].name = "do_quant_fusion_and_const_prop";
  variants[2].config.doQuantFusionAndConstProp = true;
  // to_edge_transform_and_lower's partition: run_decompositions twice and the XnnpackPartitioner pass.
  variants[3].name = "partitioner: xnnpack";
  variants[3].config.partitioners = {PartitionerSpec{}};
  for (const Variant& v : variants) {
    std::map<std::string, std::vector<double>> perPass;
    std::vector<std::string> order;
    std::vector<double> totals, toEdge;
    bool failed = false;
    for (int r = 0; r < runs; ++r) {
      Pipeline p(input, v.config);
      p.runToEnd();
      failed = failed || p.failed();
      double total = 0, edge = 0;
      bool inToEdge = true;  // to_edge's passes come first, up to MemoryFormatOpsPass
      for (const PassRecord& rec : p.records()) {
        if (r == 0) order.push_back(rec.name);
        perPass[rec.name].push_back(rec.milliseconds);
        total += rec.milliseconds;
        if (inToEdge) edge += rec.milliseconds;
        if (rec.name == "MemoryFormatOpsPass") inToEdge = false;
      }
      totals.push_back(total);
      toEdge.push_back(edge);
    }
    std::printf("\n[%s]%s\n", v.name, failed ? "  FAILED" : "");
    for (const std::string& n : order) std::printf("  %-36s %9.3f ms\n", n.c_str(), median(perPass[n]));
    std::printf("  %-36s %9.3f ms\n", "to_edge stage", median(toEdge));
    std::printf("  %-36s %9.3f ms  (peak RSS %ld KiB)\n", "total", median(totals), peakRssKiB());
  }
  return 0;
}
