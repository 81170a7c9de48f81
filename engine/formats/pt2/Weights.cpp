#include "engine/formats/pt2/Weights.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/formats/TorchPickle.h"

namespace lstudio::pt2 {
namespace {

constexpr uint64_t kMaxText = uint64_t(4) << 30;  // a config or pickle larger than 4 GiB is refused

/// Bytes a tensor with these sizes/strides/offset reaches into its storage.
uint64_t storageExtent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                       uint32_t elemSize) {
  uint64_t last = static_cast<uint64_t>(std::max<int64_t>(offset, 0));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    int64_t stride = i < strides.size() ? strides[i] : 0;
    last += static_cast<uint64_t>(sizes[i] - 1) * static_cast<uint64_t>(std::max<int64_t>(stride, 0));
  }
  return (last + 1) * elemSize;
}

/// A torch.save blob stored as a record: its first tensor's bytes.
Result<WeightData> pickledTensor(const ZipArchive& zip, const ZipEntry& rec, const std::string& fqn) {
  std::unordered_map<std::string, WeightData> all;
  if (auto s = torchSave(zip, rec, all); !s) return s.error();
  if (all.empty())
    return Error{ErrorCode::Invalid, zip.file()->path(), rec.dataOffset, "pickled weights of '" + fqn + "'", "a tensor", "none"};
  return all.begin()->second;
}

Status readWeightConfigUnchecked(const ZipArchive& zip, const std::string& prefix, const std::string& configPath,
                                 const std::string& dataDir, std::unordered_map<std::string, WeightData>& out) {
  const ZipEntry* cfg = zip.find(configPath);
  if (!cfg) return Ok{};
  auto text = zip.read(*cfg, kMaxText);
  if (!text) return text.error();
  nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, false);
  std::string where = zip.file()->path() + ":" + configPath;
  if (j.is_discarded() || !j.is_object())
    return Error{ErrorCode::Invalid, where, std::nullopt, "weights config", "a JSON object", "invalid JSON"};
  const auto& config = j.contains("config") ? j["config"] : j;
  if (!config.is_object())
    return Error{ErrorCode::Invalid, where, std::nullopt, "weights config 'config'", "an object", config.type_name()};
  for (const auto& [fqn, entry] : config.items()) {
    if (!entry.is_object() || !entry.contains("path_name") || !entry["path_name"].is_string())
      return Error{ErrorCode::Invalid, where, std::nullopt, "weights config entry '" + fqn + "'", "a path_name", "none"};
    std::string path = prefix + dataDir + entry["path_name"].get<std::string>();
    const ZipEntry* rec = zip.find(path);
    if (!rec)
      return Error{ErrorCode::MissingKey, where, std::nullopt, "weights record of '" + fqn + "'", path, "no such record"};
    if (entry.value("use_pickle", false)) {
      auto w = pickledTensor(zip, *rec, fqn);
      if (!w) return w.error();
      out[fqn] = w.value();
      continue;
    }
    auto b = zip.bytes(*rec);
    if (!b) return b.error();
    out[fqn] = WeightData{b.value(), false, ScalarType::Float, {}};
  }
  return Ok{};
}

}  // namespace

Status attachWeights(Method& m, const std::unordered_map<std::string, WeightData>& weights, const std::string& where) {
  for (const InputSpec& in : m.signature.inputs) {
    if (in.kind != InputSpec::Kind::Parameter && in.kind != InputSpec::Kind::Buffer &&
        in.kind != InputSpec::Kind::ConstantTensor)
      continue;
    if (in.value == kNoValue) continue;
    auto it = weights.find(in.target);
    if (it == weights.end()) {
      if (in.kind == InputSpec::Kind::Buffer && !in.persistent) continue;  // non-persistent buffers may be absent
      return Error{ErrorCode::MissingKey, where, std::nullopt, "weights of '" + in.target + "'",
                   "a stored tensor for every parameter, buffer and constant", "none"};
    }
    TensorSpec& t = m.values[in.value].tensor();
    const WeightData& w = it->second;
    t.fqn = in.target;
    if (w.bytes.size == 0 && !w.viewed) continue;  // a 0-byte record stands for a fake (meta) tensor
    // Raw records hold a whole storage: the tensor is a view at its
    // storage offset; pickled ones are already the tensor's own view.
    uint32_t es = elementSize(t.dtype);
    uint64_t start = w.viewed ? 0 : static_cast<uint64_t>(std::max(t.storageOffset, 0)) * es;
    uint64_t end = t.strides.size() == t.sizes.size()
                       ? storageExtent(t.sizes, t.strides, w.viewed ? 0 : t.storageOffset, es)
                       : start + t.nbytes().value_or(0);
    if (w.bytes.size < end)
      return Error{ErrorCode::Truncated, where, w.bytes.fileOffset, "weights of '" + in.target + "'",
                   std::to_string(end) + " bytes for " + t.shapeString(), std::to_string(w.bytes.size) + " bytes"};
    t.data = Bytes{w.bytes.data + start, end - std::min(end, start), w.bytes.fileOffset + start};
  }
  return Ok{};
}

