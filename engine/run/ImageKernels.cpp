// Image kernels: 2-D pooling, nearest and bilinear upsampling, grid sampling.
// Semantics after ExecuTorch's portable kernels (kernels/portable/cpu/).
#include <algorithm>
#include <limits>
#include <string>

#include "engine/run/KernelSupport.h"

namespace lstudio::run::kernels {

namespace {

/// A 2-D pooling parameter (kernel_size, stride, padding, dilation): one value for both
/// dimensions, or two; `fallback` when the list is empty (a stride defaults to the kernel).
std::pair<int64_t, int64_t> pooling2d(KernelContext& c, ValueId v, std::pair<int64_t, int64_t> fallback) {
  std::vector<int64_t> xs = c.ints(v);
  if (xs.empty()) return fallback;
  return {xs[0], xs.size() > 1 ? xs[1] : xs[0]};
}

/// Pooling parameters past this are refused: none is real, and below it the index
/// arithmetic cannot overflow int64.
constexpr int64_t kMaxPoolingParameter = std::numeric_limits<int32_t>::max();

/// The kernel taps [first, last) of one pooling window whose positions start + k * dilation
/// fall inside [0, length): a window over padding costs nothing, so a huge kernel over a
/// small input (which the padding rule allows) stays cheap.
std::pair<int64_t, int64_t> tapsInside(int64_t start, int64_t kernel, int64_t dilation, int64_t length) {
  int64_t first = start < 0 ? (-start + dilation - 1) / dilation : 0;
  int64_t last = start >= length ? 0 : std::min(kernel, (length - 1 - start) / dilation + 1);
  return {std::min(first, last), last};
}

/// Upstream's pooling checks (kernel_ops_util): padding at most half the kernel, and an
/// output of at least one element each way.
bool poolingShapeValid(KernelContext& c, const std::string& op, std::pair<int64_t, int64_t> kernel,
                       std::pair<int64_t, int64_t> padding, int64_t OH, int64_t OW) {
  if (padding.first > kernel.first / 2 || padding.second > kernel.second / 2)
    return c.fail(op + " padding (" + std::to_string(padding.first) + ", " + std::to_string(padding.second) +
                  ") is more than half the kernel size (" + std::to_string(kernel.first) + ", " +
                  std::to_string(kernel.second) + ")");
  if (OH <= 0 || OW <= 0)
    return c.fail(op + " output size " + std::to_string(OH) + "x" + std::to_string(OW) + " is too small");
  return true;
}

bool maxPool2dWithIndices(KernelContext& c, const Args& a) {
  // (self, kernel_size, stride, padding, dilation, ceil_mode, out, indices)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[6]), &indices = c.tensor(a[7]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() < 3) return c.fail("max_pool2d input rank");
  auto [KH, KW] = pooling2d(c, a[1], {1, 1});
  auto [sH, sW] = pooling2d(c, a[2], {KH, KW});
  auto [pH, pW] = pooling2d(c, a[3], {0, 0});
  auto [dH, dW] = pooling2d(c, a[4], {1, 1});
  bool ceil = c.integer(a[5]) != 0;
  size_t r = in.sizes.size();
  int64_t H = in.sizes[r - 2], W = in.sizes[r - 1];
  if (KH <= 0 || KW <= 0 || sH <= 0 || sW <= 0 || dH <= 0 || dW <= 0 || pH < 0 || pW < 0 || H <= 0 || W <= 0 ||
      std::max({KH, KW, sH, sW, pH, pW, dH, dW}) > kMaxPoolingParameter)
    return c.fail("max_pool2d kernel, stride, padding or dilation out of range");
  auto outLen = [&](int64_t L, int64_t k, int64_t s, int64_t p, int64_t d) {
    int64_t num = L + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int64_t o = num / s + 1;
    if (ceil && (o - 1) * s >= L + p) --o;
    return o;
  };
  int64_t OH = outLen(H, KH, sH, pH, dH), OW = outLen(W, KW, sW, pW, dW);
  if (!poolingShapeValid(c, "max_pool2d", {KH, KW}, {pH, pW}, OH, OW)) return false;
  std::vector<int64_t> sizes = pooledSizes(in.sizes, OH, OW);
  if (!c.resize(out, sizes) || !c.resize(indices, sizes)) return false;
  if (!c.allowWork(out.numel() * static_cast<uint64_t>(std::min(KH, H) * std::min(KW, W)))) return false;
  int64_t planes = static_cast<int64_t>(in.numel()) / (H * W);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t bestAt = -1;
        auto [kh0, kh1] = tapsInside(oh * sH - pH, KH, dH, H);
        auto [kw0, kw1] = tapsInside(ow * sW - pW, KW, dW, W);
        for (int64_t kh = kh0; kh < kh1; ++kh)
          for (int64_t kw = kw0; kw < kw1; ++kw) {
            int64_t ih = oh * sH - pH + kh * dH, iw = ow * sW - pW + kw * dW;
            float x = loadAs<float>(in, static_cast<uint64_t>((p * H + ih) * W + iw));
            if (x > best || std::isnan(x) || bestAt < 0) {
              best = x;
              bestAt = ih * W + iw;
              if (std::isnan(x)) break;
            }
          }
        uint64_t at = static_cast<uint64_t>((p * OH + oh) * OW + ow);
        storeAs<float>(out, at, best);
        storeAs<int64_t>(indices, at, bestAt);
      }
  return true;
}

bool adaptiveAvgPool2d(KernelContext& c, const Args& a) {  // (self, output_size, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
  std::vector<int64_t> os = c.ints(a[1]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() < 3 || os.size() != 2) return c.fail("adaptive_avg_pool2d shapes");
  size_t r = in.sizes.size();
  int64_t H = in.sizes[r - 2], W = in.sizes[r - 1], OH = os[0], OW = os[1];
  if (OH <= 0 || OW <= 0) return c.fail("adaptive_avg_pool2d output size must be positive");
  std::vector<int64_t> sizes = pooledSizes(in.sizes, OH, OW);
  if (!c.resize(out, sizes)) return false;
  int64_t planes = static_cast<int64_t>(in.numel()) / std::max<int64_t>(H * W, 1);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
        float sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += loadAs<float>(in, static_cast<uint64_t>((p * H + ih) * W + iw));
        storeAs<float>(out, static_cast<uint64_t>((p * OH + oh) * OW + ow),
                       sum / static_cast<float>((h1 - h0) * (w1 - w0)));
      }
  return true;
}

