#include "engine/support/FormatUtil.h"

#include <cstdio>

namespace lstudio {

std::string describeMagic(std::string_view b) {
  std::string s = "\"";
  bool printable = true;
  for (unsigned char c : b) printable = printable && c >= 0x20 && c < 0x7f;
  if (printable) {
    s += std::string(b) + "\"";
  } else {
    s = "bytes";
    for (unsigned char c : b) {
      char buf[4];
      std::snprintf(buf, sizeof buf, " %02x", c);
      s += buf;
    }
  }
  if (b == "FT01") s += " (an ExecuTorch .ptd data file)";
  else if (b == "BP08") s += " (a bundled program)";
  else if (b.substr(0, 2) == "ET") s += " (an ExecuTorch program of another schema version)";
  return s;
}

std::string formatBytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace lstudio
