// Reads zip archives (the .pt2 container, torch.save files, ETRecords) from a
// memory-mapped file. Stored (uncompressed) records are referenced in place;
// compressed ones can be inflated into memory up to a size cap.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

struct ZipEntry {
  std::string name;
  uint64_t dataOffset = 0;      ///< absolute offset of the record's data in the mapped file
  uint64_t size = 0;            ///< uncompressed bytes
  uint64_t compressedSize = 0;
  bool stored = true;           ///< method 0: bytes usable in place
  uint32_t crc = 0;
};

class ZipArchive {
 public:
  /// Reads the central directory of the zip that occupies [offset, offset+size)
  /// of `file` (the whole file by default). Nested archives (a torch.save zip
  /// stored inside a .pt2) are opened on their span of the same mapping.
  static Result<ZipArchive> open(std::shared_ptr<const MappedFile> file, uint64_t offset = 0,
                                 uint64_t size = UINT64_MAX, std::string displayName = {});

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  /// Entries whose name ends with `suffix` (e.g. "/data.pkl").
  std::vector<const ZipEntry*> findSuffix(std::string_view suffix) const;

  /// The bytes of a stored record, in place. Compressed records are an error.
  Result<Bytes> bytes(const ZipEntry& e) const;
  /// The record's bytes as a string (inflating compressed records); a record
  /// larger than `maxSize` is an error, whatever its header claims.
  Result<std::string> read(const ZipEntry& e, uint64_t maxSize) const;

  const std::string& name() const { return name_; }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  uint64_t offset_ = 0, size_ = 0;
  std::string name_;
  std::vector<ZipEntry> entries_;
};

}  // namespace lstudio
