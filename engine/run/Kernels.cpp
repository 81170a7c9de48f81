#include "engine/run/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <map>
#include <numeric>

namespace lstudio::run {

RunTensor& KernelContext::tensor(ValueId id) { return value(id).t; }

int64_t KernelContext::integer(ValueId id) {
  const RunValue& v = value(id);
  if (v.kind == ValueKind::Bool) return v.b ? 1 : 0;
  if (v.kind == ValueKind::Double) return static_cast<int64_t>(v.d);
  return v.i;
}

double KernelContext::scalar(ValueId id) {
  const RunValue& v = value(id);
  if (v.kind == ValueKind::Double) return v.d;
  if (v.kind == ValueKind::Bool) return v.b ? 1.0 : 0.0;
  if (v.kind == ValueKind::Tensor && v.t.numel() == 1) return loadAs<double>(v.t, 0);
  return static_cast<double>(v.i);
}

std::vector<int64_t> KernelContext::ints(ValueId id) {
  const RunValue& v = value(id);
  if (v.kind == ValueKind::Int) return {v.i};
  std::vector<int64_t> out;
  for (ValueId item : v.items) out.push_back(integer(item));
  return out;
}

bool KernelContext::resize(RunTensor& out, const std::vector<int64_t>& sizes) {
  uint64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return fail("a negative output size");
    if (s && n > UINT64_MAX / 16 / static_cast<uint64_t>(s)) return fail("an output size past 64 bits");
    n *= static_cast<uint64_t>(s);
  }
  if (!allowWork(n)) return false;
  if (n * elementSize(out.dtype) > out.capacity)
    return fail("the output needs " + std::to_string(n * elementSize(out.dtype)) + " bytes; its storage holds " +
                std::to_string(out.capacity));
  if (out.dimOrder.size() != sizes.size()) {
    out.dimOrder.resize(sizes.size());
    std::iota(out.dimOrder.begin(), out.dimOrder.end(), 0);
  }
  out.sizes = sizes;
  return true;
}

namespace {

using Args = std::vector<ValueId>;

bool isFloating(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Half || t == ScalarType::BFloat16;
}
bool isIntegral(ScalarType t) { return !isFloating(t) && t != ScalarType::Bool; }

int64_t wrapDim(int64_t d, size_t rank) { return d < 0 ? d + static_cast<int64_t>(std::max<size_t>(rank, 1)) : d; }

/// `d` wrapped as a dimension of a tensor of rank `rank` (a 0-d tensor has dim 0); false,
/// with the message set, when it is out of range.
bool dimOf(KernelContext& c, int64_t d, size_t rank, int64_t& dim) {
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

bool broadcastSizes(KernelContext& c, const std::vector<const RunTensor*>& ts, std::vector<int64_t>& out) {
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

// --- elementwise -------------------------------------------------------------------------

/// A binary op on two tensors (or a tensor and a scalar) with broadcasting.
template <typename F>
bool binary(KernelContext& c, ValueId a, ValueId b, ValueId out, F f, bool computeInInputs = false) {
  RunTensor& o = c.tensor(out);
  RunTensor scalarTensor;
  double scalarValue = 0;
  const RunTensor* ta = &c.tensor(a);
  const RunTensor* tb;
  if (c.value(b).kind == ValueKind::Tensor) {
    tb = &c.tensor(b);
  } else {
    scalarValue = c.scalar(b);
    scalarTensor.dtype = ScalarType::Double;
    scalarTensor.data = reinterpret_cast<uint8_t*>(&scalarValue);
    tb = &scalarTensor;
  }
  std::vector<int64_t> sizes;
  if (!broadcastSizes(c, {ta, tb}, sizes) || !c.resize(o, sizes)) return false;
  // Comparisons compute in the operands' type; arithmetic in the output's.
  ScalarType compute = o.dtype;
  if (computeInInputs) {
    bool fl = isFloating(ta->dtype) || (tb != &scalarTensor ? isFloating(tb->dtype) : scalarValue != std::floor(scalarValue));
    compute = fl ? (ta->dtype == ScalarType::Double ? ScalarType::Double : ScalarType::Float) : ScalarType::Long;
  }
  withComputeType(compute, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      elementwise<int64_t>(o, {ta, tb}, [&](const std::vector<int64_t>& v) { return static_cast<int64_t>(f(v[0], v[1])); });
    } else {
      elementwise<T>(o, {ta, tb}, [&](const std::vector<T>& v) { return static_cast<T>(f(v[0], v[1])); });
    }
  });
  return true;
}

template <typename F>
bool unary(KernelContext& c, ValueId in, ValueId out, F f) {
  RunTensor& o = c.tensor(out);
  const RunTensor& i = c.tensor(in);
  if (!c.resize(o, i.sizes)) return false;
  withComputeType(isFloating(o.dtype) ? o.dtype : i.dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      elementwise<int64_t>(o, {&i}, [&](const std::vector<int64_t>& v) { return static_cast<int64_t>(f(v[0])); });
    } else {
      elementwise<T>(o, {&i}, [&](const std::vector<T>& v) { return static_cast<T>(f(v[0])); });
    }
  });
  return true;
}

/// A unary op computed in floating point (float for float32 and integer inputs).
template <typename F>
bool floatUnary(KernelContext& c, ValueId in, ValueId out, F f) {
  RunTensor& o = c.tensor(out);
  const RunTensor& i = c.tensor(in);
  if (!c.resize(o, i.sizes)) return false;
  if (o.dtype == ScalarType::Double)
    elementwise<double>(o, {&i}, [&](const std::vector<double>& v) { return f(v[0]); });
  else
    elementwise<float>(o, {&i}, [&](const std::vector<float>& v) { return f(v[0]); });
  return true;
}

// --- copies and shapes ---------------------------------------------------------------------

/// Copies `in` into `out` (same element count; a reshape when the shapes differ), each
/// walked in its own logical order, converting dtype and dim order.
void copyLogical(const RunTensor& in, RunTensor& out) {
  if (in.dtype == out.dtype && in.contiguous() && out.contiguous()) {
    if (in.nbytes() && in.data != out.data) std::memmove(out.data, in.data, in.nbytes());
    return;
  }
  Walker wi(in.sizes, {&in});
  Walker wo(out.sizes, {&out});
  uint64_t n = out.numel();
  if (isIntegral(in.dtype) || isIntegral(out.dtype)) {
    for (uint64_t k = 0; k < n; ++k, wi.next(), wo.next())
      storeAs<int64_t>(out, wo.offset(0), loadAs<int64_t>(in, wi.offset(0)));
  } else {
    for (uint64_t k = 0; k < n; ++k, wi.next(), wo.next())
      storeAs<double>(out, wo.offset(0), loadAs<double>(in, wi.offset(0)));
  }
}

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

