// Writes a Program (as PteReader reads it, or as the lowering pipeline
// builds it) to an ExecuTorch program file (.pte) and the tensor data files
// (.ptd) its external tensors live in.
//
// What is written, whatever the program was read from:
//   - constants in `constant_segment` (segment 0, offsets[0] the empty
//     placeholder), never the legacy `constant_buffer` that upstream runtimes
//     reject; constant offsets aligned to constantTensorAlignment;
//   - initial values of mutable tensors in `mutable_data_segments[0]`
//     (unpadded, as ExecuTorch writes them: they are copied at load time);
//   - then delegate blobs (one segment each when extractDelegateSegments),
//     then named data, each segment aligned to segmentAlignment; identical
//     blobs share a segment, as in ExecuTorch's serializer;
//   - the 32-byte `eh00` header (padded to the largest flatbuffer alignment)
//     whenever segment data is not empty, as ExecuTorch does.
// Weights and blobs are never copied into the flatbuffer: they are streamed
// from the Bytes spans of the IR (mapped files) into the output in chunks,
// after the flatbuffer. Each output goes to a temporary file in its folder;
// all are written and flushed before any is renamed into place (the .ptd
// files first, the .pte last), so a failure while writing leaves existing
// files as they were. (A rename that fails after others succeeded leaves
// those replaced.) Rewriting a program over the file it was read from is
// safe: the mapping keeps the old file's bytes until the Program goes away.
//
// Per tensor: extra_tensor_info (location, fully_qualified_name) whenever the
// spec is external, has an fqn or is on a device; allocation_info with the 64-bit offset split
// low/high; a contiguous dim_order when the spec has none (the runtime needs
// one per dimension; the report counts them). Stack traces: when any node has
// one, every chain carries one FrameList per instruction (ExecuTorch's
// emit_stacktrace). Program.version is 0. A tensor on another device
// (TensorSpec::device) gets extra_tensor_info with its device_type/index, and a
// method with arenas on a device lists them in non_const_buffer_device.
//
// Not in the .pte schema, so not written: node names, targets, argument
// names, debug handles and module stacks, strides and symbols of tensor
// specs, the graph signature, symbol ranges. Chain inputs/outputs are not
// in the IR and are written empty, as ExecuTorch writes them.
//
// Constant table indices (`Tensor.data_buffer_idx`) are kept when the IR's
// indices are consistent (every tensor sharing an index has the same bytes);
// tensors without an index (new constants from passes) are appended, with
// identical bytes sharing an entry. Otherwise the whole table is renumbered
// and the report says so.
//
// External tensors (TensorSpec::external, bytes in TensorSpec::data once
// resolveExternalTensors has run) go to `<ptdDir>/<tag>.ptd`, the current
// FlatTensor generation (FT01, 40-byte FH01 header padded to 48, one segment
// per distinct tensor, tensor_layout on every entry). A tensor's tag is, in
// order: PteWriteOptions::externalTags[fqn]; TensorSpec::constantTag; the stem of the .ptd file the
// tensor's bytes were resolved from (so rewriting linear.pte + linear.ptd
// writes linear.ptd); PteWriteOptions::defaultExternalTag.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

struct PteWriteOptions {
  uint64_t segmentAlignment = 128;        ///< ExecutorchBackendConfig.segment_alignment (power of two)
  uint64_t constantTensorAlignment = 16;  ///< constant_tensor_alignment: offsets inside the constant segment
  uint64_t delegateAlignment = 16;        ///< delegate_alignment: inline delegate data inside the flatbuffer
  bool extractDelegateSegments = true;    ///< non-empty delegate blobs in segments; false: all inline

  /// Write the .ptd files of external tensors. When false, only the .pte is
  /// written and external tensors need not be resolved.
  bool writeDataFiles = true;
  /// Folder of the .ptd files; empty: the folder of the .pte.
  std::string ptdDir;
  /// fully qualified name -> tag (file stem of its .ptd). Overrides the source file's stem.
  std::map<std::string, std::string> externalTags;
  /// Tag of external tensors not in externalTags and not resolved from a named .ptd.
  std::string defaultExternalTag = "_default_external_constant";
  /// Called after each chunk written with the bytes written so far and the
  /// total of all files; returning false cancels the write (nothing is
  /// renamed into place, temporary files are removed).
  std::function<bool(uint64_t done, uint64_t total)> progress;
  /// Alignment of .ptd segments (ExecuTorch's FlatTensorConfig.segment_alignment).
  uint64_t ptdSegmentAlignment = 128;
  /// Weights that lie in a mapped file are copied file to file by the kernel
  /// (copy_file_range), falling back to write() where it cannot; false always
  /// writes (bench_export compares the two).
  bool kernelCopy = true;
};

struct WrittenFile {
  std::string path;
  uint64_t bytes = 0;
};

struct PteWriteReport {
  std::vector<WrittenFile> files;  ///< the .pte first, then the .ptd files by tag
  size_t segments = 0;             ///< entries in Program.segments
  bool extendedHeader = false;     ///< an eh00 header was written
  uint64_t programSize = 0;        ///< flatbuffer bytes including the eh00 header
  uint64_t segmentBaseOffset = 0;  ///< 0 without header
  uint64_t segmentDataSize = 0;
  size_t constants = 0;            ///< constant_segment.offsets entries, placeholder included
  size_t mutableValues = 0;        ///< mutable_data_segments[0].offsets entries, placeholder included (0: none)
  size_t delegateSegments = 0;
  size_t inlineDelegates = 0;      ///< entries of backend_delegate_data
  size_t namedData = 0;
  size_t externalTensors = 0;      ///< distinct keys written to .ptd files
  /// What the writer changed on the way (legacy constant_buffer moved to
  /// constant_segment, indices renumbered, dim orders filled in, ...).
  std::vector<std::string> notes;
};

/// Writes `program` to `path`, and one .ptd per external tag (see above).
/// Nothing is written when the program is invalid (an index out of range, a
/// constant without bytes, an unresolved external tensor with writeDataFiles).
Result<PteWriteReport> writePte(const Program& program, const std::string& path, const PteWriteOptions& options = {});

/// The .pte writePte would write, in memory (tests, small programs); external
/// tensors need not be resolved. The report's `files` is left empty.
Result<std::string> serializePte(const Program& program, const PteWriteOptions& options = {},
                                 PteWriteReport* report = nullptr);

/// The .ptd files writePte would write, in memory: tag -> file bytes.
Result<std::map<std::string, std::string>> serializeDataFiles(const Program& program,
                                                              const PteWriteOptions& options = {});

}  // namespace lstudio
