#include "engine/formats/pte/FileOutput.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/support/AtomicFile.h"

namespace lstudio::pte {

TempFileSink::~TempFileSink() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty() && !committed_) ::unlink(tmp_.c_str());
}

Status TempFileSink::open() {
  std::string t = temporaryNameFor(path_);
  int fd = ::mkstemp(t.data());
  if (fd < 0) return ioError("cannot create a temporary file in the destination folder");
  fd_ = fd;
  tmp_ = t;
  return Ok{};
}

Status TempFileSink::write(const uint8_t* p, uint64_t n) {
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

Result<bool> TempFileSink::copyFrom(int fd, uint64_t offset, uint64_t n) {
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

Status TempFileSink::finish() {
  if (*faultBudget_ == 0) ::raise(SIGKILL);  // the hook's "everything written, nothing renamed"
  if (::fchmod(fd_, 0644) != 0) return ioError("cannot set permissions");
  if (::fsync(fd_) != 0) return ioError("cannot flush to disk");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return ioError("cannot close");
  return Ok{};
}

Status TempFileSink::commit() {
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    return ioError("cannot rename the temporary file into place");
  committed_ = true;
  return Ok{};
}

Error TempFileSink::ioError(const char* what, std::optional<uint64_t> at) const {
  return Error{ErrorCode::Io, path_, at, what, "", std::strerror(errno)};
}

MappedRanges::MappedRanges(const Program& p) {
  add(p.backing.get());
  for (const auto& f : p.externalFiles) add(f.get());
}

std::optional<std::pair<int, uint64_t>> MappedRanges::source(const uint8_t* p, uint64_t n) const {
  for (const auto& [lo, hi, fd] : ranges_)
    if (fd >= 0 && p >= lo && p + n <= hi) return std::make_pair(fd, static_cast<uint64_t>(p - lo));
  return std::nullopt;
}

void MappedRanges::release(const uint8_t* p, uint64_t n) const {
  for (const auto& [lo, hi, fd] : ranges_) {
    if (p < lo || p + n > hi) continue;
    static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uintptr_t start = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
    if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
    return;
  }
}

void MappedRanges::add(const MappedFile* f) {
  if (f && f->isMapped() && f->size()) ranges_.push_back({f->data(), f->data() + f->size(), f->fd()});
}

Status streamFile(const FilePlan& f, Sink& out, const MappedRanges& mapped, const Progress& progress) {
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

}  // namespace lstudio::pte