bool avgPool2d(KernelContext& c, const Args& a) {
  // (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override?, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[7]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() < 3) return c.fail("avg_pool2d input rank");
  auto [KH, KW] = pooling2d(c, a[1], {1, 1});
  std::pair<int64_t, int64_t> stride = pooling2d(c, a[2], {KH, KW});
  auto [pH, pW] = pooling2d(c, a[3], {0, 0});
  bool ceil = c.integer(a[4]) != 0, includePad = c.integer(a[5]) != 0;
  int64_t divisor = c.isNone(a[6]) ? 0 : c.integer(a[6]);
  int64_t sH = stride.first, sW = stride.second;
  size_t r = in.sizes.size();
  int64_t H = in.sizes[r - 2], W = in.sizes[r - 1];
  if (KH <= 0 || KW <= 0 || sH <= 0 || sW <= 0 || pH < 0 || pW < 0 || H <= 0 || W <= 0 ||
      std::max({KH, KW, sH, sW, pH, pW}) > kMaxPoolingParameter)
    return c.fail("avg_pool2d kernel, stride or padding out of range");
  auto outLen = [&](int64_t L, int64_t k, int64_t s, int64_t p) {
    int64_t o = (L + 2 * p - k + (ceil ? s - 1 : 0)) / s + 1;
    if (ceil && (o - 1) * s >= L + p) --o;
    return o;
  };
  int64_t OH = outLen(H, KH, sH, pH), OW = outLen(W, KW, sW, pW);
  if (!poolingShapeValid(c, "avg_pool2d", {KH, KW}, {pH, pW}, OH, OW)) return false;
  std::vector<int64_t> sizes = pooledSizes(in.sizes, OH, OW);
  if (!c.resize(out, sizes)) return false;
  if (!c.allowWork(out.numel() * static_cast<uint64_t>(std::min(KH, H) * std::min(KW, W)))) return false;
  int64_t planes = static_cast<int64_t>(in.numel()) / std::max<int64_t>(H * W, 1);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * sH - pH, w0 = ow * sW - pW;
        int64_t h1 = std::min(h0 + KH, H + pH), w1 = std::min(w0 + KW, W + pW);
        int64_t poolSize = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, H), w1 = std::min(w1, W);
        float sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += loadAs<float>(in, static_cast<uint64_t>((p * H + ih) * W + iw));
        int64_t div = divisor ? divisor : (includePad ? poolSize : (h1 - h0) * (w1 - w0));
        storeAs<float>(out, static_cast<uint64_t>((p * OH + oh) * OW + ow), div ? sum / static_cast<float>(div) : 0.0f);
      }
  return true;
}

