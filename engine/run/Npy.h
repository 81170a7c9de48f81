// NumPy .npy files for the interpreter's inputs and outputs (format 1.0 written, 2.0 for
// huge headers; 1.0, 2.0 and 3.0 read). Written by hand: the format is a magic, a length and
// a one-line Python dict before raw C-order bytes, and no Debian library reads it from C++.
#pragma once

#include <string>

#include "engine/run/Interpreter.h"
#include "engine/support/Error.h"

namespace lstudio::run {

/// A value as a .npy file (format 1.0, or 2.0 for a header past 64 KiB; C order); a scalar as a 0-d float64 array, bfloat16
/// as float32 (NumPy has no bfloat16; the conversion is exact).
std::string npyBytes(const HostValue& v);

/// The array in a .npy file's bytes (`path` names it in errors): little-endian or
/// byte-order-free bool, integer and float types, C order. A 0-d array is a tensor of no
/// dimensions. Anything else fails naming the offset and what was expected there.
Result<HostValue> parseNpy(const std::string& bytes, const std::string& path);

/// parseNpy of a file's contents.
Result<HostValue> readNpy(const std::string& path);

}  // namespace lstudio::run
