// Indexing kernels: advanced indexing (index.Tensor, index_put, boolean masks included),
// gather, scatter and index_select.
// Semantics after ExecuTorch's portable kernels (kernels/portable/cpu/).
#include <deque>
#include <optional>

#include "engine/run/KernelSupport.h"

namespace lstudio::run::kernels {

namespace {

/// Where advanced indexing (index.Tensor, index_put) reads or writes: the result's sizes and,
/// for each result element in logical order, the element offset in `self`.
struct IndexedElements {
  std::vector<int64_t> sizes;
  std::vector<uint64_t> offsets;
};

bool advancedIndex(KernelContext& c, const RunTensor& self, ValueId indexList, IndexedElements& g) {
  size_t r = self.sizes.size();
  std::vector<std::optional<RunTensor>> idx;  // per dimension of self
  std::deque<std::vector<int64_t>> coordinates;  // a boolean mask's coordinates, kept alive
  for (ValueId item : c.value(indexList).items) {
    if (item == kNoValue || c.isNone(item)) {
      idx.emplace_back();
      continue;
    }
    const RunTensor& t = c.tensor(item);
    if (t.dtype != ScalarType::Bool && t.dtype != ScalarType::Byte) {
      idx.emplace_back(t);
      continue;
    }
    // A mask covers as many dimensions as its rank: its nonzero coordinates index them.
    size_t k = t.sizes.size(), base = idx.size();
    if (base + k > r) return c.fail("a boolean index past the tensor's rank");
    for (size_t j = 0; j < k; ++j)
      if (t.sizes[j] != self.sizes[base + j]) return c.fail("a boolean index whose shape differs from the tensor's");
    std::vector<std::vector<int64_t>> coords(k);
    std::vector<int64_t> at(k, 0);
    Walker w(t.sizes, {&t});
    for (uint64_t e = 0; e < t.numel(); ++e, w.next()) {
      if (loadAs<int64_t>(t, w.offset(0)))
        for (size_t j = 0; j < k; ++j) coords[j].push_back(at[j]);
      nextIndex(at, t.sizes);
    }
    for (size_t j = 0; j < k; ++j) {
      coordinates.push_back(std::move(coords[j]));
      RunTensor ct;
      ct.dtype = ScalarType::Long;
      ct.sizes = {static_cast<int64_t>(coordinates.back().size())};
      ct.data = reinterpret_cast<uint8_t*>(coordinates.back().data());
      idx.emplace_back(ct);
    }
  }
  if (idx.size() > r) return c.fail("more indices than dimensions");
  idx.resize(r);
  std::vector<const RunTensor*> ts;
  std::vector<size_t> pos;
  for (size_t d = 0; d < r; ++d)
    if (idx[d]) ts.push_back(&*idx[d]), pos.push_back(d);
  std::vector<int64_t> bshape;
  if (!ts.empty() && !broadcastSizes(c, ts, bshape)) return false;
  bool adjacent = ts.empty() || pos.back() - pos.front() + 1 == pos.size();
  std::vector<int64_t> map;  // per result dim: a dim of self (>= 0) or broadcast dim -1 - j
  auto selfDims = [&](size_t from, size_t to) {
    for (size_t d = from; d < to; ++d)
      if (!idx[d]) g.sizes.push_back(self.sizes[d]), map.push_back(static_cast<int64_t>(d));
  };
  auto broadcastDims = [&] {
    for (size_t j = 0; j < bshape.size(); ++j) g.sizes.push_back(bshape[j]), map.push_back(-1 - static_cast<int64_t>(j));
  };
  if (ts.empty()) {
    selfDims(0, r);
  } else if (adjacent) {
    selfDims(0, pos.front());
    broadcastDims();
    selfDims(pos.back() + 1, r);
  } else {
    broadcastDims();
    selfDims(0, r);
  }
  // Each index tensor's strides aligned to the broadcast shape (0 where it broadcasts).
  std::vector<std::vector<int64_t>> aligned;
  for (const RunTensor* t : ts) {
    std::vector<int64_t> st(bshape.size(), 0), own = t->strides();
    size_t k = t->sizes.size();
    for (size_t d = 0; d < k; ++d) st[bshape.size() - k + d] = t->sizes[d] == 1 ? 0 : own[d];
    aligned.push_back(st);
  }
  std::vector<int64_t> selfStrides = self.strides(), at(g.sizes.size(), 0), b(bshape.size(), 0);
  uint64_t n = 1;
  for (int64_t s : g.sizes) n *= static_cast<uint64_t>(s);
  g.offsets.reserve(n);
  for (uint64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t k = 0; k < map.size(); ++k)
      if (map[k] >= 0) off += at[k] * selfStrides[map[k]];
      else b[-1 - map[k]] = at[k];
    for (size_t i = 0; i < ts.size(); ++i) {
      int64_t o = 0;
      for (size_t j = 0; j < b.size(); ++j) o += b[j] * aligned[i][j];
      int64_t v = loadAs<int64_t>(*ts[i], static_cast<uint64_t>(o)), size = self.sizes[pos[i]];
      if (v < 0) v += size;
      if (v < 0 || v >= size) return c.fail("index " + std::to_string(v) + " out of range for a dimension of size " + std::to_string(size));
      off += v * selfStrides[pos[i]];
    }
    g.offsets.push_back(static_cast<uint64_t>(off));
    nextIndex(at, g.sizes);
  }
  return true;
}

bool indexOut(KernelContext& c, const Args& a) {  // index.Tensor_out(self, indices, out)
  RunTensor &self = c.tensor(a[0]), &out = c.tensor(a[2]);
  IndexedElements g;
  if (!advancedIndex(c, self, a[1], g) || !c.resize(out, g.sizes)) return false;
  if (out.dtype != self.dtype) return c.fail("index output dtype differs from the input's");
  uint32_t es = elementSize(self.dtype);
  Walker wo(out.sizes, {&out});
  for (uint64_t e = 0; e < g.offsets.size(); ++e, wo.next())
    std::memcpy(out.data + wo.offset(0) * es, self.data + g.offsets[e] * es, es);
  return true;
}

bool indexPutOut(KernelContext& c, const Args& a) {  // index_put.out(self, indices, values, accumulate, out)
  RunTensor &self = c.tensor(a[0]), &values = c.tensor(a[2]), &out = c.tensor(a[4]);
  bool accumulate = c.integer(a[3]) != 0;
  if (!c.resize(out, self.sizes)) return false;
  copyLogical(self, out);
  IndexedElements g;
  if (!advancedIndex(c, out, a[1], g)) return false;
  RunTensor indexed;  // the indexed elements' shape: values must broadcast onto it
  indexed.sizes = g.sizes;
  std::vector<int64_t> sizes;
  if (!broadcastSizes(c, {&indexed, &values}, sizes) || sizes != g.sizes)
    return c.fail("index_put values do not broadcast to the indexed elements");
  Walker wv(g.sizes, {&values});
  bool integral = isIntegral(out.dtype) || out.dtype == ScalarType::Bool;
  for (uint64_t e = 0; e < g.offsets.size(); ++e, wv.next()) {
    if (integral) {
      int64_t v = loadAs<int64_t>(values, wv.offset(0));
      storeAs<int64_t>(out, g.offsets[e], accumulate ? loadAs<int64_t>(out, g.offsets[e]) + v : v);
    } else if (out.dtype == ScalarType::Double) {
      double v = loadAs<double>(values, wv.offset(0));
      storeAs<double>(out, g.offsets[e], accumulate ? loadAs<double>(out, g.offsets[e]) + v : v);
    } else {
      float v = loadAs<float>(values, wv.offset(0));
      storeAs<float>(out, g.offsets[e], accumulate ? loadAs<float>(out, g.offsets[e]) + v : v);
    }
  }
  return true;
}

enum class Gather { Gather, ScatterValue, ScatterSrc, ScatterAdd };

/// gather (self, dim, index, sparse_grad, out), scatter.value (self, dim, index, value, out),
/// scatter.src and scatter_add (self, dim, index, src, out): element `at` of index names the
/// position along dim; the other coordinates are `at`'s own (src is read at `at` as well).
bool gatherOrScatter(KernelContext& c, const Args& a, Gather mode) {
  RunTensor &self = c.tensor(a[0]), &index = c.tensor(a[2]), &out = c.tensor(a[4]);
  const bool scatter = mode != Gather::Gather, fromSrc = mode == Gather::ScatterSrc || mode == Gather::ScatterAdd;
  const RunTensor* src = fromSrc ? &c.tensor(a[3]) : nullptr;
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), self.sizes.size(), dim)) return false;
  if (!contiguousOperands(c, {&self, &index}) || index.sizes.size() != self.sizes.size())
    return c.fail("gather/scatter index rank differs from the input's");
  if (src && (!contiguousOperands(c, {src}) || src->sizes.size() != index.sizes.size()))
    return c.fail("scatter src rank differs from the index's");
  for (size_t d = 0; d < index.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) != dim && index.sizes[d] > self.sizes[d])
      return c.fail("gather/scatter index larger than the input outside dim");
    if (src && index.sizes[d] > src->sizes[d]) return c.fail("scatter index larger than src");
  }
  if (!c.resize(out, scatter ? self.sizes : index.sizes)) return false;
  if (scatter) copyLogical(self, out);
  std::vector<int64_t> st = self.strides(), at(index.sizes.size(), 0);
  std::vector<int64_t> srcSt = src ? src->strides() : std::vector<int64_t>{};
  double value = mode == Gather::ScatterValue ? c.scalar(a[3]) : 0;
  for (uint64_t e = 0; e < index.numel(); ++e) {
    int64_t v = loadAs<int64_t>(index, e), size = self.sizes[dim];
    if (v < 0) v += size;
    if (v < 0 || v >= size) return c.fail("index " + std::to_string(v) + " out of range");
    int64_t off = 0, srcOff = 0;
    for (size_t d = 0; d < at.size(); ++d) {
      off += (static_cast<int64_t>(d) == dim ? v : at[d]) * st[d];
      if (src) srcOff += at[d] * srcSt[d];
    }
    const uint64_t o = static_cast<uint64_t>(off), so = static_cast<uint64_t>(srcOff);
    switch (mode) {
      case Gather::Gather: copyElement(self, o, out, e); break;
      case Gather::ScatterValue: storeAs<double>(out, o, value); break;
      case Gather::ScatterSrc: copyElement(*src, so, out, o); break;
      case Gather::ScatterAdd:
        withComputeType(out.dtype, [&]<typename T>() {
          using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
          storeAs<U>(out, o, static_cast<U>(loadAs<U>(out, o) + loadAs<U>(*src, so)));
        });
        break;
    }
    nextIndex(at, index.sizes);
  }
  return true;
}

