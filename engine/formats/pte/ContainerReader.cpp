#include "engine/formats/pte/ContainerReader.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "engine/formats/schema/program_generated.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::pte {
namespace fb = executorch_flatbuffer;

namespace {

/// Layer 3 helper: when full verification fails, walks the main tables with
/// fresh verifiers to name the deepest structure that fails and its offset.
class VerificationLocator {
 public:
  VerificationLocator(const uint8_t* buf, size_t size, flatbuffers::Verifier::Options opts)
      : buf_(buf), size_(size), opts_(opts) {}

  using Hit = std::pair<uint64_t, std::string>;

  /// Returns (offset relative to buf, path) of the failing structure.
  Hit locate() {
    if (size_ < 8) return {0, "root offset"};
    uint32_t root = flatbuffers::ReadScalar<uint32_t>(buf_);
    if (root >= size_) return {0, "root table offset"};
    const auto* program = flatbuffers::GetRoot<fb::Program>(buf_);
    auto v = fresh();
    if (!table(program)->VerifyTableStart(v)) return {root, "Program table"};
    Hit hit{root, "Program"};
    auto none = [](const auto*, Hit&) {};
    using P = fb::Program;
    if (vectorOfTables(program, P::VT_EXECUTION_PLAN, [&] { return program->execution_plan(); }, "execution_plan", hit,
                       [&](const fb::ExecutionPlan* plan, Hit& h) { planFailure(plan, h); }) ||
        vectorOfTables(program, P::VT_CONSTANT_BUFFER, [&] { return program->constant_buffer(); }, "constant_buffer", hit, none) ||
        vectorOfTables(program, P::VT_BACKEND_DELEGATE_DATA, [&] { return program->backend_delegate_data(); },
                       "backend_delegate_data", hit, none) ||
        vectorOfTables(program, P::VT_SEGMENTS, [&] { return program->segments(); }, "segments", hit, none) ||
        vectorOfTables(program, P::VT_MUTABLE_DATA_SEGMENTS, [&] { return program->mutable_data_segments(); },
                       "mutable_data_segments", hit, none) ||
        vectorOfTables(program, P::VT_NAMED_DATA, [&] { return program->named_data(); }, "named_data", hit, none))
      return hit;
    auto vc = fresh();
    if (!table(program)->VerifyOffset(vc, P::VT_CONSTANT_SEGMENT)) return {root, "Program.constant_segment"};
    if (auto* cs = program->constant_segment(); cs && !cs->Verify(vc)) return {off(cs), "Program.constant_segment"};
    return {root, "Program (a scalar field or the table's bounds)"};
  }

 private:
  template <class T>
  static const flatbuffers::Table* table(const T* t) { return reinterpret_cast<const flatbuffers::Table*>(t); }
  flatbuffers::Verifier fresh() const { return flatbuffers::Verifier(buf_, size_, opts_); }
  uint64_t off(const void* p) const { return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - buf_); }

  /// True when the failure is in this vector field of `parent` (whose table
  /// start is verified); `hit` is then the deepest failing element found.
  /// `get` reads the field and is only called once its offset is verified.
  template <class Parent, class Get, class Descend>
  bool vectorOfTables(const Parent* parent, flatbuffers::voffset_t vt, Get get, const std::string& name, Hit& hit,
                      Descend&& descend) {
    auto v = fresh();
    std::string base = hit.second + "." + name;
    if (!table(parent)->VerifyOffset(v, vt)) {
      hit = {off(parent), base + " (field offset)"};
      return true;
    }
    auto* vec = get();
    if (!vec) return false;
    if (!v.VerifyVector(vec)) {
      hit = {off(vec), base + " (vector length)"};
      return true;
    }
    for (uint32_t i = 0; i < vec->size(); ++i) {
      auto ve = fresh();
      // The element's offset lies inside the verified vector; its target may not.
      auto* slot = reinterpret_cast<const uint8_t*>(vec->Data()) + i * sizeof(flatbuffers::uoffset_t);
      if (!ve.VerifyOffset(static_cast<size_t>(slot - buf_))) {
        hit = {off(slot), base + "[" + std::to_string(i) + "] (offset)"};
        return true;
      }
      const auto* e = vec->Get(i);
      if (!e->Verify(ve)) {
        hit = {off(e), base + "[" + std::to_string(i) + "]"};
        auto vs = fresh();
        if (table(e)->VerifyTableStart(vs)) descend(e, hit);
        return true;
      }
    }
    return false;
  }

  void planFailure(const fb::ExecutionPlan* plan, Hit& hit) {
    auto none = [](const auto*, Hit&) {};
    using E = fb::ExecutionPlan;
    vectorOfTables(plan, E::VT_VALUES, [&] { return plan->values(); }, "values", hit, none) ||
        vectorOfTables(plan, E::VT_CHAINS, [&] { return plan->chains(); }, "chains", hit,
                       [&](const fb::Chain* c, Hit& h) {
                         vectorOfTables(c, fb::Chain::VT_INSTRUCTIONS, [&] { return c->instructions(); },
                                        "instructions", h, none);
                       }) ||
        vectorOfTables(plan, E::VT_OPERATORS, [&] { return plan->operators(); }, "operators", hit, none) ||
        vectorOfTables(plan, E::VT_DELEGATES, [&] { return plan->delegates(); }, "delegates", hit, none);
  }

  const uint8_t* buf_;
  size_t size_;
  flatbuffers::Verifier::Options opts_;
};

}  // namespace

