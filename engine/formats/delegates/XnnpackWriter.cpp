#include "engine/formats/delegates/XnnpackWriter.h"

#include <flatbuffers/idl.h>
#include <openssl/evp.h>

#include "engine/formats/schema/xnnpack_fbs.h"

namespace lstudio::xnnpack {
namespace {

constexpr uint16_t kHeaderLength = 30;  // 4 zero bytes, "XH00", u16 length, u32 x3, u64
constexpr size_t kAlignment = 16;       // CONSTANT_TENSOR_ALIGNMENT

size_t padded(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

template <class T>
void putLittleEndian(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(char(uint64_t(v) >> (8 * i) & 0xFF));
}

}  // namespace

Result<std::string> payloadFromGraphJson(const std::string& json) {
  // One parser per payload: flatbuffers' Parser keeps state between documents.
  flatbuffers::Parser parser;
  if (!parser.Parse(kXnnpackSchema))
    return Error{ErrorCode::Invalid, "xnnpack.fbs", std::nullopt, "the XNNGraph schema", "a schema flatbuffers parses",
                 parser.error_};
  if (!parser.Parse(json.c_str()))
    return Error{ErrorCode::Invalid, "XNNGraph", std::nullopt, "the XNNPACK graph", "JSON that matches xnnpack.fbs",
                 parser.error_};
  const auto* fb = reinterpret_cast<const char*>(parser.builder_.GetBufferPointer());
  const size_t fbSize = parser.builder_.GetSize();
  const size_t headerPadded = padded(kHeaderLength), fbPadded = padded(fbSize);
  std::string out;
  out.reserve(headerPadded + fbPadded);
  out.append(4, '\0');
  out += "XH00";
  putLittleEndian<uint16_t>(out, kHeaderLength);
  putLittleEndian<uint32_t>(out, uint32_t(headerPadded));
  putLittleEndian<uint32_t>(out, uint32_t(fbSize));
  putLittleEndian<uint32_t>(out, uint32_t(headerPadded + fbPadded));
  putLittleEndian<uint64_t>(out, 0);  // constant data: none, every constant is named data
  out.resize(headerPadded, '\0');
  out.append(fb, fbSize);
  out.resize(headerPadded + fbPadded, '\0');
  return out;
}

std::string sha256Hex(const uint8_t* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data, size, digest, &n, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

}  // namespace lstudio::xnnpack
