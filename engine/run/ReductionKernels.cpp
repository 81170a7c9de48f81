// Reduction kernels: sum, mean, amax, any, argmax, var, cumsum, softmax and log_softmax.
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
  k["aten::argmax.out"] = argmaxOut;
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
