// Reads ExecuTorch tensor data files (.ptd: FlatTensor with an FH01 header)
// and resolves a program's external tensors against them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

struct TensorLayout {
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dimOrder;
};

/// One named entry of a .ptd: a tensor (with layout) or an opaque blob.
struct NamedTensorData {
  std::string key;
  uint32_t segmentIndex = 0;
  std::optional<TensorLayout> layout;
  Bytes data;  ///< the whole segment it points at
};

struct DataFile {
  std::string path;
  std::shared_ptr<const MappedFile> file;
  uint32_t version = 0;
  bool legacy = false;  ///< first-generation schema (TensorMetadata entries, 2025)
  uint32_t headerLength = 0;
  uint64_t flatbufferOffset = 0, flatbufferSize = 0;
  uint64_t segmentBaseOffset = 0, segmentDataSize = 0;
  std::vector<Segment> segments;  ///< absolute offsets
  std::vector<NamedTensorData> entries;

  const NamedTensorData* find(const std::string& key) const;
};

/// Opens, maps, verifies and reads a .ptd.
Result<DataFile> readDataFile(const std::string& path);
Result<DataFile> readDataFile(std::shared_ptr<const MappedFile> file);

/// Points every external tensor of `program` at its bytes in `files` (first
/// file holding the key wins). A key in no file, or a dtype, shape or size
/// that differs from the program's tensor, is an error naming both files.
Status resolveExternalTensors(Program& program, const std::vector<DataFile>& files);

/// Keys of external tensors that no file resolves (for reports).
std::vector<std::string> unresolvedExternalKeys(const Program& program);

}  // namespace lstudio
