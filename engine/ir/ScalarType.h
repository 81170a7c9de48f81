// ExecuTorch scalar types: names, element sizes, validity.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lstudio {

/// Numeric values are ExecuTorch's (and c10's); they are part of the file formats.
enum class ScalarType : int8_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11,
  QInt8 = 12, QUInt8 = 13, QInt32 = 14, BFloat16 = 15, QUInt4x2 = 16, QUInt2x4 = 17,
  Bits1x8 = 18, Bits2x4 = 19, Bits4x2 = 20, Bits8 = 21, Bits16 = 22,
  Float8_e5m2 = 23, Float8_e4m3fn = 24, Float8_e5m2fnuz = 25, Float8_e4m3fnuz = 26,
  UInt16 = 27, UInt32 = 28, UInt64 = 29,
};

/// True when `raw` names a scalar type the formats define.
bool isKnownScalarType(int raw);
/// Floating point (and complex) types: the ones that can require grad.
bool isFloatingPoint(ScalarType t);
/// Bytes per element (sub-byte packed types count as 1, as ExecuTorch does).
uint32_t elementSize(ScalarType t);
/// PyTorch-style short name: "float32", "int64", "bfloat16", ...
std::string_view scalarTypeName(ScalarType t);
/// Inverse of scalarTypeName; also accepts torch spellings like "torch.float32".
std::optional<ScalarType> scalarTypeFromName(std::string_view name);
/// A float16 / bfloat16 element widened to float32 (exact), and float32 narrowed to them,
/// rounding to nearest even as c10 does (by hand: clang 14, which builds the fuzz targets, has
/// no _Float16 on x86).
float halfToFloat(uint16_t h);
float bfloat16ToFloat(uint16_t b);
uint16_t floatToHalf(float f);
uint16_t floatToBFloat16(float f);

}  // namespace lstudio
