// Neural-network kernels: matrix products, convolution, batch and layer norm, pooling,
// nearest and bilinear upsampling, grid sampling, distances and embedding.
// Semantics after ExecuTorch's portable kernels (kernels/portable/cpu/).
#include <algorithm>
#include <limits>
#include <string>

#include "engine/run/KernelSupport.h"

namespace lstudio::run::kernels {

namespace {

/// out[b] = alpha * (A[b] @ B[b]) + beta * C, accumulated in order k = 0..K-1 as vec_matmul.
template <typename T>
void matmul(const RunTensor& A, const RunTensor& B, RunTensor& out, int64_t batch, int64_t m, int64_t k, int64_t n,
            const RunTensor* C, double beta, double alpha) {
  std::vector<int64_t> csizes;
  std::vector<int64_t> cst;
  if (C) {
    cst = C->strides();
    csizes = C->sizes;
  }
  // Float operands of T's own dtype: rows of sums on raw pointers, walked i, p, j so that B
  // is read along its rows. Each sum still adds its products in order p = 0..k-1, so the
  // results are the same bits as the element-by-element loop below (which converts).
  constexpr ScalarType kType = std::is_same_v<T, float> ? ScalarType::Float : ScalarType::Double;
  bool raw = std::is_floating_point_v<T> && A.dtype == kType && B.dtype == kType && out.dtype == kType;
  std::vector<T> rowSums(raw ? static_cast<size_t>(n) : 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i) {
      if (raw) {
        const T* a = reinterpret_cast<const T*>(A.data) + (b * m + i) * k;
        const T* bb = reinterpret_cast<const T*>(B.data) + b * k * n;
        std::fill(rowSums.begin(), rowSums.end(), T(0));
        for (int64_t p = 0; p < k; ++p) {
          const T x = a[p];
          const T* row = bb + p * n;
          for (int64_t j = 0; j < n; ++j) rowSums[static_cast<size_t>(j)] += x * row[j];
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        T sum = 0;
        if (raw) {
          sum = rowSums[static_cast<size_t>(j)];
        } else {
          for (int64_t p = 0; p < k; ++p)
            sum += loadAs<T>(A, static_cast<uint64_t>((b * m + i) * k + p)) *
                   loadAs<T>(B, static_cast<uint64_t>((b * k + p) * n + j));
        }
        T r = sum;
        if (C) {
          // self broadcasts to [m, n]
          int64_t ci = 0;
          size_t cr = csizes.size();
          if (cr == 2) ci = (csizes[0] == 1 ? 0 : i) * cst[0] + (csizes[1] == 1 ? 0 : j) * cst[1];
          else if (cr == 1) ci = csizes[0] == 1 ? 0 : j;
          T cv = loadAs<T>(*C, static_cast<uint64_t>(ci));
          r = static_cast<T>(alpha) * sum + static_cast<T>(beta) * cv;
        }
        storeAs<T>(out, static_cast<uint64_t>((b * m + i) * n + j), r);
      }
    }
}

bool mmOut(KernelContext& c, const Args& a) {
  RunTensor &A = c.tensor(a[0]), &B = c.tensor(a[1]), &out = c.tensor(a[2]);
  if (A.sizes.size() != 2 || B.sizes.size() != 2 || A.sizes[1] != B.sizes[0]) return c.fail("mm shapes");
  if (!contiguousOperands(c, {&A, &B}) || !c.resize(out, {A.sizes[0], B.sizes[1]})) return false;
  if (!c.allowWork(static_cast<uint64_t>(A.sizes[0]) * A.sizes[1] * B.sizes[1])) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) matmul<T>(A, B, out, 1, A.sizes[0], A.sizes[1], B.sizes[1], nullptr, 0, 1);
  });
  return true;
}

