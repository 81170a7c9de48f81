// A workspace: what the user set up around a program, saved as a small JSON
// file (".lstudio") so that reopening it restores the session — the input
// file and its .ptd files, the config (with its tagging rules), how far the
// lowering ran, and the view state. Paths are stored relative to the
// workspace file when they live under its folder, so a project folder can
// be moved or shared.
#pragma once

#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

inline constexpr const char* kWorkspaceExtension = ".lstudio";

struct Workspace {
  std::string input;                   ///< the program file (absolute once loaded)
  std::vector<std::string> dataFiles;  ///< .ptd files opened with it
  ExecutorchBackendConfig config;
  std::string runTo;                   ///< the last pass run ("" = none)
  int method = 0;
  std::string selectedNode;            ///< graph name of the selected node
  std::string view;                    ///< "graph", "memory plan", "text", "summary"
  bool compare = false;                ///< before/after view shown
};

/// JSON text of `w`; paths relative to `workspacePath`'s folder when under it.
std::string workspaceToJson(const Workspace& w, const std::string& workspacePath);
/// Parses a workspace; relative paths are resolved against `workspacePath`'s folder.
/// Errors name the file and the field.
Result<Workspace> workspaceFromJson(const std::string& text, const std::string& workspacePath);
Result<Workspace> loadWorkspace(const std::string& path);
/// Writes atomically (temporary file, fsync, rename).
Status saveWorkspace(const Workspace& w, const std::string& path);

}  // namespace lstudio
