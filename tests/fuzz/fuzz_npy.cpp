// libFuzzer target: .npy bytes through the reader (lowering-cli run --inputs). A mutated file
// must give an error naming the offset, never a crash; what it accepts must write back to a
// file that reads as the same array.
#include "engine/run/Npy.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto v = run::parseNpy(bytes, "fuzz.npy");
  if (!v.ok()) {
    if (!v.error().offset || *v.error().offset > size) __builtin_trap();  // every refusal names where
    return 0;
  }
  auto back = run::parseNpy(run::npyBytes(v.value()), "back.npy");
  if (!back.ok() || back->dtype != v->dtype || back->sizes != v->sizes || back->bytes != v->bytes) __builtin_trap();
  return 0;
}
