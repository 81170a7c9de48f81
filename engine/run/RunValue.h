// Values while a method runs: tensors with their current shape and bytes, scalars, lists.
// Shared by the interpreter and its kernels (engine/run/Interpreter.h is the entry point).
#pragma once

#include <cstdint>
#include <string>
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

/// Element i (flat, in memory order) of `t` as T.
template <typename T>
T loadAs(const RunTensor& t, uint64_t i);
/// Stores `v` as element i (flat, in memory order) of `t`, converted to its dtype.
template <typename T>
void storeAs(RunTensor& t, uint64_t i, T v);

/// FNV-1a-64 of bytes: the checksum `lowering-cli run` prints for each output.
uint64_t fnv1a64(const uint8_t* data, uint64_t size);

}  // namespace lstudio::run
