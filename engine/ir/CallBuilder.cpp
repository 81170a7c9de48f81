#include "engine/ir/CallBuilder.h"

#include <algorithm>
#include <optional>
#include <cmath>
#include <string_view>

#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"

namespace lstudio {
namespace {

const TensorSpec* tensorArg(const Method& m, const std::vector<ValueId>& args, size_t i) {
  if (i >= args.size() || args[i] < 0 || static_cast<size_t>(args[i]) >= m.values.size()) return nullptr;
  return m.values[args[i]].tensorIf();
}

std::optional<int64_t> intArg(const Method& m, const std::vector<ValueId>& args, size_t i) {
  if (i >= args.size() || args[i] < 0) return std::nullopt;
  if (auto* v = std::get_if<int64_t>(&m.values[args[i]].payload)) return *v;
  if (auto* b = std::get_if<bool>(&m.values[args[i]].payload)) return *b ? 1 : 0;
  return std::nullopt;
}

/// Items of an IntList argument (nullopt when the argument is None).
std::optional<std::vector<int64_t>> intsArg(const Method& m, const std::vector<ValueId>& args, size_t i) {
  if (i >= args.size() || args[i] < 0) return std::nullopt;
  const auto* l = std::get_if<IntList>(&m.values[args[i]].payload);
  if (!l) return std::nullopt;
  std::vector<int64_t> out;
  for (ValueId x : l->items) out.push_back(std::get<int64_t>(m.values[x].payload));
  return out;
}

std::string symbolOf(const TensorSpec& t, size_t d) { return d < t.symbols.size() ? t.symbols[d] : std::string(); }

TensorSpec like(const TensorSpec& t, std::vector<int64_t> sizes, std::vector<std::string> symbols = {}) {
  TensorSpec r;
  r.dtype = t.dtype;
  r.sizes = std::move(sizes);
  r.symbols = std::move(symbols);
  bool any = false;
  for (const auto& s : r.symbols) any = any || !s.empty();
  if (!any) r.symbols.clear();
  r.dynamism = any ? ShapeDynamism::DynamicBound : ShapeDynamism::Static;
  for (size_t d = 0; d < r.sizes.size(); ++d) r.dimOrder.push_back(static_cast<uint8_t>(d));
  return r;
}

int64_t wrapDim(int64_t d, size_t rank) { return d < 0 ? d + static_cast<int64_t>(rank) : d; }

Error shapeError(const std::string& op, const std::string& what) {
  return Error{ErrorCode::Invalid, {}, std::nullopt, "shape inference for " + op, "consistent arguments", what};
}

/// Broadcast of two shapes (numpy rules), symbols kept from whichever side has the dimension.
std::optional<TensorSpec> broadcast(const TensorSpec& a, const TensorSpec& b) {
  size_t n = std::max(a.sizes.size(), b.sizes.size());
  std::vector<int64_t> sizes(n);
  std::vector<std::string> syms(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.sizes.size() ? 1 : a.sizes[i - (n - a.sizes.size())];
    int64_t db = i < n - b.sizes.size() ? 1 : b.sizes[i - (n - b.sizes.size())];
    std::string sa = i < n - a.sizes.size() ? "" : symbolOf(a, i - (n - a.sizes.size()));
    std::string sb = i < n - b.sizes.size() ? "" : symbolOf(b, i - (n - b.sizes.size()));
    if (da != db && da != 1 && db != 1) return std::nullopt;
    sizes[i] = da == 1 ? db : da;
    syms[i] = da == 1 ? sb : sa;
  }
  return like(a, sizes, syms);
}

using Specs = Result<std::vector<TensorSpec>>;

std::vector<TensorSpec> one(TensorSpec t) { return std::vector<TensorSpec>{std::move(t)}; }

/// One call whose result specs a shape rule infers; each rule reads one operator family.
struct ShapeCall {
  const Method& m;
  const std::string& name;
  const std::string& overload;
  const std::vector<ValueId>& args;
  const std::string op = name + "." + overload;  // for messages
  const TensorSpec* a0 = tensorArg(m, args, 0);

  /// Elementwise operators with one tensor input: its shape.
  Specs sameShape() const {
    if (!a0) return shapeError(op, "no input tensor");
    return one(like(*a0, a0->sizes, a0->symbols));
  }

