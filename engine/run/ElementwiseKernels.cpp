// Elementwise kernels: arithmetic, comparisons and unary functions with broadcasting, where,
// fills, and quantize/dequantize per tensor.
// Semantics after ExecuTorch's portable kernels (kernels/portable/cpu/).
#include "engine/run/KernelSupport.h"

namespace lstudio::run::kernels {

namespace {

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
      elementwise<int64_t>(o, {ta, tb}, [&](const std::vector<int64_t>& v) { return convertElement<int64_t>(f(v[0], v[1])); });
    } else {
      elementwise<T>(o, {ta, tb}, [&](const std::vector<T>& v) { return convertElement<T>(f(v[0], v[1])); });
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
      elementwise<int64_t>(o, {&i}, [&](const std::vector<int64_t>& v) { return convertElement<int64_t>(f(v[0])); });
    } else {
      elementwise<T>(o, {&i}, [&](const std::vector<T>& v) { return convertElement<T>(f(v[0])); });
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

/// quantized_decomposed::quantize_per_tensor: round(x / scale) + zero_point, clamped, with
/// the reciprocal in float as ExecuTorch's quantized kernels take it.
bool quantizeInto(KernelContext& c, const RunTensor& in, RunTensor& out, double scale, int64_t zp, int64_t qmin,
                  int64_t qmax) {
  if (!c.resize(out, in.sizes)) return false;
  float inv = 1.0f / static_cast<float>(scale);
  for (uint64_t e = 0; e < in.numel(); ++e) {
    float q = std::nearbyint(loadAs<float>(in, e) * inv) + static_cast<float>(zp);
    q = std::max(static_cast<float>(qmin), std::min(static_cast<float>(qmax), q));
    storeAs<int64_t>(out, e, integerFrom<int64_t>(q));
  }
  return true;
}

/// quantized_decomposed::dequantize_per_tensor: (q - zero_point) * scale, in float.
bool dequantizeInto(KernelContext& c, const RunTensor& in, RunTensor& out, double scale, int64_t zp) {
  if (!c.resize(out, in.sizes)) return false;
  for (uint64_t e = 0; e < in.numel(); ++e)
    storeAs<float>(out, e, static_cast<float>(loadAs<int64_t>(in, e) - zp) * static_cast<float>(scale));
  return true;
}

/// The Tensor overloads' scale (a one-element double tensor) and zero point (int64).
bool tensorQParams(KernelContext& c, ValueId scaleId, ValueId zpId, double& scale, int64_t& zp) {
  const RunTensor &s = c.tensor(scaleId), &z = c.tensor(zpId);
  if (s.dtype != ScalarType::Double || z.dtype != ScalarType::Long || s.numel() != 1 || z.numel() != 1)
    return c.fail("the scale must be one double and the zero point one int64");
  scale = loadAs<double>(s, 0);
  zp = loadAs<int64_t>(z, 0);
  return true;
}

/// quantized_decomposed::choose_qparams.Tensor_out (input, quant_min, quant_max, eps, dtype,
/// scale_out, zero_point_out): ExecuTorch's quantized kernel, which takes the range over
/// [min(x, 0), max(x, 0)] (eps unused), computes the scale in double, raises one below
/// 6.1e-5 to it (stretching the range), and nudges the zero point to an integer.
bool chooseQParams(KernelContext& c, const Args& a) {
  const RunTensor& in = c.tensor(a[0]);
  RunTensor &scaleOut = c.tensor(a[5]), &zpOut = c.tensor(a[6]);
  const int64_t qmin = c.integer(a[1]), qmax = c.integer(a[2]);
  if (in.dtype != ScalarType::Float) return c.fail("choose_qparams takes a float32 input");
  if (qmin >= qmax) return c.fail("choose_qparams needs quant_min < quant_max");
  if (scaleOut.dtype != ScalarType::Double || zpOut.dtype != ScalarType::Long || scaleOut.numel() != 1 ||
      zpOut.numel() != 1)
    return c.fail("choose_qparams writes one double scale and one int64 zero point");
  float lo = 0, hi = 0;  // the range always holds 0, which must quantize exactly
  for (uint64_t e = 0; e < in.numel(); ++e) {
    float x = loadAs<float>(in, e);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const auto q0 = static_cast<int32_t>(qmin), q1 = static_cast<int32_t>(qmax);
  double scale = (static_cast<double>(hi) - lo) / (q1 - q0);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  constexpr float kSmallScale = 6.1e-5f;
  if (scale < kSmallScale) {
    const auto original = static_cast<float>(scale);
    scale = kSmallScale;
    if (lo == 0.0f) hi = kSmallScale * static_cast<float>(q1 - q0);
    else if (hi == 0.0f) lo = -kSmallScale * static_cast<float>(q1 - q0);
    else {
      const float amplifier = kSmallScale / original;
      lo *= amplifier;
      hi *= amplifier;
    }
  }
  // From the end whose terms are smaller: its rounding error is.
  const double fromMin = q0 - lo / scale, fromMax = q1 - hi / scale;
  const double errMin = std::abs(q0) - std::abs(lo / scale), errMax = std::abs(q1) - std::abs(hi / scale);
  const double initial = errMin < errMax ? fromMin : fromMax;
  const int32_t zp = initial < q0 ? q0 : initial > q1 ? q1 : static_cast<int32_t>(std::nearbyint(static_cast<float>(initial)));
  storeAs<double>(scaleOut, 0, scale);
  storeAs<int64_t>(zpOut, 0, zp);
  return true;
}

/// quantized_decomposed::dequantize_per_channel.out (input, scales, zero_points?, axis,
/// quant_min, quant_max, dtype, out_dtype?, out): channel k along `axis` takes scales[k] (double
/// or float, used as a float) and zero_points[k] (0 without them). ExecuTorch's fast path
/// multiplies in double, but the product of a small integer and a float is exact there, so
/// both of its paths give the float product rounded once.
bool dequantizePerChannel(KernelContext& c, const Args& a) {
  const RunTensor &in = c.tensor(a[0]), &scales = c.tensor(a[1]);
  RunTensor& out = c.tensor(singleOut(a));
  const bool zeroPoints = !c.isNone(a[2]);
  int64_t axis = c.integer(a[3]);
  const auto rank = static_cast<int64_t>(in.sizes.size());
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return c.fail("dequantize_per_channel: axis outside the input's dims");
  const int64_t channels = in.sizes[static_cast<size_t>(axis)];
  if ((scales.dtype != ScalarType::Double && scales.dtype != ScalarType::Float) ||
      static_cast<int64_t>(scales.numel()) != channels)
    return c.fail("dequantize_per_channel needs one double or float scale per channel");
  if (zeroPoints && (c.tensor(a[2]).dtype != ScalarType::Long || static_cast<int64_t>(c.tensor(a[2]).numel()) != channels))
    return c.fail("dequantize_per_channel needs one int64 zero point per channel");
  if (!in.contiguous()) return c.fail("dequantize_per_channel of an input not in contiguous dim order");
  if (!c.resize(out, in.sizes)) return false;
  uint64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= static_cast<uint64_t>(in.sizes[static_cast<size_t>(d)]);
  for (uint64_t e = 0; e < in.numel(); ++e) {
    const uint64_t k = (e / inner) % static_cast<uint64_t>(channels);
    const auto scale = static_cast<float>(loadAs<double>(scales, k));
    const int64_t zp = zeroPoints ? loadAs<int64_t>(c.tensor(a[2]), k) : 0;
    storeAs<float>(out, e, static_cast<float>(loadAs<int64_t>(in, e) - zp) * scale);
  }
  return true;
}

/// quantized_decomposed::quantize_per_tensor (input, scale, zero_point, quant_min, quant_max, dtype, out).
bool quantizePerTensor(KernelContext& c, const Args& a) {
  return quantizeInto(c, c.tensor(a[0]), c.tensor(singleOut(a)), c.scalar(a[1]), c.integer(a[2]), c.integer(a[3]),
                      c.integer(a[4]));
}

/// quantized_decomposed::dequantize_per_tensor (input, scale, zero_point, quant_min, quant_max, dtype, [out_dtype], out).
bool dequantizePerTensor(KernelContext& c, const Args& a) {
  return dequantizeInto(c, c.tensor(a[0]), c.tensor(singleOut(a)), c.scalar(a[1]), c.integer(a[2]));
}

double gelu(double x, bool tanhApprox) {
  if (tanhApprox) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

/// x / y into a floating `out` (ExecuTorch refuses true division into an integer tensor).
bool trueDivide(KernelContext& c, ValueId x, ValueId y, ValueId out) {
  if (!isFloating(c.tensor(out).dtype)) return c.fail("true division needs a floating output");
  return binary(c, x, y, out, [](auto p, auto q) { return p / q; });
}

/// add, sub, mul and rsub, neg, abs and relu: integers and floats alike.
void addArithmeticKernels(KernelTable& k) {
  auto alphaOf = [](KernelContext& c, ValueId v) { return c.scalar(v); };
  k["aten::add.out"] = [=](KernelContext& c, const Args& a) {
    double alpha = alphaOf(c, a[2]);
    return binary(c, a[0], a[1], a[3], [alpha](auto x, auto y) { return alpha == 1 ? x + y : x + convertElement<decltype(y)>(alpha) * y; });
  };
  k["aten::add.Scalar_out"] = k["aten::add.out"];
  k["aten::sub.out"] = [=](KernelContext& c, const Args& a) {
    double alpha = alphaOf(c, a[2]);
    return binary(c, a[0], a[1], a[3], [alpha](auto x, auto y) { return alpha == 1 ? x - y : x - convertElement<decltype(y)>(alpha) * y; });
  };
  k["aten::sub.Scalar_out"] = k["aten::sub.out"];
  k["aten::mul.out"] = [](KernelContext& c, const Args& a) { return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return x * y; }); };
  k["aten::mul.Scalar_out"] = k["aten::mul.out"];
  k["aten::rsub.Scalar_out"] = [](KernelContext& c, const Args& a) {  // (self, other, alpha, out): other - alpha * self
    const double alpha = c.scalar(a[2]);
    return binary(c, a[0], a[1], a[3], [alpha](auto x, auto y) { return y - convertElement<decltype(x)>(alpha) * x; });
  };
  k["aten::neg.out"] = [](KernelContext& c, const Args& a) { return unary(c, a[0], a[1], [](auto x) { return -x; }); };
  k["aten::abs.out"] = [](KernelContext& c, const Args& a) { return unary(c, a[0], a[1], [](auto x) { return x < 0 ? -x : x; }); };
  k["aten::relu.out"] = [](KernelContext& c, const Args& a) {
    return unary(c, a[0], a[1], [](auto x) { return (x != x || x >= decltype(x)(0)) ? x : decltype(x)(0); });
  };
}

/// Division, remainders and floor division.
void addDivisionKernels(KernelTable& k) {
  // Division as the portable kernels do it (checked against executorch.runtime): true
  // division writes a floating tensor; integer quotients are exact, "trunc" then passes
  // through double (std::trunc of an integer), "floor" rounds toward minus infinity; an
  // integer divisor of 0 is an error. INT64_MIN / -1, which traps there, wraps here.
  k["aten::div.out"] = [](KernelContext& c, const Args& a) { return trueDivide(c, a[0], a[1], singleOut(a)); };
  k["aten::div.Scalar_out"] = k["aten::div.out"];
  k["aten::div.out_mode"] = [](KernelContext& c, const Args& a) {  // (self, other, rounding_mode?, out)
    std::string mode = c.value(a[2]).kind == ValueKind::String ? c.value(a[2]).s : "";
    if (c.isNone(a[2])) return trueDivide(c, a[0], a[1], a[3]);
    if (mode != "trunc" && mode != "floor") return c.fail("div rounding_mode \"" + mode + "\"");
    bool byZero = false;
    bool ok = binary(c, a[0], a[1], a[3], [&mode, &byZero](auto x, auto y) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>) {
        return mode == "trunc" ? std::trunc(x / y) : floorDivide(x, y);
      } else {
        if (y == 0) byZero = true;
        if (y == 0) return T(0);
        if (mode == "floor") return floorDivide(x, y);
        return convertElement<T>(std::trunc(static_cast<double>(quotient(x, y))));
      }
    });
    return ok && (!byZero || c.fail("integer division by zero"));
  };
  // The portable remainder: an integer's is C++'s % (the sign of x, unlike PyTorch's eager
  // remainder); a floating one is fmod taken through float, moved to the sign of y.
  k["aten::remainder.Scalar_out"] = [](KernelContext& c, const Args& a) {
    bool byZero = false;
    bool ok = binary(c, a[0], a[1], a[2], [&byZero](auto x, auto y) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>) {
        float r = static_cast<float>(std::fmod(x, y));
        if (((x < 0) != (y < 0)) && r != 0) r = static_cast<float>(r + y);
        return static_cast<T>(r);
      } else {
        if (y == 0) byZero = true;
        return y == 0 || y == -1 ? T(0) : T(x % y);
      }
    });
    return ok && (!byZero || c.fail("integer division by zero"));
  };
  k["aten::remainder.Tensor_out"] = k["aten::remainder.Scalar_out"];
  // fmod: C's fmod, computed in float for float32 operands and in double otherwise (integers
  // included); an integer divisor of 0 is an error.
  k["aten::fmod.Scalar_out"] = [](KernelContext& c, const Args& a) {  // (self, other, out) and .Tensor_out
    const RunTensor& x = c.tensor(a[0]);
    const bool tensorOther = c.value(a[1]).kind == ValueKind::Tensor;
    const bool floatOperands = isFloating(x.dtype) || (tensorOther ? isFloating(c.tensor(a[1]).dtype)
                                                                   : c.value(a[1]).kind == ValueKind::Double);
    bool byZero = false;
    bool ok = binary(c, a[0], a[1], a[2], [&byZero, floatOperands](auto p, auto q) {
      using T = decltype(p);
      if constexpr (std::is_floating_point_v<T>) {
        return static_cast<T>(std::fmod(p, q));
      } else {
        if (!floatOperands && q == 0) byZero = true;
        return q == 0 ? T(0) : static_cast<T>(std::fmod(static_cast<double>(p), static_cast<double>(q)));
      }
    });
    return ok && (!byZero || c.fail("integer division by zero (fmod)"));
  };
  k["aten::fmod.Tensor_out"] = k["aten::fmod.Scalar_out"];
  k["aten::floor_divide.out"] = [](KernelContext& c, const Args& a) {  // (self, other, out)
    bool byZero = false;
    bool ok = binary(c, a[0], a[1], a[2], [&byZero](auto x, auto y) {
      if constexpr (!std::is_floating_point_v<decltype(x)>)
        if (y == 0) return byZero = true, decltype(x)(0);
      return floorDivide(x, y);
    });
    return ok && (!byZero || c.fail("integer division by zero (floor_divide)"));
  };
}

