// Writes an XNNPACK delegate payload as ExecuTorch's XnnpackBackend does: the XNNGraph
// flatbuffer behind the XH00 header (30 bytes, padded to 16), the flatbuffer padded to 16,
// then the constant data (empty in ExecuTorch 1.x: constants go to named data instead).
//
// ExecuTorch makes the flatbuffer by writing the graph as JSON and handing it to flatc's
// JSON parser, whose byte layout follows the order the JSON gives the fields. The studio
// does the same with flatbuffers' own parser (the library flatc is built on), so a graph
// written as JSON in upstream's field order comes out as upstream's bytes.
#pragma once

#include <cstdint>
#include <string>

#include "engine/support/Error.h"

namespace lstudio::xnnpack {

/// The payload for an XNNGraph given as JSON text (xnnpack.fbs's XNNGraph); an error says
/// what the parser refused.
Result<std::string> payloadFromGraphJson(const std::string& json);

/// SHA-256 of the bytes as lowercase hex: the key ExecuTorch's XNNPACK gives a constant
/// in the named data.
std::string sha256Hex(const uint8_t* data, size_t size);

}  // namespace lstudio::xnnpack
