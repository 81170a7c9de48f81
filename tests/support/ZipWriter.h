// Writes small zip archives for tests (synthetic .pt2 files and torch.save
// blobs), through minizip. Records are stored uncompressed unless asked.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lstudio::test {

struct ZipRecord {
  std::string name;
  std::string data;
  bool deflate = false;
  uint64_t fillSize = 0;  ///< when > 0: write this many pattern bytes instead of `data` (big weights)
};

/// Writes `records` to `path`; false on failure.
bool writeZip(const std::string& path, const std::vector<ZipRecord>& records);

/// The whole archive as bytes (written through a temporary file).
std::string zipBytes(const std::vector<ZipRecord>& records);

}  // namespace lstudio::test
