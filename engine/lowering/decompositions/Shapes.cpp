// Shape and dtype operators, factory functions and small elementwise
// spellings as PyTorch's core ATen decompositions write them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/lowering/decompositions/Decomposition.h"

namespace lstudio::decompositions {
namespace {

TensorRef argRef(Rewrite& r, const char* name) { return TensorRef{r.arg(name)}; }

/// The node's result is `x` viewed (or copied, then viewed) at the result's
/// sizes, spelled as `size` when given (reshape keeps the caller's -1).
void finishReshape(Rewrite& r, TensorRef x, std::optional<BuildArg> size = std::nullopt) {
  const TensorSpec& t = r.spec(x.id);
  const std::vector<int64_t> sizes = r.resultSpec().sizes;
  // ATen's reshape: a contiguous tensor is viewed with the shape as written; another one with
  // the shape inferred (no -1 left) where its strides allow a view, else an _unsafe_view of a
  // contiguous copy.
  if (!viewStrides(t.sizes, stridesOf(t), sizes))
    return r.finish("aten.view.default", {r.op("aten.clone.default", {x, int64_t(0)}), BuildArg(sizes)});
  r.finish("aten.view.default", {x, size && isContiguous(t) ? *size : BuildArg(sizes)});
}

/// The argument, or `fallback` when it is None.
BuildArg orDefault(Rewrite& r, const char* name, BuildArg fallback) {
  if (r.isNone(name)) return fallback;
  return BuildArg(TensorRef{r.arg(name)});
}

bool inRange(int64_t d, size_t rank) { return d >= 0 && d < static_cast<int64_t>(rank); }

bool hasSymbols(const TensorSpec& t) { return !t.symbols.empty(); }

void reshapeRule(Rewrite& r) {
  if (hasSymbols(r.resultSpec())) {  // a view, its sizes as the program spells them
    const TensorSpec x = r.tensor("self");
    if (isContiguous(x)) return r.finish("aten.view.default", {argRef(r, "self"), argRef(r, "shape")});
    // A strided tensor (a transpose before the heads are merged): torch copies it
    // contiguous first when its bytes allow no view, as they do not at the bounds.
    if (viewStrides(x.sizes, stridesOf(x), r.resultSpec().sizes))
      return r.fail("reshape of a strided tensor to symbolic sizes that a view allows is not decomposed yet");
    TensorRef copy = r.op("aten.clone.default", {argRef(r, "self"), int64_t(0)});  // contiguous_format
    return r.finish("aten.view.default", {copy, argRef(r, "shape")});
  }
  finishReshape(r, argRef(r, "self"), argRef(r, "shape"));
}

void flatten(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  int64_t start = wrapDim(r.integer("start_dim").value_or(0), x.sizes.size());
  int64_t end = wrapDim(r.integer("end_dim").value_or(-1), x.sizes.size());
  if (!x.sizes.empty() && start == end) return r.resultIs(r.arg("self"));
  if (hasSymbols(x) || hasSymbols(r.resultSpec())) {  // the flattened size folded as ATen's multiply_integers folds it
    if (!isContiguous(x)) return r.fail("flatten of a strided tensor with symbolic sizes is not decomposed yet");
    std::vector<SizeRef> shape = r.sizes(r.arg("self"), 0, static_cast<size_t>(start));
    SizeRef flat{1};
    for (const SizeRef& s : r.sizes(r.arg("self"), static_cast<size_t>(start), static_cast<size_t>(end) + 1)) flat = r.mul(flat, s);
    shape.push_back(flat);
    for (const SizeRef& s : r.sizes(r.arg("self"), static_cast<size_t>(end) + 1, x.sizes.size())) shape.push_back(s);
    return r.finish("aten.view.default", {argRef(r, "self"), shape});
  }
  finishReshape(r, argRef(r, "self"));
}

/// contiguous(memory_format): the tensor itself when it is laid out so already, else a clone
/// in that format (channels_last asks for NHWC, channels_last_3d for NDHWC).
void contiguous(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  const int64_t format = r.isNone("memory_format") ? 0 : r.integer("memory_format").value_or(0);
  if (format == 2 || format == 3) {
    const std::vector<uint8_t> order = format == 2 ? std::vector<uint8_t>{0, 2, 3, 1} : std::vector<uint8_t>{0, 2, 3, 4, 1};
    if (x.sizes.size() != order.size()) return r.fail("contiguous to a channels-last format of a tensor of another rank");
    if (x.dimOrder == order) return r.resultIs(r.arg("self"));
    return r.finish("aten.clone.default", {argRef(r, "self"), format});
  }
  if (isContiguous(x)) return r.resultIs(r.arg("self"));
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

/// x.T: every dimension reversed (a 0-d tensor is its own alias).
void numpyTranspose(Rewrite& r) {
  const size_t rank = r.tensor("self").sizes.size();
  if (rank == 0) return r.finish("aten.alias.default", {argRef(r, "self")});
  std::vector<int64_t> dims;
  for (size_t d = rank; d-- > 0;) dims.push_back(static_cast<int64_t>(d));
  r.finish("aten.permute.default", {argRef(r, "self"), dims});
}

/// x.mT: the last two dimensions swapped.
void matrixTransposeLast(Rewrite& r) {
  const size_t rank = r.tensor("self").sizes.size();
  if (rank < 2) return r.fail("mT of a tensor with fewer than 2 dimensions");
  std::vector<int64_t> dims;
  for (size_t d = 0; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
  std::swap(dims[rank - 2], dims[rank - 1]);
  r.finish("aten.permute.default", {argRef(r, "self"), dims});
}

/// narrow(x, dim, start, length) = slice(x, dim, start, start + length). A start or
/// length computed at run time (a KV cache's position, item() of input_pos) makes the
/// end a sum the graph computes, shared with the program's own when it has one.
void narrow(Rewrite& r) {
  auto start = r.sizeArg("start"), length = r.sizeArg("length");
  if (!start || !length) return r.fail("narrow's start and length must be Ints");
  const TensorSpec& x = r.tensor("self");
  int64_t dim = r.integer("dim").value_or(0);
  if (!inRange(wrapDim(dim, x.sizes.size()), x.sizes.size())) return r.fail("a dimension out of range");
  if (!start->isSymbolic() && start->value < 0) start->value += x.sizes[wrapDim(dim, x.sizes.size())];
  SizeRef end = r.add(*start, *length);
  r.finish("aten.slice.Tensor", {argRef(r, "self"), dim, sizeArgument(*start), sizeArgument(end)});
}

/// item() is _local_scalar_dense: the one element as a number the method reads at run time.
void item(Rewrite& r) { r.retarget("torch.ops.aten._local_scalar_dense.default"); }

/// arange(end) = arange(0, end, 1), end a number or a size computed at run time.
void arangeEnd(Rewrite& r) {
  ValueId end = r.arg("end");
  r.finish("aten.arange.start_step", {int64_t(0), TensorRef{end}, int64_t(1), orDefault(r, "dtype", None{}),
                                      orDefault(r, "layout", int64_t(0)), orDefault(r, "device", None{}),
                                      orDefault(r, "pin_memory", false)});
}

/// index_copy(x, dim, index, source) = index_put(x, [None] * dim + [index], source): the
/// rows `index` names along `dim` are replaced (a KV cache update at the new positions).
void indexCopy(Rewrite& r) {
  const TensorSpec x = r.tensor("self"), index = r.tensor("index");
  if (x.sizes.empty()) return r.fail("index_copy into a 0-dim tensor is not decomposed yet");
  if (index.sizes.size() > 1) return r.fail("index_copy's index must have 0 or 1 dimensions");
  int64_t dim = wrapDim(r.integer("dim").value_or(0), x.sizes.size());
  if (!inRange(dim, x.sizes.size())) return r.fail("a dimension out of range");
  TensorRef idx = argRef(r, "index");
  if (index.sizes.empty()) idx = r.op("aten.unsqueeze.default", {idx, int64_t(0)});
  std::vector<TensorRef> indices(static_cast<size_t>(dim), TensorRef{kNoValue});
  indices.push_back(idx);
  r.finish("aten.index_put.default", {argRef(r, "self"), indices, argRef(r, "source"), false});
}

/// arange(start, end) = arange.start_step(start, end) with the default step, as torch's
/// decomposition writes it (the step left out, the layout strided).
void arangeStart(Rewrite& r) {
  r.finish("aten.arange.start_step", {TensorRef{r.arg("start")}, TensorRef{r.arg("end")}, int64_t(1),
                                      orDefault(r, "dtype", None{}), orDefault(r, "layout", int64_t(0)),
                                      orDefault(r, "device", None{}), orDefault(r, "pin_memory", false)});
}

/// reshape_as(x, other) and view_as(x, other): reshape / view to other's sizes.
void reshapeAs(Rewrite& r) {
  if (!hasSymbols(r.resultSpec())) return finishReshape(r, argRef(r, "self"));
  if (!isContiguous(r.tensor("self")))
    return r.fail("reshape_as of a strided tensor to symbolic sizes is not decomposed yet");
  r.finish("aten.view.default", {argRef(r, "self"), r.sizes(r.arg("other"), 0, r.tensor("other").sizes.size())});
}

/// min(x, y) and max(x, y) of two tensors are minimum and maximum.
template <const char* kTarget>
void elementwise(Rewrite& r) {
  r.finish(kTarget, {argRef(r, "self"), argRef(r, "other")});
}
constexpr char kMinimum[] = "aten.minimum.default", kMaximum[] = "aten.maximum.default";

/// The dimension split and chunk cut along (wrapped), or none when the rule fails:
/// out of range, or of symbolic size (its pieces would be the bound's).
std::optional<int64_t> pieceDimension(Rewrite& r, const TensorSpec& x, const std::string& op) {
  int64_t dim = wrapDim(r.integer("dim").value_or(0), x.sizes.size());
  if (!inRange(dim, x.sizes.size())) {
    r.fail("a dimension out of range");
    return std::nullopt;
  }
  if (static_cast<size_t>(dim) < x.symbols.size() && !x.symbols[dim].empty()) {
    r.fail(op + " along a dimension of symbolic size is not decomposed yet");
    return std::nullopt;
  }
  return dim;
}

/// The node's results are split_with_sizes(self, sizes, dim as given).
void finishPieces(Rewrite& r, const std::vector<int64_t>& sizes, const std::string& op) {
  if (sizes.size() != r.node().outputs.size()) return r.fail(op + "'s results do not match its sizes");
  r.finish("aten.split_with_sizes.default", {argRef(r, "self"), sizes, r.integer("dim").value_or(0)});
}

void chunk(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  const auto dim = pieceDimension(r, x, "chunk");
  if (!dim) return;
  int64_t chunks = r.integer("chunks").value_or(1), size = x.sizes[*dim];
  if (chunks <= 0) return r.fail("chunk into no pieces");
  int64_t each = (size + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t left = size; left > 0; left -= each) sizes.push_back(std::min(each, left));
  if (sizes.empty()) sizes.push_back(0);
  finishPieces(r, sizes, "chunk");
}

/// split(x, split_size, dim): pieces of split_size along dim, the last one what is left.
void splitTensor(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  const auto dim = pieceDimension(r, x, "split");
  if (!dim) return;
  auto each = r.integer("split_size");
  if (!each) return r.fail("split with a symbolic split_size is not decomposed yet");
  const int64_t size = x.sizes[*dim];
  if (*each <= 0 && size != 0) return r.fail("split_size must be positive");
  const int64_t pieces = *each > 0 ? std::max<int64_t>((size + *each - 1) / *each, 1) : 1;
  std::vector<int64_t> sizes(static_cast<size_t>(pieces), *each);
  sizes.back() = size - *each * (pieces - 1);
  finishPieces(r, sizes, "split");
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

/// tile(x, dims) -> repeat(x, dims), with leading ones up to x's rank when dims is shorter,
/// as ATen writes it.
void tile(Rewrite& r) {
  std::optional<std::vector<int64_t>> dims = r.ints("dims");
  if (!dims) return r.fail("tile by counts computed at run time is not decomposed yet");
  const size_t rank = r.tensor("self").sizes.size();
  if (dims->size() < rank) dims->insert(dims->begin(), rank - dims->size(), 1);
  r.finish("aten.repeat.default", {argRef(r, "self"), *dims});
}

/// meshgrid as torch's reference writes it: each 0-d or 1-d tensor viewed with -1 at its own
/// dimension (1 elsewhere), then expanded to every tensor's length; "xy" indexing swaps the
/// first two tensors before and their grids after.
void meshgrid(Rewrite& r) {
  std::vector<ValueId> items = r.tensors("tensors");
  const ValueId mode = r.arg("indexing");
  const auto* text = mode >= 0 ? std::get_if<std::string>(&r.method().values[mode].payload) : nullptr;
  const std::string indexing = text ? *text : "ij";
  if (indexing != "ij" && indexing != "xy") return r.fail("meshgrid's indexing must be 'ij' or 'xy', not '" + indexing + "'");
  if (items.empty() || items.size() != r.node().outputs.size()) return r.fail("meshgrid's results do not match its tensors");
  const bool swap = indexing == "xy" && items.size() >= 2;
  if (swap) std::swap(items[0], items[1]);
  std::vector<int64_t> shape;
  for (ValueId v : items) {
    const TensorSpec t = r.spec(v);
    if (t.sizes.size() > 1) return r.fail("meshgrid takes 0-d or 1-d tensors");
    if (hasSymbols(t)) return r.fail("meshgrid of tensors with symbolic sizes is not decomposed yet");
    shape.push_back(t.sizes.empty() ? 1 : t.sizes[0]);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<int64_t> view(items.size(), 1);
    view[i] = -1;
    TensorRef line = r.op("aten.view.default", {TensorRef{items[i]}, view});
    r.into(swap && i < 2 ? 1 - i : i, "aten.expand.default", {line, shape});
  }
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

/// The fill value of ones / zeros and their _like and new_ forms: as torch's references
/// write it, True or False when the result is bool (the program keeps a Bool argument).
BuildArg fillValue(Rewrite& r, int64_t value) {
  if (r.resultSpec().dtype == ScalarType::Bool) return BuildArg(value != 0);
  return BuildArg(value);
}

/// ones / zeros -> full(size, 1 or 0) with the default dtype and layout spelled out.
void filled(Rewrite& r, int64_t value) {
  r.finish("aten.full.default", {argRef(r, "size"), fillValue(r, value), orDefault(r, "dtype", ScalarType::Float),
                                 orDefault(r, "layout", int64_t(0)), argRef(r, "device"), argRef(r, "pin_memory")});
}
void ones(Rewrite& r) { filled(r, 1); }
void zeros(Rewrite& r) { filled(r, 0); }

/// zeros_like / ones_like -> full_like(self, 0 or 1), the options passed on, the memory
/// format preserved unless given.
void filledLike(Rewrite& r, int64_t value) {
  r.finish("aten.full_like.default", {argRef(r, "self"), fillValue(r, value), argRef(r, "dtype"), argRef(r, "layout"),
                                      argRef(r, "device"), argRef(r, "pin_memory"),
                                      orDefault(r, "memory_format", int64_t(1))});  // preserve_format
}
void onesLike(Rewrite& r) { filledLike(r, 1); }
void zerosLike(Rewrite& r) { filledLike(r, 0); }
/// zero(x) (zero_ made functional) = zeros_like(x), as torch's reference: full_like(x, 0), format preserved.
void zero(Rewrite& r) {
  r.finish("aten.full_like.default", {argRef(r, "self"), fillValue(r, 0), None{}, None{}, None{}, false, int64_t(1)});
}

/// fill.Scalar -> full_like(self, value) (torch decomposes it although it is core ATen);
/// fill.Tensor -> copy(self, value).
void fillScalar(Rewrite& r) {
  r.finish("aten.full_like.default", {argRef(r, "self"), argRef(r, "value"), None{}, None{}, None{}, false, None{}});
}
void fillTensor(Rewrite& r) {
  if (r.tensor("value").sizes.size() != 0) return r.fail("fill with a value tensor that is not 0-d");
  r.finish("aten.copy.default", {argRef(r, "self"), argRef(r, "value"), false});
}

/// new_zeros / new_ones / new_full -> full(size, value) with self's dtype unless given, on
/// the CPU, strided, not pinned.
void newFilled(Rewrite& r, BuildArg value) {
  r.finish("aten.full.default", {argRef(r, "size"), std::move(value), orDefault(r, "dtype", r.tensor("self").dtype),
                                 orDefault(r, "layout", int64_t(0)), orDefault(r, "device", std::string("cpu")),
                                 orDefault(r, "pin_memory", false)});
}
void newZeros(Rewrite& r) { newFilled(r, fillValue(r, 0)); }
void newOnes(Rewrite& r) { newFilled(r, fillValue(r, 1)); }
void newFull(Rewrite& r) { newFilled(r, argRef(r, "fill_value")); }

/// Python's &, | and ^ on tensors are the bitwise operators of the same overload.
template <const char* Target>
void bitwise(Rewrite& r) { r.retarget(Target); }
constexpr char kAndScalar[] = "torch.ops.aten.bitwise_and.Scalar", kAndTensor[] = "torch.ops.aten.bitwise_and.Tensor",
               kOrScalar[] = "torch.ops.aten.bitwise_or.Scalar", kOrTensor[] = "torch.ops.aten.bitwise_or.Tensor",
               kXorScalar[] = "torch.ops.aten.bitwise_xor.Scalar", kXorTensor[] = "torch.ops.aten.bitwise_xor.Tensor";

/// to(dtype) / type_as: a _to_copy to the dtype, or the tensor itself when it has it.
/// The to() family, as ATen's to_impl: when nothing changes (the dtype, no copy asked for, the
/// input already in the memory format asked for; the device is always the CPU here) the input
/// itself; else _to_copy to the dtype, and to the memory format when one is asked for.
void toDtype(Rewrite& r, ScalarType dtype) {
  const TensorSpec x = r.tensor("self");
  std::optional<int64_t> format = r.isNone("memory_format") ? std::nullopt : r.integer("memory_format");
  if (format && *format == 1) format.reset();  // preserve_format
  const std::vector<uint8_t> channelsLast = x.sizes.size() == 4 ? std::vector<uint8_t>{0, 2, 3, 1}
                                            : x.sizes.size() == 5 ? std::vector<uint8_t>{0, 2, 3, 4, 1}
                                                                  : std::vector<uint8_t>{};
  const bool inFormat = !format || (*format == 0 && isContiguous(x)) ||
                        ((*format == 2 || *format == 3) && !channelsLast.empty() && x.dimOrder == channelsLast);
  if (x.dtype == dtype && r.integer("copy").value_or(0) == 0 && inFormat) return r.resultIs(r.arg("self"));
  if (!format) return r.finish("aten._to_copy.default", {argRef(r, "self"), dtype});
  r.finish("aten._to_copy.default", {argRef(r, "self"), dtype, None{}, None{}, None{}, false, *format});
}
/// to.dtype, to.device (both name a dtype) and to.dtype_layout (whose dtype may be None: the input's).
void to(Rewrite& r) {
  auto d = r.isNone("dtype") ? std::nullopt : r.integer("dtype");
  toDtype(r, d ? static_cast<ScalarType>(*d) : r.tensor("self").dtype);
}
void typeAs(Rewrite& r) { toDtype(r, r.tensor("other").dtype); }

void liftFreshCopy(Rewrite& r) { r.finish("aten.clone.default", {argRef(r, "self")}); }

/// detach is alias (alias_copy in the edge dialect); detach_ leaves nothing (RunDecompositions).
void detach(Rewrite& r) { r.finish("aten.alias.default", {argRef(r, "self")}); }

/// The input position of every output position along one padded dimension of size `middle`
/// (i from -left to middle + right): reflect m - 1 - |m - 1 - |i||, replicate clamp(i, 0, m - 1).
TensorRef padIndex(Rewrite& r, bool reflect, int64_t left, int64_t middle, int64_t right) {
  TensorRef i = r.op("aten.arange.start_step", {-left, middle + right, int64_t(1), None{}, int64_t(0), "cpu", false});
  if (!reflect) return r.op("aten.clamp.default", {i, int64_t(0), middle - 1});
  // (m - 1) - t is rsub, which decomposes to sub with the number first
  const std::vector<TensorSpec> positions{denseSpec(ScalarType::Long, {left + middle + right})};
  TensorRef inner = r.op("aten.sub.Tensor", {middle - 1, r.op("aten.abs.default", {i})}, &positions);
  return r.op("aten.sub.Tensor", {middle - 1, r.op("aten.abs.default", {inner})}, &positions);
}

/// pad: 'constant' is constant_pad_nd; 'reflect' and 'replicate' as torch's decomposition
/// writes them: one index call per padded dimension, outermost first, each taking the
/// positions padIndex gives.
void pad(Rewrite& r) {
  ValueId mode = r.arg("mode");
  const auto* text = mode >= 0 ? std::get_if<std::string>(&r.method().values[mode].payload) : nullptr;
  if (!text || *text == "constant")
    return r.finish("aten.constant_pad_nd.default", {argRef(r, "self"), argRef(r, "pad"), orDefault(r, "value", 0.0)});
  const std::string how = *text;  // a copy: the calls below add values, which moves the table
  if (how != "reflect" && how != "replicate") return r.fail("pad in mode '" + how + "' is not decomposed yet");
  const TensorSpec x = r.tensor("self");
  const std::optional<std::vector<int64_t>> pads = r.ints("pad");
  if (!pads || pads->empty() || pads->size() % 2 || hasSymbols(x) ||
      std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p < 0; }))
    return r.fail("pad in mode '" + how + "' by negative, odd or run-time amounts, or of a symbolic tensor, is not decomposed yet");
  const size_t dims = pads->size() / 2, rank = x.sizes.size();
  if (rank != dims + 1 && rank != dims + 2) return r.fail("pad in mode '" + how + "' takes one or two dimensions before the padded ones");
  TensorRef result = argRef(r, "self");
  for (size_t i = 0; i < dims; ++i) {
    const size_t at = rank - dims + i;
    const int64_t left = (*pads)[2 * (dims - 1 - i)], right = (*pads)[2 * (dims - 1 - i) + 1];
    std::vector<TensorRef> index(rank, TensorRef{kNoValue});
    index[at] = padIndex(r, how == "reflect", left, x.sizes[at], right);
    if (i + 1 == dims) return r.finish("aten.index.Tensor", {result, index});
    result = r.op("aten.index.Tensor", {result, index});
  }
}

void repeatInterleave(Rewrite& r) {
  const TensorSpec& x = r.tensor("self");
  auto repeats = r.integer("repeats");
  if (r.isNone("dim") || !repeats) return r.fail("repeat_interleave without a dimension is not decomposed yet");
  int64_t d = wrapDim(*r.integer("dim"), x.sizes.size());
  if (!inRange(d, x.sizes.size())) return r.fail("a dimension out of range");
  TensorRef u = r.op("aten.unsqueeze.default", {argRef(r, "self"), d + 1});
  if (hasSymbols(x)) {  // the sizes spelled as the program computes them
    std::vector<SizeRef> sizes = r.sizes(r.arg("self"), 0, x.sizes.size());
    std::vector<SizeRef> expanded = sizes;
    expanded.insert(expanded.begin() + d + 1, SizeRef{*repeats});
    const std::vector<TensorSpec> spec{Rewrite::contiguousSpec(x.dtype, expanded)};
    TensorRef e = r.op("aten.expand.default", {u, expanded}, &spec);
    if (*repeats != 1) e = r.op("aten.clone.default", {e, int64_t(0)}, &spec);  // contiguous_format
    sizes[d] = r.mul(sizes[d], SizeRef{*repeats});
    return r.finish("aten.view.default", {e, sizes});
  }
  std::vector<int64_t> sizes = x.sizes;
  sizes.insert(sizes.begin() + d + 1, *repeats);
  finishReshape(r, r.op("aten.expand.default", {u, sizes}));
}

void squeezeDim(Rewrite& r) { r.finish("aten.squeeze.dims", {argRef(r, "self"), std::vector<int64_t>{r.integer("dim").value_or(0)}}); }
/// squeeze without dims names every dimension (torch's decomposition); squeeze.dims drops the size-1 ones.
void squeezeAll(Rewrite& r) {
  std::vector<int64_t> all;
  for (size_t d = 0; d < r.tensor("self").sizes.size(); ++d) all.push_back(static_cast<int64_t>(d));
  r.finish("aten.squeeze.dims", {argRef(r, "self"), all});
}

void sumAll(Rewrite& r) {
  r.finish("aten.sum.dim_IntList", {argRef(r, "self"), std::vector<int64_t>{}, false, argRef(r, "dtype")});
}

void varDim(Rewrite& r) {
  int64_t correction = r.integer("unbiased").value_or(1) != 0 ? 1 : 0;
  r.finish("aten.var.correction", {argRef(r, "self"), argRef(r, "dim"), correction, argRef(r, "keepdim")});
}

/// std = sqrt(var.correction(x, dim as given, correction as a float, keepdim))
void stdRule(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  if (x.dtype != ScalarType::Float && x.dtype != ScalarType::Double)
    return r.fail("std of a tensor that is not float32 or float64 is not decomposed yet");
  double correction = 1.0;
  if (r.node().argNames.end() != std::find(r.node().argNames.begin(), r.node().argNames.end(), "unbiased"))
    correction = r.integer("unbiased").value_or(1) != 0 ? 1.0 : 0.0;
  else if (!r.isNone("correction"))
    correction = r.number("correction").value_or(1.0);
  const bool keepdim = r.integer("keepdim").value_or(0) != 0;
  TensorRef v = r.op("aten.var.correction", {argRef(r, "self"), orDefault(r, "dim", None{}), correction, keepdim});
  r.finish("aten.sqrt.default", {v});
}

/// logsumexp(x, dims) = log(sum(exp(x - m), dims)) + m, with m the maxima (0 where infinite)
void logsumexp(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  if (x.dtype != ScalarType::Float && x.dtype != ScalarType::Double)
    return r.fail("logsumexp of a tensor that is not float32 or float64 is not decomposed yet");
  if (x.numel().value_or(1) == 0) return r.fail("logsumexp of an empty tensor is not decomposed yet");
  auto dims = r.ints("dim");
  if (!dims) return r.fail("logsumexp without fixed dimensions is not decomposed yet");
  const bool keepdim = r.integer("keepdim").value_or(0) != 0;
  TensorRef maxes = r.op("aten.amax.default", {argRef(r, "self"), *dims, true});
  TensorRef mag = r.op("aten.abs.default", {maxes});
  TensorRef infinite = r.op("aten.eq.Scalar", {mag, std::numeric_limits<double>::infinity()});
  TensorRef zero = r.op("aten.scalar_tensor.default", {0.0, x.dtype, int64_t(0), "cpu"});
  maxes = r.op("aten.where.self", {infinite, zero, maxes});
  TensorRef squeezed = keepdim ? maxes : r.op("aten.squeeze.dims", {maxes, *dims});
  TensorRef shifted = r.op("aten.sub.Tensor", {argRef(r, "self"), maxes});
  TensorRef e = r.op("aten.exp.default", {shifted});
  TensorRef s = r.op("aten.sum.dim_IntList", {e, *dims, keepdim});
  TensorRef l = r.op("aten.log.default", {s});
  r.finish("aten.add.Tensor", {l, squeezed});
}

/// unflatten(x, dim, sizes): x viewed with `dim` split into `sizes` (a -1 inferred)
void unflatten(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  const TensorSpec result = r.resultSpec();
  if (!hasSymbols(x) && !hasSymbols(result)) return r.finish("aten.view.default", {argRef(r, "self"), result.sizes});
  // A dynamic dimension kept or made: the view spells it as sym_size of the input, as torch traces it.
  r.finish("aten.view.default", {argRef(r, "self"), r.sizes(r.result(), 0, result.sizes.size())});
}

/// addcmul(self, t1, t2, value) = self + value * t1 * t2
void addcmul(Rewrite& r) {
  ValueId v = r.arg("value");
  BuildArg value = v == kNoValue ? BuildArg(int64_t(1)) : BuildArg(TensorRef{v});
  TensorRef scaled = r.op("aten.mul.Tensor", {argRef(r, "tensor1"), value});
  TensorRef prod = r.op("aten.mul.Tensor", {scaled, argRef(r, "tensor2")});
  r.finish("aten.add.Tensor", {argRef(r, "self"), prod});
}

/// arange(0, n) as torch's references spell it (dtype left to the default, int64).
TensorRef indices(Rewrite& r, int64_t n) {
  return r.op("aten.arange.start_step", {int64_t(0), n, int64_t(1), None{}, int64_t(0), "cpu", false});
}

/// linalg_cross(a, b, dim) = a[i+1] * b[i+2] - a[i+2] * b[i+1] along dim (indices mod 3),
/// with index_select of arange(3) shifted, as torch's reference computes it.
void linalgCross(Rewrite& r) {
  const TensorSpec a = r.tensor("self"), b = r.tensor("other");
  if (a.sizes != b.sizes || a.dtype != b.dtype || hasSymbols(a) || hasSymbols(b))
    return r.fail("linalg_cross of inputs that differ in shape or dtype, or are dynamic, is not decomposed yet");
  const int64_t dim = wrapDim(r.integer("dim").value_or(-1), a.sizes.size());
  if (!inRange(dim, a.sizes.size()) || a.sizes[dim] != 3) return r.fail("linalg_cross needs a dimension of size 3");
  TensorRef i = indices(r, 3);
  auto shifted = [&](const char* operand, int64_t by) {
    TensorRef k = r.op("aten.remainder.Scalar", {r.op("aten.add.Tensor", {i, by}), int64_t(3)});
    const std::vector<TensorSpec> picked{denseSpec(a.dtype, a.sizes)};  // three indices of a dimension of three
    return r.op("aten.index_select.default", {argRef(r, operand), dim, k}, &picked);
  };
  TensorRef a1 = shifted("self", 1), b2 = shifted("other", 2);
  TensorRef lhs = r.op("aten.mul.Tensor", {a1, b2});
  TensorRef a2 = shifted("self", 2), b1 = shifted("other", 1);
  TensorRef rhs = r.op("aten.mul.Tensor", {a2, b1});
  r.finish("aten.sub.Tensor", {lhs, rhs});
}

/// one_hot(x, n): two run-time checks of the classes (asserts), then
/// unsqueeze(x, -1) == arange(n), as int64.
void oneHot(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  const int64_t n = r.integer("num_classes").value_or(-1);
  if (n < 0) return r.fail("one_hot without num_classes (its size read from the data) is not decomposed yet");
  if (x.dtype != ScalarType::Long) return r.fail("one_hot of a tensor that is not int64");
  const std::vector<TensorSpec> flag{denseSpec(ScalarType::Bool, {})};
  auto check = [&](TensorRef ok, const char* message) {
    TensorRef bad = r.op("aten.logical_not.default", {ok});
    TensorRef any = r.op("aten.any.dims", {bad}, &flag);
    const std::vector<TensorSpec> nothing;
    r.call("aten._assert_async.msg", {r.op("aten.logical_not.default", {any}, &flag), std::string(message)}, &nothing);
  };
  check(r.op("aten.ge.Scalar", {argRef(r, "self"), int64_t(0)}), "one_hot: Class values must be non-negative.");
  check(r.op("aten.lt.Scalar", {argRef(r, "self"), n}), "one_hot: Class values must be smaller than num_classes.");
  TensorRef u = r.op("aten.unsqueeze.default", {argRef(r, "self"), int64_t(-1)});
  const std::vector<TensorSpec> range{denseSpec(ScalarType::Long, {n})};
  TensorRef classes = r.op("aten.arange.start_step", {int64_t(0), n, int64_t(1), ScalarType::Long, int64_t(0), "cpu", false}, &range);
  r.finish("aten._to_copy.default", {r.op("aten.eq.Tensor", {u, classes}), ScalarType::Long});
}

/// roll(x, shift, dim) = index_select(x, dim, (arange(n) + (n - shift) mod n) fmod n), one dimension
/// after the other (torch's reference); without dims, of the flattened tensor
void roll(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  auto shifts = r.ints("shifts");
  auto dims = r.isNone("dims") ? std::optional<std::vector<int64_t>>(std::vector<int64_t>{}) : r.ints("dims");
  if (!shifts || !dims || shifts->empty() || hasSymbols(x)) return r.fail("roll by symbolic shifts or sizes is not decomposed yet");
  int64_t numel = 1;
  for (int64_t n : x.sizes) numel *= n;
  if (numel == 0) return r.finish("aten.clone.default", {argRef(r, "self")});
  // One dimension: index_select(x, dim, fmod(arange(n) + start, n)), as torch's reference rolls.
  auto rolled = [&](TensorRef t, int64_t n, int64_t shift, int64_t dim, bool last) -> TensorRef {
    const int64_t start = (((n - shift) % n) + n) % n;
    TensorRef index = r.op("aten.fmod.Scalar", {r.op("aten.add.Tensor", {indices(r, n), start}), n});
    const std::vector<TensorSpec> same{denseSpec(x.dtype, r.spec(t.id).sizes)};  // a roll keeps the shape
    if (!last) return r.op("aten.index_select.default", {t, dim, index}, &same);
    r.finish("aten.index_select.default", {t, dim, index});
    return {};
  };
  if (dims->empty()) {  // flattened, rolled along 0, and viewed in the input's shape again
    if (shifts->size() != 1) return r.fail("roll without dims takes one shift");
    if (x.sizes.size() == 1) return void(rolled(argRef(r, "self"), numel, (*shifts)[0], 0, true));
    if (!isContiguous(x)) return r.fail("roll without dims of a strided tensor is not decomposed yet");
    TensorRef flat = r.op("aten.view.default", {argRef(r, "self"), std::vector<int64_t>{numel}});
    return r.finish("aten.view.default", {rolled(flat, numel, (*shifts)[0], 0, false), x.sizes});
  }
  if (shifts->size() != dims->size()) return r.fail("roll with as many shifts as dims only");
  // Several dimensions: the first rolled, then the rest of the result, one after the other.
  TensorRef t = argRef(r, "self");
  for (size_t k = 0; k < dims->size(); ++k) {
    const int64_t dim = wrapDim((*dims)[k], x.sizes.size());
    if (!inRange(dim, x.sizes.size())) return r.fail("a dimension out of range");
    t = rolled(t, x.sizes[dim], (*shifts)[k], (*dims)[k], k + 1 == dims->size());
  }
}

/// select_scatter(x, src, dim, index) = where(arange(n).view(1.., -1, ..1) == index,
/// src.unsqueeze(dim).expand(x.shape), x): functionalization's write back through a select.
void selectScatter(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  auto d = r.integer("dim");
  auto index = r.integer("index");
  if (!d || !index || hasSymbols(x)) return r.fail("select_scatter at a symbolic index or size is not decomposed yet");
  const int64_t dim = wrapDim(*d, x.sizes.size());
  if (!inRange(dim, x.sizes.size())) return r.fail("a dimension out of range");
  const int64_t n = x.sizes[dim];
  std::vector<int64_t> maskShape(x.sizes.size(), 1);
  maskShape[dim] = -1;
  TensorRef mask = r.op("aten.view.default", {indices(r, n), maskShape});
  TensorRef at = r.op("aten.eq.Scalar", {mask, *index < 0 ? *index + n : *index});
  TensorRef src = r.op("aten.unsqueeze.default", {argRef(r, "src"), dim});
  TensorRef expanded = r.op("aten.expand.default", {src, x.sizes});
  r.finish("aten.where.self", {at, expanded, argRef(r, "self")});
}

/// triu / tril(x, k) = where(column - row >= k (<= k), x, 0) over the last two dimensions
void triangle(Rewrite& r, bool upper) {
  const TensorSpec x = r.tensor("self");
  if (x.sizes.size() < 2 || hasSymbols(x)) return r.fail("triu/tril of a tensor of fewer than 2 or symbolic dimensions is not decomposed yet");
  const int64_t rows = x.sizes[x.sizes.size() - 2], cols = x.sizes.back();
  TensorRef col = r.op("aten.unsqueeze.default", {indices(r, cols), int64_t(-2)});
  TensorRef row = r.op("aten.unsqueeze.default", {indices(r, rows), int64_t(-1)});
  TensorRef offset = r.op("aten.sub.Tensor", {col, row});
  ValueId k = r.arg("diagonal");
  BuildArg diagonal = k == kNoValue ? BuildArg(int64_t(0)) : BuildArg(TensorRef{k});
  TensorRef keep = r.op(upper ? "aten.ge.Scalar" : "aten.le.Scalar", {offset, diagonal});
  TensorRef zero = r.op("aten.scalar_tensor.default", {int64_t(0), x.dtype, int64_t(0), "cpu"});
  r.finish("aten.where.self", {keep, argRef(r, "self"), zero});
}
void triu(Rewrite& r) { triangle(r, true); }
void tril(Rewrite& r) { triangle(r, false); }

/// linalg_vector_norm(x, ord, dim, keepdim) = sum(|x| ** ord, dim) ** (1 / ord); |x| is
/// skipped for an even ord on floats. ExecuTorch adds this to its decomposition table.
void vectorNorm(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  if (x.dtype != ScalarType::Float && x.dtype != ScalarType::Double)
    return r.fail("linalg_vector_norm of a tensor that is not float32 or float64 is not decomposed yet");
  if (!r.isNone("dtype")) return r.fail("linalg_vector_norm with a dtype is not decomposed yet");
  const double ord = r.number("ord").value_or(2.0);
  if (ord == 0 || std::isinf(ord)) return r.fail("linalg_vector_norm of order 0 or infinity is not decomposed yet");
  const std::vector<int64_t> dims = r.isNone("dim") ? std::vector<int64_t>{} : r.ints("dim").value_or(std::vector<int64_t>{});
  if (dims.empty()) return r.fail("linalg_vector_norm over every dimension is not decomposed yet");
  bool allOne = true;
  for (int64_t d : dims) {
    if (!inRange(wrapDim(d, x.sizes.size()), x.sizes.size())) return r.fail("a dimension out of range");
    allOne = allOne && x.sizes[wrapDim(d, x.sizes.size())] == 1;
  }
  const bool keepdim = r.integer("keepdim").value_or(0) != 0;
  if (allOne) {  // one element per norm: |x|, viewed without those dimensions unless kept (torch's reference)
    if (keepdim) return r.finish("aten.abs.default", {argRef(r, "self")});
    std::vector<int64_t> kept;
    for (size_t d = 0; d < x.sizes.size(); ++d)
      if (std::none_of(dims.begin(), dims.end(), [&](int64_t k) { return size_t(wrapDim(k, x.sizes.size())) == d; }))
        kept.push_back(x.sizes[d]);
    return r.finish("aten.view.default", {r.op("aten.abs.default", {argRef(r, "self")}), kept});
  }
  ValueId ordArg = r.arg("ord");
  BuildArg power = ordArg == kNoValue ? BuildArg(int64_t(2)) : BuildArg(TensorRef{ordArg});
  TensorRef base = argRef(r, "self");
  if (std::fmod(ord, 2.0) != 0) base = r.op("aten.abs.default", {base});
  TensorRef p = r.op("aten.pow.Tensor_Scalar", {base, power});
  TensorRef s = r.op("aten.sum.dim_IntList", {p, argRef(r, "dim"), keepdim});
  r.finish("aten.pow.Tensor_Scalar", {s, 1.0 / ord});
}

/// nan_to_num(x, nan, posinf, neginf): NaN, then -inf, then +inf replaced, each by a where
/// on the original x (defaults 0 and the dtype's lowest and largest finite values).
void nanToNum(Rewrite& r) {
  const ScalarType dtype = r.tensor("self").dtype;
  if (dtype != ScalarType::Float && dtype != ScalarType::Double)
    return r.fail("nan_to_num of a tensor that is not float32 or float64 is not decomposed yet");
  const double lowest = dtype == ScalarType::Float ? std::numeric_limits<float>::lowest() : std::numeric_limits<double>::lowest();
  const double largest = dtype == ScalarType::Float ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  auto replacement = [&](const char* name, double fallback) {
    return r.op("aten.scalar_tensor.default", {orDefault(r, name, fallback), dtype, int64_t(0), "cpu"});
  };
  TensorRef nan = r.op("aten.isnan.default", {argRef(r, "self")});
  TensorRef y = r.op("aten.where.self", {nan, replacement("nan", 0.0), argRef(r, "self")});
  TensorRef neg = r.op("aten.eq.Scalar", {argRef(r, "self"), -std::numeric_limits<double>::infinity()});
  y = r.op("aten.where.self", {neg, replacement("neginf", lowest), y});
  TensorRef pos = r.op("aten.eq.Scalar", {argRef(r, "self"), std::numeric_limits<double>::infinity()});
  r.finish("aten.where.self", {pos, replacement("posinf", largest), y});
}

/// trace(x) = sum of the diagonal, copied first (torch's diag).
void trace(Rewrite& r) {
  if (r.tensor("self").sizes.size() != 2) return r.fail("trace of a tensor that is not 2-d");
  const TensorSpec x = r.tensor("self");
  if (hasSymbols(x)) return r.fail("trace of a tensor with dynamic dimensions is not decomposed yet");
  const std::vector<TensorSpec> diagonal{denseSpec(x.dtype, {std::min(x.sizes[0], x.sizes[1])})};
  TensorRef d = r.op("aten.diagonal.default", {argRef(r, "self")}, &diagonal);
  TensorRef copy = r.op("aten.clone.default", {d}, &diagonal);
  r.finish("aten.sum.dim_IntList", {copy, std::vector<int64_t>{}});
}

/// diff(x, n=1, dim): x[1:] - x[:-1] along dim, as two slices (without prepend or append).
void diff(Rewrite& r) {
  const TensorSpec x = r.tensor("self");
  if (x.sizes.empty()) return r.fail("diff of a 0-d tensor");
  const int64_t given = r.integer("dim").value_or(-1);  // ATen narrows along the dim as given
  const int64_t dim = wrapDim(given, x.sizes.size());
  if (!inRange(dim, x.sizes.size())) return r.fail("a dimension out of range");
  if (static_cast<size_t>(dim) < x.symbols.size() && !x.symbols[dim].empty())
    return r.fail("diff along a dynamic dimension is not decomposed yet");
  int64_t n = r.integer("n").value_or(1);
  if (n <= 0) return r.fail("diff with n < 1 is not decomposed yet");
  // prepend and append joined on first (cat along the dim as given), as ATen's diff does.
  TensorRef a = argRef(r, "self");
  int64_t length = x.sizes[dim];
  const bool prepend = !r.isNone("prepend"), append = !r.isNone("append");
  if (prepend || append) {
    std::vector<TensorRef> parts;
    for (const char* name : {"prepend", "self", "append"})
      if (!r.isNone(name)) {
        const TensorSpec& t = r.tensor(name);
        if (t.sizes.size() != x.sizes.size() || hasSymbols(t)) return r.fail(std::string(name) + " of another rank or symbolic sizes");
        length += std::string(name) == "self" ? 0 : t.sizes[dim];
        parts.push_back(TensorRef{r.arg(name)});
      }
    a = r.op("aten.cat.default", {parts, given});
  }
  n = std::min(n, length);
  const char* subtract = x.dtype == ScalarType::Bool ? "aten.logical_xor.default" : "aten.sub.Tensor";
  // n times: the slice from 1 minus the slice from 0, each one element shorter.
  for (int64_t k = 0, out = length - 1; k < n; ++k, --out) {
    TensorRef before = r.op("aten.slice.Tensor", {a, given, int64_t(0), out});
    TensorRef after = r.op("aten.slice.Tensor", {a, given, int64_t(1), int64_t(1) + out});
    if (k + 1 == n) return r.finish(subtract, {after, before});
    a = r.op(subtract, {after, before});
  }
}

/// clamp_min(x, min) = clamp(x, min); expand_as(x, other) = expand(x, other's sizes).
void clampMin(Rewrite& r) { r.finish("aten.clamp.default", {argRef(r, "self"), argRef(r, "min")}); }
void expandAs(Rewrite& r) {
  const size_t rank = r.tensor("other").sizes.size();
  r.finish("aten.expand.default", {argRef(r, "self"), r.sizes(r.arg("other"), 0, rank)});
}

/// cdist(x1, x2, p, compute_mode) -> _cdist_forward with the same arguments; pdist(x, p) ->
/// _pdist_forward (torch's decomposition for the inputs that need no gradient).
void cdist(Rewrite& r) {
  r.finish("aten._cdist_forward.default", {argRef(r, "x1"), argRef(r, "x2"), orDefault(r, "p", 2.0), argRef(r, "compute_mode")});
}
void pdist(Rewrite& r) { r.finish("aten._pdist_forward.default", {argRef(r, "self"), orDefault(r, "p", 2.0)}); }

/// cosine_similarity(x1, x2, dim, eps) = sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps), dim),
/// the norms as ExecuTorch's table decomposes linalg_vector_norm (ATen divides x2 first).
void cosineSimilarity(Rewrite& r) {
  const TensorSpec a = r.tensor("x1"), b = r.tensor("x2");
  if (a.sizes != b.sizes || a.dtype != b.dtype || (a.dtype != ScalarType::Float && a.dtype != ScalarType::Double) ||
      hasSymbols(a) || a.sizes.empty())
    return r.fail("cosine_similarity of inputs that differ in shape or dtype, or are not float, is not decomposed yet");
  const int64_t dim = r.integer("dim").value_or(1);
  if (!inRange(wrapDim(dim, a.sizes.size()), a.sizes.size())) return r.fail("a dimension out of range");
  auto norm = [&](TensorRef x) {
    TensorRef sq = r.op("aten.pow.Tensor_Scalar", {x, int64_t(2)});
    TensorRef s = r.op("aten.sum.dim_IntList", {sq, std::vector<int64_t>{dim}, true});
    TensorRef root = r.op("aten.pow.Tensor_Scalar", {s, 0.5});
    return r.op("aten.clone.default", {root});
  };
  TensorRef n1 = norm(argRef(r, "x1")), n2 = norm(argRef(r, "x2"));
  TensorRef eps = r.op("aten.scalar_tensor.default", {r.number("eps").value_or(1e-8), a.dtype, None{}, "cpu"});
  TensorRef c1 = r.op("aten.clamp.Tensor", {n1, eps}), c2 = r.op("aten.clamp.Tensor", {n2, eps});
  TensorRef d2 = r.op("aten.div.Tensor", {argRef(r, "x2"), c2});
  TensorRef d1 = r.op("aten.div.Tensor", {argRef(r, "x1"), c1});
  TensorRef prod = r.op("aten.mul.Tensor", {d1, d2});
  r.finish("aten.sum.dim_IntList", {prod, std::vector<int64_t>{dim}});
}

/// lerp(start, end, w) = where(|w| >= 0.5, w - 1, w) * (end - start) + where(|w| >= 0.5, end, start),
/// torch's reference (stable near both ends); a number weight becomes a 0-d full first.
void lerp(Rewrite& r) {
  const TensorSpec start = r.tensor("self"), end = r.tensor("end");
  if (start.dtype != ScalarType::Float && start.dtype != ScalarType::Double)
    return r.fail("lerp of a tensor that is not float32 or float64 is not decomposed yet");
  if (start.sizes != end.sizes || start.dtype != end.dtype || !isContiguous(start) || !isContiguous(end))
    return r.fail("lerp of inputs that broadcast, differ in dtype or are strided is not decomposed yet");
  const ValueId w = r.arg("weight");
  TensorRef weight{w};
  if (!r.method().values[w].isTensor()) {
    weight = r.op("aten.full.default", {std::vector<int64_t>{}, TensorRef{w}, start.dtype, int64_t(0), "cpu", false});
  } else if (r.spec(w).sizes != start.sizes && !r.spec(w).sizes.empty()) {
    return r.fail("lerp with a weight that broadcasts is not decomposed yet");
  }
  TensorRef mask = r.op("aten.ge.Scalar", {r.op("aten.abs.default", {weight}), 0.5});
  TensorRef coeff = r.op("aten.where.self", {mask, r.op("aten.sub.Tensor", {weight, int64_t(1)}), weight});
  TensorRef base = r.op("aten.where.self", {mask, argRef(r, "end"), argRef(r, "self")});
  TensorRef diff = r.op("aten.sub.Tensor", {argRef(r, "end"), argRef(r, "self")});
  r.finish("aten.add.Tensor", {r.op("aten.mul.Tensor", {coeff, diff}), base});
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
                     {"aten::numpy_T.default", numpyTranspose},
                     {"aten::mT.default", matrixTransposeLast},
                     {"aten::narrow.default", narrow},
                     {"aten::item.default", item},
                     {"aten::arange.default", arangeEnd},
                     {"aten::arange.start", arangeStart},
                     {"aten::reshape_as.default", reshapeAs},
                     {"aten::view_as.default", reshapeAs},
                     {"aten::min.other", elementwise<kMinimum>},
                     {"aten::max.other", elementwise<kMaximum>},
                     {"aten::index_copy.default", indexCopy},
                     {"aten::chunk.default", chunk},
                     {"aten::split.Tensor", splitTensor},
                     {"aten::unbind.int", unbind},
                     {"aten::meshgrid.default", meshgrid},
                     {"aten::tile.default", tile},
                     {"aten::meshgrid.indexing", meshgrid},
                     {"aten::stack.default", stack},
                     {"aten::ones.default", ones},
                     {"aten::zeros.default", zeros},
                     {"aten::ones_like.default", onesLike},
                     {"aten::zeros_like.default", zerosLike},
                     {"aten::zero.default", zero},
                     {"aten::fill.Scalar", fillScalar},
                     {"aten::fill.Tensor", fillTensor},
                     {"aten::new_zeros.default", newZeros},
                     {"aten::new_ones.default", newOnes},
                     {"aten::new_full.default", newFull},
                     {"aten::__and__.Scalar", bitwise<kAndScalar>},
                     {"aten::__and__.Tensor", bitwise<kAndTensor>},
                     {"aten::__or__.Scalar", bitwise<kOrScalar>},
                     {"aten::__or__.Tensor", bitwise<kOrTensor>},
                     {"aten::__xor__.Scalar", bitwise<kXorScalar>},
                     {"aten::__xor__.Tensor", bitwise<kXorTensor>},
                     {"aten::to.dtype", to},
                     {"aten::to.device", to},
                     {"aten::to.dtype_layout", to},
                     {"aten::to.other", typeAs},
                     {"aten::type_as.default", typeAs},
                     {"aten::lift_fresh_copy.default", liftFreshCopy},
                     {"aten::detach.default", detach},
                     {"aten::pad.default", pad},
                     {"aten::repeat_interleave.self_int", repeatInterleave},
                     {"aten::squeeze.dim", squeezeDim},
                     {"aten::squeeze.default", squeezeAll},
                     {"aten::sum.default", sumAll},
                     {"aten::var.dim", varDim},
                     {"aten::std.dim", stdRule},
                     {"aten::std.correction", stdRule},
                     {"aten::logsumexp.default", logsumexp},
                     {"aten::unflatten.int", unflatten},
                     {"aten::addcmul.default", addcmul},
                     {"aten::roll.default", roll},
                     {"aten::select_scatter.default", selectScatter},
                     {"aten::lerp.Scalar", lerp},
                     {"aten::lerp.Tensor", lerp},
                     {"aten::triu.default", triu},
                     {"aten::tril.default", tril},
                     {"aten::linalg_vector_norm.default", vectorNorm},
                     {"aten::cdist.default", cdist},
                     {"aten::nan_to_num.default", nanToNum},
                     {"aten::linalg_cross.default", linalgCross},
                     {"aten::one_hot.default", oneHot},
                     {"aten::trace.default", trace},
                     {"aten::diff.default", diff},
                     {"aten::clamp_min.default", clampMin},
                     {"aten::expand_as.default", expandAs},
                     {"aten::pdist.default", pdist},
                     {"aten::cosine_similarity.default", cosineSimilarity},
                     {"aten::__and__.Tensor", bitwiseAnd},
                     {"aten::floor_divide.default", floorDivide},
                     {"aten::masked_fill.Scalar", maskedFill}});
}

}  // namespace lstudio::decompositions