/// masked_scatter (self, mask, source, out): self, with the positions where the broadcast mask
/// is true taking source's elements in order.
bool maskedScatter(KernelContext& c, const Args& a) {
  RunTensor &self = c.tensor(a[0]), &mask = c.tensor(a[1]), &source = c.tensor(a[2]), &out = c.tensor(a[3]);
  if (self.dtype != source.dtype || self.dtype != out.dtype) return c.fail("masked_scatter between different dtypes");
  std::vector<int64_t> sizes;
  if (!broadcastSizes(c, {&self, &mask}, sizes) || !c.resize(out, sizes) || !contiguousOperands(c, {&source})) return false;
  Walker w(sizes, {&self, &mask, &out});
  uint64_t next = 0;
  for (uint64_t e = 0; e < out.numel(); ++e, w.next()) {
    if (loadAs<int64_t>(mask, w.offset(1)) == 0) {
      copyElement(self, w.offset(0), out, w.offset(2));
      continue;
    }
    if (next >= source.numel()) return c.fail("masked_scatter: the mask selects more elements than source has");
    copyElement(source, next++, out, w.offset(2));
  }
  return true;
}

bool indexSelectOut(KernelContext& c, const Args& a) {  // (self, dim, index, out)
  RunTensor &self = c.tensor(a[0]), &index = c.tensor(a[2]), &out = c.tensor(a[3]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), self.sizes.size(), dim)) return false;
  std::vector<int64_t> sizes = self.sizes;
  if (!sizes.empty()) sizes[dim] = static_cast<int64_t>(index.numel());
  if (!contiguousOperands(c, {&self}) || !c.resize(out, sizes)) return false;
  int64_t size = self.sizes.empty() ? 1 : self.sizes[dim], inner = 1, outer = 1;
  for (size_t d = 0; d < self.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= self.sizes[d];
    if (static_cast<int64_t>(d) > dim) inner *= self.sizes[d];
  }
  uint32_t es = elementSize(self.dtype);
  int64_t n = static_cast<int64_t>(index.numel());
  for (int64_t k = 0; k < n; ++k) {
    int64_t v = loadAs<int64_t>(index, static_cast<uint64_t>(k));
    if (v < 0) v += size;
    if (v < 0 || v >= size) return c.fail("index_select index " + std::to_string(v) + " out of range");
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out.data + static_cast<uint64_t>((o * n + k) * inner) * es,
                  self.data + static_cast<uint64_t>((o * size + v) * inner) * es, static_cast<size_t>(inner) * es);
  }
  return true;
}

}  // namespace

