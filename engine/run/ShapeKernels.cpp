// Shape kernels: views, permutations and transposes copied, slices, selects, expand, squeeze
// and unsqueeze, cat, stack, split and unbind, tril, topk and sort, masked_fill, dim-order
// copies, copy and copy_, fills and constant padding.
// Semantics after ExecuTorch's portable kernels (kernels/portable/cpu/).
#include <cstring>
#include <limits>
#include <numeric>
#include <algorithm>

#include "engine/run/KernelSupport.h"

namespace lstudio::run::kernels {

namespace {

bool viewCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[2]);
  std::vector<int64_t> sizes = c.ints(a[1]);
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] == -1) infer = static_cast<int64_t>(d);
    else known *= sizes[d];
  if (infer >= 0) sizes[infer] = known ? static_cast<int64_t>(in.numel()) / known : 0;
  if (!c.resize(out, sizes)) return false;
  if (out.numel() != in.numel()) return c.fail("view_copy to a different element count");
  copyLogical(in, out);
  return true;
}

bool permuteInto(KernelContext& c, const RunTensor& in, const std::vector<int64_t>& dims, RunTensor& out) {
  if (dims.size() != in.sizes.size()) return c.fail("permute dims do not match the rank");
  std::vector<int64_t> sizes(dims.size());
  std::vector<int64_t> st = in.strides(), vst(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t s;
    if (!dimOf(c, dims[d], dims.size(), s)) return false;
    sizes[d] = in.sizes[s];
    vst[d] = st[s];
  }
  if (!c.resize(out, sizes)) return false;
  std::vector<int64_t> idx(sizes.size(), 0);
  uint64_t n = out.numel();
  if (in.dtype == out.dtype && out.contiguous() && in.data != out.data) {
    // Output in order; the source offset steps like an odometer (weights are transposed on
    // every forward of a linear layer, so this is hot).
    auto copyAll = [&]<size_t E>() {
      int64_t off = 0;
      for (uint64_t k = 0; k < n; ++k) {
        std::memcpy(out.data + k * E, in.data + static_cast<uint64_t>(off) * E, E);
        for (size_t d = sizes.size(); d-- > 0;) {
          if (++idx[d] < sizes[d]) {
            off += vst[d];
            break;
          }
          off -= vst[d] * (sizes[d] - 1);
          idx[d] = 0;
        }
      }
    };
    switch (elementSize(in.dtype)) {
      case 1: copyAll.template operator()<1>(); return true;
      case 2: copyAll.template operator()<2>(); return true;
      case 4: copyAll.template operator()<4>(); return true;
      case 8: copyAll.template operator()<8>(); return true;
      default: break;
    }
  }
  Walker wo(sizes, {&out});
  for (uint64_t k = 0; k < n; ++k, wo.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * vst[d];
    copyElement(in, static_cast<uint64_t>(off), out, wo.offset(0));
    nextIndex(idx, sizes);
  }
  return true;
}

bool permuteCopy(KernelContext& c, const Args& a) { return permuteInto(c, c.tensor(a[0]), c.ints(a[1]), c.tensor(a[2])); }

/// transpose_copy.int (self, dim0, dim1, out) and t_copy (self, out, rank <= 2): a permutation.
bool transposeCopy(KernelContext& c, const RunTensor& in, int64_t dim0, int64_t dim1, RunTensor& out) {
  std::vector<int64_t> dims(in.sizes.size());
  std::iota(dims.begin(), dims.end(), 0);
  int64_t d0, d1;
  if (!dimOf(c, dim0, dims.size(), d0) || !dimOf(c, dim1, dims.size(), d1)) return false;
  if (!dims.empty()) std::swap(dims[d0], dims[d1]);
  return permuteInto(c, in, dims, out);
}

/// A slice along a dimension of `size`: None start / end take the whole, negative ones count
/// from the end, and both are clamped into the dimension, as the portable kernels do.
struct SliceRange {
  int64_t start = 0, end = 0, step = 1;
  int64_t length() const { return (end - start + step - 1) / step; }
};
bool sliceRange(KernelContext& c, ValueId start, ValueId end, ValueId step, int64_t size, SliceRange& r) {
  r.start = c.isNone(start) ? 0 : c.integer(start);
  r.end = c.isNone(end) ? size : c.integer(end);
  r.step = c.integer(step);
  if (r.step <= 0) return c.fail("slice step must be positive");
  if (r.start < 0) r.start += size;
  if (r.end < 0) r.end += size;
  r.start = std::clamp<int64_t>(r.start, 0, size);
  r.end = std::clamp<int64_t>(r.end, r.start, size);
  return true;
}

