// Vision operators (torch.nn.functional's pixel shuffles, upsampling and grid
// sampling, and nn.Unfold's im2col) as PyTorch's core ATen decompositions write them.
#include <array>

#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorRef argRef(Rewrite& r, const char* name) { return TensorRef{r.arg(name)}; }

bool hasSymbols(const TensorSpec& t) { return !t.symbols.empty(); }

/// pixel_shuffle(x, r) (up): [..., C*r*r, H, W] viewed as [..., C, r, r, H, W], permuted to
/// [..., C, H, r, W, r], reshaped to [..., C, H*r, W*r] and cloned (torch's reference);
/// pixel_unshuffle(x, r) (down) the other way: [..., C, H*r, W*r] viewed as
/// [..., C, H, r, W, r], permuted to [..., C, r, r, H, W], reshaped to [..., C*r*r, H, W].
void shufflePixels(Rewrite& r, bool up) {
  const char* op = up ? "pixel_shuffle" : "pixel_unshuffle";
  const TensorSpec x = r.tensor("self");
  const int64_t f = r.integer(up ? "upscale_factor" : "downscale_factor").value_or(1);
  const size_t n = x.sizes.size();
  auto symbolic = [&](size_t d) { return d < x.symbols.size() && !x.symbols[d].empty(); };
  if (n < 3 || symbolic(n - 3) || symbolic(n - 2) || symbolic(n - 1) || !isContiguous(x) || f <= 0 ||
      (up ? x.sizes[n - 3] % (f * f) != 0 : x.sizes[n - 2] % f != 0 || x.sizes[n - 1] % f != 0))
    return r.fail(std::string(op) + " of this input (fewer than 3 dimensions, symbolic channels or pixels, strided or " +
                  (up ? "channels not a multiple of the factor squared" : "pixels not a multiple of the factor") +
                  ") is not decomposed yet");
  // Batch dimensions may be dynamic: spelled as sym_size of the input.
  std::vector<SizeRef> batch = r.sizes(r.arg("self"), 0, n - 3), split = batch, out = batch;
  std::vector<int64_t> perm;
  for (size_t d = 0; d < batch.size(); ++d) perm.push_back(static_cast<int64_t>(d));
  const int64_t b = static_cast<int64_t>(batch.size());
  const int64_t h = x.sizes[n - 2], w = x.sizes[n - 1];
  if (up) {
    const int64_t c = x.sizes[n - 3] / (f * f);
    for (int64_t s : {c, f, f, h, w}) split.push_back(SizeRef{s});
    perm.insert(perm.end(), {b, b + 3, b + 1, b + 4, b + 2});
    for (int64_t s : {c, h * f, w * f}) out.push_back(SizeRef{s});
  } else {
    const int64_t c = x.sizes[n - 3];
    for (int64_t s : {c, h / f, f, w / f, f}) split.push_back(SizeRef{s});
    perm.insert(perm.end(), {b, b + 2, b + 4, b + 1, b + 3});
    for (int64_t s : {c * f * f, h / f, w / f}) out.push_back(SizeRef{s});
  }
  const std::vector<TensorSpec> splitSpec{Rewrite::contiguousSpec(x.dtype, split)};
  TensorRef v = r.op("aten.view.default", {argRef(r, "self"), split}, &splitSpec);
  TensorRef p = r.op("aten.permute.default", {v, perm});
  TensorRef shaped = reshape(r, p.id, out);
  r.finish("aten.clone.default", {shaped, int64_t(0)});  // contiguous_format: the input's
}
void pixelShuffle(Rewrite& r) { shufflePixels(r, true); }
void pixelUnshuffle(Rewrite& r) { shufflePixels(r, false); }

