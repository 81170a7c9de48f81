#include "engine/formats/StoredZipWriter.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

namespace lstudio {
namespace {

constexpr uint64_t kMax32 = 0xffffffffu;      ///< from here on, zip64 fields (minizip compares with >=)
constexpr uint32_t kDosDate = 0x00200000;     ///< minizip's DOS date for an all-zero tm_zip
constexpr uint64_t kDirect = 1u << 20;        ///< records this large are written from their own memory
constexpr uint64_t kWriteChunk = 64u << 20;   ///< bytes per write() of a large record
constexpr uint64_t kWriteBack = 32u << 20;    ///< start the write-back of every this many bytes
constexpr uint64_t kBuffer = 4u << 20;        ///< headers and small records are gathered up to this
constexpr uint64_t kCrcChunk = 16u << 20;     ///< the CRC thread checks for cancellation this often

/// minizip's zip64local_putValue: `n` bytes little-endian, and all 0xff when
/// the value does not fit (its "data overflow" rule).
void put(std::string& out, uint64_t v, int n) {
  bool fits = n == 8 || (v >> (8 * n)) == 0;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>(fits ? (v >> (8 * i)) & 0xff : 0xff));
}

/// The file being written: small pieces gathered in a buffer, large ones
/// written in place; every kWriteBack bytes the kernel is asked to start
/// writing them back (sync_file_range), so that the final fsync finds
/// little left to do.
class Output {
 public:
  Output(int fd, const std::string& path) : fd_(fd), path_(path) { buf_.reserve(kBuffer); }

  uint64_t offset() const { return written_ + buf_.size(); }

  Status append(const void* p, uint64_t n) {
    if (n >= kDirect) {
      if (auto s = flush(); !s) return s;
      return writeAll(static_cast<const uint8_t*>(p), n);
    }
    buf_.append(static_cast<const char*>(p), n);
    return buf_.size() >= kBuffer ? flush() : Status(Ok{});
  }
  Status append(const std::string& s) { return append(s.data(), s.size()); }

  /// Appends a record's bytes: file to file when it names its source file,
  /// from memory otherwise.
  Status append(const StoredZipRecord& r) {
    if (r.sourceFd < 0 || r.size < kDirect) return append(r.data, r.size);
    if (auto s = flush(); !s) return s;
    off64_t in = static_cast<off64_t>(r.sourceOffset);
    for (uint64_t done = 0; done < r.size;) {
      size_t want = static_cast<size_t>(std::min(r.size - done, kWriteChunk));
      ssize_t w = kernelCopy_ ? ::copy_file_range(r.sourceFd, &in, fd_, nullptr, want, 0) : -1;
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        // Not between these files (another file system, an old kernel): read and write.
        kernelCopy_ = false;
        std::string chunk(want, '\0');
        ssize_t got = ::pread(r.sourceFd, chunk.data(), want, in);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return failure(written_, r.size - done, got < 0 ? std::strerror(errno) : "the source file is shorter");
        if (auto s = writeAll(reinterpret_cast<const uint8_t*>(chunk.data()), static_cast<uint64_t>(got)); !s) return s;
        in += got;
        done += static_cast<uint64_t>(got);
        continue;
      }
      done += static_cast<uint64_t>(w);
      written_ += static_cast<uint64_t>(w);
      startWriteBack();
    }
    return Ok{};
  }

  Status flush() {
    Status s = writeAll(reinterpret_cast<const uint8_t*>(buf_.data()), buf_.size());
    buf_.clear();
    return s;
  }

