#include "engine/formats/pte/PtdFile.h"

#include <flatbuffers/flatbuffers.h>

#include <string>

#include "engine/formats/schema/flat_tensor_generated.h"
#include "engine/formats/schema/program_generated.h"

namespace lstudio::pte {
namespace fb = executorch_flatbuffer;
namespace ft = flat_tensor_flatbuffer;

namespace {

constexpr uint32_t kFh01Length = 40;      // magic, length, fb offset, fb size, segment base, segment data size
constexpr uint64_t kFh01Padded = 48;      // FH01 padded to the 16-byte flatbuffer alignment, as ExecuTorch does

}  // namespace

FilePlan planPtd(const std::vector<ExternalEntry>& entries, const PteWriteOptions& o) {
  BlobPool pool;
  std::vector<SegmentPlan> segs;
  std::vector<uint32_t> segOf;
  for (const auto& e : entries) {
    bool added = false;
    uint32_t k = pool.add(e.bytes, &added);
    if (added) {
      SegmentPlan s;
      s.size = e.bytes.size;
      s.parts.emplace_back(0, e.bytes);
      segs.push_back(std::move(s));
    }
    segOf.push_back(k);
  }
  std::vector<uint64_t> offsets;
  uint64_t dataSize = layOutSegments(segs, o.ptdSegmentAlignment, offsets);
  // ExecuTorch serializes the FlatTensor as JSON and compiles it with flatc, which makes each
  // string, vector and sub-table as it reads it: in field order, depth first. Every piece is
  // made in a statement of its own, in that order (the order C++ evaluates a call's arguments
  // in is unspecified); flatc's field order inside a table is the generated Create*'s.
  flatbuffers::FlatBufferBuilder fbb(4096);
  std::vector<flatbuffers::Offset<ft::DataSegment>> fsegs;
  for (size_t i = 0; i < segs.size(); ++i) fsegs.push_back(ft::CreateDataSegment(fbb, offsets[i], segs[i].size));
  auto segVec = fbb.CreateVector(fsegs);
  std::vector<flatbuffers::Offset<ft::NamedData>> named;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    std::vector<int32_t> sizes(e.sizes.begin(), e.sizes.end());
    std::vector<uint8_t> dims = e.dimOrder;
    if (dims.empty())
      for (size_t d = 0; d < sizes.size(); ++d) dims.push_back(static_cast<uint8_t>(d));
    const auto key = fbb.CreateString(e.key.data(), e.key.size());
    flatbuffers::Offset<ft::TensorLayout> layout = 0;
    if (e.hasLayout) {
      const auto sizesVec = fbb.CreateVector(sizes);
      const auto dimsVec = fbb.CreateVector(dims);
      layout = ft::CreateTensorLayout(fbb, static_cast<fb::ScalarType>(e.dtype), sizesVec, dimsVec);
    }
    named.push_back(ft::CreateNamedData(fbb, key, segOf[i], layout));
  }
  auto namedVec = fbb.CreateVector(named);
  fbb.Finish(ft::CreateFlatTensor(fbb, 0, segVec, namedVec), "FT01");
  uint64_t raw = fbb.GetSize();
  uint64_t base = alignUp(raw + kFh01Padded, o.ptdSegmentAlignment);
  std::string h = "FH01";
  putLe32(h, kFh01Length);
  putLe64(h, kFh01Padded);  // flatbuffer offset, as ExecuTorch writes it
  putLe64(h, raw);          // flatbuffer size (without the header)
  putLe64(h, base);
  putLe64(h, dataSize);
  h.resize(kFh01Padded, '\0');
  FilePlan f;
  f.head = insertHeader(fbb.GetBufferPointer(), fbb.GetSize(), h);
  addPieces(f, segs, offsets, base);
  f.size = base + dataSize;
  return f;
}

}  // namespace lstudio::pte
