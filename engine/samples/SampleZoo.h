// The sample zoo: programs shaped like what users export with torch.export
// (after run_decompositions to core ATen), built with GraphBuilder. They give
// the studio something to open at once, and its tests and benchmarks real
// workloads. Each sample says where it deliberately simplifies.
#pragma once

#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

struct SampleOptions {
  int batch = 0;   ///< 0: the sample's default
  int layers = 0;  ///< llama: decoder layers
  int dim = 0;     ///< llama: model width
  int heads = 0;   ///< llama: attention heads
  int kvHeads = 0; ///< llama: key/value heads (grouped-query attention)
  int seq = 0;     ///< llama: KV cache length
  int vocab = 0;   ///< llama: vocabulary
  int ffn = 0;     ///< llama: feed-forward hidden size (0: Llama's rule from dim)
  std::string attention;  ///< llama: "mha" (empty: the default) or "static" (per-head, caches as inputs and outputs)
  /// llama: "llama3-8b" or "llama3.2-1b": those models' shapes and bfloat16;
  /// the other options, when given, override the preset's values.
  std::string preset;
  std::string dtype;  ///< llama: "float32" (the default) or "bfloat16": weights, caches and activations
  /// When set, generated weights go to an unlinked temporary file in this
  /// folder instead of memory (the CLI passes the output's folder).
  std::string weightsDir;
};

struct SampleInfo {
  std::string name;
  std::string description;
  /// Other ways to build it worth a menu entry, as sample specs ("llama --attention static").
  std::vector<std::string> variants;
};

std::vector<SampleInfo> sampleList();
Result<Program> buildSample(const std::string& name, const SampleOptions& options = {});

/// Sets option `key` ("--layers", "--attention", ...) of `o` from `value`;
/// false for an unknown key or a value it cannot take.
bool setSampleOption(SampleOptions& o, const std::string& key, const std::string& value);
/// Builds a sample from a spec: its name, then options as on the command
/// line ("llama --layers 4 --attention static"); `weightsDir` as in SampleOptions.
Result<Program> buildSampleSpec(const std::string& spec, const std::string& weightsDir = {});

}  // namespace lstudio