bool bmmOut(KernelContext& c, const Args& a) {
  RunTensor &A = c.tensor(a[0]), &B = c.tensor(a[1]), &out = c.tensor(a[2]);
  if (A.sizes.size() != 3 || B.sizes.size() != 3 || A.sizes[2] != B.sizes[1] || A.sizes[0] != B.sizes[0])
    return c.fail("bmm shapes");
  if (!contiguousOperands(c, {&A, &B}) || !c.resize(out, {A.sizes[0], A.sizes[1], B.sizes[2]})) return false;
  if (!c.allowWork(static_cast<uint64_t>(A.sizes[0]) * A.sizes[1] * A.sizes[2] * B.sizes[2])) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>)
      matmul<T>(A, B, out, A.sizes[0], A.sizes[1], A.sizes[2], B.sizes[2], nullptr, 0, 1);
  });
  return true;
}

bool addmmOut(KernelContext& c, const Args& a) {  // (self, mat1, mat2, beta, alpha, out)
  RunTensor &C = c.tensor(a[0]), &A = c.tensor(a[1]), &B = c.tensor(a[2]), &out = c.tensor(a[5]);
  if (A.sizes.size() != 2 || B.sizes.size() != 2 || A.sizes[1] != B.sizes[0]) return c.fail("addmm shapes");
  if (!contiguousOperands(c, {&A, &B}) || !c.resize(out, {A.sizes[0], B.sizes[1]})) return false;
  if (!c.allowWork(static_cast<uint64_t>(A.sizes[0]) * A.sizes[1] * B.sizes[1])) return false;
  if (C.sizes.size() > 2 || (C.sizes.size() == 2 && ((C.sizes[0] != 1 && C.sizes[0] != A.sizes[0]) ||
                                                        (C.sizes[1] != 1 && C.sizes[1] != B.sizes[1]))) ||
      (C.sizes.size() == 1 && C.sizes[0] != 1 && C.sizes[0] != B.sizes[1]))
    return c.fail("addmm self does not broadcast to the product");
  double beta = c.scalar(a[3]), alpha = c.scalar(a[4]);
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>)
      matmul<T>(A, B, out, 1, A.sizes[0], A.sizes[1], B.sizes[1], &C, beta, alpha);
  });
  return true;
}

