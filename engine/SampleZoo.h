// The sample zoo: programs shaped like what users export with torch.export
// (after run_decompositions to core ATen), built with GraphBuilder. They give
// the studio something to open at once, and its tests and benchmarks real
// workloads. Each sample says where it deliberately simplifies.
#pragma once

#include <string>
#include <vector>

#include "engine/Error.h"
#include "engine/Ir.h"

namespace lstudio {

struct SampleOptions {
  int batch = 0;   ///< 0: the sample's default
  int layers = 0;  ///< llama: decoder layers
  int dim = 0;     ///< llama: model width
  int heads = 0;   ///< llama: attention heads
  int kvHeads = 0; ///< llama: key/value heads (grouped-query attention)
  int seq = 0;     ///< llama: KV cache length
  int vocab = 0;   ///< llama: vocabulary
  std::string attention;  ///< llama: "mha" (empty: the default) or "static" (per-head, caches as inputs and outputs)
};

struct SampleInfo {
  std::string name;
  std::string description;
};

std::vector<SampleInfo> sampleList();
Result<Program> buildSample(const std::string& name, const SampleOptions& options = {});

}  // namespace lstudio
