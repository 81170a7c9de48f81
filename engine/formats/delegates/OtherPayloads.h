// What the studio can tell of delegate payloads other than XNNPACK's, from
// their documented framing only:
//  - Vulkan: the 30-byte VH00 header (flatbuffer and constant-bytes ranges),
//    laid out like XNNPACK's XH00; the VK00 graph itself is not decoded.
//  - Arm Ethos-U: ExecuTorch's Vela binary stream, a sequence of blocks
//    (16-byte name, uint32 length, external flag, 11 reserved bytes, data
//    padded to 16) from "vela_bin_stream" to "vela_end_stream": command
//    stream, weights, scratch size, and the inputs' and outputs' shapes.
// Anything that does not frame as announced is reported in `error`; it never
// stops the file from opening.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/Ir.h"

namespace lstudio {

struct PayloadSection {
  std::string name;     ///< "Vulkan graph (VK00 flatbuffer)", "Ethos-U block cmd_data"
  uint64_t offset = 0;  ///< within the payload
  uint64_t size = 0;
};

struct PayloadLayout {
  std::string format;  ///< "Vulkan VH00", "Ethos-U Vela stream"; empty: not recognised
  std::vector<PayloadSection> sections;
  std::vector<std::pair<std::string, std::string>> facts;  ///< "scratch", "64 B"; "input 0", "int8[1, 1, 1, 1]"
  std::string error;  ///< why the framing stops making sense, with the byte offset
};

/// The layout of `blob` when its framing is one of the above (else format is empty).
PayloadLayout describePayload(const Bytes& blob);

}  // namespace lstudio