/// Transposed convolution as the portable kernel computes it: the output starts as the bias
/// (or 0); then for each output channel every input element adds input * weight to the
/// outputs its taps reach, input positions outermost, then input channels, then taps.
bool transposedConvolution(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &w = c.tensor(a[1]), &out = c.tensor(a[9]);
  if (!contiguousOperands(c, {&in, &w})) return false;
  const size_t spatial = in.sizes.size() - 2;
  if (in.sizes.size() < 3 || spatial > 2 || w.sizes.size() != in.sizes.size()) return c.fail("convolution rank");
  auto pick = [&](ValueId v, size_t d, int64_t dflt) {
    std::vector<int64_t> xs = c.ints(v);
    return xs.empty() ? dflt : xs[xs.size() == 1 ? 0 : d];
  };
  const bool two = spatial == 2;
  const int64_t N = in.sizes[0], C = in.sizes[1], groups = c.integer(a[8]);
  const int64_t H = two ? in.sizes[2] : 1, W = in.sizes[two ? 3 : 2];
  const int64_t KH = two ? w.sizes[2] : 1, KW = w.sizes[two ? 3 : 2];
  const int64_t sH = two ? pick(a[3], 0, 1) : 1, sW = pick(a[3], spatial - 1, 1);
  const int64_t pH = two ? pick(a[4], 0, 0) : 0, pW = pick(a[4], spatial - 1, 0);
  const int64_t dH = two ? pick(a[5], 0, 1) : 1, dW = pick(a[5], spatial - 1, 1);
  const int64_t oH = two ? pick(a[7], 0, 0) : 0, oW = pick(a[7], spatial - 1, 0);
  if (groups <= 0 || C % groups || w.sizes[0] != C || sH <= 0 || sW <= 0 || dH <= 0 || dW <= 0 || pH < 0 || pW < 0 ||
      oH < 0 || oW < 0 || (oH >= sH && oH >= dH) || (oW >= sW && oW >= dW))
    return c.fail("transposed convolution groups, channels, strides, dilations or output padding do not fit");
  for (int64_t v : {H, W, KH, KW, sH, sW, pH, pW, dH, dW, oH, oW})
    if (v > std::numeric_limits<int32_t>::max()) return c.fail("transposed convolution parameters past INT32_MAX");
  const int64_t OCG = w.sizes[1], OC = OCG * groups, CG = C / groups;
  const int64_t OH = (H - 1) * sH - 2 * pH + dH * (KH - 1) + oH + 1, OW = (W - 1) * sW - 2 * pW + dW * (KW - 1) + oW + 1;
  if (OH <= 0 || OW <= 0) return c.fail("transposed convolution output would be empty");
  std::vector<int64_t> sizes = two ? std::vector<int64_t>{N, OC, OH, OW} : std::vector<int64_t>{N, OC, OW};
  if (!c.resize(out, sizes)) return false;
  uint64_t work = static_cast<uint64_t>(N * OC);
  for (uint64_t f : {static_cast<uint64_t>(H * W), static_cast<uint64_t>(CG * KH * KW)})
    work = f && work > std::numeric_limits<uint64_t>::max() / f ? std::numeric_limits<uint64_t>::max() : work * f;
  if (!c.allowWork(work)) return false;
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  if (bias && bias->numel() < static_cast<uint64_t>(OC)) return c.fail("convolution bias shorter than the channels");
  const uint64_t plane = static_cast<uint64_t>(OH * OW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      const float b = bias ? loadAs<float>(*bias, static_cast<uint64_t>(oc)) : 0.0f;
      for (uint64_t e = 0; e < plane; ++e) storeAs<float>(out, static_cast<uint64_t>(n * OC + oc) * plane + e, b);
    }
  std::vector<float> acc(plane);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t g = oc / OCG;
      const uint64_t at = static_cast<uint64_t>(n * OC + oc) * plane;
      for (uint64_t e = 0; e < plane; ++e) acc[e] = loadAs<float>(out, at + e);
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t ic = g * CG; ic < (g + 1) * CG; ++ic) {
            const float x = loadAs<float>(in, static_cast<uint64_t>(((n * C + ic) * H + ih) * W + iw));
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t oh = ih * sH + kh * dH - pH;
              if (oh < 0 || oh >= OH) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ow = iw * sW + kw * dW - pW;
                if (ow < 0 || ow >= OW) continue;
                const float k = loadAs<float>(w, static_cast<uint64_t>(((ic * OCG + (oc - g * OCG)) * KH + kh) * KW + kw));
                acc[static_cast<size_t>(oh * OW + ow)] += x * k;
              }
            }
          }
      for (uint64_t e = 0; e < plane; ++e) storeAs<float>(out, at + e, acc[e]);
    }
  return true;
}