bool permuteCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[2]);
  std::vector<int64_t> dims = c.ints(a[1]);
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
  Walker wo(sizes, {&out});
  std::vector<int64_t> idx(sizes.size(), 0);
  uint64_t n = out.numel();
  for (uint64_t k = 0; k < n; ++k, wo.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * vst[d];
    storeAs<double>(out, wo.offset(0), loadAs<double>(in, static_cast<uint64_t>(off)));
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

/// Copies the elements of `in` selected by per-dimension (start, step) and output sizes.
void strided(const RunTensor& in, RunTensor& out, const std::vector<int64_t>& start, const std::vector<int64_t>& step) {
  std::vector<int64_t> st = in.strides();
  std::vector<int64_t> idx(out.sizes.size(), 0);
  Walker wo(out.sizes, {&out});
  uint64_t n = out.numel();
  for (uint64_t k = 0; k < n; ++k, wo.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (start[d] + idx[d] * step[d]) * st[d];
    storeAs<double>(out, wo.offset(0), loadAs<double>(in, static_cast<uint64_t>(off)));
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < out.sizes[d]) break;
      idx[d] = 0;
    }
  }
}

bool sliceCopy(KernelContext& c, const Args& a) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[5]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  if (in.sizes.empty()) return c.fail("slice of a 0-d tensor");
  int64_t size = in.sizes[dim];
  int64_t start = c.isNone(a[2]) ? 0 : c.integer(a[2]);
  int64_t end = c.isNone(a[3]) ? size : c.integer(a[3]);
  int64_t step = c.integer(a[4]);
  if (step <= 0) return c.fail("slice step must be positive");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  std::vector<int64_t> sizes = in.sizes;
  sizes[dim] = (end - start + step - 1) / step;
  if (!c.resize(out, sizes)) return false;
  std::vector<int64_t> st(sizes.size(), 0), sp(sizes.size(), 1);
  st[dim] = start;
  sp[dim] = step;
  strided(in, out, st, sp);
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
  elementwise<double>(out, {&in}, [](const std::vector<double>& v) { return v[0]; });
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
      storeAs<double>(out, static_cast<uint64_t>(off), loadAs<double>(*p, w.offset(0)));
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < p->sizes[d]) break;
        idx[d] = 0;
      }
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

// --- linear algebra ------------------------------------------------------------------------

/// out[b] = alpha * (A[b] @ B[b]) + beta * C, accumulated in order k = 0..K-1 as vec_matmul.
template <typename T>
void matmul(const RunTensor& A, const RunTensor& B, RunTensor& out, int64_t batch, int64_t m, int64_t k, int64_t n,
            const RunTensor* C, double beta, double alpha) {
  std::vector<int64_t> csizes;
  std::vector<int64_t> cst;
  if (C) {
    cst = C->strides();
    csizes = C->sizes;
  }
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += loadAs<T>(A, static_cast<uint64_t>((b * m + i) * k + p)) *
                 loadAs<T>(B, static_cast<uint64_t>((b * k + p) * n + j));
        T r = sum;
        if (C) {
          // self broadcasts to [m, n]
          int64_t ci = 0;
          size_t cr = csizes.size();
          if (cr == 2) ci = (csizes[0] == 1 ? 0 : i) * cst[0] + (csizes[1] == 1 ? 0 : j) * cst[1];
          else if (cr == 1) ci = csizes[0] == 1 ? 0 : j;
          T cv = loadAs<T>(*C, static_cast<uint64_t>(ci));
          r = static_cast<T>(alpha) * sum + static_cast<T>(beta) * cv;
        }
        storeAs<T>(out, static_cast<uint64_t>((b * m + i) * n + j), r);
      }
}

bool contiguousOperands(KernelContext& c, std::initializer_list<const RunTensor*> ts) {
  for (auto* t : ts)
    if (!t->contiguous()) return c.fail("a non-contiguous operand (dim order) is not supported here");
  return true;
}

bool mmOut(KernelContext& c, const Args& a) {
  RunTensor &A = c.tensor(a[0]), &B = c.tensor(a[1]), &out = c.tensor(a[2]);
  if (A.sizes.size() != 2 || B.sizes.size() != 2 || A.sizes[1] != B.sizes[0]) return c.fail("mm shapes");
  if (!contiguousOperands(c, {&A, &B}) || !c.resize(out, {A.sizes[0], B.sizes[1]})) return false;
  if (!c.allowWork(static_cast<uint64_t>(A.sizes[0]) * A.sizes[1] * B.sizes[1])) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) matmul<T>(A, B, out, 1, A.sizes[0], A.sizes[1], B.sizes[1], nullptr, 0, 1);
  });
  return true;
}

bool bmmOut(KernelContext& c, const Args& a) {
  RunTensor &A = c.tensor(a[0]), &B = c.tensor(a[1]), &out = c.tensor(a[2]);
  if (A.sizes.size() != 3 || B.sizes.size() != 3 || A.sizes[2] != B.sizes[1] || A.sizes[0] != B.sizes[0])
    return c.fail("bmm shapes");
  if (!contiguousOperands(c, {&A, &B}) || !c.resize(out, {A.sizes[0], A.sizes[1], B.sizes[2]})) return false;
  if (!c.allowWork(static_cast<uint64_t>(A.sizes[0]) * A.sizes[1] * A.sizes[2] * B.sizes[2])) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>)
      matmul<T>(A, B, out, A.sizes[0], A.sizes[1], A.sizes[2], B.sizes[2], nullptr, 0, 1);
  });
  return true;
}

bool addmmOut(KernelContext& c, const Args& a) {  // (self, mat1, mat2, beta, alpha, out)
  RunTensor &C = c.tensor(a[0]), &A = c.tensor(a[1]), &B = c.tensor(a[2]), &out = c.tensor(a[5]);
  if (A.sizes.size() != 2 || B.sizes.size() != 2 || A.sizes[1] != B.sizes[0]) return c.fail("addmm shapes");
  if (!contiguousOperands(c, {&A, &B}) || !c.resize(out, {A.sizes[0], B.sizes[1]})) return false;
  if (!c.allowWork(static_cast<uint64_t>(A.sizes[0]) * A.sizes[1] * B.sizes[1])) return false;
  if (C.sizes.size() > 2 || (C.sizes.size() == 2 && ((C.sizes[0] != 1 && C.sizes[0] != A.sizes[0]) ||
                                                        (C.sizes[1] != 1 && C.sizes[1] != B.sizes[1]))) ||
      (C.sizes.size() == 1 && C.sizes[0] != 1 && C.sizes[0] != B.sizes[1]))
    return c.fail("addmm self does not broadcast to the product");
  double beta = c.scalar(a[3]), alpha = c.scalar(a[4]);
  withComputeType(out.dtype, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>)
      matmul<T>(A, B, out, 1, A.sizes[0], A.sizes[1], B.sizes[1], &C, beta, alpha);
  });
  return true;
}

// --- reductions ----------------------------------------------------------------------------

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
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < in.sizes[d]) break;
      idx[d] = 0;
    }
  }
  Walker wo(out.sizes, {&out});
  for (uint64_t i = 0; i < nOut; ++i, wo.next()) storeAs<T>(out, wo.offset(0), finish(accs[i], count));
  return true;
}

