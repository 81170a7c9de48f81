// libFuzzer target: .pte / .bpte / .ptd bytes through the readers, the
// summary (memory-plan analysis included) and external-tensor resolution.
#include "engine/Inspect.h"
#include "engine/PtdReader.h"
#include "engine/PteReader.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = MappedFile::fromBytes("fuzz.pte", data, size);
  auto program = readProgram(file);
  if (program.ok()) (void)toText(summarize(program.value()));
  auto ptd = readDataFile(file);
  if (ptd.ok()) {
    (void)dataFileText(ptd.value());
    if (program.ok()) (void)resolveExternalTensors(program.value(), {ptd.value()});
  }
  return 0;
}