bool sliceCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[5]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  if (in.sizes.empty()) return c.fail("slice of a 0-d tensor");
  SliceRange r;
  if (!sliceRange(c, a[2], a[3], a[4], in.sizes[dim], r)) return false;
  std::vector<int64_t> sizes = in.sizes;
  sizes[dim] = r.length();
  if (!c.resize(out, sizes)) return false;
  std::vector<int64_t> st(sizes.size(), 0), sp(sizes.size(), 1);
  st[dim] = r.start;
  sp[dim] = r.step;
  strided(in, out, st, sp);
  return true;
}

/// slice_scatter(self, src, dim, start, end, step): self with the slice replaced by src.
bool sliceScatter(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& src = c.tensor(a[1]);
  RunTensor& out = c.tensor(a[6]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[2]), in.sizes.size(), dim)) return false;
  if (in.sizes.empty()) return c.fail("slice_scatter into a 0-d tensor");
  if (in.dtype != src.dtype || in.dtype != out.dtype) return c.fail("slice_scatter between different dtypes");
  SliceRange r;
  if (!sliceRange(c, a[3], a[4], a[5], in.sizes[dim], r)) return false;
  std::vector<int64_t> slice = in.sizes;
  slice[dim] = r.length();
  if (src.sizes != slice) return c.fail("slice_scatter's src does not have the slice's sizes");
  if (!c.resize(out, in.sizes)) return false;
  copyLogical(in, out);
  std::vector<int64_t> st = out.strides();
  std::vector<int64_t> idx(src.sizes.size(), 0);
  Walker ws(src.sizes, {&src});
  for (uint64_t k = 0; k < src.numel(); ++k, ws.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (static_cast<int64_t>(d) == dim ? r.start + idx[d] * r.step : idx[d]) * st[d];
    copyElement(src, ws.offset(0), out, static_cast<uint64_t>(off));
    nextIndex(idx, src.sizes);
  }
  return true;
}

bool selectCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[3]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  int64_t index = c.integer(a[2]);
  if (in.sizes.empty()) return c.fail("select of a 0-d tensor");
  if (index < 0) index += in.sizes[dim];
  if (index < 0 || index >= in.sizes[dim]) return c.fail("select index out of range");
  std::vector<int64_t> sizes = in.sizes;
  sizes[dim] = 1;
  RunTensor tmp = out;
  std::vector<int64_t> outSizes = in.sizes;
  outSizes.erase(outSizes.begin() + dim);
  if (!c.resize(out, outSizes)) return false;
  tmp.sizes = sizes;
  tmp.dimOrder.clear();
  std::vector<int64_t> st(sizes.size(), 0), sp(sizes.size(), 1);
  st[dim] = index;
  strided(in, tmp, st, sp);
  return true;
}

bool expandCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[3]);
  std::vector<int64_t> sizes = c.ints(a[1]);
  size_t k = in.sizes.size();
  if (sizes.size() < k) return c.fail("expand to fewer dimensions");
  for (size_t d = 0; d < k; ++d) {
    int64_t& s = sizes[sizes.size() - k + d];
    if (s == -1) s = in.sizes[d];
    if (in.sizes[d] != 1 && in.sizes[d] != s) return c.fail("expand of a dimension that is not 1");
  }
  if (!c.resize(out, sizes)) return false;
  Walker w(sizes, {&in, &out});
  for (uint64_t e = 0, n = out.numel(); e < n; ++e, w.next()) copyElement(in, w.offset(0), out, w.offset(1));
  return true;
}

