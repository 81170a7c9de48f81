// The .pt2 container: which zip layout a file has (the PT2 archive of torch >= 2.8, the legacy
// torch.export zip, an ETRecord, or something that is no exported program) and which records
// hold each program's JSON and weights. The records themselves are read by pt2/ProgramJson.h
// (the serialized ExportedProgram) and pt2/Weights.h (state dict, constants, tensor data).
#include "engine/formats/Pt2Reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "engine/formats/ZipArchive.h"
#include "engine/formats/pt2/ProgramJson.h"
#include "engine/formats/pt2/Weights.h"

namespace lstudio {
namespace {

constexpr uint64_t kMaxJson = uint64_t(4) << 30;  // a program JSON larger than 4 GiB is refused

class ExportImporter {
 public:
  ExportImporter(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {}

  Result<Program> run() {
    auto zip = ZipArchive::open(file_);
    if (!zip) {
      Error e = zip.error();
      e.what = "not a .pt2 archive: " + e.what;
      return e;
    }
    zip_ = std::move(zip.value());
    program_.path = file_->path();
    program_.backing = file_;
    program_.facts.fileSize = file_->size();
    const auto& entries = zip_.entries();
    auto any = [&](auto pred) { return std::any_of(entries.begin(), entries.end(), pred); };
    bool hasAoti = any([](const ZipEntry& e) { return e.name.find("data/aotinductor/") != std::string::npos; });
    if (any([](const ZipEntry& e) { return e.name == "ETRECORD_V0" || e.name.ends_with("/ETRECORD_V0") ||
                                            e.name == "edge_dialect_exported_program"; }))
      return etRecord();
    auto models = zip_.findSuffix(".json");
    std::erase_if(models, [](const ZipEntry* e) { return e->name.find("/models/") == std::string::npos &&
                                                         e->name.rfind("models/", 0) != 0; });
    if (!models.empty()) return archive(models);
    if (auto legacy = zip_.findSuffix("serialized_exported_program.json"); !legacy.empty()) return legacyZip(*legacy.front());
    if (hasAoti)
      return refuse("an AOTInductor package: it holds compiled model code (data/aotinductor/...), not an exported "
                    "graph, so there is nothing to lower");
    if (!zip_.findSuffix("data.pkl").empty())
      return refuse("a torch.save checkpoint (data.pkl), not a torch.export program");
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(entries.size(), 4); ++i) names += (i ? ", " : "") + entries[i].name;
    return refuse("a zip archive without an exported program (first entries: " + names + ")");
  }

 private:
  Error refuse(std::string what) {
    return Error{ErrorCode::Unsupported, file_->path(), std::nullopt, "this file is " + what,
                 "a torch.export .pt2 (models/*.json or serialized_exported_program.json)", "none"};
  }

  Result<std::string> readText(const ZipEntry& e) { return zip_.read(e, kMaxJson); }

  Status parseProgram(const ZipEntry& e, const std::string& methodName, Method& m) {
    auto text = readText(e);
    if (!text) return text.error();
    m.name = methodName;
    const bool etRecord = program_.format == SourceFormat::EtRecord;
    pt2::LoweredData lowered;
    auto s = pt2::readProgramJson(text.value(), file_->path() + ":" + e.name, etRecord, parser_, m,
                                  program_.exportFacts, etRecord ? &lowered : nullptr);
    if (!s) return s;
    // The lowered modules' bytes and named data belong to the program; a key
    // two methods' delegates both stored is kept once, as ExecuTorch does.
    for (auto& b : lowered.buffers) program_.derivedData.push_back(std::move(b));
    for (auto& nb : lowered.namedData)
      if (std::none_of(program_.namedData.begin(), program_.namedData.end(),
                       [&](const NamedBlob& x) { return x.key == nb.key; }))
        program_.namedData.push_back(std::move(nb));
    for (auto& c : lowered.external) program_.carriedData.push_back(std::move(c));
    return Ok{};
  }