bool convolutionOut(KernelContext& c, const Args& a) {
  // (input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups, out)
  RunTensor &in = c.tensor(a[0]), &w = c.tensor(a[1]), &out = c.tensor(a[9]);
  if (c.integer(a[6])) return transposedConvolution(c, a);
  if (!contiguousOperands(c, {&in, &w})) return false;
  size_t spatial = in.sizes.size() - 2;
  if (spatial < 1 || spatial > 2 || w.sizes.size() != in.sizes.size()) return c.fail("convolution rank");
  auto pick = [&](ValueId v, size_t d, int64_t dflt) {
    std::vector<int64_t> xs = c.ints(v);
    return xs.empty() ? dflt : xs[xs.size() == 1 ? 0 : d];
  };
  int64_t N = in.sizes[0], C = in.sizes[1], OC = w.sizes[0], groups = c.integer(a[8]);
  int64_t H = spatial == 2 ? in.sizes[2] : 1, W = in.sizes[spatial == 2 ? 3 : 2];
  int64_t KH = spatial == 2 ? w.sizes[2] : 1, KW = w.sizes[spatial == 2 ? 3 : 2];
  int64_t sH = spatial == 2 ? pick(a[3], 0, 1) : 1, sW = pick(a[3], spatial - 1, 1);
  int64_t pH = spatial == 2 ? pick(a[4], 0, 0) : 0, pW = pick(a[4], spatial - 1, 0);
  int64_t dH = spatial == 2 ? pick(a[5], 0, 1) : 1, dW = pick(a[5], spatial - 1, 1);
  if (groups <= 0 || C % groups || OC % groups || C / groups != w.sizes[1] || sH <= 0 || sW <= 0 || dH <= 0 || dW <= 0)
    return c.fail("convolution groups, channels, strides or dilations do not fit");
  int64_t OH = (H + 2 * pH - dH * (KH - 1) - 1) / sH + 1, OW = (W + 2 * pW - dW * (KW - 1) - 1) / sW + 1;
  int64_t CG = C / groups, OCG = OC / groups;
  std::vector<int64_t> sizes = spatial == 2 ? std::vector<int64_t>{N, OC, OH, OW} : std::vector<int64_t>{N, OC, OW};
  if (!c.resize(out, sizes)) return false;
  if (!c.allowWork(static_cast<uint64_t>(N * OC * OH * OW) * static_cast<uint64_t>(CG * KH * KW))) return false;
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  if (bias && bias->numel() < static_cast<uint64_t>(OC)) return c.fail("convolution bias shorter than the channels");
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      int64_t g = oc / OCG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0;
          for (int64_t ic = 0; ic < CG; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * sH - pH + kh * dH;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * sW - pW + kw * dW;
                if (iw < 0 || iw >= W) continue;
                float x = loadAs<float>(in, static_cast<uint64_t>(((n * C + g * CG + ic) * H + ih) * W + iw));
                float k = loadAs<float>(w, static_cast<uint64_t>(((oc * CG + ic) * KH + kh) * KW + kw));
                acc += x * k;
              }
            }
          if (bias) acc += loadAs<float>(*bias, static_cast<uint64_t>(oc));
          storeAs<float>(out, static_cast<uint64_t>(((n * OC + oc) * OH + oh) * OW + ow), acc);
        }
    }
  return true;
}

bool batchNormNoTraining(KernelContext& c, const Args& a) {
  // (input, weight?, bias?, running_mean, running_var, momentum, eps, out, save_mean, save_invstd)
  RunTensor &in = c.tensor(a[0]), &mean = c.tensor(a[3]), &var = c.tensor(a[4]), &out = c.tensor(a[7]);
  double eps = c.scalar(a[6]);
  if (!contiguousOperands(c, {&in}) || !c.resize(out, in.sizes)) return false;
  for (ValueId extra : {a[8], a[9]})
    if (!c.resize(c.tensor(extra), {0})) return false;
  const RunTensor* weight = c.isNone(a[1]) ? nullptr : &c.tensor(a[1]);
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  if (in.sizes.empty()) return c.fail("batch norm of a 0-d tensor");
  int64_t N = in.sizes[0], C = in.sizes.size() > 1 ? in.sizes[1] : 1, inner = 1;
  for (const RunTensor* t : std::initializer_list<const RunTensor*>{&mean, &var, weight, bias})
    if (t && t->numel() < static_cast<uint64_t>(C)) return c.fail("batch norm statistics shorter than the channels");
  for (size_t d = 2; d < in.sizes.size(); ++d) inner *= in.sizes[d];
  for (int64_t ch = 0; ch < C; ++ch) {
    float m = loadAs<float>(mean, ch), v = loadAs<float>(var, ch);
    float invstd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(v) + eps));
    float wt = weight ? loadAs<float>(*weight, ch) : 1.0f, b = bias ? loadAs<float>(*bias, ch) : 0.0f;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        uint64_t at = static_cast<uint64_t>((n * C + ch) * inner + i);
        storeAs<float>(out, at, (loadAs<float>(in, at) - m) * invstd * wt + b);
      }
  }
  return true;
}