bool sumOut(KernelContext& c, const Args& a) {  // (self, dim?, keepdim, dtype?, out)
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[4]);
  std::vector<int64_t> dims = c.isNone(a[1]) ? std::vector<int64_t>{} : c.ints(a[1]);
  bool ok = true;
  withComputeType(out.dtype, [&]<typename T>() {
    using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    ok = reduce<U>(c, in, dims, c.integer(a[2]) != 0, out, U(0), [](U x, U y) { return static_cast<U>(x + y); },
                   [](U x, uint64_t) { return x; });
  });
  return ok;
}

bool meanOut(KernelContext& c, const Args& a) {  // (self, dim?, keepdim, dtype?, out)
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[4]);
  std::vector<int64_t> dims = c.isNone(a[1]) ? std::vector<int64_t>{} : c.ints(a[1]);
  bool ok = true;
  auto run = [&]<typename T>() {
    ok = reduce<T>(c, in, dims, c.integer(a[2]) != 0, out, T(0), [](T x, T y) { return static_cast<T>(x + y); },
                   [](T x, uint64_t n) { return static_cast<T>(x / static_cast<T>(n)); });
  };
  if (out.dtype == ScalarType::Double) run.template operator()<double>();
  else run.template operator()<float>();
  return ok;
}

bool amaxOut(KernelContext& c, const Args& a) {  // (self, dim[], keepdim, out)
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[3]);
  std::vector<int64_t> dims = c.ints(a[1]);
  return reduce<double>(c, in, dims, c.integer(a[2]) != 0, out, -std::numeric_limits<double>::infinity(),
                        [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); },
                        [](double x, uint64_t) { return x; });
}

/// any.all_out (self, out), any.out (self, dim, keepdim, out), any.dims_out (self, dim[]?, keepdim, out).
bool anyOut(KernelContext& c, const Args& a, bool all) {
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(all ? a[1] : a[3]);
  std::vector<int64_t> dims = all || c.isNone(a[1]) ? std::vector<int64_t>{} : c.ints(a[1]);
  bool keepdim = !all && c.integer(a[2]) != 0;
  return reduce<double>(c, in, dims, keepdim, out, 0.0, [](double x, double y) { return (x != 0 || y != 0) ? 1.0 : 0.0; },
                        [](double x, uint64_t) { return x; });
}

/// softmax / log_softmax over `dim`: subtract the max, exponentiate, normalize (portable order).
bool softmax(KernelContext& c, const Args& a, bool log) {  // (self, dim, half_to_float, out)
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[3]);
  if (!contiguousOperands(c, {&in}) || !c.resize(out, in.sizes)) return false;
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  int64_t size = in.sizes.empty() ? 1 : in.sizes[dim];
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= in.sizes[d];
    if (static_cast<int64_t>(d) > dim) inner *= in.sizes[d];
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<uint64_t>((o * size + k) * inner + i); };
      float mx = loadAs<float>(in, at(0));
      for (int64_t k = 1; k < size; ++k) mx = std::max(mx, loadAs<float>(in, at(k)));
      float sum = 0;
      for (int64_t k = 0; k < size; ++k) sum += std::exp(loadAs<float>(in, at(k)) - mx);
      for (int64_t k = 0; k < size; ++k) {
        float x = loadAs<float>(in, at(k)) - mx;
        storeAs<float>(out, at(k), log ? x - std::log(sum) : std::exp(x) / sum);
      }
    }
  return true;
}

// --- neural network ------------------------------------------------------------------------

bool convolutionOut(KernelContext& c, const Args& a) {
  // (input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups, out)
  RunTensor &in = c.tensor(a[0]), &w = c.tensor(a[1]), &out = c.tensor(a[9]);
  if (c.integer(a[6])) return c.fail("transposed convolution is not supported yet");
  if (!contiguousOperands(c, {&in, &w})) return false;
  size_t spatial = in.sizes.size() - 2;
  if (spatial < 1 || spatial > 2 || w.sizes.size() != in.sizes.size()) return c.fail("convolution rank");
  auto pick = [&](ValueId v, size_t d, int64_t dflt) {
    std::vector<int64_t> xs = c.ints(v);
    return xs.empty() ? dflt : xs[xs.size() == 1 ? 0 : d];
  };
  int64_t N = in.sizes[0], C = in.sizes[1], OC = w.sizes[0], groups = c.integer(a[8]);
  int64_t H = spatial == 2 ? in.sizes[2] : 1, W = in.sizes[spatial == 2 ? 3 : 2];
  int64_t KH = spatial == 2 ? w.sizes[2] : 1, KW = w.sizes[spatial == 2 ? 3 : 2];
  int64_t sH = spatial == 2 ? pick(a[3], 0, 1) : 1, sW = pick(a[3], spatial - 1, 1);
  int64_t pH = spatial == 2 ? pick(a[4], 0, 0) : 0, pW = pick(a[4], spatial - 1, 0);
  int64_t dH = spatial == 2 ? pick(a[5], 0, 1) : 1, dW = pick(a[5], spatial - 1, 1);
  int64_t OH = (H + 2 * pH - dH * (KH - 1) - 1) / sH + 1, OW = (W + 2 * pW - dW * (KW - 1) - 1) / sW + 1;
  int64_t CG = C / groups, OCG = OC / groups;
  std::vector<int64_t> sizes = spatial == 2 ? std::vector<int64_t>{N, OC, OH, OW} : std::vector<int64_t>{N, OC, OW};
  if (groups <= 0 || C % groups || OC % groups || CG != w.sizes[1] || sH <= 0 || sW <= 0 || dH <= 0 || dW <= 0)
    return c.fail("convolution groups, channels, strides or dilations do not fit");
  if (!c.resize(out, sizes)) return false;
  if (!c.allowWork(static_cast<uint64_t>(N * OC * OH * OW) * static_cast<uint64_t>(CG * KH * KW))) return false;
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  if (bias && bias->numel() < static_cast<uint64_t>(OC)) return c.fail("convolution bias shorter than the channels");
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      int64_t g = oc / OCG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0;
          for (int64_t ic = 0; ic < CG; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * sH - pH + kh * dH;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * sW - pW + kw * dW;
                if (iw < 0 || iw >= W) continue;
                float x = loadAs<float>(in, static_cast<uint64_t>(((n * C + g * CG + ic) * H + ih) * W + iw));
                float k = loadAs<float>(w, static_cast<uint64_t>(((oc * CG + ic) * KH + kh) * KW + kw));
                acc += x * k;
              }
            }
          if (bias) acc += loadAs<float>(*bias, static_cast<uint64_t>(oc));
          storeAs<float>(out, static_cast<uint64_t>(((n * OC + oc) * OH + oh) * OW + ow), acc);
        }
    }
  return true;
}