/// A resampled image's size: `outputSize` when given, else the input's times the scale
/// factors (which come back in fh, fw; 0 when the size was given).
bool resampledSize(KernelContext& c, const RunTensor& in, ValueId outputSize, ValueId scales, const std::string& op,
                   int64_t& OH, int64_t& OW, double& fh, double& fw) {
  fh = fw = 0;
  if (!c.isNone(outputSize)) {
    std::vector<int64_t> os = c.ints(outputSize);
    if (os.size() != 2) return c.fail(op + " output_size");
    OH = os[0], OW = os[1];
  } else {
    const RunValue& f = c.value(scales);
    if (f.doubles.size() != 2) return c.fail(op + " scale_factors");
    fh = f.doubles[0], fw = f.doubles[1];
    OH = integerFrom<int64_t>(std::floor(static_cast<double>(in.sizes[2]) * fh));
    OW = integerFrom<int64_t>(std::floor(static_cast<double>(in.sizes[3]) * fw));
  }
  if (OH < 0 || OW < 0) return c.fail(op + " output size is negative");
  if ((in.sizes[2] <= 0 || in.sizes[3] <= 0) && OH && OW) return c.fail(op + " of an empty image");
  return true;
}

/// The input row or column a resampling source coordinate falls in, kept inside the image
/// (NaN or a coordinate past the edge from extreme scale factors reads the edge).
int64_t inputIndex(float coordinate, int64_t size) {
  return std::clamp<int64_t>(integerFrom<int64_t>(coordinate), 0, size - 1);
}

bool upsampleNearest2d(KernelContext& c, const Args& a) {  // (input, output_size?, scale_factors?, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[3]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() != 4) return c.fail("upsample_nearest2d input rank");
  int64_t H = in.sizes[2], W = in.sizes[3], OH, OW;
  double fh, fw;
  if (!resampledSize(c, in, a[1], a[2], "upsample_nearest2d", OH, OW, fh, fw)) return false;
  if (!c.resize(out, {in.sizes[0], in.sizes[1], OH, OW})) return false;
  // As ATen's nearest: source = floor(dst * scale), scale = 1/factor when given, else in/out.
  float sh = fh > 0 ? static_cast<float>(1.0 / fh) : static_cast<float>(H) / static_cast<float>(OH);
  float sw = fw > 0 ? static_cast<float>(1.0 / fw) : static_cast<float>(W) / static_cast<float>(OW);
  uint32_t es = elementSize(in.dtype);
  int64_t planes = in.sizes[0] * in.sizes[1];
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t ih = inputIndex(std::floor(static_cast<float>(oh) * sh), H);
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t iw = inputIndex(std::floor(static_cast<float>(ow) * sw), W);
        std::memcpy(out.data + static_cast<uint64_t>((p * OH + oh) * OW + ow) * es,
                    in.data + static_cast<uint64_t>((p * H + ih) * W + iw) * es, es);
      }
    }
  return true;
}

