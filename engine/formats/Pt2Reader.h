// Imports torch.export programs into the IR: .pt2 files of both container
// generations (the PT2 archive of torch >= 2.8 and the legacy zip of torch
// <= 2.7) and the exported programs inside ExecuTorch ETRecords. Weights
// stay in the memory-mapped file (stored zip records are used in place).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

/// Opens and imports `path`; one Method per exported program in the file.
/// AOTInductor packages and zips without an exported program are refused
/// with a message that says what the file is.
Result<Program> readExportFile(const std::string& path);
Result<Program> readExport(std::shared_ptr<const MappedFile> file);

/// True when the file starts like a zip archive (every .pt2 and ETRecord does).
bool looksLikeZip(const MappedFile& file);

/// A tensor's values as a file stores them, copied out contiguous in C order.
struct StoredTensor {
  std::string key;  ///< its path in the pickle: "0.1" for the second positional argument
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
};

/// The example inputs torch.export.save keeps in a .pt2 (data/sample_inputs/model.pt, a
/// torch.save of (args, kwargs)): the tensors of args, in order. Empty when the archive has
/// none; keyword arguments are refused (ExecuTorch methods take positional inputs).
Result<std::vector<StoredTensor>> readPt2SampleInputs(const std::string& path);
Result<std::vector<StoredTensor>> readPt2SampleInputs(std::shared_ptr<const MappedFile> file);

}  // namespace lstudio
