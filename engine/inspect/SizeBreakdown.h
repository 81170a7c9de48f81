// Where the bytes of a .pte or .ptd go: every byte of the file in exactly
// one part (program structure, constants, delegate payloads and what is
// inside them, named data and who reads it, mutable data, padding), so the
// parts add up to the file size. Offsets only: no constant byte is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/formats/PtdReader.h"
#include "engine/ir/Ir.h"

namespace lstudio {

struct SizeItem {
  std::string name;  ///< "layers.0.attention.wq.weight", "forward delegate 1 (XnnpackBackend)"
  uint64_t bytes = 0;
};

struct SizePart {
  std::string name;  ///< "constants (constant segment)", "XNNPACK constant data", "padding"
  uint64_t bytes = 0;
  std::vector<SizeItem> items;  ///< largest first
};

struct SizeBreakdown {
  std::string file;
  uint64_t fileBytes = 0;
  std::vector<SizePart> parts;  ///< largest first
  uint64_t total() const;
};

/// The breakdown of the file `program` was read from (a .pte or .bpte).
SizeBreakdown sizeBreakdown(const Program& program);
/// The breakdown of a data file.
SizeBreakdown sizeBreakdown(const DataFile& data);

/// Two breakdowns side by side (e.g. one program exported under two configs):
/// per part and per item the bytes of each and the difference, largest change first.
std::string sizeDiffText(const SizeBreakdown& a, const SizeBreakdown& b, size_t itemsShown = 5);
nlohmann::json sizeDiffJson(const SizeBreakdown& a, const SizeBreakdown& b);

/// Parts with their share, and the `itemsShown` largest items of each.
std::string sizeText(const SizeBreakdown& b, size_t itemsShown = 5);
nlohmann::json sizeJson(const SizeBreakdown& b);

}  // namespace lstudio
