// Convolutions and pooling as PyTorch's core ATen decompositions write them:
// one convolution operator for every kind, 1-d pooling as 2-d pooling over an
// added dimension, adaptive pooling to 1x1 as a mean.
#include <algorithm>

#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorRef argRef(Rewrite& r, const char* name) { return TensorRef{r.arg(name)}; }

/// conv1d/2d/3d -> convolution(..., transposed=False, output_padding=0..., groups)
void conv(Rewrite& r) {
  size_t rank = r.tensor("weight").sizes.size();
  if (rank < 3) return r.fail("a convolution weight needs at least 3 dimensions");
  size_t spatial = rank - 2;
  r.finish("aten.convolution.default",
           {argRef(r, "input"), argRef(r, "weight"), argRef(r, "bias"), argRef(r, "stride"), argRef(r, "padding"),
            argRef(r, "dilation"), false, std::vector<int64_t>(spatial, 0), argRef(r, "groups")});
}

/// conv1d/2d/3d with padding "valid" or "same" -> convolution, as ATen's _convolution_mode
/// writes it: "valid" pads [0]; "same" pads each side by half of dilation * (kernel - 1), and
/// where that total is odd the input first gets the extra element on the right
/// (constant_pad_nd, its pad list from the last dimension to the first).
void convPadding(Rewrite& r) {
  const TensorSpec w = r.tensor("weight"), x = r.tensor("input");
  if (w.sizes.size() < 3) return r.fail("a convolution weight needs at least 3 dimensions");
  const size_t spatial = w.sizes.size() - 2;
  const ValueId mode = r.arg("padding");
  const auto* text = mode >= 0 ? std::get_if<std::string>(&r.method().values[mode].payload) : nullptr;
  const std::string padding = text ? *text : "valid";
  if (padding == "valid")
    return r.finish("aten.convolution.default",
                    {argRef(r, "input"), argRef(r, "weight"), argRef(r, "bias"), argRef(r, "stride"),
                     std::vector<int64_t>{0}, argRef(r, "dilation"), false, std::vector<int64_t>{0}, argRef(r, "groups")});
  if (padding != "same") return r.fail("a convolution's padding string must be 'valid' or 'same', not '" + padding + "'");
  auto perDim = [&](const char* name) {
    std::vector<int64_t> v = r.ints(name).value_or(std::vector<int64_t>{1});
    if (v.size() == 1) v.assign(spatial, v[0]);
    return v;
  };
  const std::vector<int64_t> stride = perDim("stride"), dilation = perDim("dilation");
  if (stride.size() != spatial || dilation.size() != spatial || x.sizes.size() != spatial + 2 ||
      std::any_of(x.symbols.begin(), x.symbols.end(), [](const std::string& s) { return !s.empty(); }))
    return r.fail("padding='same' needs static sizes and one stride and dilation per spatial dimension");
  if (std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s != 1; }))
    return r.fail("padding='same' is not supported for strided convolutions");
  std::vector<int64_t> left(spatial), pad(2 * spatial, 0), padded = x.sizes;
  bool extra = false;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t total = dilation[i] * (w.sizes[2 + i] - 1);
    left[i] = total / 2;
    if (const int64_t delta = total - 2 * left[i]; delta > 0) {
      pad[2 * (spatial - 1 - i) + 1] = delta;
      padded[2 + i] += delta;
      extra = true;
    }
  }
  TensorRef in = argRef(r, "input");
  if (extra) {
    const std::vector<TensorSpec> spec{denseSpec(x.dtype, padded)};
    in = r.op("aten.constant_pad_nd.default", {in, pad, 0.0}, &spec);
  }
  r.finish("aten.convolution.default", {in, argRef(r, "weight"), argRef(r, "bias"), argRef(r, "stride"), left,
                                        argRef(r, "dilation"), false, std::vector<int64_t>(spatial, 0), argRef(r, "groups")});
}

/// conv_transpose1d/2d/3d -> convolution(..., transposed=True, output_padding, groups)
void convTranspose(Rewrite& r) {
  r.finish("aten.convolution.default",
           {argRef(r, "input"), argRef(r, "weight"), argRef(r, "bias"), argRef(r, "stride"), argRef(r, "padding"),
            argRef(r, "dilation"), true, argRef(r, "output_padding"), argRef(r, "groups")});
}

