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

bool decodeBase64(std::string_view text, std::string& out) {
  auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return false;
  out.clear();
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else if (pad > 0 || (v[k] = sextet(c)) < 0) {
        return false;
      }
    }
    uint32_t n = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
    out.push_back(char(n >> 16));
    if (pad < 2) out.push_back(char(n >> 8 & 0xFF));
    if (pad < 1) out.push_back(char(n & 0xFF));
  }
  return true;
}

}  // namespace lstudio
