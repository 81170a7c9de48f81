// ETDumps as ExecuTorch's runtime writes them, built for tests with the schema's generated
// API (engine/formats/schema/etdump.fbs): each field set on purpose.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"

namespace lstudio {

/// A logged float tensor: its sizes and strides, and where its bytes start in the debug buffer.
struct LoggedTensor {
  int32_t instruction;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
};

/// An ETDump of method `m`: a "Default" block with the load, then one "Execute" block per
/// entry of `ticksPerExecution` (instruction i's call takes that many ticks times i + 1), with
/// `logged` tensors in the first execution. `rename` replaces instruction 1's kernel name.
std::vector<uint8_t> buildEtdump(const Method& m, const std::vector<uint64_t>& ticksPerExecution,
                                 const std::vector<LoggedTensor>& logged, const std::string& rename = {});

}  // namespace lstudio
