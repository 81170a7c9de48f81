#include "engine/run/Npy.h"

#include <cctype>
#include <fstream>
#include <iterator>

#include "engine/run/RunValue.h"

namespace lstudio::run {

namespace {

struct NpyType {
  const char* descr;  // without the byte-order character
  ScalarType dtype;
};
// The NumPy types the interpreter's dtypes are (bfloat16 has none; it is written as float32).
constexpr NpyType kTypes[] = {
    {"f4", ScalarType::Float}, {"f8", ScalarType::Double}, {"f2", ScalarType::Half},   {"i8", ScalarType::Long},
    {"i4", ScalarType::Int},   {"i2", ScalarType::Short},  {"i1", ScalarType::Char},   {"u1", ScalarType::Byte},
    {"b1", ScalarType::Bool},  {"u2", ScalarType::UInt16}, {"u4", ScalarType::UInt32}, {"u8", ScalarType::UInt64},
};

/// The header dict's values: 'descr' a string, 'fortran_order' a bool, 'shape' a tuple of
/// ints, read from the Python literal NumPy writes (keys in any order, either quote).
class HeaderDict {
 public:
  HeaderDict(const std::string& text, const std::string& path, uint64_t at) : t_(text), path_(path), at_(at) {}

  Status parse() {
    if (!expect('{')) return bad("'{' opening the header dict");
    while (true) {
      skip();
      if (peek('}')) return Ok{};
      std::string key;
      if (!string(key)) return bad("a quoted key");
      if (!expect(':')) return bad("':' after '" + key + "'");
      skip();
      if (key == "descr") {
        if (!string(descr)) return bad("a quoted type for 'descr'");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (word("True")) fortran = true;
        else if (word("False")) fortran = false;
        else return bad("True or False for 'fortran_order'");
      } else if (key == "shape") {
        if (!tuple()) return bad("a tuple of sizes for 'shape'");
        haveShape = true;
      } else {
        return bad("'descr', 'fortran_order' or 'shape' (found '" + key + "')");
      }
      skip();
      if (peek(',')) ++i_;
      else if (!peek('}')) return bad("',' or '}' after a value");
    }
  }

  std::string descr;
  bool fortran = false, haveDescr = false, haveShape = false;
  std::vector<int64_t> shape;

 private:
  void skip() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  bool peek(char c) { return i_ < t_.size() && t_[i_] == c; }
  bool expect(char c) {
    skip();
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  bool word(const char* w) {
    std::string s(w);
    if (t_.compare(i_, s.size(), s) != 0) return false;
    i_ += s.size();
    return true;
  }
  bool string(std::string& out) {
    skip();
    if (!peek('\'') && !peek('"')) return false;
    char q = t_[i_++];
    size_t end = t_.find(q, i_);
    if (end == std::string::npos) return false;
    out = t_.substr(i_, end - i_);
    i_ = end + 1;
    return true;
  }
  bool tuple() {
    if (!expect('(')) return false;
    while (true) {
      skip();
      if (peek(')')) return ++i_, true;
      if (i_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[i_]))) return false;
      int64_t v = 0;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
        if (v > (INT64_MAX - 9) / 10) return false;
        v = v * 10 + (t_[i_++] - '0');
      }
      while (i_ < t_.size() && (t_[i_] == 'L' || t_[i_] == 'l')) ++i_;  // Python 2's long suffix
      shape.push_back(v);
      skip();
      if (peek(',')) ++i_;
      else if (!peek(')')) return false;
    }
  }
  Status bad(const std::string& expected) {
    return Error{ErrorCode::BadHeader, path_, at_ + i_, ".npy header", expected, t_.substr(i_, 24)};
  }

  const std::string& t_;
  const std::string& path_;
  uint64_t at_;
  size_t i_ = 0;
};

}  // namespace