  Result<Program> archive(const std::vector<const ZipEntry*>& models) {
    program_.format = SourceFormat::Pt2;
    program_.exportFacts.container = "pt2 archive";
    for (const ZipEntry* model : models) {
      size_t at = model->name.find("models/");
      std::string prefix = model->name.substr(0, at);
      std::string name = model->name.substr(at + 7, model->name.size() - at - 7 - 5);
      if (const ZipEntry* v = zip_.find(prefix + "archive_version"))
        program_.exportFacts.archiveVersion = zip_.read(*v, 64).value_or(std::string());
      // An empty record is torch.export's way of saving no example inputs.
      const ZipEntry* sampleInputs = zip_.find(prefix + "data/sample_inputs/" + name + ".pt");
      program_.exportFacts.hasSampleInputs = sampleInputs && sampleInputs->size > 0;
      Method m;
      if (auto s = parseProgram(*model, name == "model" ? "forward" : name, m); !s) return s.error();
      std::unordered_map<std::string, pt2::WeightData> weights;
      if (auto s = pt2::readWeightConfig(zip_, prefix, prefix + "data/weights/" + name + "_weights_config.json",
                                         "data/weights/", weights);
          !s)
        return s.error();
      if (auto s = pt2::readWeightConfig(zip_, prefix, prefix + "data/constants/" + name + "_constants_config.json",
                                         "data/constants/", weights);
          !s)
        return s.error();
      // torch 2.8 stored the whole state dict / constants as one torch.save file each.
      for (const char* dir : {"data/weights/", "data/constants/"})
        if (const ZipEntry* e = zip_.find(prefix + dir + name + ".pt"); e && e->size > 0)
          if (auto s = pt2::torchSave(zip_, *e, weights); !s) return s.error();
      if (auto s = pt2::attachWeights(m, weights, file_->path() + ":" + model->name); !s) return s.error();
      program_.methods.push_back(std::move(m));
    }
    return std::move(program_);
  }

  Result<Program> legacyZip(const ZipEntry& json) {
    program_.format = SourceFormat::Pt2;
    program_.exportFacts.container = "legacy torch.export zip";
    std::string prefix = json.name.substr(0, json.name.size() - std::string("serialized_exported_program.json").size());
    if (const ZipEntry* v = zip_.find(prefix + "version")) program_.exportFacts.archiveVersion = zip_.read(*v, 64).value_or("");
    program_.exportFacts.hasSampleInputs = zip_.find(prefix + "serialized_example_inputs.pt") != nullptr;
    Method m;
    if (auto s = parseProgram(json, "forward", m); !s) return s.error();
    std::unordered_map<std::string, pt2::WeightData> weights;
    // torch 2.1 named these records .json though they hold torch.save archives
    // like the later .pt ones: what a record is comes from its bytes, not its name.
    for (const char* stem : {"serialized_state_dict", "serialized_constants"}) {
      const ZipEntry* e = zip_.find(prefix + stem + ".pt");
      if (!e) e = zip_.find(prefix + stem + ".json");
      if (!e || e->size == 0) continue;
      auto head = zip_.bytes(*e);
      if (!head) return head.error();
      if (head->size < 4 || std::memcmp(head->data, "PK\x03\x04", 4) != 0)
        return Error{ErrorCode::Invalid, file_->path(), head->fileOffset, "record '" + e->name + "'",
                     "a torch.save archive (zip)", "other bytes"};
      if (auto s = pt2::torchSave(zip_, *e, weights); !s) return s.error();
    }
    if (auto s = pt2::attachWeights(m, weights, file_->path() + ":" + json.name); !s) return s.error();
    program_.methods.push_back(std::move(m));
    return std::move(program_);
  }

