// Reduction kernels: sum, mean, prod, amax/amin, any, argmax/argmin, max/min, var, cumsum,
// softmax and log_softmax.
// Semantics after ExecuTorch's portable kernels (kernels/portable/cpu/).
#include <limits>

#include "engine/run/KernelSupport.h"

namespace lstudio::run::kernels {

namespace {

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

/// The largest (or smallest) element along `dim` (all elements when `all`) and its index, into
/// `values` and/or `indices` (either may be null). NaN counts as the extreme, the first index
/// wins a tie, as the portable argmax/argmin and max/min.dim kernels do.
bool extremeAlong(KernelContext& c, const RunTensor& in, bool all, int64_t dimArg, bool keepdim, RunTensor* values,
                  RunTensor* indices, bool largest) {
  int64_t dim = 0;
  if (!all && !dimOf(c, dimArg, in.sizes.size(), dim)) return false;
  if (in.numel() == 0) return c.fail(std::string(largest ? "max" : "min") + " of an empty tensor");
  std::vector<int64_t> sizes;
  if (!all) {
    for (size_t d = 0; d < in.sizes.size(); ++d)
      if (static_cast<int64_t>(d) != dim) sizes.push_back(in.sizes[d]);
      else if (keepdim) sizes.push_back(1);
  }
  if (all && keepdim) sizes.assign(in.sizes.size(), 1);
  if (!contiguousOperands(c, {&in})) return false;
  if (values && !c.resize(*values, sizes)) return false;
  if (indices && !c.resize(*indices, sizes)) return false;
  int64_t size = all ? static_cast<int64_t>(in.numel()) : in.sizes[dim], inner = 1, outer = 1;
  if (!all)
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      if (static_cast<int64_t>(d) < dim) outer *= in.sizes[d];
      if (static_cast<int64_t>(d) > dim) inner *= in.sizes[d];
    }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      uint64_t best = static_cast<uint64_t>(o * size * inner + i);
      int64_t at = 0;
      double bestValue = loadAs<double>(in, best);
      for (int64_t k = 1; k < size && !std::isnan(bestValue); ++k) {
        uint64_t e = static_cast<uint64_t>((o * size + k) * inner + i);
        double x = loadAs<double>(in, e);
        if (std::isnan(x) || (largest ? x > bestValue : x < bestValue)) best = e, at = k, bestValue = x;
      }
      uint64_t to = static_cast<uint64_t>(o * inner + i);
      if (values) copyElement(in, best, *values, to);
      if (indices) storeAs<int64_t>(*indices, to, at);
    }
  return true;
}

bool argExtremeOut(KernelContext& c, const Args& a, bool largest) {  // argmax/argmin (self, dim?, keepdim, out)
  RunTensor& in = c.tensor(a[0]);
  const bool all = c.isNone(a[1]) || in.sizes.empty();
  return extremeAlong(c, in, all, all ? 0 : c.integer(a[1]), c.integer(a[2]) != 0, nullptr, &c.tensor(a[3]), largest);
}

/// prod.out (self, dtype?, out) over every element; prod.int_out (self, dim, keepdim, dtype?, out).
bool prodOut(KernelContext& c, const Args& a, bool alongDim) {
  RunTensor &in = c.tensor(a[0]), &out = c.tensor(singleOut(a));
  std::vector<int64_t> dims;
  if (alongDim) dims.push_back(c.integer(a[1]));
  const bool keepdim = alongDim && c.integer(a[2]) != 0;
  bool ok = true;
  withComputeType(out.dtype, [&]<typename T>() {
    using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
    ok = reduce<U>(c, in, dims, keepdim, out, U(1), [](U x, U y) { return static_cast<U>(x * y); },
                   [](U x, uint64_t) { return x; });
  });
  return ok;
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

}  // namespace

void addReductionKernels(KernelTable& k) {
  k["aten::sum.IntList_out"] = sumOut;
  k["aten::mean.out"] = meanOut;
  k["aten::amax.out"] = amaxOut;
  k["aten::any.all_out"] = [](KernelContext& c, const Args& a) { return anyOut(c, a, true); };
  k["aten::any.out"] = [](KernelContext& c, const Args& a) { return anyOut(c, a, false); };
  k["aten::any.dims_out"] = k["aten::any.out"];
  k["aten::_softmax.out"] = [](KernelContext& c, const Args& a) { return softmax(c, a, false); };
  k["aten::_log_softmax.out"] = [](KernelContext& c, const Args& a) { return softmax(c, a, true); };
  k["aten::argmax.out"] = [](KernelContext& c, const Args& a) { return argExtremeOut(c, a, true); };
  k["aten::argmin.out"] = [](KernelContext& c, const Args& a) { return argExtremeOut(c, a, false); };
  k["aten::amin.out"] = [](KernelContext& c, const Args& a) {  // (self, dim[], keepdim, out)
    return reduce<double>(c, c.tensor(a[0]), c.ints(a[1]), c.integer(a[2]) != 0, c.tensor(a[3]),
                          std::numeric_limits<double>::infinity(),
                          [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); },
                          [](double x, uint64_t) { return x; });
  };
  // max.dim_max (self, dim, keepdim, max, max_values) and min.dim_min: values and their indices.
  k["aten::max.dim_max"] = [](KernelContext& c, const Args& a) {
    return extremeAlong(c, c.tensor(a[0]), false, c.integer(a[1]), c.integer(a[2]) != 0, &c.tensor(a[3]), &c.tensor(a[4]), true);
  };
  k["aten::min.dim_min"] = [](KernelContext& c, const Args& a) {
    return extremeAlong(c, c.tensor(a[0]), false, c.integer(a[1]), c.integer(a[2]) != 0, &c.tensor(a[3]), &c.tensor(a[4]), false);
  };
  k["aten::max.unary_out"] = [](KernelContext& c, const Args& a) {  // (self, out): the largest element, 0-d
    return extremeAlong(c, c.tensor(a[0]), true, 0, false, &c.tensor(a[1]), nullptr, true);
  };
  k["aten::min.unary_out"] = [](KernelContext& c, const Args& a) {
    return extremeAlong(c, c.tensor(a[0]), true, 0, false, &c.tensor(a[1]), nullptr, false);
  };
  k["aten::prod.out"] = [](KernelContext& c, const Args& a) { return prodOut(c, a, false); };
  k["aten::prod.int_out"] = [](KernelContext& c, const Args& a) { return prodOut(c, a, true); };
  k["aten::var.correction_out"] = varOut;
  k["aten::cumsum.out"] = cumsumOut;
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
}

}  // namespace lstudio::run::kernels