/// as_strided_copy (self, size, stride, storage_offset?, out): out's elements read from self's
/// storage at storage_offset + sum(index * stride), self in the default dim order (the
/// runtime's kernel checks that too). Reads outside self's elements are refused.
bool asStridedCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[4]);
  const std::vector<int64_t> sizes = c.ints(a[1]), strides = c.ints(a[2]);
  const int64_t offset = c.isNone(a[3]) ? 0 : c.integer(a[3]);
  if (sizes.size() != strides.size()) return c.fail("as_strided_copy: size and stride differ in length");
  if (!in.contiguous()) return c.fail("as_strided_copy of a tensor not in the default dim order");
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) return c.fail("as_strided_copy: a negative size or stride");
    if (sizes[d] == 0) last = -1;
    if (last >= 0) last += (sizes[d] - 1) * strides[d];
  }
  if (offset < 0 || (last >= 0 && static_cast<uint64_t>(last) >= in.numel()))
    return c.fail("as_strided_copy reads past the end of its input");
  if (!c.resize(out, sizes)) return false;
  Walker w(sizes, {&out});
  std::vector<int64_t> index(sizes.size(), 0);
  for (uint64_t e = 0, n = out.numel(); e < n; ++e, w.next()) {
    int64_t from = offset;
    for (size_t d = 0; d < sizes.size(); ++d) from += index[d] * strides[d];
    copyElement(in, from, out, w.offset(0));
    for (size_t d = sizes.size(); d-- > 0;) {  // the next index, last dimension fastest
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return true;
}

bool unsqueezeCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[2]);
  int64_t dim = c.integer(a[1]);
  if (dim < 0) dim += static_cast<int64_t>(in.sizes.size()) + 1;
  if (dim < 0 || dim > static_cast<int64_t>(in.sizes.size())) return c.fail("unsqueeze dim out of range");
  std::vector<int64_t> sizes = in.sizes;
  sizes.insert(sizes.begin() + dim, 1);
  if (!c.resize(out, sizes)) return false;
  copyLogical(in, out);
  return true;
}

bool squeezeCopyDims(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[2]);
  std::vector<int64_t> dims = c.ints(a[1]);
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    bool drop = in.sizes[d] == 1 && std::any_of(dims.begin(), dims.end(), [&](int64_t x) {
                  return wrapDim(x, in.sizes.size()) == static_cast<int64_t>(d);
                });
    if (!drop) sizes.push_back(in.sizes[d]);
  }
  if (!c.resize(out, sizes)) return false;
  copyLogical(in, out);
  return true;
}

bool catOut(KernelContext& c, const Args& a) {
  const RunValue& list = c.value(a[0]);
  RunTensor& out = c.tensor(a[2]);
  std::vector<const RunTensor*> parts;
  for (ValueId t : list.items) {
    const RunTensor& x = c.tensor(t);
    if (x.sizes.size() == 1 && x.sizes[0] == 0) continue;  // legacy empty tensors are skipped
    parts.push_back(&x);
  }
  if (parts.empty()) return c.resize(out, {0});
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), parts[0]->sizes.size(), dim)) return false;
  if (parts[0]->sizes.empty()) return c.fail("cat of 0-d tensors");
  std::vector<int64_t> sizes = parts[0]->sizes;
  sizes[dim] = 0;
  for (auto* p : parts) {
    if (p->sizes.size() != sizes.size()) return c.fail("cat of tensors of different ranks");
    for (size_t d = 0; d < sizes.size(); ++d)
      if (static_cast<int64_t>(d) != dim && p->sizes[d] != parts[0]->sizes[d])
        return c.fail("cat of tensors whose other dimensions differ");
    sizes[dim] += p->sizes[dim];
  }
  if (!c.resize(out, sizes)) return false;
  int64_t at = 0;
  std::vector<int64_t> ost = out.strides();
  for (auto* p : parts) {
    Walker w(p->sizes, {p});
    std::vector<int64_t> idx(p->sizes.size(), 0);
    uint64_t n = p->numel();
    for (uint64_t k = 0; k < n; ++k, w.next()) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] + (static_cast<int64_t>(d) == dim ? at : 0)) * ost[d];
      copyElement(*p, w.offset(0), out, static_cast<uint64_t>(off));
      nextIndex(idx, p->sizes);
    }
    at += p->sizes[dim];
  }
  return true;
}

/// dim_order_ops::_to_dim_order_copy / _clone_dim_order: (self, non_blocking, dim_order, out).
bool dimOrderCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[3]);
  if (!c.resize(out, in.sizes)) return false;
  if (!c.isNone(a[2])) {
    std::vector<int64_t> order = c.ints(a[2]);
    if (order.size() != in.sizes.size()) return c.fail("dim_order does not match the rank");
    std::vector<bool> seen(order.size(), false);
    for (int64_t d : order) {
      if (d < 0 || d >= static_cast<int64_t>(order.size()) || seen[d]) return c.fail("dim_order is not a permutation");
      seen[d] = true;
    }
    out.dimOrder.assign(order.begin(), order.end());
  }
  copyLogical(in, out);
  return true;
}

