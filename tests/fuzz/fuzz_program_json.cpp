// libFuzzer target: the bytes are a program JSON (models/model.json) inside a
// valid PT2 archive, so mutations reach the JSON mapping instead of failing
// the zip CRC. The zip is assembled by hand: one stored record per file.
#include <zlib.h>

#include <string>
#include <vector>

#include "engine/inspect/Inspect.h"
#include "engine/formats/Pt2Reader.h"

using namespace lstudio;

namespace {

void put16(std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); }
void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

std::string storedZip(const std::vector<std::pair<std::string, std::string>>& records) {
  std::string out, dir;
  for (const auto& [name, body] : records) {
    uint32_t offset = static_cast<uint32_t>(out.size());
    uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
    put32(out, 0x04034b50); put16(out, 20); put16(out, 0); put16(out, 0); put16(out, 0); put16(out, 0);
    put32(out, crc); put32(out, static_cast<uint32_t>(body.size())); put32(out, static_cast<uint32_t>(body.size()));
    put16(out, static_cast<uint16_t>(name.size())); put16(out, 0);
    out += name;
    out += body;
    put32(dir, 0x02014b50); put16(dir, 20); put16(dir, 20); put16(dir, 0); put16(dir, 0); put16(dir, 0); put16(dir, 0);
    put32(dir, crc); put32(dir, static_cast<uint32_t>(body.size())); put32(dir, static_cast<uint32_t>(body.size()));
    put16(dir, static_cast<uint16_t>(name.size())); put16(dir, 0); put16(dir, 0); put16(dir, 0); put16(dir, 0);
    put32(dir, 0); put32(dir, offset);
    dir += name;
  }
  uint32_t dirOffset = static_cast<uint32_t>(out.size());
  out += dir;
  put32(out, 0x06054b50); put16(out, 0); put16(out, 0);
  put16(out, static_cast<uint16_t>(records.size())); put16(out, static_cast<uint16_t>(records.size()));
  put32(out, static_cast<uint32_t>(dir.size())); put32(out, dirOffset); put16(out, 0);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string json(reinterpret_cast<const char*>(data), size);
  std::string config = "{\"config\": {\"w\": {\"path_name\": \"weight_0\", \"is_param\": true, \"use_pickle\": false}}}";
  std::string zip = storedZip({{"m/archive_format", "pt2"},
                               {"m/models/model.json", json},
                               {"m/data/weights/model_weights_config.json", config},
                               {"m/data/weights/weight_0", std::string(64, '\1')}});
  auto program = readExport(MappedFile::fromBytes("fuzz.pt2", zip.data(), zip.size()));
  if (program.ok()) (void)toText(summarize(program.value()));
  return 0;
}