bool batchNormNoTraining(KernelContext& c, const Args& a) {
  // (input, weight?, bias?, running_mean, running_var, momentum, eps, out, save_mean, save_invstd)
  RunTensor &in = c.tensor(a[0]), &mean = c.tensor(a[3]), &var = c.tensor(a[4]), &out = c.tensor(a[7]);
  double eps = c.scalar(a[6]);
  if (!contiguousOperands(c, {&in}) || !c.resize(out, in.sizes)) return false;
  for (ValueId extra : {a[8], a[9]})
    if (!c.resize(c.tensor(extra), {0})) return false;
  const RunTensor* weight = c.isNone(a[1]) ? nullptr : &c.tensor(a[1]);
  const RunTensor* bias = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  if (in.sizes.empty()) return c.fail("batch norm of a 0-d tensor");
  int64_t N = in.sizes[0], C = in.sizes.size() > 1 ? in.sizes[1] : 1, inner = 1;
  for (const RunTensor* t : std::initializer_list<const RunTensor*>{&mean, &var, weight, bias})
    if (t && t->numel() < static_cast<uint64_t>(C)) return c.fail("batch norm statistics shorter than the channels");
  for (size_t d = 2; d < in.sizes.size(); ++d) inner *= in.sizes[d];
  for (int64_t ch = 0; ch < C; ++ch) {
    float m = loadAs<float>(mean, ch), v = loadAs<float>(var, ch);
    float invstd = static_cast<float>(1.0 / std::sqrt(static_cast<double>(v) + eps));
    float wt = weight ? loadAs<float>(*weight, ch) : 1.0f, b = bias ? loadAs<float>(*bias, ch) : 0.0f;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        uint64_t at = static_cast<uint64_t>((n * C + ch) * inner + i);
        storeAs<float>(out, at, (loadAs<float>(in, at) - m) * invstd * wt + b);
      }
  }
  return true;
}

bool layerNorm(KernelContext& c, const Args& a) {
  // (input, normalized_shape, weight?, bias?, eps, out, mean_out, rstd_out)
  RunTensor& in = c.tensor(a[0]);
  RunTensor& out = c.tensor(a[5]);
  std::vector<int64_t> shape = c.ints(a[1]);
  double eps = c.scalar(a[4]);
  if (!contiguousOperands(c, {&in}) || !c.resize(out, in.sizes)) return false;
  if (shape.size() > in.sizes.size() ||
      !std::equal(shape.begin(), shape.end(), in.sizes.end() - static_cast<int64_t>(shape.size())))
    return c.fail("layer norm's normalized_shape is not the input's trailing shape");
  int64_t inner = 1;
  for (int64_t s : shape) inner *= s;
  int64_t outer = inner ? static_cast<int64_t>(in.numel()) / inner : 0;
  std::vector<int64_t> statSizes(in.sizes.begin(), in.sizes.end() - static_cast<int64_t>(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) statSizes.push_back(1);
  RunTensor &meanOut = c.tensor(a[6]), &rstdOut = c.tensor(a[7]);
  if (!c.resize(meanOut, statSizes) || !c.resize(rstdOut, statSizes)) return false;
  const RunTensor* weight = c.isNone(a[2]) ? nullptr : &c.tensor(a[2]);
  const RunTensor* bias = c.isNone(a[3]) ? nullptr : &c.tensor(a[3]);
  for (const RunTensor* t : {weight, bias})
    if (t && t->numel() < static_cast<uint64_t>(inner)) return c.fail("layer norm weight or bias shorter than the shape");
  for (int64_t o = 0; o < outer; ++o) {
    float sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      float x = loadAs<float>(in, static_cast<uint64_t>(o * inner + i));
      sum += x;
      sq += x * x;
    }
    float mean = sum / static_cast<float>(inner);
    float variance = sq / static_cast<float>(inner) - mean * mean;
    float stdev = std::sqrt(variance + static_cast<float>(eps));
    float rstd = static_cast<float>(1.0 / stdev);
    for (int64_t i = 0; i < inner; ++i) {
      uint64_t at = static_cast<uint64_t>(o * inner + i);
      float y = (loadAs<float>(in, at) - mean) / stdev;
      if (weight) y *= loadAs<float>(*weight, static_cast<uint64_t>(i));
      if (bias) y += loadAs<float>(*bias, static_cast<uint64_t>(i));
      storeAs<float>(out, at, y);
    }
    storeAs<float>(meanOut, static_cast<uint64_t>(o), mean);
    storeAs<float>(rstdOut, static_cast<uint64_t>(o), rstd);
  }
  return true;
}

bool embeddingOut(KernelContext& c, const Args& a) {  // (weight, indices, padding_idx, scale, sparse, out)
  RunTensor &w = c.tensor(a[0]), &idx = c.tensor(a[1]), &out = c.tensor(a[5]);
  if (w.sizes.size() != 2 || !contiguousOperands(c, {&w})) return c.fail("embedding weight must be 2-D");
  std::vector<int64_t> sizes = idx.sizes;
  sizes.push_back(w.sizes[1]);
  if (!c.resize(out, sizes)) return false;
  uint64_t n = idx.numel(), row = static_cast<uint64_t>(w.sizes[1]) * elementSize(w.dtype);
  if (w.dtype != out.dtype) return c.fail("embedding output dtype differs from the weight's");
  for (uint64_t i = 0; i < n; ++i) {
    int64_t r = loadAs<int64_t>(idx, i);
    if (r < 0 || r >= w.sizes[0]) return c.fail("embedding index " + std::to_string(r) + " out of range");
    std::memcpy(out.data + i * row, w.data + static_cast<uint64_t>(r) * row, row);
  }
  return true;
}

bool maxPool2dWithIndices(KernelContext& c, const Args& a) {
  // (self, kernel_size, stride, padding, dilation, ceil_mode, out, indices)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[6]), &indices = c.tensor(a[7]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() < 3) return c.fail("max_pool2d input rank");
  auto two = [&](ValueId v, int64_t dflt0) {
    std::vector<int64_t> xs = c.ints(v);
    if (xs.empty()) return std::pair<int64_t, int64_t>{dflt0, dflt0};
    return std::pair<int64_t, int64_t>{xs[0], xs.size() > 1 ? xs[1] : xs[0]};
  };
  auto [KH, KW] = two(a[1], 1);
  auto [sH, sW] = two(a[2], 0);
  if (c.ints(a[2]).empty()) sH = KH, sW = KW;
  auto [pH, pW] = two(a[3], 0);
  auto [dH, dW] = two(a[4], 1);
  bool ceil = c.integer(a[5]) != 0;
  size_t r = in.sizes.size();
  int64_t H = in.sizes[r - 2], W = in.sizes[r - 1];
  if (KH <= 0 || KW <= 0 || sH <= 0 || sW <= 0 || dH <= 0 || dW <= 0 || pH < 0 || pW < 0 || H <= 0 || W <= 0)
    return c.fail("max_pool2d kernel, stride, padding or dilation out of range");
  auto outLen = [&](int64_t L, int64_t k, int64_t s, int64_t p, int64_t d) {
    int64_t num = L + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int64_t o = num / s + 1;
    if (ceil && (o - 1) * s >= L + p) --o;
    return o;
  };
  int64_t OH = outLen(H, KH, sH, pH, dH), OW = outLen(W, KW, sW, pW, dW);
  std::vector<int64_t> sizes(in.sizes.begin(), in.sizes.end() - 2);
  sizes.push_back(OH);
  sizes.push_back(OW);
  if (!c.resize(out, sizes) || !c.resize(indices, sizes)) return false;
  int64_t planes = static_cast<int64_t>(in.numel()) / (H * W);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t bestAt = -1;
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            int64_t ih = oh * sH - pH + kh * dH, iw = ow * sW - pW + kw * dW;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            float x = loadAs<float>(in, static_cast<uint64_t>((p * H + ih) * W + iw));
            if (x > best || std::isnan(x) || bestAt < 0) {
              best = x;
              bestAt = ih * W + iw;
              if (std::isnan(x)) break;
            }
          }
        uint64_t at = static_cast<uint64_t>((p * OH + oh) * OW + ow);
        storeAs<float>(out, at, best);
        storeAs<int64_t>(indices, at, bestAt);
      }
  return true;
}

