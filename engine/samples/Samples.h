// The samples of the zoo, one builder function each (registered in
// SampleZoo.cpp), and helpers they share.
#pragma once

#include "engine/samples/GraphBuilder.h"
#include "engine/samples/SampleZoo.h"

namespace lstudio::samples {

constexpr ScalarType F = ScalarType::Float;
inline constexpr const char* kLinear = "torch.nn.modules.linear.Linear";

/// nn.Linear as torch.export decomposes it to core ATen: permute the weight,
/// then addmm with the bias (mm without one). `x` is 2-d.
TensorRef linear(GraphBuilder& b, const std::string& fqn, TensorRef x, int64_t in, int64_t out, bool bias = true);

Result<Program> mlp(const SampleOptions& o);
Result<Program> dynamicBatch(const SampleOptions& o);
Result<Program> mobilenetV2(const SampleOptions& o);
Result<Program> llama(const SampleOptions& o);
Result<Program> quantizedLinear(const SampleOptions& o);
Result<Program> training(const SampleOptions& o);

}  // namespace lstudio::samples
