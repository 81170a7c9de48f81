#include "engine/support/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace lstudio {

std::string temporaryNameFor(const std::string& path) { return path + ".tmp-XXXXXX"; }

void removeStaleTemporaries(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    // Exactly mkstemp's six characters after the prefix, and a regular file.
    if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0 &&
        it->is_regular_file(ec))
      fs::remove(it->path(), ec);
  }
}

void syncFolder(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

uint64_t faultAfterBytes() {
  const char* v = std::getenv("LSTUDIO_FAULT_AFTER_BYTES");
  if (!v || !*v) return UINT64_MAX;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  return end && *end == '\0' ? static_cast<uint64_t>(n) : UINT64_MAX;
}

Status writeFileAtomically(const std::string& path, std::string_view data) {
  removeStaleTemporaries(path);
  std::string tmp = temporaryNameFor(path);
  int fd = mkstemp(tmp.data());
  auto fail = [&](const char* what) {
    Error e{ErrorCode::Io, path, std::nullopt, what, "", std::strerror(errno)};
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  };
  if (fd < 0) return Error{ErrorCode::Io, path, std::nullopt, "cannot create a temporary file beside it", "", std::strerror(errno)};
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  mode_t mask = ::umask(0);  // mkstemp makes 0600; honour the user's umask instead
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) return fail("cannot set permissions");
  if (::fsync(fd) != 0) return fail("cannot flush to disk");
  if (::close(fd) != 0) {
    fd = -1;
    return fail("cannot close");
  }
  fd = -1;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename the temporary file into place");
  syncFolder(std::filesystem::path(path).parent_path().string());  // make the rename durable
  return Ok{};
}

}  // namespace lstudio