bool adaptiveAvgPool2d(KernelContext& c, const Args& a) {  // (self, output_size, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
  std::vector<int64_t> os = c.ints(a[1]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() < 3 || os.size() != 2) return c.fail("adaptive_avg_pool2d shapes");
  size_t r = in.sizes.size();
  int64_t H = in.sizes[r - 2], W = in.sizes[r - 1], OH = os[0], OW = os[1];
  if (OH <= 0 || OW <= 0) return c.fail("adaptive_avg_pool2d output size must be positive");
  std::vector<int64_t> sizes(in.sizes.begin(), in.sizes.end() - 2);
  sizes.push_back(OH);
  sizes.push_back(OW);
  if (!c.resize(out, sizes)) return false;
  int64_t planes = static_cast<int64_t>(in.numel()) / std::max<int64_t>(H * W, 1);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
        float sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += loadAs<float>(in, static_cast<uint64_t>((p * H + ih) * W + iw));
        storeAs<float>(out, static_cast<uint64_t>((p * OH + oh) * OW + ow),
                       sum / static_cast<float>((h1 - h0) * (w1 - w0)));
      }
  return true;
}

bool whereOut(KernelContext& c, const Args& a) {  // (condition, self, other, out)
  RunTensor &cond = c.tensor(a[0]), &x = c.tensor(a[1]), &y = c.tensor(a[2]), &out = c.tensor(a[3]);
  std::vector<int64_t> sizes;
  if (!broadcastSizes(c, {&cond, &x, &y}, sizes) || !c.resize(out, sizes)) return false;
  withComputeType(out.dtype, [&]<typename T>() {
    using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    elementwise<U>(out, {&cond, &x, &y}, [](const std::vector<U>& v) { return v[0] != U(0) ? v[1] : v[2]; });
  });
  return true;
}

bool fillOut(KernelContext& c, RunTensor& out, const std::vector<int64_t>& sizes, double value) {
  if (!c.resize(out, sizes)) return false;
  uint64_t n = out.numel();
  if (isIntegral(out.dtype) || out.dtype == ScalarType::Bool)
    for (uint64_t i = 0; i < n; ++i) storeAs<int64_t>(out, i, static_cast<int64_t>(value));
  else
    for (uint64_t i = 0; i < n; ++i) storeAs<double>(out, i, value);
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
      for (size_t j = k; j-- > 0;) {
        if (++at[j] < t.sizes[j]) break;
        at[j] = 0;
      }
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
    for (size_t k = at.size(); k-- > 0;) {
      if (++at[k] < g.sizes[k]) break;
      at[k] = 0;
    }
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

/// The output of a single-out kernel: the argument before the return (optional keyword
/// arguments in front of it may be absent from older programs).
ValueId singleOut(const Args& a) { return a[a.size() - 2]; }  // the interpreter checked the count

bool argmaxOut(KernelContext& c, const Args& a) {  // (self, dim?, keepdim, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[3]);
  bool all = c.isNone(a[1]) || c.tensor(a[0]).sizes.empty();
  int64_t dim = 0;
  if (!all && !dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  bool keepdim = c.integer(a[2]) != 0;
  std::vector<int64_t> sizes;
  if (!all) {
    for (size_t d = 0; d < in.sizes.size(); ++d)
      if (static_cast<int64_t>(d) != dim) sizes.push_back(in.sizes[d]);
      else if (keepdim) sizes.push_back(1);
  }
  if (all && keepdim) sizes.assign(in.sizes.size(), 1);
  if (!contiguousOperands(c, {&in}) || !c.resize(out, sizes)) return false;
  int64_t size = all ? static_cast<int64_t>(in.numel()) : in.sizes[dim], inner = 1, outer = 1;
  if (!all)
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      if (static_cast<int64_t>(d) < dim) outer *= in.sizes[d];
      if (static_cast<int64_t>(d) > dim) inner *= in.sizes[d];
    }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double best = 0;
      int64_t at = 0;
      for (int64_t k = 0; k < size; ++k) {
        double x = loadAs<double>(in, static_cast<uint64_t>((o * size + k) * inner + i));
        if (k == 0 || (!std::isnan(best) && (x > best || std::isnan(x)))) best = x, at = k;
      }
      storeAs<int64_t>(out, static_cast<uint64_t>(o * inner + i), at);
    }
  return true;
}