/// The output length and the scale factor (if given) of a 1-d upsample's .vec
/// form: output_size, or the input length times scale_factors[0] (torch's
/// upsample_compute_output_size). Fails the rewrite unless the input is a
/// static float32/float64 [N, C, L].
struct Upsample1d {
  int64_t in = 0, out = 0;
  std::optional<double> scale;
};
std::optional<Upsample1d> upsample1d(Rewrite& r, const char* op) {
  const TensorSpec x = r.tensor("input");
  if (x.sizes.size() != 3 || hasSymbols(x) || (x.dtype != ScalarType::Float && x.dtype != ScalarType::Double)) {
    r.fail(std::string(op) + " of an input that is not a static float [N, C, L] is not decomposed yet");
    return std::nullopt;
  }
  Upsample1d u;
  u.in = x.sizes[2];
  const ValueId factors = r.arg("scale_factors");
  const auto* f = factors >= 0 ? std::get_if<DoubleList>(&r.method().values[factors].payload) : nullptr;
  if (auto size = r.ints("output_size"); size && size->size() == 1 && !f) {
    u.out = (*size)[0];
  } else if (f && f->items.size() == 1 && r.isNone("output_size")) {
    u.scale = f->items[0];
    u.out = static_cast<int64_t>(static_cast<double>(u.in) * *u.scale);  // torch: input length * factor, truncated
  } else {
    r.fail(std::string(op) + " needs exactly one of output_size and scale_factors, one value each");
    return std::nullopt;
  }
  if (u.out <= 0) {
    r.fail(std::string(op) + " to an empty output");
    return std::nullopt;
  }
  return u;
}

/// upsample_nearest1d.vec, as torch's _upsample_nearest: input index =
/// int64((arange(out, float32) + 0.0) * (in / out, or 1 / scale)), then
/// index(input, [None, None, index]).
void upsampleNearest1d(Rewrite& r) {
  auto u = upsample1d(r, "upsample_nearest1d");
  if (!u) return;
  const double scale = u->scale && *u->scale > 0 ? static_cast<double>(u->in) / (static_cast<double>(u->in) * *u->scale)
                                                 : static_cast<double>(u->in) / static_cast<double>(u->out);
  const std::vector<TensorSpec> positions{denseSpec(ScalarType::Float, {u->out})};
  TensorRef i = r.op("aten.arange.start_step", {int64_t(0), u->out, int64_t(1), ScalarType::Float, None{}, "cpu", false}, &positions);
  TensorRef source = r.op("aten.mul.Tensor", {r.op("aten.add.Tensor", {i, 0.0}), scale});
  TensorRef index = r.op("aten._to_copy.default", {source, ScalarType::Long});
  r.finish("aten.index.Tensor", {argRef(r, "input"), std::vector<TensorRef>{TensorRef{kNoValue}, TensorRef{kNoValue}, index}});
}

/// upsample_linear1d.vec, as torch's _upsample_linear: source position
/// x = clamp(scale * (i + 0.5) - 0.5, min 0) (align_corners: scale * i) for i =
/// arange(out) as the input's dtype; the neighbours x0 = int64(x) and
/// x1 = min(x0 + 1, in - 1); result = v0 + (v1 - v0) * clamp(x - x0, 0, 1).
void upsampleLinear1d(Rewrite& r) {
  auto u = upsample1d(r, "upsample_linear1d");
  if (!u) return;
  const TensorSpec x = r.tensor("input");
  const bool corners = r.integer("align_corners").value_or(0) != 0;
  const double in = static_cast<double>(u->in), out = static_cast<double>(u->out);
  double scale = corners ? (u->out > 1 ? (in - 1.0) / (out - 1.0) : 0.0)
                         : (u->scale && *u->scale > 0 ? 1.0 / *u->scale : in / out);
  if (corners && u->out <= 1) return r.fail("upsample_linear1d with align_corners to a single output is not decomposed yet");
  const std::vector<TensorSpec> positions{denseSpec(ScalarType::Long, {u->out})};
  TensorRef i = r.op("aten.arange.start_step", {int64_t(0), u->out, int64_t(1), None{}, None{}, "cpu", false}, &positions);
  i = r.op("aten._to_copy.default", {i, x.dtype});
  TensorRef source = corners ? r.op("aten.mul.Tensor", {i, scale})
                             : r.op("aten.sub.Tensor", {r.op("aten.mul.Tensor", {r.op("aten.add.Tensor", {i, 0.5}), scale}), 0.5});
  source = r.op("aten.clamp.default", {source, 0.0});
  source = r.op("aten.view.default", {source, std::vector<int64_t>{u->out}});
  TensorRef x0 = r.op("aten._to_copy.default", {source, ScalarType::Long});
  TensorRef x1 = r.op("aten.clamp.default", {r.op("aten.add.Tensor", {x0, int64_t(1)}), None{}, u->in - 1});
  const std::vector<TensorSpec> picked{denseSpec(x.dtype, {x.sizes[0], x.sizes[1], u->out})};
  auto at = [&](TensorRef index) {
    return r.op("aten.index.Tensor", {argRef(r, "input"), std::vector<TensorRef>{TensorRef{kNoValue}, TensorRef{kNoValue}, index}},
                &picked);
  };
  TensorRef v0 = at(x0), v1 = at(x1);
  TensorRef weight = r.op("aten.clamp.default", {r.op("aten.sub.Tensor", {source, r.op("aten._to_copy.default", {x0, x.dtype})}), 0.0, 1.0});
  TensorRef step = r.op("aten.mul.Tensor", {r.op("aten.sub.Tensor", {v1, v0}), weight});
  r.finish("aten.add.Tensor", {v0, step});
}