  /// Binary arithmetic: the operands broadcast (a Scalar overload keeps the tensor's shape).
  Specs broadcastBinary() const {
    if (!a0) return shapeError(op, "no input tensor");
    const TensorSpec* a1 = tensorArg(m, args, 1);
    if (!a1) return one(like(*a0, a0->sizes, a0->symbols));  // Scalar overloads
    auto r = broadcast(*a0, *a1);
    if (!r) return shapeError(op, "shapes that do not broadcast: " + a0->shapeString() + " and " + a1->shapeString());
    return one(*r);
  }

  /// where(cond, x, y): all three broadcast, x's dtype.
  Specs where() const {
    const TensorSpec *c = a0, *x = tensorArg(m, args, 1), *y = tensorArg(m, args, 2);
    if (!c || !x || !y) return shapeError(op, "three tensors");
    auto r = broadcast(*x, *y);
    if (r) r = broadcast(*c, *r);
    if (!r) return shapeError(op, "shapes that do not broadcast");
    r->dtype = x->dtype;
    return one(*r);
  }

  /// addmm, mm, bmm: the first matrix's sizes but its last, then the second's last.
  Specs matmul() const {
    size_t first = name == "aten::addmm" ? 1 : 0;
    const TensorSpec *x = tensorArg(m, args, first), *w = tensorArg(m, args, first + 1);
    if (!x || !w) return shapeError(op, "two matrices");
    size_t rx = x->sizes.size(), rw = w->sizes.size();
    if (rx < 2 || rw < 2 || x->sizes[rx - 1] != w->sizes[rw - 2])
      return shapeError(op, "inner sizes that differ: " + x->shapeString() + " @ " + w->shapeString());
    std::vector<int64_t> s(x->sizes.begin(), x->sizes.end() - 1);
    std::vector<std::string> sy(s.size());
    for (size_t d = 0; d < s.size(); ++d) sy[d] = symbolOf(*x, d);
    s.push_back(w->sizes[rw - 1]);
    sy.push_back(symbolOf(*w, rw - 1));
    return one(like(*x, s, sy));
  }

  /// permute: the sizes in the permuted order.
  Specs permute() const {
    auto dims = intsArg(m, args, 1);
    if (!a0 || !dims || dims->size() != a0->sizes.size()) return shapeError(op, "a permutation of every dimension");
    std::vector<int64_t> s;
    std::vector<std::string> sy;
    for (int64_t d : *dims) {
      d = wrapDim(d, a0->sizes.size());
      s.push_back(a0->sizes[d]);
      sy.push_back(symbolOf(*a0, d));
    }
    return one(like(*a0, s, sy));
  }

  /// view, expand, full, empty: the size list argument (-1 inferred or kept).
  Specs sizeList() const {
    size_t at = name == "aten::full" || name == "aten::empty" ? 0 : 1;
    auto sizes = intsArg(m, args, at);
    if (!sizes) return shapeError(op, "a size list");
    std::vector<int64_t> s = *sizes;
    if (name == "aten::full" || name == "aten::empty") {
      TensorSpec proto;
      std::optional<int64_t> dt = intArg(m, args, name == "aten::full" ? 2 : 1);
      proto.dtype = dt ? static_cast<ScalarType>(*dt) : ScalarType::Float;
      return one(like(proto, s));
    }
    if (!a0) return shapeError(op, "an input tensor");
    // A size computed at run time, or one inferred from a symbolic input, has
    // an expression these numbers do not carry: the caller gives the spec.
    const auto* list = std::get_if<IntList>(&m.values[args[at]].payload);
    for (ValueId x : list->items)
      if (m.values[x].symbolic) return shapeError(op, "sizes known without running the program (a symbolic size needs its spec given)");
    auto numel = a0->numel().value_or(0);
    int64_t known = 1, infer = -1;
    std::vector<std::string> sy(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == -1 && (name == "aten::view" || name == "aten::reshape")) infer = static_cast<int64_t>(d);
      else if (s[d] == -1 && d + a0->sizes.size() >= s.size()) {
        s[d] = a0->sizes[d + a0->sizes.size() - s.size()];
        sy[d] = symbolOf(*a0, d + a0->sizes.size() - s.size());
      } else known *= s[d];
    }
    if (infer >= 0 && !a0->symbols.empty()) return shapeError(op, "a size inferred (-1) from a tensor with symbolic sizes");
    if (infer >= 0) s[infer] = known ? static_cast<int64_t>(numel) / known : 0;
    return one(like(*a0, s, sy));
  }

