// Shape and dtype operators, factory functions and small elementwise
// spellings as PyTorch's core ATen decompositions write them.
#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorRef argRef(Rewrite& r, const char* name) { return TensorRef{r.arg(name)}; }

/// The node's result is `x` viewed (or copied, then viewed) at the result's
/// sizes, spelled as `size` when given (reshape keeps the caller's -1).
void finishReshape(Rewrite& r, TensorRef x, std::optional<BuildArg> size = std::nullopt) {
  const TensorSpec& t = r.spec(x.id);
  const std::vector<int64_t> sizes = r.resultSpec().sizes;
  if (!viewStrides(t.sizes, stridesOf(t), sizes)) x = r.op("aten.clone.default", {x, int64_t(0)});  // contiguous_format
  r.finish("aten.view.default", {x, size ? *size : BuildArg(sizes)});
}

/// The argument, or `fallback` when it is None.
BuildArg orDefault(Rewrite& r, const char* name, BuildArg fallback) {
  if (r.isNone(name)) return fallback;
  return BuildArg(TensorRef{r.arg(name)});
}

bool inRange(int64_t d, size_t rank) { return d >= 0 && d < static_cast<int64_t>(rank); }

bool hasSymbols(const TensorSpec& t) { return !t.symbols.empty(); }

void reshapeRule(Rewrite& r) {
  if (hasSymbols(r.resultSpec())) return r.fail("reshape to a size with symbols is not decomposed yet");
  finishReshape(r, argRef(r, "self"), argRef(r, "shape"));
}

void flatten(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  int64_t start = wrapDim(r.integer("start_dim").value_or(0), x.sizes.size());
  int64_t end = wrapDim(r.integer("end_dim").value_or(-1), x.sizes.size());
  if (!x.sizes.empty() && start == end) return r.resultIs(r.arg("self"));
  if (hasSymbols(r.resultSpec())) return r.fail("flatten of a tensor with symbolic sizes is not decomposed yet");
  finishReshape(r, argRef(r, "self"));
}

void contiguous(Rewrite& r) {
  if (isContiguous(r.tensor("self"))) return r.resultIs(r.arg("self"));
  r.finish("aten.clone.default", {argRef(r, "self"), int64_t(0)});
}

