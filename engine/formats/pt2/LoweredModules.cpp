// Lowered backend modules inside an edge program. ExecuTorch's serde writes
// each one as the first argument of its executorch_call_delegate node: a JSON
// string (LoweredBackendModule in exir/serde/schema.py) holding backend_id,
// processed_bytes (base64), compile_specs (key and base64 value), the
// original module, and named_data_store: a JSON string of buffers (base64)
// with the keys the backend stored them under, for the .pte (pte_data) or a
// .ptd (external_data). The call becomes a delegate call of the method, as in
// a .pte: its tensors in, then its results.
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "engine/formats/ZipArchive.h"
#include "engine/formats/pt2/ProgramJson.h"
#include "engine/formats/pt2/Weights.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::pt2 {
namespace {

/// Decodes base64 `text` into a buffer the Program will own; its bytes as a span.
Result<Bytes> ownedBytes(const std::string& text, const std::string& what, const std::string& file,
                         LoweredData& out) {
  std::string bytes;
  if (!decodeBase64(text, bytes))
    return Error{ErrorCode::Invalid, file, std::nullopt, what, "base64 text", std::to_string(text.size()) + " other characters"};
  auto buffer = MappedFile::fromBytes(what, bytes.data(), bytes.size());
  Bytes span{buffer->data(), buffer->size(), 0};
  out.buffers.push_back(std::move(buffer));
  return span;
}

const nlohmann::json* member(const nlohmann::json& j, const char* key, nlohmann::json::value_t type) {
  auto it = j.find(key);
  return it != j.end() && it->type() == type ? &*it : nullptr;
}

/// The named data one lowered module stored (NamedDataStoreOutput).
Status namedDataStore(const std::string& text, const std::string& where, const std::string& file, LoweredData& out) {
  auto store = nlohmann::json::parse(text, nullptr, false);
  const auto* buffers = store.is_object() ? member(store, "buffers", nlohmann::json::value_t::array) : nullptr;
  if (!buffers)
    return Error{ErrorCode::Invalid, file, std::nullopt, where + ".named_data_store", "a JSON object with buffers",
                 "something else"};
  std::vector<Bytes> data;
  for (size_t i = 0; i < buffers->size(); ++i) {
    if (!(*buffers)[i].is_string())
      return Error{ErrorCode::Invalid, file, std::nullopt, where + ".named_data_store.buffers", "base64 strings", "another type"};
    auto b = ownedBytes((*buffers)[i].get<std::string>(), where + ".named_data_store.buffers[" + std::to_string(i) + "]",
                        file, out);
    if (!b) return b.error();
    data.push_back(b.value());
  }
  auto entryData = [&](const nlohmann::json& e, const std::string& key) -> Result<Bytes> {
    auto idx = e.is_object() ? e.find("buffer_index") : e.end();
    bool valid = idx != e.end() && idx->is_number_integer() && idx->get<int64_t>() >= 0 &&
                 uint64_t(idx->get<int64_t>()) < data.size();
    if (!valid)
      return Error{ErrorCode::OutOfRange, file, std::nullopt, where + ".named_data_store entry " + key + ".buffer_index",
                   "< " + std::to_string(data.size()), idx != e.end() ? idx->dump() : "none"};
    return data[size_t(idx->get<int64_t>())];
  };
  if (const auto* pte = member(store, "pte_data", nlohmann::json::value_t::object))
    for (const auto& [key, e] : pte->items()) {
      auto b = entryData(e, key);
      if (!b) return b.error();
      out.namedData.push_back(NamedBlob{key, 0, b.value()});
    }
  if (const auto* ext = member(store, "external_data", nlohmann::json::value_t::object))
    for (const auto& [fileName, entries] : ext->items()) {
      if (!entries.is_object()) continue;
      for (const auto& [key, e] : entries.items()) {
        auto b = entryData(e, key);
        if (!b) return b.error();
        CarriedData c;
        c.file = fileName.ends_with(".ptd") ? fileName.substr(0, fileName.size() - 4) : fileName;
        c.key = key;
        c.data = b.value();
        out.external.push_back(std::move(c));
      }
    }
  return Ok{};
}

/// The nodes of the lowered module's original program, by debug handle: what
/// each of the backend's operators was made from. Best effort: an original
/// module this cannot read simply leaves the operators unlinked.
std::vector<DelegateOrigin> origins(const nlohmann::json& lowered) {
  std::vector<DelegateOrigin> out;
  const nlohmann::json* graph = &lowered;
  for (const char* key : {"original_module", "graph_module", "graph", "nodes"}) {
    auto it = graph->is_object() ? graph->find(key) : graph->end();
    if (it == graph->end()) return out;
    graph = &*it;
  }
  if (!graph->is_array()) return out;
  for (const auto& n : *graph) {
    auto meta = n.find("metadata");
    if (meta == n.end() || !meta->is_object()) continue;
    auto handle = meta->find("debug_handle");
    if (handle == meta->end() || !handle->is_string()) continue;
    DelegateOrigin o;
    o.debugHandle = uint32_t(std::strtoul(handle->get<std::string>().c_str(), nullptr, 10));
    if (auto t = n.find("target"); t != n.end() && t->is_string()) {
      o.op = t->get<std::string>();
      for (const char* prefix : {"executorch.exir.dialects.edge.ops.", "torch.ops."})
        if (o.op.rfind(prefix, 0) == 0) o.op = o.op.substr(std::string(prefix).size());
    }
    auto outs = n.find("outputs");
    if (outs != n.end() && outs->is_array() && !outs->empty()) {
      const auto& first = (*outs)[0];
      if (auto t = first.find("as_tensor"); t != first.end() && t->is_object() && t->contains("name"))
        o.node = (*t)["name"].is_string() ? (*t)["name"].get<std::string>() : "";
    }
    if (auto stack = meta->find("nn_module_stack"); stack != meta->end() && stack->is_string()) {
      auto frames = parseModuleStack(stack->get<std::string>());
      if (!frames.empty()) o.module = frames.back().path;
    }
    out.push_back(std::move(o));
  }
  return out;
}

/// The lowered module's original program (ExecuTorch's original_module, a serialized
/// ExportedProgram, with its weights in original_state_dict and original_constants: base64
/// torch.save archives) as a program of one method, which the studio can run in the call's
/// place.
Result<std::shared_ptr<const Program>> originalProgram(const nlohmann::json& lowered, const std::string& where,
                                                       const std::string& file) {
  const auto* original = member(lowered, "original_module", nlohmann::json::value_t::object);
  if (!original)
    return Error{ErrorCode::MissingKey, file, std::nullopt, where + ".original_module", "the program before delegation",
                 "none"};
  auto p = std::make_shared<Program>();
  p->path = file;
  p->format = SourceFormat::EtRecord;
  p->exportFacts.container = "lowered module";
  Method m;
  m.name = "forward";
  std::string text = original->dump();
  simdjson::dom::parser parser;  // the file's own parser is still reading the enclosing graph
  if (auto s = readProgramJson(text, file + ":" + where + ".original_module", true, parser, m, p->exportFacts); !s)
    return s.error();
  std::unordered_map<std::string, WeightData> weights;
  for (const char* key : {"original_state_dict", "original_constants"}) {
    const auto* encoded = member(lowered, key, nlohmann::json::value_t::string);
    if (!encoded || encoded->get<std::string>().empty()) continue;
    std::string bytes;
    if (!decodeBase64(encoded->get<std::string>(), bytes))
      return Error{ErrorCode::Invalid, file, std::nullopt, where + "." + key, "base64 text", "other characters"};
    auto archiveBytes = MappedFile::fromBytes(file + ":" + where + "." + key, bytes.data(), bytes.size());
    auto zip = ZipArchive::open(archiveBytes);
    if (!zip) return zip.error();
    auto tensors = torchSaveInOrder(zip.value());
    if (!tensors) return tensors.error();
    for (auto& [fqn, w] : tensors.value()) weights[fqn] = std::move(w);
    p->derivedData.push_back(std::move(archiveBytes));  // the weights' bytes stay in it
  }
  if (auto s = attachWeights(m, weights, file + ":" + where + ".original_module"); !s) return s.error();
  p->methods.push_back(std::move(m));
  return std::shared_ptr<const Program>(std::move(p));
}

}  // namespace