  /// unsqueeze, squeeze, select, slice: one dimension added, removed or cut.
  Specs dimensionEdit() const {
    if (!a0) return shapeError(op, "an input tensor");
    std::vector<int64_t> s = a0->sizes;
    std::vector<std::string> sy(s.size());
    for (size_t d = 0; d < s.size(); ++d) sy[d] = symbolOf(*a0, d);
    if (name == "aten::unsqueeze") {
      int64_t d = wrapDim(intArg(m, args, 1).value_or(0), s.size() + 1);
      s.insert(s.begin() + d, 1);
      sy.insert(sy.begin() + d, "");
    } else if (name == "aten::squeeze") {
      auto dims = intsArg(m, args, 1).value_or(std::vector<int64_t>{});
      for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
        int64_t d = wrapDim(*it, s.size());
        if (d >= 0 && static_cast<size_t>(d) < s.size() && s[d] == 1) s.erase(s.begin() + d), sy.erase(sy.begin() + d);
      }
    } else if (name == "aten::select") {
      int64_t d = wrapDim(intArg(m, args, 1).value_or(0), s.size());
      if (d < 0 || static_cast<size_t>(d) >= s.size()) return shapeError(op, "a dimension in range");
      s.erase(s.begin() + d);
      sy.erase(sy.begin() + d);
    } else {
      int64_t d = wrapDim(intArg(m, args, 1).value_or(0), s.size());
      if (d < 0 || static_cast<size_t>(d) >= s.size()) return shapeError(op, "a dimension in range");
      int64_t start = intArg(m, args, 2).value_or(0), end = intArg(m, args, 3).value_or(s[d]), step = intArg(m, args, 4).value_or(1);
      if (start < 0) start += s[d];
      if (end < 0) end += s[d];
      end = std::min(end, s[d]);
      start = std::clamp<int64_t>(start, 0, end);
      s[d] = step > 0 ? (end - start + step - 1) / step : 0;
      sy[d].clear();
    }
    return one(like(*a0, s, sy));
  }

  /// index.Tensor with one index tensor among Nones: that dimension becomes the index's shape.
  Specs index() const {
    const auto* list = args.size() > 1 ? std::get_if<OptionalTensorList>(&m.values[args[1]].payload) : nullptr;
    if (!a0 || !list) return shapeError(op, "a tensor and a list of optional index tensors");
    std::vector<int64_t> s;
    std::vector<std::string> sy;
    size_t used = 0;
    for (size_t d = 0; d < list->items.size(); ++d) {
      if (list->items[d] == kNoValue) {
        s.push_back(a0->sizes[d]);
        sy.push_back(symbolOf(*a0, d));
      } else {
        const TensorSpec& idx = m.values[list->items[d]].tensor();
        s.insert(s.end(), idx.sizes.begin(), idx.sizes.end());
        for (size_t k = 0; k < idx.sizes.size(); ++k) sy.push_back(symbolOf(idx, k));
      }
      ++used;
    }
    for (size_t d = used; d < a0->sizes.size(); ++d) {
      s.push_back(a0->sizes[d]);
      sy.push_back(symbolOf(*a0, d));
    }
    return one(like(*a0, s, sy));
  }

  /// cat: the inputs' sizes summed along the dimension.
  Specs concatenate() const {
    const auto* list = args.empty() ? nullptr : std::get_if<TensorList>(&m.values[args[0]].payload);
    if (!list || list->items.empty()) return shapeError(op, "a non-empty tensor list");
    const TensorSpec& f = m.values[list->items[0]].tensor();
    int64_t d = wrapDim(intArg(m, args, 1).value_or(0), f.sizes.size());
    std::vector<int64_t> s = f.sizes;
    std::vector<std::string> sy(s.size());
    for (size_t k = 0; k < s.size(); ++k) sy[k] = symbolOf(f, k);
    s[d] = 0;
    sy[d].clear();
    int64_t fixed = 0;
    for (ValueId x : list->items) {  // the sizes along d add up: "s0 + 3"
      const TensorSpec& t = m.values[x].tensor();
      s[d] += t.sizes[d];
      if (std::string e = symbolOf(t, d); !e.empty()) sy[d] += (sy[d].empty() ? "" : " + ") + e;
      else fixed += t.sizes[d];
    }
    if (!sy[d].empty() && fixed) sy[d] += " + " + std::to_string(fixed);
    return one(like(f, s, sy));
  }

