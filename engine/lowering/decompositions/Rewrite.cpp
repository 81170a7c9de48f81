#include <algorithm>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/BackendConfig.h"
#include "engine/lowering/decompositions/Decomposition.h"
#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio::decompositions {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * std::max<int64_t>(sizes[d], 1);
  return s;
}

std::vector<int64_t> stridesOf(const TensorSpec& t) {
  // Strides recorded for symbolic sizes are the example's, while the sizes are
  // bounds: the dim order says the same without that mismatch.
  if (t.strides.size() == t.sizes.size() && t.symbols.empty()) return t.strides;
  // From the dim order: the innermost dimension in memory has stride 1.
  std::vector<int64_t> s(t.sizes.size(), 1);
  if (t.dimOrder.size() != t.sizes.size()) return contiguousStrides(t.sizes);
  int64_t step = 1;
  for (size_t k = t.dimOrder.size(); k-- > 0;) {
    s[t.dimOrder[k]] = step;
    step *= std::max<int64_t>(t.sizes[t.dimOrder[k]], 1);
  }
  return s;
}

bool isContiguous(const TensorSpec& t) {
  std::vector<int64_t> st = stridesOf(t);
  int64_t expected = 1;
  for (size_t d = t.sizes.size(); d-- > 0;) {
    if (t.sizes[d] == 1) continue;
    if (t.sizes[d] == 0) return true;
    if (st[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& newSizes) {
  if (sizes.empty()) return std::vector<int64_t>(newSizes.size(), 1);
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return contiguousStrides(newSizes);
  // Walk the old dimensions from the innermost, in chunks whose elements are
  // evenly spaced; each chunk must be covered exactly by whole new dimensions.
  std::vector<int64_t> out(newSizes.size(), 0);
  int64_t viewD = static_cast<int64_t>(newSizes.size()) - 1;
  int64_t chunkBase = strides.back(), tensorNumel = 1, viewNumel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensorNumel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensorNumel * chunkBase)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newSizes[viewD] == 1)) {
        out[viewD] = viewNumel * chunkBase;
        viewNumel *= newSizes[viewD];
        --viewD;
      }
      if (viewNumel != tensorNumel) return std::nullopt;
      if (d > 0) {
        chunkBase = strides[d - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD != -1) return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> fakeViewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                    const std::vector<int64_t>& newSizes) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return contiguousStrides(newSizes);
  if (sizes.empty()) return std::vector<int64_t>(newSizes.size(), 1);  // unsqueezed at the end, one by one
  if (newSizes.empty()) return std::vector<int64_t>{};
  TensorSpec t;
  t.sizes = sizes;
  t.strides = strides;
  if (isContiguous(t)) {  // the reference's shortcuts for nd -> 1d and 1d -> 2d
    if (newSizes.size() == 1 && sizes.size() > 1) return std::vector<int64_t>{1};
    if (newSizes.size() == 2 && sizes.size() == 1) return std::vector<int64_t>{newSizes[1], 1};
  }
  // Left to right: a dimension of the right length is kept with its stride; else the
  // dimensions that make it up are collapsed (the smallest stride of the non-1 ones,
  // starting from the last) and split (outer stride = inner stride * inner length).
  std::vector<int64_t> shape = sizes, st = strides;
  auto split = [&](size_t d, int64_t outer) {
    const int64_t inner = shape[d] / outer;
    shape[d] = inner;
    shape.insert(shape.begin() + static_cast<long>(d), outer);
    st.insert(st.begin() + static_cast<long>(d), st[d] * inner);
  };
  size_t idx = 0;
  for (int64_t length : newSizes) {
    if (idx >= shape.size()) {  // a trailing 1: the last dimension split by its own length
      if (length != 1) return std::nullopt;
      split(shape.size() - 1, shape.back());
      ++idx;
      continue;
    }
    if (length == shape[idx]) {
      ++idx;
      continue;
    }
    if (length <= 0) return std::nullopt;
    int64_t accum = shape[idx];
    size_t end = idx;
    while (accum % length != 0) {
      if (++end >= shape.size()) return std::nullopt;
      accum *= shape[end];
    }
    if (end != idx) {
      for (size_t i = end; i-- > idx;)
        if (shape[i] != 1 && shape[i + 1] != 1 && st[i] != st[i + 1] * shape[i + 1]) return std::nullopt;
      int64_t stride = st[end];
      for (size_t i = end; i-- > idx;)
        if (shape[i] != 1) stride = std::min(stride, st[i]);
      shape.erase(shape.begin() + static_cast<long>(idx) + 1, shape.begin() + static_cast<long>(end) + 1);
      st.erase(st.begin() + static_cast<long>(idx) + 1, st.begin() + static_cast<long>(end) + 1);
      shape[idx] = accum;
      st[idx] = stride;
    }
    if (accum != length) split(idx, length);
    ++idx;
  }
  while (idx < shape.size()) {  // trailing 1s squeezed
    if (shape[idx] != 1) return std::nullopt;
    shape.erase(shape.begin() + static_cast<long>(idx));
    st.erase(st.begin() + static_cast<long>(idx));
  }
  if (shape != newSizes) return std::nullopt;
  return st;
}

