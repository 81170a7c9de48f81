#include "engine/formats/PteWriter.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include "engine/support/AtomicFile.h"
#include "engine/formats/schema/flat_tensor_generated.h"
#include "engine/formats/schema/program_generated.h"

namespace lstudio {
namespace fb = executorch_flatbuffer;
namespace ft = flat_tensor_flatbuffer;

namespace {

constexpr uint32_t kEh00Length = 32;      // magic, length, program_size, segment_base_offset, segment_data_size
constexpr uint32_t kFh01Length = 40;      // magic, length, fb offset, fb size, segment base, segment data size
constexpr uint64_t kFh01Padded = 48;      // FH01 padded to the 16-byte flatbuffer alignment, as ExecuTorch does
constexpr uint64_t kChunk = 8ull << 20;   // bytes per write() when streaming weights
// Headroom kept below flatbuffers' 2 GiB limit while the builder grows.
constexpr uint64_t kFlatbufferLimit = FLATBUFFERS_MAX_BUFFER_SIZE - (1u << 20);

bool isPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }
uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

bool sameBytes(const Bytes& a, const Bytes& b) {
  if (a.size != b.size) return false;
  if (a.size == 0 || a.data == b.data) return true;
  return std::memcmp(a.data, b.data, a.size) == 0;
}

void putLe32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void putLe64(std::string& s, uint64_t v) {
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
uint64_t layOutSegments(const std::vector<SegmentPlan>& segs, uint64_t alignment, std::vector<uint64_t>& offsets) {
  uint64_t end = 0;
  offsets.clear();
  for (const auto& s : segs) {
    uint64_t off = alignUp(end, alignment);
    offsets.push_back(off);
    end = off + s.size;
  }
  return end;
}

void addPieces(FilePlan& f, const std::vector<SegmentPlan>& segs, const std::vector<uint64_t>& offsets, uint64_t base) {
  for (size_t i = 0; i < segs.size(); ++i)
    for (const auto& [off, b] : segs[i].parts)
      if (b.size) f.pieces.emplace_back(base + offsets[i] + off, b);
}

// ---------------------------------------------------------------- output

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
  ~TempFileSink() override {
    if (fd_ >= 0) ::close(fd_);
    if (!tmp_.empty() && !committed_) ::unlink(tmp_.c_str());
  }
  TempFileSink(const TempFileSink&) = delete;
  TempFileSink& operator=(const TempFileSink&) = delete;

  Status open() {
    std::string t = temporaryNameFor(path_);
    int fd = ::mkstemp(t.data());
    if (fd < 0) return ioError("cannot create a temporary file in the destination folder");
    fd_ = fd;
    tmp_ = t;
    return Ok{};
  }
  Status write(const uint8_t* p, uint64_t n) override {
    while (n > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, kChunk));
      if (*faultBudget_ != UINT64_MAX) {
        if (*faultBudget_ < k) k = static_cast<size_t>(*faultBudget_);
        if (k == 0) ::raise(SIGKILL);
      }
      ssize_t w = ::write(fd_, p, k);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ioError("cannot write", written_);
      }
      if (w == 0) {
        errno = EIO;
        return ioError("cannot write", written_);
      }
      p += w;
      n -= static_cast<uint64_t>(w);
      written_ += static_cast<uint64_t>(w);
      if (*faultBudget_ != UINT64_MAX) *faultBudget_ -= static_cast<uint64_t>(w);
    }
    return Ok{};
  }
  Result<bool> copyFrom(int fd, uint64_t offset, uint64_t n) override {
    if (!kernelCopy_) return false;
    off64_t in = static_cast<off64_t>(offset);
    while (n > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, kChunk));
      if (*faultBudget_ != UINT64_MAX) {
        if (*faultBudget_ < k) k = static_cast<size_t>(*faultBudget_);
        if (k == 0) ::raise(SIGKILL);
      }
      ssize_t w = ::copy_file_range(fd, &in, fd_, nullptr, k, 0);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        // Not supported between these files (another file system, an old
        // kernel): nothing of this range was copied, write() takes over.
        if (in == static_cast<off64_t>(offset) && (w == 0 || errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                                                  errno == EOPNOTSUPP || errno == EBADF || errno == EPERM)) {
          kernelCopy_ = false;
          return false;
        }
        if (w == 0) errno = EIO;
        return ioError("cannot copy into", written_);
      }
      n -= static_cast<uint64_t>(w);
      written_ += static_cast<uint64_t>(w);
      if (*faultBudget_ != UINT64_MAX) *faultBudget_ -= static_cast<uint64_t>(w);
    }
    return true;
  }
  void setKernelCopy(bool on) { kernelCopy_ = on; }
  /// Flushes and closes the temporary file.
  Status finish() {
    if (*faultBudget_ == 0) ::raise(SIGKILL);  // the hook's "everything written, nothing renamed"
    if (::fchmod(fd_, 0644) != 0) return ioError("cannot set permissions");
    if (::fsync(fd_) != 0) return ioError("cannot flush to disk");
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ioError("cannot close");
    return Ok{};
  }
  Status commit() {
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
      return ioError("cannot rename the temporary file into place");
    committed_ = true;
    return Ok{};
  }
  const std::string& path() const { return path_; }

 private:
  Error ioError(const char* what, std::optional<uint64_t> at = std::nullopt) const {
    return Error{ErrorCode::Io, path_, at, what, "", std::strerror(errno)};
  }
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
  explicit MappedRanges(const Program& p) {
    add(p.backing.get());
    for (const auto& f : p.externalFiles) add(f.get());
  }
  MappedRanges() = default;
  /// After a chunk is written: its whole pages leave the resident set.
  /// The open file and offset `n` bytes at `p` come from, when they lie in one mapping.
  std::optional<std::pair<int, uint64_t>> source(const uint8_t* p, uint64_t n) const {
    for (const auto& [lo, hi, fd] : ranges_)
      if (fd >= 0 && p >= lo && p + n <= hi) return std::make_pair(fd, static_cast<uint64_t>(p - lo));
    return std::nullopt;
  }
  void release(const uint8_t* p, uint64_t n) const {
    for (const auto& [lo, hi, fd] : ranges_) {
      if (p < lo || p + n > hi) continue;
      static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
      uintptr_t start = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
      uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
      if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
      return;
    }
  }

 private:

  void add(const MappedFile* f) {
    if (f && f->isMapped() && f->size()) ranges_.push_back({f->data(), f->data() + f->size(), f->fd()});
  }
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

