#include "engine/formats/ZipArchive.h"

#include <minizip/unzip.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace lstudio {
namespace {

// minizip reads through these callbacks from the mapped bytes, so nothing is
// copied and a nested archive is just a narrower window.
struct Window {
  const uint8_t* data;
  uint64_t size;
  uint64_t pos;
};

voidpf openWindow(voidpf opaque, const void*, int) {
  auto* w = static_cast<Window*>(opaque);
  w->pos = 0;
  return w;
}
uLong readWindow(voidpf, voidpf stream, void* buf, uLong size) {
  auto* w = static_cast<Window*>(stream);
  uint64_t n = std::min<uint64_t>(size, w->size - std::min(w->pos, w->size));
  if (n) std::memcpy(buf, w->data + w->pos, n);
  w->pos += n;
  return static_cast<uLong>(n);
}
uLong writeWindow(voidpf, voidpf, const void*, uLong) { return 0; }
ZPOS64_T tellWindow(voidpf, voidpf stream) { return static_cast<Window*>(stream)->pos; }
long seekWindow(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
  auto* w = static_cast<Window*>(stream);
  uint64_t base = origin == ZLIB_FILEFUNC_SEEK_SET ? 0 : origin == ZLIB_FILEFUNC_SEEK_CUR ? w->pos : w->size;
  uint64_t target = base + offset;
  if (target < base || target > w->size) return -1;
  w->pos = target;
  return 0;
}
int closeWindow(voidpf, voidpf) { return 0; }

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/// A record's sizes and local header offset, read from its central directory
/// entry at `at` with the Zip64 extra field applied. Read here rather than
/// taken from minizip: Debian's minizip 1.1 ignores a Zip64 local header
/// offset (records that start past 4 GiB, as in an 8B model's archive).
struct CentralEntry {
  uint64_t compressed = 0, uncompressed = 0, localHeader = 0;
};
std::optional<CentralEntry> centralEntry(const uint8_t* base, uint64_t size, uint64_t at) {
  if (at > size || size - at < 46 || std::memcmp(base + at, "PK\x01\x02", 4) != 0) return std::nullopt;
  const uint8_t* h = base + at;
  CentralEntry e{le(h + 20, 4), le(h + 24, 4), le(h + 42, 4)};
  const uint64_t nameLen = le(h + 28, 2), extraLen = le(h + 30, 2);
  if (size - at - 46 < nameLen + extraLen) return std::nullopt;
  const uint8_t* x = h + 46 + nameLen;
  for (uint64_t i = 0; i + 4 <= extraLen;) {
    const uint64_t id = le(x + i, 2), len = le(x + i + 2, 2);
    if (i + 4 + len > extraLen) return std::nullopt;
    if (id == 0x0001) {  // Zip64: the saturated fields, in this order
      const uint8_t* f = x + i + 4;
      uint64_t left = len;
      for (uint64_t* field : {&e.uncompressed, &e.compressed, &e.localHeader}) {
        if (*field != 0xffffffffu) continue;
        if (left < 8) return std::nullopt;
        *field = le(f, 8);
        f += 8, left -= 8;
      }
    }
    i += 4 + len;
  }
  return e;
}
int errorWindow(voidpf, voidpf) { return 0; }

class Unzip {
 public:
  Unzip(const uint8_t* data, uint64_t size) : window_{data, size, 0} {
    zlib_filefunc64_def f{};
    f.zopen64_file = openWindow;
    f.zread_file = readWindow;
    f.zwrite_file = writeWindow;
    f.ztell64_file = tellWindow;
    f.zseek64_file = seekWindow;
    f.zclose_file = closeWindow;
    f.zerror_file = errorWindow;
    f.opaque = &window_;
    handle_ = unzOpen2_64("", &f);
  }
  ~Unzip() {
    if (handle_) unzClose(handle_);
  }
  unzFile get() const { return handle_; }

 private:
  Window window_;
  unzFile handle_ = nullptr;
};

}  // namespace

