// libFuzzer target: .pte / .bpte / .ptd bytes through the readers, the
// summary (memory-plan analysis included), the size breakdown and
// external-tensor resolution.
#include <nlohmann/json.hpp>

#include "engine/inspect/Inspect.h"
#include "engine/inspect/SizeBreakdown.h"
#include "engine/formats/PtdReader.h"
#include "engine/formats/PteReader.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = MappedFile::fromBytes("fuzz.pte", data, size);
  auto program = readProgram(file);
  if (program.ok()) {
    auto summary = summarize(program.value());  // runs the memory-plan analysis of every method
    (void)toText(summary);
    (void)toJson(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // as the CLI does
    SizeBreakdown b = sizeBreakdown(program.value());
    if (b.total() != size) __builtin_trap();  // every byte in exactly one part
    (void)sizeJson(b).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  auto ptd = readDataFile(file);
  if (ptd.ok()) {
    (void)dataFileText(ptd.value());
    if (sizeBreakdown(ptd.value()).total() != size) __builtin_trap();
    if (program.ok()) (void)resolveExternalTensors(program.value(), {ptd.value()});
  }
  return 0;
}