  /// mean, sum, amax, var: the reduced dimensions dropped or kept as 1 (none
  /// given, or sum.default / mean.default: all of them).
  Specs reduction() const {
    if (!a0) return shapeError(op, "an input tensor");
    const bool whole = overload == "default" && (name == "aten::sum" || name == "aten::mean");
    auto dims = whole ? std::nullopt : intsArg(m, args, 1);
    bool keep = !whole && intArg(m, args, name == "aten::var" ? 3 : 2).value_or(0) != 0;
    if (!dims || dims->empty()) return one(like(*a0, keep ? std::vector<int64_t>(a0->sizes.size(), 1) : std::vector<int64_t>{}));
    std::vector<int64_t> s;
    std::vector<std::string> sy;
    for (size_t d = 0; d < a0->sizes.size(); ++d) {
      bool reduced = false;
      for (int64_t r : *dims) reduced = reduced || wrapDim(r, a0->sizes.size()) == static_cast<int64_t>(d);
      if (reduced && !keep) continue;
      s.push_back(reduced ? 1 : a0->sizes[d]);
      sy.push_back(reduced ? "" : symbolOf(*a0, d));
    }
    return one(like(*a0, s, sy));
  }

  /// embedding: the indices' shape plus the embedding size.
  Specs embedding() const {
    const TensorSpec* idx = tensorArg(m, args, 1);
    if (!a0 || !idx || a0->sizes.size() != 2) return shapeError(op, "a 2-d weight and indices");
    std::vector<int64_t> s = idx->sizes;
    std::vector<std::string> sy(idx->symbols);
    sy.resize(s.size());
    s.push_back(a0->sizes[1]);
    sy.push_back("");
    return one(like(*a0, s, sy));
  }

  /// 2-d convolution: NCHW from the input, the weight, stride, padding and dilation.
  Specs convolution() const {
    const TensorSpec* w = tensorArg(m, args, 1);
    auto stride = intsArg(m, args, 3), pad = intsArg(m, args, 4), dil = intsArg(m, args, 5);
    if (!a0 || !w || !stride || !pad || !dil || a0->sizes.size() != 4 || w->sizes.size() != 4)
      return shapeError(op, "NCHW input, OIHW weight, stride, padding, dilation");
    std::vector<int64_t> s = {a0->sizes[0], w->sizes[0], 0, 0};
    for (int k = 0; k < 2; ++k) {
      int64_t st = (*stride)[std::min<size_t>(k, stride->size() - 1)], p = (*pad)[std::min<size_t>(k, pad->size() - 1)],
              di = (*dil)[std::min<size_t>(k, dil->size() - 1)];
      s[2 + k] = (a0->sizes[2 + k] + 2 * p - di * (w->sizes[2 + k] - 1) - 1) / st + 1;
    }
    return one(like(*a0, s, {symbolOf(*a0, 0), "", "", ""}));
  }

  /// max_pool2d(_with_indices) and avg_pool2d without ceil_mode: NCHW from the kernel, stride
  /// (none: the kernel's), padding and (max pooling) dilation; with indices an int64 twin.
  Specs pool2d() const {
    auto kernel = intsArg(m, args, 1), stride = intsArg(m, args, 2), pad = intsArg(m, args, 3);
    const bool isMax = name != "aten::avg_pool2d";
    auto dil = isMax ? intsArg(m, args, 4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{1});
    if (!a0 || !kernel || kernel->empty() || !pad || pad->empty() || !dil || dil->empty() || a0->sizes.size() != 4)
      return shapeError(op, "NCHW input, kernel, stride, padding");
    const std::vector<int64_t>& st = stride && !stride->empty() ? *stride : *kernel;
    std::vector<int64_t> s = a0->sizes;
    for (size_t k = 0; k < 2; ++k) {
      auto at = [k](const std::vector<int64_t>& v) { return v[std::min(k, v.size() - 1)]; };
      s[2 + k] = (a0->sizes[2 + k] + 2 * at(*pad) - at(*dil) * (at(*kernel) - 1) - 1) / at(st) + 1;
    }
    TensorSpec out = like(*a0, s, {symbolOf(*a0, 0), symbolOf(*a0, 1), "", ""});
    if (name != "aten::max_pool2d_with_indices") return one(out);
    TensorSpec indices = out;
    indices.dtype = ScalarType::Long;
    return std::vector<TensorSpec>{out, indices};
  }