/// gather (self, dim, index, sparse_grad, out) and scatter.value (self, dim, index, value, out).
bool gatherOrScatter(KernelContext& c, const Args& a, bool scatter) {
  RunTensor &self = c.tensor(a[0]), &index = c.tensor(a[2]), &out = c.tensor(a[4]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), self.sizes.size(), dim)) return false;
  if (!contiguousOperands(c, {&self, &index}) || index.sizes.size() != self.sizes.size())
    return c.fail("gather/scatter index rank differs from the input's");
  for (size_t d = 0; d < index.sizes.size(); ++d)
    if (static_cast<int64_t>(d) != dim && index.sizes[d] > self.sizes[d])
      return c.fail("gather/scatter index larger than the input outside dim");
  if (!c.resize(out, scatter ? self.sizes : index.sizes)) return false;
  if (scatter) copyLogical(self, out);
  std::vector<int64_t> st = self.strides(), at(index.sizes.size(), 0);
  double value = scatter ? c.scalar(a[3]) : 0;
  for (uint64_t e = 0; e < index.numel(); ++e) {
    int64_t v = loadAs<int64_t>(index, e), size = self.sizes[dim];
    if (v < 0) v += size;
    if (v < 0 || v >= size) return c.fail("index " + std::to_string(v) + " out of range");
    int64_t off = 0;
    for (size_t d = 0; d < at.size(); ++d) off += (static_cast<int64_t>(d) == dim ? v : at[d]) * st[d];
    if (scatter) storeAs<double>(out, static_cast<uint64_t>(off), value);
    else storeAs<double>(out, e, loadAs<double>(self, static_cast<uint64_t>(off)));
    for (size_t d = at.size(); d-- > 0;) {
      if (++at[d] < index.sizes[d]) break;
      at[d] = 0;
    }
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

bool varOut(KernelContext& c, const Args& a) {  // var.correction_out(self, dim?, correction?, keepdim, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[4]);
  std::vector<int64_t> dims = c.isNone(a[1]) ? std::vector<int64_t>{} : c.ints(a[1]);
  double correction = c.isNone(a[2]) ? 1.0 : c.scalar(a[2]);
  bool keepdim = c.integer(a[3]) != 0;
  // Two passes as the portable kernel: the mean, then the squared deviations.
  RunTensor meanT;
  meanT.dtype = ScalarType::Double;
  std::vector<double> meanBuf(in.numel() + 1);
  meanT.data = reinterpret_cast<uint8_t*>(meanBuf.data());
  meanT.capacity = meanBuf.size() * sizeof(double);
  if (!reduce<double>(c, in, dims, true, meanT, 0.0, [](double x, double y) { return x + y; },
                      [](double x, uint64_t n) { return x / static_cast<double>(n); }))
    return false;
  RunTensor centered;
  centered.dtype = ScalarType::Double;
  centered.sizes = in.sizes;
  std::vector<double> cbuf(in.numel() + 1);
  centered.data = reinterpret_cast<uint8_t*>(cbuf.data());
  elementwise<double>(centered, {&in, &meanT}, [](const std::vector<double>& v) { return (v[0] - v[1]) * (v[0] - v[1]); });
  return reduce<double>(c, centered, dims, keepdim, out, 0.0, [](double x, double y) { return x + y; },
                        [correction](double x, uint64_t n) { return x / std::max(0.0, static_cast<double>(n) - correction); });
}

bool cumsumOut(KernelContext& c, const Args& a) {  // (self, dim, dtype?, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[3]);
  int64_t dim;
  if (!dimOf(c, c.integer(a[1]), in.sizes.size(), dim)) return false;
  if (!contiguousOperands(c, {&in}) || !c.resize(out, in.sizes)) return false;
  int64_t size = in.sizes.empty() ? 1 : in.sizes[dim], inner = 1, outer = 1;
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= in.sizes[d];
    if (static_cast<int64_t>(d) > dim) inner *= in.sizes[d];
  }
  withComputeType(out.dtype, [&]<typename T>() {
    using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        U acc = 0;
        for (int64_t k = 0; k < size; ++k) {
          uint64_t at = static_cast<uint64_t>((o * size + k) * inner + i);
          acc = static_cast<U>(acc + loadAs<U>(in, at));
          storeAs<U>(out, at, acc);
        }
      }
  });
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
    storeAs<double>(out, wo.offset(0), inside ? loadAs<double>(in, static_cast<uint64_t>(off)) : value);
    for (size_t d = r; d-- > 0;) {
      if (++at[d] < sizes[d]) break;
      at[d] = 0;
    }
  }
  return true;
}

bool avgPool2d(KernelContext& c, const Args& a) {
  // (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override?, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[7]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() < 3) return c.fail("avg_pool2d input rank");
  auto two = [&](ValueId v, int64_t d0) {
    std::vector<int64_t> xs = c.ints(v);
    if (xs.empty()) return std::pair<int64_t, int64_t>{d0, d0};
    return std::pair<int64_t, int64_t>{xs[0], xs.size() > 1 ? xs[1] : xs[0]};
  };
  auto [KH, KW] = two(a[1], 1);
  std::pair<int64_t, int64_t> stride = c.ints(a[2]).empty() ? std::pair<int64_t, int64_t>{KH, KW} : two(a[2], 1);
  auto [pH, pW] = two(a[3], 0);
  bool ceil = c.integer(a[4]) != 0, includePad = c.integer(a[5]) != 0;
  int64_t divisor = c.isNone(a[6]) ? 0 : c.integer(a[6]);
  int64_t sH = stride.first, sW = stride.second;
  size_t r = in.sizes.size();
  int64_t H = in.sizes[r - 2], W = in.sizes[r - 1];
  if (KH <= 0 || KW <= 0 || sH <= 0 || sW <= 0 || pH < 0 || pW < 0 || H <= 0 || W <= 0)
    return c.fail("avg_pool2d kernel, stride or padding out of range");
  auto outLen = [&](int64_t L, int64_t k, int64_t s, int64_t p) {
    int64_t o = (L + 2 * p - k + (ceil ? s - 1 : 0)) / s + 1;
    if (ceil && (o - 1) * s >= L + p) --o;
    return o;
  };
  int64_t OH = outLen(H, KH, sH, pH), OW = outLen(W, KW, sW, pW);
  std::vector<int64_t> sizes(in.sizes.begin(), in.sizes.end() - 2);
  sizes.push_back(OH);
  sizes.push_back(OW);
  if (!c.resize(out, sizes)) return false;
  int64_t planes = static_cast<int64_t>(in.numel()) / std::max<int64_t>(H * W, 1);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * sH - pH, w0 = ow * sW - pW;
        int64_t h1 = std::min(h0 + KH, H + pH), w1 = std::min(w0 + KW, W + pW);
        int64_t poolSize = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, H), w1 = std::min(w1, W);
        float sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += loadAs<float>(in, static_cast<uint64_t>((p * H + ih) * W + iw));
        int64_t div = divisor ? divisor : (includePad ? poolSize : (h1 - h0) * (w1 - w0));
        storeAs<float>(out, static_cast<uint64_t>((p * OH + oh) * OW + ow), div ? sum / static_cast<float>(div) : 0.0f);
      }
  return true;
}

/// quantized_decomposed::quantize_per_tensor (input, scale, zero_point, quant_min, quant_max, dtype, out).
bool quantizePerTensor(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(singleOut(a));
  double scale = c.scalar(a[1]);
  int64_t zp = c.integer(a[2]), qmin = c.integer(a[3]), qmax = c.integer(a[4]);
  if (!c.resize(out, in.sizes)) return false;
  float inv = 1.0f / static_cast<float>(scale);
  for (uint64_t e = 0; e < in.numel(); ++e) {
    float q = std::nearbyint(loadAs<float>(in, e) * inv) + static_cast<float>(zp);
    q = std::max(static_cast<float>(qmin), std::min(static_cast<float>(qmax), q));
    storeAs<int64_t>(out, e, static_cast<int64_t>(q));
  }
  return true;
}

/// quantized_decomposed::dequantize_per_tensor (input, scale, zero_point, quant_min, quant_max, dtype, [out_dtype], out).
bool dequantizePerTensor(KernelContext& c, const Args& a) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(singleOut(a));
  double scale = c.scalar(a[1]);
  int64_t zp = c.integer(a[2]);
  if (!c.resize(out, in.sizes)) return false;
  for (uint64_t e = 0; e < in.numel(); ++e)
    storeAs<float>(out, e, static_cast<float>(loadAs<int64_t>(in, e) - zp) * static_cast<float>(scale));
  return true;
}