TensorRef reshape(Rewrite& r, ValueId x, const std::vector<int64_t>& sizes) {
  const TensorSpec& t = r.spec(x);
  if (viewStrides(t.sizes, stridesOf(t), sizes)) return r.op("aten.view.default", {TensorRef{x}, sizes});
  TensorRef c = r.op("aten.clone.default", {TensorRef{x}, int64_t(0)});  // contiguous_format
  return r.op("aten.view.default", {c, sizes});
}

TensorRef reshape(Rewrite& r, ValueId x, const std::vector<SizeRef>& sizes) {
  const TensorSpec t = r.spec(x);
  std::vector<int64_t> numbers;
  for (const SizeRef& s : sizes) numbers.push_back(s.value);
  const std::vector<TensorSpec> spec{Rewrite::contiguousSpec(t.dtype, sizes)};
  if (viewStrides(t.sizes, stridesOf(t), numbers)) return r.op("aten.view.default", {TensorRef{x}, sizes}, &spec);
  std::vector<TensorSpec> cloned{t};
  cloned[0].strides.clear();
  TensorRef c = r.op("aten.clone.default", {TensorRef{x}, int64_t(0)}, &cloned);  // contiguous_format
  return r.op("aten.view.default", {c, sizes}, &spec);
}

namespace {

/// Dense strides that keep the dimension order of `like` (the layout an
/// elementwise result or a preserve_format copy takes), or contiguous when
/// `like` has another shape or overlaps.
std::vector<int64_t> denseLike(const TensorSpec& like, const std::vector<int64_t>& sizes) {
  if (like.sizes != sizes) return contiguousStrides(sizes);
  std::vector<int64_t> st = stridesOf(like);
  std::vector<size_t> order(sizes.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  // Outermost first: larger stride first; ties keep the dimension order. A
  // size-1 dimension has no stride of its own: it goes with the one after it.
  std::vector<int64_t> key(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 0;)
    key[d] = sizes[d] != 1 ? st[d] : (d + 1 < sizes.size() ? key[d + 1] * std::max<int64_t>(sizes[d + 1], 1) : 1);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
  std::vector<int64_t> out(sizes.size(), 1);
  int64_t step = 1;
  for (size_t k = order.size(); k-- > 0;) {
    out[order[k]] = step;
    step *= std::max<int64_t>(sizes[order[k]], 1);
  }
  return out;
}

}  // namespace

bool isSplit(const std::string& name) {
  return name == "aten::split" || name == "aten::split_with_sizes" || name == "aten::unsafe_split" ||
         name == "aten::unsafe_split_with_sizes" || name == "aten::unbind";
}

namespace {

bool isElementwise(const std::string& name) {
  static const char* const kOps[] = {
      "aten::add", "aten::sub", "aten::mul", "aten::div", "aten::relu", "aten::sigmoid", "aten::tanh", "aten::hardtanh",
      "aten::clamp", "aten::neg", "aten::exp", "aten::rsqrt", "aten::sqrt", "aten::pow", "aten::where", "aten::gelu",
      "aten::abs", "aten::eq", "aten::ne", "aten::logical_not", "aten::bitwise_and", "aten::sin", "aten::cos"};
  for (const char* k : kOps)
    if (name == k) return true;
  return false;
}

/// torch's is_contiguous for a memory format: size-1 dimensions skipped, the others dense in
/// the format's order (channels-last: C, W, H, N from the innermost; 4-d only).
bool denseInOrder(const std::vector<int64_t>& sizes, const std::vector<int64_t>& st, const std::vector<size_t>& innerFirst) {
  int64_t expected = 1;
  for (size_t d : innerFirst) {
    if (sizes[d] == 1) continue;
    if (st[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

/// The layout a fake tensor gives a pointwise result (torch's prims: every tensor operand
/// expanded to the result's shape, 0-d ones left out; all contiguous and not all channels-last
/// gives contiguous, the reverse channels-last; otherwise dimensions sorted by the operands'
/// strides, the first operand deciding and the next ones breaking ties).
std::vector<int64_t> pointwiseStrides(const Method& m, const std::vector<ValueId>& args, const std::vector<int64_t>& sizes) {
  const size_t n = sizes.size();
  std::vector<std::vector<int64_t>> operands;
  for (ValueId a : args) {
    const TensorSpec* t = a >= 0 ? m.values[a].tensorIf() : nullptr;
    if (!t || t->sizes.empty() || t->sizes.size() > n) continue;
    const std::vector<int64_t> st = stridesOf(*t);
    std::vector<int64_t> e(n, 0);  // expanded: broadcast dimensions have stride 0
    const size_t lead = n - t->sizes.size();
    for (size_t d = 0; d < t->sizes.size(); ++d) e[lead + d] = t->sizes[d] == sizes[lead + d] ? st[d] : 0;
    operands.push_back(std::move(e));
  }
  if (operands.empty() || n < 2) return contiguousStrides(sizes);
  std::vector<size_t> rowMajor(n), channelsLast{1, 3, 2, 0};
  for (size_t d = 0; d < n; ++d) rowMajor[d] = n - 1 - d;
  bool contiguous = true, cl = n == 4;
  for (const auto& st : operands) {
    contiguous = contiguous && denseInOrder(sizes, st, rowMajor);
    cl = cl && denseInOrder(sizes, st, channelsLast);
  }
  std::vector<size_t> perm(n);  // innermost first, sorted below
  if (contiguous && !cl) return contiguousStrides(sizes);
  if (cl && !contiguous) {
    perm = channelsLast;
  } else {
    for (size_t d = 0; d < n; ++d) perm[d] = n - 1 - d;
    auto shouldSwap = [&](size_t a, size_t b) {
      for (const auto& st : operands) {
        if (st[a] == 0 || st[b] == 0) continue;
        if (st[a] < st[b]) return -1;
        if (st[a] > st[b]) return 1;
        if (sizes[a] > sizes[b]) return 1;
      }
      return 0;
    };
    for (size_t i = 1; i < n; ++i) {
      size_t d1 = i;
      for (size_t d0 = i; d0-- > 0;) {
        const int c = shouldSwap(perm[d0], perm[d1]);
        if (c > 0) {
          std::swap(perm[d0], perm[d1]);
          d1 = d0;
        } else if (c < 0) {
          break;
        }
      }
    }
  }
  std::vector<int64_t> out(n, 1);
  int64_t step = 1;
  for (size_t d : perm) {
    out[d] = step;
    step *= std::max<int64_t>(sizes[d], 1);
  }
  return out;
}

}  // namespace

namespace {

// Any other operator (convolution, pooling, normalization, matmul...) lays its result out as a
// non-contiguous input of its rank suggests (torch's suggest_memory_format), else contiguously.
// A recorded layout that no input has any more (torch.export saw a view there, the edge program
// has its contiguous copy) is contiguous again, as upstream's retrace makes it. That holds for
// a dim order that only size-1 dimensions make non-trivial too ([1, C, 1, 1] recorded
// channels-last after a pooling): ExecuTorch's kernels compare dim orders, not strides.
std::optional<std::vector<int64_t>> layoutOfOtherOperator(const Method& m, const std::vector<ValueId>& args,
                                                          const TensorSpec& result) {
  if (result.dimOrder.size() != result.sizes.size()) return std::nullopt;
  bool identity = true;
  for (size_t d = 0; d < result.dimOrder.size(); ++d) identity = identity && result.dimOrder[d] == d;
  if (identity) return std::nullopt;
  std::vector<ValueId> inputs;  // tensor lists (cat's) included
  for (ValueId a : args)
    if (a >= 0) m.appendTensors(a, inputs);
  for (ValueId a : inputs)
    if (const TensorSpec* t = m.values[a].tensorIf();
        t && t->sizes.size() == result.sizes.size() && t->dimOrder == result.dimOrder)
      return std::nullopt;  // the recorded layout still follows from an input
  return contiguousStrides(result.sizes);
}

}  // namespace

std::optional<std::vector<int64_t>> derivedStrides(const Method& m, const OperatorRef& op, const std::vector<ValueId>& args,
                                                   const TensorSpec& result) {
  // The edge dialect's copies of views make fresh contiguous tensors.
  if (op.name.ends_with("_copy") && op.name != "aten::_to_copy") return contiguousStrides(result.sizes);
  const TensorSpec* in = !args.empty() && args[0] >= 0 ? m.values[args[0]].tensorIf() : nullptr;
  if (!in) return layoutOfOtherOperator(m, args, result);  // cat's first argument is a list
  auto ints = [&](size_t i) {
    std::vector<int64_t> out;
    if (i < args.size() && args[i] >= 0)
      if (auto* l = std::get_if<IntList>(&m.values[args[i]].payload))
        for (ValueId x : l->items) out.push_back(std::get<int64_t>(m.values[x].payload));
    return out;
  };
  auto integer = [&](size_t i) -> int64_t {
    if (i < args.size() && args[i] >= 0)
      if (auto* x = std::get_if<int64_t>(&m.values[args[i]].payload)) return *x;
    return 0;
  };
  const std::vector<int64_t> st = stridesOf(*in);
  const int64_t rank = static_cast<int64_t>(in->sizes.size());
  auto wrap = [](int64_t d, int64_t r) { return d < 0 ? d + r : d; };
  if (op.name == "aten::permute") {
    std::vector<int64_t> out;
    for (int64_t d : ints(1)) {
      d = wrap(d, rank);
      if (d < 0 || d >= rank) return std::nullopt;  // not a permutation of this tensor's dimensions
      out.push_back(st[d]);
    }
    if (out.size() != st.size()) return std::nullopt;
    return out;
  }
  if (op.name == "aten::expand") {
    if (result.sizes.size() < in->sizes.size()) return std::nullopt;
    std::vector<int64_t> out(result.sizes.size(), 0);
    size_t lead = result.sizes.size() - in->sizes.size();
    for (size_t d = 0; d < in->sizes.size(); ++d)
      out[lead + d] = in->sizes[d] == result.sizes[lead + d] ? st[d] : 0;
    return out;
  }
  if (op.name == "aten::unsqueeze") {
    int64_t d = wrap(integer(1), rank + 1);
    if (d < 0 || d > rank) return std::nullopt;
    std::vector<int64_t> out = st;
    int64_t s = d >= rank ? 1 : in->sizes[d] * st[d];
    out.insert(out.begin() + d, s);
    return out;
  }
  if (op.name == "aten::squeeze" || op.name == "aten::select") {
    std::vector<int64_t> out;
    std::vector<int64_t> dims = op.name == "aten::select" ? std::vector<int64_t>{integer(1)} : ints(1);
    for (int64_t d = 0; d < rank; ++d) {
      bool drop = false;
      for (int64_t x : dims) drop = drop || wrap(x, rank) == d;
      if (op.name == "aten::squeeze") drop = drop && in->sizes[d] == 1;
      if (!drop) out.push_back(st[d]);
    }
    return out;
  }
  if (op.name == "aten::diagonal") {  // the two dimensions become one, last, stepping by both strides
    int64_t a = wrap(args.size() > 2 ? integer(2) : 0, rank), b = wrap(args.size() > 3 ? integer(3) : 1, rank);
    if (a < 0 || b < 0 || a >= rank || b >= rank || a == b) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d)
      if (d != a && d != b) out.push_back(st[d]);
    out.push_back(st[a] + st[b]);
    return out;
  }
  if (op.name == "aten::slice") {
    std::vector<int64_t> out = st;
    int64_t d = wrap(integer(1), rank), step = args.size() > 4 ? std::max<int64_t>(integer(4), 1) : 1;
    if (d >= 0 && d < rank) out[d] *= step;
    return out;
  }
  if (isSplit(op.name)) {  // pieces along one dimension: the input's strides (unbind drops that dimension)
    if (op.name != "aten::unbind") return result.sizes.size() == st.size() ? std::optional(st) : std::nullopt;
    std::vector<int64_t> out = st;
    const int64_t d = wrap(args.size() > 1 ? integer(1) : 0, rank);
    if (d < 0 || d >= rank || result.sizes.size() + 1 != st.size()) return std::nullopt;
    out.erase(out.begin() + d);
    return out;
  }
  if (op.name == "aten::view" || op.name == "aten::_unsafe_view")
    return fakeViewStrides(in->sizes, st, result.sizes).value_or(contiguousStrides(result.sizes));
  if (op.name == "aten::clone") {
    // memory_format: absent or preserve (1) keeps the input's layout; contiguous (0) does not.
    const Value* mf = args.size() > 1 && args[1] >= 0 ? &m.values[args[1]] : nullptr;
    const auto* f = mf ? std::get_if<int64_t>(&mf->payload) : nullptr;
    if (f && (*f == 2 || *f == 3) && result.sizes.size() == size_t(*f == 2 ? 4 : 5)) {  // channels_last(_3d)
      std::vector<int64_t> st(result.sizes.size());
      int64_t step = 1;
      for (size_t d = st.size(); d-- > 1;) {  // channels innermost, then the spatial dims, then N
        const size_t dim = d == st.size() - 1 ? 1 : d + 1;
        st[dim] = step;
        step *= std::max<int64_t>(result.sizes[dim], 1);
      }
      st[0] = step;
      return st;
    }
    return f && *f == 0 ? contiguousStrides(result.sizes) : denseLike(*in, result.sizes);
  }
  // ATen's softmax meta function writes a contiguous result whatever its input's layout (cait's
  // talking heads read a permuted softmax, and torch's matmul then does not fold).
  if (op.name == "aten::_softmax" || op.name == "aten::_log_softmax") return contiguousStrides(result.sizes);
  if (isElementwise(op.name)) return pointwiseStrides(m, args, result.sizes);
  if (op.name == "aten::full_like" || op.name == "aten::_to_copy") {
    // preserve_format: the first operand with the result's shape lends its layout.
    for (ValueId a : args)
      if (const TensorSpec* t = a >= 0 ? m.values[a].tensorIf() : nullptr; t && t->sizes == result.sizes)
        return denseLike(*t, result.sizes);
    return contiguousStrides(result.sizes);
  }
  return layoutOfOtherOperator(m, args, result);
}

std::vector<uint8_t> dimOrderOf(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<uint8_t> order(sizes.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<uint8_t>(d);
  if (strides.size() == sizes.size())
    std::stable_sort(order.begin(), order.end(), [&](uint8_t a, uint8_t b) { return strides[a] > strides[b]; });
  return order;
}

Rewrite::Rewrite(Method& m, const Node& node, std::vector<Node>& out,
                 std::function<std::string(const std::string&)> freshName, std::vector<std::string> preserveOps,
                 SymbolicSizes* sizes)
    : m_(m), node_(node), out_(out), freshName_(std::move(freshName)), preserveOps_(std::move(preserveOps)),
      sizes_(sizes ? sizes : &ownSizes_) {}

bool Rewrite::preserved(const std::string& name, const std::string& overload) const {
  return EdgeCompileConfig::lists(preserveOps_, name, overload);
}

ValueId Rewrite::arg(std::string_view name) const {
  for (size_t k = 0; k < node_.args.size() && k < node_.argNames.size(); ++k)
    if (node_.argNames[k] == name) return node_.args[k];
  return kNoValue;
}

bool Rewrite::spelled(std::string_view name) const {
  for (size_t k = 0; k < node_.args.size() && k < node_.argNames.size(); ++k)
    if (node_.argNames[k] == name) return k >= 64 || !(node_.defaultedArgs >> k & 1);
  return false;
}

TensorSpec Rewrite::spec(ValueId v) const {
  static const TensorSpec kNone;
  if (v >= 0 && static_cast<size_t>(v) < m_.values.size())
    if (const TensorSpec* t = m_.values[v].tensorIf()) return *t;
  if (!failure_) failure_ = "an argument that should be a tensor is not one";
  return kNone;
}

bool Rewrite::isNone(std::string_view name) const {
  ValueId v = arg(name);
  return v < 0 || m_.values[v].kind() == ValueKind::None;
}

std::optional<int64_t> Rewrite::integer(std::string_view name) const {
  ValueId v = arg(name);
  if (v < 0 || m_.values[v].symbolic) return std::nullopt;  // its payload is only the example's value
  if (auto* x = std::get_if<int64_t>(&m_.values[v].payload)) return *x;
  if (auto* b = std::get_if<bool>(&m_.values[v].payload)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<SizeRef> Rewrite::sizeArg(std::string_view name) const {
  ValueId v = arg(name);
  if (v < 0) return std::nullopt;
  const auto* i = std::get_if<int64_t>(&m_.values[v].payload);
  if (!i) return std::nullopt;
  if (!m_.values[v].symbolic) return SizeRef{*i};
  return SizeRef{*i, v, sizes_->keyOf(m_, v)};
}

std::optional<double> Rewrite::number(std::string_view name) const {
  ValueId v = arg(name);
  if (v < 0 || m_.values[v].symbolic) return std::nullopt;
  if (auto* x = std::get_if<double>(&m_.values[v].payload)) return *x;
  if (auto* i = std::get_if<int64_t>(&m_.values[v].payload)) return static_cast<double>(*i);
  if (auto* b = std::get_if<bool>(&m_.values[v].payload)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> Rewrite::ints(std::string_view name) const {
  ValueId v = arg(name);
  if (v < 0) return std::nullopt;
  const auto* l = std::get_if<IntList>(&m_.values[v].payload);
  if (!l) return std::nullopt;
  std::vector<int64_t> out;
  for (ValueId x : l->items) {
    const auto* i = std::get_if<int64_t>(&m_.values[x].payload);
    if (!i || m_.values[x].symbolic) return std::nullopt;  // a symbolic size: not a fixed list
    out.push_back(*i);
  }
  return out;
}

std::vector<ValueId> Rewrite::tensors(std::string_view name) const {
  ValueId v = arg(name);
  if (v < 0) return {};
  if (auto* l = std::get_if<TensorList>(&m_.values[v].payload)) return l->items;
  if (auto* l = std::get_if<OptionalTensorList>(&m_.values[v].payload)) return l->items;
  return {};
}

namespace {

bool isSymSize(const Method& m, const Node& n) {
  return n.kind == NodeKind::Kernel && n.op >= 0 && m.operators[n.op].name == "aten::sym_size" &&
         m.operators[n.op].overload == "int" && n.args.size() == 2 && n.outputs.size() == 1;
}

/// A call of `_operator.<name>` on two sizes.
bool isSymCall(const Method& m, const Node& n, std::string_view name) {
  return n.kind == NodeKind::Kernel && n.op >= 0 && m.operators[n.op].name == "_operator::" + std::string(name) &&
         n.args.size() == 2 && n.outputs.size() == 1;
}

}  // namespace

std::string productExpression(const SizeRef& a, const SizeRef& b) {
  auto text = [](const SizeRef& x) {
    if (!x.isSymbolic()) return std::to_string(x.value);
    return x.expression.find_first_of("+-") == std::string::npos ? x.expression : "(" + x.expression + ")";
  };
  return b.isSymbolic() ? text(a) + "*" + text(b) : text(b) + "*" + text(a);
}

std::string sumExpression(const SizeRef& a, const SizeRef& b) {
  if (!a.isSymbolic() && !b.isSymbolic()) return std::to_string(a.value + b.value);
  if (!a.isSymbolic()) return sumExpression(b, a);
  if (!b.isSymbolic()) return a.expression + (b.value < 0 ? " - " + std::to_string(-b.value) : " + " + std::to_string(b.value));
  return a.expression <= b.expression ? a.expression + " + " + b.expression : b.expression + " + " + a.expression;
}

void SymbolicSizes::add(const std::string& expression, ValueId v) {
  if (expression.empty() || v == kNoValue) return;
  byExpression_.emplace(expression, v);
  expressions_[v] = expression;
}

ValueId SymbolicSizes::find(const std::string& expression) const {
  auto it = byExpression_.find(expression);
  return it == byExpression_.end() ? kNoValue : it->second;
}

std::string SymbolicSizes::expressionOf(ValueId v) const {
  auto it = expressions_.find(v);
  return it == expressions_.end() ? std::string() : it->second;
}

std::string SymbolicSizes::keyOf(const Method& m, ValueId v) const {
  if (std::string e = expressionOf(v); !e.empty()) return e;
  return v >= 0 && m.values[v].symbolic ? "#" + std::to_string(v) : std::string();
}

void SymbolicSizes::note(const Method& m, const Node& n) {
  if (isSymSize(m, n)) {
    const TensorSpec* t = n.args[0] >= 0 ? m.values[n.args[0]].tensorIf() : nullptr;
    const auto* d = std::get_if<int64_t>(&m.values[n.args[1]].payload);
    if (t && d && *d >= 0 && static_cast<size_t>(*d) < t->symbols.size()) add(t->symbols[*d], n.outputs[0]);
  } else if (isSymCall(m, n, "mul") || isSymCall(m, n, "add")) {
    auto operand = [&](ValueId v) -> std::optional<SizeRef> {
      if (std::string e = keyOf(m, v); !e.empty()) return SizeRef{0, v, e};
      if (const auto* i = std::get_if<int64_t>(&m.values[v].payload)) return SizeRef{*i};
      return std::nullopt;
    };
    auto a = operand(n.args[0]), b = operand(n.args[1]);
    if (a && b) add(isSymCall(m, n, "mul") ? productExpression(*a, *b) : sumExpression(*a, *b), n.outputs[0]);
  }
}

SizeRef Rewrite::size(ValueId tensor, size_t dim) {
  const TensorSpec t = spec(tensor);
  if (dim >= t.sizes.size()) {
    fail("a size of a dimension the tensor does not have");
    return {};
  }
  if (dim >= t.symbols.size() || t.symbols[dim].empty()) return SizeRef{t.sizes[dim]};
  const std::string symbol = t.symbols[dim];
  if (ValueId known = sizes_->find(symbol); known != kNoValue) return SizeRef{t.sizes[dim], known, symbol};
  // A new symbol: sym_size.int on the first input that has it.
  ValueId source = kNoValue;
  int64_t sourceDim = -1;
  for (ValueId in : m_.inputs) {
    const TensorSpec* s = in >= 0 ? m_.values[in].tensorIf() : nullptr;
    for (size_t d = 0; s && d < s->symbols.size() && source == kNoValue; ++d)
      if (s->symbols[d] == symbol) source = in, sourceDim = static_cast<int64_t>(d);
    if (source != kNoValue) break;
  }
  if (source == kNoValue) {
    fail("the symbolic size " + symbol + " is not a size of any input");
    return {};
  }
  Node n;
  n.kind = NodeKind::Kernel;
  n.target = "torch.ops.aten.sym_size.int";
  n.op = operatorIndexOf(m_, OperatorRef{"aten::sym_size", "int"});
  n.args = {source, passes::addValue(m_, Value{sourceDim, {}})};
  n.argNames = {"self", "dim"};
  Value result{t.sizes[dim], freshName_("sym_size")};
  result.symbolic = true;
  n.outputs = {passes::addValue(m_, std::move(result))};
  n.name = m_.values[n.outputs[0]].name;
  const ValueId id = n.outputs[0];
  sizes_->add(symbol, id);
  // After the sym_size calls at the start of the graph, where the tracer binds an input's sizes.
  out_.insert(std::find_if(out_.begin(), out_.end(), [&](const Node& x) { return !isSymSize(m_, x); }), std::move(n));
  return SizeRef{t.sizes[dim], id, symbol};
}

std::vector<SizeRef> Rewrite::sizes(ValueId tensor, size_t from, size_t to) {
  std::vector<SizeRef> out;
  for (size_t d = from; d < to && !failure_; ++d) out.push_back(size(tensor, d));
  return out;
}

SizeRef Rewrite::mul(const SizeRef& a, const SizeRef& b) {
  if (!a.isSymbolic() && !b.isSymbolic()) return SizeRef{a.value * b.value};
  if (!a.isSymbolic() && a.value == 1) return b;
  if (!b.isSymbolic() && b.value == 1) return a;
  if (failure_) return {};
  return scalarCall("mul", a, b, a.value * b.value, productExpression(a, b));
}

SizeRef Rewrite::add(const SizeRef& a, const SizeRef& b) {
  if (!a.isSymbolic() && !b.isSymbolic()) return SizeRef{a.value + b.value};
  if (!a.isSymbolic() && a.value == 0) return b;
  if (!b.isSymbolic() && b.value == 0) return a;
  if (failure_) return {};
  return scalarCall("add", a, b, a.value + b.value, sumExpression(a, b));
}

SizeRef Rewrite::scalarCall(const std::string& name, const SizeRef& a, const SizeRef& b, int64_t hint,
                            std::string expression) {
  if (ValueId known = sizes_->find(expression); known != kNoValue) return SizeRef{hint, known, expression};
  auto operand = [&](const SizeRef& x) { return x.isSymbolic() ? x.symbolic : passes::addValue(m_, Value{x.value, {}}); };
  Node n;
  n.kind = NodeKind::Kernel;
  n.target = "_operator." + name;
  n.op = operatorIndexOf(m_, operatorFromTarget(n.target));
  n.args = {operand(a), operand(b)};
  n.argNames = {"a", "b"};
  Value result{hint, freshName_(name)};
  result.symbolic = true;
  n.outputs = {passes::addValue(m_, std::move(result))};
  n.name = m_.values[n.outputs[0]].name;
  const ValueId id = n.outputs[0];
  sizes_->add(expression, id);
  place(std::move(n));
  return SizeRef{hint, id, std::move(expression)};
}

TensorSpec denseSpec(ScalarType dtype, std::vector<int64_t> sizes, std::vector<std::string> symbols) {
  TensorSpec t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  if (std::any_of(symbols.begin(), symbols.end(), [](const std::string& x) { return !x.empty(); })) {
    t.symbols = std::move(symbols);
    t.symbols.resize(t.sizes.size());
    t.dynamism = ShapeDynamism::DynamicBound;
  }
  for (size_t d = 0; d < t.sizes.size(); ++d) t.dimOrder.push_back(static_cast<uint8_t>(d));
  t.strides = contiguousStrides(t.sizes);
  return t;
}

TensorSpec Rewrite::contiguousSpec(ScalarType dtype, const std::vector<SizeRef>& sizes) {
  std::vector<int64_t> numbers;
  std::vector<std::string> symbols;
  for (const SizeRef& s : sizes) {
    numbers.push_back(s.value);
    symbols.push_back(s.isSymbolic() ? s.expression : std::string());
  }
  return denseSpec(dtype, std::move(numbers), std::move(symbols));
}

void Rewrite::place(Node n) {
  n.meta.moduleStack = node_.meta.moduleStack;
  n.meta.stackTrace = node_.meta.stackTrace;
  n.meta.origin = node_.meta.origin;
  out_.push_back(std::move(n));
}

bool Rewrite::spellsStaticSizes(const std::string& target, const std::vector<BuildArg>& args) {
  const OpSchema* schema = OpRegistry::builtin().findByTarget(target);
  if (!schema) return false;
  bool symbolicTensor = false;
  for (const BuildArg& a : args)
    if (const auto* t = std::get_if<TensorRef>(&a.v); t && t->id >= 0)
      if (const TensorSpec* s = m_.values[t->id].tensorIf(); s && !s->symbols.empty()) symbolicTensor = true;
  if (!symbolicTensor) return false;
  for (size_t i = 0; i < args.size() && i < schema->arguments.size(); ++i) {
    // Sizes of a result (view, expand, reshape, full, upsample's output_size), not
    // amounts such as padding or repeats; a -1 is left for the kernel to take.
    const SchemaArgument& a = schema->arguments[i];
    const auto* numbers = std::get_if<std::vector<int64_t>>(&args[i].v);
    if (a.type.base == SchemaType::Base::SymInt && a.type.list && numbers &&
        (a.name == "size" || a.name == "shape" || a.name == "output_size") &&
        std::find(numbers->begin(), numbers->end(), -1) == numbers->end()) {
      fail(schema->qualifiedName() + " with fixed sizes for a tensor of symbolic sizes: this rule does not spell "
           "symbolic sizes yet");
      return true;
    }
  }
  return false;
}

std::vector<TensorRef> Rewrite::call(const std::string& target, std::vector<BuildArg> args,
                                     const std::vector<TensorSpec>* specs) {
  if (failure_ || spellsStaticSizes(target, args)) return {};
  auto n = buildCall(m_, target, std::move(args), freshName_, specs);
  if (!n) {
    fail(n.error().what + ": " + n.error().found);
    return {};
  }
  const OperatorRef& op = m_.operators[n->op];
  std::vector<TensorRef> outs;
  for (ValueId o : n->outputs) {
    TensorSpec& t = m_.values[o].tensor();
    t.strides = derivedStrides(m_, op, n->args, t).value_or(contiguousStrides(t.sizes));
    t.dimOrder = dimOrderOf(t.sizes, t.strides);
    outs.push_back(TensorRef{o});
  }
  place(std::move(n.value()));
  return outs;
}

TensorRef Rewrite::op(const std::string& target, std::vector<BuildArg> args, const std::vector<TensorSpec>* specs) {
  auto outs = call(target, std::move(args), specs);
  return outs.empty() ? TensorRef{} : outs.front();
}

void Rewrite::finish(const std::string& target, std::vector<BuildArg> args, std::vector<TensorSpec> extra) {
  if (failure_ || spellsStaticSizes(target, args)) return;
  // The node's own results keep their ids and specs (torch.export recorded
  // them); results the node did not have (a native op's statistics) are extra.
  std::vector<TensorSpec> specs;
  for (ValueId o : node_.outputs) specs.push_back(spec(o));
  for (TensorSpec& t : extra) specs.push_back(std::move(t));
  auto n = buildCall(m_, target, std::move(args), freshName_, &specs);
  if (!n) return fail(n.error().what + ": " + n.error().found);
  for (size_t i = 0; i < node_.outputs.size() && i < n->outputs.size(); ++i) n->outputs[i] = node_.outputs[i];
  n->name = node_.name;
  place(std::move(n.value()));
}

void Rewrite::into(size_t i, const std::string& target, std::vector<BuildArg> args) {
  if (failure_ || spellsStaticSizes(target, args)) return;
  std::vector<TensorSpec> specs{spec(result(i))};
  auto n = buildCall(m_, target, std::move(args), freshName_, &specs);
  if (!n) return fail(n.error().what + ": " + n.error().found);
  if (n->outputs.size() != 1) return fail(target + " has more than one result");
  n->outputs[0] = result(i);
  n->name = m_.values[result(i)].name;
  place(std::move(n.value()));
}

void Rewrite::retarget(const std::string& target) {
  if (failure_) return;
  Node n = node_;
  n.target = target;
  n.op = operatorIndexOf(m_, operatorFromTarget(target));
  place(std::move(n));
}

void Rewrite::resultIs(ValueId v) {
  if (!failure_) replaced_.push_back({result(0), v});
}

void Rewrite::fail(std::string why) {
  if (!failure_) failure_ = std::move(why);
}

}  // namespace lstudio::decompositions