  /// constant_pad_nd: pad lists (before, after) pairs from the last dimension inwards.
  Specs constantPad() const {
    auto pad = intsArg(m, args, 1);
    if (!a0 || !pad || pad->size() % 2 != 0 || pad->size() / 2 > a0->sizes.size()) return shapeError(op, "an input and pairs of pads");
    std::vector<int64_t> s = a0->sizes;
    std::vector<std::string> sy(a0->symbols);
    sy.resize(s.size());
    for (size_t k = 0; k < pad->size() / 2; ++k) {
      const size_t d = s.size() - 1 - k;
      s[d] += (*pad)[2 * k] + (*pad)[2 * k + 1];
      sy[d].clear();
    }
    return one(like(*a0, s, sy));
  }

  /// upsample_bilinear2d / upsample_nearest2d with an output size: N and C kept, H and W given.
  Specs upsample2d() const {
    auto size = intsArg(m, args, 1);
    if (!a0 || a0->sizes.size() != 4 || !size || size->size() != 2) return shapeError(op, "an NCHW input and an output size");
    return one(like(*a0, {a0->sizes[0], a0->sizes[1], (*size)[0], (*size)[1]}, {symbolOf(*a0, 0), symbolOf(*a0, 1), "", ""}));
  }

  /// _native_batch_norm_legit_no_training: the input's shape and two empty statistics.
  Specs batchNormNoTraining() const {
    if (!a0) return shapeError(op, "an input tensor");
    return std::vector<TensorSpec>{like(*a0, a0->sizes, a0->symbols), like(*a0, {0}), like(*a0, {0})};
  }

  /// Comparisons and logical_not: the broadcast shape, bool.
  Specs predicate() const {
    auto r = name == "aten::logical_not" ? sameShape() : broadcastBinary();
    if (r) r.value()[0].dtype = ScalarType::Bool;
    return r;
  }

  /// any.dim / all.dim (bool) and argmax / argmin (int64): one dimension reduced (kept as 1 with
  /// keepdim; argmax without a dim reduces all).
  Specs reduceOneDim() const {
    if (!a0) return shapeError(op, "an input tensor");
    const bool index = name == "aten::argmax" || name == "aten::argmin";
    auto dim = intArg(m, args, 1);
    bool keep = intArg(m, args, 2).value_or(0) != 0;
    if (index && !dim) {  // argmax without a dim: over all elements
      TensorSpec r = like(*a0, keep ? std::vector<int64_t>(a0->sizes.size(), 1) : std::vector<int64_t>{});
      r.dtype = ScalarType::Long;
      return one(r);
    }
    int64_t d = wrapDim(dim.value_or(0), a0->sizes.size());
    std::vector<int64_t> s;
    std::vector<std::string> sy;
    for (size_t k = 0; k < a0->sizes.size(); ++k) {
      if (static_cast<int64_t>(k) != d) {
        s.push_back(a0->sizes[k]);
        sy.push_back(symbolOf(*a0, k));
      } else if (keep) {
        s.push_back(1);
        sy.push_back("");
      }
    }
    TensorSpec r = like(*a0, s, sy);
    r.dtype = index ? ScalarType::Long : ScalarType::Bool;
    return one(r);
  }

  /// full_like: the input's shape, the dtype argument's or the input's dtype.
  Specs fullLike() const {
    if (!a0) return shapeError(op, "an input tensor");
    TensorSpec r = like(*a0, a0->sizes, a0->symbols);
    if (auto dt = intArg(m, args, 2)) r.dtype = static_cast<ScalarType>(*dt);
    return one(r);
  }

  /// linear: the input's sizes but its last, then the weight's rows.
  Specs linear() const {
    const TensorSpec* w = tensorArg(m, args, 1);
    if (!a0 || !w || a0->sizes.empty() || w->sizes.size() > 2) return shapeError(op, "an input and a 1-d or 2-d weight");
    std::vector<int64_t> s(a0->sizes.begin(), a0->sizes.end() - 1);
    std::vector<std::string> sy(a0->symbols.begin(), a0->symbols.begin() + std::min(a0->symbols.size(), s.size()));
    if (w->sizes.size() == 2) s.push_back(w->sizes[0]);
    sy.resize(s.size());
    return one(like(*a0, s, sy));
  }

