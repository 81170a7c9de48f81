// Decodes the pickle that torch.save writes (data.pkl in its zip) into the
// tensors and scalars it holds, keyed by their path, without running Python.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/ScalarType.h"

namespace lstudio {

/// A tensor stored by torch.save: which storage record it views, and how.
struct PickledTensor {
  std::string storageKey;                ///< the storage's record name in the zip: "<archive>/data/<storageKey>"
  ScalarType dtype = ScalarType::Float;  ///< element type of the storage (engine/ir/ScalarType.h)
  uint64_t storageNumel = 0;             ///< elements the storage declares (from the persistent id)
  int64_t storageOffset = 0;             ///< in elements
  std::vector<int64_t> sizes, strides;
  bool requiresGrad = false;
  std::string location;                  ///< e.g. "cpu"
};

/// A scalar or string found in the pickle (everything that is not a tensor and not a container).
struct PickledScalar {
  std::string text;  ///< Python's repr: "3", "2.5", "True", "None", "'abc'", "b'\\x00'"
};

/// Everything a torch.save pickle holds, flattened: each leaf keyed by its path of
/// dict keys / list-tuple indices joined with '.', e.g. "linear.weight" for a state
/// dict, "0.0" for the first positional argument of a sample-inputs tuple ((x,), {}).
/// A bare leaf (torch.save(tensor)) has the empty path. Objects the decoder does not
/// model (modules, devices, custom classes) are left out, and so is what they contain.
struct PickledObjects {
  std::vector<std::pair<std::string, PickledTensor>> tensors;  ///< in pickle order
  std::vector<std::pair<std::string, PickledScalar>> scalars;
};

/// Decodes `data` (the bytes of data.pkl). `file` names the record in errors.
/// Never throws; every failure is an Error with the byte offset of the opcode.
/// Hostile input fails fast: work and memory stay within a small multiple of `size`.
/// Refused as Unsupported: protocol 0/1 text opcodes, out-of-band buffers, integers
/// wider than 128 bits, more than 128 nested containers.
Result<PickledObjects> decodeTorchPickle(const uint8_t* data, size_t size, const std::string& file);

}  // namespace lstudio