/// pow, maximum and minimum, atan2.
void addPowerAndExtremaKernels(KernelTable& k) {
  k["aten::pow.Tensor_Scalar_out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return convertElement<decltype(x)>(std::pow(x, y)); });
  };
  k["aten::maximum.out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return (x != x || x > y) ? x : y; });
  };
  k["aten::minimum.out"] = [](KernelContext& c, const Args& a) {
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return (x != x || x < y) ? x : y; });
  };
  k["aten::pow.Tensor_Tensor_out"] = [](KernelContext& c, const Args& a) {  // (self, exponent, out)
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return convertElement<decltype(x)>(std::pow(x, y)); });
  };
  k["aten::pow.Scalar_out"] = [](KernelContext& c, const Args& a) {  // (self: Scalar, exponent: Tensor, out)
    return binary(c, a[1], a[0], a[2], [](auto e, auto base) { return convertElement<decltype(e)>(std::pow(base, e)); });
  };
  k["aten::atan2.out"] = [](KernelContext& c, const Args& a) {  // (self, other, out): a floating output
    if (!isFloating(c.tensor(a[2]).dtype)) return c.fail("atan2 needs a floating output");
    return binary(c, a[0], a[1], a[2], [](auto x, auto y) { return std::atan2(x, y); });
  };
}