bool layerNorm(KernelContext& c, const Args& a) {
  // (input, normalized_shape, weight?, bias?, eps, out, mean_out, rstd_out)
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[5]);
  std::vector<int64_t> shape = c.ints(a[1]);
  double eps = c.scalar(a[4]);
  if (!contiguousOperands(c, {&in}) || !c.resize(out, in.sizes)) return false;
  if (shape.size() > in.sizes.size() ||
      !std::equal(shape.begin(), shape.end(), in.sizes.end() - static_cast<int64_t>(shape.size())))
    return c.fail("layer norm's normalized_shape is not the input's trailing shape");
  int64_t inner = 1;
  for (int64_t s : shape) inner *= s;
  int64_t outer = inner ? static_cast<int64_t>(in.numel()) / inner : 0;
  std::vector<int64_t> statSizes(in.sizes.begin(), in.sizes.end() - static_cast<int64_t>(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) statSizes.push_back(1);
  RunTensor &meanOut = c.tensor(a[6]), &rstdOut = c.tensor(a[7]);
  if (!c.resize(meanOut, statSizes) || !c.resize(rstdOut, statSizes)) return false;
  const RunTensor* weight = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  const RunTensor* bias = c.isNone(a[3]) ? nullptr : &c.tensor(a[3]);
  for (const RunTensor* t : {weight, bias})
    if (t && t->numel() < static_cast<uint64_t>(inner)) return c.fail("layer norm weight or bias shorter than the shape");
  for (int64_t o = 0; o < outer; ++o) {
    float sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      float x = loadAs<float>(in, static_cast<uint64_t>(o * inner + i));
      sum += x;
      sq += x * x;
    }
    float mean = sum / static_cast<float>(inner);
    float variance = sq / static_cast<float>(inner) - mean * mean;
    float stdev = std::sqrt(variance + static_cast<float>(eps));
    float rstd = static_cast<float>(1.0 / stdev);
    for (int64_t i = 0; i < inner; ++i) {
      uint64_t at = static_cast<uint64_t>(o * inner + i);
      float y = (loadAs<float>(in, at) - mean) / stdev;
      if (weight) y *= loadAs<float>(*weight, static_cast<uint64_t>(i));
      if (bias) y += loadAs<float>(*bias, static_cast<uint64_t>(i));
      storeAs<float>(out, at, y);
    }
    storeAs<float>(meanOut, static_cast<uint64_t>(o), mean);
    storeAs<float>(rstdOut, static_cast<uint64_t>(o), rstd);
  }
  return true;
}

/// _native_batch_norm_legit.no_stats (input, weight?, bias?, training, momentum, eps, out,
/// save_mean, save_invstd): normalized by the batch's own statistics per channel (dim 1), the
/// mean and the biased variance summed in order (what executorch.runtime computes; the
/// portable kernels of older releases refused it).
bool batchNormNoStats(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[6]), &meanOut = c.tensor(a[7]), &invstdOut = c.tensor(a[8]);
  if (c.integer(a[3]) == 0) return c.fail("batch norm without running statistics outside training mode");
  if (!contiguousOperands(c, {&in})) return false;
  if (in.sizes.size() < 2) return c.fail("batch norm of a tensor of fewer than 2 dimensions");
  const int64_t N = in.sizes[0], C = in.sizes[1];
  const int64_t inner = C ? static_cast<int64_t>(in.numel()) / (N * C) : 0;
  const float eps = static_cast<float>(c.scalar(a[5]));
  const RunTensor* weight = c.isNone(a[1]) ? nullptr : &c.tensor(a[1]);
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  for (const RunTensor* t : {weight, bias})
    if (t && t->numel() < static_cast<uint64_t>(C)) return c.fail("batch norm weight or bias shorter than the channels");
  if (!c.resize(out, in.sizes) || !c.resize(meanOut, {C}) || !c.resize(invstdOut, {C})) return false;
  const float count = static_cast<float>(N * inner);
  for (int64_t ch = 0; ch < C; ++ch) {
    auto at = [&](int64_t n, int64_t i) { return static_cast<uint64_t>((n * C + ch) * inner + i); };
    float sum = 0, sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) sum += loadAs<float>(in, at(n, i));
    const float mean = sum / count;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const float d = loadAs<float>(in, at(n, i)) - mean;
        sq += d * d;
      }
    const float invstd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sq / count) + eps));
    const float w = weight ? loadAs<float>(*weight, static_cast<uint64_t>(ch)) : 1.0f;
    const float b = bias ? loadAs<float>(*bias, static_cast<uint64_t>(ch)) : 0.0f;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) storeAs<float>(out, at(n, i), (loadAs<float>(in, at(n, i)) - mean) * invstd * w + b);
    storeAs<float>(meanOut, static_cast<uint64_t>(ch), mean);
    storeAs<float>(invstdOut, static_cast<uint64_t>(ch), invstd);
  }
  return true;
}

