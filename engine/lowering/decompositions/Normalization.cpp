// Batch and layer normalization as PyTorch's core ATen decompositions write them:
// the native operators, whose first result is the normalized tensor.
#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

/// batch_norm in evaluation (running statistics, training=False) ->
/// _native_batch_norm_legit_no_training(...)[0]; its statistics results are empty.
/// In training mode without running statistics (the input's own statistics, as
/// ScaledStdConv2d standardises its weight in eval too) -> _native_batch_norm_legit.no_stats,
/// whose statistics results have one number per channel.
void batchNorm(Rewrite& r) {
  const bool untracked = r.isNone("running_mean") && r.isNone("running_var");
  const TensorSpec& x = r.tensor("input");
  if (r.integer("training").value_or(0) != 0) {
    if (!untracked)
      return r.fail("batch_norm updating its running statistics (training mode) is not decomposed (export the model in eval())");
    if (x.sizes.size() < 2) return r.fail("batch_norm of an input without a channel dimension");
    const TensorSpec stats = denseSpec(x.dtype, {x.sizes[1]});
    return r.finish("aten._native_batch_norm_legit.no_stats",
                    {TensorRef{r.arg("input")}, TensorRef{r.arg("weight")}, TensorRef{r.arg("bias")}, true,
                     TensorRef{r.arg("momentum")}, TensorRef{r.arg("eps")}},
                    {stats, stats});
  }
  if (r.isNone("running_mean") || r.isNone("running_var"))
    return r.fail("batch_norm without running statistics is not decomposed yet");
  r.finish("aten._native_batch_norm_legit_no_training.default",
           {TensorRef{r.arg("input")}, TensorRef{r.arg("weight")}, TensorRef{r.arg("bias")}, TensorRef{r.arg("running_mean")},
            TensorRef{r.arg("running_var")}, TensorRef{r.arg("momentum")}, TensorRef{r.arg("eps")}},
           {denseSpec(x.dtype, {0}), denseSpec(x.dtype, {0})});
}

/// layer_norm -> native_layer_norm(...)[0]; mean and rstd keep the leading
/// dimensions and a 1 for each normalized one.
void layerNorm(Rewrite& r) {
  const TensorSpec& x = r.tensor("input");
  auto shape = r.ints("normalized_shape");
  if (!shape || shape->size() > x.sizes.size()) return r.fail("normalized_shape is not a list of sizes of the input");
  const size_t lead = x.sizes.size() - shape->size();
  std::vector<int64_t> stats(x.sizes.begin(), x.sizes.begin() + static_cast<long>(lead));
  stats.resize(x.sizes.size(), 1);
  std::vector<std::string> symbols(x.symbols.begin(), x.symbols.begin() + static_cast<long>(std::min(lead, x.symbols.size())));
  r.finish("aten.native_layer_norm.default",
           {TensorRef{r.arg("input")}, TensorRef{r.arg("normalized_shape")}, TensorRef{r.arg("weight")},
            TensorRef{r.arg("bias")}, TensorRef{r.arg("eps")}},
           {denseSpec(x.dtype, stats, symbols), denseSpec(x.dtype, stats, symbols)});
}

/// group_norm -> native_group_norm(input, weight, bias, N, C, HxW, groups, eps)[0];
/// mean and rstd are [N, groups].
void groupNorm(Rewrite& r) {
  const TensorSpec x = r.tensor("input");
  if (x.sizes.size() < 2 || (x.symbols.size() > 1 && !x.symbols[1].empty()))
    return r.fail("group_norm on a tensor of fewer than 2 dimensions or symbolic channels is not decomposed yet");
  const int64_t groups = r.integer("num_groups").value_or(1);
  if (groups <= 0 || x.sizes[1] % groups) return r.fail("group_norm's channels do not divide into its groups");
  // N and HxW may be sizes computed at run time (a dynamic batch or image): spelled as torch traces them.
  const ValueId input = r.arg("input");
  SizeRef n = r.size(input, 0), hw{1};
  for (size_t d = 2; d < x.sizes.size(); ++d) hw = r.mul(hw, r.size(input, d));
  auto optional = [&](const char* name) { return r.isNone(name) ? BuildArg(None{}) : BuildArg(TensorRef{r.arg(name)}); };
  const TensorSpec stats = denseSpec(x.dtype, {x.sizes[0], groups}, n.isSymbolic() ? std::vector<std::string>{n.expression, ""}
                                                                                     : std::vector<std::string>{});
  r.finish("aten.native_group_norm.default",
           {TensorRef{input}, optional("weight"), optional("bias"), sizeArgument(n), x.sizes[1], sizeArgument(hw), groups,
            r.number("eps").value_or(1e-5)},
           {stats, stats});
}