  /// An ETRecord opens as its edge programs, the input of to_executorch, one
  /// method each: "edge_dialect_exported_program" (older files, forward only) or
  /// "edge_dialect_exported_program/<method>" (ExecuTorch 1.x). Files with no edge
  /// program open as what they have: the ATen outputs and extra modules.
  Result<Program> etRecord() {
    program_.format = SourceFormat::EtRecord;
    program_.exportFacts.container = "etrecord";
    static constexpr std::string_view kEdge = "edge_dialect_exported_program";
    auto isSidecar = [](const std::string& n) {
      return n.ends_with("_state_dict") || n.ends_with("_constants") || n.ends_with("_example_inputs");
    };
    std::vector<std::pair<const ZipEntry*, std::string>> programs;  // entry, method name
    for (const ZipEntry& e : zip_.entries()) {
      if (isSidecar(e.name)) continue;
      if (e.name == kEdge) programs.emplace_back(&e, "forward");
      else if (e.name.size() > kEdge.size() + 1 && e.name.starts_with(kEdge) && e.name[kEdge.size()] == '/')
        programs.emplace_back(&e, e.name.substr(kEdge.size() + 1));
    }
    if (programs.empty())
      for (const ZipEntry& e : zip_.entries())
        if (!isSidecar(e.name) && (e.name.starts_with("aten_dialect_output/") || e.name.starts_with("edge_dialect_output/") ||
                                   e.name == "extra_export_modules"))
          programs.emplace_back(&e, e.name);
    for (const auto& [entry, name] : programs) {
      Method m;
      if (auto s = parseProgram(*entry, name, m); !s) return s.error();
      std::unordered_map<std::string, pt2::WeightData> weights;
      for (const char* sidecar : {"_state_dict", "_constants"})
        if (const ZipEntry* sd = zip_.find(entry->name + sidecar); sd && sd->size > 0)
          if (auto s = pt2::torchSave(zip_, *sd, weights); !s) return s.error();
      if (auto s = pt2::attachWeights(m, weights, file_->path() + ":" + entry->name); !s) return s.error();
      program_.methods.push_back(std::move(m));
    }
    if (program_.methods.empty()) return refuse("an ETRecord without exported programs");
    if (auto s = readDelegateMap(); !s) return s.error();
    return std::move(program_);
  }

  /// delegate_map: {method: {instruction id: {"name": backend id, "delegate_map": {...}}}}, what
  /// the recorded .pte delegated. Its backends are kept when no edge program has a delegate call.
  Status readDelegateMap() {
    const ZipEntry* e = zip_.find("delegate_map");
    if (!e || e->size == 0) return Ok{};
    for (const Method& m : program_.methods)
      if (!m.delegates.empty()) return Ok{};
    auto text = readText(*e);
    if (!text) return text.error();
    const std::string where = file_->path() + ":" + e->name;
    simdjson::dom::element doc;
    if (auto err = parser_.parse(text.value()).get(doc))
      return Error{ErrorCode::Invalid, where, std::nullopt, "delegate_map", "JSON", simdjson::error_message(err)};
    simdjson::dom::object methods;
    if (doc.get(methods))
      return Error{ErrorCode::Invalid, where, std::nullopt, "delegate_map", "a JSON object of methods", "another JSON value"};
    for (auto [method, instructions] : methods) {
      simdjson::dom::object byInstruction;
      if (instructions.get(byInstruction))
        return Error{ErrorCode::Invalid, where, std::nullopt, "delegate_map[\"" + std::string(method) + "\"]",
                     "a JSON object of instructions", "another JSON value"};
      for (auto [instruction, entry] : byInstruction) {
        std::string_view name;
        if (entry["name"].get(name))
          return Error{ErrorCode::Invalid, where, std::nullopt,
                       "delegate_map[\"" + std::string(method) + "\"][\"" + std::string(instruction) + "\"]",
                       "an object with the backend's \"name\"", "none"};
        auto& to = program_.exportFacts.delegatedTo;
        if (std::find(to.begin(), to.end(), name) == to.end()) to.emplace_back(name);
      }
    }
    return Ok{};
  }

