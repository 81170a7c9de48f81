// Activations, softmax and dropout as PyTorch's core ATen decompositions write them.
#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorRef self(Rewrite& r) { return TensorRef{r.arg("self")}; }

/// silu(x) = x * sigmoid(x)
void silu(Rewrite& r) {
  TensorRef s = r.op("aten.sigmoid.default", {self(r)});
  r.finish("aten.mul.Tensor", {self(r), s});
}

/// hardsigmoid(x) = clamp(clamp(x + 3, min=0), max=6) / 6
TensorRef clampedShift(Rewrite& r) {
  TensorRef a = r.op("aten.add.Tensor", {self(r), int64_t(3)});
  TensorRef lo = r.op("aten.clamp.default", {a, int64_t(0)});
  return r.op("aten.clamp.default", {lo, None{}, int64_t(6)});
}
void hardsigmoid(Rewrite& r) { r.finish("aten.div.Tensor", {clampedShift(r), int64_t(6)}); }
/// hardswish(x) = x * clamp(clamp(x + 3, min=0), max=6) / 6
void hardswish(Rewrite& r) {
  TensorRef c = clampedShift(r);
  TensorRef p = r.op("aten.mul.Tensor", {self(r), c});
  r.finish("aten.div.Tensor", {p, int64_t(6)});
}

/// The scalar argument as the node has it (an int stays an int), or `fallback`
/// when the call left it at its default.
BuildArg scalarOr(Rewrite& r, const char* name, BuildArg fallback) {
  ValueId v = r.arg(name);
  return v == kNoValue || r.isNone(name) ? fallback : BuildArg(TensorRef{v});
}

bool floatingSelf(Rewrite& r) {
  ScalarType t = r.tensor("self").dtype;
  return t == ScalarType::Float || t == ScalarType::Double;
}

/// softplus(x, beta, threshold) = where(x * beta > threshold, x, log1p(exp(x * beta)) / beta); torch's
/// reference scales only when the call spells a beta out (torch.export leaves a default one out).
void softplus(Rewrite& r) {
  if (!floatingSelf(r)) return r.fail("softplus on a tensor that is not float32 or float64 is not decomposed yet");
  const bool scaled = r.spelled("beta");
  const BuildArg beta = scalarOr(r, "beta", int64_t(1));
  TensorRef x = scaled ? r.op("aten.mul.Tensor", {self(r), beta}) : self(r);
  TensorRef e = r.op("aten.exp.default", {x});
  TensorRef l = r.op("aten.log1p.default", {e});
  TensorRef rhs = scaled ? r.op("aten.div.Tensor", {l, beta}) : l;
  TensorRef big = r.op("aten.gt.Scalar", {x, scalarOr(r, "threshold", int64_t(20))});
  r.finish("aten.where.self", {big, self(r), rhs});
}

/// mish(x) = x * tanh(softplus(x)), softplus without a beta (no scaling)
void mish(Rewrite& r) {
  if (!floatingSelf(r)) return r.fail("mish on a tensor that is not float32 or float64 is not decomposed yet");
  TensorRef e = r.op("aten.exp.default", {self(r)});
  TensorRef l = r.op("aten.log1p.default", {e});
  TensorRef big = r.op("aten.gt.Scalar", {self(r), int64_t(20)});
  TensorRef sp = r.op("aten.where.self", {big, self(r), l});
  TensorRef t = r.op("aten.tanh.default", {sp});
  r.finish("aten.mul.Tensor", {self(r), t});
}

/// glu(x, dim) = first half * sigmoid(second half) along dim
void glu(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  const int64_t dim = wrapDim(r.integer("dim").value_or(-1), x.sizes.size());
  if (dim < 0 || dim >= static_cast<int64_t>(x.sizes.size())) return r.fail("a dimension out of range");
  const int64_t size = x.sizes[dim];
  if (size % 2) return r.fail("glu halves a dimension of odd size " + std::to_string(size));
  TensorRef a = r.op("aten.slice.Tensor", {self(r), dim, int64_t(0), size / 2});
  TensorRef b = r.op("aten.slice.Tensor", {self(r), dim, size / 2, size});
  TensorRef s = r.op("aten.sigmoid.default", {b});
  r.finish("aten.mul.Tensor", {a, s});
}