/// Comparisons, bitwise and logical ops.
void addComparisonAndLogicalKernels(KernelTable& k) {
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
  // Bitwise ops on integers and bools (a float operand is refused, as the portable kernels do).
  auto bitwise = [&](const char* name, auto f) {
    Kernel kern = [f, name](KernelContext& c, const Args& a) {
      const bool otherFloat = c.value(a[1]).kind == ValueKind::Tensor ? isFloating(c.tensor(a[1]).dtype)
                                                                      : c.value(a[1]).kind == ValueKind::Double;
      if (isFloating(c.tensor(a[0]).dtype) || otherFloat) return c.fail(std::string(name) + " of a floating tensor");
      return binary(c, a[0], a[1], a[2], [f](auto x, auto y) {
        return static_cast<decltype(x)>(f(convertElement<int64_t>(x), convertElement<int64_t>(y)));
      }, true);
    };
    k[std::string("aten::") + name + ".Tensor_out"] = kern;
    k[std::string("aten::") + name + ".Scalar_out"] = kern;
  };
  bitwise("bitwise_and", [](int64_t x, int64_t y) { return x & y; });
  bitwise("bitwise_or", [](int64_t x, int64_t y) { return x | y; });
  bitwise("bitwise_xor", [](int64_t x, int64_t y) { return x ^ y; });
  k["aten::bitwise_not.out"] = [](KernelContext& c, const Args& a) {
    const ScalarType t = c.tensor(a[0]).dtype;
    if (isFloating(t)) return c.fail("bitwise_not of a floating tensor");
    if (t == ScalarType::Bool) return unary(c, a[0], a[1], [](auto x) { return x == decltype(x)(0); });
    return unary(c, a[0], a[1], [](auto x) { return static_cast<decltype(x)>(~convertElement<int64_t>(x)); });
  };
  // logical_and / or / xor: each operand's truth, into any output dtype.
  auto logical = [&](const char* name, auto f) {
    k[std::string("aten::") + name + ".out"] = [f](KernelContext& c, const Args& a) {
      return binary(c, a[0], a[1], a[2], [f](auto x, auto y) { return f(x != decltype(x)(0), y != decltype(y)(0)); }, true);
    };
  };
  logical("logical_and", [](bool x, bool y) { return x && y; });
  logical("logical_or", [](bool x, bool y) { return x || y; });
  logical("logical_xor", [](bool x, bool y) { return x != y; });
  k["aten::logical_not.out"] = [](KernelContext& c, const Args& a) {
    return unary(c, a[0], a[1], [](auto x) { return x == decltype(x)(0); });
  };
}