/// native_group_norm (input, weight?, bias?, N, C, HxW, group, eps, out, mean, rstd): per
/// (sample, group) the mean and E[x^2] - mean^2 summed in order, then scale * x + beta per
/// channel (x * rstd without weight or bias), as the portable kernel computes them.
bool groupNorm(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[8]), &meanOut = c.tensor(a[9]), &rstdOut = c.tensor(a[10]);
  const int64_t N = c.integer(a[3]), C = c.integer(a[4]), HxW = c.integer(a[5]), G = c.integer(a[6]);
  const float eps = static_cast<float>(c.scalar(a[7]));
  if (!contiguousOperands(c, {&in})) return false;
  if (N < 0 || C < 0 || HxW < 0 || G <= 0 || C % G || in.sizes.size() < 2 || in.sizes[0] != N || in.sizes[1] != C ||
      static_cast<uint64_t>(N) * static_cast<uint64_t>(C) * static_cast<uint64_t>(HxW) != in.numel())
    return c.fail("group norm's N, C, HxW and groups do not describe its input");
  const RunTensor* weight = c.isNone(a[1]) ? nullptr : &c.tensor(a[1]);
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  for (const RunTensor* t : {weight, bias})
    if (t && t->numel() < static_cast<uint64_t>(C)) return c.fail("group norm weight or bias shorter than the channels");
  if (!c.resize(out, in.sizes) || !c.resize(meanOut, {N, G}) || !c.resize(rstdOut, {N, G})) return false;
  const int64_t D = C / G, inner = D * HxW;
  for (int64_t i = 0; i < N * G; ++i) {
    if (inner == 0) {
      storeAs<float>(meanOut, static_cast<uint64_t>(i), 0.0f);
      storeAs<float>(rstdOut, static_cast<uint64_t>(i), std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const uint64_t base = static_cast<uint64_t>(i * inner);
    float sum = 0, sq = 0;
    for (int64_t j = 0; j < inner; ++j) sum += loadAs<float>(in, base + j);
    for (int64_t j = 0; j < inner; ++j) {
      const float x = loadAs<float>(in, base + j);
      sq += x * x;
    }
    const float mean = sum / static_cast<float>(inner);
    const float variance = sq / static_cast<float>(inner) - mean * mean;
    const float rstd = static_cast<float>(1.0 / std::sqrt(variance + eps));
    if (!weight && !bias) {
      for (int64_t j = 0; j < inner; ++j) storeAs<float>(out, base + j, (loadAs<float>(in, base + j) - mean) * rstd);
    } else {
      const int64_t g = i % G;
      for (int64_t j = 0; j < D; ++j) {
        const int64_t ch = g * D + j;
        const float scale = rstd * (weight ? loadAs<float>(*weight, static_cast<uint64_t>(ch)) : 1.0f);
        const float beta = -scale * mean + (bias ? loadAs<float>(*bias, static_cast<uint64_t>(ch)) : 0.0f);
        const uint64_t at = static_cast<uint64_t>((i * D + j) * HxW);
        for (int64_t k = 0; k < HxW; ++k) storeAs<float>(out, at + k, scale * loadAs<float>(in, at + k) + beta);
      }
    }
    storeAs<float>(meanOut, static_cast<uint64_t>(i), mean);
    storeAs<float>(rstdOut, static_cast<uint64_t>(i), rstd);
  }
  return true;
}

bool embeddingOut(KernelContext& c, const Args& a) {  // (weight, indices, padding_idx, scale, sparse, out)
  RunTensor &w = c.tensor(a[0]), &idx = c.tensor(a[1]), &out = c.tensor(a[5]);
  if (w.sizes.size() != 2 || !contiguousOperands(c, {&w})) return c.fail("embedding weight must be 2-D");
  std::vector<int64_t> sizes = idx.sizes;
  sizes.push_back(w.sizes[1]);
  if (!c.resize(out, sizes)) return false;
  uint64_t n = idx.numel(), row = static_cast<uint64_t>(w.sizes[1]) * elementSize(w.dtype);
  if (w.dtype != out.dtype) return c.fail("embedding output dtype differs from the weight's");
  for (uint64_t i = 0; i < n; ++i) {
    int64_t r = loadAs<int64_t>(idx, i);
    if (r < 0 || r >= w.sizes[0]) return c.fail("embedding index " + std::to_string(r) + " out of range");
    std::memcpy(out.data + i * row, w.data + static_cast<uint64_t>(r) * row, row);
  }
  return true;
}

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

/// Distances between rows: |a - b| per element, mapped, summed (or maxed for p = inf) and
/// finished, in the tensor's type, as the portable cdist/pdist kernels do for p = 0, 1, 2,
/// inf and any other p.
template <typename T>
T rowDistance(const RunTensor& x, uint64_t a, const RunTensor& y, uint64_t b, int64_t m, T p) {
  T agg = 0;
  for (int64_t k = 0; k < m; ++k) {
    const T diff = std::abs(loadAs<T>(x, a + static_cast<uint64_t>(k)) - loadAs<T>(y, b + static_cast<uint64_t>(k)));
    if (p == T(0)) agg = agg + (diff == T(0) ? T(0) : T(1));
    else if (p == T(1)) agg = agg + diff;
    else if (p == T(2)) agg = agg + diff * diff;
    else if (std::isinf(p)) agg = std::max(agg, diff);
    else agg = agg + static_cast<T>(std::pow(diff, p));
  }
  if (p == T(2)) return std::sqrt(agg);
  if (p == T(0) || p == T(1) || std::isinf(p)) return agg;
  return static_cast<T>(std::pow(agg, 1.0 / p));
}

/// _cdist_forward (x1, x2, p, compute_mode?, out): [..., P, M] and [..., R, M], batch
/// dimensions broadcast, into [..., P, R].
bool cdistForward(KernelContext& c, const Args& a) {
  RunTensor &x1 = c.tensor(a[0]), &x2 = c.tensor(a[1]), &out = c.tensor(a[4]);
  const double p = c.scalar(a[2]);
  if (x1.sizes.size() < 2 || x2.sizes.size() < 2 || x1.sizes.back() != x2.sizes.back())
    return c.fail("cdist of tensors that are not [..., rows, features] with equal features");
  if (p < 0) return c.fail("cdist with a negative p");
  if (x1.dtype != x2.dtype || x1.dtype != out.dtype || !isFloating(out.dtype)) return c.fail("cdist of tensors of other dtypes");
  if (!contiguousOperands(c, {&x1, &x2})) return false;
  RunTensor b1 = x1, b2 = x2;  // the batch dimensions alone, to broadcast
  b1.sizes.resize(x1.sizes.size() - 2);
  b2.sizes.resize(x2.sizes.size() - 2);
  std::vector<int64_t> batch;
  if (!broadcastSizes(c, {&b1, &b2}, batch)) return false;
  const int64_t P = x1.sizes[x1.sizes.size() - 2], R = x2.sizes[x2.sizes.size() - 2], M = x1.sizes.back();
  std::vector<int64_t> sizes = batch;
  sizes.insert(sizes.end(), {P, R});
  if (!c.resize(out, sizes) || !contiguousOperands(c, {&out})) return false;
  if (out.numel() == 0) return true;
  // Batch element b of the output reads the broadcast batch elements of x1 and x2.
  auto batchIndex = [&](const std::vector<int64_t>& at, const std::vector<int64_t>& own) {
    int64_t k = 0;
    const size_t skip = at.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d) k = k * own[d] + (own[d] == 1 ? 0 : at[skip + d]);
    return k;
  };
  std::vector<int64_t> at(batch.size(), 0);
  uint64_t batches = 1;
  for (int64_t s : batch) batches *= static_cast<uint64_t>(s);
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      for (uint64_t b = 0; b < batches; ++b, nextIndex(at, batch)) {
        const uint64_t base1 = static_cast<uint64_t>(batchIndex(at, b1.sizes) * P * M);
        const uint64_t base2 = static_cast<uint64_t>(batchIndex(at, b2.sizes) * R * M);
        for (int64_t i = 0; i < P; ++i)
          for (int64_t j = 0; j < R; ++j)
            storeAs<T>(out, b * static_cast<uint64_t>(P * R) + static_cast<uint64_t>(i * R + j),
                       rowDistance<T>(x1, base1 + static_cast<uint64_t>(i * M), x2, base2 + static_cast<uint64_t>(j * M), M,
                                      static_cast<T>(p)));
      }
    }
  });
  return true;
}