  /// Overwrites bytes already written (after flush()).
  Status patch(uint64_t at, const void* p, size_t n) {
    for (size_t done = 0; done < n;) {
      ssize_t w = ::pwrite(fd_, static_cast<const char*>(p) + done, n - done, static_cast<off_t>(at + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return failure(at + done, n - done, w < 0 ? std::strerror(errno) : "nothing written");
      done += static_cast<size_t>(w);
    }
    return Ok{};
  }

 private:
  Status writeAll(const uint8_t* p, uint64_t n) {
    for (uint64_t done = 0; done < n;) {
      size_t want = static_cast<size_t>(std::min(n - done, kWriteChunk));
      ssize_t w = ::write(fd_, p + done, want);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return failure(written_, n - done, w < 0 ? std::strerror(errno) : "nothing written");
      done += static_cast<uint64_t>(w);
      written_ += static_cast<uint64_t>(w);
      startWriteBack();
    }
    return Ok{};
  }

  void startWriteBack() {
    if (written_ - writeBackFrom_ < kWriteBack) return;
    // Best effort: the caller's fsync reports what this would.
    ::sync_file_range(fd_, static_cast<off_t>(writeBackFrom_), static_cast<off_t>(written_ - writeBackFrom_),
                      SYNC_FILE_RANGE_WRITE);
    writeBackFrom_ = written_;
  }

  Error failure(uint64_t at, uint64_t left, const char* why) const {
    return Error{ErrorCode::Io, path_, at, "cannot write the archive",
                 std::to_string(left) + " more byte" + (left == 1 ? "" : "s") + " written", why};
  }

  int fd_;
  const std::string& path_;
  std::string buf_;
  uint64_t written_ = 0;
  uint64_t writeBackFrom_ = 0;
  bool kernelCopy_ = true;
};

/// CRC-32 of every record, on a thread of its own (zlib's crc32 runs at
/// about twice the speed the page cache takes the bytes, so it finishes
/// before the writes do). Joined by wait() or, on failure, the destructor.
class CrcThread {
 public:
  explicit CrcThread(const std::vector<StoredZipRecord>& records)
      : crcs_(records.size()), thread_([this, &records] {
          std::string chunk;  // records read from their file, not their mapping
          for (size_t i = 0; i < records.size() && !stop_; ++i) {
            const StoredZipRecord& r = records[i];
            uLong crc = crc32_z(0, nullptr, 0);
            for (uint64_t done = 0; done < r.size && !stop_;) {
              uint64_t n = std::min(r.size - done, kCrcChunk);
              const uint8_t* p = r.data + done;
              if (r.sourceFd >= 0 && r.size >= kDirect) {
                chunk.resize(n);
                ssize_t got = ::pread(r.sourceFd, chunk.data(), n, static_cast<off_t>(r.sourceOffset + done));
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) {  // the write of the same bytes reports the error
                  failed_ = true;
                  return;
                }
                n = static_cast<uint64_t>(got);
                p = reinterpret_cast<const uint8_t*>(chunk.data());
              }
              crc = crc32_z(crc, p, static_cast<z_size_t>(n));
              done += n;
            }
            crcs_[i] = static_cast<uint32_t>(crc);
          }
        }) {}
  ~CrcThread() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<uint32_t>& wait() {
    thread_.join();
    return crcs_;
  }
  /// A source file could not be read back.
  bool failed() const { return failed_; }

 private:
  std::vector<uint32_t> crcs_;
  bool failed_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// A record's local header: stored, CRC-32 zero until patched, Zip64 sizes when it is 4 GiB or more.
std::string localHeader(const StoredZipRecord& r) {
  bool zip64 = r.size >= kMax32;
  std::string h;
  put(h, 0x04034b50, 4);
  put(h, zip64 ? 45 : 20, 2);  // version needed to extract
  put(h, 0, 2);                // flags
  put(h, 0, 2);                // method: stored
  put(h, kDosDate, 4);
  put(h, 0, 4);                         // CRC-32, patched below
  put(h, zip64 ? kMax32 : r.size, 4);   // compressed size
  put(h, zip64 ? kMax32 : r.size, 4);   // uncompressed size
  put(h, r.name.size(), 2);
  put(h, zip64 ? 20 : 0, 2);  // extra field length
  h += r.name;
  if (zip64) {  // Zip64 extended information: uncompressed, then compressed size
    put(h, 1, 2);
    put(h, 16, 2);
    put(h, r.size, 8);
    put(h, r.size, 8);
  }
  return h;
}

/// A record's central directory entry, for its local header at `at`.
void appendCentralEntry(std::string& cd, const StoredZipRecord& r, uint64_t at, uint32_t crc) {
  bool bigSize = r.size >= kMax32, bigOffset = at >= kMax32;
  uint64_t extra = (bigSize ? 16 : 0) + (bigOffset ? 8 : 0);
  put(cd, 0x02014b50, 4);
  put(cd, bigSize || bigOffset ? 45 : 0, 2);   // version made by (minizip's VERSIONMADEBY is 0)
  put(cd, bigSize || bigOffset ? 45 : 20, 2);  // version needed to extract
  put(cd, 0, 2);
  put(cd, 0, 2);
  put(cd, kDosDate, 4);
  put(cd, crc, 4);
  put(cd, bigSize ? kMax32 : r.size, 4);
  put(cd, bigSize ? kMax32 : r.size, 4);
  put(cd, r.name.size(), 2);
  put(cd, extra ? extra + 4 : 0, 2);
  put(cd, 0, 2);  // comment length
  put(cd, 0, 2);  // disk number
  put(cd, 0, 2);  // internal attributes
  put(cd, 0, 4);  // external attributes
  put(cd, bigOffset ? kMax32 : at, 4);
  cd += r.name;
  if (extra) {
    put(cd, 1, 2);
    put(cd, extra, 2);
    if (bigSize) put(cd, r.size, 8), put(cd, r.size, 8);
    if (bigOffset) put(cd, at, 8);
  }
}

/// The end records after a central directory of `cdSize` bytes at `cdAt` listing `n` records.
std::string endRecords(uint64_t cdAt, uint64_t cdSize, uint64_t n) {
  std::string end;
  // Zip64 end records when the central directory starts at 4 GiB or later
  // (as minizip 1.1 decides) and also when the record count does not fit the
  // plain end record's 16 bits (as zlib >= 1.2.6's minizip does; Debian's
  // 1.1 writes a saturated count there, and readers then miss records).
  if (cdAt >= kMax32 || n >= 0xffff) {
    uint64_t zip64EndAt = cdAt + cdSize;
    put(end, 0x06064b50, 4);
    put(end, 44, 8);
    put(end, 45, 2);
    put(end, 45, 2);
    put(end, 0, 4);
    put(end, 0, 4);
    put(end, n, 8);
    put(end, n, 8);
    put(end, cdSize, 8);
    put(end, cdAt, 8);
    put(end, 0x07064b50, 4);  // locator
    put(end, 0, 4);
    put(end, zip64EndAt, 8);
    put(end, 1, 4);
  }
  put(end, 0x06054b50, 4);
  put(end, 0, 2);
  put(end, 0, 2);
  put(end, std::min<uint64_t>(n, 0xffff), 2);
  put(end, std::min<uint64_t>(n, 0xffff), 2);
  put(end, cdSize, 4);
  put(end, cdAt >= kMax32 ? kMax32 : cdAt, 4);
  put(end, 0, 2);  // comment length
  return end;
}

}  // namespace

Status writeStoredZip(int fd, const std::string& path, const std::vector<StoredZipRecord>& records) {
  for (const auto& r : records) {
    if (r.name.size() > 0xffff)
      return Error{ErrorCode::Invalid, path, std::nullopt, "zip record " + r.name.substr(0, 80) + "...",
                   "a name of at most 65535 bytes", std::to_string(r.name.size()) + " bytes"};
    if (r.size && !r.data)
      return Error{ErrorCode::Invalid, path, std::nullopt, "zip record " + r.name, std::to_string(r.size) + " bytes of data",
                   "none"};
  }
  CrcThread crcThread(records);
  Output out(fd, path);

  // Local headers and data. The CRC-32 fields stay zero until the CRC
  // thread is done (minizip too writes them last, seeking back).
  std::vector<uint64_t> headerAt(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const StoredZipRecord& r = records[i];
    headerAt[i] = out.offset();
    if (auto s = out.append(localHeader(r)); !s) return s;
    if (auto s = out.append(r); !s) return s;
  }
  if (auto s = out.flush(); !s) return s;

  const std::vector<uint32_t>& crcs = crcThread.wait();
  if (crcThread.failed())
    return Error{ErrorCode::Io, path, std::nullopt, "cannot read back a record's source file", "", "read failed"};
  for (size_t i = 0; i < records.size(); ++i) {
    std::string c;
    put(c, crcs[i], 4);
    if (auto s = out.patch(headerAt[i] + 14, c.data(), c.size()); !s) return s;
  }

  // Central directory, then the end records.
  std::string cd;
  for (size_t i = 0; i < records.size(); ++i) appendCentralEntry(cd, records[i], headerAt[i], crcs[i]);
  uint64_t cdAt = out.offset();
  std::string end = endRecords(cdAt, cd.size(), records.size());
  if (auto s = out.append(cd); !s) return s;
  if (auto s = out.append(end); !s) return s;
  return out.flush();
}

}  // namespace lstudio
