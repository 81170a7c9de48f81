#include "engine/support/Error.h"

#include <cstdio>

namespace lstudio {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::Io: return "io";
    case ErrorCode::Truncated: return "truncated";
    case ErrorCode::BadMagic: return "bad-magic";
    case ErrorCode::BadHeader: return "bad-header";
    case ErrorCode::Verification: return "verification";
    case ErrorCode::OutOfRange: return "out-of-range";
    case ErrorCode::Overflow: return "overflow";
    case ErrorCode::Invalid: return "invalid";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::MissingKey: return "missing-key";
    case ErrorCode::Mismatch: return "mismatch";
    case ErrorCode::RuntimeRule: return "runtime-rule";
  }
  return "unknown";
}

std::string Error::message() const {
  std::string m = file.empty() ? std::string("<memory>") : file;
  m += ": ";
  if (offset) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "at byte %llu (0x%llx): ", static_cast<unsigned long long>(*offset),
                  static_cast<unsigned long long>(*offset));
    m += buf;
  }
  m += what;
  if (!expected.empty()) {
    m += ": expected ";
    m += expected;
    m += ", found ";
    m += found.empty() ? "?" : found;
  } else if (!found.empty()) {  // an I/O error: what failed and why ("No such file or directory")
    m += ": ";
    m += found;
  }
  return m;
}

}  // namespace lstudio