Status readWeightConfig(const ZipArchive& zip, const std::string& prefix, const std::string& configPath,
                        const std::string& dataDir, std::unordered_map<std::string, WeightData>& out) {
  // nlohmann throws on type mismatches; nothing may escape the engine.
  try {
    return readWeightConfigUnchecked(zip, prefix, configPath, dataDir, out);
  } catch (const nlohmann::json::exception& e) {
    return Error{ErrorCode::Invalid, zip.file()->path() + ":" + configPath, std::nullopt, "weights config",
                 "the documented fields and types", e.what()};
  }
}

Status torchSave(const ZipArchive& zip, const ZipEntry& rec, std::unordered_map<std::string, WeightData>& out) {
  auto tensors = torchSaveInOrder(zip, rec);
  if (!tensors) return tensors.error();
  for (auto& [key, w] : tensors.value()) out[key] = std::move(w);
  return Ok{};
}

Result<std::vector<std::pair<std::string, WeightData>>> torchSaveInOrder(const ZipArchive& zip, const ZipEntry& rec) {
  if (!rec.stored)
    return Error{ErrorCode::Unsupported, zip.file()->path(), rec.dataOffset, "record '" + rec.name + "'",
                 "a stored torch.save archive", "a compressed one"};
  auto inner = ZipArchive::open(zip.file(), rec.dataOffset, rec.size, zip.file()->path() + ":" + rec.name);
  if (!inner) return inner.error();
  return torchSaveInOrder(inner.value());
}

Result<std::vector<std::pair<std::string, WeightData>>> torchSaveInOrder(const ZipArchive& archive) {
  std::vector<std::pair<std::string, WeightData>> out;
  auto pkls = archive.findSuffix("data.pkl");
  if (pkls.empty())
    return Error{ErrorCode::Invalid, archive.name(), std::nullopt, "torch.save archive", "a data.pkl record", "none"};
  const ZipEntry& pkl = *pkls.front();
  std::string prefix = pkl.name.substr(0, pkl.name.size() - std::string("data.pkl").size());
  auto text = archive.read(pkl, kMaxText);
  if (!text) return text.error();
  auto objs = decodeTorchPickle(reinterpret_cast<const uint8_t*>(text->data()), text->size(), archive.name() + ":" + pkl.name);
  if (!objs) return objs.error();
  for (const auto& [key, t] : objs->tensors) {
    const ZipEntry* storage = archive.find(prefix + "data/" + t.storageKey);
    if (!storage)
      return Error{ErrorCode::MissingKey, archive.name(), std::nullopt, "storage of tensor '" + key + "'",
                   prefix + "data/" + t.storageKey, "no such record"};
    auto b = archive.bytes(*storage);
    if (!b) return b.error();
    uint32_t es = elementSize(t.dtype);
    uint64_t start = static_cast<uint64_t>(std::max<int64_t>(t.storageOffset, 0)) * es;
    uint64_t extent = storageExtent(t.sizes, t.strides, t.storageOffset, es);
    if (extent > b->size || start > b->size)
      return Error{ErrorCode::Truncated, archive.name(), b->fileOffset, "storage of tensor '" + key + "'",
                   std::to_string(extent) + " bytes", std::to_string(b->size) + " bytes"};
    Bytes view{b->data + start, extent - std::min(extent, start), b->fileOffset + start};
    out.emplace_back(key, WeightData{view, true, t.dtype, t.sizes, t.strides});
  }
  return out;
}

}  // namespace lstudio::pt2