  /// _to_copy: the input's shape, in the dtype argument's type when one is given.
  Specs toCopy() const {
    if (!a0) return shapeError(op, "an input tensor");
    TensorSpec r = like(*a0, a0->sizes, a0->symbols);
    if (auto dt = intArg(m, args, 1)) r.dtype = static_cast<ScalarType>(*dt);
    return one(r);
  }

  /// repeat: the input's sizes (padded with leading 1s) times the repeats.
  Specs repeat() const {
    auto repeats = intsArg(m, args, 1);
    if (!a0 || !repeats || repeats->size() < a0->sizes.size() || !a0->symbols.empty())
      return shapeError(op, "an input with fixed sizes and at least as many repeats as dimensions");
    std::vector<int64_t> s(repeats->size() - a0->sizes.size(), 1);
    s.insert(s.end(), a0->sizes.begin(), a0->sizes.end());
    for (size_t d = 0; d < s.size(); ++d) s[d] *= (*repeats)[d];
    return one(like(*a0, s));
  }

  /// arange.start_step(start, end, step, dtype): ceil((end - start) / step)
  /// elements; int64 when every bound is an integer and no dtype is given.
  Specs arange() const {
    auto number = [&](size_t i) -> std::optional<double> {
      if (auto v = intArg(m, args, i)) return static_cast<double>(*v);
      if (i < args.size() && args[i] >= 0)
        if (auto* d = std::get_if<double>(&m.values[args[i]].payload)) return *d;
      return std::nullopt;
    };
    auto start = number(0), end = number(1), step = number(2);
    if (!start || !end || !step || *step == 0) return shapeError(op, "fixed start, end and a non-zero step");
    const double count = std::ceil((*end - *start) / *step);
    TensorSpec proto;
    bool integral = intArg(m, args, 0) && intArg(m, args, 1) && intArg(m, args, 2);
    proto.dtype = integral ? ScalarType::Long : ScalarType::Float;
    if (auto dt = intArg(m, args, 3)) proto.dtype = static_cast<ScalarType>(*dt);
    return one(like(proto, {static_cast<int64_t>(std::max(count, 0.0))}));
  }

  /// scalar_tensor: 0-d, of the dtype argument (float by default).
  Specs scalarTensor() const {
    TensorSpec proto;
    proto.dtype = static_cast<ScalarType>(intArg(m, args, 1).value_or(static_cast<int>(ScalarType::Float)));
    return one(like(proto, {}));
  }

  /// quantize/dequantize_per_tensor: the input's shape in the target dtype.
  Specs quantizePerTensor() const {
    if (!a0) return shapeError(op, "an input tensor");
    TensorSpec r = like(*a0, a0->sizes, a0->symbols);
    if (name == "quantized_decomposed::quantize_per_tensor") r.dtype = static_cast<ScalarType>(intArg(m, args, 5).value_or(1));
    else r.dtype = ScalarType::Float;
    return one(r);
  }
};