void addIndexingKernels(KernelTable& k) {
  k["aten::index.Tensor_out"] = indexOut;
  k["aten::gather.out"] = [](KernelContext& c, const Args& a) { return gatherOrScatter(c, a, Gather::Gather); };
  k["aten::scatter.value_out"] = [](KernelContext& c, const Args& a) { return gatherOrScatter(c, a, Gather::ScatterValue); };
  k["aten::scatter.src_out"] = [](KernelContext& c, const Args& a) { return gatherOrScatter(c, a, Gather::ScatterSrc); };
  k["aten::scatter_add.out"] = [](KernelContext& c, const Args& a) { return gatherOrScatter(c, a, Gather::ScatterAdd); };
  k["aten::index_select.out"] = indexSelectOut;
  k["aten::masked_scatter.out"] = maskedScatter;
  k["aten::index_put.out"] = indexPutOut;
  // index_put_ (self, indices, values, accumulate) -> self, as ReinplacePass leaves it.
  k["aten::index_put_"] = [](KernelContext& c, const Args& a) {
    if (!indexPutOut(c, {a[0], a[1], a[2], a[3], a[0]})) return false;
    if (a.size() > 4 && a[4] != a[0]) c.value(a[4]).t = c.tensor(a[0]);
    return true;
  };
}

}  // namespace lstudio::run::kernels