/// prelu(x, w) = where(x > 0, x, w * x), w viewed to broadcast along the channels (dim 1)
void prelu(Rewrite& r) {
  const TensorSpec x = r.tensor("self"), w = r.tensor("weight");
  if (w.sizes.size() > 1) return r.fail("prelu with a weight of more than one dimension");
  std::vector<int64_t> shape(x.sizes.size(), 1);
  if (x.sizes.size() >= 2) shape[1] = w.sizes.empty() ? 1 : w.sizes[0];
  TensorRef weight{r.arg("weight")};
  if (!x.sizes.empty()) weight = r.op("aten.view.default", {weight, shape});
  TensorRef positive = r.op("aten.gt.Scalar", {self(r), int64_t(0)});
  TensorRef scaled = r.op("aten.mul.Tensor", {weight, self(r)});
  r.finish("aten.where.self", {positive, self(r), scaled});
}

/// softmax.int / log_softmax.int -> _softmax / _log_softmax(x, dim, half_to_float=False)
void softmaxLike(Rewrite& r, const char* target) {
  if (!r.isNone("dtype")) return r.fail("softmax with an explicit dtype is not decomposed yet");
  r.finish(target, {self(r), TensorRef{r.arg("dim")}, false});
}
void softmax(Rewrite& r) { softmaxLike(r, "aten._softmax.default"); }
void logSoftmax(Rewrite& r) { softmaxLike(r, "aten._log_softmax.default"); }

/// dropout in evaluation is a copy; in training it draws random numbers, which
/// ExecuTorch's portable kernels cannot.
void dropout(Rewrite& r) {
  if (r.integer("train").value_or(1) != 0 && r.number("p").value_or(0) != 0)
    return r.fail("dropout in training mode (train=True) has no core ATen form ExecuTorch runs; export the model in eval()");
  r.finish("aten.clone.default", {TensorRef{r.arg("input")}});
}

}  // namespace

/// threshold(x, threshold, value) = where(x <= threshold, value, x).
void threshold(Rewrite& r) {
  TensorRef below = r.op("aten.le.Scalar", {self(r), TensorRef{r.arg("threshold")}});
  TensorRef value = r.op("aten.scalar_tensor.default", {TensorRef{r.arg("value")}, r.tensor("self").dtype, int64_t(0), "cpu"});
  r.finish("aten.where.self", {below, value, self(r)});
}

/// where with a number for self or other: the number as a scalar_tensor of the result's dtype
/// (ATen's result type), then where.self; with two numbers, other's tensor is made first.
void whereScalar(Rewrite& r) {
  const ScalarType dtype = r.resultSpec().dtype;
  auto operand = [&](const char* name) -> TensorRef {
    if (r.method().values[r.arg(name)].isTensor()) return TensorRef{r.arg(name)};
    return r.op("aten.scalar_tensor.default", {TensorRef{r.arg(name)}, dtype, int64_t(0), "cpu"});
  };
  TensorRef other = operand("other");
  TensorRef value = operand("self");
  r.finish("aten.where.self", {TensorRef{r.arg("condition")}, value, other});
}

/// rsub(x, number, alpha) = sub(number, x, alpha): the number is lifted to a tensor later.
void rsubScalar(Rewrite& r) {
  if (r.number("alpha").value_or(1) != 1)
    return r.finish("aten.sub.Tensor", {TensorRef{r.arg("other")}, self(r), TensorRef{r.arg("alpha")}});
  r.finish("aten.sub.Tensor", {TensorRef{r.arg("other")}, self(r)});
}