/// Operator name -> the rule that infers its result specs.
const std::pair<std::string_view, Specs (ShapeCall::*)() const> kShapeRules[] = {
    {"aten::relu", &ShapeCall::sameShape}, {"aten::sigmoid", &ShapeCall::sameShape},
    {"aten::neg", &ShapeCall::sameShape}, {"aten::rsqrt", &ShapeCall::sameShape},
    {"aten::cos", &ShapeCall::sameShape}, {"aten::sin", &ShapeCall::sameShape},
    {"aten::hardtanh", &ShapeCall::sameShape}, {"aten::clone", &ShapeCall::sameShape},
    {"aten::hardswish", &ShapeCall::sameShape}, {"aten::hardsigmoid", &ShapeCall::sameShape},
    {"aten::alias", &ShapeCall::sameShape}, {"aten::exp", &ShapeCall::sameShape},
    {"aten::cumsum", &ShapeCall::sameShape},
    {"aten::tanh", &ShapeCall::sameShape}, {"aten::sqrt", &ShapeCall::sameShape},
    {"aten::_softmax", &ShapeCall::sameShape}, {"aten::_log_softmax", &ShapeCall::sameShape},
    {"aten::index_put", &ShapeCall::sameShape}, {"aten::abs", &ShapeCall::sameShape},
    {"aten::gelu", &ShapeCall::sameShape}, {"aten::log1p", &ShapeCall::sameShape},
    {"aten::log", &ShapeCall::sameShape}, {"aten::bernoulli", &ShapeCall::sameShape},
    {"aten::select_scatter", &ShapeCall::sameShape}, {"aten::slice_scatter", &ShapeCall::sameShape},
    {"aten::copy", &ShapeCall::sameShape}, {"aten::expm1", &ShapeCall::sameShape},
    {"aten::minimum", &ShapeCall::broadcastBinary}, {"aten::maximum", &ShapeCall::broadcastBinary},
    {"aten::remainder", &ShapeCall::broadcastBinary},
    {"aten::isnan", &ShapeCall::predicate}, {"aten::isinf", &ShapeCall::predicate},
    {"aten::add", &ShapeCall::broadcastBinary}, {"aten::sub", &ShapeCall::broadcastBinary},
    {"aten::mul", &ShapeCall::broadcastBinary}, {"aten::div", &ShapeCall::broadcastBinary},
    {"aten::pow", &ShapeCall::broadcastBinary}, {"aten::fmod", &ShapeCall::broadcastBinary},
    {"aten::where", &ShapeCall::where},
    {"aten::eq", &ShapeCall::predicate}, {"aten::ne", &ShapeCall::predicate}, {"aten::lt", &ShapeCall::predicate},
    {"aten::le", &ShapeCall::predicate}, {"aten::gt", &ShapeCall::predicate}, {"aten::ge", &ShapeCall::predicate},
    {"aten::logical_not", &ShapeCall::predicate},
    {"aten::any", &ShapeCall::reduceOneDim}, {"aten::all", &ShapeCall::reduceOneDim},
    {"aten::argmax", &ShapeCall::reduceOneDim}, {"aten::argmin", &ShapeCall::reduceOneDim},
    {"aten::constant_pad_nd", &ShapeCall::constantPad},
    {"aten::upsample_bilinear2d", &ShapeCall::upsample2d}, {"aten::upsample_nearest2d", &ShapeCall::upsample2d},
    {"aten::full_like", &ShapeCall::fullLike}, {"aten::scalar_tensor", &ShapeCall::scalarTensor},
    {"aten::arange", &ShapeCall::arange}, {"aten::repeat", &ShapeCall::repeat},
    {"aten::_to_copy", &ShapeCall::toCopy}, {"aten::linear", &ShapeCall::linear},
    {"aten::clamp", &ShapeCall::sameShape}, {"aten::bitwise_and", &ShapeCall::broadcastBinary},
    {"aten::addmm", &ShapeCall::matmul}, {"aten::mm", &ShapeCall::matmul}, {"aten::bmm", &ShapeCall::matmul},
    {"aten::permute", &ShapeCall::permute},
    {"aten::view", &ShapeCall::sizeList}, {"aten::reshape", &ShapeCall::sizeList}, {"aten::expand", &ShapeCall::sizeList},
    {"aten::contiguous", &ShapeCall::sameShape},
    {"aten::full", &ShapeCall::sizeList}, {"aten::empty", &ShapeCall::sizeList},
    {"aten::unsqueeze", &ShapeCall::dimensionEdit}, {"aten::squeeze", &ShapeCall::dimensionEdit},
    {"aten::select", &ShapeCall::dimensionEdit}, {"aten::slice", &ShapeCall::dimensionEdit},
    {"aten::index", &ShapeCall::index},
    {"aten::cat", &ShapeCall::concatenate},
    {"aten::mean", &ShapeCall::reduction}, {"aten::sum", &ShapeCall::reduction},
    {"aten::amax", &ShapeCall::reduction}, {"aten::var", &ShapeCall::reduction},
    {"aten::embedding", &ShapeCall::embedding},
    {"aten::convolution", &ShapeCall::convolution},
    {"aten::max_pool2d_with_indices", &ShapeCall::pool2d}, {"aten::max_pool2d", &ShapeCall::pool2d},
    {"aten::avg_pool2d", &ShapeCall::pool2d},
    {"aten::_native_batch_norm_legit_no_training", &ShapeCall::batchNormNoTraining},
    {"quantized_decomposed::quantize_per_tensor", &ShapeCall::quantizePerTensor},
    {"quantized_decomposed::dequantize_per_tensor", &ShapeCall::quantizePerTensor},
};

}  // namespace

