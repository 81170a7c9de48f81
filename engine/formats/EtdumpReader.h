// Reads an ETDump (.etdp): the record ExecuTorch's runtime writes of loading and running a
// program (devtools/etdump, flatbuffer "ED00" with a 4-byte size prefix). Every field is
// read; engine/inspect/EtdumpReport.h links the events to a program's instructions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/ir/ScalarType.h"
#include "engine/support/Error.h"
#include "engine/support/MappedFile.h"

namespace lstudio {

/// A tensor the runtime logged; its bytes (the tensor's storage, `strides` apart) lie in
/// the debug buffer at `offset`.
struct EtdumpTensor {
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

struct EtdumpValue {
  enum class Kind : uint8_t { Null, Int, Bool, Float, Double, Tensor, TensorList, String };
  Kind kind = Kind::Null;
  int64_t integer = 0;
  double number = 0;  ///< a Float or Double
  bool flag = false;
  std::vector<EtdumpTensor> tensors;  ///< one for a Tensor, the items of a TensorList
  bool output = false;                ///< one of the method's outputs
};

/// A timed span in the runtime's ticks: an operator call ("native_call_addmm.out", and
/// "OPERATOR_CALL" around it), a delegate call or an event inside one, or a method step.
struct EtdumpProfileEvent {
  std::string name;
  int32_t chain = 0;
  int32_t instruction = -1;
  int32_t delegateDebugId = -1;
  std::string delegateDebugName;
  std::vector<uint8_t> delegateMetadata;
  uint64_t start = 0, end = 0;
  uint64_t duration() const { return end > start ? end - start : 0; }
};

/// A value the runtime logged: an instruction's output, a delegate's intermediate, or
/// (with `value.output`) one of the method's outputs.
struct EtdumpDebugEvent {
  uint64_t chain = 0;
  int32_t instruction = -1;
  EtdumpValue value;
  int32_t delegateDebugId = -1;
  std::string delegateDebugName;
  std::string name;
};

struct EtdumpAllocationEvent {
  int32_t allocator = 0;
  uint64_t size = 0;
};

using EtdumpEvent = std::variant<EtdumpProfileEvent, EtdumpAllocationEvent, EtdumpDebugEvent>;

/// A block of events: the runtime opens one while a method loads ("Default") and one per
/// execution ("Execute").
struct EtdumpBlock {
  std::string name;
  int32_t bundledInput = -1;
  std::vector<std::string> allocators;
  std::vector<EtdumpEvent> events;
};

struct Etdump {
  std::string path;
  uint32_t version = 0;
  std::vector<EtdumpBlock> blocks;
};

/// Opens, verifies and reads an ETDump. A wrong file is an error naming it, the offset and
/// what was expected (a program opened here is told to open as a program).
Result<Etdump> readEtdump(const std::string& path);
Result<Etdump> readEtdump(const MappedFile& file);

}  // namespace lstudio