bool copyInPlace(KernelContext& c, const Args& a) {  // aten::copy_(self, src, non_blocking) -> self
  RunTensor& self = c.tensor(a[0]);
  RunTensor& src = c.tensor(a[1]);
  std::vector<int64_t> sizes;
  if (!broadcastSizes(c, {&self, &src}, sizes) || sizes != self.sizes) return c.fail("copy_ source does not broadcast");
  elementwise<double>(self, {&src}, [](const std::vector<double>& v) { return v[0]; });
  if (a.size() > 3 && a[3] != a[0]) c.value(a[3]).t = self;
  return true;
}

bool splitWithSizesCopy(KernelContext& c, const Args& a) {  // (self, split_sizes, dim, out[])
  RunTensor& in = c.tensor(a[0]);
  std::vector<int64_t> splits = c.ints(a[1]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[2]), in.sizes.size(), dim)) return false;
  const RunValue& outs = c.value(a[3]);
  if (outs.items.size() != splits.size()) return c.fail("split_with_sizes: one output per split");
  if (in.sizes.empty()) return c.fail("split of a 0-d tensor");
  int64_t total = 0;
  for (int64_t x : splits) {
    if (x < 0 || x > in.sizes[dim]) return c.fail("split sizes outside the dimension");
    total += x;
  }
  if (total != in.sizes[dim]) return c.fail("split sizes do not add up to the dimension");
  int64_t at = 0;
  for (size_t k = 0; k < splits.size(); ++k) {
    RunTensor& o = c.tensor(outs.items[k]);
    std::vector<int64_t> sizes = in.sizes;
    sizes[dim] = splits[k];
    if (!c.resize(o, sizes)) return false;
    std::vector<int64_t> st(sizes.size(), 0), sp(sizes.size(), 1);
    st[dim] = at;
    strided(in, o, st, sp);
    at += splits[k];
  }
  return true;
}

bool constantPadNd(KernelContext& c, const Args& a) {  // (self, pad, value, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[3]);
  std::vector<int64_t> pad = c.ints(a[1]);
  double value = c.scalar(a[2]);
  size_t r = in.sizes.size();
  if (pad.size() % 2 || pad.size() / 2 > r) return c.fail("constant_pad_nd pad length");
  std::vector<int64_t> before(r, 0), sizes = in.sizes;
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    size_t d = r - 1 - k;
    before[d] = pad[2 * k];
    sizes[d] += pad[2 * k] + pad[2 * k + 1];
    if (sizes[d] < 0) return c.fail("constant_pad_nd removes more than the dimension holds");
  }
  if (!c.resize(out, sizes)) return false;
  std::vector<int64_t> at(r, 0), st = in.strides();
  Walker wo(sizes, {&out});
  for (uint64_t e = 0; e < out.numel(); ++e, wo.next()) {
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < r; ++d) {
      int64_t x = at[d] - before[d];
      inside = inside && x >= 0 && x < in.sizes[d];
      off += x * st[d];
    }
    if (inside) copyElement(in, static_cast<uint64_t>(off), out, wo.offset(0));
    else storeAs<double>(out, wo.offset(0), value);
    nextIndex(at, sizes);
  }
  return true;
}

/// flip (self, dims, out): the elements in reverse order along each of `dims`.
bool flipOut(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
  const size_t r = in.sizes.size();
  std::vector<bool> flipped(r, false);
  for (int64_t d : c.ints(a[1])) {
    int64_t dim;
    if (!dimOf(c, d, r, dim)) return false;
    if (flipped[dim]) return c.fail("flip names dimension " + std::to_string(dim) + " twice");
    flipped[dim] = true;
  }
  if (!c.resize(out, in.sizes)) return false;
  std::vector<int64_t> at(r, 0), st = in.strides();
  Walker wo(in.sizes, {&out});
  for (uint64_t e = 0; e < out.numel(); ++e, wo.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += (flipped[d] ? in.sizes[d] - 1 - at[d] : at[d]) * st[d];
    copyElement(in, static_cast<uint64_t>(off), out, wo.offset(0));
    nextIndex(at, in.sizes);
  }
  return true;
}