/// The four cubic-convolution weights of fraction t (its shape: [W] or [H, 1]) for
/// upsample_bicubic2d: A = -0.75, computed for t and 1 - t, t + 1 and 2 - t stacked.
std::array<TensorRef, 4> cubicWeights(Rewrite& r, TensorRef t, ScalarType dt) {
  const TensorSpec ts = r.spec(t.id);
  const std::vector<TensorSpec> same{denseSpec(dt, ts.sizes)};
  auto stacked = [&](TensorRef a, TensorRef b) {
    std::vector<int64_t> sizes = ts.sizes;
    sizes.insert(sizes.begin(), 2);
    TensorRef c = r.op("aten.cat.default", {std::vector<TensorRef>{a, b}, int64_t(0)});
    return r.op("aten.view.default", {c, sizes});
  };
  TensorRef tt1 = stacked(t, r.op("aten.sub.Tensor", {1.0, t}, &same));
  TensorRef plus = r.op("aten.add.Tensor", {t, 1.0});
  TensorRef tt2 = stacked(plus, r.op("aten.sub.Tensor", {2.0, t}, &same));
  const double a = -0.75;
  TensorRef w03 = r.op("aten.mul.Tensor", {tt2, a});
  w03 = r.op("aten.sub.Tensor", {w03, 5 * a});
  w03 = r.op("aten.mul.Tensor", {w03, tt2});
  w03 = r.op("aten.add.Tensor", {w03, 8 * a});
  w03 = r.op("aten.mul.Tensor", {w03, tt2});
  w03 = r.op("aten.sub.Tensor", {w03, 4 * a});
  TensorRef w12 = r.op("aten.mul.Tensor", {tt1, a + 2});
  w12 = r.op("aten.sub.Tensor", {w12, a + 3});
  w12 = r.op("aten.mul.Tensor", {w12, tt1});
  w12 = r.op("aten.mul.Tensor", {w12, tt1});
  w12 = r.op("aten.add.Tensor", {w12, int64_t(1)});
  auto unbind = [&](TensorRef w) {  // split into its two rows, then squeezed
    TensorRef first = r.op("aten.slice.Tensor", {w, int64_t(0), int64_t(0), int64_t(1)});
    TensorRef second = r.op("aten.slice.Tensor", {w, int64_t(0), int64_t(1), int64_t(2)});
    return std::pair{r.op("aten.squeeze.dims", {first, std::vector<int64_t>{0}}),
                     r.op("aten.squeeze.dims", {second, std::vector<int64_t>{0}})};
  };
  auto [w0, w3] = unbind(w03);
  auto [w1, w2] = unbind(w12);
  return std::array<TensorRef, 4>{w0, w1, w2, w3};
}

