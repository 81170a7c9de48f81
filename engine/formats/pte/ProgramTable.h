// Builds the Program table of a .pte, the flatbuffer the runtime reads: execution plans
// (values, instructions by chain, operators, delegates), the segment and subsegment
// tables and the named data, with bytes placed as the Planner (DataPlacement.h) decided.
// Private to the .pte writer (engine/formats/PteWriter.cpp).
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/formats/PteWriter.h"
#include "engine/formats/pte/DataPlacement.h"
#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::pte {

/// Builds and finishes the Program flatbuffer in `fbb` (segment offsets as laid out by
/// the caller). `filledDimOrders` counts the tensors written contiguous for want of a
/// dim order.
Status buildProgramTable(flatbuffers::FlatBufferBuilder& fbb, const Program& program, const PteWriteOptions& o,
                         const Planner& plan, const std::vector<uint64_t>& segmentOffsets, size_t& filledDimOrders);

}  // namespace lstudio::pte
