// Imports torch.export programs into the IR: .pt2 files of both container
// generations (the PT2 archive of torch >= 2.8 and the legacy zip of torch
// <= 2.7) and the exported programs inside ExecuTorch ETRecords. Weights
// stay in the memory-mapped file (stored zip records are used in place).
#pragma once

#include <memory>
#include <string>

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

}  // namespace lstudio
