#include "engine/run/Expected.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/run/RunValue.h"

namespace lstudio::run {
namespace {

/// A float's bits mapped to integers that count up with the value (negative values
/// mirrored), so that the distance between two floats is the number of floats between them.
int64_t orderedBits(float x) {
  int32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b < 0 ? int64_t(INT32_MIN) - b : b;
}
int64_t orderedBits(double x) {
  int64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b < 0 ? INT64_MIN - b : b;
}

/// The float16 / bfloat16 value nearest to `x`, as its 16 bits read as an ordered integer.
int64_t ordered16(double x, ScalarType t) {
  RunTensor one;
  uint16_t bits = 0;
  one.dtype = t;
  one.sizes = {1};
  one.data = reinterpret_cast<uint8_t*>(&bits);
  one.capacity = sizeof bits;
  storeAs<double>(one, 0, x);
  const int32_t s = static_cast<int16_t>(bits);
  return s < 0 ? int64_t(INT16_MIN) - s : s;
}

double ulps(double a, double b, ScalarType t) {
  switch (t) {
    case ScalarType::Float: return std::fabs(double(orderedBits(float(a)) - orderedBits(float(b))));
    case ScalarType::Double: {
      const int64_t x = orderedBits(a), y = orderedBits(b);
      // Both are ordered within int64; their difference may not be, so it is taken in double.
      return std::fabs(double(x) - double(y));
    }
    case ScalarType::Half:
    case ScalarType::BFloat16: return std::fabs(double(ordered16(a, t) - ordered16(b, t)));
    default: return std::fabs(a - b);
  }
}

/// The value as the output's dtype holds it (the expected array may be float64).
double atDtype(double x, ScalarType t) {
  if (t == ScalarType::Float) return double(float(x));
  return x;
}

}  // namespace

ExpectedDifference differenceFromExpected(const HostValue& got, const HostValue& expected) {
  ExpectedDifference d;
  const double inf = std::numeric_limits<double>::infinity();
  if (got.kind != ValueKind::Tensor) {
    if (expected.kind == ValueKind::Tensor && expected.sizes.empty() && expected.bytes.size() >= elementSize(expected.dtype)) {
      RunTensor e;
      e.dtype = expected.dtype;
      e.data = const_cast<uint8_t*>(expected.bytes.data());
      const double x = loadAs<double>(e, 0);
      d.maxAbs = x == got.number ? 0 : std::fabs(x - got.number);
      d.maxUlp = d.maxAbs;
      return d;
    }
    d.mismatch = "the output is a number; the expected value is not a 0-d array";
    return d;
  }
  if (expected.kind != ValueKind::Tensor) return d.mismatch = "the expected value is not an array", d;
  if (got.sizes != expected.sizes) {
    auto text = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
      return out + "]";
    };
    d.mismatch = "shape " + text(expected.sizes) + " expected, the output is " + text(got.sizes);
    return d;
  }
  RunTensor g, e;
  g.dtype = got.dtype;
  g.sizes = got.sizes;
  g.data = const_cast<uint8_t*>(got.bytes.data());
  e.dtype = expected.dtype;
  e.sizes = expected.sizes;
  e.data = const_cast<uint8_t*>(expected.bytes.data());
  if (got.bytes.size() < g.nbytes() || expected.bytes.size() < e.nbytes())
    return d.mismatch = "fewer bytes than the shape needs", d;
  for (uint64_t i = 0, n = g.numel(); i < n; ++i) {
    const double x = loadAs<double>(g, i), y = atDtype(loadAs<double>(e, i), got.dtype);
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
      d.maxAbs = d.maxUlp = inf;
      continue;
    }
    d.maxAbs = std::max(d.maxAbs, std::fabs(x - y));
    d.maxUlp = std::max(d.maxUlp, ulps(x, y, got.dtype));
  }
  return d;
}

GapOrigin originOfGap(const RunResult& run, const RunResult& reference, const std::vector<HostValue>& expected,
                      double tolerance) {
  GapOrigin g;
  if (reference.outputs.size() != expected.size()) g.referenceMaxAbs = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < expected.size() && i < reference.outputs.size(); ++i) {
    const ExpectedDifference d = differenceFromExpected(reference.outputs[i], expected[i]);
    g.referenceMaxAbs = std::max(g.referenceMaxAbs, d.mismatch.empty() ? d.maxAbs : std::numeric_limits<double>::infinity());
  }
  g.fromLowering = g.referenceMaxAbs <= tolerance;
  if (g.fromLowering) g.firstNode = firstDifferingNode(run, reference, tolerance);
  return g;
}

}  // namespace lstudio::run
