// Writes a FilePlan: its head, then the segment bytes streamed from the IR's mapped files
// in chunks (copied file to file by the kernel where it can), zeros in between, into
// memory or into a temporary file that is renamed into place once every output is
// written. Private to the writers (engine/formats/PteWriter.cpp; Pt2Writer.cpp
// takes MappedRanges to copy weights file to file).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/pte/FileLayout.h"
#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::pte {

inline constexpr uint64_t kChunk = 8ull << 20;  // bytes per write() when streaming weights

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status write(const uint8_t* p, uint64_t n) = 0;
  /// Appends `n` bytes of file `fd` from `offset` without passing them through
  /// this process (copy_file_range). False when the sink or the file system
  /// cannot, before anything was copied: the caller writes them instead.
  virtual Result<bool> copyFrom(int fd, uint64_t offset, uint64_t n) { return false; }
  Status zeros(uint64_t n) {
    static const uint8_t kZeros[4096] = {};
    while (n > 0) {
      uint64_t k = std::min<uint64_t>(n, sizeof kZeros);
      if (auto s = write(kZeros, k); !s) return s;
      n -= k;
    }
    return Ok{};
  }
  uint64_t written() const { return written_; }

 protected:
  uint64_t written_ = 0;
};

class StringSink : public Sink {
 public:
  Status write(const uint8_t* p, uint64_t n) override {
    out.append(reinterpret_cast<const char*>(p), n);
    written_ += n;
    return Ok{};
  }
  std::string out;
};

/// A temporary file beside `path`, renamed over it by commit(); removed if
/// never committed.
class TempFileSink : public Sink {
 public:
  /// `faultBudget`: bytes this export may still write before the test hook
  /// kills the process (faultAfterBytes()); shared by the files of one export.
  TempFileSink(std::string path, uint64_t* faultBudget) : path_(std::move(path)), faultBudget_(faultBudget) {}
  ~TempFileSink() override;
  TempFileSink(const TempFileSink&) = delete;
  TempFileSink& operator=(const TempFileSink&) = delete;

  Status open();
  Status write(const uint8_t* p, uint64_t n) override;
  Result<bool> copyFrom(int fd, uint64_t offset, uint64_t n) override;
  void setKernelCopy(bool on) { kernelCopy_ = on; }
  /// Flushes and closes the temporary file.
  Status finish();
  Status commit();
  const std::string& path() const { return path_; }

 private:
  Error ioError(const char* what, std::optional<uint64_t> at = std::nullopt) const;
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
  bool kernelCopy_ = true;
  uint64_t* faultBudget_;
};

/// The file mappings (not in-memory copies) a program's bytes live in.
/// Streaming weights out of a mapping makes its pages resident; once written
/// they are dropped from the process again (the page cache keeps them, a
/// later read faults them back in), so peak memory does not grow with the
/// weights' size.
class MappedRanges {
 public:
  explicit MappedRanges(const Program& p);
  MappedRanges() = default;
  /// The open file and offset `n` bytes at `p` come from, when they lie in one mapping.
  std::optional<std::pair<int, uint64_t>> source(const uint8_t* p, uint64_t n) const;
  /// After a chunk is written: its whole pages leave the resident set.
  void release(const uint8_t* p, uint64_t n) const;

 private:
  void add(const MappedFile* f);
  struct Range {
    const uint8_t* lo;
    const uint8_t* hi;
    int fd;
  };
  std::vector<Range> ranges_;
};

/// Reports bytes written across all files of one writePte call; false from
/// the caller's callback cancels.
struct Progress {
  const std::function<bool(uint64_t, uint64_t)>* callback = nullptr;
  uint64_t before = 0;  ///< bytes of the files already written
  uint64_t total = 0;
  bool report(uint64_t inFile) const { return !callback || !*callback || (*callback)(before + inFile, total); }
};

/// Writes `f` to `out`: bytes that lie in `mapped` files are copied by the kernel where
/// it can, the rest written in chunks; `progress` is told after each chunk.
Status streamFile(const FilePlan& f, Sink& out, const MappedRanges& mapped = {}, const Progress& progress = {});

}  // namespace lstudio::pte