/// upsample_bicubic2d.vec, as torch's upsample_bicubic2d (float inputs): per
/// output row and column the source position, its floor and fraction, the
/// four neighbours (floor - 1 .. floor + 2, clamped to the input) and their
/// cubic-convolution weights (A = -0.75, computed for t and 1 - t, t + 1 and
/// 2 - t stacked, as torch's CPU path does); each of the 4 x 4 neighbours
/// picked with index, summed along a row with the column weights, then the
/// rows with the row weights.
void upsampleBicubic2d(Rewrite& r) {
  const TensorSpec x = r.tensor("input");
  if (x.sizes.size() != 4 || hasSymbols(x) || (x.dtype != ScalarType::Float && x.dtype != ScalarType::Double))
    return r.fail("upsample_bicubic2d of an input that is not a static float [N, C, H, W] is not decomposed yet");
  const bool corners = r.integer("align_corners").value_or(0) != 0;
  const ValueId factors = r.arg("scale_factors");
  const auto* f = factors >= 0 ? std::get_if<DoubleList>(&r.method().values[factors].payload) : nullptr;
  int64_t out[2];
  std::optional<double> scales[2];
  if (auto size = r.ints("output_size"); size && size->size() == 2 && !f) {
    out[0] = (*size)[0], out[1] = (*size)[1];
  } else if (f && f->items.size() == 2 && r.isNone("output_size")) {
    for (int d = 0; d < 2; ++d) {
      scales[d] = f->items[d];
      out[d] = static_cast<int64_t>(static_cast<double>(x.sizes[2 + d]) * f->items[d]);
    }
  } else {
    return r.fail("upsample_bicubic2d needs exactly one of output_size and scale_factors, two values each");
  }
  if (out[0] <= 0 || out[1] <= 0) return r.fail("upsample_bicubic2d to an empty output");
  auto scaleOf = [&](int d) {
    const double in = static_cast<double>(x.sizes[2 + d]), o = static_cast<double>(out[d]);
    if (corners) return out[d] > 1 ? (in - 1.0) / (o - 1.0) : 0.0;
    return scales[d] && *scales[d] > 0 ? 1.0 / *scales[d] : in / o;
  };
  if (corners && (out[0] <= 1 || out[1] <= 1)) return r.fail("upsample_bicubic2d with align_corners to a single row or column is not decomposed yet");
  const ScalarType dt = x.dtype;
  auto positions = [&](int d) {
    const std::vector<TensorSpec> spec{denseSpec(ScalarType::Long, {out[d]})};
    TensorRef a = r.op("aten.arange.start_step", {int64_t(0), out[d], int64_t(1), None{}, None{}, "cpu", false}, &spec);
    return r.op("aten._to_copy.default", {a, dt});
  };
  auto source = [&](TensorRef i, double scale) {
    if (corners) return r.op("aten.mul.Tensor", {i, scale});
    return r.op("aten.sub.Tensor", {r.op("aten.mul.Tensor", {r.op("aten.add.Tensor", {i, 0.5}), scale}), 0.5});
  };
  TensorRef i = positions(0), j = positions(1);
  TensorRef xf = source(j, scaleOf(1));
  TensorRef yf = r.op("aten.unsqueeze.default", {source(i, scaleOf(0)), int64_t(-1)});
  auto floorOf = [&](TensorRef v) {
    const std::vector<TensorSpec> same{denseSpec(dt, r.spec(v.id).sizes)};
    return r.op("aten.floor.default", {v}, &same);
  };
  TensorRef xfl = floorOf(xf), yfl = floorOf(yf);
  TensorRef yscale = r.op("aten.clamp.default", {r.op("aten.sub.Tensor", {yf, yfl}), 0.0, 1.0});
  TensorRef xscale = r.op("aten.clamp.default", {r.op("aten.sub.Tensor", {xf, xfl}), 0.0, 1.0});
  TensorRef xi = r.op("aten._to_copy.default", {xfl, ScalarType::Long});
  TensorRef yi = r.op("aten._to_copy.default", {yfl, ScalarType::Long});
  auto offsets = [&](TensorRef v) {
    return std::array<TensorRef, 4>{r.op("aten.sub.Tensor", {v, int64_t(1)}), v, r.op("aten.add.Tensor", {v, int64_t(1)}),
                                    r.op("aten.add.Tensor", {v, int64_t(2)})};
  };
  const auto ys = offsets(yi), xs = offsets(xi);
  const auto wx = cubicWeights(r, xscale, dt), wy = cubicWeights(r, yscale, dt);
  const std::vector<TensorSpec> picked{denseSpec(dt, {x.sizes[0], x.sizes[1], out[0], out[1]})};
  auto weightedSum = [&](const std::array<TensorRef, 4>& values, const std::array<TensorRef, 4>& weights, bool last) {
    TensorRef sum = r.op("aten.mul.Tensor", {values[0], weights[0]});
    for (int k = 1; k < 4; ++k) {
      TensorRef term = r.op("aten.mul.Tensor", {values[k], weights[k]});
      if (last && k == 3) {
        r.finish("aten.add.Tensor", {sum, term});
        return sum;
      }
      sum = r.op("aten.add.Tensor", {sum, term});
    }
    return sum;
  };
  std::array<TensorRef, 4> rows;
  for (int k = 0; k < 4; ++k) {
    std::array<TensorRef, 4> taps;
    for (int c = 0; c < 4; ++c) {
      TensorRef yc = r.op("aten.clamp.default", {ys[k], int64_t(0), x.sizes[2] - 1});
      TensorRef xc = r.op("aten.clamp.default", {xs[c], int64_t(0), x.sizes[3] - 1});
      taps[c] = r.op("aten.index.Tensor", {argRef(r, "input"), std::vector<TensorRef>{TensorRef{kNoValue}, TensorRef{kNoValue}, yc, xc}},
                     &picked);
    }
    rows[k] = weightedSum(taps, wx, false);
  }
  weightedSum(rows, wy, true);
}