/// repeat (self, repeats, out): the input tiled `repeats` times along each dimension, the
/// input's dimensions aligned with the last ones of `repeats`.
bool repeatOut(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
  const std::vector<int64_t> repeats = c.ints(a[1]);
  const size_t r = repeats.size();
  if (r < in.sizes.size()) return c.fail("repeat has fewer repeats than the input has dimensions");
  std::vector<int64_t> inSizes(r - in.sizes.size(), 1), sizes(r);
  inSizes.insert(inSizes.end(), in.sizes.begin(), in.sizes.end());
  for (size_t d = 0; d < r; ++d) {
    if (repeats[d] < 0) return c.fail("repeat by a negative count");
    if (inSizes[d] && repeats[d] > std::numeric_limits<int64_t>::max() / inSizes[d]) return c.fail("repeat's result is too large");
    sizes[d] = inSizes[d] * repeats[d];
  }
  if (!c.resize(out, sizes)) return false;
  std::vector<int64_t> st(r - in.sizes.size(), 0), at(r, 0);
  for (int64_t s : in.strides()) st.push_back(s);
  Walker wo(sizes, {&out});
  for (uint64_t e = 0; e < out.numel(); ++e, wo.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += (at[d] % inSizes[d]) * st[d];
    copyElement(in, static_cast<uint64_t>(off), out, wo.offset(0));
    nextIndex(at, sizes);
  }
  return true;
}

/// diagonal_copy (self, offset, dim1, dim2, out): dim1 and dim2 removed, their diagonal
/// (shifted by offset: above the main one when positive) appended as the last dimension.
/// `in` split along `dim` into pieces of `sizes`, each copied into its output tensor.
bool splitInto(KernelContext& c, const RunTensor& in, const std::vector<int64_t>& sizes, int64_t dim,
               const std::vector<ValueId>& outs) {
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    RunTensor& o = c.tensor(outs[k]);
    std::vector<int64_t> piece = in.sizes;
    piece[dim] = sizes[k];
    if (!c.resize(o, piece)) return false;
    std::vector<int64_t> st(piece.size(), 0), sp(piece.size(), 1);
    st[dim] = at;
    strided(in, o, st, sp);
    at += sizes[k];
  }
  return true;
}

/// split_copy.Tensor (self, split_size, dim, out[]): pieces of split_size, the last one shorter.
bool splitCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  const int64_t size = c.integer(a[1]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[2]), in.sizes.size(), dim)) return false;
  if (in.sizes.empty()) return c.fail("split of a 0-d tensor");
  const std::vector<ValueId>& outs = c.value(a[3]).items;
  const int64_t length = in.sizes[dim];
  if (size < 0 || (size == 0 && length != 0)) return c.fail("split_size must be positive");
  const int64_t pieces = size == 0 ? 1 : std::max<int64_t>(1, (length + size - 1) / size);
  if (static_cast<int64_t>(outs.size()) != pieces)
    return c.fail("split_copy: " + std::to_string(pieces) + " pieces, " + std::to_string(outs.size()) + " outputs");
  std::vector<int64_t> sizes(static_cast<size_t>(pieces), size);
  sizes.back() = length - size * (pieces - 1);
  return splitInto(c, in, sizes, dim, outs);
}

/// unbind_copy.int (self, dim, out[]): every index along dim, the dimension dropped.
bool unbindCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  if (in.sizes.empty()) return c.fail("unbind of a 0-d tensor");
  const std::vector<ValueId>& outs = c.value(a[2]).items;
  if (static_cast<int64_t>(outs.size()) != in.sizes[dim]) return c.fail("unbind_copy: one output per index");
  std::vector<int64_t> piece = in.sizes;
  piece.erase(piece.begin() + dim);
  for (size_t k = 0; k < outs.size(); ++k) {
    RunTensor& o = c.tensor(outs[k]);
    if (!c.resize(o, piece)) return false;
    RunTensor withDim = o;
    withDim.sizes = in.sizes;
    withDim.sizes[dim] = 1;
    withDim.dimOrder.clear();
    std::vector<int64_t> st(in.sizes.size(), 0), sp(in.sizes.size(), 1);
    st[dim] = static_cast<int64_t>(k);
    strided(in, withDim, st, sp);
  }
  return true;
}

