// Reads a verified Program flatbuffer into the IR, enforcing the format's
// semantic rules: indices in range, byte ranges inside their segments, sizes
// that do not overflow. Errors name the field and its offset in the file.
// Private to the .pte reader (engine/formats/PteReader.cpp). The program-wide
// tables (segments, constants, delegate data, named data) and tensors are
// read in ProgramReader.cpp, the execution plans (values, instructions) in
// MethodReader.cpp.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/schema/program_generated.h"
#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::pte {
namespace fb = executorch_flatbuffer;

class ProgramReader {
 public:
  /// `fbp` is the verified Program at `base`, `baseOffset` bytes into the
  /// backing file, `span` bytes long with its segments.
  ProgramReader(Program& out, const fb::Program* fbp, const uint8_t* base, uint64_t baseOffset, uint64_t span)
      : p_(out), fbp_(fbp), base_(base), baseOffset_(baseOffset), programSpan_(span) {}

  Status build();

 private:
  uint64_t fileOffsetOf(const void* ptr) const {
    return baseOffset_ + static_cast<uint64_t>(static_cast<const uint8_t*>(ptr) - base_);
  }
  Error err(ErrorCode code, const void* at, std::string what, std::string expected = {}, std::string found = {}) const {
    return Error{code, p_.path, at ? std::optional<uint64_t>(fileOffsetOf(at)) : std::nullopt, std::move(what),
                 std::move(expected), std::move(found)};
  }
  /// flatbuffers' verifier checks a vector's length field, not that 8-byte
  /// elements are 8-byte aligned; reading misaligned ones is undefined.
  template <class T>
  Status aligned(const flatbuffers::Vector<T>* v, const std::string& what) const {
    if (v && v->size() > 0 && (reinterpret_cast<uintptr_t>(v->Data()) % alignof(T)) != 0)
      return err(ErrorCode::Verification, v->Data(), what + " elements",
                 std::to_string(alignof(T)) + "-byte aligned", "a misaligned vector");
    return Ok{};
  }
  /// A DeviceType and device index as stored (extra_tensor_info, non_const_buffer_device):
  /// flatbuffers does not check that an enum holds one of its values.
  Result<Device> readDevice(const void* at, int type, int index, const std::string& what) const {
    if (type != static_cast<int>(DeviceType::Cpu) && type != static_cast<int>(DeviceType::Cuda))
      return err(ErrorCode::Invalid, at, what + ".device_type", "CPU (0) or CUDA (1)", std::to_string(type));
    if (index < 0) return err(ErrorCode::Invalid, at, what + ".device_index", ">= 0", std::to_string(index));
    return Device{static_cast<DeviceType>(type), static_cast<int8_t>(index)};
  }
  Bytes bytesAt(uint64_t absOffset, uint64_t size) const {
    return Bytes{p_.backing->data() + absOffset, size, absOffset};
  }

  // ProgramReader.cpp: the program-wide tables, then tensors that point into them.
  Status readSegments();
  Status readConstants();
  Status readDelegateData();
  Status readNamedData();
  Status readTensor(const fb::Tensor* t, const Method& m, const std::string& where, TensorSpec& spec);
  Status readMutableInitial(const fb::Tensor* t, const std::string& where, TensorSpec& spec, uint64_t nbytes);

  // MethodReader.cpp: one execution plan.
  Status readMethod(const fb::ExecutionPlan* plan, uint32_t index, Method& m);
  Status checkIndex(int64_t idx, size_t count, const void* at, const std::string& what, bool allowNone = false);
  Status readValues(const fb::ExecutionPlan* plan, const std::string& mname, Method& m);
  Status readChains(const fb::ExecutionPlan* plan, const std::string& mname, Method& m);
  /// One instruction of a chain of `chainSize` as a node: what it runs, what it reads and writes.
  Status readInstruction(const fb::ExecutionPlan* plan, const fb::Instruction* in, uint32_t chainSize, const std::string& w,
                         const Method& m, Node& n);

  Program& p_;
  const fb::Program* fbp_;
  const uint8_t* base_;   // start of the program's bytes
  uint64_t baseOffset_;   // its offset in the backing file
  uint64_t programSpan_;  // bytes of the program including segments
  std::vector<uint64_t> constantLimit_;  // bytes available from each constant's start
};

}  // namespace lstudio::pte