/// max_pool2d -> max_pool2d_with_indices(...)[0]
void maxPool2d(Rewrite& r) {
  const TensorSpec& y = r.resultSpec();
  r.finish("aten.max_pool2d_with_indices.default",
           {argRef(r, "self"), argRef(r, "kernel_size"), argRef(r, "stride"), argRef(r, "padding"), argRef(r, "dilation"),
            argRef(r, "ceil_mode")},
           {denseSpec(ScalarType::Long, y.sizes, y.symbols)});
}

/// The 4-d form of a 1-d pooling's result: a 1 before the last dimension.
std::vector<TensorSpec> as2d(const TensorSpec& y, bool withIndices) {
  std::vector<int64_t> s = y.sizes;
  s.insert(s.end() - 1, 1);
  std::vector<std::string> symbols = y.symbols;
  if (!symbols.empty()) symbols.insert(symbols.end() - 1, "");
  std::vector<TensorSpec> out{denseSpec(y.dtype, s, symbols)};
  if (withIndices) out.push_back(denseSpec(ScalarType::Long, s, symbols));
  return out;
}

/// A 1-d list argument as its 2-d form: {first, x}; an empty list stays empty.
std::vector<int64_t> lifted(std::optional<std::vector<int64_t>> v, int64_t first) {
  if (!v || v->empty()) return {};
  return {first, v->front()};
}

/// A 1-d pooling's window in 2-d form: kernel {1, k} and stride {1, s}
/// (the stride is the kernel when none is given).
std::pair<std::vector<int64_t>, std::vector<int64_t>> window2d(Rewrite& r) {
  auto kernel = lifted(r.ints("kernel_size"), 1);
  auto stride = lifted(r.ints("stride"), 1);
  if (stride.empty()) stride = kernel;
  return {kernel, stride};
}

/// max_pool1d -> unsqueeze(-2), max_pool2d_with_indices, squeeze(-2)
void maxPool1d(Rewrite& r) {
  auto [kernel, stride] = window2d(r);
  TensorRef x = r.op("aten.unsqueeze.default", {argRef(r, "self"), int64_t(-2)});
  auto specs = as2d(r.resultSpec(), true);
  auto pooled = r.call("aten.max_pool2d_with_indices.default",
                       {x, kernel, stride, lifted(r.ints("padding"), 0), lifted(r.ints("dilation"), 1), argRef(r, "ceil_mode")},
                       &specs);
  if (pooled.empty()) return;
  r.finish("aten.squeeze.dims", {pooled[0], std::vector<int64_t>{-2}});
}

/// avg_pool1d -> unsqueeze(-2), avg_pool2d, squeeze(-2)
void avgPool1d(Rewrite& r) {
  auto [kernel, stride] = window2d(r);
  TensorRef x = r.op("aten.unsqueeze.default", {argRef(r, "self"), int64_t(-2)});
  auto specs = as2d(r.resultSpec(), false);
  TensorRef pooled = r.op("aten.avg_pool2d.default",
                          {x, kernel, stride, lifted(r.ints("padding"), 0), argRef(r, "ceil_mode"), argRef(r, "count_include_pad")},
                          &specs);
  r.finish("aten.squeeze.dims", {pooled, std::vector<int64_t>{-2}});
}

/// adaptive_avg_pool1d -> unsqueeze(-2), adaptive_avg_pool2d([1, n]), squeeze(-2); to size 1 that
/// pooling is ATen's mean over the last two dimensions, as adaptive_avg_pool2d's rule below.
void adaptiveAvgPool1d(Rewrite& r) {
  TensorRef x = r.op("aten.unsqueeze.default", {argRef(r, "self"), int64_t(-2)});
  auto specs = as2d(r.resultSpec(), false);
  auto size = r.ints("output_size");
  TensorRef pooled = size && size->size() == 1 && (*size)[0] == 1
                         ? r.op("aten.mean.dim", {x, std::vector<int64_t>{-1, -2}, true}, &specs)
                         : r.op("aten._adaptive_avg_pool2d.default", {x, lifted(r.ints("output_size"), 1)}, &specs);
  r.finish("aten.squeeze.dims", {pooled, std::vector<int64_t>{-2}});
}