/// upsample_bilinear2d.vec (input, output_size?, align_corners, scale_factors?, out): each
/// output pixel mixes the four nearest inputs, as ATen's area-pixel source index places it.
bool upsampleBilinear2d(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[4]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() != 4) return c.fail("upsample_bilinear2d input rank");
  bool alignCorners = c.integer(a[2]) != 0;
  int64_t H = in.sizes[2], W = in.sizes[3], OH, OW;
  double fh, fw;
  if (!resampledSize(c, in, a[1], a[3], "upsample_bilinear2d", OH, OW, fh, fw)) return false;
  if (c.isNone(a[1]) && (!(fh > 0) || !(fw > 0))) return c.fail("upsample_bilinear2d scale_factors");
  if (!c.resize(out, {in.sizes[0], in.sizes[1], OH, OW})) return false;
  // The scale from output to input coordinates, and the source coordinate of an output index.
  auto scale = [&](int64_t inSize, int64_t outSize, double factor) -> float {
    if (alignCorners) return outSize > 1 ? static_cast<float>(inSize - 1) / static_cast<float>(outSize - 1) : 0.0f;
    return factor > 0 ? static_cast<float>(1.0 / factor) : static_cast<float>(inSize) / static_cast<float>(outSize);
  };
  auto source = [&](int64_t dst, float sc) -> float {
    if (alignCorners) return static_cast<float>(dst) * sc;
    float s = (static_cast<float>(dst) + 0.5f) * sc - 0.5f;
    return s < 0 ? 0.0f : s;
  };
  float sh = scale(H, OH, fh), sw = scale(W, OW, fw);
  int64_t planes = in.sizes[0] * in.sizes[1];
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh) {
      float y = source(oh, sh);
      int64_t h0 = inputIndex(y, H), h1 = std::min(h0 + 1, H - 1);
      float lh = y - static_cast<float>(h0), lh0 = 1.0f - lh;
      for (int64_t ow = 0; ow < OW; ++ow) {
        float x = source(ow, sw);
        int64_t w0 = inputIndex(x, W), w1 = std::min(w0 + 1, W - 1);
        float lw = x - static_cast<float>(w0), lw0 = 1.0f - lw;
        auto at = [&](int64_t h, int64_t w) { return loadAs<float>(in, static_cast<uint64_t>((p * H + h) * W + w)); };
        float v = lh0 * (lw0 * at(h0, w0) + lw * at(h0, w1)) + lh * (lw0 * at(h1, w0) + lw * at(h1, w1));
        storeAs<float>(out, static_cast<uint64_t>((p * OH + oh) * OW + ow), v);
      }
    }
  return true;
}

