// libFuzzer target: .pte bytes through the reader and the interpreter (engine/run), every
// method on iota inputs, with memory and work limits: a mutated program must give an error,
// never a crash, an out-of-bounds access or a hang.
#include "engine/formats/PteReader.h"
#include "engine/run/Interpreter.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = MappedFile::fromBytes("fuzz.pte", data, size);
  auto program = readProgram(file);
  if (!program.ok()) return 0;
  for (const Method& m : program->methods) {
    run::RunOptions o;
    o.method = m.name;
    o.memoryLimit = 64u << 20;
    o.workLimit = 20'000'000;
    (void)run::runProgram(program.value(), o);
  }
  return 0;
}
