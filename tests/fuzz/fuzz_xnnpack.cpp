// libFuzzer target: a delegate payload through the decoders. An XNNPACK one
// (XH00 header + XNNGraph flatbuffer + constant data, or a bare XN00/XN01
// flatbuffer) and both renderings of its report, as `lowering-cli delegates`
// does; any payload through the Vulkan and Ethos-U framing.
#include <nlohmann/json.hpp>

#include "engine/formats/delegates/XnnpackPayload.h"
#include "engine/inspect/DelegateReport.h"

using namespace lstudio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes blob{data, size, 4096};
  (void)describePayload(blob);
  auto g = xnnpack::decode(blob, "fuzz.pte");
  if (!g.ok()) {
    (void)g.error().message();
    return 0;
  }
  DelegateReport r;
  r.backend = "XnnpackBackend";
  r.blobBytes = size;
  r.xnnpack = std::move(g.value());
  Method m;
  (void)delegateText(r, m, true);
  (void)delegateJson(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