Status emit(const FilePlan& f, Sink& out, const MappedRanges& mapped = {}, const Progress& progress = {}) {
  auto cancelled = [&] { return Error{ErrorCode::Io, "", out.written(), "write", "", "cancelled"}; };
  if (auto s = out.write(reinterpret_cast<const uint8_t*>(f.head.data()), f.head.size()); !s) return s;
  for (const auto& [off, b] : f.pieces) {
    if (auto s = out.zeros(off - out.written()); !s) return s;
    for (uint64_t done = 0; done < b.size;) {
      uint64_t k = std::min(kChunk, b.size - done);
      // Bytes of a mapped file are copied by the kernel, file to file; the
      // rest (and every file system that cannot) goes through write().
      bool copied = false;
      if (auto src = mapped.source(b.data + done, k)) {
        auto c = out.copyFrom(src->first, src->second, k);
        if (!c) return c.error();
        copied = c.value();
      }
      if (!copied) {
        if (auto s = out.write(b.data + done, k); !s) return s;
        mapped.release(b.data + done, k);
      }
      done += k;
      if (!progress.report(out.written())) return cancelled();
    }
  }
  if (auto s = out.zeros(f.size - out.written()); !s) return s;
  if (!progress.report(out.written())) return cancelled();
  return Ok{};
}

