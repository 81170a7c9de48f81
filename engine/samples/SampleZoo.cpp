#include "engine/samples/SampleZoo.h"

#include <cstdlib>
#include <sstream>

#include "engine/samples/Samples.h"

namespace lstudio {
namespace {

struct Entry {
  SampleInfo info;
  Result<Program> (*build)(const SampleOptions&);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"mlp", "a 784-256-128-10 multilayer perceptron (the bundled default)"}, samples::mlp},
      {{"dynamic_batch", "two linear layers with a symbolic batch dimension s0 in [1, 64]"}, samples::dynamicBatch},
      {{"mobilenet_v2", "torchvision's MobileNetV2 in eval mode, 3.5 M parameters, 224x224 input"}, samples::mobilenetV2},
      {{"llama",
        "a Llama-style decoder step with a KV cache in mutable buffers (--layers --dim --heads --kv-heads --seq --vocab; "
        "--attention static: per-head attention, caches as inputs and outputs, as ExecuTorch's NPU exports; "
        "--preset llama3-8b|llama3.2-1b: those models' shapes in bfloat16; --ffn; --dtype)",
        {"llama --attention static", "llama --preset llama3.2-1b"}},
       samples::llama},
      {{"quantized_linear", "linear layers as PT2E quantization leaves them (quantize/dequantize around each op)"},
       samples::quantizedLinear},
      {{"training", "a joint forward + backward program with loss and gradient outputs"}, samples::training},
  };
  return all;
}

}  // namespace

std::vector<SampleInfo> sampleList() {
  std::vector<SampleInfo> out;
  for (const auto& e : entries()) out.push_back(e.info);
  return out;
}

bool setSampleOption(SampleOptions& o, const std::string& key, const std::string& value) {
  if (key == "--attention" || key == "--preset" || key == "--dtype") {
    (key == "--attention" ? o.attention : key == "--preset" ? o.preset : o.dtype) = value;
    return !value.empty();
  }
  int* into = key == "--layers"     ? &o.layers
              : key == "--dim"      ? &o.dim
              : key == "--heads"    ? &o.heads
              : key == "--kv-heads" ? &o.kvHeads
              : key == "--seq"      ? &o.seq
              : key == "--vocab"    ? &o.vocab
              : key == "--batch"    ? &o.batch
              : key == "--ffn"      ? &o.ffn
                                    : nullptr;
  if (!into) return false;
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || !end || *end || v <= 0 || v > (1 << 24)) return false;
  *into = static_cast<int>(v);
  return true;
}

Result<Program> buildSampleSpec(const std::string& spec, const std::string& weightsDir) {
  std::istringstream words(spec);
  std::string name, key, value;
  words >> name;
  SampleOptions o;
  o.weightsDir = weightsDir;
  while (words >> key) {
    if (!(words >> value) || !setSampleOption(o, key, value))
      return Error{ErrorCode::Invalid, {}, std::nullopt, "sample spec " + spec, "NAME followed by --option value pairs",
                   key + (value.empty() ? "" : " " + value)};
    value.clear();
  }
  return buildSample(name, o);
}

Result<Program> buildSample(const std::string& name, const SampleOptions& options) {
  for (const auto& e : entries())
    if (e.info.name == name) return e.build(options);
  std::string names;
  for (const auto& e : entries()) names += (names.empty() ? "" : ", ") + e.info.name;
  return Error{ErrorCode::Invalid, {}, std::nullopt, "sample name", names, name};
}

}  // namespace lstudio
