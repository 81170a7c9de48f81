#include "engine/formats/delegates/OtherPayloads.h"

#include <algorithm>
#include <cstring>

#include "engine/support/FormatUtil.h"

namespace lstudio {
namespace {

PayloadLayout vulkan(const Bytes& b) {
  PayloadLayout l;
  l.format = "Vulkan VH00";
  if (b.size < 30) {
    l.error = "the VH00 header needs 30 bytes, the payload has " + std::to_string(b.size);
    return l;
  }
  const uint8_t* p = b.data;
  uint64_t fbOff = readLe32(p + 10), fbSize = readLe32(p + 14), bytesOff = readLe32(p + 18), bytesSize = readLe64(p + 22);
  uint64_t fbEnd = 0, bytesEnd = 0;
  if (!checkedAdd(fbOff, fbSize, fbEnd) || fbEnd > b.size || !checkedAdd(bytesOff, bytesSize, bytesEnd) ||
      bytesEnd > b.size) {
    l.error = "at byte 10: the VH00 ranges (flatbuffer " + std::to_string(fbOff) + "+" + std::to_string(fbSize) +
              ", constant bytes " + std::to_string(bytesOff) + "+" + std::to_string(bytesSize) + ") pass the " +
              std::to_string(b.size) + "-byte payload";
    return l;
  }
  l.sections = {{"VH00 header", 0, 30}, {"Vulkan graph (VK00 flatbuffer)", fbOff, fbSize},
                {"Vulkan constant bytes", bytesOff, bytesSize}};
  if (fbSize >= 8) l.facts.push_back({"graph identifier", describeMagic({reinterpret_cast<const char*>(p) + fbOff + 4, 4})});
  l.facts.push_back({"constant bytes", formatBytes(bytesSize)});
  return l;
}

/// "int8[1, 1, 1, 1]"-like text of one Vela input or output record: six
/// int32 shape entries, element size, offset and region.
std::string velaIo(const uint8_t* r) {
  std::string s = "[";
  for (int i = 0; i < 6; ++i) s += (i ? ", " : "") + std::to_string(int32_t(readLe32(r + 4 * i)));
  return s + "], " + std::to_string(int32_t(readLe32(r + 24))) + "-byte elements, offset " +
         std::to_string(int32_t(readLe32(r + 28))) + ", region " + std::to_string(int32_t(readLe32(r + 32)));
}

void velaIoFacts(PayloadLayout& l, const std::string& what, const uint8_t* data, uint64_t size) {
  if (size < 4) return;
  uint32_t n = readLe32(data);
  if (uint64_t(n) * 36 + 4 > size) {
    l.error = what + " block announces " + std::to_string(n) + " records in " + std::to_string(size) + " bytes";
    return;
  }
  for (uint32_t i = 0; i < n; ++i) l.facts.push_back({what + " " + std::to_string(i), velaIo(data + 4 + 36 * i)});
}

PayloadLayout vela(const Bytes& b) {
  PayloadLayout l;
  l.format = "Ethos-U Vela stream";
  uint64_t at = 0;
  bool ended = false;
  while (!ended) {
    if (b.size - at < 32) {
      l.error = "at byte " + std::to_string(at) + ": a block header needs 32 bytes, " + std::to_string(b.size - at) +
                " remain (no vela_end_stream)";
      break;
    }
    const uint8_t* h = b.data + at;
    std::string name(reinterpret_cast<const char*>(h), strnlen(reinterpret_cast<const char*>(h), 16));
    uint64_t length = readLe32(h + 16), padded = (length + 15) / 16 * 16;
    bool external = h[20] != 0;
    if (padded > b.size - at - 32) {
      l.error = "at byte " + std::to_string(at) + ": block " + name + " of " + std::to_string(length) +
                " bytes passes the payload's end";
      break;
    }
    const uint8_t* data = h + 32;
    l.sections.push_back({"Ethos-U block " + name + (external ? " (reference to named data)" : ""), at, 32 + padded});
    if (name == "scratch_size" && length >= 4) l.facts.push_back({"scratch", formatBytes(readLe32(data))});
    if (name == "cmd_data" || name == "weight_data")
      l.facts.push_back({name == "cmd_data" ? "command stream" : "weights",
                         external ? "in named data " + std::string(reinterpret_cast<const char*>(data),
                                                                   std::min<uint64_t>(length, 64))
                                  : formatBytes(length)});
    if ((name == "inputs" || name == "outputs") && !external)
      velaIoFacts(l, name == "inputs" ? "input" : "output", data, length);
    ended = name == "vela_end_stream";
    at += 32 + padded;
  }
  return l;
}

}  // namespace

PayloadLayout describePayload(const Bytes& blob) {
  if (blob.size >= 8 && std::memcmp(blob.data + 4, "VH00", 4) == 0) return vulkan(blob);
  if (blob.size >= 16 && std::memcmp(blob.data, "vela_bin_stream", 16) == 0) return vela(blob);
  return {};
}

}  // namespace lstudio
