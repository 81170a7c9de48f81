#include "tests/support/EmittedSample.h"

#include <memory>

#include "engine/formats/OpenProgram.h"
#include "engine/formats/Pt2Writer.h"
#include "engine/lowering/Emitter.h"
#include "engine/lowering/Pipeline.h"
#include "engine/samples/SampleZoo.h"

namespace lstudio {

Result<Program> emittedSample(const std::string& dir, const std::string& name) {
  SampleOptions o;
  o.layers = 1;
  auto built = buildSample(name, o);
  if (!built) return built.error();
  std::string pt2 = dir + "/" + name + ".pt2";
  if (auto s = writePt2(built.value(), pt2); !s) return s.error();
  auto opened = openProgramFile(pt2);
  if (!opened) return opened.error();
  ExecutorchBackendConfig c;
  Pipeline p(std::make_shared<const Program>(std::move(opened.value())), c);
  p.runToEnd();
  if (p.failed()) return Error{ErrorCode::Invalid, pt2, std::nullopt, "lowering", "success", "a failed pass"};
  return emitProgram(*p.current(), c);
}

}  // namespace lstudio
