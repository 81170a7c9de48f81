// Batch and layer normalization as PyTorch's core ATen decompositions write them:
// the native operators, whose first result is the normalized tensor.
#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorSpec emptyLike(const TensorSpec& t, std::vector<int64_t> sizes) {
  TensorSpec s;
  s.dtype = t.dtype;
  s.sizes = std::move(sizes);
  for (size_t d = 0; d < s.sizes.size(); ++d) s.dimOrder.push_back(static_cast<uint8_t>(d));
  s.strides = contiguousStrides(s.sizes);
  return s;
}

/// batch_norm in evaluation (running statistics, training=False) ->
/// _native_batch_norm_legit_no_training(...)[0]; its statistics results are empty.
void batchNorm(Rewrite& r) {
  if (r.integer("training").value_or(0) != 0)
    return r.fail("batch_norm in training mode is not decomposed (export the model in eval())");
  if (r.isNone("running_mean") || r.isNone("running_var"))
    return r.fail("batch_norm without running statistics is not decomposed yet");
  const TensorSpec& x = r.tensor("input");
  r.finish("aten._native_batch_norm_legit_no_training.default",
           {TensorRef{r.arg("input")}, TensorRef{r.arg("weight")}, TensorRef{r.arg("bias")}, TensorRef{r.arg("running_mean")},
            TensorRef{r.arg("running_var")}, TensorRef{r.arg("momentum")}, TensorRef{r.arg("eps")}},
           {emptyLike(x, {0}), emptyLike(x, {0})});
}

/// layer_norm -> native_layer_norm(...)[0]; mean and rstd keep the leading
/// dimensions and a 1 for each normalized one.
void layerNorm(Rewrite& r) {
  const TensorSpec& x = r.tensor("input");
  auto shape = r.ints("normalized_shape");
  if (!shape || shape->size() > x.sizes.size()) return r.fail("normalized_shape is not a list of sizes of the input");
  std::vector<int64_t> stats(x.sizes.begin(), x.sizes.end() - static_cast<long>(shape->size()));
  stats.resize(x.sizes.size(), 1);
  r.finish("aten.native_layer_norm.default",
           {TensorRef{r.arg("input")}, TensorRef{r.arg("normalized_shape")}, TensorRef{r.arg("weight")},
            TensorRef{r.arg("bias")}, TensorRef{r.arg("eps")}},
           {emptyLike(x, stats), emptyLike(x, stats)});
}

}  // namespace

void registerNormalizationRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::batch_norm.default", batchNorm}, {"aten::layer_norm.default", layerNorm}});
}

}  // namespace lstudio::decompositions