/// stack (tensors, dim, out): each tensor at its index along a new dimension.
bool stackOut(KernelContext& c, const Args& a) {
  const std::vector<ValueId>& parts = c.value(a[0]).items;
  RunTensor& out = c.tensor(a[2]);
  if (parts.empty()) return c.fail("stack of no tensors");
  const std::vector<int64_t> each = c.tensor(parts[0]).sizes;
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), each.size() + 1, dim)) return false;
  std::vector<int64_t> sizes = each;
  sizes.insert(sizes.begin() + dim, static_cast<int64_t>(parts.size()));
  if (!c.resize(out, sizes)) return false;
  std::vector<int64_t> ost = out.strides();
  for (size_t k = 0; k < parts.size(); ++k) {
    const RunTensor& p = c.tensor(parts[k]);
    if (p.sizes != each) return c.fail("stack of tensors of different sizes");
    Walker w(p.sizes, {&p});
    std::vector<int64_t> idx(p.sizes.size(), 0);
    for (uint64_t e = 0; e < p.numel(); ++e, w.next()) {
      int64_t off = static_cast<int64_t>(k) * ost[dim];
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * ost[static_cast<int64_t>(d) < dim ? d : d + 1];
      copyElement(p, w.offset(0), out, static_cast<uint64_t>(off));
      nextIndex(idx, p.sizes);
    }
  }
  return true;
}

/// tril (self, diagonal, out): the lower triangle of the last two dimensions, the rest zero.
bool trilOut(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
  const int64_t diagonal = c.integer(a[1]);
  if (in.sizes.size() < 2) return c.fail("tril of a tensor of rank below 2");
  if (!c.resize(out, in.sizes)) return false;
  copyLogical(in, out);
  std::vector<int64_t> idx(in.sizes.size(), 0);
  Walker w(out.sizes, {&out});
  const size_t r = idx.size();
  for (uint64_t e = 0; e < out.numel(); ++e, w.next()) {
    if (idx[r - 1] - idx[r - 2] > diagonal) storeAs<int64_t>(out, w.offset(0), 0);
    nextIndex(idx, out.sizes);
  }
  return true;
}

/// topk.values (self, k, dim, largest, sorted, values, indices) and sort.values (self, dim,
/// descending, values, indices): each row along dim ordered by value, NaN above every number,
/// equal values in index order.
bool orderAlong(KernelContext& c, const RunTensor& in, int64_t dimArg, int64_t k, bool largest, RunTensor& values,
                RunTensor& indices) {
  int64_t dim = 0;
  if (!in.sizes.empty() && !dimOf(c, dimArg, in.sizes.size(), dim)) return false;
  const int64_t size = in.sizes.empty() ? 1 : in.sizes[dim];
  if (k < 0 || k > size) return c.fail("topk: k = " + std::to_string(k) + " outside the dimension (" + std::to_string(size) + ")");
  std::vector<int64_t> sizes = in.sizes;
  if (!sizes.empty()) sizes[dim] = k;
  if (!contiguousOperands(c, {&in}) || !c.resize(values, sizes) || !c.resize(indices, sizes)) return false;
  if (!contiguousOperands(c, {&values, &indices})) return false;
  if (in.numel() == 0) return true;  // (a dimension's size alone may be past any buffer)
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= in.sizes[d];
    if (static_cast<int64_t>(d) > dim) inner *= in.sizes[d];
  }
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::vector<double> row(static_cast<size_t>(size));
  auto before = [&](int64_t x, int64_t y) {
    const double p = row[static_cast<size_t>(x)], q = row[static_cast<size_t>(y)];
    if (std::isnan(p) || std::isnan(q)) return largest ? std::isnan(p) && !std::isnan(q) : !std::isnan(p) && std::isnan(q);
    return largest ? p > q : p < q;
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<uint64_t>((o * size + j) * inner + i); };
      for (int64_t j = 0; j < size; ++j) row[static_cast<size_t>(j)] = loadAs<double>(in, at(j));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const uint64_t to = static_cast<uint64_t>((o * k + j) * inner + i);
        copyElement(in, at(order[static_cast<size_t>(j)]), values, to);
        storeAs<int64_t>(indices, to, order[static_cast<size_t>(j)]);
      }
    }
  return true;
}

