#include "engine/formats/PteReader.h"

#include <flatbuffers/flatbuffers.h>

#include <cstring>

#include "engine/formats/pte/ContainerReader.h"
#include "engine/formats/pte/ProgramReader.h"
#include "engine/formats/schema/bundled_program_generated.h"
#include "engine/formats/schema/program_generated.h"

namespace lstudio {
namespace fb = executorch_flatbuffer;

namespace {

/// Segment alignment is not stored; report the largest power of two every segment start honours.
uint64_t segmentAlignment(const std::vector<Segment>& segments, uint64_t base) {
  uint64_t a = 65536;
  bool any = false;
  for (const auto& s : segments) {
    if (s.size == 0) continue;
    any = true;
    while (a > 1 && (s.offset - base) % a != 0) a /= 2;
  }
  return any ? a : 0;
}

/// Layers 1 to 4 for a program that starts at `base` within the backing file.
Result<Program> readEmbeddedProgram(std::shared_ptr<const MappedFile> file, uint64_t base, uint64_t span,
                                    Program p) {
  if (auto s = pte::readContainerHeader(*file, base, span, p.facts); !s) return s.error();
  if (auto s = pte::verifyProgramTable(*file, base, p.facts.programSize); !s) return s.error();
  const uint8_t* data = file->data() + base;
  const fb::Program* fbp = fb::GetProgram(data);
  p.facts.schemaVersion = fbp->version();
  pte::ProgramReader reader(p, fbp, data, base, span);
  if (auto s = reader.build(); !s) return s.error();
  p.facts.segmentAlignment = segmentAlignment(p.segments, base);
  return p;
}

}  // namespace

Result<Program> readProgram(std::shared_ptr<const MappedFile> file) {
  Program p;
  p.path = file->path();
  p.backing = file;
  const uint8_t* data = file->data();
  uint64_t size = file->size();
  if (size >= 8 && std::memcmp(data + 4, "BP08", 4) == 0) {
    // A bundled program: verify the wrapper, then read the program it embeds.
    namespace bp = bundled_program_flatbuffer;
    if (size > FLATBUFFERS_MAX_BUFFER_SIZE)
      return Error{ErrorCode::Unsupported, p.path, 0, "bundled program size", "< 2 GiB", std::to_string(size)};
    flatbuffers::Verifier v(data, size, pte::verifierOptions(size));
    if (!v.VerifyBuffer<bp::BundledProgram>("BP08"))
      return Error{ErrorCode::Verification, p.path, 0, "flatbuffer verification of the BundledProgram failed",
                   "a well-formed BundledProgram table", "offsets or lengths that leave the file"};
    auto* b = bp::GetBundledProgram(data);
    if (!b->program() || b->program()->size() == 0)
      return Error{ErrorCode::Invalid, p.path, std::nullopt, "BundledProgram.program", "an embedded .pte", "none"};
    p.facts.bundled = true;
    p.facts.embeddedOffset = static_cast<uint64_t>(b->program()->data() - data);
    p.facts.bundledTestSuites = b->method_test_suites() ? b->method_test_suites()->size() : 0;
    uint64_t off = p.facts.embeddedOffset;
    return readEmbeddedProgram(file, off, b->program()->size(), std::move(p));
  }
  return readEmbeddedProgram(file, 0, size, std::move(p));
}

Result<Program> readProgramFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readProgram(std::move(f.value()));
}

}  // namespace lstudio
