// Lays out one .ptd file of external tensors: the current FlatTensor generation (FT01)
// behind a 40-byte FH01 header padded to 48, one segment per distinct tensor, a
// tensor_layout on every entry that has one. Private to the .pte writer
// (engine/formats/PteWriter.cpp).
#pragma once

#include <vector>

#include "engine/formats/PteWriter.h"
#include "engine/formats/pte/DataPlacement.h"
#include "engine/formats/pte/FileLayout.h"

namespace lstudio::pte {

/// One .ptd: FlatTensor with an FH01 header, one segment per distinct tensor.
FilePlan planPtd(const std::vector<ExternalEntry>& entries, const PteWriteOptions& o);

}  // namespace lstudio::pte
