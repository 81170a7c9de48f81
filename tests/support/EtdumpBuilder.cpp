#include "tests/support/EtdumpBuilder.h"

#include <flatbuffers/flatbuffers.h>

#include "engine/formats/schema/etdump_generated.h"

namespace lstudio {

std::vector<uint8_t> buildEtdump(const Method& m, const std::vector<uint64_t>& ticksPerExecution,
                                 const std::vector<LoggedTensor>& logged, const std::string& rename) {
  namespace fb = etdump;
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::RunData>> blocks;
  auto profile = [&](const char* name, int chain, int instruction, uint64_t start, uint64_t end) {
    return fb::CreateEvent(b, fb::CreateProfileEventDirect(b, name, chain, instruction, -1, nullptr, nullptr, start, end));
  };
  {
    std::vector<flatbuffers::Offset<fb::Event>> events{profile("Program::load_method", -1, 0, 10, 60)};
    blocks.push_back(fb::CreateRunDataDirect(b, "Default", -1, nullptr, &events));
  }
  for (size_t e = 0; e < ticksPerExecution.size(); ++e) {
    std::vector<flatbuffers::Offset<fb::Event>> events;
    uint64_t t = 1000, total = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (m.nodes[i].kind != NodeKind::Kernel) continue;
      std::string op = m.operators[static_cast<size_t>(m.nodes[i].op)].fullName();
      op = op.substr(op.find("::") + 2);
      if (i == 1 && !rename.empty()) op = rename;
      uint64_t d = ticksPerExecution[e] * (i + 1);
      if (e == 0)
        for (const LoggedTensor& l : logged)
          if (l.instruction == static_cast<int32_t>(i)) {
            auto tensor = fb::CreateTensorDirect(b, executorch_flatbuffer::ScalarType::FLOAT, &l.sizes, &l.strides, l.offset);
            auto value = fb::CreateValue(b, fb::ValueType::Tensor, tensor);
            events.push_back(fb::CreateEvent(b, 0, 0, fb::CreateDebugEventDirect(b, 0, l.instruction, value)));
          }
      events.push_back(profile(("native_call_" + op).c_str(), 0, static_cast<int>(i), t + 1, t + d - 1));
      events.push_back(profile("OPERATOR_CALL", 0, static_cast<int>(i), t, t + d));
      t += d, total += d;
    }
    events.push_back(profile("Method::execute", -1, 0, 1000, 1000 + total));
    blocks.push_back(fb::CreateRunDataDirect(b, "Execute", -1, nullptr, &events));
  }
  fb::FinishSizePrefixedETDumpBuffer(b, fb::CreateETDumpDirect(b, 0, &blocks));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace lstudio