flatbuffers::Verifier::Options verifierOptions(uint64_t size) {
  flatbuffers::Verifier::Options o;
  o.max_depth = 64;
  // Each distinct table takes at least 8 bytes; the bound stops DAG-shaped
  // files from making verification exponential.
  o.max_tables = static_cast<flatbuffers::uoffset_t>(std::max<uint64_t>(1'000'000, size / 8 + 1024));
  o.check_alignment = true;
  return o;
}

Status readContainerHeader(const MappedFile& file, uint64_t base, uint64_t span, ContainerFacts& f) {
  const std::string& path = file.path();
  const uint8_t* data = file.data() + base;
  auto at = [&](uint64_t rel) { return std::optional<uint64_t>(base + rel); };
  if (span < 8)
    return Error{ErrorCode::Truncated, path, at(0), "file too short for a flatbuffer", "at least 8 bytes",
                 std::to_string(span) + " bytes"};
  std::string ident(reinterpret_cast<const char*>(data) + 4, 4);
  // An ETDump, the runtime's record of one run (flatcc writes it size-prefixed: "ED00" at 8).
  bool etdump = ident == "ED00" || (span >= 12 && std::memcmp(data + 8, "ED00", 4) == 0);
  if (ident != "ET12" && etdump)
    return Error{ErrorCode::Unsupported, path, at(ident == "ED00" ? 4 : 8), "file kind", "an ExecuTorch program (ET12)",
                 "an ETDump (ED00): the runtime's profile and debug record of one run, not a program; open the .pte "
                 "that was run, and read the ETDump beside it with lowering-cli etdump FILE --program P.pte"};
  if (ident != "ET12")
    return Error{ErrorCode::BadMagic, path, at(4), "ExecuTorch program identifier", "\"ET12\"", describeMagic(ident)};
  f.identifier = ident;
  f.fileSize = file.size();
  f.programSize = span;
  if (span >= 16 && std::memcmp(data + 8, "eh00", 4) == 0) {
    uint32_t len = readLe32(data + 12);
    if (len < 24)
      return Error{ErrorCode::BadHeader, path, at(12), "eh00 header length", ">= 24", std::to_string(len)};
    if (8 + static_cast<uint64_t>(len) > span)
      return Error{ErrorCode::Truncated, path, at(8), "eh00 header", std::to_string(len) + " bytes",
                   std::to_string(span - 8) + " bytes left"};
    f.header = len >= 32 ? ContainerFacts::Header::Eh00 : ContainerFacts::Header::Eh00Short;
    f.headerLength = len;
    // The padding is a run of zeros after the header, followed by the flatbuffer's own
    // finishing pad (shorter than its alignment): the largest padded length the zeros
    // cover is the one the writer used.
    uint64_t zeros = 0;
    while (8 + len + zeros < span && zeros < 65536 && data[8 + len + zeros] == 0) ++zeros;
    f.headerPadding = len;
    for (uint64_t a = 2; a <= 65536; a *= 2)
      if (uint64_t p = (len + a - 1) / a * a; p - len <= zeros) f.headerPadding = static_cast<uint32_t>(p);
    f.programSize = readLe64(data + 16);
    uint64_t segBase = readLe64(data + 24);
    f.segmentDataSize = len >= 32 ? readLe64(data + 32) : 0;
    if (f.programSize < 8 + static_cast<uint64_t>(len) || f.programSize > span)
      return Error{ErrorCode::BadHeader, path, at(16), "eh00 program_size",
                   "between " + std::to_string(8 + len) + " and the file size " + std::to_string(span),
                   std::to_string(f.programSize)};
    if (segBase > span || (segBase != 0 && segBase < f.programSize))
      return Error{ErrorCode::BadHeader, path, at(24), "eh00 segment_base_offset",
                   "between program_size " + std::to_string(f.programSize) + " and the file size " + std::to_string(span),
                   std::to_string(segBase)};
    uint64_t segEnd = 0;
    if (!checkedAdd(segBase, f.segmentDataSize, segEnd) || segEnd > span)
      return Error{ErrorCode::Truncated, path, at(32), "segment data announced by eh00",
                   "segment_base_offset + segment_data_size <= " + std::to_string(span),
                   std::to_string(segBase) + " + " + std::to_string(f.segmentDataSize)};
    f.segmentBaseOffset = base + segBase;
  }
  if (f.programSize > FLATBUFFERS_MAX_BUFFER_SIZE)
    return Error{ErrorCode::Unsupported, path, at(16), "flatbuffer part of the program", "< 2 GiB",
                 std::to_string(f.programSize) + " bytes"};
  return Ok{};
}

Status verifyProgramTable(const MappedFile& file, uint64_t base, uint64_t programSize) {
  const std::string& path = file.path();
  const uint8_t* data = file.data() + base;
  auto at = [&](uint64_t rel) { return std::optional<uint64_t>(base + rel); };
  auto opts = verifierOptions(programSize);
  flatbuffers::Verifier verifier(data, programSize, opts);
  if (!verifier.VerifyBuffer<fb::Program>("ET12")) {
    VerificationLocator loc(data, programSize, opts);
    auto [rel, where] = loc.locate();
    return Error{ErrorCode::Verification, path, at(rel), "flatbuffer verification failed in " + where,
                 "a well-formed Program table", "offsets or lengths that leave the buffer or break alignment"};
  }
  return Ok{};
}

}  // namespace lstudio::pte