Result<ZipArchive> ZipArchive::open(std::shared_ptr<const MappedFile> file, uint64_t offset, uint64_t size,
                                    std::string displayName) {
  ZipArchive z;
  z.name_ = displayName.empty() ? file->path() : displayName;
  if (offset > file->size()) offset = file->size();
  z.offset_ = offset;
  z.size_ = std::min(size, file->size() - offset);
  z.file_ = file;
  auto fail = [&](ErrorCode c, std::optional<uint64_t> at, std::string what, std::string expected, std::string found) {
    return Error{c, z.name_, at, std::move(what), std::move(expected), std::move(found)};
  };
  const uint8_t* base = file->data() + offset;
  if (z.size_ < 4 || std::memcmp(base, "PK\x03\x04", 4) != 0)
    return fail(ErrorCode::BadMagic, 0, "zip archive signature", "\"PK\\x03\\x04\" at byte 0",
                z.size_ < 4 ? "end of file" : "other bytes");
  // The end-of-central-directory record must end the archive exactly
  // (after its comment); anything else is a truncated or padded file.
  bool eocd = false;
  uint64_t lowest = z.size_ > 65557 ? z.size_ - 65557 : 0;
  for (uint64_t pos = z.size_ >= 22 ? z.size_ - 22 : 0; z.size_ >= 22; --pos) {
    if (std::memcmp(base + pos, "PK\x05\x06", 4) == 0) {
      uint16_t comment;
      std::memcpy(&comment, base + pos + 20, 2);
      eocd = pos + 22 + comment == z.size_;
      break;
    }
    if (pos == lowest) break;
  }
  if (!eocd)
    return fail(ErrorCode::Truncated, z.size_, "zip end-of-central-directory record", "at the end of the archive",
                "none (the file is truncated or has trailing bytes)");
  Unzip u(base, z.size_);
  if (!u.get())
    return fail(ErrorCode::Invalid, std::nullopt, "zip central directory", "a readable end-of-central-directory record",
                "none (truncated or not a zip)");
  unz_global_info64 gi{};
  if (unzGetGlobalInfo64(u.get(), &gi) != UNZ_OK)
    return fail(ErrorCode::Invalid, std::nullopt, "zip central directory", "readable global info", "an unreadable one");
  // Each central directory entry takes at least 46 bytes.
  if (gi.number_entry > z.size_ / 46 + 1)
    return fail(ErrorCode::Invalid, std::nullopt, "zip entry count", "at most " + std::to_string(z.size_ / 46 + 1),
                std::to_string(gi.number_entry));
  z.entries_.reserve(static_cast<size_t>(gi.number_entry));
  int rc = unzGoToFirstFile(u.get());
  for (uint64_t i = 0; i < gi.number_entry && rc == UNZ_OK; ++i, rc = unzGoToNextFile(u.get())) {
    unz_file_info64 info{};
    char name[4096];
    if (unzGetCurrentFileInfo64(u.get(), &info, name, sizeof name, nullptr, 0, nullptr, 0) != UNZ_OK)
      return fail(ErrorCode::Invalid, std::nullopt, "zip entry " + std::to_string(i), "a readable header", "none");
    ZipEntry e;
    e.name.assign(name, strnlen(name, sizeof name));
    e.size = info.uncompressed_size;
    e.compressedSize = info.compressed_size;
    e.crc = static_cast<uint32_t>(info.crc);
    if (info.compression_method != 0 && info.compression_method != Z_DEFLATED)
      return fail(ErrorCode::Unsupported, std::nullopt, "zip entry '" + e.name + "' compression", "stored or deflate",
                  "method " + std::to_string(info.compression_method));
    e.stored = info.compression_method == 0;
    unz64_file_pos pos{};
    std::optional<CentralEntry> central;
    if (unzGetFilePos64(u.get(), &pos) == UNZ_OK) central = centralEntry(base, z.size_, pos.pos_in_zip_directory);
    if (!central)
      return fail(ErrorCode::Invalid, std::nullopt, "zip entry '" + e.name + "' central directory entry",
                  "a readable entry", "an unreadable one");
    e.size = central->uncompressed;
    e.compressedSize = central->compressed;
    // The local header: its own name and extra field lengths place the data.
    const uint64_t lh = central->localHeader;
    if (lh > z.size_ || z.size_ - lh < 30 || std::memcmp(base + lh, "PK\x03\x04", 4) != 0)
      return fail(ErrorCode::Invalid, lh, "zip entry '" + e.name + "' local header", "a local header signature",
                  lh > z.size_ ? "an offset past the end" : "other bytes");
    uint64_t rel = lh + 30 + le(base + lh + 26, 2) + le(base + lh + 28, 2);
    uint64_t end = 0;
    if (__builtin_add_overflow(rel, e.compressedSize, &end) || end > z.size_)
      return fail(ErrorCode::Truncated, rel, "zip entry '" + e.name + "' data",
                  std::to_string(e.compressedSize) + " bytes inside the archive", "the archive ends first");
    if (e.stored && e.size != e.compressedSize)
      return fail(ErrorCode::Invalid, rel, "stored zip entry '" + e.name + "' sizes", "equal sizes",
                  std::to_string(e.size) + " vs " + std::to_string(e.compressedSize));
    e.dataOffset = offset + rel;
    z.entries_.push_back(std::move(e));
  }
  return z;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<const ZipEntry*> ZipArchive::findSuffix(std::string_view suffix) const {
  std::vector<const ZipEntry*> out;
  for (const auto& e : entries_)
    if (e.name.size() >= suffix.size() && std::string_view(e.name).substr(e.name.size() - suffix.size()) == suffix)
      out.push_back(&e);
  return out;
}

Result<Bytes> ZipArchive::bytes(const ZipEntry& e) const {
  if (!e.stored)
    return Error{ErrorCode::Unsupported, name_, e.dataOffset, "zip entry '" + e.name + "'",
                 "a stored (uncompressed) record to map in place", "a compressed one"};
  return Bytes{file_->data() + e.dataOffset, e.size, e.dataOffset};
}

Result<std::string> ZipArchive::read(const ZipEntry& e, uint64_t maxSize) const {
  if (e.size > maxSize)
    return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' size",
                 "at most " + std::to_string(maxSize) + " bytes", std::to_string(e.size)};
  if (e.stored) {
    std::string out(reinterpret_cast<const char*>(file_->data() + e.dataOffset), e.size);
    // Small records are read whole, so their CRC is cheap to check; mapped weights are not.
    if (crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size()) != e.crc)
      return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' CRC", "a matching CRC-32",
                   "a different one (the record is damaged)"};
    return out;
  }
  // A zip bomb: deflate reaches about 1000:1 on repetitive data, real JSON and
  // pickles stay far below 100:1. Refuse big records that claim more than
  // kMaxRatio before inflating them (the loop below still enforces the size).
  constexpr uint64_t kMaxRatio = 200, kRatioFrom = uint64_t{64} << 20;
  if (e.size > kRatioFrom && e.size / std::max<uint64_t>(e.compressedSize, 1) > kMaxRatio)
    return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' compression ratio",
                 "at most " + std::to_string(kMaxRatio) + ":1 above " + std::to_string(kRatioFrom >> 20) + " MiB (a zip bomb?)",
                 std::to_string(e.size) + " bytes from " + std::to_string(e.compressedSize)};
  // Raw deflate straight from the mapped record, in chunks, stopping at the
  // cap: the header's size is not trusted.
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return Error{ErrorCode::Io, name_, e.dataOffset, "zip entry '" + e.name + "'", "memory to inflate it", "none"};
  zs.next_in = const_cast<Bytef*>(file_->data() + e.dataOffset);
  std::string out;
  const uint64_t cap = std::min<uint64_t>(maxSize, e.size);
  uint64_t inLeft = e.compressedSize;
  int rc = Z_OK;
  char buf[65536];
  while (rc != Z_STREAM_END) {
    const uInt feed = static_cast<uInt>(std::min<uint64_t>(inLeft, 1u << 30));
    zs.avail_in = feed;
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    inLeft -= feed - zs.avail_in;
    const size_t n = sizeof buf - zs.avail_out;
    if ((rc != Z_OK && rc != Z_STREAM_END) || (rc == Z_OK && n == 0 && inLeft == 0)) {
      inflateEnd(&zs);
      return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' data", "valid deflate data",
                   "a corrupt or truncated stream"};
    }
    if (out.size() + n > cap) {
      inflateEnd(&zs);
      return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' inflated size",
                   "at most " + std::to_string(cap) + " bytes", "more"};
    }
    out.append(buf, n);
  }
  inflateEnd(&zs);
  if (out.size() != e.size || crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size()) != e.crc)
    return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' CRC", "a matching CRC-32",
                 "a different one"};
  return out;
}

}  // namespace lstudio
