#include "engine/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace lstudio {

Status writeFileAtomically(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp-XXXXXX";
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
  return Ok{};
}

}  // namespace lstudio