bool upsampleNearest2d(KernelContext& c, const Args& a) {  // (input, output_size?, scale_factors?, out)
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[3]);
  if (!contiguousOperands(c, {&in}) || in.sizes.size() != 4) return c.fail("upsample_nearest2d input rank");
  int64_t H = in.sizes[2], W = in.sizes[3], OH, OW;
  double fh = 0, fw = 0;
  if (!c.isNone(a[1])) {
    std::vector<int64_t> os = c.ints(a[1]);
    if (os.size() != 2) return c.fail("upsample_nearest2d output_size");
    OH = os[0], OW = os[1];
  } else {
    const RunValue& f = c.value(a[2]);
    if (f.doubles.size() != 2) return c.fail("upsample_nearest2d scale_factors");
    fh = f.doubles[0], fw = f.doubles[1];
    OH = static_cast<int64_t>(std::floor(static_cast<double>(H) * fh));
    OW = static_cast<int64_t>(std::floor(static_cast<double>(W) * fw));
  }
  if (!c.resize(out, {in.sizes[0], in.sizes[1], OH, OW})) return false;
  // As ATen's nearest: source = floor(dst * scale), scale = 1/factor when given, else in/out.
  float sh = fh > 0 ? static_cast<float>(1.0 / fh) : static_cast<float>(H) / static_cast<float>(OH);
  float sw = fw > 0 ? static_cast<float>(1.0 / fw) : static_cast<float>(W) / static_cast<float>(OW);
  uint32_t es = elementSize(in.dtype);
  int64_t planes = in.sizes[0] * in.sizes[1];
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t ih = std::min(static_cast<int64_t>(std::floor(static_cast<float>(oh) * sh)), H - 1);
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t iw = std::min(static_cast<int64_t>(std::floor(static_cast<float>(ow) * sw)), W - 1);
        std::memcpy(out.data + static_cast<uint64_t>((p * OH + oh) * OW + ow) * es,
                    in.data + static_cast<uint64_t>((p * H + ih) * W + iw) * es, es);
      }
    }
  return true;
}

