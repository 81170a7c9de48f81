// Writes a zip archive of stored (uncompressed) records straight from memory.
// The bytes are exactly those minizip 1.1 writes for zipOpen64, one
// zipOpenNewFileInZip64 per record (method 0, level 0, a zero zip_fileinfo,
// zip64 for records of 0xffffffff bytes or more) and zipClose(z, nullptr),
// which is how .pt2 archives were written before (except past 65,534
// records, where zip64 end records now carry the count); but large records go to
// the file in big write() calls from their own memory (or file to file, by
// the kernel, when they come from a mapped file), their CRC-32 is
// computed on a second thread meanwhile, and the kernel starts writing the
// file back to disk while later records are still being written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/support/Error.h"

namespace lstudio {

struct StoredZipRecord {
  std::string name;               ///< full name inside the archive
  const uint8_t* data = nullptr;  ///< may be null when size is 0
  uint64_t size = 0;
  /// When the bytes at `data` are a mapping of an open file: that file and
  /// their offset in it. They are then read and copied through the file
  /// (copy_file_range, pread for the CRC), never through the mapping, so
  /// that writing gigabytes of weights leaves the resident set flat.
  int sourceFd = -1;
  uint64_t sourceOffset = 0;
};

/// Writes `records`, in order, and the central directory to `fd`, an open,
/// empty file (`path` names it in errors). Neither syncs nor closes `fd`.
Status writeStoredZip(int fd, const std::string& path, const std::vector<StoredZipRecord>& records);

}  // namespace lstudio
