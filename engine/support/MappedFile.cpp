#include "engine/support/MappedFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lstudio {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  auto fail = [&](const char* what) {
    return Error{ErrorCode::Io, path, std::nullopt, what, "", std::strerror(errno)};
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open the file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto e = fail("cannot stat the file");
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{ErrorCode::Io, path, std::nullopt, "not a regular file", "", ""};
  }
  std::shared_ptr<MappedFile> f(new MappedFile);
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      auto e = fail("cannot map the file");
      ::close(fd);
      return e;
    }
    f->data_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
    f->fd_ = fd;
    return std::shared_ptr<const MappedFile>(std::move(f));
  }
  ::close(fd);
  return std::shared_ptr<const MappedFile>(std::move(f));
}

std::shared_ptr<const MappedFile> MappedFile::fromBytes(std::string path, const void* data, uint64_t size) {
  std::shared_ptr<MappedFile> f(new MappedFile);
  f->path_ = std::move(path);
  f->size_ = size;
  // 64-byte alignment so flatbuffer alignment checks behave as on a mapped file.
  uint64_t rounded = (size + 63) / 64 * 64;
  f->owned_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded ? rounded : 64)));
  if (size) std::memcpy(f->owned_.get(), data, size);
  f->data_ = f->owned_.get();
  return f;
}

std::shared_ptr<const MappedFile> MappedFile::generated(std::string path, uint64_t size,
                                                        const std::function<void(uint8_t*)>& fill) {
  std::shared_ptr<MappedFile> f(new MappedFile);
  f->path_ = std::move(path);
  f->size_ = size;
  uint64_t rounded = (size + 63) / 64 * 64;
  f->owned_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, rounded ? rounded : 64)));
  if (!f->owned_) return nullptr;  // out of memory: the caller reports it
  f->data_ = f->owned_.get();
  if (size) fill(f->owned_.get());
  return f;
}

Result<std::shared_ptr<const MappedFile>> MappedFile::spilled(std::string path, const std::string& dir, uint64_t size,
                                                              const std::function<Status(int fd)>& write) {
  auto fail = [&](const char* what, int fd) {
    Error e{ErrorCode::Io, dir, std::nullopt, what, "", std::strerror(errno)};
    if (fd >= 0) ::close(fd);
    return e;
  };
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
    std::string name = dir + "/.lstudio-spill-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) return fail("cannot create a temporary file in the folder", -1);
    ::unlink(name.c_str());
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return fail("cannot size a temporary file in the folder", fd);
  if (auto s = write(fd); !s) {
    ::close(fd);
    return s.error();
  }
  std::shared_ptr<MappedFile> f(new MappedFile);
  f->path_ = std::move(path);
  f->size_ = size;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return fail("cannot map a temporary file in the folder", fd);
    f->data_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
  }
  f->fd_ = fd;
  return std::shared_ptr<const MappedFile>(std::move(f));
}

void MappedFile::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace lstudio