/// grid_sampler_2d (input, grid, interpolation_mode, padding_mode, align_corners, out), as
/// ExecuTorch's runtime samples (which agrees with PyTorch): a grid coordinate in [-1, 1] is
/// unnormalized in float; border clips it into the image, reflection mirrors it at the image's
/// edges (its pixel centres with align_corners) and then clips; bilinear weighs the four taps
/// around the point, nearest rounds half to even; a tap outside the image reads 0.
bool gridSampler2d(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &grid = c.tensor(a[1]), &out = c.tensor(a[5]);
  const int64_t mode = c.integer(a[2]), padding = c.integer(a[3]);
  const bool corners = c.integer(a[4]) != 0;
  if (in.sizes.size() != 4 || grid.sizes.size() != 4 || grid.sizes[3] != 2 || grid.sizes[0] != in.sizes[0])
    return c.fail("grid_sampler_2d of an input that is not [N, C, H, W] with a grid [N, H', W', 2]");
  if (grid.dtype != ScalarType::Float) return c.fail("grid_sampler_2d with a grid that is not float32");
  if (mode < 0 || mode > 1) return c.fail("grid_sampler_2d interpolation mode " + std::to_string(mode) + " (0 bilinear and 1 nearest run)");
  if (padding < 0 || padding > 2) return c.fail("grid_sampler_2d padding mode " + std::to_string(padding));
  if (in.dtype != out.dtype) return c.fail("grid_sampler_2d between different dtypes");
  const int64_t N = in.sizes[0], C = in.sizes[1], H = in.sizes[2], W = in.sizes[3], OH = grid.sizes[1], OW = grid.sizes[2];
  if (!contiguousOperands(c, {&in, &grid}) || !c.resize(out, {N, C, OH, OW}) || !contiguousOperands(c, {&out})) return false;
  auto clip = [](float v, int64_t size) { return std::min(static_cast<float>(size - 1), std::max(v, 0.0f)); };
  // Mirrors v into [low, high] (given doubled, so that half-pixel bounds stay integers).
  auto reflect = [](float v, int64_t twiceLow, int64_t twiceHigh) {
    if (twiceLow == twiceHigh) return 0.0f;
    const float low = static_cast<float>(twiceLow) / 2, span = static_cast<float>(twiceHigh - twiceLow) / 2;
    v = std::fabs(v - low);
    const float extra = std::fmod(v, span);
    const int64_t flips = integerFrom<int64_t>(std::floor(v / span));
    return flips % 2 == 0 ? extra + low : span - extra + low;
  };
  auto source = [&](float v, int64_t size) {
    v = corners ? ((v + 1.0f) / 2.0f) * static_cast<float>(size - 1) : ((v + 1.0f) * static_cast<float>(size) - 1.0f) / 2.0f;
    if (padding == 1) return clip(v, size);
    if (padding == 2) return clip(corners ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1), size);
    return v;
  };
  withComputeType(out.dtype, [&]<typename T>() {
    using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    auto pixel = [&](int64_t n, int64_t ch, int64_t y, int64_t x) -> U {
      if (y < 0 || y >= H || x < 0 || x >= W) return U(0);
      return loadAs<U>(in, static_cast<uint64_t>(((n * C + ch) * H + y) * W + x));
    };
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t h = 0; h < OH; ++h)
          for (int64_t w = 0; w < OW; ++w) {
            const uint64_t g = static_cast<uint64_t>(((n * OH + h) * OW + w) * 2);
            const float gx = loadAs<float>(grid, g), gy = loadAs<float>(grid, g + 1);
            const float fx = source(gx, W), fy = source(gy, H);
            U v;
            if (mode == 0) {
              const int64_t x0 = integerFrom<int64_t>(std::floor(fx)), y0 = integerFrom<int64_t>(std::floor(fy));
              const float lx = fx - static_cast<float>(x0), ly = fy - static_cast<float>(y0);
              const float wnw = (1.0f - lx) * (1.0f - ly), wne = lx * (1.0f - ly), wsw = (1.0f - lx) * ly, wse = lx * ly;
              v = static_cast<U>(pixel(n, ch, y0, x0) * wnw + pixel(n, ch, y0, x0 + 1) * wne + pixel(n, ch, y0 + 1, x0) * wsw +
                                 pixel(n, ch, y0 + 1, x0 + 1) * wse);
            } else {
              v = pixel(n, ch, integerFrom<int64_t>(std::nearbyint(fy)), integerFrom<int64_t>(std::nearbyint(fx)));
            }
            storeAs<U>(out, static_cast<uint64_t>(((n * C + ch) * OH + h) * OW + w), v);
          }
  });
  return true;
}

}  // namespace

void addImageKernels(KernelTable& k) {
  k["aten::max_pool2d_with_indices.out"] = maxPool2dWithIndices;
  k["aten::_adaptive_avg_pool2d.out"] = adaptiveAvgPool2d;
  k["aten::avg_pool2d.out"] = avgPool2d;
  k["aten::upsample_nearest2d.vec_out"] = upsampleNearest2d;
  k["aten::upsample_bilinear2d.vec_out"] = upsampleBilinear2d;
  k["aten::grid_sampler_2d.out"] = gridSampler2d;
}

}  // namespace lstudio::run::kernels
