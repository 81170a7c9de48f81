// Values while a method runs: tensors with their current shape and bytes, scalars, lists.
// Shared by the interpreter and its kernels (engine/run/Interpreter.h is the entry point).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/ir/ScalarType.h"

namespace lstudio::run {

/// A tensor during a run. Its storage is a planned slot in an arena, a constant's bytes, or
/// a buffer the interpreter owns; `capacity` is what that storage holds, so a kernel that
/// resizes its output past it fails instead of writing over a neighbour.
struct RunTensor {
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dimOrder;  ///< outermost first; empty or {0..n-1}: contiguous
  uint8_t* data = nullptr;
  uint64_t capacity = 0;

  uint64_t numel() const;
  uint64_t nbytes() const { return numel() * elementSize(dtype); }
  bool contiguous() const;
  /// Strides in elements for the current sizes and dim order.
  std::vector<int64_t> strides() const;
};

/// A value during a run; which members hold it follows `kind` as in the IR's Value.
struct RunValue {
  ValueKind kind = ValueKind::None;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  RunTensor t;
  std::vector<ValueId> items;   ///< IntList, TensorList, OptionalTensorList (kNoValue: None)
  std::vector<double> doubles;  ///< DoubleList
  std::vector<uint8_t> bools;   ///< BoolList
};

/// `v` as the integer type To, converted as x86-64 compilers convert it, which is what
/// ExecuTorch's runtime (and PyTorch) give: NaN or a value outside int32's or int64's range
/// becomes that type's smallest value; the narrower types take int32's result, wrapped.
/// C++ leaves such conversions undefined, and a program's values are untrusted input.
template <typename To>
To integerFrom(double v) {
  auto int64 = [](double x) {  // cvttsd2si, 64-bit
    return x >= -0x1p63 && x < 0x1p63 ? static_cast<int64_t>(x) : std::numeric_limits<int64_t>::min();
  };
  auto int32 = [](double x) {  // cvttsd2si, 32-bit
    return x > -0x1p31 - 1 && x < 0x1p31 ? static_cast<int32_t>(x) : std::numeric_limits<int32_t>::min();
  };
  if constexpr (std::is_same_v<To, int64_t>) return int64(v);
  else if constexpr (std::is_same_v<To, uint64_t>) return v >= 0x1p63 && v < 0x1p64 ? static_cast<uint64_t>(v) : static_cast<uint64_t>(int64(v));
  else if constexpr (std::is_same_v<To, uint32_t>) return static_cast<uint32_t>(int64(v));
  else return static_cast<To>(int32(v));
}

/// `v` as To: integers from floating values by integerFrom, everything else as C++ converts.
template <typename To, typename From>
To convertElement(From v) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>)
    return integerFrom<To>(static_cast<double>(v));
  else
    return static_cast<To>(v);
}

/// Element i (flat, in memory order) of `t` as T.
template <typename T>
T loadAs(const RunTensor& t, uint64_t i);
/// Stores `v` as element i (flat, in memory order) of `t`, converted to its dtype.
template <typename T>
void storeAs(RunTensor& t, uint64_t i, T v);

/// FNV-1a-64 of bytes: the checksum `lowering-cli run` prints for each output.
uint64_t fnv1a64(const uint8_t* data, uint64_t size);

}  // namespace lstudio::run