/// Floating-point functions, rounding, sign and the NaN and infinity checks.
void addFunctionKernels(KernelTable& k) {
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
  fl("aten::acos.out", [](auto x) { return std::acos(x); });
  fl("aten::acosh.out", [](auto x) { return std::acosh(x); });
  fl("aten::asin.out", [](auto x) { return std::asin(x); });
  fl("aten::asinh.out", [](auto x) { return std::asinh(x); });
  fl("aten::atan.out", [](auto x) { return std::atan(x); });
  fl("aten::atanh.out", [](auto x) { return std::atanh(x); });
  fl("aten::cosh.out", [](auto x) { return std::cosh(x); });
  fl("aten::sinh.out", [](auto x) { return std::sinh(x); });
  fl("aten::tan.out", [](auto x) { return std::tan(x); });
  fl("aten::expm1.out", [](auto x) { return std::expm1(x); });
  fl("aten::log2.out", [](auto x) { return std::log2(x); });
  fl("aten::log10.out", [](auto x) { return std::log10(x); });
  fl("aten::reciprocal.out", [](auto x) { return decltype(x)(1) / x; });
  k["aten::logit.out"] = [](KernelContext& c, const Args& a) {  // (self, eps?, out): log(x / (1 - x)), x clamped to [eps, 1 - eps]
    const bool clamp = !c.isNone(a[1]);
    const double eps = clamp ? c.scalar(a[1]) : 0;
    return floatUnary(c, a[0], a[2], [=](auto x) {
      using T = decltype(x);
      if (clamp) x = x < T(eps) ? T(eps) : (x > T(1 - eps) ? T(1 - eps) : x);
      return std::log(x / (T(1) - x));
    });
  };
  // Rounding keeps the dtype (an integer is its own ceiling); round is half to even.
  auto rounding = [&](const char* name, auto f) {
    k[name] = [f](KernelContext& c, const Args& a) {
      return unary(c, a[0], a[1], [f](auto x) {
        if constexpr (std::is_floating_point_v<decltype(x)>) return f(x);
        else return x;
      });
    };
  };
  rounding("aten::ceil.out", [](auto x) { return std::ceil(x); });
  rounding("aten::floor.out", [](auto x) { return std::floor(x); });
  rounding("aten::round.out", [](auto x) { return std::nearbyint(x); });
  rounding("aten::trunc.out", [](auto x) { return std::trunc(x); });
  k["aten::sign.out"] = [](KernelContext& c, const Args& a) {  // NaN stays NaN; a bool is its own sign
    return unary(c, a[0], a[1], [](auto x) {
      using T = decltype(x);
      return x != x ? x : static_cast<T>((T(0) < x) - (x < T(0)));
    });
  };
  auto classify = [&](const char* name, auto f) {  // a bool per element, from any real dtype
    k[name] = [f](KernelContext& c, const Args& a) {
      RunTensor &in = c.tensor(a[0]), &out = c.tensor(a[1]);
      if (!c.resize(out, in.sizes)) return false;
      elementwise<double>(out, {&in}, [f](const std::vector<double>& v) { return f(v[0]) ? 1.0 : 0.0; });
      return true;
    };
  };
  classify("aten::isnan.out", [](double x) { return std::isnan(x); });
  classify("aten::isinf.out", [](double x) { return std::isinf(x); });
}