/// im2col(x, kernel_size, dilation, padding, stride) (nn.Unfold), as torch's
/// reference: per spatial dimension the indices of every block (arange of the
/// block starts plus arange of the dilated kernel offsets), the padded input
/// indexed at [rows, cols] -> [N, C, kh, Lh, kw, Lw], permuted to put the kernel
/// offsets together, reshaped to [N, C*kh*kw, Lh*Lw]. An unbatched input is
/// unsqueezed first and squeezed after.
void im2col(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  auto k = r.ints("kernel_size"), dil = r.ints("dilation"), pad = r.ints("padding"), st = r.ints("stride");
  const size_t rank = x.sizes.size();
  if (!k || !dil || !pad || !st || k->size() != 2 || dil->size() != 2 || pad->size() != 2 || st->size() != 2)
    return r.fail("im2col needs two kernel sizes, dilations, paddings and strides");
  if ((rank != 3 && rank != 4) || hasSymbols(x)) return r.fail("im2col of an input that is not 3-d or 4-d, or is dynamic, is not decomposed yet");
  int64_t blocks[2], kernel[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x.sizes[rank - 2 + i];
    if ((*k)[i] <= 0 || (*dil)[i] <= 0 || (*st)[i] <= 0 || (*pad)[i] < 0) return r.fail("im2col with a kernel, dilation or stride not positive");
    const int64_t span = in + 2 * (*pad)[i] - (*dil)[i] * ((*k)[i] - 1);
    if (span <= 0) return r.fail("im2col whose kernel is larger than the padded input");
    blocks[i] = (span - 1) / (*st)[i] + 1;
    kernel[i] = (*k)[i];
  }
  TensorRef in = argRef(r, "self");
  if (rank == 3) in = r.op("aten.unsqueeze.default", {in, int64_t(0)});
  const int64_t n = rank == 4 ? x.sizes[0] : 1, c = x.sizes[rank - 3];
  auto blockIndices = [&](int i) {
    const int64_t span = x.sizes[rank - 2 + i] + 2 * (*pad)[i] - (*dil)[i] * ((*k)[i] - 1);
    const std::vector<TensorSpec> starts{denseSpec(ScalarType::Long, {blocks[i]})};
    TensorRef b = r.op("aten.arange.start_step", {int64_t(0), span, (*st)[i], ScalarType::Long, None{}, "cpu", false}, &starts);
    b = r.op("aten.unsqueeze.default", {b, int64_t(0)});
    const std::vector<TensorSpec> offsets{denseSpec(ScalarType::Long, {kernel[i]})};
    TensorRef g = r.op("aten.arange.start_step", {int64_t(0), kernel[i] * (*dil)[i], (*dil)[i], ScalarType::Long, None{}, "cpu", false},
                       &offsets);
    g = r.op("aten.unsqueeze.default", {g, int64_t(-1)});
    return r.op("aten.add.Tensor", {b, g});
  };
  TensorRef rows = blockIndices(0), cols = blockIndices(1);
  const std::vector<TensorSpec> paddedSpec{
      denseSpec(x.dtype, {n, c, x.sizes[rank - 2] + 2 * (*pad)[0], x.sizes[rank - 1] + 2 * (*pad)[1]})};
  TensorRef padded = r.op("aten.constant_pad_nd.default",
                          {in, std::vector<int64_t>{(*pad)[1], (*pad)[1], (*pad)[0], (*pad)[0]}, 0.0}, &paddedSpec);
  rows = r.op("aten.unsqueeze.default", {r.op("aten.unsqueeze.default", {rows, int64_t(-1)}), int64_t(-1)});
  const std::vector<TensorSpec> picked{denseSpec(x.dtype, {n, c, kernel[0], blocks[0], kernel[1], blocks[1]})};
  TensorRef patches = r.op("aten.index.Tensor", {padded, std::vector<TensorRef>{TensorRef{kNoValue}, TensorRef{kNoValue}, rows, cols}}, &picked);
  TensorRef permuted = r.op("aten.permute.default", {patches, std::vector<int64_t>{0, 1, 2, 4, 3, 5}});
  TensorRef out = reshape(r, permuted.id, std::vector<int64_t>{n, c * kernel[0] * kernel[1], blocks[0] * blocks[1]});
  if (rank == 3) return r.finish("aten.squeeze.dims", {out, std::vector<int64_t>{0}});
  r.resultIs(out.id);
}

