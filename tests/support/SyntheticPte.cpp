#include "tests/support/SyntheticPte.h"

#include <flatbuffers/flatbuffers.h>

#include <cstdio>
#include <cstring>
#include <functional>

#include "engine/formats/schema/program_generated.h"

namespace lstudio::test {
namespace fb = executorch_flatbuffer;
namespace {

uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

struct Layout {
  std::vector<uint8_t> head;  // flatbuffer with the eh00 header inserted
  std::vector<uint64_t> constantOffsets;  // within the constant segment
  uint64_t segmentBase = 0, segmentSize = 0;
};

Layout layout(const SynthProgram& p) {
  Layout L;
  L.constantOffsets.push_back(0);  // placeholder entry 0
  uint64_t off = 0;
  for (uint64_t s : p.constantSizes) {
    L.constantOffsets.push_back(off);
    off = alignUp(off + s, p.constantAlignment);
  }
  L.segmentSize = off;

  flatbuffers::FlatBufferBuilder b(1024);
  std::vector<flatbuffers::Offset<fb::EValue>> values;
  for (const auto& t : p.tensors) {
    std::vector<uint8_t> dims(t.sizes.size());
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<uint8_t>(i);
    auto sizes = b.CreateVector(t.sizes);
    auto dimOrder = b.CreateVector(dims);
    flatbuffers::Offset<fb::AllocationDetails> alloc;
    if (t.slot)
      alloc = fb::CreateAllocationDetails(b, t.slot->first, static_cast<uint32_t>(t.slot->second),
                                          static_cast<uint32_t>(t.slot->second >> 32));
    flatbuffers::Offset<fb::ExtraTensorInfo> extra;
    if (!t.externalKey.empty())
      extra = fb::CreateExtraTensorInfo(b, 0, b.CreateString(t.externalKey), fb::TensorDataLocation::EXTERNAL);
    auto tensor = fb::CreateTensor(b, static_cast<fb::ScalarType>(t.dtype), 0, sizes, dimOrder, false, t.constant,
                                   alloc, 0, fb::TensorShapeDynamism::STATIC, extra);
    values.push_back(fb::CreateEValue(b, fb::KernelTypes::Tensor, tensor.Union()));
  }
  // Operators in order of first use.
  std::vector<std::pair<std::string, std::string>> ops;
  std::vector<flatbuffers::Offset<fb::Instruction>> instrs;
  for (const auto& k : p.kernels) {
    int idx = -1;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i] == std::make_pair(k.op, k.overload)) idx = static_cast<int>(i);
    if (idx < 0) {
      ops.emplace_back(k.op, k.overload);
      idx = static_cast<int>(ops.size() - 1);
    }
    auto call = fb::CreateKernelCall(b, idx, b.CreateVector(k.args));
    instrs.push_back(fb::CreateInstruction(b, fb::InstructionArguments::KernelCall, call.Union()));
  }
  std::vector<flatbuffers::Offset<fb::Operator>> opTable;
  for (const auto& [n, o] : ops) opTable.push_back(fb::CreateOperator(b, b.CreateString(n), b.CreateString(o)));
  auto chain = fb::CreateChain(b, b.CreateVector(p.inputs), b.CreateVector(p.outputs), b.CreateVector(instrs));
  std::vector<flatbuffers::Offset<fb::Chain>> chains{chain};
  auto plan = fb::CreateExecutionPlan(b, b.CreateString(p.method), 0, b.CreateVector(values), b.CreateVector(p.inputs),
                                      b.CreateVector(p.outputs), b.CreateVector(chains), b.CreateVector(opTable), 0,
                                      b.CreateVector(p.arenas));
  std::vector<flatbuffers::Offset<fb::ExecutionPlan>> plans{plan};
  std::vector<flatbuffers::Offset<fb::DataSegment>> segs{fb::CreateDataSegment(b, 0, L.segmentSize)};
  auto cseg = fb::CreateSubsegmentOffsets(b, 0, b.CreateVector(L.constantOffsets));
  auto program = fb::CreateProgram(b, 0, b.CreateVector(plans), 0, 0, b.CreateVector(segs), cseg);
  b.Finish(program, "ET12");

  const uint8_t* buf = b.GetBufferPointer();
  size_t size = b.GetSize();
  if (!p.extendedHeader) {
    L.head.assign(buf, buf + size);
    L.segmentBase = alignUp(size, p.segmentAlignment);
    return L;
  }
  // Insert the 32-byte eh00 header after the first 8 bytes; only the root
  // offset crosses the insertion point, so only it moves.
  constexpr uint32_t kHeader = 32;
  L.head.resize(size + kHeader);
  uint32_t root;
  std::memcpy(&root, buf, 4);
  root += kHeader;
  std::memcpy(L.head.data(), &root, 4);
  std::memcpy(L.head.data() + 4, buf + 4, 4);
  std::memcpy(L.head.data() + 8 + kHeader, buf + 8, size - 8);
  uint64_t programSize = size + kHeader;
  L.segmentBase = alignUp(programSize, p.segmentAlignment);
  uint8_t* h = L.head.data() + 8;
  std::memcpy(h, "eh00", 4);
  std::memcpy(h + 4, &kHeader, 4);
  std::memcpy(h + 8, &programSize, 8);
  std::memcpy(h + 16, &L.segmentBase, 8);
  std::memcpy(h + 24, &L.segmentSize, 8);
  return L;
}

/// Writes the whole file through `sink` in pieces.
void emit(const SynthProgram& p, const Layout& L, const std::function<void(const uint8_t*, size_t)>& sink) {
  sink(L.head.data(), L.head.size());
  std::vector<uint8_t> zeros(4096, 0);
  auto pad = [&](uint64_t n) {
    while (n) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, zeros.size()));
      sink(zeros.data(), k);
      n -= k;
    }
  };
  pad(L.segmentBase - L.head.size());
  std::vector<uint8_t> chunk(1 << 20);
  uint64_t written = 0;
  for (size_t i = 0; i < p.constantSizes.size(); ++i) {
    pad(L.constantOffsets[i + 1] - written);
    written = L.constantOffsets[i + 1];
    uint64_t left = p.constantSizes[i];
    for (size_t j = 0; j < chunk.size(); ++j) chunk[j] = static_cast<uint8_t>(i * 31 + j);
    while (left) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
      sink(chunk.data(), k);
      left -= k;
      written += k;
    }
  }
  pad(L.segmentSize - written);
}

}  // namespace

std::vector<uint8_t> buildSyntheticPte(const SynthProgram& p) {
  Layout L = layout(p);
  std::vector<uint8_t> out;
  emit(p, L, [&](const uint8_t* d, size_t n) { out.insert(out.end(), d, d + n); });
  return out;
}

bool writeSyntheticPte(const std::string& path, const SynthProgram& p, std::string* error) {
  Layout L = layout(p);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = "cannot create " + path;
    return false;
  }
  bool ok = true;
  emit(p, L, [&](const uint8_t* d, size_t n) { ok = ok && std::fwrite(d, 1, n, f) == n; });
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) *error = "cannot write " + path;
  return ok;
}

}  // namespace lstudio::test
