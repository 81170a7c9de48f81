#include "engine/formats/PteWriter.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <memory>
#include <set>

#include "engine/formats/pte/DataPlacement.h"
#include "engine/formats/pte/FileLayout.h"
#include "engine/formats/pte/FileOutput.h"
#include "engine/formats/pte/ProgramTable.h"
#include "engine/formats/pte/PtdFile.h"
#include "engine/support/AtomicFile.h"

// The writer's parts live in engine/formats/pte/: DataPlacement decides where every byte
// goes, ProgramTable builds the flatbuffer, PtdFile lays out the .ptd files, FileOutput
// streams them to disk. This file puts the .pte together and writes all outputs.
namespace lstudio {
using namespace pte;

namespace {

constexpr uint32_t kEh00Length = 32;  // magic, length, program_size, segment_base_offset, segment_data_size

/// The whole .pte: plan, flatbuffer, header, segment layout.
Result<FilePlan> planPte(const Program& program, const PteWriteOptions& o, Planner& plan, PteWriteReport& report) {
  if (auto s = plan.plan(); !s) return s.error();
  std::vector<uint64_t> segOffsets;
  uint64_t segDataSize = layOutSegments(plan.segments, o.segmentAlignment, segOffsets);
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  size_t filledDimOrders = 0;
  if (auto s = buildProgramTable(fbb, program, o, plan, segOffsets, filledDimOrders); !s) return s.error();
  if (filledDimOrders)
    plan.notes.push_back(std::to_string(filledDimOrders) + " tensors without a dim order written contiguous");
  FilePlan f;
  bool header = segDataSize > 0;  // as ExecuTorch: no segment bytes, no extended header
  if (!header) {
    f.head.assign(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
    f.size = f.head.size();
  } else {
    // The header keeps every alignment inside the flatbuffer: its padded
    // length is a multiple of the largest one (as ExecuTorch pads it to the
    // largest force_align of the schema).
    uint64_t maxAlign = std::max<uint64_t>({fbb.GetBufferMinAlignment(), o.constantTensorAlignment, o.delegateAlignment});
    uint64_t headerLen = alignUp(kEh00Length, maxAlign);
    uint64_t programSize = headerLen + fbb.GetSize();
    if (programSize > FLATBUFFERS_MAX_BUFFER_SIZE)
      return plan.error(ErrorCode::Overflow, "the program's flatbuffer with its header", "< 2 GiB",
                        std::to_string(programSize) + " bytes");
    uint64_t base = alignUp(programSize, o.segmentAlignment);
    std::string h = "eh00";
    putLe32(h, kEh00Length);
    putLe64(h, programSize);
    putLe64(h, base);
    putLe64(h, segDataSize);
    h.resize(headerLen, '\0');
    f.head = insertHeader(fbb.GetBufferPointer(), fbb.GetSize(), h);
    addPieces(f, plan.segments, segOffsets, base);
    f.size = base + segDataSize;
    report.programSize = programSize;
    report.segmentBaseOffset = base;
    report.segmentDataSize = segDataSize;
  }
  if (!header) report.programSize = f.size;
  report.extendedHeader = header;
  report.segments = plan.segments.size();
  report.constants = plan.constants.size();
  report.mutableValues = plan.mutables.size();
  report.delegateSegments = plan.delegateSegments;
  report.inlineDelegates = plan.inlineData.size();
  report.namedData = plan.namedData.size();
  report.notes = plan.notes;
  return f;
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::string> serializePte(const Program& program, const PteWriteOptions& options, PteWriteReport* report) {
  PteWriteOptions o = options;
  o.writeDataFiles = false;  // the .pte alone; external tensors need not be resolved
  Planner plan(program, o, "(in memory)");
  PteWriteReport r;
  auto f = planPte(program, o, plan, r);
  if (!f) return f.error();
  StringSink sink;
  sink.out.reserve(f->size);
  if (auto s = streamFile(f.value(), sink); !s) return s.error();
  if (report) *report = std::move(r);
  return std::move(sink.out);
}

Result<std::map<std::string, std::string>> serializeDataFiles(const Program& program, const PteWriteOptions& options) {
  PteWriteOptions o = options;
  o.writeDataFiles = true;
  Planner plan(program, o, "(in memory)");
  if (auto s = plan.plan(); !s) return s.error();
  std::map<std::string, std::string> out;
  for (const auto& [tag, entries] : plan.external) {
    StringSink sink;
    if (auto s = streamFile(planPtd(entries, o), sink); !s) return s.error();
    out.emplace(tag, std::move(sink.out));
  }
  return out;
}

Result<PteWriteReport> writePte(const Program& program, const std::string& path, const PteWriteOptions& options) {
  PteWriteReport report;
  Planner plan(program, options, path);
  auto pte = planPte(program, options, plan, report);
  if (!pte) return pte.error();
  std::string dir = options.ptdDir.empty() ? dirOf(path) : options.ptdDir;
  std::vector<std::pair<std::string, FilePlan>> files;  // .ptd files first, the .pte last
  std::set<std::string> paths{path};
  for (const auto& [tag, entries] : plan.external) {
    std::string p = dir + "/" + tag + ".ptd";
    if (!paths.insert(p).second)
      return Error{ErrorCode::Invalid, p, std::nullopt, "data file of tag '" + tag + "'",
                   "a path different from the program's and the other data files'", "the same path"};
    files.emplace_back(p, planPtd(entries, options));
    report.externalTensors += entries.size();
  }
  files.emplace_back(path, std::move(pte.value()));
  // Every file is written and flushed under a temporary name before any is
  // renamed into place: a failure while writing leaves all existing files as they were.
  // Temporaries of an earlier export that was killed go first; they are named
  // PATH.tmp-XXXXXX, so they never pass for outputs.
  for (auto& [p, f] : files) removeStaleTemporaries(p);
  uint64_t faultBudget = faultAfterBytes();
  std::vector<std::unique_ptr<TempFileSink>> sinks;
  MappedRanges mapped(program);
  Progress progress{&options.progress};
  for (const auto& [p, f] : files) progress.total += f.size;
  for (auto& [p, f] : files) {
    auto sink = std::make_unique<TempFileSink>(p, &faultBudget);
    sink->setKernelCopy(options.kernelCopy);
    if (auto s = sink->open(); !s) return s.error();
    if (auto s = streamFile(f, *sink, mapped, progress); !s) {
      Error e = s.error();
      if (e.file.empty()) e.file = p;
      return e;
    }
    if (auto s = sink->finish(); !s) return s.error();
    progress.before += f.size;
    sinks.push_back(std::move(sink));
  }
  for (auto& s : sinks)
    if (auto st = s->commit(); !st) return st.error();
  // Make the renames durable.
  std::set<std::string> dirs{dirOf(path), dir};
  for (const auto& d : dirs) syncFolder(d);
  report.files.push_back(WrittenFile{path, files.back().second.size});
  for (size_t i = 0; i + 1 < files.size(); ++i) report.files.push_back(WrittenFile{files[i].first, files[i].second.size});
  return report;
}

}  // namespace lstudio