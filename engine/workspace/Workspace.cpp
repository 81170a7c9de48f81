#include "engine/workspace/Workspace.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/support/AtomicFile.h"
#include "engine/support/MappedFile.h"

namespace lstudio {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr int kFormatVersion = 1;

// "sample:NAME" names a program of the zoo, not a file.
bool isSample(const std::string& path) { return path.rfind("sample:", 0) == 0; }

std::string relativeTo(const std::string& path, const fs::path& dir) {
  if (path.empty() || isSample(path)) return path;
  fs::path p = fs::absolute(path).lexically_normal();
  fs::path rel = p.lexically_relative(dir);
  if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  return p.generic_string();
}

std::string resolveFrom(const std::string& path, const fs::path& dir) {
  if (path.empty() || isSample(path) || fs::path(path).is_absolute()) return path;
  return (dir / path).lexically_normal().string();
}

Error fieldError(const std::string& file, const std::string& field, const std::string& expected, const std::string& found) {
  return Error{ErrorCode::Invalid, file, std::nullopt, "workspace field '" + field + "'", expected, found};
}

}  // namespace

std::string workspaceToJson(const Workspace& w, const std::string& workspacePath) {
  fs::path dir = fs::absolute(workspacePath).parent_path();
  json data = json::array();
  for (const auto& d : w.dataFiles) data.push_back(relativeTo(d, dir));
  json j = {{"lowering_studio_workspace", kFormatVersion},
            {"input", relativeTo(w.input, dir)},
            {"data_files", data},
            {"config", json::parse(configToJson(w.config))},
            {"run_to", w.runTo},
            {"view", {{"method", w.method}, {"selected_node", w.selectedNode}, {"tab", w.view}, {"compare", w.compare}}}};
  return j.dump(2) + "\n";
}

Result<Workspace> workspaceFromJson(const std::string& text, const std::string& file) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error{ErrorCode::Invalid, file, std::nullopt, "workspace", "a JSON object", "text that is not JSON"};
  if (!j.contains("lowering_studio_workspace") || !j["lowering_studio_workspace"].is_number_integer())
    return fieldError(file, "lowering_studio_workspace", "a format version number", "none");
  if (j["lowering_studio_workspace"].get<int>() > kFormatVersion)
    return fieldError(file, "lowering_studio_workspace", "version " + std::to_string(kFormatVersion) + " or older",
                      std::to_string(j["lowering_studio_workspace"].get<int>()));
  fs::path dir = fs::absolute(file).parent_path();
  Workspace w;
  auto str = [&](const json& o, const char* key, std::string& into, const std::string& path) -> Status {
    if (!o.contains(key)) return Ok{};
    if (!o[key].is_string()) return fieldError(file, path, "a string", o[key].dump());
    into = o[key].get<std::string>();
    return Ok{};
  };
  Status s = Ok{};
  if (!(s = str(j, "input", w.input, "input"))) return s.error();
  if (w.input.empty()) return fieldError(file, "input", "the program file", "none");
  w.input = resolveFrom(w.input, dir);
  if (j.contains("data_files")) {
    if (!j["data_files"].is_array()) return fieldError(file, "data_files", "a list of paths", j["data_files"].dump());
    for (const auto& d : j["data_files"]) {
      if (!d.is_string()) return fieldError(file, "data_files", "paths", d.dump());
      w.dataFiles.push_back(resolveFrom(d.get<std::string>(), dir));
    }
  }
  if (j.contains("config")) {
    auto c = configFromJson(j["config"].dump(), file + " (config)");
    if (!c) return c.error();
    w.config = c.value();
  }
  if (!(s = str(j, "run_to", w.runTo, "run_to"))) return s.error();
  if (j.contains("view")) {
    const json& v = j["view"];
    if (!v.is_object()) return fieldError(file, "view", "an object", v.dump());
    if (v.contains("method")) {
      if (!v["method"].is_number_integer() || v["method"].get<int64_t>() < 0 || v["method"].get<int64_t>() > 1'000'000)
        return fieldError(file, "view.method", "a method index", v["method"].dump());
      w.method = v["method"].get<int>();
    }
    if (!(s = str(v, "selected_node", w.selectedNode, "view.selected_node"))) return s.error();
    if (!(s = str(v, "tab", w.view, "view.tab"))) return s.error();
    if (v.contains("compare")) {
      if (!v["compare"].is_boolean()) return fieldError(file, "view.compare", "true or false", v["compare"].dump());
      w.compare = v["compare"].get<bool>();
    }
  }
  return w;
}

Result<Workspace> loadWorkspace(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  if (f.value()->size() > (1u << 24))
    return Error{ErrorCode::Invalid, path, std::nullopt, "workspace", "a small JSON file", std::to_string(f.value()->size()) + " bytes"};
  return workspaceFromJson(std::string(reinterpret_cast<const char*>(f.value()->data()), f.value()->size()), path);
}

Status saveWorkspace(const Workspace& w, const std::string& path) {
  return writeFileAtomically(path, workspaceToJson(w, path));
}

}  // namespace lstudio
