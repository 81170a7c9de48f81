#include "engine/ir/ScalarType.h"

#include <cmath>
#include <cstring>

#include <array>

namespace lstudio {
namespace {

struct Info {
  std::string_view name;
  uint32_t size;  // 0: not a defined type
};

constexpr std::array<Info, 30> kInfo = {{
    {"uint8", 1}, {"int8", 1}, {"int16", 2}, {"int32", 4}, {"int64", 8}, {"float16", 2},
    {"float32", 4}, {"float64", 8}, {"complex32", 4}, {"complex64", 8}, {"complex128", 16},
    {"bool", 1}, {"qint8", 1}, {"quint8", 1}, {"qint32", 4}, {"bfloat16", 2}, {"quint4x2", 1},
    {"quint2x4", 1}, {"bits1x8", 1}, {"bits2x4", 1}, {"bits4x2", 1}, {"bits8", 1}, {"bits16", 2},
    {"float8_e5m2", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2fnuz", 1}, {"float8_e4m3fnuz", 1},
    {"uint16", 2}, {"uint32", 4}, {"uint64", 8},
}};

}  // namespace

bool isKnownScalarType(int raw) { return raw >= 0 && raw < static_cast<int>(kInfo.size()); }

uint32_t elementSize(ScalarType t) {
  int i = static_cast<int>(t);
  return isKnownScalarType(i) ? kInfo[i].size : 0;
}

std::string_view scalarTypeName(ScalarType t) {
  int i = static_cast<int>(t);
  return isKnownScalarType(i) ? kInfo[i].name : std::string_view("unknown");
}

std::optional<ScalarType> scalarTypeFromName(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<ScalarType>(i);
  if (name == "float") return ScalarType::Float;
  if (name == "double") return ScalarType::Double;
  if (name == "half") return ScalarType::Half;
  if (name == "long") return ScalarType::Long;
  if (name == "int") return ScalarType::Int;
  return std::nullopt;
}

bool isFloatingPoint(ScalarType t) {
  switch (t) {
    case ScalarType::Half: case ScalarType::Float: case ScalarType::Double: case ScalarType::ComplexHalf:
    case ScalarType::ComplexFloat: case ScalarType::ComplexDouble: case ScalarType::BFloat16:
    case ScalarType::Float8_e5m2: case ScalarType::Float8_e4m3fn: case ScalarType::Float8_e5m2fnuz:
    case ScalarType::Float8_e4m3fnuz:
      return true;
    default:
      return false;
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in float
    float f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (man << 13)) : (sign | ((exp - 15 + 127) << 23) | (man << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN, quiet
  float a = std::fabs(f);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past the largest half
  if (a < 6.103515625e-05f)  // below 2^-14: a subnormal half, a * 2^24 rounded (ties to even)
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)));
  uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7fffffu) >> 13)), rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | h);
}

uint16_t floatToBFloat16(float f) {  // NaN kept quiet
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace lstudio
