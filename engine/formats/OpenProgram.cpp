#include "engine/formats/OpenProgram.h"

#include <cstring>

#include "engine/formats/Pt2Reader.h"
#include "engine/formats/PteReader.h"

namespace lstudio {

Result<Program> openProgramFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  // Zip archives are torch.export files; everything else must be a flatbuffer program (what
  // the file holds decides, not its name). A file named .pt2 that is neither is told as a
  // .pt2 that is not a zip, not as a .pte without "ET12".
  const MappedFile& m = *f.value();
  if (looksLikeZip(m)) return readExport(std::move(f.value()));
  const bool program = m.size() >= 8 && std::memcmp(m.data() + 4, "ET12", 4) == 0;
  if (!program && path.size() > 4 && path.compare(path.size() - 4, 4, ".pt2") == 0)
    return Error{ErrorCode::BadMagic, path, 0, "torch.export archive (.pt2) signature",
                 "a zip archive (\"PK\\x03\\x04\" at byte 0), as torch.export.save writes",
                 "no zip signature: this file is not a torch.export archive"};
  return readProgram(std::move(f.value()));
}

}  // namespace lstudio
