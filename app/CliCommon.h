// What the lowering-cli commands share across Cli.cpp, CliLower.cpp, CliPlan.cpp and CliRun.cpp
// (internal to the CLI).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/EtRecordLink.h"
#include "engine/formats/PtdReader.h"
#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio::cli {

/// A JSON document as text; bytes that are not UTF-8 (names inside a file) shown as U+FFFD.
std::string jsonText(const nlohmann::json& j);
/// The usage text of every command (lowering-cli --help).
extern const char* const kUsageText;
/// The usage text of one command.
std::string commandUsage(const std::string& cmd);

/// FILE [--ptd DATA.ptd]... [--etrecord E] [--json] [--full] [--size]: what inspect and delegates take.
struct FileArgs {
  std::string file;
  std::string etrecord;
  std::vector<std::string> ptds;
  bool json = false, full = false, size = false;
  std::string against;  ///< inspect --size --against OTHER: the two breakdowns side by side
};

/// Opens FILE and its data files, external tensors resolved; kOk or an exit code.
int openWithData(const FileArgs& a, std::optional<Program>& program, std::vector<DataFile>& data, std::ostream& err);

/// The config a command runs under: the file given, else for a .pte the
/// config matching how it was made (re-exporting it changes nothing the
/// user did not ask for), else ExecuTorch's defaults.
/// `settings` ("KEY=VALUE", --set) then change single fields of it.
Result<ExecutorchBackendConfig> configFor(const Program* program, const std::string& configPath,
                                          const std::vector<std::string>& settings = {});

/// Links a .pte's instructions to the ETRecord written with it (modules, source lines, the
/// delegates' programs before delegation); kOk or an exit code.
int linkEtRecordArg(Program& program, const std::string& etrecord, std::ostream& err, EtRecordLink* link = nullptr);

/// Runs every pass; on a failure prints the pass and its diagnostics and returns null.
std::shared_ptr<const Program> lowerToEnd(std::shared_ptr<const Program> program, const ExecutorchBackendConfig& config,
                                          const std::string& file, std::ostream& err);

/// lowering-cli config, lower and export (CliLower.cpp).
int configCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int lowerCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int exportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// lowering-cli partition (CliPartition.cpp).
int partitionCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// lowering-cli plan (CliPlan.cpp).
int planCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// lowering-cli run and etdump (CliRun.cpp).
int runProgramCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int etdumpCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace lstudio::cli
