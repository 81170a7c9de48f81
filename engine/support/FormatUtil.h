// Small helpers shared by the file readers: little-endian loads, checked
// arithmetic, and human-readable descriptions of what was found.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace lstudio {

inline uint32_t readLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the formats are little-endian, as is every host the studio targets
  return v;
}
inline uint64_t readLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// out = a + b; false on overflow.
inline bool checkedAdd(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }

/// Quotes printable magic bytes, hex-dumps the rest, and names well-known
/// other formats ("a zip archive", "a .ptd data file").
std::string describeMagic(std::string_view fourBytes);

/// "1.5 KiB", "3.0 MiB", "12 B".
std::string formatBytes(uint64_t n);

/// Standard base64 (RFC 4648, '=' padding, no line breaks) into `out`; false
/// on any other character or a bad length. The engine links no Qt, and no
/// Debian library the project uses decodes it, hence these few lines.
bool decodeBase64(std::string_view text, std::string& out);

}  // namespace lstudio