/// Flatbuffer bytes with a header inserted after the root offset and file
/// identifier; the root offset grows by the header's length.
std::string insertHeader(const uint8_t* fbData, size_t fbSize, const std::string& header) {
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

// ---------------------------------------------------------------- planning

struct ExternalEntry {
  std::string key;
  Bytes bytes;
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dimOrder;
  bool hasLayout = true;  ///< false: an opaque blob (a delegate's named data)
};

/// Decides where every byte goes before anything is built or written.
class Planner {
 public:
  Planner(const Program& p, const PteWriteOptions& o, std::string file) : p_(p), o_(o), file_(std::move(file)) {}

  Status plan() {
    if (auto s = checkOptions(); !s) return s;
    if (auto s = planTensors(); !s) return s;
    if (auto s = planDelegates(); !s) return s;
    if (auto s = planNamedData(); !s) return s;
    return Ok{};
  }

  // Results.
  std::vector<std::vector<uint32_t>> bufferIdx;  // [method][value] data_buffer_idx to write
  std::vector<Bytes> constants{Bytes{}};         // constant table, [0] the placeholder
  std::vector<uint64_t> constantOffsets;
  std::vector<Bytes> mutables;                   // mutable table ([0] placeholder) or empty
  std::vector<uint64_t> mutableOffsets;
  int mutableSegment = -1;
  struct DelegateRef { bool segment = false; uint32_t index = 0; };
  std::vector<std::vector<DelegateRef>> delegateRefs;  // [method][delegate]
  std::vector<Bytes> inlineData;
  std::vector<std::pair<std::string, uint32_t>> namedData;  // key, segment index
  std::vector<SegmentPlan> segments;
  size_t delegateSegments = 0;
  std::map<std::string, std::vector<ExternalEntry>> external;  // tag -> entries
  std::vector<std::string> notes;

  Error error(ErrorCode c, std::string what, std::string expected = {}, std::string found = {}) const {
    return Error{c, file_, std::nullopt, std::move(what), std::move(expected), std::move(found)};
  }
  std::string where(size_t m) const {
    return "methods[" + std::to_string(m) + "] '" + p_.methods[m].name + "'";
  }

 private:
  Status checkOptions() const {
    for (auto [v, name] : {std::pair{o_.segmentAlignment, "segmentAlignment"},
                           std::pair{o_.constantTensorAlignment, "constantTensorAlignment"},
                           std::pair{o_.delegateAlignment, "delegateAlignment"},
                           std::pair{o_.ptdSegmentAlignment, "ptdSegmentAlignment"}})
      if (!isPowerOfTwo(v) || v > (1ull << 30))
        return error(ErrorCode::Invalid, std::string("option ") + name, "a power of two up to 2^30", std::to_string(v));
    return Ok{};
  }

  struct Use {
    size_t m = 0, v = 0;
    uint32_t idx = 0;  // index to keep, 0: append
    Bytes bytes;
  };

  /// The first nbytes of the tensor's data; an error when they are not there.
  Result<Bytes> tensorBytes(const TensorSpec& t, size_t m, size_t v, const char* role) const {
    auto nb = t.nbytes();
    std::string w = where(m) + ".values[" + std::to_string(v) + "]";
    if (!nb) return error(ErrorCode::Overflow, w + " byte size", "numel x element size < 2^64", t.shapeString());
    if (*nb == 0) return Bytes{t.data.data, 0, t.data.fileOffset};
    if (!t.data.data || t.data.size < *nb)
      return error(ErrorCode::Invalid, w + " " + role + " bytes", std::to_string(*nb) + " bytes for " + t.shapeString(),
                   t.data.data ? std::to_string(t.data.size) + " bytes" : "none");
    return Bytes{t.data.data, *nb, t.data.fileOffset};
  }

  /// Builds a data table: indices the IR gives are kept when consistent,
  /// other entries are appended, identical bytes sharing an entry.
  void buildTable(std::vector<Use>& uses, std::vector<Bytes>& table, const std::string& what) {
    std::map<uint32_t, Bytes> byIdx;
    bool consistent = true;
    for (const auto& u : uses) {
      if (u.idx == 0) continue;
      auto [it, inserted] = byIdx.emplace(u.idx, u.bytes);
      if (!inserted && !sameBytes(it->second, u.bytes)) consistent = false;
    }
    // Indices far beyond the number of tensors would only make an empty table huge.
    if (consistent && !byIdx.empty() && byIdx.rbegin()->first > uses.size() + 1024) {
      notes.push_back(what + ": indices up to " + std::to_string(byIdx.rbegin()->first) + " for " +
                      std::to_string(uses.size()) + " tensors; the table was renumbered");
      for (auto& u : uses) u.idx = 0;
      byIdx.clear();
    } else if (!consistent) {
      notes.push_back(what + ": tensors sharing an index had different bytes; the table was renumbered");
      for (auto& u : uses) u.idx = 0;
      byIdx.clear();
    }
    uint32_t maxIdx = byIdx.empty() ? 0 : byIdx.rbegin()->first;
    table.assign(static_cast<size_t>(maxIdx) + 1, Bytes{});
    BlobPool pool;
    std::vector<uint32_t> poolToTable;
    for (const auto& [i, b] : byIdx) {
      table[i] = b;
      bool added = false;
      pool.add(b, &added);
      if (added) poolToTable.push_back(i);
    }
    size_t gaps = maxIdx - byIdx.size();
    if (gaps) notes.push_back(what + ": " + std::to_string(gaps) + " indices no tensor uses were written empty");
    size_t appended = 0;
    for (auto& u : uses) {
      if (u.idx != 0) continue;
      bool added = false;
      uint32_t k = pool.add(u.bytes, &added);
      if (added) {
        poolToTable.push_back(static_cast<uint32_t>(table.size()));
        table.push_back(u.bytes);
        ++appended;
      }
      u.idx = poolToTable[k];
    }
    if (appended && consistent && !byIdx.empty())
      notes.push_back(what + ": " + std::to_string(appended) + " entries appended for tensors without an index");
  }

  std::string tagFor(const TensorSpec& t) const {
    if (auto it = o_.externalTags.find(t.fqn); it != o_.externalTags.end()) return it->second;
    if (!t.constantTag.empty()) return t.constantTag;
    if (t.data.data)
      for (const auto& f : p_.externalFiles) {
        if (!f || t.data.data < f->data() || t.data.data >= f->data() + f->size()) continue;
        std::string name = f->path();
        if (size_t slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
        if (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0) name = name.substr(0, dot);
        if (!name.empty()) return name;
      }
    return o_.defaultExternalTag;
  }

  Status addExternal(const TensorSpec& t, size_t m, size_t v) {
    std::string w = where(m) + ".values[" + std::to_string(v) + "]";
    if (t.fqn.empty())
      return error(ErrorCode::Invalid, w + " external tensor", "a fully qualified name", "none");
    if (!o_.writeDataFiles) return Ok{};
    auto nb = t.nbytes();
    if (!nb) return error(ErrorCode::Overflow, w + " byte size", "numel x element size < 2^64", t.shapeString());
    if (*nb > 0 && (!t.data.data || t.data.size < *nb))
      return error(ErrorCode::MissingKey, "external tensor '" + t.fqn + "' of " + w,
                   "its bytes (resolve the program against its .ptd files first, or write without data files)",
                   "unresolved");
    std::string tag = tagFor(t);
    if (tag.empty() || tag == "." || tag == ".." || tag.find('/') != std::string::npos ||
        tag.find('\0') != std::string::npos)
      return error(ErrorCode::Invalid, "data file tag of external tensor '" + t.fqn + "'",
                   "a file name without '/'", "\"" + tag + "\"");
    ExternalEntry e{t.fqn, Bytes{t.data.data, *nb, t.data.fileOffset}, t.dtype, t.sizes, t.dimOrder};
    if (auto it = externalKeys_.find(t.fqn); it != externalKeys_.end()) {
      const ExternalEntry& prev = external[it->second.first][it->second.second];
      if (it->second.first != tag || prev.dtype != e.dtype || prev.sizes != e.sizes || !sameBytes(prev.bytes, e.bytes))
        return error(ErrorCode::Mismatch, "external tensor '" + t.fqn + "' of " + w,
                     "the same data file, layout and bytes wherever the key is used", "a different one");
      return Ok{};
    }
    auto& list = external[tag];
    externalKeys_[t.fqn] = {tag, list.size()};
    list.push_back(std::move(e));
    return Ok{};
  }

  /// Entries of the opened .ptd files that no tensor names go back to the
  /// file of the same name (a delegate reads its named data from there).
  void addCarriedData() {
    if (!o_.writeDataFiles || p_.carriedData.empty()) return;
    std::set<std::string> written;  // a tensor of the program under that name decides where it goes
    for (const Method& m : p_.methods)
      for (const Value& v : m.values)
        if (const TensorSpec* t = v.tensorIf(); t && !t->fqn.empty()) written.insert(t->fqn);
    for (const CarriedData& c : p_.carriedData) {
      if (written.count(c.key) || externalKeys_.count(c.key)) continue;
      auto& list = external[c.file];
      externalKeys_[c.key] = {c.file, list.size()};
      list.push_back(ExternalEntry{c.key, c.data, c.dtype, c.sizes, c.dimOrder, c.hasLayout});
    }
  }

  Status planTensors() {
    std::vector<Use> consts, muts;
    bool legacyMutable = false;
    bufferIdx.resize(p_.methods.size());
    for (size_t m = 0; m < p_.methods.size(); ++m) {
      const Method& method = p_.methods[m];
      bufferIdx[m].assign(method.values.size(), 0);
      for (size_t v = 0; v < method.values.size(); ++v) {
        const TensorSpec* t = method.values[v].tensorIf();
        if (!t) continue;
        if (t->external) {
          // The runtime looks external tensors up by name; the index is kept as the IR has it.
          bufferIdx[m][v] = t->dataBufferIndex;
          if (auto s = addExternal(*t, m, v); !s) return s;
          continue;
        }
        if (t->slot) {
          if (t->dataBufferIndex == 0 && !t->mutableSegmentIndex && t->data.empty()) continue;  // planned
          auto b = tensorBytes(*t, m, v, "initial value");
          if (!b) return b.error();
          uint32_t keep = t->source == ConstantSource::MutableSegment ? t->dataBufferIndex : 0;
          if (t->source == ConstantSource::ConstantSegment || t->source == ConstantSource::ConstantBuffer)
            legacyMutable = true;
          muts.push_back(Use{m, v, keep, b.value()});
        } else if (t->dataBufferIndex > 0 || !t->data.empty()) {
          auto b = tensorBytes(*t, m, v, "constant");
          if (!b) return b.error();
          consts.push_back(Use{m, v, t->dataBufferIndex, b.value()});
        }
      }
    }
    addCarriedData();
    if (p_.facts.constants == ContainerFacts::Constants::ConstantBuffer)
      notes.push_back("constants moved from the legacy constant_buffer to constant_segment");
    if (legacyMutable)
      notes.push_back("initial values of mutable tensors moved from the constant table to mutable_data_segments");
    buildTable(consts, constants, "constant table");
    for (const auto& u : consts) bufferIdx[u.m][u.v] = u.idx;
    // Constant segment: each entry padded to the tensor alignment, the last unpadded.
    SegmentPlan cseg;
    uint64_t cur = 0;
    for (size_t i = 0; i < constants.size(); ++i) {
      constantOffsets.push_back(cur);
      cseg.parts.emplace_back(cur, constants[i]);
      cur += constants[i].size;
      if (i + 1 < constants.size()) cur = alignUp(cur, o_.constantTensorAlignment);
    }
    cseg.size = cur;
    segments.push_back(std::move(cseg));
    if (!muts.empty()) {
      buildTable(muts, mutables, "mutable data table");
      for (const auto& u : muts) bufferIdx[u.m][u.v] = u.idx;
      // Unpadded, as ExecuTorch writes it: the runtime copies these bytes into the arena.
      SegmentPlan mseg;
      for (const auto& b : mutables) {
        mutableOffsets.push_back(mseg.size);
        mseg.parts.emplace_back(mseg.size, b);
        mseg.size += b.size;
      }
      mutableSegment = static_cast<int>(segments.size());
      segments.push_back(std::move(mseg));
    }
    return Ok{};
  }

  Status planDelegates() {
    BlobPool segPool, inlinePool;
    std::vector<uint32_t> segIndex;  // pool index -> segment index
    delegateRefs.resize(p_.methods.size());
    for (size_t m = 0; m < p_.methods.size(); ++m) {
      const auto& ds = p_.methods[m].delegates;
      for (size_t d = 0; d < ds.size(); ++d) {
        const Bytes& blob = ds[d].blob;
        if (blob.size && !blob.data)
          return error(ErrorCode::Invalid, where(m) + ".delegates[" + std::to_string(d) + "] blob",
                       std::to_string(blob.size) + " bytes", "none");
        bool added = false;
        if (o_.extractDelegateSegments && blob.size > 0) {
          uint32_t k = segPool.add(blob, &added);
          if (added) {
            segIndex.push_back(static_cast<uint32_t>(segments.size()));
            SegmentPlan s;
            s.size = blob.size;
            s.parts.emplace_back(0, blob);
            segments.push_back(std::move(s));
            ++delegateSegments;
          }
          delegateRefs[m].push_back(DelegateRef{true, segIndex[k]});
        } else {
          uint32_t k = inlinePool.add(blob, &added);
          delegateRefs[m].push_back(DelegateRef{false, k});
        }
      }
    }
    inlineData = inlinePool.blobs();
    return Ok{};
  }

  Status planNamedData() {
    BlobPool pool;
    std::vector<uint32_t> segIndex;
    std::map<std::string, Bytes> seen;
    for (size_t i = 0; i < p_.namedData.size(); ++i) {
      const NamedBlob& nb = p_.namedData[i];
      if (nb.data.size && !nb.data.data)
        return error(ErrorCode::Invalid, "named_data[" + std::to_string(i) + "] '" + nb.key + "'",
                     std::to_string(nb.data.size) + " bytes", "none");
      if (auto it = seen.find(nb.key); it != seen.end()) {
        if (!sameBytes(it->second, nb.data))
          return error(ErrorCode::Invalid, "named_data[" + std::to_string(i) + "] '" + nb.key + "'",
                       "one blob per key", "the key again with different bytes");
        notes.push_back("named_data key '" + nb.key + "' repeated with the same bytes: written once");
        continue;
      }
      seen.emplace(nb.key, nb.data);
      bool added = false;
      uint32_t k = pool.add(nb.data, &added);
      if (added) {
        segIndex.push_back(static_cast<uint32_t>(segments.size()));
        SegmentPlan s;
        s.size = nb.data.size;
        s.parts.emplace_back(0, nb.data);
        segments.push_back(std::move(s));
      }
      namedData.emplace_back(nb.key, segIndex[k]);
    }
    return Ok{};
  }

  const Program& p_;
  const PteWriteOptions& o_;
  std::string file_;
  std::map<std::string, std::pair<std::string, size_t>> externalKeys_;  // key -> (tag, index)
};

// ---------------------------------------------------------------- flatbuffer

using Fbb = flatbuffers::FlatBufferBuilder;

class ProgramEmitter {
 public:
  ProgramEmitter(const Program& p, const PteWriteOptions& o, Planner& plan) : p_(p), o_(o), plan_(plan) {}

  /// Builds the Program flatbuffer (segment offsets as laid out by the caller).
  Status build(Fbb& fbb, const std::vector<uint64_t>& segmentOffsets) {
    // As ExecuTorch's emit_stacktrace: when any node has a trace, every chain
    // carries one frame list per instruction.
    for (const auto& m : p_.methods)
      for (const auto& n : m.nodes) stackTraces_ = stackTraces_ || !n.meta.stackTrace.empty();
    std::vector<flatbuffers::Offset<fb::ExecutionPlan>> plans;
    for (size_t m = 0; m < p_.methods.size(); ++m) {
      auto r = method(fbb, m);
      if (!r) return r.error();
      plans.push_back(r.value());
    }
    auto planVec = fbb.CreateVector(plans);
    auto constantBuffer = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Buffer>>{});
    std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> inl;
    for (const Bytes& b : plan_.inlineData) {
      if (auto s = room(fbb, b.size + o_.delegateAlignment + 64, "inline delegate data"); !s) return s;
      if (b.size) fbb.PreAlign(b.size, o_.delegateAlignment);
      auto data = fbb.CreateVector(b.data, static_cast<size_t>(b.size));
      inl.push_back(fb::CreateBackendDelegateInlineData(fbb, data));
    }
    auto inlineVec = fbb.CreateVector(inl);
    std::vector<flatbuffers::Offset<fb::DataSegment>> segs;
    for (size_t i = 0; i < plan_.segments.size(); ++i)
      segs.push_back(fb::CreateDataSegment(fbb, segmentOffsets[i], plan_.segments[i].size));
    auto segVec = fbb.CreateVector(segs);
    auto constSeg = fb::CreateSubsegmentOffsets(fbb, 0, fbb.CreateVector(plan_.constantOffsets));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::SubsegmentOffsets>>> mutVec = 0;
    if (plan_.mutableSegment >= 0) {
      auto sub = fb::CreateSubsegmentOffsets(fbb, static_cast<uint32_t>(plan_.mutableSegment),
                                             fbb.CreateVector(plan_.mutableOffsets));
      mutVec = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::SubsegmentOffsets>>{sub});
    }
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NamedData>>> namedVec = 0;
    if (!plan_.namedData.empty()) {
      std::vector<flatbuffers::Offset<fb::NamedData>> nd;
      for (const auto& [key, seg] : plan_.namedData) nd.push_back(fb::CreateNamedData(fbb, str(fbb, key), seg));
      namedVec = fbb.CreateVector(nd);
    }
    auto root = fb::CreateProgram(fbb, 0, planVec, constantBuffer, inlineVec, segVec, constSeg, mutVec, namedVec);
    if (auto s = room(fbb, 64, "program"); !s) return s;
    fb::FinishProgramBuffer(fbb, root);
    return Ok{};
  }

 private:
  Status room(const Fbb& fbb, uint64_t extra, const std::string& what) const {
    if (static_cast<uint64_t>(fbb.GetSize()) + extra > kFlatbufferLimit)
      return plan_.error(ErrorCode::Overflow, "the program's flatbuffer (at " + what + ")",
                         "< 2 GiB (flatbuffers' limit; weights and extracted delegate blobs do not count)",
                         "more; extract delegate segments or move weights out of the flatbuffer");
    return Ok{};
  }
  /// Upper bound of what a value adds to the flatbuffer beyond its tables.
  static uint64_t payloadBytes(const Value& v) {
    switch (v.kind()) {
      case ValueKind::String: return std::get<std::string>(v.payload).size();
      case ValueKind::Tensor: {
        const TensorSpec& t = v.tensor();
        return 4 * t.sizes.size() + t.dimOrder.size() + t.sizes.size() + t.fqn.size();
      }
      case ValueKind::IntList: return 8 * std::get<IntList>(v.payload).items.size();
      case ValueKind::DoubleList: return 8 * std::get<DoubleList>(v.payload).items.size();
      case ValueKind::BoolList: return std::get<BoolList>(v.payload).items.size();
      case ValueKind::TensorList: return 4 * std::get<TensorList>(v.payload).items.size();
      case ValueKind::OptionalTensorList: return 4 * std::get<OptionalTensorList>(v.payload).items.size();
      default: return 0;
    }
  }
  static flatbuffers::Offset<flatbuffers::String> str(Fbb& fbb, const std::string& s) {
    return fbb.CreateString(s.data(), s.size());
  }

  Status checkValue(int64_t id, size_t count, const std::string& what, bool allowNone = false) const {
    if (allowNone && id == kNoValue) return Ok{};
    if (id < 0 || static_cast<uint64_t>(id) >= count)
      return plan_.error(ErrorCode::OutOfRange, what, "a value index < " + std::to_string(count), std::to_string(id));
    return Ok{};
  }

  Result<flatbuffers::Offset<fb::Tensor>> tensor(Fbb& fbb, const TensorSpec& t, uint32_t bufferIdx,
                                                 const std::string& w) {
    std::vector<int32_t> sizes;
    sizes.reserve(t.sizes.size());
    for (size_t i = 0; i < t.sizes.size(); ++i) {
      int64_t s = t.sizes[i];
      if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max())
        return plan_.error(ErrorCode::Overflow, w + ".sizes[" + std::to_string(i) + "]", "a 32-bit size",
                           std::to_string(s));
      sizes.push_back(static_cast<int32_t>(s));
    }
    std::vector<uint8_t> dims = t.dimOrder;
    if (dims.empty() && !t.sizes.empty()) {
      // The runtime needs one entry per dimension; none known means contiguous.
      for (size_t i = 0; i < t.sizes.size(); ++i) dims.push_back(static_cast<uint8_t>(i));
      ++filledDimOrders_;
    } else if (dims.size() != t.sizes.size()) {
      return plan_.error(ErrorCode::Invalid, w + ".dim_order", std::to_string(t.sizes.size()) + " entries",
                         std::to_string(dims.size()));
    }
    auto sizesVec = fbb.CreateVector(sizes);
    auto dimsVec = fbb.CreateVector(dims);
    flatbuffers::Offset<fb::AllocationDetails> alloc = 0;
    if (t.slot)
      alloc = fb::CreateAllocationDetails(fbb, t.slot->memId, static_cast<uint32_t>(t.slot->offset & 0xffffffffu),
                                          static_cast<uint32_t>(t.slot->offset >> 32));
    flatbuffers::Offset<fb::ExtraTensorInfo> extra = 0;
    if (t.external || !t.fqn.empty())
      extra = fb::CreateExtraTensorInfo(fbb, 0, str(fbb, t.fqn),
                                        t.external ? fb::TensorDataLocation::EXTERNAL : fb::TensorDataLocation::SEGMENT);
    return fb::CreateTensor(fbb, static_cast<fb::ScalarType>(t.dtype), t.storageOffset, sizesVec, dimsVec,
                            t.requiresGrad, bufferIdx, alloc, t.layout,
                            static_cast<fb::TensorShapeDynamism>(t.dynamism), extra);
  }

  Result<flatbuffers::Offset<fb::EValue>> value(Fbb& fbb, const Method& m, size_t mi, size_t vi) {
    const Value& v = m.values[vi];
    std::string w = plan_.where(mi) + ".values[" + std::to_string(vi) + "]";
    size_t n = m.values.size();
    auto ids = [&](const std::vector<ValueId>& items, bool allowNone) -> Result<std::vector<int32_t>> {
      for (size_t i = 0; i < items.size(); ++i)
        if (auto s = checkValue(items[i], n, w + ".items[" + std::to_string(i) + "]", allowNone); !s) return s.error();
      return std::vector<int32_t>(items.begin(), items.end());
    };
    switch (v.kind()) {
      case ValueKind::None:
        return fb::CreateEValue(fbb, fb::KernelTypes::Null, fb::CreateNull(fbb).Union());
      case ValueKind::Int:
        return fb::CreateEValue(fbb, fb::KernelTypes::Int, fb::CreateInt(fbb, std::get<int64_t>(v.payload)).Union());
      case ValueKind::Bool:
        return fb::CreateEValue(fbb, fb::KernelTypes::Bool, fb::CreateBool(fbb, std::get<bool>(v.payload)).Union());
      case ValueKind::Double:
        return fb::CreateEValue(fbb, fb::KernelTypes::Double,
                                fb::CreateDouble(fbb, std::get<double>(v.payload)).Union());
      case ValueKind::String:
        return fb::CreateEValue(fbb, fb::KernelTypes::String,
                                fb::CreateString(fbb, str(fbb, std::get<std::string>(v.payload))).Union());
      case ValueKind::Tensor: {
        auto t = tensor(fbb, v.tensor(), plan_.bufferIdx[mi][vi], w);
        if (!t) return t.error();
        return fb::CreateEValue(fbb, fb::KernelTypes::Tensor, t.value().Union());
      }
      case ValueKind::IntList: {
        auto r = ids(std::get<IntList>(v.payload).items, false);
        if (!r) return r.error();
        std::vector<int64_t> items(r->begin(), r->end());
        return fb::CreateEValue(fbb, fb::KernelTypes::IntList, fb::CreateIntList(fbb, fbb.CreateVector(items)).Union());
      }
      case ValueKind::DoubleList:
        return fb::CreateEValue(fbb, fb::KernelTypes::DoubleList,
                                fb::CreateDoubleList(fbb, fbb.CreateVector(std::get<DoubleList>(v.payload).items)).Union());
      case ValueKind::BoolList: {
        std::vector<uint8_t> items;
        for (uint8_t b : std::get<BoolList>(v.payload).items) items.push_back(b ? 1 : 0);
        return fb::CreateEValue(fbb, fb::KernelTypes::BoolList, fb::CreateBoolList(fbb, fbb.CreateVector(items)).Union());
      }
      case ValueKind::TensorList: {
        auto r = ids(std::get<TensorList>(v.payload).items, false);
        if (!r) return r.error();
        return fb::CreateEValue(fbb, fb::KernelTypes::TensorList,
                                fb::CreateTensorList(fbb, fbb.CreateVector(r.value())).Union());
      }
      case ValueKind::OptionalTensorList: {
        auto r = ids(std::get<OptionalTensorList>(v.payload).items, true);
        if (!r) return r.error();
        return fb::CreateEValue(fbb, fb::KernelTypes::OptionalTensorList,
                                fb::CreateOptionalTensorList(fbb, fbb.CreateVector(r.value())).Union());
      }
    }
    return plan_.error(ErrorCode::Invalid, w + " kind", "a known value kind", std::to_string(static_cast<int>(v.kind())));
  }

  Result<flatbuffers::Offset<fb::Instruction>> instruction(Fbb& fbb, const Method& m, size_t mi, size_t ni,
                                                           uint32_t chainSize) {
    const Node& n = m.nodes[ni];
    std::string w = plan_.where(mi) + ".nodes[" + std::to_string(ni) + "]";
    size_t nv = m.values.size();
    for (size_t i = 0; i < n.args.size(); ++i)
      if (auto s = checkValue(n.args[i], nv, w + ".args[" + std::to_string(i) + "]"); !s) return s.error();
    auto need = [&](size_t count) -> Status {
      if (n.args.size() < count)
        return plan_.error(ErrorCode::Invalid, w + " (" + nodeKindName(n.kind) + ") args",
                           "at least " + std::to_string(count), std::to_string(n.args.size()));
      return Ok{};
    };
    switch (n.kind) {
      case NodeKind::Kernel: {
        if (n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size())
          return plan_.error(ErrorCode::OutOfRange, w + ".op", "< " + std::to_string(m.operators.size()) + " operators",
                             std::to_string(n.op));
        std::vector<int32_t> args(n.args.begin(), n.args.end());
        auto k = fb::CreateKernelCall(fbb, n.op, fbb.CreateVector(args));
        return fb::CreateInstruction(fbb, fb::InstructionArguments::KernelCall, k.Union());
      }
      case NodeKind::Delegate: {
        if (n.delegate < 0 || static_cast<size_t>(n.delegate) >= m.delegates.size())
          return plan_.error(ErrorCode::OutOfRange, w + ".delegate",
                             "< " + std::to_string(m.delegates.size()) + " delegates", std::to_string(n.delegate));
        std::vector<int32_t> args(n.args.begin(), n.args.end());
        auto d = fb::CreateDelegateCall(fbb, n.delegate, fbb.CreateVector(args));
        return fb::CreateInstruction(fbb, fb::InstructionArguments::DelegateCall, d.Union());
      }
      case NodeKind::Move: {
        if (auto s = need(1); !s) return s.error();
        ValueId to = n.args.size() >= 2 ? n.args[1] : (n.outputs.empty() ? kNoValue : n.outputs[0]);
        if (auto s = checkValue(to, nv, w + " move destination"); !s) return s.error();
        auto mv = fb::CreateMoveCall(fbb, n.args[0], to);
        return fb::CreateInstruction(fbb, fb::InstructionArguments::MoveCall, mv.Union());
      }
      case NodeKind::JumpFalse: {
        if (auto s = need(1); !s) return s.error();
        if (n.jumpTarget < 0 || n.jumpTarget > static_cast<int64_t>(chainSize))
          return plan_.error(ErrorCode::OutOfRange, w + ".jumpTarget",
                             "an instruction of its chain (<= " + std::to_string(chainSize) + ")",
                             std::to_string(n.jumpTarget));
        auto j = fb::CreateJumpFalseCall(fbb, n.args[0], static_cast<int32_t>(n.jumpTarget));
        return fb::CreateInstruction(fbb, fb::InstructionArguments::JumpFalseCall, j.Union());
      }
      case NodeKind::Free: {
        if (auto s = need(1); !s) return s.error();
        auto f = fb::CreateFreeCall(fbb, n.args[0]);
        return fb::CreateInstruction(fbb, fb::InstructionArguments::FreeCall, f.Union());
      }
    }
    return plan_.error(ErrorCode::Invalid, w + " kind", "a known node kind", std::to_string(static_cast<int>(n.kind)));
  }

  flatbuffers::Offset<fb::FrameList> frames(Fbb& fbb, const Node& n) {
    std::vector<flatbuffers::Offset<fb::Frame>> fr;
    for (const auto& f : n.meta.stackTrace)
      fr.push_back(fb::CreateFrame(fbb, str(fbb, f.file), f.line, str(fbb, f.function), str(fbb, f.context)));
    return fb::CreateFrameList(fbb, fbb.CreateVector(fr));
  }

  Result<flatbuffers::Offset<fb::ExecutionPlan>> method(Fbb& fbb, size_t mi) {
    const Method& m = p_.methods[mi];
    std::string w = plan_.where(mi);
    size_t nv = m.values.size();
    std::vector<flatbuffers::Offset<fb::EValue>> values;
    values.reserve(nv);
    for (size_t vi = 0; vi < nv; ++vi) {
      if (auto s = room(fbb, 4096 + payloadBytes(m.values[vi]), w + ".values"); !s) return s.error();
      auto r = value(fbb, m, mi, vi);
      if (!r) return r.error();
      values.push_back(r.value());
    }
    auto valuesVec = fbb.CreateVector(values);
    std::vector<int32_t> ins, outs;
    for (ValueId x : m.inputs) {
      if (auto s = checkValue(x, nv, w + ".inputs"); !s) return s.error();
      ins.push_back(x);
    }
    for (ValueId x : m.outputs) {
      if (auto s = checkValue(x, nv, w + ".outputs"); !s) return s.error();
      outs.push_back(x);
    }
    auto insVec = fbb.CreateVector(ins);
    auto outsVec = fbb.CreateVector(outs);
    // Chains: nodes grouped by Node::chain, in order within each chain.
    uint64_t nchains = m.chainCount;
    for (size_t ni = 0; ni < m.nodes.size(); ++ni) {
      uint32_t c = m.nodes[ni].chain;
      if (c >= static_cast<uint64_t>(m.chainCount) + m.nodes.size())
        return plan_.error(ErrorCode::OutOfRange, w + ".nodes[" + std::to_string(ni) + "].chain",
                           "< " + std::to_string(m.chainCount) + " chains", std::to_string(c));
      nchains = std::max<uint64_t>(nchains, uint64_t(c) + 1);
    }
    std::vector<std::vector<size_t>> byChain(nchains);
    for (size_t ni = 0; ni < m.nodes.size(); ++ni) byChain[m.nodes[ni].chain].push_back(ni);
    std::vector<flatbuffers::Offset<fb::Chain>> chains;
    for (uint64_t c = 0; c < nchains; ++c) {
      std::vector<flatbuffers::Offset<fb::Instruction>> instrs;
      for (size_t ni : byChain[c]) {
        if (auto s = room(fbb, 4096 + 4 * m.nodes[ni].args.size(), w + ".chains"); !s) return s.error();
        auto r = instruction(fbb, m, mi, ni, static_cast<uint32_t>(byChain[c].size()));
        if (!r) return r.error();
        instrs.push_back(r.value());
      }
      auto instrVec = fbb.CreateVector(instrs);
      flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::FrameList>>> stVec = 0;
      if (stackTraces_) {
        // One frame list per instruction (empty for nodes without a trace).
        std::vector<flatbuffers::Offset<fb::FrameList>> st;
        for (size_t ni : byChain[c]) {
          uint64_t bytes = 0;
          for (const auto& f : m.nodes[ni].meta.stackTrace)
            bytes += 64 + f.file.size() + f.function.size() + f.context.size();
          if (auto s = room(fbb, 4096 + bytes, w + " stack traces"); !s) return s.error();
          st.push_back(frames(fbb, m.nodes[ni]));
        }
        stVec = fbb.CreateVector(st);
      }
      // The IR does not keep chain inputs/outputs; ExecuTorch writes them empty.
      auto none = fbb.CreateVector(std::vector<int32_t>{});
      chains.push_back(fb::CreateChain(fbb, none, none, instrVec, stVec));
    }
    auto chainsVec = fbb.CreateVector(chains);
    std::vector<flatbuffers::Offset<fb::Operator>> ops;
    for (const auto& o : m.operators) ops.push_back(fb::CreateOperator(fbb, str(fbb, o.name), str(fbb, o.overload)));
    auto opsVec = fbb.CreateVector(ops);
    std::vector<flatbuffers::Offset<fb::BackendDelegate>> dels;
    for (size_t d = 0; d < m.delegates.size(); ++d) {
      const Delegate& del = m.delegates[d];
      uint64_t specBytes = 0;
      for (const auto& cs : del.compileSpecs) specBytes += 64 + cs.key.size() + cs.value.size();
      if (auto s = room(fbb, 4096 + specBytes, w + ".delegates"); !s) return s.error();
      std::vector<flatbuffers::Offset<fb::CompileSpec>> specs;
      for (const auto& cs : del.compileSpecs)
        specs.push_back(fb::CreateCompileSpec(fbb, str(fbb, cs.key), fbb.CreateVector(cs.value)));
      auto specVec = fbb.CreateVector(specs);
      const auto& ref = plan_.delegateRefs[mi][d];
      auto processed = fb::CreateBackendDelegateDataReference(
          fbb, ref.segment ? fb::DataLocation::SEGMENT : fb::DataLocation::INLINE, ref.index);
      dels.push_back(fb::CreateBackendDelegate(fbb, str(fbb, del.backendId), processed, specVec));
    }
    auto delsVec = fbb.CreateVector(dels);
    for (size_t i = 0; i < m.nonConstBufferSizes.size(); ++i)
      if (m.nonConstBufferSizes[i] < 0)
        return plan_.error(ErrorCode::Invalid, w + ".nonConstBufferSizes[" + std::to_string(i) + "]", ">= 0",
                           std::to_string(m.nonConstBufferSizes[i]));
    auto sizesVec = fbb.CreateVector(m.nonConstBufferSizes);
    if (auto s = room(fbb, 4096 + m.name.size() + m.encodedInputSpec.size() + m.encodedOutputSpec.size() +
                               8 * m.nonConstBufferSizes.size() + 64 * m.operators.size(),
                      w);
        !s)
      return s.error();
    auto meta = fb::CreateContainerMetadata(fbb, str(fbb, m.encodedInputSpec), str(fbb, m.encodedOutputSpec));
    return fb::CreateExecutionPlan(fbb, str(fbb, m.name), meta, valuesVec, insVec, outsVec, chainsVec, opsVec, delsVec,
                                   sizesVec);
  }

 public:
  size_t filledDimOrders_ = 0;

 private:
  const Program& p_;
  const PteWriteOptions& o_;
  Planner& plan_;
  bool stackTraces_ = false;
};

