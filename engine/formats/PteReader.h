// Reads ExecuTorch programs (.pte, and the program inside a bundled .bpte)
// into the IR, checking the file in layers: size and header, identifier,
// full flatbuffer verification, then the format's semantic rules (indices in
// range, byte ranges inside their segments, sizes that do not overflow).
#pragma once

#include <memory>
#include <string>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

/// Opens, maps and reads `path` (.pte or .bpte). Constants and delegate
/// blobs are referenced in the mapping, never copied.
Result<Program> readProgramFile(const std::string& path);

/// Reads a program from an already mapped file (the file's path() names it in errors).
Result<Program> readProgram(std::shared_ptr<const MappedFile> file);

}  // namespace lstudio
