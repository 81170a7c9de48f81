// The first layers of reading a .pte: its size, the ET12 identifier, the
// optional eh00 extended header (program size, where the segments start) and
// full flatbuffer verification, which names the structure that fails.
// Private to the .pte reader (engine/formats/PteReader.cpp).
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"
#include "engine/support/MappedFile.h"

namespace lstudio::pte {

/// Limits for verifying a flatbuffer of `size` bytes (depth, tables, alignment).
flatbuffers::Verifier::Options verifierOptions(uint64_t size);

/// Layers 1 and 2 for the program at `base` in `file`, `span` bytes with its
/// segments: the size, the identifier and the eh00 header, into `facts`.
Status readContainerHeader(const MappedFile& file, uint64_t base, uint64_t span, ContainerFacts& facts);

/// Layer 3: the Program flatbuffer (facts.programSize bytes at `base`)
/// verified in full; when it fails, the error names the deepest failing structure.
Status verifyProgramTable(const MappedFile& file, uint64_t base, uint64_t programSize);

}  // namespace lstudio::pte