  std::shared_ptr<const MappedFile> file_;
  ZipArchive zip_;
  Program program_;
  simdjson::dom::parser parser_;
};

}  // namespace

bool looksLikeZip(const MappedFile& file) { return file.size() >= 4 && std::memcmp(file.data(), "PK\x03\x04", 4) == 0; }

Result<Program> readExport(std::shared_ptr<const MappedFile> file) { return ExportImporter(std::move(file)).run(); }

Result<Program> readExportFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readExport(std::move(f.value()));
}

Result<std::vector<StoredTensor>> readPt2SampleInputs(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readPt2SampleInputs(f.value());
}

Result<std::vector<StoredTensor>> readPt2SampleInputs(std::shared_ptr<const MappedFile> file) {
  const std::string path = file->path();
  if (!looksLikeZip(*file))
    return Error{ErrorCode::Unsupported, path, 0, "sample inputs", "a .pt2 (torch.export.save's zip), which keeps them",
                 "another kind of file: an ExecuTorch program keeps no sample inputs"};
  auto zip = ZipArchive::open(file);
  if (!zip) return zip.error();
  auto records = zip->findSuffix("data/sample_inputs/model.pt");
  std::vector<StoredTensor> out;
  if (records.empty() || records.front()->size == 0) return out;
  auto tensors = pt2::torchSaveInOrder(zip.value(), *records.front());
  if (!tensors) return tensors.error();
  std::string where = path + ":" + records.front()->name;
  for (const auto& [key, w] : tensors.value()) {
    if (key.rfind("0.", 0) != 0)  // (args, kwargs): path 0.* is args, 1.* kwargs
      return Error{ErrorCode::Unsupported, where, std::nullopt, "sample input '" + key + "'",
                   "positional arguments only", "a keyword argument"};
    StoredTensor t{key, w.dtype, w.sizes, {}};
    // Gather by the pickle's strides (views are rare in sample inputs, but possible).
    uint64_t es = elementSize(w.dtype), numel = 1;
    std::vector<int64_t> strides = w.strides;
    if (strides.size() != w.sizes.size()) {
      strides.assign(w.sizes.size(), 1);
      for (size_t d = w.sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * w.sizes[d];
    }
    uint64_t capacity = es ? w.bytes.size / es : 0;  // elements the storage holds past the offset
    for (size_t d = 0; d < strides.size(); ++d)
      if (strides[d] < 0 || w.sizes[d] < 0 || static_cast<uint64_t>(strides[d]) > capacity ||
          static_cast<uint64_t>(w.sizes[d]) > capacity + 1)
        return Error{ErrorCode::Invalid, where, w.bytes.fileOffset, "sample input '" + key + "'",
                     "sizes and strides inside its storage", "a negative or larger one"};
    for (int64_t s : w.sizes)
      numel = s == 0 || numel == 0 ? 0 : (numel > capacity / static_cast<uint64_t>(s) ? capacity + 1 : numel * static_cast<uint64_t>(s));
    if (numel > capacity)
      return Error{ErrorCode::Truncated, where, w.bytes.fileOffset, "storage of sample input '" + key + "'",
                   std::to_string(numel) + " elements", std::to_string(capacity)};
    t.bytes.resize(numel * es);
    std::vector<int64_t> at(w.sizes.size(), 0);
    for (uint64_t i = 0; i < numel; ++i) {
      uint64_t off = 0;
      for (size_t d = 0; d < at.size(); ++d) off += static_cast<uint64_t>(at[d] * strides[d]);
      if (off >= capacity)
        return Error{ErrorCode::Truncated, where, w.bytes.fileOffset, "storage of sample input '" + key + "'",
                     "element " + std::to_string(off) + " inside it", std::to_string(capacity) + " elements"};
      std::memcpy(t.bytes.data() + i * es, w.bytes.data + off * es, es);
      for (size_t d = at.size(); d-- > 0;) {
        if (++at[d] < w.sizes[d]) break;
        at[d] = 0;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace lstudio
