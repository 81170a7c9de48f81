// Which bytes of a .pte's Program flatbuffer belong to what: per method its
// values, instructions, stack traces, operators and delegate tables, then the
// program-wide tables. For the size breakdown; the flatbuffer is verified
// again before it is walked, so any file (or none) is safe to pass.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/support/MappedFile.h"

namespace lstudio::pte {

struct TableBytes {
  uint64_t offset = 0;  ///< in the file
  uint64_t size = 0;
  std::string owner;    ///< "forward: values", "program: segments and named data"
};

/// The ranges of the Program flatbuffer at `base` (`programSize` bytes) by
/// owner; tables, vectors, strings and vtables, not the bytes between them.
/// Empty when the flatbuffer does not verify.
std::vector<TableBytes> programTableBytes(const MappedFile& file, uint64_t base, uint64_t programSize);

}  // namespace lstudio::pte
