// Loads a program off the GUI thread and hands back an immutable result.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/inspect/Inspect.h"
#include "engine/inspect/SizeBreakdown.h"
#include "engine/ir/Ir.h"

namespace lstudio::ui {

/// Everything the window shows about one opened file, computed on a worker.
struct LoadedProgram {
  std::string path;
  bool ok = false;
  std::string error;  ///< one-line message naming file, offset, expected/found
  std::shared_ptr<const Program> program;
  ProgramSummary summary;
  std::string report;  ///< the text `lowering-cli inspect` prints
  std::vector<std::string> dataFiles;
  /// What became of an ETRecord found beside a .pte: how many instructions it
  /// linked, or why it did not fit (empty when there is none).
  std::string etRecordNote;
  /// Set when the file opened is a .ptd on its own (then `program` is null).
  std::shared_ptr<const DataFile> dataFile;
  /// Where the bytes go: the .pte (or the .ptd opened alone) first, then each
  /// .ptd opened with it. Empty for a program that is not an ExecuTorch file.
  std::vector<SizeBreakdown> sizes;
};

/// The size breakdown of one ExecuTorch file (.pte, .bpte or .ptd), or why there is none.
struct LoadedSizes {
  std::string path;
  bool ok = false;
  std::string error;
  SizeBreakdown sizes;
};

/// .ptd files the studio opens with `ptePath` without asking: the same stem
/// with .ptd, and ExecuTorch's default "_default_external_constant.ptd",
/// when they exist beside it.
std::vector<std::string> dataFilesBeside(const std::string& ptePath);

/// The ETRecord the studio links with `ptePath` without asking, when one is
/// beside it: "<stem>.etrecord", "<stem>_etrecord.bin" or ExecuTorch's usual
/// "etrecord.bin"; empty when there is none.
std::string etRecordBeside(const std::string& ptePath);

/// Reads, verifies, resolves and summarizes; a .pte gets its instructions'
/// modules and source lines from an ETRecord beside it. Safe to call from any thread.
LoadedProgram loadProgram(const std::string& path, std::vector<std::string> dataFiles);

/// Reads and verifies `path` for its size breakdown alone. Safe to call from any thread.
LoadedSizes loadSizes(const std::string& path);

}  // namespace lstudio::ui
