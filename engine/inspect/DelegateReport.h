// What one delegate of a program is, for the Inspector, `inspect` and
// `lowering-cli delegates`: its backend and compile specs, the values its
// call reads and writes, its payload decoded where the backend's format is
// known (XNNPACK), and the named data it reads with where each entry lives.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/formats/PtdReader.h"
#include "engine/formats/delegates/OtherPayloads.h"
#include "engine/formats/delegates/XnnpackPayload.h"
#include "engine/ir/Ir.h"

namespace lstudio {

struct CompileSpecText {
  std::string key;
  std::string value;  ///< text when printable, a small integer when 1–8 bytes, else "N bytes: hex…"
  uint64_t bytes = 0;
};

/// A named-data entry a payload reads, and where it was found.
struct NamedDataUse {
  std::string key;
  uint64_t bytes = 0;     ///< as the payload declares it
  std::string location;   ///< "the .pte", "model.ptd", or "missing"
};

struct DelegateReport {
  std::string backend;
  std::string location;  ///< "inline 0", "segment 3"
  uint64_t blobBytes = 0;
  uint64_t blobFileOffset = 0;
  std::vector<CompileSpecText> compileSpecs;
  std::vector<ValueId> inputs, outputs;  ///< of the first call in its method (empty if never called)
  int32_t callNode = -1;
  std::string format;  ///< "XNNPACK XN01 with XH00 header", "Ethos-U Vela stream", "not decoded"
  std::optional<xnnpack::Graph> xnnpack;
  PayloadLayout layout;  ///< the framing of other backends' payloads, when recognised
  std::vector<DelegateOrigin> origins;  ///< nodes the payload's operators were made from (ETRecords)
  std::string decodeError;  ///< why the payload could not be decoded (shown, never fatal)
  std::vector<NamedDataUse> namedData;
};

/// The report of delegate `index` of `method`. `dataFiles` are the .ptd files
/// the program was opened with (looked up for named keys besides the .pte's own).
DelegateReport reportDelegate(const Program& program, const Method& method, size_t index,
                              const std::vector<DataFile>& dataFiles = {});

/// "op (node, module)" of what a payload operator with `debugHandle` was made from; empty when unknown.
std::string originText(const DelegateReport& r, uint32_t debugHandle);

/// "7 nodes (3 XNNFullyConnected, ...), 12 values, 2 constants 1.0 KiB" and so on, in lines.
std::string delegateText(const DelegateReport& r, const Method& method, bool full);
nlohmann::json delegateJson(const DelegateReport& r);

}  // namespace lstudio