/// masked_fill.Scalar (self, mask, value, out): value where the broadcast mask is true.
bool maskedFill(KernelContext& c, const Args& a) {
  RunTensor &self = c.tensor(a[0]), &mask = c.tensor(a[1]), &out = c.tensor(a[3]);
  const double value = c.scalar(a[2]);
  std::vector<int64_t> sizes;
  if (!broadcastSizes(c, {&self, &mask}, sizes) || !c.resize(out, sizes)) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    const U v = convertElement<U>(value);
    elementwise<U>(out, {&self, &mask}, [v](const std::vector<U>& x) { return x[1] != U(0) ? v : x[0]; });
  });
  return true;
}

bool diagonalCopy(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[4]);
  const size_t r = in.sizes.size();
  int64_t offset = c.integer(a[1]), d1, d2;
  if (r < 2) return c.fail("diagonal of a tensor of fewer than 2 dimensions");
  if (!dimOf(c, c.integer(a[2]), r, d1) || !dimOf(c, c.integer(a[3]), r, d2)) return false;
  if (d1 == d2) return c.fail("diagonal of one dimension with itself");
  offset = std::clamp(offset, -in.sizes[d1], in.sizes[d2]);  // beyond either edge: an empty diagonal
  const int64_t length =
      std::max<int64_t>(0, offset >= 0 ? std::min(in.sizes[d1], in.sizes[d2] - offset) : std::min(in.sizes[d1] + offset, in.sizes[d2]));
  std::vector<int64_t> sizes, st = in.strides(), keep;
  for (size_t d = 0; d < r; ++d)
    if (static_cast<int64_t>(d) != d1 && static_cast<int64_t>(d) != d2) keep.push_back(static_cast<int64_t>(d)), sizes.push_back(in.sizes[d]);
  sizes.push_back(length);
  if (!c.resize(out, sizes)) return false;
  const int64_t base = offset >= 0 ? offset * st[d2] : -offset * st[d1];
  std::vector<int64_t> at(sizes.size(), 0);
  Walker wo(sizes, {&out});
  for (uint64_t e = 0; e < out.numel(); ++e, wo.next()) {
    int64_t off = base + at.back() * (st[d1] + st[d2]);
    for (size_t k = 0; k < keep.size(); ++k) off += at[k] * st[keep[k]];
    copyElement(in, static_cast<uint64_t>(off), out, wo.offset(0));
    nextIndex(at, sizes);
  }
  return true;
}

}  // namespace