double gelu(double x, bool tanhApprox) {
  if (tanhApprox) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

std::map<std::string, Kernel> makeKernels() {
  std::map<std::string, Kernel> k;
  auto alphaOf = [](KernelContext& c, ValueId v) { return c.scalar(v); };
  k["aten::add.out"] = [=](KernelContext& c, const Args& a) {
    double alpha = alphaOf(c, a[2]);
    return binary(c, a[0], a[1], a[3], [alpha](auto x, auto y) { return alpha == 1 ? x + y : x + static_cast<decltype(y)>(alpha) * y; });
  };
  k["aten::add.Scalar_out"] = k["aten::add.out"];
  k["aten::sub.out"] = [=](KernelContext& c, const Args& a) {
    double alpha = alphaOf(c, a[2]);
    return binary(c, a[0], a[1], a[3], [alpha](auto x, auto y) { return alpha == 1 ? x - y : x - static_cast<decltype(y)>(alpha) * y; });
  };
  k["aten::sub.Scalar_out"] = k["aten::sub.out"];
  k["aten::mul.out"] = [](KernelContext& c, const Args& a) { return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return x * y; }); };
  k["aten::mul.Scalar_out"] = k["aten::mul.out"];
  k["aten::div.out"] = [](KernelContext& c, const Args& a) { return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return x / y; }); };
  k["aten::div.Scalar_out"] = k["aten::div.out"];
  k["aten::div.out_mode"] = [](KernelContext& c, const Args& a) {  // (self, other, rounding_mode?, out)
    std::string mode = c.value(a[2]).kind == ValueKind::String ? c.value(a[2]).s : "";
    return binary(c, a[0], a[1], a[3], [mode](auto x, auto y) {
      auto q = x / y;
      if (mode == "trunc") return static_cast<decltype(q)>(std::trunc(static_cast<double>(q)));
      if (mode == "floor") return static_cast<decltype(q)>(std::floor(static_cast<double>(q)));
      return q;
    });
  };
  k["aten::remainder.Scalar_out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>) {
        T r = std::fmod(x, y);
        return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
      } else {
        if (y == 0) return T(0);
        T r = x % y;
        return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
      }
    });
  };
  k["aten::remainder.Tensor_out"] = k["aten::remainder.Scalar_out"];
  k["aten::pow.Tensor_Scalar_out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return static_cast<decltype(x)>(std::pow(x, y)); });
  };
  k["aten::maximum.out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return (x != x || x > y) ? x : y; });
  };
  k["aten::minimum.out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return (x != x || x < y) ? x : y; });
  };
  auto compare = [&](const char* name, auto f) {
    Kernel kern = [f](KernelContext& c, const Args& a) { return binary(c, a[0], a[1], a[2], f, true); };
    k[std::string("aten::") + name + ".Scalar_out"] = kern;
    k[std::string("aten::") + name + ".Tensor_out"] = kern;
  };
  compare("eq", [](auto x, auto y) { return x == y; });
  compare("ne", [](auto x, auto y) { return x != y; });
  compare("gt", [](auto x, auto y) { return x > y; });
  compare("ge", [](auto x, auto y) { return x >= y; });
  compare("lt", [](auto x, auto y) { return x < y; });
  compare("le", [](auto x, auto y) { return x <= y; });
  k["aten::bitwise_and.Tensor_out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) {
      return static_cast<decltype(x)>(static_cast<int64_t>(x) & static_cast<int64_t>(y));
    }, true);
  };
  k["aten::logical_not.out"] = [](KernelContext& c, const Args& a) {
    return unary(c, a[0], a[1], [](auto x) { return x == decltype(x)(0); });
  };
  k["aten::neg.out"] = [](KernelContext& c, const Args& a) { return unary(c, a[0], a[1], [](auto x) { return -x; }); };
  k["aten::abs.out"] = [](KernelContext& c, const Args& a) { return unary(c, a[0], a[1], [](auto x) { return x < 0 ? -x : x; }); };
  k["aten::relu.out"] = [](KernelContext& c, const Args& a) {
    return unary(c, a[0], a[1], [](auto x) { return (x != x || x >= decltype(x)(0)) ? x : decltype(x)(0); });
  };
  auto fl = [&](const char* name, auto f) {
    k[name] = [f](KernelContext& c, const Args& a) { return floatUnary(c, a[0], a[1], f); };
  };
  fl("aten::sigmoid.out", [](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); });
  fl("aten::tanh.out", [](auto x) { return std::tanh(x); });
  fl("aten::exp.out", [](auto x) { return std::exp(x); });
  fl("aten::log.out", [](auto x) { return std::log(x); });
  fl("aten::log1p.out", [](auto x) { return std::log1p(x); });
  fl("aten::sqrt.out", [](auto x) { return std::sqrt(x); });
  fl("aten::rsqrt.out", [](auto x) { return decltype(x)(1) / std::sqrt(x); });
  fl("aten::sin.out", [](auto x) { return std::sin(x); });
  fl("aten::cos.out", [](auto x) { return std::cos(x); });
  fl("aten::erf.out", [](auto x) { return std::erf(x); });
  k["aten::gelu.out"] = [](KernelContext& c, const Args& a) {  // (self, approximate, out)
    bool t = c.value(a[1]).kind == ValueKind::String && c.value(a[1]).s == "tanh";
    return floatUnary(c, a[0], a[2], [t](auto x) { return static_cast<decltype(x)>(gelu(x, t)); });
  };
  k["aten::hardtanh.out"] = [](KernelContext& c, const Args& a) {  // (self, min, max, out)
    double lo = c.scalar(a[1]), hi = c.scalar(a[2]);
    return floatUnary(c, a[0], a[3], [lo, hi](auto x) {
      using T = decltype(x);
      return x != x ? x : std::min(std::max(x, static_cast<T>(lo)), static_cast<T>(hi));
    });
  };
  k["aten::clamp.out"] = [](KernelContext& c, const Args& a) {  // (self, min?, max?, out)
    bool hasLo = !c.isNone(a[1]), hasHi = !c.isNone(a[2]);
    double lo = hasLo ? c.scalar(a[1]) : 0, hi = hasHi ? c.scalar(a[2]) : 0;
    return unary(c, a[0], a[3], [=](auto x) {
      using T = decltype(x);
      if (x != x) return x;
      if (hasLo && x < static_cast<T>(lo)) x = static_cast<T>(lo);
      if (hasHi && x > static_cast<T>(hi)) x = static_cast<T>(hi);
      return x;
    });
  };
  k["aten::mm.out"] = mmOut;
  k["aten::bmm.out"] = bmmOut;
  k["aten::addmm.out"] = addmmOut;
  k["aten::view_copy.out"] = viewCopy;
  k["aten::permute_copy.out"] = permuteCopy;
  k["aten::slice_copy.Tensor_out"] = sliceCopy;
  k["aten::select_copy.int_out"] = selectCopy;
  k["aten::expand_copy.out"] = expandCopy;
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
  k["aten::clone.out"] = [](KernelContext& c, const Args& a) {  // (self, memory_format?, out)
    RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
    if (!c.resize(out, in.sizes)) return false;
    copyLogical(in, out);
    return true;
  };
  k["dim_order_ops::_to_dim_order_copy.out"] = dimOrderCopy;
  k["dim_order_ops::_clone_dim_order.out"] = dimOrderCopy;
  k["aten::copy_.default"] = copyInPlace;
  k["aten::copy_"] = copyInPlace;
  k["aten::sum.IntList_out"] = sumOut;
  k["aten::mean.out"] = meanOut;
  k["aten::amax.out"] = amaxOut;
  k["aten::any.all_out"] = [](KernelContext& c, const Args& a) { return anyOut(c, a, true); };
  k["aten::any.out"] = [](KernelContext& c, const Args& a) { return anyOut(c, a, false); };
  k["aten::any.dims_out"] = k["aten::any.out"];
  k["aten::_softmax.out"] = [](KernelContext& c, const Args& a) { return softmax(c, a, false); };
  k["aten::_log_softmax.out"] = [](KernelContext& c, const Args& a) { return softmax(c, a, true); };
  k["aten::convolution.out"] = convolutionOut;
  k["aten::_native_batch_norm_legit_no_training.out"] = batchNormNoTraining;
  k["aten::native_layer_norm.out"] = layerNorm;
  k["aten::embedding.out"] = embeddingOut;
  k["aten::max_pool2d_with_indices.out"] = maxPool2dWithIndices;
  k["aten::_adaptive_avg_pool2d.out"] = adaptiveAvgPool2d;
  k["aten::where.self_out"] = whereOut;
  k["aten::index.Tensor_out"] = indexOut;
  k["aten::argmax.out"] = argmaxOut;
  k["aten::gather.out"] = [](KernelContext& c, const Args& a) { return gatherOrScatter(c, a, false); };
  k["aten::scatter.value_out"] = [](KernelContext& c, const Args& a) { return gatherOrScatter(c, a, true); };
  k["aten::index_select.out"] = indexSelectOut;
  k["aten::var.correction_out"] = varOut;
  k["aten::cumsum.out"] = cumsumOut;
  k["aten::constant_pad_nd.out"] = constantPadNd;
  k["aten::avg_pool2d.out"] = avgPool2d;
  k["aten::upsample_nearest2d.vec_out"] = upsampleNearest2d;
  k["quantized_decomposed::quantize_per_tensor.out"] = quantizePerTensor;
  k["quantized_decomposed::dequantize_per_tensor.out"] = dequantizePerTensor;
  k["aten::mean.dtype_out"] = [](KernelContext& c, const Args& a) {  // (self, dtype?, out): every element
    RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[2]);
    bool ok = true;
    auto run = [&]<typename T>() {
      ok = reduce<T>(c, in, {}, false, out, T(0), [](T x, T y) { return static_cast<T>(x + y); },
                     [](T x, uint64_t n) { return static_cast<T>(x / static_cast<T>(n)); });
    };
    if (out.dtype == ScalarType::Double) run.template operator()<double>();
    else run.template operator()<float>();
    return ok;
  };
  k["aten::index_put.out"] = indexPutOut;
  k["aten::full.out"] = [](KernelContext& c, const Args& a) {  // (size, fill_value, out)
    return fillOut(c, c.tensor(a[2]), c.ints(a[0]), c.scalar(a[1]));
  };
  k["aten::full_like.out"] = [](KernelContext& c, const Args& a) {  // (self, fill_value, memory_format?, out)
    return fillOut(c, c.tensor(a[3]), c.tensor(a[0]).sizes, c.scalar(a[1]));
  };
  k["aten::scalar_tensor.out"] = [](KernelContext& c, const Args& a) {  // (s, out)
    return fillOut(c, c.tensor(a[1]), {}, c.scalar(a[0]));
  };
  k["aten::arange.start_out"] = [](KernelContext& c, const Args& a) {  // (start, end, step, out)
    double start = c.scalar(a[0]), end = c.scalar(a[1]), step = c.scalar(a[2]);
    RunTensor& out = c.tensor(a[3]);
    if (step == 0) return c.fail("arange step is zero");
    int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
    if (!c.resize(out, {std::max<int64_t>(n, 0)})) return false;
    for (int64_t i = 0; i < n; ++i) storeAs<double>(out, static_cast<uint64_t>(i), start + static_cast<double>(i) * step);
    return true;
  };
  return k;
}

const std::map<std::string, Kernel>& kernels() {
  static const std::map<std::string, Kernel> k = makeKernels();
  return k;
}

}  // namespace

const Kernel* findKernel(const std::string& fullName) {
  auto it = kernels().find(fullName);
  return it == kernels().end() ? nullptr : &it->second;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> names;
  for (const auto& [name, _] : kernels()) names.push_back(name);
  return names;
}

}  // namespace lstudio::run