Status ProgramJson::loweredModule(Node& n, const std::string& w) {
  const std::string where = w + " (executorch_call_delegate)";
  const Value* first = n.args.empty() ? nullptr : &m_.values[n.args[0]];
  const auto* text = first ? std::get_if<std::string>(&first->payload) : nullptr;
  if (!text)
    return Error{ErrorCode::Unsupported, file_, std::nullopt, where + ".inputs[0]",
                 "the lowered module serialized as a string", "another argument"};
  auto j = nlohmann::json::parse(*text, nullptr, false);
  const auto* backend = j.is_object() ? member(j, "backend_id", nlohmann::json::value_t::string) : nullptr;
  const auto* processed = j.is_object() ? member(j, "processed_bytes", nlohmann::json::value_t::string) : nullptr;
  if (!backend || !processed)
    return Error{ErrorCode::Invalid, file_, std::nullopt, where + " lowered module",
                 "JSON with backend_id and processed_bytes", j.is_discarded() ? "text that is not JSON" : "other fields"};
  Delegate d;
  d.backendId = backend->get<std::string>();
  auto blob = ownedBytes(processed->get<std::string>(), where + ".processed_bytes", file_, *lowered_);
  if (!blob) return blob.error();
  d.blob = blob.value();
  if (const auto* specs = member(j, "compile_specs", nlohmann::json::value_t::array))
    for (const auto& s : *specs) {
      const auto* key = s.is_object() ? member(s, "key", nlohmann::json::value_t::string) : nullptr;
      const auto* value = s.is_object() ? member(s, "value", nlohmann::json::value_t::string) : nullptr;
      std::string bytes;
      if (!key || !value || !decodeBase64(value->get<std::string>(), bytes))
        return Error{ErrorCode::Invalid, file_, std::nullopt, where + ".compile_specs", "key and base64 value", "other"};
      d.compileSpecs.push_back({key->get<std::string>(), std::vector<uint8_t>(bytes.begin(), bytes.end())});
    }
  if (const auto* store = member(j, "named_data_store", nlohmann::json::value_t::string))
    if (auto s = namedDataStore(store->get<std::string>(), where, file_, *lowered_); !s) return s;
  d.origins = origins(j);
  // Without it the call is still a call; only running it needs the original.
  if (auto original = originalProgram(j, where, file_)) d.original = std::move(original.value());
  else d.originalError = original.error().message();
  n.kind = NodeKind::Delegate;
  n.op = -1;
  n.delegate = static_cast<int32_t>(m_.delegates.size());
  m_.delegates.push_back(std::move(d));
  // As in a .pte: the tensors it reads, then those it writes.
  n.args.erase(n.args.begin());
  n.argNames.clear();
  for (ValueId o : n.outputs) {
    n.args.push_back(o);
    // ExecuTorch writes every delegate result with requires_grad false (its
    // in-memory program traced the call without autograd), while the ETRecord's
    // serialized copy of the same graph says true: the file upstream writes wins.
    if (auto* t = std::get_if<TensorSpec>(&m_.values[o].payload)) t->requiresGrad = false;
  }
  return Ok{};
}

}  // namespace lstudio::pt2
