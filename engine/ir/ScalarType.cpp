#include "engine/ir/ScalarType.h"

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

}  // namespace lstudio