/// hardshrink(x, lambd) = where(|x| <= lambd, 0, x).
void hardshrink(Rewrite& r) {
  TensorRef mag = r.op("aten.abs.default", {self(r)});
  TensorRef small = r.op("aten.le.Scalar", {mag, scalarOr(r, "lambd", 0.5)});
  TensorRef zero = r.op("aten.scalar_tensor.default", {int64_t(0), r.tensor("self").dtype, int64_t(0), "cpu"});
  r.finish("aten.where.self", {small, zero, self(r)});
}

/// log_sigmoid(x) = min(0, x) - log1p(exp(-|x|)).
void logSigmoid(Rewrite& r) {
  if (!floatingSelf(r)) return r.fail("log_sigmoid on a tensor that is not float32 or float64 is not decomposed yet");
  const ScalarType dtype = r.tensor("self").dtype;
  const std::vector<TensorSpec> scalar{denseSpec(dtype, {})};
  TensorRef zero = r.op("aten.full.default", {std::vector<int64_t>{}, int64_t(0), dtype, int64_t(0), "cpu", false}, &scalar);
  TensorRef lower = r.op("aten.minimum.default", {zero, self(r)});
  TensorRef mag = r.op("aten.abs.default", {self(r)});
  TensorRef e = r.op("aten.exp.default", {r.op("aten.neg.default", {mag})});
  r.finish("aten.sub.Tensor", {lower, r.op("aten.log1p.default", {e})});
}

/// celu(x, alpha) = where(x > 0, x, alpha * expm1(x / alpha)); without an alpha, expm1(x).
/// torch.export leaves out an argument equal to its default, so alpha = 1 is "without".
void celu(Rewrite& r) {
  if (!floatingSelf(r)) return r.fail("celu on a tensor that is not float32 or float64 is not decomposed yet");
  TensorRef rhs;
  if (r.isNone("alpha") || r.number("alpha") == 1.0) {
    rhs = r.op("aten.expm1.default", {self(r)});
  } else {
    BuildArg alpha = TensorRef{r.arg("alpha")};
    TensorRef e = r.op("aten.expm1.default", {r.op("aten.div.Tensor", {self(r), alpha})});
    rhs = r.op("aten.mul.Tensor", {e, alpha});
  }
  TensorRef positive = r.op("aten.gt.Scalar", {self(r), int64_t(0)});
  r.finish("aten.where.self", {positive, self(r), rhs});
}

/// relu6(x) = hardtanh(x, 0, 6).
void relu6(Rewrite& r) { r.finish("aten.hardtanh.default", {self(r), int64_t(0), int64_t(6)}); }

/// selu(x) = elu(x, alpha, scale) with SELU's two constants.
void selu(Rewrite& r) { r.finish("aten.elu.default", {self(r), 1.6732632423543772, 1.0507009873554805}); }

void registerActivationRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::silu.default", silu},
                     {"aten::where.ScalarSelf", whereScalar},
                     {"aten::where.ScalarOther", whereScalar},
                     {"aten::where.Scalar", whereScalar},
                     {"aten::rsub.Scalar", rsubScalar},
                     {"aten::hardsigmoid.default", hardsigmoid},
                     {"aten::hardswish.default", hardswish},
                     {"aten::softplus.default", softplus},
                     {"aten::mish.default", mish},
                     {"aten::glu.default", glu},
                     {"aten::prelu.default", prelu},
                     {"aten::softmax.int", softmax},
                     {"aten::log_softmax.int", logSoftmax},
                     {"aten::dropout.default", dropout},
                     {"aten::threshold.default", threshold},
                     {"aten::hardshrink.default", hardshrink},
                     {"aten::log_sigmoid.default", logSigmoid},
                     {"aten::celu.default", celu},
                     {"aten::selu.default", selu},
                     {"aten::relu6.default", relu6}});
}

}  // namespace lstudio::decompositions
