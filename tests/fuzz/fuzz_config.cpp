// libFuzzer target: ExecutorchBackendConfig JSON through the loader and back.
#include <string>

#include "engine/lowering/BackendConfig.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = configFromJson(std::string(reinterpret_cast<const char*>(data), size));
  if (c.ok()) {
    auto again = configFromJson(configToJson(c.value()));
    if (!again.ok()) __builtin_trap();  // what we write we must read
  }
  return 0;
}