/// Whether torch's suggest_memory_format calls a 4-d tensor channels-last (its strides
/// ordered C, W, H, N from the innermost). The studio's strides of a size-1 dimension can
/// differ from torch's, so a channels-last dim order counts too.
bool stridesLikeChannelsLast(const TensorSpec& t) {
  if (t.sizes.size() != 4) return false;
  if (t.dimOrder == std::vector<uint8_t>{0, 2, 3, 1}) return true;
  const std::vector<int64_t> st = stridesOf(t);
  if (st[1] == 0) return false;
  int64_t min = 0;
  for (size_t d : {1, 3, 2, 0}) {
    if (t.sizes[d] == 0 || st[d] < min) return false;
    if (d == 0 && min == st[1]) return false;
    min = st[d];
    if (st[d] > 1) min *= t.sizes[d];
  }
  return true;
}

/// adaptive_avg_pool2d: to 1x1 it is a mean over the last two dimensions (ATen's shortcut,
/// which gives a channels-last input's result channels-last strides by as_strided_), else
/// _adaptive_avg_pool2d.
void adaptiveAvgPool2d(Rewrite& r) {
  auto size = r.ints("output_size");
  const TensorSpec x = r.tensor("self");
  if (size && size->size() == 2 && (*size)[0] == 1 && (*size)[1] == 1) {
    if (!stridesLikeChannelsLast(x) || !x.symbols.empty())
      return r.finish("aten.mean.dim", {argRef(r, "self"), std::vector<int64_t>{-1, -2}, true});
    TensorRef mean = r.op("aten.mean.dim", {argRef(r, "self"), std::vector<int64_t>{-1, -2}, true});
    const int64_t n = x.sizes[0], c = x.sizes[1];
    return r.finish("aten.as_strided.default", {mean, std::vector<int64_t>{n, c, 1, 1}, std::vector<int64_t>{c, 1, c, c}});
  }
  r.finish("aten._adaptive_avg_pool2d.default", {argRef(r, "self"), argRef(r, "output_size")});
}

/// adaptive_avg_pool3d: to 1x1x1 a mean over the last three dimensions (ATen's shortcut),
/// else _adaptive_avg_pool3d. An input laid out channels-last-3d would get ATen's as_strided_
/// too: not written yet, so it fails naming why.
void adaptiveAvgPool3d(Rewrite& r) {
  auto size = r.ints("output_size");
  const TensorSpec x = r.tensor("self");
  if (size && size->size() == 3 && (*size)[0] == 1 && (*size)[1] == 1 && (*size)[2] == 1) {
    if (x.dimOrder == std::vector<uint8_t>{0, 2, 3, 4, 1})
      return r.fail("adaptive_avg_pool3d to 1x1x1 of a channels-last-3d input is not decomposed yet");
    return r.finish("aten.mean.dim", {argRef(r, "self"), std::vector<int64_t>{-1, -2, -3}, true});
  }
  r.finish("aten._adaptive_avg_pool3d.default", {argRef(r, "self"), argRef(r, "output_size")});
}

}  // namespace

void registerConvolutionRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::conv1d.default", conv},
                     {"aten::conv2d.default", conv},
                     {"aten::conv3d.default", conv},
                     {"aten::conv1d.padding", convPadding},
                     {"aten::conv2d.padding", convPadding},
                     {"aten::conv3d.padding", convPadding},
                     {"aten::conv_transpose1d.default", convTranspose},
                     {"aten::conv_transpose2d.input", convTranspose},
                     {"aten::conv_transpose3d.input", convTranspose},
                     {"aten::max_pool2d.default", maxPool2d},
                     {"aten::max_pool1d.default", maxPool1d},
                     {"aten::avg_pool1d.default", avgPool1d},
                     {"aten::adaptive_avg_pool1d.default", adaptiveAvgPool1d},
                     {"aten::adaptive_avg_pool2d.default", adaptiveAvgPool2d},
                     {"aten::adaptive_avg_pool3d.default", adaptiveAvgPool3d}});
}

}  // namespace lstudio::decompositions
