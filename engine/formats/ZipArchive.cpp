#include "engine/formats/ZipArchive.h"

#include <minizip/unzip.h>

#include <algorithm>
#include <cstring>

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
    if (unzOpenCurrentFile(u.get()) != UNZ_OK)
      return fail(ErrorCode::Invalid, std::nullopt, "zip entry '" + e.name + "' local header", "a readable header",
                  "an unreadable one");
    uint64_t rel = unzGetCurrentFileZStreamPos64(u.get());
    unzCloseCurrentFile(u.get());
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
  Unzip u(file_->data() + offset_, size_);
  std::string out;
  if (!u.get() || unzLocateFile(u.get(), e.name.c_str(), 1) != UNZ_OK || unzOpenCurrentFile(u.get()) != UNZ_OK)
    return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "'", "a readable record", "none"};
  // Inflate in chunks and stop at the cap: the header's size is not trusted.
  char buf[65536];
  for (;;) {
    int n = unzReadCurrentFile(u.get(), buf, sizeof buf);
    if (n < 0) {
      unzCloseCurrentFile(u.get());
      return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' data", "valid deflate data",
                   "a corrupt stream"};
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > std::min<uint64_t>(maxSize, e.size)) {
      unzCloseCurrentFile(u.get());
      return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' inflated size",
                   "at most " + std::to_string(std::min<uint64_t>(maxSize, e.size)) + " bytes", "more"};
    }
    out.append(buf, static_cast<size_t>(n));
  }
  if (unzCloseCurrentFile(u.get()) == UNZ_CRCERROR)
    return Error{ErrorCode::Invalid, name_, e.dataOffset, "zip entry '" + e.name + "' CRC", "a matching CRC-32",
                 "a different one"};
  return out;
}

}  // namespace lstudio
