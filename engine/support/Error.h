// Typed errors and a Result<T> for every engine API: nothing throws across it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace lstudio {

enum class ErrorCode {
  Io,            ///< the file cannot be opened or mapped
  Truncated,     ///< the file ends before a structure it announces
  BadMagic,      ///< an identifier or magic string is not what the format needs
  BadHeader,     ///< a header field is inconsistent
  Verification,  ///< flatbuffer verification failed
  OutOfRange,    ///< an index or byte range points outside its table or file
  Overflow,      ///< a size computation overflows 64 bits
  Invalid,       ///< a semantic rule of the format is broken
  Unsupported,   ///< a valid file of a kind the studio does not handle
  MissingKey,    ///< an external tensor is in none of the data files
  Mismatch,      ///< an external tensor differs from its description
  RuntimeRule,   ///< a program ExecuTorch's runtime would refuse (a missing kernel, a kernel's check)
};

const char* errorCodeName(ErrorCode code);

/// A failure with enough context for a user to find it: the file, the byte
/// offset (when there is one), what was expected and what was found.
struct Error {
  ErrorCode code = ErrorCode::Invalid;
  std::string file;
  std::optional<uint64_t> offset;
  std::string what;      ///< the structure or rule concerned
  std::string expected;  ///< may be empty
  std::string found;     ///< may be empty

  /// "FILE: at byte N (0xN): WHAT: expected E, found F"
  std::string message() const;
};

/// Either a value or an Error. Cheap to move; never throws.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  /// The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation that produces nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace lstudio
