// linear, matmul, baddbmm and scaled_dot_product_attention as PyTorch lowers
// them to core ATen: the same case analysis (ATen's linear and _matmul_impl,
// the math form of attention), so the operators, their order and every
// intermediate layout match upstream's to_edge.
#include <algorithm>
#include <cmath>
#include <numeric>
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

/// A tensor that requires grad while run_decompositions traces: a parameter (or other input
/// recorded with requires_grad) read as it is. What is computed from one does not: the trace
/// runs without grad.
bool requiresGrad(Rewrite& r, ValueId v) {
  for (const InputSpec& in : r.method().signature.inputs)
    if (in.value == v) return r.spec(v).requiresGrad;
  return false;
}

/// torch's should_fold (the Python decomposition run_decompositions traces): a >= 3-d tensor
/// times a <= 2-d one (either side) is folded to an mm when the smaller operand requires grad
/// (torch avoids a large tensor in the backward), or when the larger is first and contiguous,
/// size-1 dimensions skipped (xcit's [1, 64, 128] at strides (8192, 1, 64) is not folded,
/// llama's [1, 8, 64] at (64, 64, 1) is).
bool shouldFold(const TensorSpec& a, const TensorSpec& b, bool smallerRequiresGrad) {
  const TensorSpec& larger = a.sizes.size() >= b.sizes.size() ? a : b;
  const TensorSpec& smaller = a.sizes.size() >= b.sizes.size() ? b : a;
  if (!(larger.sizes.size() >= 3 && smaller.sizes.size() <= 2)) return false;
  if (smallerRequiresGrad) return true;
  if (a.sizes.size() == 2) return false;
  if (larger.numel().value_or(1) == 0) return true;
  return isContiguous(larger);
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

/// `x` ([d0, ..., dk, c]) viewed as the matrix [d0 * ... * dk, c], its sizes
/// symbolic where x's are: the product folded left to right, as ATen's
/// multiply_integers folds SymInts.
TensorRef flattenToMatrix(Rewrite& r, TensorRef x) {
  const TensorSpec t = r.spec(x.id);
  if (t.sizes.empty()) {
    r.fail("a 0-d tensor where a matrix was expected");
    return {};
  }
  SizeRef rows{1};
  for (const SizeRef& s : r.sizes(x.id, 0, t.sizes.size() - 1)) rows = r.mul(rows, s);
  std::vector<SizeRef> matrix{rows, r.size(x.id, t.sizes.size() - 1)};
  const std::vector<TensorSpec> spec{Rewrite::contiguousSpec(t.dtype, matrix)};
  return r.op("aten.view.default", {x, matrix}, &spec);
}

/// view(x, sizes) with sizes that may be symbolic; with `final` it writes the node's result.
TensorRef viewOf(Rewrite& r, TensorRef x, const std::vector<SizeRef>& sizes, bool final) {
  if (final) {
    r.finish("aten.view.default", {x, sizes});
    return {};
  }
  const std::vector<TensorSpec> spec{Rewrite::contiguousSpec(r.spec(x.id).dtype, sizes)};
  return r.op("aten.view.default", {x, sizes}, &spec);
}

/// matmul of two operands of 3 or more dimensions, some sizes symbolic: both
/// expanded to the broadcast batch, made 3-d, bmm, viewed back, every size
/// spelled as ATen's _matmul_impl computes it (the batch product folded left to right).
TensorRef batchedMatmul(Rewrite& r, TensorRef a, TensorRef b, bool final) {
  const size_t da = r.spec(a.id).sizes.size(), db = r.spec(b.id).sizes.size();
  std::vector<SizeRef> batchA = r.sizes(a.id, 0, da - 2), batchB = r.sizes(b.id, 0, db - 2);
  // infer_size: dimensions aligned from the right; a static 1 takes the other side's size.
  std::vector<SizeRef> batch(std::max(batchA.size(), batchB.size()));
  for (size_t i = 0; i < batch.size(); ++i) {
    const SizeRef* x = i + batchA.size() >= batch.size() ? &batchA[i + batchA.size() - batch.size()] : nullptr;
    const SizeRef* y = i + batchB.size() >= batch.size() ? &batchB[i + batchB.size() - batch.size()] : nullptr;
    auto isOne = [](const SizeRef* s) { return !s || (!s->isSymbolic() && s->value == 1); };
    if (x && y && !isOne(x) && !isOne(y) && !x->isSymbolic() && !y->isSymbolic() && x->value != y->value) {
      r.fail("matmul operands whose batch dimensions do not broadcast");
      return {};
    }
    batch[i] = isOne(x) ? (y ? *y : SizeRef{1}) : *x;
  }
  SizeRef batchProduct{1};
  for (const SizeRef& s : batch) batchProduct = r.mul(batchProduct, s);
  const SizeRef n = r.size(a.id, da - 2), m1 = r.size(a.id, da - 1), m2 = r.size(b.id, db - 2), p = r.size(b.id, db - 1);
  auto operand = [&](TensorRef x, const SizeRef& rows, const SizeRef& cols) {
    std::vector<SizeRef> expandTo = batch;
    expandTo.push_back(rows);
    expandTo.push_back(cols);
    const std::vector<TensorSpec> spec{Rewrite::contiguousSpec(r.spec(x.id).dtype, expandTo)};
    TensorRef e = r.op("aten.expand.default", {x, expandTo}, &spec);
    return reshape(r, e.id, std::vector<SizeRef>{batchProduct, rows, cols});
  };
  TensorRef x = operand(a, n, m1);
  TensorRef y = operand(b, m2, p);
  const std::vector<TensorSpec> bmmSpec{Rewrite::contiguousSpec(r.spec(a.id).dtype, {batchProduct, n, p})};
  TensorRef prod = r.op("aten.bmm.default", {x, y}, &bmmSpec);
  std::vector<SizeRef> out = batch;
  out.push_back(n);
  out.push_back(p);
  return viewOf(r, prod, out, final);
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
  const bool foldGrad = requiresGrad(r, da >= db ? b.id : a.id);
  if (da == 2 && db >= 3 && ta.symbols.empty() && tb.symbols.empty() && shouldFold(ta, tb, foldGrad)) {
    // [n, m] @ [..., m, p]: (b^T folded to a matrix) @ a^T, viewed back, transposed, made contiguous.
    std::vector<int64_t> swap(db);
    std::iota(swap.begin(), swap.end(), int64_t(0));
    std::swap(swap[db - 2], swap[db - 1]);
    TensorRef bt = r.op("aten.permute.default", {b, swap});
    TensorRef at = r.op("aten.permute.default", {a, std::vector<int64_t>{1, 0}});
    std::vector<int64_t> out(tb.sizes.begin(), tb.sizes.end() - 2);
    out.push_back(tb.sizes[db - 1]);
    TensorRef folded = reshape(r, bt.id, {product(out, 0, out.size()), tb.sizes[db - 2]});
    TensorRef mm = r.op("aten.mm.default", {folded, at});
    out.push_back(ta.sizes[0]);
    TensorRef viewed = r.op("aten.view.default", {mm, out});
    // .contiguous() copies unless one of the two swapped dimensions has size 1.
    if (out[db - 2] <= 1 || out[db - 1] <= 1) return last("aten.permute.default", {viewed, swap});
    TensorRef t = r.op("aten.permute.default", {viewed, swap});
    return last("aten.clone.default", {t, int64_t(0)});
  }
  if (da >= 3 && shouldFold(ta, tb, foldGrad)) {
    if (!ta.symbols.empty() || !tb.symbols.empty()) {
      std::vector<SizeRef> out = r.sizes(a.id, 0, da - 1);
      out.push_back(r.size(b.id, db - 1));
      TensorRef mm = r.op("aten.mm.default", {flattenToMatrix(r, a), b});
      return viewOf(r, mm, out, final);
    }
    std::vector<int64_t> out(ta.sizes.begin(), ta.sizes.end() - 1);
    out.push_back(tb.sizes.back());
    TensorRef folded = reshape(r, a.id, std::vector<int64_t>{product(ta.sizes, 0, da - 1), ta.sizes.back()});
    TensorRef mm = r.op("aten.mm.default", {folded, b});
    return last("aten.view.default", {mm, out});
  }
  if (da < 3 && db < 3) {
    r.fail("matmul of these shapes is not decomposed yet");
    return {};
  }
  if (!ta.symbols.empty() || !tb.symbols.empty()) return batchedMatmul(r, a, b, final);
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
/// transposed weight (+ bias). No bias: `bias.id` is kNoValue. With `final` the
/// last call writes the node's result.
TensorRef linearOn(Rewrite& r, TensorRef input, TensorRef weight, TensorRef bias, bool final) {
  auto last = [&](const std::string& target, std::vector<BuildArg> args) {
    if (final) {
      r.finish(target, std::move(args));
      return TensorRef{};
    }
    return r.op(target, std::move(args));
  };
  const TensorSpec x = r.spec(input.id);
  const bool hasBias = bias.id != kNoValue;
  const size_t rank = x.sizes.size();
  if (rank == 2) {  // no size is spelled out: symbolic sizes are fine
    TensorRef wt = r.op("aten.permute.default", {weight, std::vector<int64_t>{1, 0}});
    return hasBias ? last("aten.addmm.default", {bias, input, wt}) : last("aten.mm.default", {input, wt});
  }
  if (!x.symbols.empty() && hasBias && isContiguous(x)) {  // sizes spelled as torch traces them (sym_size.int, mul)
    std::vector<SizeRef> out = r.sizes(input.id, 0, rank - 1);
    TensorRef flat = flattenToMatrix(r, input);
    TensorRef wt = r.op("aten.permute.default", {weight, std::vector<int64_t>{1, 0}});
    TensorRef mm = r.op("aten.addmm.default", {bias, flat, wt});
    out.push_back(r.size(mm.id, 1));
    return viewOf(r, mm, out, final);
  }
  if (rank >= 1 && hasBias && isContiguous(x)) {
    TensorRef flat = r.op("aten.view.default", {input, std::vector<int64_t>{product(x.sizes, 0, rank - 1), x.sizes.back()}});
    TensorRef wt = r.op("aten.permute.default", {weight, std::vector<int64_t>{1, 0}});
    TensorRef mm = r.op("aten.addmm.default", {bias, flat, wt});
    std::vector<int64_t> out(x.sizes.begin(), x.sizes.end() - 1);
    const std::vector<int64_t> ws = r.spec(weight.id).sizes;
    if (ws.size() == 2) out.push_back(ws[0]);
    return last("aten.view.default", {mm, final ? r.resultSpec().sizes : out});
  }
  TensorRef wt = r.op("aten.permute.default", {weight, std::vector<int64_t>{1, 0}});
  if (!hasBias) return matmul(r, input, wt, final);
  TensorRef y = matmul(r, input, wt, false);
  return last("aten.add.Tensor", {y, bias});
}

void linear(Rewrite& r) {
  linearOn(r, argRef(r, "input"), argRef(r, "weight"), r.isNone("bias") ? TensorRef{} : argRef(r, "bias"), true);
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

/// Whether ATen picks the CPU flash kernel for this attention (select_sdp_backend_cpp's
/// checks that can fail here): its decomposition then lays the output out as that kernel
/// does; otherwise the math kernel's output is the result as it is.
bool flashOnCpu(Rewrite& r) {
  const TensorSpec q = r.tensor("query"), k = r.tensor("key"), v = r.tensor("value");
  if (q.dtype != ScalarType::Float && q.dtype != ScalarType::Double && q.dtype != ScalarType::Half &&
      q.dtype != ScalarType::BFloat16)
    return false;
  if (q.sizes[3] != k.sizes[3] || q.sizes[3] != v.sizes[3]) return false;  // head sizes
  if (q.sizes[0] != k.sizes[0] || q.sizes[0] != v.sizes[0] || k.sizes[1] != v.sizes[1]) return false;
  if (q.sizes[2] == 0 || k.sizes[2] == 0) return false;
  for (const TensorSpec* t : {&q, &k, &v})
    if (t->sizes[3] != 1 && stridesOf(*t)[3] != 1) return false;
  if (r.isNone("attn_mask")) return true;
  const TensorSpec mask = r.tensor("attn_mask");
  const size_t rank = mask.sizes.size();
  if (rank < 2) return false;
  const int64_t rows = mask.sizes[rank - 2], cols = mask.sizes[rank - 1];
  if ((rows != q.sizes[2] && rows != 1) || (cols != k.sizes[2] && cols != 1)) return false;
  if (rank == 2) return true;
  return rank == 4 && (mask.sizes[0] == 1 || mask.sizes[0] == q.sizes[0]) &&
         (mask.sizes[1] == 1 || mask.sizes[1] == q.sizes[1]);
}

/// scaled_dot_product_attention in its math form (PyTorch's decomposition for
/// CPU): q and k^T each scaled by sqrt(scale); a boolean mask becomes 0 / -inf
/// and is added; a softmax that gives 0 on rows that are all -inf; then, when ATen
/// would run the flash kernel, the output laid out as that kernel lays it out.
void sdpa(Rewrite& r) {
  const TensorSpec& q = r.tensor("query");
  const TensorSpec& k = r.tensor("key");
  const size_t rank = q.sizes.size();
  if (rank < 2 || k.sizes.size() != rank || r.tensor("value").sizes.size() != rank)
    return r.fail("scaled_dot_product_attention on tensors of different or fewer than 2 dimensions is not decomposed yet");
  if (r.integer("is_causal").value_or(0) != 0) return r.fail("scaled_dot_product_attention with is_causal=True is not decomposed yet");
  if (r.number("dropout_p").value_or(0) != 0) return r.fail("scaled_dot_product_attention with dropout is not decomposed");
  if (rank == 4 && q.sizes[1] != k.sizes[1]) return r.fail("grouped-query scaled_dot_product_attention is not decomposed yet");
  double scale = r.isNone("scale") ? 1.0 / std::sqrt(static_cast<double>(q.sizes.back())) : r.number("scale").value_or(1);
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
  std::vector<int64_t> swapLast(rank);  // k^T: the last two dimensions swapped
  std::iota(swapLast.begin(), swapLast.end(), int64_t(0));
  std::swap(swapLast[rank - 2], swapLast[rank - 1]);
  TensorRef kt = r.op("aten.permute.default", {argRef(r, "key"), swapLast});
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
  if (rank != 4 || !flashOnCpu(r)) {  // the math kernel's output as it is (the flash kernel takes 4-d only)
    matmul(r, probs, argRef(r, "value"), true);
    return;
  }
  TensorRef out = matmul(r, probs, argRef(r, "value"), false);
  // The flash kernel's layout: (L, N, H, E) in memory.
  TensorRef lnhe = r.op("aten.permute.default", {out, std::vector<int64_t>{2, 0, 1, 3}});
  if (!isContiguous(r.spec(lnhe.id))) lnhe = r.op("aten.clone.default", {lnhe, int64_t(0)});
  r.finish("aten.permute.default", {lnhe, std::vector<int64_t>{1, 2, 0, 3}});
}

/// unbind(x, 0) as the decomposition writes it: every slice, then every squeeze.
std::vector<TensorRef> unbindFirst(Rewrite& r, TensorRef x) {
  const int64_t n = r.spec(x.id).sizes.empty() ? 0 : r.spec(x.id).sizes[0];
  std::vector<TensorRef> slices, out;
  for (int64_t i = 0; i < n; ++i) slices.push_back(r.op("aten.slice.Tensor", {x, int64_t(0), i, i + 1}));
  for (TensorRef s : slices) out.push_back(r.op("aten.squeeze.dims", {s, std::vector<int64_t>{0}}));
  return out;
}

/// `t` split into `count` gates of `hidden` along its last dimension `dim` (ATen's chunk /
/// unsafe_chunk, as split_with_sizes); empty when that size is not count * hidden.
std::vector<TensorRef> splitGates(Rewrite& r, TensorRef t, int64_t count, int64_t hidden, int64_t dim) {
  TensorSpec part = r.spec(t.id);
  if (part.sizes.size() != static_cast<size_t>(dim) + 1 || part.sizes[static_cast<size_t>(dim)] != count * hidden) return {};
  part.sizes[static_cast<size_t>(dim)] = hidden;
  part.strides.clear();
  part.dimOrder.clear();
  const std::vector<TensorSpec> specs(static_cast<size_t>(count), part);
  return r.call("aten.split_with_sizes.default", {t, std::vector<int64_t>(static_cast<size_t>(count), hidden), dim}, &specs);
}

/// The backward direction reads the input projection [steps, batch, ...] flipped in time.
TensorRef flipInTime(Rewrite& r, TensorRef projected) {
  const std::vector<TensorSpec> same{r.spec(projected.id)};
  return r.op("aten.flip.default", {projected, std::vector<int64_t>{0}}, &same);
}

/// One direction of a recurrent layer: `step` per time step of the input projection
/// (flipped already for the backward direction), the steps' outputs concatenated in
/// time order (backward: reversed back), written into the node's result 0 when `final`.
template <class Step>
TensorRef runDirection(Rewrite& r, TensorRef projected, bool reverse, bool final, Step step) {
  std::vector<TensorRef> outputs;
  for (TensorRef x : unbindFirst(r, projected)) {
    outputs.push_back(step(x));
    if (r.failure()) return {};
  }
  if (reverse) std::reverse(outputs.begin(), outputs.end());
  if (final) {
    r.into(0, "aten.cat.default", {outputs});
    return TensorRef{r.result(0)};
  }
  return r.op("aten.cat.default", {outputs});
}

/// After each layer: both directions' outputs joined along features (bidirectional), into
/// the node's result 0 at the last layer unless batch_first still has to permute it.
TensorRef joinDirections(Rewrite& r, const std::vector<TensorRef>& outs, bool final) {
  if (outs.size() == 1) return outs[0];
  if (final) {
    r.into(0, "aten.cat.default", {outs, int64_t(2)});
    return TensorRef{r.result(0)};
  }
  return r.op("aten.cat.default", {outs, int64_t(2)});
}

/// The layers of an unrolled lstm, gru or rnn in PyTorch's order: per layer each direction
/// (forward, then backward) by `direction(layerInput, group, reverse, final)`, `group` the
/// index of its parameters and state, `final` when its output is the node's; the
/// directions' outputs joined into the next layer's input. Returns the last layer's output.
template <class Direction>
TensorRef unrollLayers(Rewrite& r, TensorRef input, int64_t layers, int64_t dirs, bool batchFirst, Direction direction) {
  for (int64_t l = 0; l < layers && !r.failure(); ++l) {
    const bool lastLayer = l + 1 == layers && !batchFirst;
    std::vector<TensorRef> outs;
    for (int64_t d = 0; d < dirs && !r.failure(); ++d) {
      outs.push_back(direction(input, static_cast<size_t>(l * dirs + d), d == 1, lastLayer && dirs == 1));
      if (r.failure()) return input;
    }
    input = joinDirections(r, outs, lastLayer);
  }
  return input;
}

/// x @ W^T (+ b) as the recurrent decompositions call F.linear, or linear itself when
/// preserve_ops keeps it whole.
TensorRef recurrentLinear(Rewrite& r, TensorRef in, TensorRef w, TensorRef b) {
  if (!r.preserved("aten::linear", "default")) return linearOn(r, in, w, b, false);
  return b.id == kNoValue ? r.op("aten.linear.default", {in, w}) : r.op("aten.linear.default", {in, w, b});
}

/// lstm.input as PyTorch's decomposition (lstm_impl, one_layer_lstm, lstm_cell)
/// unrolls it: per layer and direction (forward, then backward over the flipped
/// projection) the input projection for every step at once, then per step
/// hx @ W_hh^T + b_hh plus that step's projection, split into four gates,
/// c' = sigmoid(f) * c + sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c'); the
/// steps' h concatenated (the directions' joined along features); final h and c
/// stacked per layer and direction.
void lstm(Rewrite& r) {
  const TensorSpec x = r.tensor("input");
  const std::vector<ValueId> hx = r.tensors("hx"), params = r.tensors("params");
  const bool hasBiases = r.integer("has_biases").value_or(1) != 0, batchFirst = r.integer("batch_first").value_or(0) != 0;
  const int64_t layers = r.integer("num_layers").value_or(1);
  const int64_t dirs = r.integer("bidirectional").value_or(0) != 0 ? 2 : 1;
  if (r.integer("train").value_or(0) != 0 && r.number("dropout").value_or(0) != 0 && layers > 1)
    return r.fail("lstm dropout in training mode has no core ATen form ExecuTorch runs; export the model in eval()");
  const size_t perLayer = hasBiases ? 4 : 2;
  if (hx.size() != 2 || layers < 1 || params.size() != perLayer * static_cast<size_t>(layers * dirs))
    return r.fail("an lstm with projections (proj_size) is not decomposed yet");
  if (x.sizes.size() != 3 || !x.symbols.empty()) return r.fail("an lstm on an unbatched or dynamically sized input is not decomposed yet");
  const TensorSpec h0 = r.spec(hx[0]);
  if (h0.sizes.size() != 3 || h0.sizes != r.spec(hx[1]).sizes || h0.sizes[0] != layers * dirs)
    return r.fail("lstm hidden states that are not [layers * directions, batch, hidden] alike");
  const int64_t hidden = h0.sizes[2];
  const std::vector<TensorRef> hs = unbindFirst(r, TensorRef{hx[0]}), cs = unbindFirst(r, TensorRef{hx[1]});
  TensorRef input{r.arg("input")};
  if (batchFirst) input = r.op("aten.permute.default", {input, std::vector<int64_t>{1, 0, 2}});
  std::vector<TensorRef> finalH, finalC;
  input = unrollLayers(r, input, layers, dirs, batchFirst, [&](TensorRef layerInput, size_t group, bool reverse, bool final) {
    auto param = [&](size_t k) { return TensorRef{params[group * perLayer + k]}; };
    const TensorRef noBias{};
    TensorRef h = r.op("aten.unsqueeze.default", {hs[group], int64_t(0)});
    TensorRef c = r.op("aten.unsqueeze.default", {cs[group], int64_t(0)});
    TensorRef projected = recurrentLinear(r, layerInput, param(0), hasBiases ? param(2) : noBias);
    if (reverse) projected = flipInTime(r, projected);
    TensorRef steps = runDirection(r, projected, reverse, final, [&](TensorRef step) {
      TensorRef recurrent = recurrentLinear(r, h, param(1), hasBiases ? param(3) : noBias);
      TensorRef gates = r.op("aten.add.Tensor", {recurrent, step});
      if (r.failure()) return TensorRef{};
      auto g = splitGates(r, gates, 4, hidden, 2);
      if (g.size() != 4) {
        r.fail("lstm weights whose shapes do not give four gates of the hidden size");
        return TensorRef{};
      }
      TensorRef in = r.op("aten.sigmoid.default", {g[0]}), forget = r.op("aten.sigmoid.default", {g[1]});
      TensorRef cell = r.op("aten.tanh.default", {g[2]}), out = r.op("aten.sigmoid.default", {g[3]});
      TensorRef kept = r.op("aten.mul.Tensor", {forget, c}), added = r.op("aten.mul.Tensor", {in, cell});
      c = r.op("aten.add.Tensor", {kept, added});
      h = r.op("aten.mul.Tensor", {out, r.op("aten.tanh.default", {c})});
      return h;
    });
    if (r.failure()) return steps;
    finalH.push_back(r.op("aten.squeeze.dims", {h, std::vector<int64_t>{0}}));
    finalC.push_back(r.op("aten.squeeze.dims", {c, std::vector<int64_t>{0}}));
    return steps;
  });
  if (r.failure()) return;
  if (batchFirst) r.into(0, "aten.permute.default", {input, std::vector<int64_t>{1, 0, 2}});
  const std::pair<size_t, const std::vector<TensorRef>*> stacked[] = {{1, &finalH}, {2, &finalC}};
  for (const auto& [result, list] : stacked) {
    TensorRef joined = r.op("aten.cat.default", {*list});
    r.into(result, "aten.view.default", {joined, r.resultSpec(result).sizes});
  }
}


/// An optional tensor argument: the tensor, or none (kNoValue) when absent or None.
TensorRef optionalTensor(Rewrite& r, std::string_view name) {
  return r.arg(name) == kNoValue || r.isNone(name) ? TensorRef{} : TensorRef{r.arg(name)};
}

/// lstm_cell(input, (h, c), w_ih, w_hh, b_ih, b_hh) as ATen's LSTMCell: h @ W_hh^T + b_hh
/// plus input @ W_ih^T + b_ih, four gates split along dim 1, c' = sigmoid(f) * c +
/// sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c'); results (h', c').
void lstmCell(Rewrite& r) {
  const std::vector<ValueId> hx = r.tensors("hx");
  if (hx.size() != 2) return r.fail("lstm_cell needs hx as (h, c)");
  const TensorSpec h = r.spec(hx[0]);
  if (h.sizes.size() != 2 || !h.symbols.empty()) return r.fail("an lstm_cell on an unbatched or dynamically sized state is not decomposed yet");
  const int64_t hidden = h.sizes[1];
  TensorRef recurrent = recurrentLinear(r, TensorRef{hx[0]}, argRef(r, "w_hh"), optionalTensor(r, "b_hh"));
  TensorRef projected = recurrentLinear(r, argRef(r, "input"), argRef(r, "w_ih"), optionalTensor(r, "b_ih"));
  TensorRef gates = r.op("aten.add.Tensor", {recurrent, projected});
  if (r.failure()) return;
  auto g = splitGates(r, gates, 4, hidden, 1);
  if (g.size() != 4) return r.fail("lstm_cell weights whose shapes do not give four gates of the hidden size");
  TensorRef in = r.op("aten.sigmoid.default", {g[0]}), forget = r.op("aten.sigmoid.default", {g[1]});
  TensorRef cell = r.op("aten.tanh.default", {g[2]}), out = r.op("aten.sigmoid.default", {g[3]});
  TensorRef kept = r.op("aten.mul.Tensor", {forget, TensorRef{hx[1]}}), added = r.op("aten.mul.Tensor", {in, cell});
  r.into(1, "aten.add.Tensor", {kept, added});
  TensorRef c{r.result(1)};
  r.into(0, "aten.mul.Tensor", {out, r.op("aten.tanh.default", {c})});
}

/// gru_cell as ATen's GRUCell: input @ W_ih^T + b_ih and h @ W_hh^T + b_hh, each chunked in
/// three along dim 1; r = sigmoid(h_0 + x_0), z = sigmoid(h_1 + x_1), n = tanh(x_2 + h_2 * r),
/// h' = (h - n) * z + n. rnn_tanh_cell / rnn_relu_cell as its SimpleCell:
/// act(h @ W_hh^T + b_hh + input @ W_ih^T + b_ih).
void recurrentCell(Rewrite& r, const char* kind) {
  const bool gru = std::string_view(kind) == "gru_cell";
  const TensorSpec h = r.tensor("hx");
  if (h.sizes.size() != 2 || !h.symbols.empty())
    return r.fail(std::string("a ") + kind + " on an unbatched or dynamically sized state is not decomposed yet");
  const int64_t hidden = h.sizes[1];
  if (!gru) {
    TensorRef recurrent = recurrentLinear(r, argRef(r, "hx"), argRef(r, "w_hh"), optionalTensor(r, "b_hh"));
    TensorRef projected = recurrentLinear(r, argRef(r, "input"), argRef(r, "w_ih"), optionalTensor(r, "b_ih"));
    TensorRef sum = r.op("aten.add.Tensor", {recurrent, projected});
    return r.finish(std::string_view(kind) == "rnn_relu_cell" ? "aten.relu.default" : "aten.tanh.default", {sum});
  }
  std::vector<TensorRef> xi =
      splitGates(r, recurrentLinear(r, argRef(r, "input"), argRef(r, "w_ih"), optionalTensor(r, "b_ih")), 3, hidden, 1);
  std::vector<TensorRef> hi =
      splitGates(r, recurrentLinear(r, argRef(r, "hx"), argRef(r, "w_hh"), optionalTensor(r, "b_hh")), 3, hidden, 1);
  if (r.failure()) return;
  if (xi.size() != 3 || hi.size() != 3) return r.fail("gru_cell weights whose shapes do not give three gates of the hidden size");
  TensorRef reset = r.op("aten.sigmoid.default", {r.op("aten.add.Tensor", {hi[0], xi[0]})});
  TensorRef update = r.op("aten.sigmoid.default", {r.op("aten.add.Tensor", {hi[1], xi[1]})});
  TensorRef fresh = r.op("aten.tanh.default", {r.op("aten.add.Tensor", {xi[2], r.op("aten.mul.Tensor", {hi[2], reset})})});
  TensorRef kept = r.op("aten.mul.Tensor", {r.op("aten.sub.Tensor", {argRef(r, "hx"), fresh}), update});
  r.finish("aten.add.Tensor", {kept, fresh});
}
void gruCell(Rewrite& r) { recurrentCell(r, "gru_cell"); }
void rnnTanhCell(Rewrite& r) { recurrentCell(r, "rnn_tanh_cell"); }
void rnnReluCell(Rewrite& r) { recurrentCell(r, "rnn_relu_cell"); }

/// rnn_tanh.input, rnn_relu.input and gru.input as PyTorch's decompositions (_rnn_helper,
/// one_layer_rnn with rnn_cell or gru_cell) unroll them: the state unbound per layer, per
/// layer the input projection for every step at once, then per step
///   rnn: h' = act(h @ W_hh^T + b_hh + x_t)
///   gru: x_t and h @ W_hh^T + b_hh chunked in three, r = sigmoid(h_0 + x_0),
///        z = sigmoid(h_1 + x_1), n = tanh(x_2 + h_2 * r), h' = (h - n) * z + n;
/// the steps' h concatenated, each layer's last h stacked.
void recurrent(Rewrite& r, const char* kind) {
  const bool gru = std::string_view(kind) == "gru";
  const TensorSpec x = r.tensor("input");
  const std::vector<ValueId> params = r.tensors("params");
  const bool hasBiases = r.integer("has_biases").value_or(1) != 0, batchFirst = r.integer("batch_first").value_or(0) != 0;
  const int64_t layers = r.integer("num_layers").value_or(1);
  const int64_t dirs = r.integer("bidirectional").value_or(0) != 0 ? 2 : 1;
  const size_t perLayer = hasBiases ? 4 : 2;
  if (layers < 1 || params.size() != perLayer * static_cast<size_t>(layers * dirs))
    return r.fail(std::string(kind) + " parameters that are not (w_ih, w_hh[, b_ih, b_hh]) per layer and direction");
  if (x.sizes.size() != 3 || !x.symbols.empty())
    return r.fail(std::string("a ") + kind + " on an unbatched or dynamically sized input is not decomposed yet");
  const TensorSpec h0 = r.tensor("hx");
  if (h0.sizes.size() != 3 || h0.sizes[0] != layers * dirs)
    return r.fail(std::string(kind) + " state that is not [layers * directions, batch, hidden]");
  const int64_t hidden = h0.sizes[2];
  const std::vector<TensorRef> hs = unbindFirst(r, argRef(r, "hx"));
  TensorRef input = argRef(r, "input");
  if (batchFirst) input = r.op("aten.permute.default", {input, std::vector<int64_t>{1, 0, 2}});
  std::vector<TensorRef> finalH;
  input = unrollLayers(r, input, layers, dirs, batchFirst, [&](TensorRef layerInput, size_t group, bool reverse, bool final) {
    auto param = [&](size_t k) { return TensorRef{params[group * perLayer + k]}; };
    const TensorRef noBias{};
    TensorRef projected = recurrentLinear(r, layerInput, param(0), hasBiases ? param(2) : noBias);
    if (r.failure()) return TensorRef{};
    if (reverse) projected = flipInTime(r, projected);  // one_layer_rnn: before the state's unsqueeze
    TensorRef h = r.op("aten.unsqueeze.default", {hs[group], int64_t(0)});
    TensorRef steps = runDirection(r, projected, reverse, final, [&](TensorRef step) {
      std::vector<TensorRef> xi;
      if (gru) xi = splitGates(r, step, 3, hidden, 1);  // gru_cell chunks x_t [batch, 3h] first
      TensorRef hh = recurrentLinear(r, h, param(1), hasBiases ? param(3) : noBias);
      if (r.failure()) return TensorRef{};
      if (!gru) {
        TensorRef sum = r.op("aten.add.Tensor", {hh, step});
        h = r.op(std::string_view(kind) == "rnn_relu" ? "aten.relu.default" : "aten.tanh.default", {sum});
        return h;
      }
      std::vector<TensorRef> hi = splitGates(r, hh, 3, hidden, 2);  // h @ W_hh^T: [1, batch, 3h]
      if (xi.size() != 3 || hi.size() != 3) {
        r.fail("gru weights whose shapes do not give three gates of the hidden size");
        return TensorRef{};
      }
      TensorRef reset = r.op("aten.sigmoid.default", {r.op("aten.add.Tensor", {hi[0], xi[0]})});
      TensorRef update = r.op("aten.sigmoid.default", {r.op("aten.add.Tensor", {hi[1], xi[1]})});
      TensorRef fresh = r.op("aten.tanh.default", {r.op("aten.add.Tensor", {xi[2], r.op("aten.mul.Tensor", {hi[2], reset})})});
      TensorRef kept = r.op("aten.mul.Tensor", {r.op("aten.sub.Tensor", {h, fresh}), update});
      h = r.op("aten.add.Tensor", {kept, fresh});
      return h;
    });
    if (r.failure()) return steps;
    finalH.push_back(r.op("aten.squeeze.dims", {h, std::vector<int64_t>{0}}));
    return steps;
  });
  if (r.failure()) return;
  if (batchFirst) r.into(0, "aten.permute.default", {input, std::vector<int64_t>{1, 0, 2}});
  TensorRef joined = r.op("aten.cat.default", {finalH});
  r.into(1, "aten.view.default", {joined, r.resultSpec(1).sizes});
}
void gruRule(Rewrite& r) { recurrent(r, "gru"); }
void rnnTanh(Rewrite& r) { recurrent(r, "rnn_tanh"); }
void rnnRelu(Rewrite& r) { recurrent(r, "rnn_relu"); }

}  // namespace

void registerLinearAlgebraRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::linear.default", linear},
                     {"aten::matmul.default", matmulRule},
                     {"aten::baddbmm.default", baddbmm},
                     {"aten::lstm.input", lstm},
                     {"aten::lstm_cell.default", lstmCell},
                     {"aten::gru_cell.default", gruCell},
                     {"aten::rnn_tanh_cell.default", rnnTanhCell},
                     {"aten::rnn_relu_cell.default", rnnReluCell},
                     {"aten::gru.input", gruRule},
                     {"aten::rnn_tanh.input", rnnTanh},
                     {"aten::rnn_relu.input", rnnRelu},
                     {"aten::scaled_dot_product_attention.default", sdpa}});
}

}  // namespace lstudio::decompositions
