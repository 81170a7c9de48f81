// linear, matmul, baddbmm and scaled_dot_product_attention as PyTorch lowers
// them to core ATen: the same case analysis (ATen's linear and _matmul_impl,
// the math form of attention), so the operators, their order and every
// intermediate layout match upstream's to_edge.
#include <cmath>
#include <limits>

#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorRef argRef(Rewrite& r, const char* name) { return TensorRef{r.arg(name)}; }

int64_t product(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

/// ATen's should_fold for a >= 3-d tensor times a <= 2-d one: mm on the larger
/// folded to a matrix, when that needs no copy. (During run_decompositions
/// nothing requires grad, so the gradient shortcut never applies.)
bool shouldFold(const TensorSpec& a, const TensorSpec& b) {
  if (!(a.sizes.size() >= 3 && b.sizes.size() <= 2)) return false;
  if (a.numel().value_or(1) == 0) return true;
  std::vector<int64_t> st = stridesOf(a);
  for (size_t i = 0; i + 2 < a.sizes.size(); ++i)
    if (st[i] != st[i + 1] * a.sizes[i + 1]) return false;
  return true;
}

/// Broadcast of two batch shapes.
std::optional<std::vector<int64_t>> broadcastSizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// matmul(a, b). With `final` the last call writes the node's result.
TensorRef matmul(Rewrite& r, TensorRef a, TensorRef b, bool final) {
  auto last = [&](const std::string& target, std::vector<BuildArg> args) {
    if (final) {
      r.finish(target, std::move(args));
      return TensorRef{};
    }
    return r.op(target, std::move(args));
  };
  const TensorSpec ta = r.spec(a.id), tb = r.spec(b.id);
  if (r.failure()) return {};
  const size_t da = ta.sizes.size(), db = tb.sizes.size();
  if (da == 2 && db == 2) return last("aten.mm.default", {a, b});
  if (da == 0 || db == 0) {
    r.fail("matmul of a 0-d tensor");
    return {};
  }
  if (da == 1 && db == 2) {  // a row vector: unsqueeze, mm, squeeze
    TensorRef row = r.op("aten.unsqueeze.default", {a, int64_t(0)});
    TensorRef mm = r.op("aten.mm.default", {row, b});
    return last("aten.squeeze.dims", {mm, std::vector<int64_t>{0}});
  }
  if (da == 1 || db == 1) {
    r.fail("matmul with a vector operand (dot, mv) is not decomposed yet");
    return {};
  }
  if (shouldFold(ta, tb)) {
    std::vector<int64_t> out(ta.sizes.begin(), ta.sizes.end() - 1);
    out.push_back(tb.sizes.back());
    TensorRef folded = r.op("aten.view.default", {a, std::vector<int64_t>{product(ta.sizes, 0, da - 1), ta.sizes.back()}});
    TensorRef mm = r.op("aten.mm.default", {folded, b});
    return last("aten.view.default", {mm, out});
  }
  if (da < 3 && db < 3) {
    r.fail("matmul of these shapes is not decomposed yet");
    return {};
  }
  // Batched: both operands expanded to the broadcast batch, made 3-d, bmm, viewed back.
  std::vector<int64_t> batchA(ta.sizes.begin(), ta.sizes.end() - 2), batchB(tb.sizes.begin(), tb.sizes.end() - 2);
  auto batch = broadcastSizes(batchA, batchB);
  if (!batch) {
    r.fail("matmul operands whose batch dimensions do not broadcast");
    return {};
  }
  int64_t n = ta.sizes[da - 2], m1 = ta.sizes[da - 1], m2 = tb.sizes[db - 2], p = tb.sizes[db - 1];
  int64_t batchProduct = product(*batch, 0, batch->size());
  auto operand = [&](TensorRef x, int64_t rows, int64_t cols) {
    std::vector<int64_t> expandTo = *batch;
    expandTo.push_back(rows);
    expandTo.push_back(cols);
    TensorRef e = r.op("aten.expand.default", {x, expandTo});
    return reshape(r, e.id, {batchProduct, rows, cols});
  };
  TensorRef x = operand(a, n, m1);
  TensorRef y = operand(b, m2, p);
  TensorRef prod = r.op("aten.bmm.default", {x, y});
  std::vector<int64_t> out = *batch;
  out.push_back(n);
  out.push_back(p);
  return last("aten.view.default", {prod, out});
}

void matmulRule(Rewrite& r) { matmul(r, argRef(r, "self"), argRef(r, "other"), true); }

/// ATen's linear: addmm for a matrix with bias; any other contiguous input with
/// bias flattened to a matrix, addmm, viewed back; otherwise matmul with the
/// transposed weight (+ bias).
void linear(Rewrite& r) {
  const TensorSpec& x = r.tensor("input");
  const bool bias = !r.isNone("bias");
  const size_t rank = x.sizes.size();
  if (rank == 2 && bias) {  // no size is spelled out: symbolic sizes are fine
    TensorRef wt = r.op("aten.permute.default", {argRef(r, "weight"), std::vector<int64_t>{1, 0}});
    return r.finish("aten.addmm.default", {argRef(r, "bias"), argRef(r, "input"), wt});
  }
  if (rank == 2) {
    TensorRef wt = r.op("aten.permute.default", {argRef(r, "weight"), std::vector<int64_t>{1, 0}});
    return r.finish("aten.mm.default", {argRef(r, "input"), wt});
  }
  if (!x.symbols.empty()) return r.fail("linear on a " + std::to_string(rank) + "-d input with symbolic sizes is not decomposed yet");
  if (rank >= 1 && bias && isContiguous(x)) {
    TensorRef flat = r.op("aten.view.default", {argRef(r, "input"), std::vector<int64_t>{product(x.sizes, 0, rank - 1), x.sizes.back()}});
    TensorRef wt = r.op("aten.permute.default", {argRef(r, "weight"), std::vector<int64_t>{1, 0}});
    TensorRef mm = r.op("aten.addmm.default", {argRef(r, "bias"), flat, wt});
    return r.finish("aten.view.default", {mm, r.resultSpec().sizes});
  }
  TensorRef wt = r.op("aten.permute.default", {argRef(r, "weight"), std::vector<int64_t>{1, 0}});
  if (!bias) {
    matmul(r, argRef(r, "input"), wt, true);
    return;
  }
  TensorRef y = matmul(r, argRef(r, "input"), wt, false);
  r.finish("aten.add.Tensor", {y, argRef(r, "bias")});
}

/// baddbmm(self, b1, b2, beta, alpha) = beta * self + alpha * bmm(b1, b2)
void baddbmm(Rewrite& r) {
  TensorRef prod = r.op("aten.bmm.default", {argRef(r, "batch1"), argRef(r, "batch2")});
  double alpha = r.number("alpha").value_or(1), beta = r.number("beta").value_or(1);
  if (alpha != 1) prod = r.op("aten.mul.Tensor", {prod, alpha});
  if (beta == 0) return r.resultIs(prod.id);
  TensorRef self = argRef(r, "self");
  if (beta != 1) self = r.op("aten.mul.Tensor", {self, beta});
  r.finish("aten.add.Tensor", {self, prod});
}

/// scaled_dot_product_attention in its math form (PyTorch's decomposition for
/// CPU): q and k^T each scaled by sqrt(scale); a boolean mask becomes 0 / -inf
/// and is added; a softmax that gives 0 on rows that are all -inf; then the
/// output laid out as the flash kernel lays it out.
void sdpa(Rewrite& r) {
  const TensorSpec& q = r.tensor("query");
  const TensorSpec& k = r.tensor("key");
  if (q.sizes.size() != 4 || k.sizes.size() != 4 || r.tensor("value").sizes.size() != 4)
    return r.fail("scaled_dot_product_attention on tensors that are not 4-d is not decomposed yet");
  if (r.integer("is_causal").value_or(0) != 0) return r.fail("scaled_dot_product_attention with is_causal=True is not decomposed yet");
  if (r.number("dropout_p").value_or(0) != 0) return r.fail("scaled_dot_product_attention with dropout is not decomposed");
  if (q.sizes[1] != k.sizes[1]) return r.fail("grouped-query scaled_dot_product_attention is not decomposed yet");
  double scale = r.isNone("scale") ? 1.0 / std::sqrt(static_cast<double>(q.sizes[3])) : r.number("scale").value_or(1);
  double factor = std::sqrt(scale);
  TensorRef mask;
  if (!r.isNone("attn_mask")) {
    mask = argRef(r, "attn_mask");
    if (r.spec(mask.id).dtype == ScalarType::Bool) {
      const double inf = std::numeric_limits<double>::infinity();
      TensorRef ninf = r.op("aten.scalar_tensor.default", {-inf, q.dtype, None{}, "cpu"});
      TensorRef zero = r.op("aten.scalar_tensor.default", {0.0, q.dtype, int64_t(0), "cpu"});
      mask = r.op("aten.where.self", {mask, zero, ninf});
    }
  }
  TensorRef qs = r.op("aten.mul.Scalar", {argRef(r, "query"), factor});
  TensorRef kt = r.op("aten.permute.default", {argRef(r, "key"), std::vector<int64_t>{0, 1, 3, 2}});
  TensorRef ks = r.op("aten.mul.Scalar", {kt, factor});
  TensorRef attn = matmul(r, qs, ks, false);
  if (mask.id != kNoValue) attn = r.op("aten.add.Tensor", {attn, mask});
  // _safe_softmax: rows with every score -inf give 0, not NaN.
  TensorRef soft = r.op("aten._softmax.default", {attn, int64_t(-1), false});
  const double inf = std::numeric_limits<double>::infinity();
  TensorRef isNinf = r.op("aten.eq.Scalar", {attn, -inf});
  TensorRef finite = r.op("aten.logical_not.default", {isNinf});
  TensorRef anyFinite = r.op("aten.any.dim", {finite, int64_t(-1), true});
  TensorRef allNinf = r.op("aten.logical_not.default", {anyFinite});
  TensorRef zeros = r.op("aten.full_like.default", {soft, int64_t(0), None{}, None{}, None{}, false, int64_t(1)});
  TensorRef probs = r.op("aten.where.self", {allNinf, zeros, soft});
  TensorRef out = matmul(r, probs, argRef(r, "value"), false);
  // The flash kernel's layout: (L, N, H, E) in memory.
  TensorRef lnhe = r.op("aten.permute.default", {out, std::vector<int64_t>{2, 0, 1, 3}});
  if (!isContiguous(r.spec(lnhe.id))) lnhe = r.op("aten.clone.default", {lnhe, int64_t(0)});
  r.finish("aten.permute.default", {lnhe, std::vector<int64_t>{1, 2, 0, 3}});
}

}  // namespace

void registerLinearAlgebraRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::linear.default", linear},
                     {"aten::matmul.default", matmulRule},
                     {"aten::baddbmm.default", baddbmm},
                     {"aten::scaled_dot_product_attention.default", sdpa}});
}

}  // namespace lstudio::decompositions
