// What an XNNPACK delegate's payload holds: ExecuTorch's XNNGraph flatbuffer
// (identifiers XN00 and XN01), optionally behind the 30-byte XH00 header that
// locates the flatbuffer and the constant data after it.
//
// A payload is untrusted input like the file around it: the header's ranges
// are checked against the blob, the flatbuffer is verified before any field
// is read, and every id a node names and every constant range is checked.
// Structural damage is an Error; a payload that verifies but does not hold
// together (an input id with no value, a constant past the data) decodes with
// `problems`, so the rest of it can still be shown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::xnnpack {

/// XNN_INVALID_VALUE_ID: an optional id that is absent (no bias, not external).
inline constexpr uint32_t kInvalidId = 0xFFFFFFFFu;
inline constexpr uint32_t kExternalInput = 1, kExternalOutput = 2;

struct Quantization {
  enum class Kind : uint8_t { None, PerTensor, PerChannel, PerChannelGroup, PerTokenDynamic };
  Kind kind = Kind::None;
  float scale = 0;          ///< PerTensor
  int32_t zeroPoint = 0;    ///< PerTensor
  std::vector<float> scales;  ///< PerChannel, PerChannelGroup (when stored inline)
  int32_t channelDim = 0;
  int32_t groupSize = 0;        ///< PerChannelGroup
  uint32_t scaleBufferIndex = 0;  ///< scales stored as a constant instead (0: inline)
  uint32_t numScales = 0;
  int32_t numNonbatchDims = 0;  ///< PerTokenDynamic
};
const char* quantizationName(Quantization::Kind k);

struct Value {
  uint32_t id = 0;  ///< id_out: how nodes name it
  int16_t datatype = 0;
  std::vector<uint32_t> dims;
  uint32_t constantIndex = 0;  ///< 0: not a constant
  uint32_t externalId = kInvalidId;
  uint32_t flags = 0;
  int16_t dqDatatype = 0;  ///< quantized at run time to this type (0: not)
  Quantization quant;
  bool isInput() const { return flags & kExternalInput; }
  bool isOutput() const { return flags & kExternalOutput; }
};
/// "fp32", "qcint8", ... (xnn_datatype without its prefix); "datatype 99" when unknown.
std::string datatypeName(int16_t datatype);

struct Node {
  std::string type;  ///< the union member: "XNNFullyConnected", "XNNConv2d", ...
  uint32_t debugHandle = 0;
  std::vector<uint32_t> inputs;   ///< value ids, absent optional ones left out
  std::vector<uint32_t> outputs;
  std::vector<std::pair<std::string, std::string>> params;  ///< the table's other fields, in schema order
  uint32_t flags = 0;
  std::optional<std::pair<float, float>> outputMinMax;  ///< a fused clamp
};

/// Where constant `index` of the graph keeps its bytes.
struct Constant {
  enum class Source : uint8_t { Flatbuffer, ConstantData, NamedData };
  Source source = Source::ConstantData;
  uint64_t offset = 0;  ///< ConstantData: from the start of the constant data (else as stored)
  uint64_t size = 0;
  std::string namedKey;  ///< NamedData
};

struct Graph {
  std::string identifier;  ///< "XN00" or "XN01"
  bool hasHeader = false;  ///< XH00
  uint64_t flatbufferOffset = 0, flatbufferSize = 0;   ///< within the blob
  uint64_t constantDataOffset = 0, constantDataSize = 0;
  std::string version;
  uint32_t numExterns = 0;
  std::vector<uint32_t> inputIds, outputIds;
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::vector<Constant> constants;  ///< entry 0 is the reserved "not a constant" slot
  std::vector<std::string> problems;

  const Value* value(uint32_t id) const;
  /// Bytes of every constant, wherever it lives.
  uint64_t constantBytes() const;
};

/// True when `blob` starts like an XNNPACK payload (XH00 header or XN00/XN01 flatbuffer).
bool looksLikePayload(const Bytes& blob);

/// Decodes `blob`, the payload of an XnnpackBackend delegate read from `file`
/// (`blob.fileOffset` places errors in that file).
Result<Graph> decode(const Bytes& blob, const std::string& file);

}  // namespace lstudio::xnnpack
