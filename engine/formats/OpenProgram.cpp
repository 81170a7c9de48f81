#include "engine/formats/OpenProgram.h"

#include "engine/formats/Pt2Reader.h"
#include "engine/formats/PteReader.h"

namespace lstudio {

Result<Program> openProgramFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  // Zip archives are torch.export files; everything else must be a flatbuffer program.
  if (looksLikeZip(*f.value())) return readExport(std::move(f.value()));
  return readProgram(std::move(f.value()));
}

}  // namespace lstudio
