// libFuzzer target: .pt2 / ETRecord zips through the importer (zip, JSON,
// pickle, program mapping, edge-dialect check) and the lowering pipeline.
#include "engine/inspect/Inspect.h"
#include "engine/formats/Pt2Reader.h"
#include "engine/lowering/Pipeline.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)readPt2SampleInputs(MappedFile::fromBytes("fuzz.pt2", data, size));  // run --inputs sample
  auto program = readExport(MappedFile::fromBytes("fuzz.pt2", data, size));
  if (!program.ok()) return 0;
  (void)toText(summarize(program.value()));
  Pipeline pipeline(std::make_shared<const Program>(std::move(program.value())), ExecutorchBackendConfig{});
  pipeline.runToEnd();
  return 0;
}
