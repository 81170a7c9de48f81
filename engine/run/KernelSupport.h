// What the interpreter's kernels share: element walks with broadcasting, the compute type of
// a dtype, logical copies, reductions, argument checks. Private to engine/run/ (the kernels
// are registered in Kernels.cpp; each family lives in its own *Kernels.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/run/Kernels.h"

namespace lstudio::run::kernels {

/// The operator table each family adds its kernels to.
using KernelTable = std::map<std::string, Kernel>;
void addElementwiseKernels(KernelTable& k);
void addShapeKernels(KernelTable& k);
void addReductionKernels(KernelTable& k);
void addNeuralNetKernels(KernelTable& k);
void addImageKernels(KernelTable& k);
void addIndexingKernels(KernelTable& k);

using Args = std::vector<ValueId>;

inline bool isFloating(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Half || t == ScalarType::BFloat16;
}

inline bool isIntegral(ScalarType t) { return !isFloating(t) && t != ScalarType::Bool; }

inline int64_t wrapDim(int64_t d, size_t rank) { return d < 0 ? d + static_cast<int64_t>(std::max<size_t>(rank, 1)) : d; }

/// `d` wrapped as a dimension of a tensor of rank `rank` (a 0-d tensor has dim 0); false,
/// with the message set, when it is out of range.
inline bool dimOf(KernelContext& c, int64_t d, size_t rank, int64_t& dim) {
  dim = wrapDim(d, rank);
  if (dim < 0 || dim >= static_cast<int64_t>(std::max<size_t>(rank, 1)))
    return c.fail("dim " + std::to_string(d) + " out of range for a tensor of rank " + std::to_string(rank));
  return true;
}

/// Walks the elements of an output shape in logical (row-major) order, keeping each
/// operand's element offset; operands of smaller rank or size 1 broadcast.
class Walker {
 public:
  Walker(const std::vector<int64_t>& outSizes, const std::vector<const RunTensor*>& operands) : sizes_(outSizes) {
    size_t r = sizes_.size();
    idx_.assign(r, 0);
    for (const RunTensor* t : operands) {
      std::vector<int64_t> st(r, 0);
      std::vector<int64_t> ts = t->strides();
      size_t k = t->sizes.size();
      for (size_t d = 0; d < k && d < r; ++d) {
        size_t od = r - k + d;
        st[od] = t->sizes[d] == 1 ? 0 : ts[d];
      }
      strides_.push_back(st);
      off_.push_back(0);
    }
  }
  uint64_t offset(size_t operand) const { return static_cast<uint64_t>(off_[operand]); }
  void next() {
    for (size_t d = sizes_.size(); d-- > 0;) {
      ++idx_[d];
      for (size_t o = 0; o < off_.size(); ++o) off_[o] += strides_[o][d];
      if (idx_[d] < sizes_[d]) return;
      for (size_t o = 0; o < off_.size(); ++o) off_[o] -= strides_[o][d] * sizes_[d];
      idx_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> sizes_, idx_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> off_;
};

/// Steps a multi-index through `sizes` in logical (row-major) order, the last dimension fastest.
inline void nextIndex(std::vector<int64_t>& at, const std::vector<int64_t>& sizes) {
  for (size_t d = at.size(); d-- > 0;) {
    if (++at[d] < sizes[d]) return;
    at[d] = 0;
  }
}

/// The sizes of a 2-D pooling or resampling result: the input's leading dimensions, then OH, OW.
inline std::vector<int64_t> pooledSizes(const std::vector<int64_t>& in, int64_t oh, int64_t ow) {
  std::vector<int64_t> sizes(in.begin(), in.end() - 2);
  sizes.push_back(oh);
  sizes.push_back(ow);
  return sizes;
}

inline bool broadcastSizes(KernelContext& c, const std::vector<const RunTensor*>& ts, std::vector<int64_t>& out) {
  size_t r = 0;
  for (auto* t : ts) r = std::max(r, t->sizes.size());
  out.assign(r, 1);
  for (auto* t : ts) {
    size_t k = t->sizes.size();
    for (size_t d = 0; d < k; ++d) {
      int64_t s = t->sizes[d];
      int64_t& o = out[r - k + d];
      if (s == o || s == 1) continue;
      if (o == 1) o = s;
      else return c.fail("shapes do not broadcast");
    }
  }
  return true;
}

/// Elementwise over broadcast operands into `out`, computed in T (float for float32 and
/// narrower floats, double for float64, int64 for integers, as the portable kernels do).
template <typename T, typename F>
void elementwise(RunTensor& out, const std::vector<const RunTensor*>& in, F f) {
  std::vector<const RunTensor*> all = in;
  all.push_back(&out);
  Walker w(out.sizes, all);
  uint64_t n = out.numel();
  std::vector<T> vals(in.size());
  for (uint64_t i = 0; i < n; ++i, w.next()) {
    for (size_t k = 0; k < in.size(); ++k) vals[k] = loadAs<T>(*in[k], w.offset(k));
    storeAs<T>(out, w.offset(in.size()), f(vals));
  }
}

/// Runs `body.template operator()<T>()` with T the compute type for dtype `t`.
template <typename B>
void withComputeType(ScalarType t, B&& body) {
  if (t == ScalarType::Double) body.template operator()<double>();
  else if (isFloating(t)) body.template operator()<float>();
  else if (t == ScalarType::Bool) body.template operator()<bool>();
  else body.template operator()<int64_t>();
}

/// Element i of `from` into element j of `to`: its bytes when the dtypes agree (exact and
/// cheap), else converted as copyLogical converts (integers through int64, floats through double).
inline void copyElement(const RunTensor& from, uint64_t i, RunTensor& to, uint64_t j) {
  if (from.dtype == to.dtype) {
    uint64_t size = elementSize(from.dtype);
    std::memcpy(to.data + j * size, from.data + i * size, size);
  } else if (!isFloating(from.dtype)) {
    storeAs<int64_t>(to, j, loadAs<int64_t>(from, i));
  } else {
    storeAs<double>(to, j, loadAs<double>(from, i));
  }
}

/// Copies `in` into `out` (same element count; a reshape when the shapes differ), each
/// walked in its own logical order, converting dtype and dim order.
inline void copyLogical(const RunTensor& in, RunTensor& out) {
  if (in.dtype == out.dtype && in.contiguous() && out.contiguous()) {
    if (in.nbytes() && in.data != out.data) std::memmove(out.data, in.data, in.nbytes());
    return;
  }
  Walker wi(in.sizes, {&in});
  Walker wo(out.sizes, {&out});
  uint64_t n = out.numel();
  // Integers and bools move through int64 (exact); floats through double, so a float becomes
  // an integer of the output's own width directly (out-of-range values as the runtime has them).
  if (!isFloating(in.dtype)) {
    for (uint64_t k = 0; k < n; ++k, wi.next(), wo.next())
      storeAs<int64_t>(out, wo.offset(0), loadAs<int64_t>(in, wi.offset(0)));
  } else {
    for (uint64_t k = 0; k < n; ++k, wi.next(), wo.next())
      storeAs<double>(out, wo.offset(0), loadAs<double>(in, wi.offset(0)));
  }
}

/// Copies the elements of `in` selected by per-dimension (start, step) and output sizes.
inline void strided(const RunTensor& in, RunTensor& out, const std::vector<int64_t>& start, const std::vector<int64_t>& step) {
  std::vector<int64_t> st = in.strides();
  std::vector<int64_t> idx(out.sizes.size(), 0);
  Walker wo(out.sizes, {&out});
  uint64_t n = out.numel();
  for (uint64_t k = 0; k < n; ++k, wo.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (start[d] + idx[d] * step[d]) * st[d];
    copyElement(in, static_cast<uint64_t>(off), out, wo.offset(0));
    nextIndex(idx, out.sizes);
  }
}

inline bool contiguousOperands(KernelContext& c, std::initializer_list<const RunTensor*> ts) {
  for (auto* t : ts)
    if (!t->contiguous()) return c.fail("a non-contiguous operand (dim order) is not supported here");
  return true;
}

/// Reduces `in` over `dims` (all when empty) into `out`, visiting each reduced element in
/// increasing index order; `finish` turns the accumulated value and count into the result.
template <typename T, typename Acc, typename F>
bool reduce(KernelContext& c, const RunTensor& in, std::vector<int64_t> dims, bool keepdim, RunTensor& out, T init,
            Acc acc, F finish) {
  size_t r = in.sizes.size();
  std::vector<bool> reduced(r, dims.empty());
  for (int64_t d : dims) {
    int64_t w;
    if (!dimOf(c, d, r, w)) return false;
    if (static_cast<size_t>(w) < r) reduced[static_cast<size_t>(w)] = true;
  }
  std::vector<int64_t> outSizes;
  for (size_t d = 0; d < r; ++d) {
    if (!reduced[d]) outSizes.push_back(in.sizes[d]);
    else if (keepdim) outSizes.push_back(1);
  }
  if (!c.resize(out, outSizes)) return false;
  uint64_t nOut = out.numel();
  std::vector<T> accs(nOut, init);
  std::vector<int64_t> outStride(r, 0);
  {
    int64_t s = 1;
    for (size_t d = r; d-- > 0;)
      if (!reduced[d]) {
        outStride[d] = s;
        s *= in.sizes[d];
      }
  }
  uint64_t count = 1;
  for (size_t d = 0; d < r; ++d)
    if (reduced[d]) count *= static_cast<uint64_t>(in.sizes[d]);
  // Iterate output positions outermost, reduced positions inner, so each accumulator sees
  // its elements in increasing index order.
  Walker w(in.sizes, {&in});
  std::vector<int64_t> idx(r, 0);
  uint64_t n = in.numel();
  for (uint64_t k = 0; k < n; ++k, w.next()) {
    int64_t o = 0;
    for (size_t d = 0; d < r; ++d) o += idx[d] * outStride[d];
    accs[static_cast<size_t>(o)] = acc(accs[static_cast<size_t>(o)], loadAs<T>(in, w.offset(0)));
    nextIndex(idx, in.sizes);
  }
  Walker wo(out.sizes, {&out});
  for (uint64_t i = 0; i < nOut; ++i, wo.next()) storeAs<T>(out, wo.offset(0), finish(accs[i], count));
  return true;
}

inline bool fillOut(KernelContext& c, RunTensor& out, const std::vector<int64_t>& sizes, double value) {
  if (!c.resize(out, sizes)) return false;
  uint64_t n = out.numel();
  if (isIntegral(out.dtype) || out.dtype == ScalarType::Bool)
    for (uint64_t i = 0; i < n; ++i) storeAs<int64_t>(out, i, static_cast<int64_t>(value));
  else
    for (uint64_t i = 0; i < n; ++i) storeAs<double>(out, i, value);
  return true;
}

/// x / y for integers without the undefined case: INT64_MIN / -1 wraps (callers rule out 0).
template <typename T>
T quotient(T x, T y) {
  return y == -1 ? static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x)) : x / y;
}

/// Division rounded toward minus infinity, as the portable kernels' floor_divide: integers
/// exactly (y != 0); floats as (x - fmod(x, y)) / y, less one when the remainder's sign
/// differs from y's, and a divisor of 0 giving an infinity with x's sign.
template <typename T>
T floorDivide(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (y == 0) return std::signbit(x) ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    T mod = std::fmod(x, y), q = (x - mod) / y;
    return mod != 0 && std::signbit(y) != std::signbit(mod) ? q - 1 : q;
  } else {
    T q = quotient(x, y);
    if ((x < 0) == (y < 0) || y == -1) return q;
    return x % y ? q - 1 : q;
  }
}

/// The output of a single-out kernel: the argument before the return (optional keyword
/// arguments in front of it may be absent from older programs).
inline ValueId singleOut(const Args& a) { return a[a.size() - 2]; }  // the interpreter checked the count

}  // namespace lstudio::run::kernels
