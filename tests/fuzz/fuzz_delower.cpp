// libFuzzer target: .pte bytes through the reader, de-lowering, every pass of
// the pipeline under the config matching the file, the emitter and the
// serializer (in memory): what the studio does when a user opens a .pte and
// exports it again.
#include "engine/formats/PteReader.h"
#include "engine/formats/PteWriter.h"
#include "engine/lowering/Delower.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Pipeline.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = MappedFile::fromBytes("fuzz.pte", data, size);
  auto program = readProgram(file);
  if (!program.ok()) return 0;
  ExecutorchBackendConfig config = configMatching(program.value());
  Pipeline pipeline(std::make_shared<const Program>(std::move(program.value())), config);
  pipeline.runToEnd();
  if (pipeline.failed()) return 0;
  auto emitted = emitProgram(*pipeline.current(), config);
  if (!emitted.ok()) return 0;
  PteWriteOptions options = writeOptionsFor(config);
  options.writeDataFiles = false;
  (void)serializePte(emitted.value(), options);
  return 0;
}
