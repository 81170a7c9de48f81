// libFuzzer target: ETDump bytes through the reader, then linked to an emitted program (the
// mlp sample) with the same bytes as its debug buffer, and compared with the interpreter's
// run. A mutated file must give an error naming the file and an offset, never a crash.
#include "engine/formats/EtdumpReader.h"
#include "engine/inspect/EtdumpReport.h"
#include "engine/run/Interpreter.h"
#include "tests/support/EmittedSample.h"

#include <cstdlib>
#include <filesystem>

using namespace lstudio;

namespace {
struct Target {
  Program program;
  run::RunResult traced;
};
const Target& target() {
  static const Target t = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "lstudio_fuzz_etdump").string();
    std::filesystem::create_directories(dir);
    auto p = emittedSample(dir, "mlp");
    if (!p) std::abort();
    run::RunOptions o;
    o.trace = true;
    auto r = run::runProgram(p.value(), o);
    if (!r) std::abort();
    return Target{std::move(p.value()), std::move(r.value())};
  }();
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Target& t = target();
  auto file = MappedFile::fromBytes("fuzz.etdp", data, size);
  auto dump = readEtdump(*file);
  if (!dump) {
    if (dump.error().file != "fuzz.etdp" || !dump.error().offset) __builtin_trap();  // every refusal says where
    return 0;
  }
  auto report = linkEtdump(dump.value(), t.program, {}, file.get());
  if (report) compareWithInterpreter(report.value(), t.traced);
  return 0;
}
