// A read-only memory-mapped file: the readers reference weights and blobs in
// place instead of copying them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/support/Error.h"

namespace lstudio {

class MappedFile {
 public:
  /// Maps the whole file read-only. An empty file maps to size() == 0.
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);
  /// Wraps bytes already in memory (tests, embedded programs); the bytes are copied once.
  static std::shared_ptr<const MappedFile> fromBytes(std::string path, const void* data, uint64_t size);
  /// Allocates `size` bytes (64-byte aligned) and lets `fill` write them once.
  static std::shared_ptr<const MappedFile> generated(std::string path, uint64_t size,
                                                     const std::function<void(uint8_t*)>& fill);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// True when the bytes are a mapping of the file (not a copy in memory).
  bool isMapped() const { return mapped_; }
  /// The mapped file, kept open so writers can copy from it in the kernel
  /// (copy_file_range) from the very inode that was mapped; -1 when not mapped.
  int fd() const { return fd_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  int fd_ = -1;
  struct FreeDeleter { void operator()(uint8_t* p) const; };
  std::unique_ptr<uint8_t, FreeDeleter> owned_;
};

}  // namespace lstudio