void transpose(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  size_t rank = x.sizes.size();
  if (rank < 2) return r.finish("aten.alias.default", {argRef(r, "self")});
  int64_t a = wrapDim(r.integer("dim0").value_or(0), rank), b = wrapDim(r.integer("dim1").value_or(1), rank);
  if (!inRange(a, rank) || !inRange(b, rank)) return r.fail("a dimension out of range");
  std::vector<int64_t> dims;
  for (size_t d = 0; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
  std::swap(dims[a], dims[b]);
  r.finish("aten.permute.default", {argRef(r, "self"), dims});
}

void matrixTranspose(Rewrite& r) {
  if (r.tensor("self").sizes.size() < 2) return r.finish("aten.alias.default", {argRef(r, "self")});
  r.finish("aten.permute.default", {argRef(r, "self"), std::vector<int64_t>{1, 0}});
}

void narrow(Rewrite& r) {
  auto start = r.integer("start"), length = r.integer("length");
  if (!start || !length) return r.fail("narrow with a symbolic start or length is not decomposed yet");
  const TensorSpec& x = r.tensor("self");
  int64_t dim = r.integer("dim").value_or(0);
  if (!inRange(wrapDim(dim, x.sizes.size()), x.sizes.size())) return r.fail("a dimension out of range");
  int64_t s = *start < 0 ? *start + x.sizes[wrapDim(dim, x.sizes.size())] : *start;
  r.finish("aten.slice.Tensor", {argRef(r, "self"), dim, s, s + *length});
}

void chunk(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  int64_t dim = wrapDim(r.integer("dim").value_or(0), x.sizes.size());
  if (!inRange(dim, x.sizes.size())) return r.fail("a dimension out of range");
  int64_t chunks = r.integer("chunks").value_or(1), size = x.sizes[dim];
  if (chunks <= 0) return r.fail("chunk into no pieces");
  int64_t each = (size + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t left = size; left > 0; left -= each) sizes.push_back(std::min(each, left));
  if (sizes.empty()) sizes.push_back(0);
  if (sizes.size() != r.node().outputs.size()) return r.fail("chunk's results do not match its sizes");
  r.finish("aten.split_with_sizes.default", {argRef(r, "self"), sizes, r.integer("dim").value_or(0)});
}

void unbind(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  int64_t dim = wrapDim(r.integer("dim").value_or(0), x.sizes.size());
  if (!inRange(dim, x.sizes.size())) return r.fail("a dimension out of range");
  if (static_cast<size_t>(x.sizes[dim]) != r.node().outputs.size()) return r.fail("unbind's results do not match the size");
  std::vector<TensorRef> slices;
  for (int64_t i = 0; i < x.sizes[dim]; ++i) slices.push_back(r.op("aten.slice.Tensor", {argRef(r, "self"), dim, i, i + 1}));
  for (size_t i = 0; i < slices.size(); ++i) r.into(i, "aten.squeeze.dims", {slices[i], std::vector<int64_t>{dim}});
}

void stack(Rewrite& r) {
  std::vector<ValueId> items = r.tensors("tensors");
  if (items.empty()) return r.fail("stack of no tensors");
  size_t rank = r.spec(items[0]).sizes.size();
  int64_t dim = r.integer("dim").value_or(0), wrapped = wrapDim(dim, rank + 1);
  std::vector<TensorRef> list;
  if (wrapped < static_cast<int64_t>(rank)) {
    for (ValueId v : items) list.push_back(TensorRef{v});
    TensorRef c = r.op("aten.cat.default", {list, wrapped});
    return r.finish("aten.view.default", {c, r.resultSpec().sizes});
  }
  for (ValueId v : items) list.push_back(r.op("aten.unsqueeze.default", {TensorRef{v}, wrapped}));
  r.finish("aten.cat.default", {list, dim});
}

/// ones / zeros -> full(size, 1 or 0) with the default dtype and layout spelled out.
void filled(Rewrite& r, int64_t value) {
  r.finish("aten.full.default", {argRef(r, "size"), value, orDefault(r, "dtype", ScalarType::Float),
                                 orDefault(r, "layout", int64_t(0)), argRef(r, "device"), argRef(r, "pin_memory")});
}
void ones(Rewrite& r) { filled(r, 1); }
void zeros(Rewrite& r) { filled(r, 0); }

/// to(dtype) / type_as: a _to_copy to the dtype, or the tensor itself when it has it.
void toDtype(Rewrite& r, ScalarType dtype) {
  if (r.tensor("self").dtype == dtype && r.integer("copy").value_or(0) == 0) return r.resultIs(r.arg("self"));
  r.finish("aten._to_copy.default", {argRef(r, "self"), dtype});
}
void to(Rewrite& r) {
  auto d = r.integer("dtype");
  if (!d) return r.fail("to() without a dtype is not decomposed yet");
  toDtype(r, static_cast<ScalarType>(*d));
}
void typeAs(Rewrite& r) { toDtype(r, r.tensor("other").dtype); }

void liftFreshCopy(Rewrite& r) { r.finish("aten.clone.default", {argRef(r, "self")}); }

void pad(Rewrite& r) {
  ValueId mode = r.arg("mode");
  const auto* s = mode >= 0 ? std::get_if<std::string>(&r.method().values[mode].payload) : nullptr;
  if (s && *s != "constant") return r.fail("pad in mode '" + *s + "' is not decomposed yet");
  r.finish("aten.constant_pad_nd.default", {argRef(r, "self"), argRef(r, "pad"), orDefault(r, "value", 0.0)});
}

void repeatInterleave(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  auto repeats = r.integer("repeats");
  if (r.isNone("dim") || !repeats) return r.fail("repeat_interleave without a dimension is not decomposed yet");
  int64_t d = wrapDim(*r.integer("dim"), x.sizes.size());
  if (!inRange(d, x.sizes.size())) return r.fail("a dimension out of range");
  TensorRef u = r.op("aten.unsqueeze.default", {argRef(r, "self"), d + 1});
  std::vector<int64_t> sizes = x.sizes;
  sizes.insert(sizes.begin() + d + 1, *repeats);
  finishReshape(r, r.op("aten.expand.default", {u, sizes}));
}

void squeezeDim(Rewrite& r) { r.finish("aten.squeeze.dims", {argRef(r, "self"), std::vector<int64_t>{r.integer("dim").value_or(0)}}); }

void sumAll(Rewrite& r) {
  r.finish("aten.sum.dim_IntList", {argRef(r, "self"), std::vector<int64_t>{}, false, argRef(r, "dtype")});
}

void varDim(Rewrite& r) {
  int64_t correction = r.integer("unbiased").value_or(1) != 0 ? 1 : 0;
  r.finish("aten.var.correction", {argRef(r, "self"), argRef(r, "dim"), correction, argRef(r, "keepdim")});
}

void bitwiseAnd(Rewrite& r) { r.finish("aten.bitwise_and.Tensor", {argRef(r, "self"), argRef(r, "other")}); }

void floorDivide(Rewrite& r) { r.finish("aten.div.Tensor_mode", {argRef(r, "self"), argRef(r, "other"), "floor"}); }

void maskedFill(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  TensorRef v = r.op("aten.scalar_tensor.default", {argRef(r, "value"), x.dtype, int64_t(0), "cpu"});
  r.finish("aten.where.self", {argRef(r, "mask"), v, argRef(r, "self")});
}

}  // namespace

void registerShapeRules(std::vector<std::pair<std::string, Rule>>& t) {
  t.insert(t.end(), {{"aten::reshape.default", reshapeRule},
                     {"aten::flatten.using_ints", flatten},
                     {"aten::contiguous.default", contiguous},
                     {"aten::transpose.int", transpose},
                     {"aten::t.default", matrixTranspose},
                     {"aten::narrow.default", narrow},
                     {"aten::chunk.default", chunk},
                     {"aten::unbind.int", unbind},
                     {"aten::stack.default", stack},
                     {"aten::ones.default", ones},
                     {"aten::zeros.default", zeros},
                     {"aten::to.dtype", to},
                     {"aten::type_as.default", typeAs},
                     {"aten::lift_fresh_copy.default", liftFreshCopy},
                     {"aten::pad.default", pad},
                     {"aten::repeat_interleave.self_int", repeatInterleave},
                     {"aten::squeeze.dim", squeezeDim},
                     {"aten::sum.default", sumAll},
                     {"aten::var.dim", varDim},
                     {"aten::__and__.Tensor", bitwiseAnd},
                     {"aten::floor_divide.default", floorDivide},
                     {"aten::masked_fill.Scalar", maskedFill}});
}

}  // namespace lstudio::decompositions