/// instance_norm: the input viewed as one sample of N*C channels (weight, bias
/// and running statistics repeated per sample), batch-normalized, viewed back
/// (ATen's instance_norm). With its own statistics: _native_batch_norm_legit.no_stats;
/// with running statistics in evaluation (use_input_stats=False):
/// _native_batch_norm_legit_no_training, whose statistics results are empty.
void instanceNorm(Rewrite& r) {
  const TensorSpec x = r.tensor("input");
  const bool ownStatistics = r.integer("use_input_stats").value_or(1) != 0;
  const bool tracked = !r.isNone("running_mean") && !r.isNone("running_var");
  if (ownStatistics && tracked)
    return r.fail("instance_norm updating its running statistics (training mode) is not decomposed (export the model in eval())");
  if (!ownStatistics && !tracked)
    return r.fail("instance_norm without its input's statistics needs running_mean and running_var");
  if (x.sizes.size() < 2 || !x.symbols.empty() || !isContiguous(x))
    return r.fail("instance_norm on a non-contiguous, symbolic or less than 2-d input is not decomposed yet");
  const int64_t n = x.sizes[0], channels = n * x.sizes[1];
  auto repeated = [&](const char* name) {
    return r.isNone(name) ? BuildArg(None{}) : BuildArg(r.op("aten.repeat.default", {TensorRef{r.arg(name)}, std::vector<int64_t>{n}}));
  };
  BuildArg weight = repeated("weight"), bias = repeated("bias");
  BuildArg mean = tracked ? repeated("running_mean") : BuildArg(None{}), var = tracked ? repeated("running_var") : BuildArg(None{});
  std::vector<int64_t> folded = x.sizes;
  folded[0] = 1;
  folded[1] = channels;
  TensorRef v = r.op("aten.view.default", {TensorRef{r.arg("input")}, folded});
  const double momentum = r.number("momentum").value_or(0.1), eps = r.number("eps").value_or(1e-5);
  std::vector<TensorRef> outs;
  if (ownStatistics) {
    const TensorSpec stats = denseSpec(x.dtype, {channels});
    const std::vector<TensorSpec> specs{denseSpec(x.dtype, folded), stats, stats};
    outs = r.call("aten._native_batch_norm_legit.no_stats", {v, weight, bias, true, momentum, eps}, &specs);
  } else {
    const std::vector<TensorSpec> specs{denseSpec(x.dtype, folded), denseSpec(x.dtype, {0}), denseSpec(x.dtype, {0})};
    outs = r.call("aten._native_batch_norm_legit_no_training.default", {v, weight, bias, mean, var, momentum, eps}, &specs);
  }
  if (outs.empty()) return;
  r.finish("aten.view.default", {outs[0], x.sizes});
}

/// _weight_norm(v, g, dim) = v * (g / ||v||), the norm over every dimension but `dim`
/// (ATen's fused path, for dim 0 or the last, then torch's _weight_norm_interface
/// decomposition: the norm as linalg_vector_norm with keepdim, which ExecuTorch writes as
/// pow, sum, pow).
void weightNorm(Rewrite& r) {
  const TensorSpec v = r.tensor("v");
  const int64_t rank = static_cast<int64_t>(v.sizes.size());
  const int64_t dim = r.integer("dim").value_or(0);
  if (v.dtype != ScalarType::Float && v.dtype != ScalarType::Double)
    return r.fail("_weight_norm of a weight that is not float32 or float64 is not decomposed yet");
  if (rank == 0 || (dim != 0 && dim != rank - 1))
    return r.fail("_weight_norm along a dimension other than the first or the last is not decomposed yet");
  if (!isContiguous(v) || r.tensor("g").dtype != v.dtype)
    return r.fail("_weight_norm of a strided weight, or of a gain of another dtype, is not decomposed yet");
  std::vector<int64_t> others;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) others.push_back(d);
  if (others.empty()) return r.fail("_weight_norm of a 1-d weight is not decomposed yet");
  TensorRef squares = r.op("aten.pow.Tensor_Scalar", {TensorRef{r.arg("v")}, int64_t(2)});
  TensorRef sum = r.op("aten.sum.dim_IntList", {squares, others, true});
  TensorRef norm = r.op("aten.pow.Tensor_Scalar", {sum, 0.5});
  TensorRef scale = r.op("aten.div.Tensor", {TensorRef{r.arg("g")}, norm});
  r.finish("aten.mul.Tensor", {TensorRef{r.arg("v")}, scale});
}

}  // namespace

void registerNormalizationRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::batch_norm.default", batchNorm}, {"aten::layer_norm.default", layerNorm},
                     {"aten::group_norm.default", groupNorm},
                     {"aten::instance_norm.default", instanceNorm},
                     {"aten::_weight_norm.default", weightNorm}});
}

}  // namespace lstudio::decompositions
