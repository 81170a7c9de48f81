#include "tests/support/ZipWriter.h"

#include <minizip/zip.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace lstudio::test {

bool writeZip(const std::string& path, const std::vector<ZipRecord>& records) {
  zipFile z = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  if (!z) return false;
  bool ok = true;
  for (const auto& r : records) {
    zip_fileinfo info{};
    ok = ok && zipOpenNewFileInZip64(z, r.name.c_str(), &info, nullptr, 0, nullptr, 0, nullptr,
                                     r.deflate ? Z_DEFLATED : 0, r.deflate ? Z_DEFAULT_COMPRESSION : 0,
                                     r.fillSize >= 0xffffffffu ? 1 : 0) == ZIP_OK;
    if (r.fillSize == 0) {
      ok = ok && zipWriteInFileInZip(z, r.data.data(), static_cast<unsigned>(r.data.size())) == ZIP_OK;
    } else {
      std::string chunk(1 << 20, '\0');
      for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 7);
      for (uint64_t left = r.fillSize; ok && left > 0;) {
        unsigned n = static_cast<unsigned>(std::min<uint64_t>(left, chunk.size()));
        ok = zipWriteInFileInZip(z, chunk.data(), n) == ZIP_OK;
        left -= n;
      }
    }
    ok = ok && zipCloseFileInZip(z) == ZIP_OK;
  }
  ok = zipClose(z, nullptr) == ZIP_OK && ok;
  return ok;
}

std::string zipBytes(const std::vector<ZipRecord>& records) {
  char tmpl[] = "/tmp/lstudio-zip-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return {};
  close(fd);
  std::string out;
  if (writeZip(tmpl, records)) {
    std::ifstream in(tmpl, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
  }
  std::remove(tmpl);
  return out;
}

}  // namespace lstudio::test
