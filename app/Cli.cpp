#include "app/Cli.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "engine/Inspect.h"
#include "engine/PtdReader.h"
#include "engine/OpenProgram.h"

#ifndef LSTUDIO_VERSION
#define LSTUDIO_VERSION "dev"
#endif

namespace lstudio::cli {
namespace {

const char* kUsageText =
    "usage: lowering-cli COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  inspect FILE [--ptd DATA.ptd]... [--json]\n"
    "      Verify a program and print what is inside. For an ExecuTorch program\n"
    "      (.pte, bundled .bpte): header, methods, inputs and outputs, operators,\n"
    "      delegates, constants, and per mem_id the arena size, lower bound and\n"
    "      overlap check; --ptd resolves external tensors against data files.\n"
    "      For a torch.export archive (.pt2, either generation) or an ETRecord:\n"
    "      nodes, operators, the graph signature with shapes and bytes, module\n"
    "      depth and weight bytes.\n"
    "\n"
    "  --help     show this text\n"
    "  --version  show the version\n"
    "\n"
    "exit codes: 0 ok, 2 usage error, 3 a file that cannot be read or is invalid\n";

int inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string file;
  std::vector<std::string> ptds;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--ptd") {
      if (i + 1 >= args.size()) {
        err << "lowering-cli inspect: --ptd needs a file\n";
        return kUsage;
      }
      ptds.push_back(args[++i]);
    } else if (a.rfind("--ptd=", 0) == 0) {
      ptds.push_back(a.substr(6));
    } else if (!a.empty() && a[0] == '-') {
      err << "lowering-cli inspect: unknown option " << a << "\n" << kUsageText;
      return kUsage;
    } else if (file.empty()) {
      file = a;
    } else {
      err << "lowering-cli inspect: one FILE only (got " << file << " and " << a << ")\n";
      return kUsage;
    }
  }
  if (file.empty()) {
    err << "lowering-cli inspect: missing FILE\n" << kUsageText;
    return kUsage;
  }
  auto program = openProgramFile(file);
  if (!program) {
    err << "error: " << program.error().message() << "\n";
    return kBadFile;
  }
  std::vector<DataFile> data;
  for (const auto& p : ptds) {
    auto d = readDataFile(p);
    if (!d) {
      err << "error: " << d.error().message() << "\n";
      return kBadFile;
    }
    data.push_back(std::move(d.value()));
  }
  if (!data.empty()) {
    if (auto s = resolveExternalTensors(program.value(), data); !s) {
      err << "error: " << s.error().message() << "\n";
      return kBadFile;
    }
  }
  ProgramSummary summary = summarize(program.value(), data);
  if (json) out << toJson(summary).dump(2) << "\n";
  else out << toText(summary);
  return kOk;
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsageText;
    return kUsage;
  }
  const std::string& cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    out << kUsageText;
    return kOk;
  }
  if (cmd == "--version") {
    out << "lowering-cli " << LSTUDIO_VERSION << "\n";
    return kOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "inspect") return inspect(rest, out, err);
  err << "lowering-cli: unknown command '" << cmd << "'\n" << kUsageText;
  return kUsage;
}

}  // namespace lstudio::cli