/// Activations and clamps.
void addActivationAndClampKernels(KernelTable& k) {
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
  // elu (self, alpha, scale, input_scale, out): x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale,
  // in the input's floating type.
  k["aten::elu.out"] = [](KernelContext& c, const Args& a) {
    if (!isFloating(c.tensor(a[0]).dtype)) return c.fail("elu of a tensor that is not floating point");
    const double alpha = c.scalar(a[1]), scale = c.scalar(a[2]), inputScale = c.scalar(a[3]);
    return floatUnary(c, a[0], a[4], [=](auto x) {
      using T = decltype(x);
      const T negcoef = static_cast<T>(alpha) * static_cast<T>(scale);
      return x <= T(0) ? std::expm1(x * static_cast<T>(inputScale)) * negcoef : x * static_cast<T>(scale);
    });
  };
  k["aten::leaky_relu.out"] = [](KernelContext& c, const Args& a) {  // (self, negative_slope, out)
    if (!isFloating(c.tensor(a[0]).dtype)) return c.fail("leaky_relu of a tensor that is not floating point");
    const double slope = c.scalar(a[1]);
    return floatUnary(c, a[0], a[2], [=](auto x) { return x >= decltype(x)(0) ? x : x * static_cast<decltype(x)>(slope); });
  };
  // clamp.Tensor (self, min?, max?, out): bounds broadcast; NaN in any operand wins.
  k["aten::clamp.Tensor_out"] = [](KernelContext& c, const Args& a) {
    const bool hasLo = !c.isNone(a[1]), hasHi = !c.isNone(a[2]);
    if (!hasLo && !hasHi) return c.fail("clamp with neither min nor max");
    RunTensor &x = c.tensor(a[0]), &out = c.tensor(a[3]);
    const RunTensor& lo = hasLo ? c.tensor(a[1]) : x;
    const RunTensor& hi = hasHi ? c.tensor(a[2]) : x;
    std::vector<int64_t> sizes;
    if (!broadcastSizes(c, {&x, &lo, &hi}, sizes) || !c.resize(out, sizes)) return false;
    withComputeType(out.dtype, [&]<typename T>() {
      using U = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
      elementwise<U>(out, {&x, &lo, &hi}, [=](const std::vector<U>& v) {
        U r = v[0];
        if (hasLo) r = r != r ? r : (v[1] != v[1] ? v[1] : std::max(r, v[1]));
        if (hasHi) r = r != r ? r : (v[2] != v[2] ? v[2] : std::min(r, v[2]));
        return r;
      });
    });
    return true;
  };
}