std::string npyBytes(const HostValue& o) {
  std::string descr;
  std::string data;
  if (o.kind != ValueKind::Tensor) {
    descr = "<f8";
    data.assign(reinterpret_cast<const char*>(&o.number), sizeof(double));
  } else if (o.dtype == ScalarType::BFloat16) {
    descr = "<f4";
    RunTensor t;
    t.dtype = o.dtype;
    t.sizes = o.sizes;
    t.data = const_cast<uint8_t*>(o.bytes.data());
    for (uint64_t i = 0; i < t.numel(); ++i) {
      float f = loadAs<float>(t, i);
      data.append(reinterpret_cast<const char*>(&f), 4);
    }
  } else {
    descr = "|u1";  // an opaque type: its bytes
    for (const NpyType& n : kTypes)
      if (n.dtype == o.dtype) descr = std::string(elementSize(o.dtype) == 1 ? "|" : "<") + n.descr;
    data.assign(reinterpret_cast<const char*>(o.bytes.data()), o.bytes.size());
  }
  std::string shape = "(";
  if (o.kind == ValueKind::Tensor)
    for (int64_t d : o.sizes) shape += std::to_string(d) + (o.sizes.size() == 1 ? "," : ", ");
  if (shape.size() > 2 && shape.back() == ' ') shape.resize(shape.size() - 2);
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 has a 2-byte header length; a longer header (thousands of dimensions) needs 2.0.
  size_t lenBytes = header.size() + 1 + 64 + 12 > 0xffff ? 4 : 2;
  size_t total = 8 + lenBytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(lenBytes == 2 ? 1 : 2);
  out += '\x00';
  for (size_t i = 0; i < lenBytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

Result<HostValue> parseNpy(const std::string& bytes, const std::string& path) {
  auto fail = [&](ErrorCode code, uint64_t at, const std::string& what, const std::string& expected,
                  const std::string& found) { return Error{code, path, at, what, expected, found}; };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return fail(ErrorCode::BadMagic, 0, ".npy magic", "\\x93NUMPY (a NumPy .npy file)",
                bytes.size() < 6 ? std::to_string(bytes.size()) + " bytes" : "other bytes");
  auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])); };
  uint64_t major = byte(6);
  if (major < 1 || major > 3) return fail(ErrorCode::Unsupported, 6, ".npy version", "1, 2 or 3", std::to_string(major));
  size_t lenBytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lenBytes) return fail(ErrorCode::Truncated, 8, ".npy header length", "the length", "end of file");
  uint64_t headerLen = 0;
  for (size_t i = 0; i < lenBytes; ++i) headerLen |= byte(8 + i) << (8 * i);
  uint64_t start = 8 + lenBytes;
  if (headerLen > bytes.size() - start)
    return fail(ErrorCode::Truncated, start, ".npy header", std::to_string(headerLen) + " bytes",
                std::to_string(bytes.size() - start) + " bytes to the end");
  std::string text = bytes.substr(start, headerLen);
  HeaderDict dict(text, path, start);
  if (auto s = dict.parse(); !s) return s.error();
  if (!dict.haveDescr || !dict.haveShape)
    return fail(ErrorCode::BadHeader, start, ".npy header", "'descr' and 'shape'", text.substr(0, 60));
  if (dict.fortran)
    return fail(ErrorCode::Unsupported, start, ".npy fortran_order", "False (C order; save with np.ascontiguousarray)",
                "True");
  HostValue v;
  v.kind = ValueKind::Tensor;
  const std::string& d = dict.descr;
  bool found = false;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '|' || d[0] == '='))
    for (const NpyType& n : kTypes)
      if (d.compare(1, 2, n.descr) == 0) v.dtype = n.dtype, found = true;
  if (found && d[0] == '|' && elementSize(v.dtype) != 1) found = false;
  if (!found)
    return fail(ErrorCode::Unsupported, start, ".npy descr",
                "a little-endian bool, integer or float type (<f4, <i8, |b1, ...)", d);
  v.sizes = dict.shape;
  uint64_t n = elementSize(v.dtype);
  for (int64_t s : v.sizes) {
    if (s && n > UINT64_MAX / static_cast<uint64_t>(s))
      return fail(ErrorCode::Overflow, start, ".npy shape", "a size in 64 bits", text.substr(0, 60));
    n *= static_cast<uint64_t>(s);
  }
  uint64_t dataAt = start + headerLen, have = bytes.size() - dataAt;
  if (have != n)
    return fail(have < n ? ErrorCode::Truncated : ErrorCode::Invalid, dataAt, ".npy data",
                std::to_string(n) + " bytes for the shape and type", std::to_string(have) + " bytes");
  v.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(dataAt), bytes.end());
  v.checksum = fnv1a64(v.bytes.data(), v.bytes.size());
  return v;
}

Result<HostValue> readNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{ErrorCode::Io, path, std::nullopt, "opening", "a readable .npy file", "cannot open it"};
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return Error{ErrorCode::Io, path, std::nullopt, "reading", "the whole file", "a read error"};
  return parseNpy(bytes, path);
}

}  // namespace lstudio::run
