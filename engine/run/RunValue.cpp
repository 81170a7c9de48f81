#include "engine/run/RunValue.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lstudio::run {

namespace {

// float16 / bfloat16 conversions: engine/ir/ScalarType.h.

template <typename S>
S read(const uint8_t* p) {
  S v;
  std::memcpy(&v, p, sizeof(S));
  return v;
}
template <typename S>
void write(uint8_t* p, S v) {
  std::memcpy(p, &v, sizeof(S));
}

}  // namespace

uint64_t RunTensor::numel() const {
  uint64_t n = 1;
  for (int64_t s : sizes) n *= static_cast<uint64_t>(s < 0 ? 0 : s);
  return n;
}

bool RunTensor::contiguous() const {
  for (size_t i = 0; i < dimOrder.size(); ++i)
    if (dimOrder[i] != i) return false;
  return true;
}

std::vector<int64_t> RunTensor::strides() const {
  std::vector<int64_t> st(sizes.size(), 1);
  int64_t acc = 1;
  bool permutation = dimOrder.size() == sizes.size();
  std::vector<bool> seen(sizes.size(), false);
  for (size_t k = 0; permutation && k < dimOrder.size(); ++k) {
    permutation = dimOrder[k] < sizes.size() && !seen[dimOrder[k]];
    if (permutation) seen[dimOrder[k]] = true;
  }
  if (permutation) {  // else (not a permutation of the dimensions): contiguous
    for (size_t k = sizes.size(); k-- > 0;) {
      st[dimOrder[k]] = acc;
      acc *= std::max<int64_t>(sizes[dimOrder[k]], 1);
    }
  } else {
    for (size_t d = sizes.size(); d-- > 0;) {
      st[d] = acc;
      acc *= std::max<int64_t>(sizes[d], 1);
    }
  }
  return st;
}

template <typename T>
T loadAs(const RunTensor& t, uint64_t i) {
  const uint8_t* p = t.data + i * elementSize(t.dtype);
  switch (t.dtype) {
    case ScalarType::Byte: return convertElement<T>(read<uint8_t>(p));
    case ScalarType::Char: return convertElement<T>(read<int8_t>(p));
    case ScalarType::Short: return convertElement<T>(read<int16_t>(p));
    case ScalarType::Int: return convertElement<T>(read<int32_t>(p));
    case ScalarType::Long: return convertElement<T>(read<int64_t>(p));
    case ScalarType::Half: return convertElement<T>(halfToFloat(read<uint16_t>(p)));
    case ScalarType::Float: return convertElement<T>(read<float>(p));
    case ScalarType::Double: return convertElement<T>(read<double>(p));
    case ScalarType::Bool: return static_cast<T>(read<uint8_t>(p) != 0);
    case ScalarType::BFloat16: return convertElement<T>(bfloat16ToFloat(read<uint16_t>(p)));
    case ScalarType::UInt16: return convertElement<T>(read<uint16_t>(p));
    case ScalarType::UInt32: return convertElement<T>(read<uint32_t>(p));
    case ScalarType::UInt64: return convertElement<T>(read<uint64_t>(p));
    default: return T{};
  }
}

template <typename T>
void storeAs(RunTensor& t, uint64_t i, T v) {
  uint8_t* p = t.data + i * elementSize(t.dtype);
  switch (t.dtype) {
    case ScalarType::Byte: write(p, convertElement<uint8_t>(v)); break;
    case ScalarType::Char: write(p, convertElement<int8_t>(v)); break;
    case ScalarType::Short: write(p, convertElement<int16_t>(v)); break;
    case ScalarType::Int: write(p, convertElement<int32_t>(v)); break;
    case ScalarType::Long: write(p, convertElement<int64_t>(v)); break;
    case ScalarType::Half: write(p, floatToHalf(static_cast<float>(v))); break;
    case ScalarType::Float: write(p, static_cast<float>(v)); break;
    case ScalarType::Double: write(p, static_cast<double>(v)); break;
    case ScalarType::Bool: write(p, static_cast<uint8_t>(v != T{} ? 1 : 0)); break;
    case ScalarType::BFloat16: write(p, floatToBFloat16(static_cast<float>(v))); break;
    case ScalarType::UInt16: write(p, convertElement<uint16_t>(v)); break;
    case ScalarType::UInt32: write(p, convertElement<uint32_t>(v)); break;
    case ScalarType::UInt64: write(p, convertElement<uint64_t>(v)); break;
    default: break;
  }
}

template float loadAs<float>(const RunTensor&, uint64_t);
template double loadAs<double>(const RunTensor&, uint64_t);
template int64_t loadAs<int64_t>(const RunTensor&, uint64_t);
template bool loadAs<bool>(const RunTensor&, uint64_t);
template void storeAs<float>(RunTensor&, uint64_t, float);
template void storeAs<double>(RunTensor&, uint64_t, double);
template void storeAs<int64_t>(RunTensor&, uint64_t, int64_t);
template void storeAs<bool>(RunTensor&, uint64_t, bool);

uint64_t fnv1a64(const uint8_t* data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace lstudio::run
