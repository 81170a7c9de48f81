// Neural-network kernels: matrix products, convolution, batch, layer and group norm,
// distances and embedding (pooling and resampling are in ImageKernels.cpp).
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
  k["aten::_cdist_forward.out"] = cdistForward;
  k["aten::_pdist_forward.out"] = pdistForward;
}

}  // namespace lstudio::run::kernels
