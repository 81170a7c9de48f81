// The byte layout of a file the .pte writer writes, .pte and .ptd alike: a head (the
// flatbuffer with its header) followed by data segments, each aligned, identical blobs
// sharing one. Private to the .pte writer (engine/formats/PteWriter.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/ir/Ir.h"

namespace lstudio::pte {

inline uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

inline bool sameBytes(const Bytes& a, const Bytes& b) {
  if (a.size != b.size) return false;
  if (a.size == 0 || a.data == b.data) return true;
  return std::memcmp(a.data, b.data, a.size) == 0;
}

inline void putLe32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void putLe64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// Distinct byte blobs, compared by content (identical blobs share an entry,
/// as ExecuTorch's serializer deduplicates by hash).
class BlobPool {
 public:
  /// Index of a blob with the same bytes, or of `b` newly added (`added` says which).
  uint32_t add(const Bytes& b, bool* added = nullptr) {
    auto& bucket = bySize_[b.size];
    for (uint32_t i : bucket)
      if (sameBytes(blobs_[i], b)) {
        if (added) *added = false;
        return i;
      }
    uint32_t i = static_cast<uint32_t>(blobs_.size());
    blobs_.push_back(b);
    bucket.push_back(i);
    if (added) *added = true;
    return i;
  }
  const std::vector<Bytes>& blobs() const { return blobs_; }

 private:
  std::vector<Bytes> blobs_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> bySize_;
};

/// One data segment after the flatbuffer: its parts at offsets inside it.
struct SegmentPlan {
  uint64_t size = 0;
  std::vector<std::pair<uint64_t, Bytes>> parts;
};

/// A whole output file: `head` (flatbuffer with its header) then byte
/// ranges streamed from the IR at absolute offsets, zeros in between.
struct FilePlan {
  std::string head;
  std::vector<std::pair<uint64_t, Bytes>> pieces;  // sorted by offset
  uint64_t size = 0;
};

/// Lays segments out after `base`, each aligned to `alignment` (offsets are
/// relative to the base, as both formats store them). Returns the segment
/// data size (end of the last segment).
inline uint64_t layOutSegments(const std::vector<SegmentPlan>& segs, uint64_t alignment,
                               std::vector<uint64_t>& offsets) {
  uint64_t end = 0;
  offsets.clear();
  for (const auto& s : segs) {
    uint64_t off = alignUp(end, alignment);
    offsets.push_back(off);
    end = off + s.size;
  }
  return end;
}

inline void addPieces(FilePlan& f, const std::vector<SegmentPlan>& segs, const std::vector<uint64_t>& offsets,
                      uint64_t base) {
  for (size_t i = 0; i < segs.size(); ++i)
    for (const auto& [off, b] : segs[i].parts)
      if (b.size) f.pieces.emplace_back(base + offsets[i] + off, b);
}

/// Flatbuffer bytes with a header inserted after the root offset and file
/// identifier; the root offset grows by the header's length.
inline std::string insertHeader(const uint8_t* fbData, size_t fbSize, const std::string& header) {
  std::string out;
  out.reserve(fbSize + header.size());
  uint32_t root = 0;
  std::memcpy(&root, fbData, 4);
  putLe32(out, root + static_cast<uint32_t>(header.size()));
  out.append(reinterpret_cast<const char*>(fbData) + 4, 4);
  out += header;
  out.append(reinterpret_cast<const char*>(fbData) + 8, fbSize - 8);
  return out;
}

}  // namespace lstudio::pte