/// _pdist_forward (self, p, out): the distance of every pair of rows i < j, in order.
bool pdistForward(KernelContext& c, const Args& a) {
  RunTensor &x = c.tensor(a[0]), &out = c.tensor(a[2]);
  const double p = c.scalar(a[1]);
  if (x.sizes.size() != 2) return c.fail("pdist of a tensor that is not 2-d");
  if (p < 0) return c.fail("pdist with a negative p");
  if (x.dtype != out.dtype || !isFloating(out.dtype)) return c.fail("pdist of tensors of other dtypes");
  const int64_t n = x.sizes[0], m = x.sizes[1];
  if (!contiguousOperands(c, {&x}) || !c.resize(out, {n * (n - 1) / 2})) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      uint64_t k = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j)
          storeAs<T>(out, k++, rowDistance<T>(x, static_cast<uint64_t>(i * m), x, static_cast<uint64_t>(j * m), m, static_cast<T>(p)));
    }
  });
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

void addNeuralNetKernels(KernelTable& k) {
  k["aten::mm.out"] = mmOut;
  k["aten::bmm.out"] = bmmOut;
  k["aten::addmm.out"] = addmmOut;
  k["aten::convolution.out"] = convolutionOut;
  k["aten::_native_batch_norm_legit_no_training.out"] = batchNormNoTraining;
  k["aten::native_layer_norm.out"] = layerNorm;
  k["aten::native_group_norm.out"] = groupNorm;
  k["aten::_native_batch_norm_legit.no_stats_out"] = batchNormNoStats;
  k["aten::embedding.out"] = embeddingOut;
  k["aten::max_pool2d_with_indices.out"] = maxPool2dWithIndices;
  k["aten::_adaptive_avg_pool2d.out"] = adaptiveAvgPool2d;
  k["aten::avg_pool2d.out"] = avgPool2d;
  k["aten::upsample_nearest2d.vec_out"] = upsampleNearest2d;
  k["aten::upsample_bilinear2d.vec_out"] = upsampleBilinear2d;
  k["aten::_cdist_forward.out"] = cdistForward;
  k["aten::_pdist_forward.out"] = pdistForward;
  k["aten::grid_sampler_2d.out"] = gridSampler2d;
}

}  // namespace lstudio::run::kernels