void addShapeKernels(KernelTable& k) {
  k["aten::flip.out"] = flipOut;
  k["aten::repeat.out"] = repeatOut;
  k["aten::diagonal_copy.out"] = diagonalCopy;
  k["aten::view_copy.out"] = viewCopy;
  k["aten::permute_copy.out"] = permuteCopy;
  k["aten::slice_copy.Tensor_out"] = sliceCopy;
  k["aten::slice_scatter.out"] = sliceScatter;
  k["aten::select_copy.int_out"] = selectCopy;
  k["aten::expand_copy.out"] = expandCopy;
  k["aten::as_strided_copy.out"] = asStridedCopy;
  k["aten::unsqueeze_copy.out"] = unsqueezeCopy;
  k["aten::squeeze_copy.dims_out"] = squeezeCopyDims;
  k["aten::cat.out"] = catOut;
  k["aten::split_with_sizes_copy.out"] = splitWithSizesCopy;
  k["aten::alias_copy.out"] = [](KernelContext& c, const Args& a) {
    RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[1]);
    if (!c.resize(out, in.sizes)) return false;
    copyLogical(in, out);
    return true;
  };
  // Host/device copies around a delegate on another device (PropagateDevicePass): the
  // interpreter holds every tensor in host memory, so both are plain copies.
  k["et_copy::_h2d_copy.out"] = k["aten::alias_copy.out"];
  k["et_copy::_d2h_copy.out"] = k["aten::alias_copy.out"];
  // clone (self, memory_format?, out) and _to_copy (self, non_blocking, memory_format?, out):
  // the values into out's dtype and dim order (_to_copy is what a program holds before
  // MemoryFormatOpsPass makes it _to_dim_order_copy).
  k["aten::clone.out"] = [](KernelContext& c, const Args& a) {
    RunTensor &in = c.tensor(a[0]), &out = c.tensor(singleOut(a));
    if (!c.resize(out, in.sizes)) return false;
    copyLogical(in, out);
    return true;
  };
  k["aten::_to_copy.out"] = k["aten::clone.out"];
  k["dim_order_ops::_to_dim_order_copy.out"] = dimOrderCopy;
  k["dim_order_ops::_clone_dim_order.out"] = dimOrderCopy;
  k["aten::copy_.default"] = copyInPlace;
  k["aten::copy_"] = copyInPlace;
  k["aten::constant_pad_nd.out"] = constantPadNd;
  k["aten::transpose_copy.int_out"] = [](KernelContext& c, const Args& a) {
    return transposeCopy(c, c.tensor(a[0]), c.integer(a[1]), c.integer(a[2]), c.tensor(a[3]));
  };
  k["aten::t_copy.out"] = [](KernelContext& c, const Args& a) {
    if (c.tensor(a[0]).sizes.size() > 2) return c.fail("t_copy of a tensor of rank above 2");
    return transposeCopy(c, c.tensor(a[0]), 0, -1, c.tensor(a[1]));
  };
  k["aten::split_copy.Tensor_out"] = splitCopy;
  k["aten::unbind_copy.int_out"] = unbindCopy;
  k["aten::stack.out"] = stackOut;
  k["aten::tril.out"] = trilOut;
  k["aten::masked_fill.Scalar_out"] = maskedFill;
  k["aten::topk.values"] = [](KernelContext& c, const Args& a) {  // `sorted` is honoured by always sorting
    return orderAlong(c, c.tensor(a[0]), c.integer(a[2]), c.integer(a[1]), c.integer(a[3]) != 0, c.tensor(a[5]), c.tensor(a[6]));
  };
  k["aten::sort.values"] = [](KernelContext& c, const Args& a) {
    const RunTensor& in = c.tensor(a[0]);
    int64_t dim = 0;
    if (!in.sizes.empty() && !dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
    const int64_t size = in.sizes.empty() ? 1 : in.sizes[dim];
    return orderAlong(c, in, c.integer(a[1]), size, c.integer(a[2]) != 0, c.tensor(a[3]), c.tensor(a[4]));
  };
  // The copies that only change what autograd sees, and copy (self, src, non_blocking, out):
  // src broadcast to self's sizes.
  k["aten::detach_copy.out"] = k["aten::alias_copy.out"];
  k["aten::lift_fresh_copy.out"] = k["aten::alias_copy.out"];
  k["aten::copy.out"] = [](KernelContext& c, const Args& a) {
    RunTensor &self = c.tensor(a[0]), &src = c.tensor(a[1]), &out = c.tensor(a[3]);
    std::vector<int64_t> sizes;
    if (!broadcastSizes(c, {&self, &src}, sizes) || sizes != self.sizes) return c.fail("copy: src does not broadcast to self");
    if (!c.resize(out, self.sizes)) return false;
    withComputeType(out.dtype, [&]<typename T>() {
      using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
      elementwise<U>(out, {&src}, [](const std::vector<U>& v) { return v[0]; });
    });
    return true;
  };
  // Fills: fill (self, value, out), zeros / ones (size, out), empty and _empty_dim_order (size,
  // ..., out), whose contents are unspecified and here zero.
  k["aten::fill.Scalar_out"] = [](KernelContext& c, const Args& a) {
    return fillOut(c, c.tensor(a[2]), c.tensor(a[0]).sizes, c.scalar(a[1]));
  };
  k["aten::fill.Tensor_out"] = [](KernelContext& c, const Args& a) {
    if (c.tensor(a[1]).numel() != 1 || !c.tensor(a[1]).sizes.empty()) return c.fail("fill with a tensor that is not 0-d");
    return fillOut(c, c.tensor(a[2]), c.tensor(a[0]).sizes, c.scalar(a[1]));
  };
  k["aten::zeros.out"] = [](KernelContext& c, const Args& a) { return fillOut(c, c.tensor(a[1]), c.ints(a[0]), 0); };
  k["aten::ones.out"] = [](KernelContext& c, const Args& a) { return fillOut(c, c.tensor(a[1]), c.ints(a[0]), 1); };
  k["aten::empty.out"] = [](KernelContext& c, const Args& a) { return fillOut(c, c.tensor(singleOut(a)), c.ints(a[0]), 0); };
  k["dim_order_ops::_empty_dim_order.out"] = k["aten::empty.out"];
}

}  // namespace lstudio::run::kernels