Result<std::vector<TensorSpec>> inferResultSpecs(const Method& m, const std::string& name, const std::string& overload,
                                                 const std::vector<ValueId>& args) {
  ShapeCall call{m, name, overload, args};
  for (const auto& [op, rule] : kShapeRules)
    if (name == op) return (call.*rule)();
  // An in-place operator ("aten::add_") returns the tensor it writes.
  if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_' && call.a0) return call.sameShape();
  return shapeError(call.op, "no shape rule for this operator");
}

int32_t operatorIndexOf(Method& m, const OperatorRef& ref) {
  auto it = std::find_if(m.operators.begin(), m.operators.end(),
                         [&](const OperatorRef& o) { return o.name == ref.name && o.overload == ref.overload; });
  if (it != m.operators.end()) return static_cast<int32_t>(it - m.operators.begin());
  m.operators.push_back(ref);
  return static_cast<int32_t>(m.operators.size() - 1);
}

Result<Node> buildCall(Method& m, const std::string& target, std::vector<BuildArg> args,
                       const std::function<std::string(const std::string&)>& freshName,
                       const std::vector<TensorSpec>* specs) {
  const OperatorRef ref = operatorFromTarget(target);
  const OpSchema* schema = OpRegistry::builtin().find(ref.name, ref.overload);
  auto fail = [&](std::string what) -> Error {
    return Error{ErrorCode::Invalid, {}, std::nullopt, "building " + target, "a valid call", std::move(what)};
  };
  if (!schema) return fail("no schema for the operator");
  if (args.size() > schema->arguments.size()) return fail("more arguments than the schema has");
  Node n;
  n.target = "torch.ops." + schema->ns + "." + schema->name + "." + (schema->overload.empty() ? "default" : schema->overload);
  auto add = [&](Value v) {
    m.values.push_back(std::move(v));
    return static_cast<ValueId>(m.values.size() - 1);
  };
  for (size_t i = 0; i < schema->arguments.size(); ++i) {
    const SchemaArgument& sa = schema->arguments[i];
    ValueId id = kNoValue;
    if (i < args.size()) {
      const auto& v = args[i].v;
      if (auto* t = std::get_if<TensorRef>(&v)) id = t->id;
      else if (auto* x = std::get_if<int64_t>(&v)) id = sa.type.base == SchemaType::Base::Float ? add(Value{double(*x), {}}) : add(Value{*x, {}});
      else if (auto* d = std::get_if<double>(&v)) id = add(Value{*d, {}});
      else if (auto* b = std::get_if<bool>(&v)) id = add(Value{*b, {}});
      else if (auto* st = std::get_if<ScalarType>(&v)) id = add(Value{int64_t(static_cast<int>(*st)), {}});
      else if (auto* str = std::get_if<std::string>(&v)) id = add(Value{*str, {}});
      else if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
        IntList list;
        for (int64_t x : *l) list.items.push_back(add(Value{x, {}}));
        id = add(Value{std::move(list), {}});
      } else if (auto* sl = std::get_if<std::vector<SizeRef>>(&v)) {
        IntList list;
        for (const SizeRef& x : *sl) list.items.push_back(x.isSymbolic() ? x.symbolic : add(Value{x.value, {}}));
        id = add(Value{std::move(list), {}});
      } else if (auto* tl = std::get_if<std::vector<TensorRef>>(&v)) {
        std::vector<ValueId> ids;
        for (const TensorRef& r : *tl) ids.push_back(r.id);
        if (sa.type.optionalElements) id = add(Value{OptionalTensorList{std::move(ids)}, {}});
        else id = add(Value{TensorList{std::move(ids)}, {}});
      } else {
        id = add(Value{None{}, {}});
      }
    } else if (auto d = schemaDefault(m, sa)) {
      id = *d;
    } else {
      return fail("argument '" + sa.name + "' is missing and has no default");
    }
    n.args.push_back(id);
    n.argNames.push_back(sa.name);
  }
  std::vector<TensorSpec> results;
  if (specs) {
    results = *specs;
  } else {
    auto inferred = inferResultSpecs(m, ref.name, ref.overload, n.args);
    if (!inferred) return fail(inferred.error().what + ": " + inferred.error().found);
    results = std::move(inferred.value());
  }
  std::string base = schema->name;
  if (!base.empty() && base.back() == '_') base.pop_back();
  for (auto& spec : results) n.outputs.push_back(add(Value{std::move(spec), freshName(base)}));
  if (!n.outputs.empty()) n.name = m.values[n.outputs.front()].name;
  n.op = operatorIndexOf(m, ref);
  return n;
}

}  // namespace lstudio
