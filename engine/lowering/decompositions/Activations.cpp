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

void registerActivationRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::silu.default", silu},
                     {"aten::hardsigmoid.default", hardsigmoid},
                     {"aten::hardswish.default", hardswish},
                     {"aten::softmax.int", softmax},
                     {"aten::log_softmax.int", logSoftmax},
                     {"aten::dropout.default", dropout}});
}

}  // namespace lstudio::decompositions
