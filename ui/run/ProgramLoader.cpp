#include "ui/run/ProgramLoader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>

#include "engine/formats/EtRecordLink.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/OpenProgram.h"

namespace lstudio::ui {
namespace {

/// A .ptd starts with a flatbuffer whose identifier is "FT01".
bool isDataFile(const MappedFile& f) { return f.size() >= 8 && std::memcmp(f.data() + 4, "FT01", 4) == 0; }

/// `path` read as a .ptd when it is one (by content, not name); nothing when it is not,
/// and the caller opens it as a program.
std::optional<Result<DataFile>> dataFileAt(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f || !isDataFile(*f.value())) return std::nullopt;
  return readDataFile(std::move(f.value()));
}

}  // namespace

std::vector<std::string> dataFilesBeside(const std::string& ptePath) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  fs::path p(ptePath);
  std::error_code ec;
  for (fs::path c : {fs::path(p).replace_extension(".ptd"), p.parent_path() / "_default_external_constant.ptd"})
    if (fs::is_regular_file(c, ec) && std::find(out.begin(), out.end(), c.string()) == out.end())
      out.push_back(c.string());
  return out;
}

std::string etRecordBeside(const std::string& ptePath) {
  namespace fs = std::filesystem;
  fs::path p(ptePath);
  std::error_code ec;
  for (fs::path c : {fs::path(p).replace_extension(".etrecord"), p.parent_path() / (p.stem().string() + "_etrecord.bin"),
                     p.parent_path() / "etrecord.bin"})
    if (fs::is_regular_file(c, ec)) return c.string();
  return {};
}

LoadedProgram loadProgram(const std::string& path, std::vector<std::string> dataFiles) {
  LoadedProgram r;
  r.path = path;
  if (auto d = dataFileAt(path)) {
    if (!*d) {
      r.error = d->error().message();
      return r;
    }
    r.report = dataFileText(d->value());
    r.sizes.push_back(sizeBreakdown(d->value()));
    r.dataFile = std::make_shared<const DataFile>(std::move(d->value()));
    r.ok = true;
    return r;
  }
  auto program = openProgramFile(path);
  if (!program) {
    r.error = program.error().message();
    return r;
  }
  std::vector<DataFile> data;
  for (const auto& d : dataFiles) {
    auto f = readDataFile(d);
    if (!f) {
      r.error = f.error().message();
      return r;
    }
    data.push_back(std::move(f.value()));
  }
  if (!data.empty())
    if (auto s = resolveExternalTensors(program.value(), data); !s) {
      r.error = s.error().message();
      return r;
    }
  // An ETRecord is help, not a requirement: one that does not fit is reported and the .pte opens as it is.
  if (program->format == SourceFormat::Pte)
    if (std::string e = etRecordBeside(path); !e.empty()) {
      auto link = linkEtRecord(program.value(), e);
      r.etRecordNote = link ? "etrecord " + e + ": " + std::to_string(link->linked) + " of " +
                                  std::to_string(link->instructions) + " instructions linked to their modules and source lines, " +
                                  std::to_string(link->namedConstants) + " constants named"
                            : "etrecord " + e + " not linked: " + link.error().message();
    }
  r.summary = summarize(program.value(), data);
  // Offsets only (no constant byte is read): cheap even for a file of gigabytes.
  if (program->format == SourceFormat::Pte) {
    r.sizes.push_back(sizeBreakdown(program.value()));
    for (const DataFile& d : data) r.sizes.push_back(sizeBreakdown(d));
  }
  r.report = toText(r.summary) + (r.etRecordNote.empty() ? "" : r.etRecordNote + "\n");
  r.dataFiles = std::move(dataFiles);
  r.program = std::make_shared<const Program>(std::move(program.value()));
  r.ok = true;
  return r;
}

LoadedSizes loadSizes(const std::string& path) {
  LoadedSizes r;
  r.path = path;
  if (auto d = dataFileAt(path)) {
    if (!*d) {
      r.error = d->error().message();
      return r;
    }
    r.sizes = sizeBreakdown(d->value());
    r.ok = true;
    return r;
  }
  auto program = openProgramFile(path);
  if (!program) {
    r.error = program.error().message();
    return r;
  }
  if (program->format != SourceFormat::Pte) {
    r.error = std::filesystem::path(path).filename().string() +
              " is a torch.export program: the size breakdown is for ExecuTorch files (.pte, .bpte, .ptd)";
    return r;
  }
  r.sizes = sizeBreakdown(program.value());
  r.ok = true;
  return r;
}

}  // namespace lstudio::ui