/// The whole .pte: plan, flatbuffer, header, segment layout.
Result<FilePlan> planPte(const Program& program, const PteWriteOptions& o, Planner& plan, PteWriteReport& report) {
  if (auto s = plan.plan(); !s) return s.error();
  std::vector<uint64_t> segOffsets;
  uint64_t segDataSize = layOutSegments(plan.segments, o.segmentAlignment, segOffsets);
  Fbb fbb(1 << 16);
  ProgramEmitter em(program, o, plan);
  if (auto s = em.build(fbb, segOffsets); !s) return s.error();
  if (em.filledDimOrders_)
    plan.notes.push_back(std::to_string(em.filledDimOrders_) + " tensors without a dim order written contiguous");
  FilePlan f;
  bool header = segDataSize > 0;  // as ExecuTorch: no segment bytes, no extended header
  if (!header) {
    f.head.assign(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
    f.size = f.head.size();
  } else {
    // The header keeps every alignment inside the flatbuffer: its padded
    // length is a multiple of the largest one (as ExecuTorch pads it to the
    // largest force_align of the schema).
    uint64_t maxAlign = std::max<uint64_t>({fbb.GetBufferMinAlignment(), o.constantTensorAlignment, o.delegateAlignment});
    uint64_t headerLen = alignUp(kEh00Length, maxAlign);
    uint64_t programSize = headerLen + fbb.GetSize();
    if (programSize > FLATBUFFERS_MAX_BUFFER_SIZE)
      return plan.error(ErrorCode::Overflow, "the program's flatbuffer with its header", "< 2 GiB",
                        std::to_string(programSize) + " bytes");
    uint64_t base = alignUp(programSize, o.segmentAlignment);
    std::string h = "eh00";
    putLe32(h, kEh00Length);
    putLe64(h, programSize);
    putLe64(h, base);
    putLe64(h, segDataSize);
    h.resize(headerLen, '\0');
    f.head = insertHeader(fbb.GetBufferPointer(), fbb.GetSize(), h);
    addPieces(f, plan.segments, segOffsets, base);
    f.size = base + segDataSize;
    report.programSize = programSize;
    report.segmentBaseOffset = base;
    report.segmentDataSize = segDataSize;
  }
  if (!header) report.programSize = f.size;
  report.extendedHeader = header;
  report.segments = plan.segments.size();
  report.constants = plan.constants.size();
  report.mutableValues = plan.mutables.size();
  report.delegateSegments = plan.delegateSegments;
  report.inlineDelegates = plan.inlineData.size();
  report.namedData = plan.namedData.size();
  report.notes = plan.notes;
  return f;
}

/// One .ptd: FlatTensor with an FH01 header, one segment per distinct tensor.
FilePlan planPtd(const std::vector<ExternalEntry>& entries, const PteWriteOptions& o) {
  BlobPool pool;
  std::vector<SegmentPlan> segs;
  std::vector<uint32_t> segOf;
  for (const auto& e : entries) {
    bool added = false;
    uint32_t k = pool.add(e.bytes, &added);
    if (added) {
      SegmentPlan s;
      s.size = e.bytes.size;
      s.parts.emplace_back(0, e.bytes);
      segs.push_back(std::move(s));
    }
    segOf.push_back(k);
  }
  std::vector<uint64_t> offsets;
  uint64_t dataSize = layOutSegments(segs, o.ptdSegmentAlignment, offsets);
  Fbb fbb(4096);
  std::vector<flatbuffers::Offset<ft::DataSegment>> fsegs;
  for (size_t i = 0; i < segs.size(); ++i) fsegs.push_back(ft::CreateDataSegment(fbb, offsets[i], segs[i].size));
  auto segVec = fbb.CreateVector(fsegs);
  std::vector<flatbuffers::Offset<ft::NamedData>> named;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    std::vector<int32_t> sizes(e.sizes.begin(), e.sizes.end());
    std::vector<uint8_t> dims = e.dimOrder;
    if (dims.empty())
      for (size_t d = 0; d < sizes.size(); ++d) dims.push_back(static_cast<uint8_t>(d));
    flatbuffers::Offset<ft::TensorLayout> layout = 0;
    if (e.hasLayout)
      layout = ft::CreateTensorLayout(fbb, static_cast<fb::ScalarType>(e.dtype), fbb.CreateVector(sizes),
                                      fbb.CreateVector(dims));
    named.push_back(ft::CreateNamedData(fbb, fbb.CreateString(e.key.data(), e.key.size()), segOf[i], layout));
  }
  auto namedVec = fbb.CreateVector(named);
  fbb.Finish(ft::CreateFlatTensor(fbb, 0, segVec, namedVec), "FT01");
  uint64_t raw = fbb.GetSize();
  uint64_t base = alignUp(raw + kFh01Padded, o.ptdSegmentAlignment);
  std::string h = "FH01";
  putLe32(h, kFh01Length);
  putLe64(h, kFh01Padded);  // flatbuffer offset, as ExecuTorch writes it
  putLe64(h, raw);          // flatbuffer size (without the header)
  putLe64(h, base);
  putLe64(h, dataSize);
  h.resize(kFh01Padded, '\0');
  FilePlan f;
  f.head = insertHeader(fbb.GetBufferPointer(), fbb.GetSize(), h);
  addPieces(f, segs, offsets, base);
  f.size = base + dataSize;
  return f;
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::string> serializePte(const Program& program, const PteWriteOptions& options, PteWriteReport* report) {
  PteWriteOptions o = options;
  o.writeDataFiles = false;  // the .pte alone; external tensors need not be resolved
  Planner plan(program, o, "(in memory)");
  PteWriteReport r;
  auto f = planPte(program, o, plan, r);
  if (!f) return f.error();
  StringSink sink;
  sink.out.reserve(f->size);
  if (auto s = emit(f.value(), sink); !s) return s.error();
  if (report) *report = std::move(r);
  return std::move(sink.out);
}

Result<std::map<std::string, std::string>> serializeDataFiles(const Program& program, const PteWriteOptions& options) {
  PteWriteOptions o = options;
  o.writeDataFiles = true;
  Planner plan(program, o, "(in memory)");
  if (auto s = plan.plan(); !s) return s.error();
  std::map<std::string, std::string> out;
  for (const auto& [tag, entries] : plan.external) {
    StringSink sink;
    if (auto s = emit(planPtd(entries, o), sink); !s) return s.error();
    out.emplace(tag, std::move(sink.out));
  }
  return out;
}

Result<PteWriteReport> writePte(const Program& program, const std::string& path, const PteWriteOptions& options) {
  PteWriteReport report;
  Planner plan(program, options, path);
  auto pte = planPte(program, options, plan, report);
  if (!pte) return pte.error();
  std::string dir = options.ptdDir.empty() ? dirOf(path) : options.ptdDir;
  std::vector<std::pair<std::string, FilePlan>> files;  // .ptd files first, the .pte last
  std::set<std::string> paths{path};
  for (const auto& [tag, entries] : plan.external) {
    std::string p = dir + "/" + tag + ".ptd";
    if (!paths.insert(p).second)
      return Error{ErrorCode::Invalid, p, std::nullopt, "data file of tag '" + tag + "'",
                   "a path different from the program's and the other data files'", "the same path"};
    files.emplace_back(p, planPtd(entries, options));
    report.externalTensors += entries.size();
  }
  files.emplace_back(path, std::move(pte.value()));
  // Every file is written and flushed under a temporary name before any is
  // renamed into place: a failure while writing leaves all existing files as they were.
  // Temporaries of an earlier export that was killed go first; they are named
  // PATH.tmp-XXXXXX, so they never pass for outputs.
  for (auto& [p, f] : files) removeStaleTemporaries(p);
  uint64_t faultBudget = faultAfterBytes();
  std::vector<std::unique_ptr<TempFileSink>> sinks;
  MappedRanges mapped(program);
  Progress progress{&options.progress};
  for (const auto& [p, f] : files) progress.total += f.size;
  for (auto& [p, f] : files) {
    auto sink = std::make_unique<TempFileSink>(p, &faultBudget);
    sink->setKernelCopy(options.kernelCopy);
    if (auto s = sink->open(); !s) return s.error();
    if (auto s = emit(f, *sink, mapped, progress); !s) {
      Error e = s.error();
      if (e.file.empty()) e.file = p;
      return e;
    }
    if (auto s = sink->finish(); !s) return s.error();
    progress.before += f.size;
    sinks.push_back(std::move(sink));
  }
  for (auto& s : sinks)
    if (auto st = s->commit(); !st) return st.error();
  // Make the renames durable.
  std::set<std::string> dirs{dirOf(path), dir};
  for (const auto& d : dirs) syncFolder(d);
  report.files.push_back(WrittenFile{path, files.back().second.size});
  for (size_t i = 0; i + 1 < files.size(); ++i) report.files.push_back(WrittenFile{files[i].first, files[i].second.size});
  return report;
}

}  // namespace lstudio