/// col2im(x, output_size, kernel_size, dilation, padding, stride) (nn.Fold), as torch's
/// reference writes it (im2col's adjoint): x viewed as [N, C, kh, kw, Lh, Lw] and permuted to
/// [N, C, kh, Lh, kw, Lw], added with accumulate=True into zeros of the padded output at the
/// same block indices im2col reads, the padding cut off by a negative pad. An unbatched input is
/// unsqueezed first and squeezed after. (Core ATen by tag, but to_edge's table decomposes it, and
/// ExecuTorch has no kernel for it.)
void col2im(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  auto out = r.ints("output_size"), k = r.ints("kernel_size"), dil = r.ints("dilation"), pad = r.ints("padding"),
       st = r.ints("stride");
  const size_t rank = x.sizes.size();
  if (!out || !k || !dil || !pad || !st || out->size() != 2 || k->size() != 2 || dil->size() != 2 || pad->size() != 2 ||
      st->size() != 2)
    return r.fail("col2im needs two output sizes, kernel sizes, dilations, paddings and strides");
  if ((rank != 2 && rank != 3) || hasSymbols(x)) return r.fail("col2im of an input that is not 2-d or 3-d, or is dynamic, is not decomposed yet");
  int64_t blocks[2];
  for (int i = 0; i < 2; ++i) {
    if ((*k)[i] <= 0 || (*dil)[i] <= 0 || (*st)[i] <= 0 || (*pad)[i] < 0 || (*out)[i] <= 0)
      return r.fail("col2im with a size, kernel, dilation or stride not positive");
    blocks[i] = 1 + ((*out)[i] + 2 * (*pad)[i] - (*dil)[i] * ((*k)[i] - 1) - 1) / (*st)[i];
  }
  const int64_t kernel = (*k)[0] * (*k)[1];
  const int64_t n = rank == 3 ? x.sizes[0] : 1, rows = x.sizes[rank - 2];
  if (rows % kernel != 0 || blocks[0] <= 0 || blocks[1] <= 0 || x.sizes[rank - 1] != blocks[0] * blocks[1])
    return r.fail("col2im whose input does not hold one column per block of the output");
  const int64_t c = rows / kernel;
  TensorRef in = argRef(r, "self");
  if (rank == 2) in = r.op("aten.unsqueeze.default", {in, int64_t(0)});
  in = reshape(r, in.id, std::vector<int64_t>{n, c, (*k)[0], (*k)[1], blocks[0], blocks[1]});
  in = r.op("aten.permute.default", {in, std::vector<int64_t>{0, 1, 2, 4, 3, 5}});
  auto blockIndices = [&](int i) {
    const int64_t span = (*out)[i] + 2 * (*pad)[i] - (*dil)[i] * ((*k)[i] - 1);
    const std::vector<TensorSpec> starts{denseSpec(ScalarType::Long, {(span - 1) / (*st)[i] + 1})};
    TensorRef b = r.op("aten.arange.start_step", {int64_t(0), span, (*st)[i], ScalarType::Long, None{}, "cpu", false}, &starts);
    b = r.op("aten.unsqueeze.default", {b, int64_t(0)});
    const std::vector<TensorSpec> offsets{denseSpec(ScalarType::Long, {(*k)[i]})};
    TensorRef g = r.op("aten.arange.start_step", {int64_t(0), (*k)[i] * (*dil)[i], (*dil)[i], ScalarType::Long, None{}, "cpu", false},
                       &offsets);
    g = r.op("aten.unsqueeze.default", {g, int64_t(-1)});
    return r.op("aten.add.Tensor", {b, g});
  };
  TensorRef rowIdx = blockIndices(0);
  rowIdx = r.op("aten.unsqueeze.default", {r.op("aten.unsqueeze.default", {rowIdx, int64_t(-1)}), int64_t(-1)});
  TensorRef colIdx = blockIndices(1);
  const std::vector<int64_t> padded{n, c, (*out)[0] + 2 * (*pad)[0], (*out)[1] + 2 * (*pad)[1]};
  TensorRef zeros = r.op("aten.full.default", {padded, int64_t(0), x.dtype, int64_t(0), "cpu", false});
  TensorRef sum = r.op("aten.index_put.default",
                       {zeros, std::vector<TensorRef>{TensorRef{kNoValue}, TensorRef{kNoValue}, rowIdx, colIdx}, in, true});
  const std::vector<int64_t> cut{-(*pad)[1], -(*pad)[1], -(*pad)[0], -(*pad)[0]};
  if (rank == 3) return r.finish("aten.constant_pad_nd.default", {sum, cut, 0.0});
  const std::vector<TensorSpec> cutSpec{denseSpec(x.dtype, {n, c, (*out)[0], (*out)[1]})};
  TensorRef result = r.op("aten.constant_pad_nd.default", {sum, cut, 0.0}, &cutSpec);
  r.finish("aten.squeeze.dims", {result, std::vector<int64_t>{0}});
}

/// grid_sampler on a 4-d input is grid_sampler_2d (same arguments).
void gridSampler(Rewrite& r) {
  if (r.tensor("input").sizes.size() != 4) return r.fail("grid_sampler of a 5-d input (grid_sampler_3d) is not decomposed yet");
  r.retarget("torch.ops.aten.grid_sampler_2d.default");
}
}  // namespace

void registerVisionRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::pixel_shuffle.default", pixelShuffle},
                     {"aten::pixel_unshuffle.default", pixelUnshuffle},
                     {"aten::im2col.default", im2col},
                     {"aten::col2im.default", col2im},
                     {"aten::upsample_nearest1d.vec", upsampleNearest1d},
                     {"aten::upsample_linear1d.vec", upsampleLinear1d},
                     {"aten::upsample_bicubic2d.vec", upsampleBicubic2d},
                     {"aten::grid_sampler.default", gridSampler}});
}

}  // namespace lstudio::decompositions
