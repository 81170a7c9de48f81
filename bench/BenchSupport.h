// Small helpers shared by the benchmarks: timing, medians, and the plain
// copy (read + write in 8 MiB chunks + fsync) they compare writers against.
#pragma once

#include <errno.h>  // program_invocation_short_name (glibc)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::exit(1);
}

/// Copies `from` to `to`: read and write in 8 MiB chunks, then fsync.
/// Returns the seconds it took.
inline double copyOnce(const std::string& from, const std::string& to) {
  auto t0 = Clock::now();
  int in = ::open(from.c_str(), O_RDONLY);
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) die("cannot copy " + from);
  std::unique_ptr<char[]> buf(new char[8 << 20]);
  for (;;) {
    ssize_t n = ::read(in, buf.get(), 8 << 20);
    if (n < 0) die("read failed");
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.get() + done, static_cast<size_t>(n - done));
      if (w <= 0) die("write failed");
      done += w;
    }
  }
  if (::fsync(out) != 0) die("fsync failed");
  ::close(in);
  ::close(out);
  return seconds(t0);
}

}  // namespace bench