/// where, per-tensor quantization, fills and ranges.
void addWhereQuantizeAndFillKernels(KernelTable& k) {
  k["aten::where.self_out"] = whereOut;
  k["quantized_decomposed::quantize_per_tensor.out"] = quantizePerTensor;
  k["quantized_decomposed::dequantize_per_tensor.out"] = dequantizePerTensor;
  k["quantized_decomposed::quantize_per_tensor.Tensor_out"] = [](KernelContext& c, const Args& a) {
    double scale = 0;
    int64_t zp = 0;
    return tensorQParams(c, a[1], a[2], scale, zp) &&
           quantizeInto(c, c.tensor(a[0]), c.tensor(singleOut(a)), scale, zp, c.integer(a[3]), c.integer(a[4]));
  };
  k["quantized_decomposed::dequantize_per_tensor.Tensor_out"] = [](KernelContext& c, const Args& a) {
    double scale = 0;
    int64_t zp = 0;
    return tensorQParams(c, a[1], a[2], scale, zp) && dequantizeInto(c, c.tensor(a[0]), c.tensor(singleOut(a)), scale, zp);
  };
  k["quantized_decomposed::dequantize_per_channel.out"] = dequantizePerChannel;
  k["quantized_decomposed::choose_qparams.Tensor_out"] = chooseQParams;
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
    int64_t n = integerFrom<int64_t>(std::ceil((end - start) / step));
    if (!c.resize(out, {std::max<int64_t>(n, 0)})) return false;
    for (int64_t i = 0; i < n; ++i) storeAs<double>(out, static_cast<uint64_t>(i), start + static_cast<double>(i) * step);
    return true;
  };
}

}  // namespace

void addElementwiseKernels(KernelTable& k) {
  addArithmeticKernels(k);
  addDivisionKernels(k);
  addPowerAndExtremaKernels(k);
  addComparisonAndLogicalKernels(k);
  addFunctionKernels(k);
  addActivationAndClampKernels(k);
  addWhereQuantizeAndFillKernels(k);
}

}  // namespace lstudio::run::kernels
