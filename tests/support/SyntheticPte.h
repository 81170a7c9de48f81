// Writes small, hand-specified .pte files for tests and benchmarks: exact
// control over values, instructions, plans and constants, which real
// fixtures cannot give. Not the studio's exporter (that is the emitter and
// serializer); this only needs to produce valid files of the ET12 format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/ScalarType.h"

namespace lstudio::test {

struct SynthTensor {
  ScalarType dtype = ScalarType::Float;
  std::vector<int32_t> sizes;
  std::optional<std::pair<uint32_t, uint64_t>> slot;  ///< (mem_id, offset) when planned
  uint32_t constant = 0;  ///< 1-based index into SynthProgram::constantSizes; 0 = none
  std::string externalKey;  ///< non-empty: EXTERNAL tensor with this fqn
};

struct SynthKernel {
  std::string op = "aten::add";
  std::string overload = "out";
  std::vector<int32_t> args;
};

struct SynthProgram {
  std::string method = "forward";
  std::vector<SynthTensor> tensors;  ///< values 0..n-1
  std::vector<SynthKernel> kernels;
  std::vector<int32_t> inputs, outputs;
  std::vector<int64_t> arenas = {0};  ///< non_const_buffer_sizes
  std::vector<uint64_t> constantSizes;  ///< bytes of constants 1..n in the constant segment
  bool extendedHeader = true;
  uint64_t segmentAlignment = 128;
  uint64_t constantAlignment = 16;
};

/// Builds the whole file in memory.
std::vector<uint8_t> buildSyntheticPte(const SynthProgram& p);

/// Streams the file to `path` (constants are written in chunks, so the file
/// can be far larger than memory). Returns false and sets `error` on failure.
bool writeSyntheticPte(const std::string& path, const SynthProgram& p, std::string* error);

}  // namespace lstudio::test
