#include "engine/formats/PtdReader.h"

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <set>

#include "engine/support/FormatUtil.h"
#include "engine/formats/schema/flat_tensor_generated.h"
#include "engine/formats/schema/flat_tensor_legacy_generated.h"

namespace lstudio {
namespace ft = flat_tensor_flatbuffer;
namespace ftl = flat_tensor_legacy;

namespace {

Error dataError(const DataFile& d, ErrorCode c, std::optional<uint64_t> at, std::string what, std::string expected,
                std::string found) {
  return Error{c, d.path, at, std::move(what), std::move(expected), std::move(found)};
}

/// Fields in the root table's vtable, or 0 when it cannot be read.
int rootVtableFields(const uint8_t* data, uint64_t size) {
  if (size < 8) return 0;
  uint64_t root = readLe32(data);
  if (root + 4 > size) return 0;
  int32_t so;
  std::memcpy(&so, data + root, 4);
  int64_t vt = static_cast<int64_t>(root) - so;
  if (vt < 0 || static_cast<uint64_t>(vt) + 4 > size) return 0;
  uint16_t vtsize;
  std::memcpy(&vtsize, data + vt, 2);
  return vtsize >= 4 ? (vtsize - 4) / 2 : 0;
}

template <class SegVec>
Status readSegments(DataFile& d, const uint8_t* data, const SegVec* segs) {
  if (!segs) return Ok{};
  uint64_t size = d.file->size();
  for (uint32_t i = 0; i < segs->size(); ++i) {
    auto* s = segs->Get(i);
    uint64_t start = 0, end = 0;
    if (!checkedAdd(d.segmentBaseOffset, s->offset(), start) || !checkedAdd(start, s->size(), end) || end > size)
      return dataError(d, ErrorCode::OutOfRange, static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(s) - data),
                       "segments[" + std::to_string(i) + "] lies outside the file", "end <= " + std::to_string(size),
                       "offset " + std::to_string(s->offset()) + " + size " + std::to_string(s->size()));
    d.segments.push_back(Segment{start, s->size()});
  }
  return Ok{};
}

/// Checks a tensor layout read from the file and that its bytes fit in `available`.
Status checkLayout(const DataFile& d, uint64_t at, const std::string& w, int rawType,
                   const flatbuffers::Vector<int32_t>* sizes, const flatbuffers::Vector<uint8_t>* dims,
                   uint64_t available, TensorLayout& layout) {
  if (!isKnownScalarType(rawType) || elementSize(static_cast<ScalarType>(rawType)) == 0)
    return dataError(d, ErrorCode::Invalid, at, w + ".scalar_type", "a defined scalar type", std::to_string(rawType));
  layout.dtype = static_cast<ScalarType>(rawType);
  if (sizes)
    for (int32_t x : *sizes) {
      if (x < 0) return dataError(d, ErrorCode::Invalid, at, w + ".sizes", "sizes >= 0", std::to_string(x));
      layout.sizes.push_back(x);
    }
  if (dims) layout.dimOrder.assign(dims->begin(), dims->end());
  TensorSpec probe;
  probe.dtype = layout.dtype;
  probe.sizes = layout.sizes;
  auto nb = probe.nbytes();
  if (!nb || *nb > available)
    return dataError(d, ErrorCode::OutOfRange, at, w + " tensor bytes",
                     nb ? std::to_string(*nb) + " bytes inside its segment" : "a size < 2^64",
                     std::to_string(available) + " bytes available");
  return Ok{};
}

Status readCurrent(DataFile& d, const uint8_t* data) {
  auto* root = ft::GetFlatTensor(data);
  auto where = [&](const void* p) { return std::optional<uint64_t>(static_cast<const uint8_t*>(p) - data); };
  d.version = root->version();
  if (auto s = readSegments(d, data, root->segments()); !s) return s;
  if (auto* nd = root->named_data()) {
    std::set<std::string> keys;
    for (uint32_t i = 0; i < nd->size(); ++i) {
      auto* e = nd->Get(i);
      std::string w = "named_data[" + std::to_string(i) + "]";
      if (!e->key()) return dataError(d, ErrorCode::Invalid, where(e), w + ".key", "a string", "null");
      NamedTensorData t;
      t.key = e->key()->str();
      if (!keys.insert(t.key).second)
        return dataError(d, ErrorCode::Invalid, where(e), w + ".key", "a unique key", "\"" + t.key + "\" again");
      t.segmentIndex = e->segment_index();
      if (t.segmentIndex >= d.segments.size())
        return dataError(d, ErrorCode::OutOfRange, where(e), w + ".segment_index", "< " + std::to_string(d.segments.size()),
                         std::to_string(t.segmentIndex));
      const Segment& s = d.segments[t.segmentIndex];
      t.data = Bytes{data + s.offset, s.size, s.offset};
      if (auto* l = e->tensor_layout()) {
        TensorLayout layout;
        if (auto st = checkLayout(d, *where(l), w + ".tensor_layout", static_cast<int>(l->scalar_type()), l->sizes(),
                                  l->dim_order(), s.size, layout);
            !st)
          return st;
        t.layout = std::move(layout);
      }
      d.entries.push_back(std::move(t));
    }
  }
  return Ok{};
}

Status readLegacy(DataFile& d, const uint8_t* data) {
  auto* root = ftl::GetFlatTensor(data);
  auto where = [&](const void* p) { return std::optional<uint64_t>(static_cast<const uint8_t*>(p) - data); };
  d.version = root->version();
  if (auto s = readSegments(d, data, root->segments()); !s) return s;
  std::set<std::string> keys;
  auto addKey = [&](const std::string& k, const void* at, const std::string& w) -> Status {
    if (!keys.insert(k).second)
      return dataError(d, ErrorCode::Invalid, where(at), w, "a unique key", "\"" + k + "\" again");
    return Ok{};
  };
  if (auto* ts = root->tensors()) {
    for (uint32_t i = 0; i < ts->size(); ++i) {
      auto* e = ts->Get(i);
      std::string w = "tensors[" + std::to_string(i) + "]";
      if (!e->fully_qualified_name())
        return dataError(d, ErrorCode::Invalid, where(e), w + ".fully_qualified_name", "a string", "null");
      NamedTensorData t;
      t.key = e->fully_qualified_name()->str();
      if (auto s = addKey(t.key, e, w); !s) return s;
      t.segmentIndex = e->segment_index();
      if (t.segmentIndex >= d.segments.size())
        return dataError(d, ErrorCode::OutOfRange, where(e), w + ".segment_index", "< " + std::to_string(d.segments.size()),
                         std::to_string(t.segmentIndex));
      const Segment& s = d.segments[t.segmentIndex];
      if (e->offset() > s.size)
        return dataError(d, ErrorCode::OutOfRange, where(e), w + ".offset", "<= segment size " + std::to_string(s.size),
                         std::to_string(e->offset()));
      TensorLayout layout;
      if (auto st = checkLayout(d, *where(e), w, static_cast<int>(e->scalar_type()), e->sizes(), e->dim_order(),
                                s.size - e->offset(), layout);
          !st)
        return st;
      t.data = Bytes{data + s.offset + e->offset(), s.size - e->offset(), s.offset + e->offset()};
      t.layout = std::move(layout);
      d.entries.push_back(std::move(t));
    }
  }
  if (auto* nd = root->named_data()) {
    for (uint32_t i = 0; i < nd->size(); ++i) {
      auto* e = nd->Get(i);
      std::string w = "named_data[" + std::to_string(i) + "]";
      if (!e->key()) return dataError(d, ErrorCode::Invalid, where(e), w + ".key", "a string", "null");
      if (auto s = addKey(e->key()->str(), e, w); !s) return s;
      if (e->segment_index() >= d.segments.size())
        return dataError(d, ErrorCode::OutOfRange, where(e), w + ".segment_index",
                         "< " + std::to_string(d.segments.size()), std::to_string(e->segment_index()));
      const Segment& s = d.segments[e->segment_index()];
      d.entries.push_back(NamedTensorData{e->key()->str(), e->segment_index(), std::nullopt, Bytes{data + s.offset, s.size, s.offset}});
    }
  }
  return Ok{};
}

}  // namespace

const NamedTensorData* DataFile::find(const std::string& key) const {
  for (const auto& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

Result<DataFile> readDataFile(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return readDataFile(std::move(f.value()));
}

Result<DataFile> readDataFile(std::shared_ptr<const MappedFile> file) {
  DataFile d;
  d.path = file->path();
  d.file = file;
  const uint8_t* data = file->data();
  const uint64_t size = file->size();
  auto error = [&](ErrorCode c, std::optional<uint64_t> at, std::string what, std::string expected, std::string found) {
    return Error{c, d.path, at, std::move(what), std::move(expected), std::move(found)};
  };
  if (size < 8)
    return error(ErrorCode::Truncated, 0, "file too short for a flatbuffer", "at least 8 bytes", std::to_string(size) + " bytes");
  std::string ident(reinterpret_cast<const char*>(data) + 4, 4);
  if (ident != "FT01")
    return error(ErrorCode::BadMagic, 4, "ExecuTorch data file identifier", "\"FT01\"", describeMagic(ident));
  if (size < 8 + 40 || std::memcmp(data + 8, "FH01", 4) != 0)
    return error(size < 12 ? ErrorCode::Truncated : ErrorCode::BadMagic, 8, "FlatTensor header magic", "\"FH01\"",
                 size < 12 ? "end of file" : describeMagic(std::string(reinterpret_cast<const char*>(data) + 8, 4)));
  d.headerLength = readLe32(data + 12);
  if (d.headerLength < 40)
    return error(ErrorCode::BadHeader, 12, "FH01 header length", ">= 40", std::to_string(d.headerLength));
  if (8 + static_cast<uint64_t>(d.headerLength) > size)
    return error(ErrorCode::Truncated, 8, "FH01 header", std::to_string(d.headerLength) + " bytes",
                 std::to_string(size - 8) + " bytes left");
  d.flatbufferOffset = readLe64(data + 16);
  d.flatbufferSize = readLe64(data + 24);
  d.segmentBaseOffset = readLe64(data + 32);
  d.segmentDataSize = readLe64(data + 40);
  uint64_t fbEnd = 0, segEnd = 0;
  if (!checkedAdd(d.flatbufferOffset, d.flatbufferSize, fbEnd) || fbEnd > size || d.flatbufferOffset < 8)
    return error(ErrorCode::BadHeader, 16, "FH01 flatbuffer offset + size", "inside the file (" + std::to_string(size) + " bytes)",
                 std::to_string(d.flatbufferOffset) + " + " + std::to_string(d.flatbufferSize));
  if (!checkedAdd(d.segmentBaseOffset, d.segmentDataSize, segEnd) || segEnd > size || d.segmentBaseOffset < fbEnd)
    return error(segEnd > size ? ErrorCode::Truncated : ErrorCode::BadHeader, 32, "FH01 segment base + data size",
                 "after the flatbuffer (" + std::to_string(fbEnd) + ") and inside the file (" + std::to_string(size) + " bytes)",
                 std::to_string(d.segmentBaseOffset) + " + " + std::to_string(d.segmentDataSize));
  if (fbEnd > FLATBUFFERS_MAX_BUFFER_SIZE)
    return error(ErrorCode::Unsupported, 24, "flatbuffer part of the data file", "< 2 GiB", std::to_string(fbEnd));
  // The root offset at byte 0 is relative to the file start, so the
  // flatbuffer spans [0, flatbuffer_offset + flatbuffer_size). Two schema
  // generations share the identifier; the root vtable's field count tells
  // them apart (the first generation has five fields, the current three),
  // and the other generation is tried when the likely one fails to verify.
  flatbuffers::Verifier::Options opts;
  opts.max_tables = static_cast<flatbuffers::uoffset_t>(std::max<uint64_t>(1'000'000, fbEnd / 8 + 1024));
  bool legacyFirst = rootVtableFields(data, fbEnd) > 3;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool legacy = legacyFirst != (attempt == 1);
    flatbuffers::Verifier v(data, fbEnd, opts);
    bool verified = legacy ? v.VerifyBuffer<ftl::FlatTensor>("FT01") : v.VerifyBuffer<ft::FlatTensor>("FT01");
    if (!verified) continue;
    d.legacy = legacy;
    auto s = legacy ? readLegacy(d, data) : readCurrent(d, data);
    if (!s) return s.error();
    return d;
  }
  return error(ErrorCode::Verification, 0, "flatbuffer verification of the FlatTensor failed",
               "a well-formed FlatTensor table (either schema generation) in bytes [0, " + std::to_string(fbEnd) + ")",
               "offsets or lengths that leave it");
}

namespace {
/// The data file's stem: where export writes its entries back.
std::string dataFileStem(const std::string& path) {
  std::string stem = path.substr(path.rfind('/') + 1);
  if (size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  return stem;
}
}  // namespace

Status resolveExternalTensors(Program& program, const std::vector<DataFile>& files) {
  for (const auto& f : files) program.externalFiles.push_back(f.file);
  for (auto& m : program.methods) {
    for (size_t i = 0; i < m.values.size(); ++i) {
      if (!m.values[i].isTensor()) continue;
      TensorSpec& t = m.values[i].tensor();
      if (!t.external) continue;
      const NamedTensorData* hit = nullptr;
      const DataFile* in = nullptr;
      for (const auto& f : files)
        if ((hit = f.find(t.fqn))) {
          in = &f;
          break;
        }
      std::string who = "external tensor '" + t.fqn + "' of " + m.name + ".values[" + std::to_string(i) + "]";
      if (!hit) {
        std::string names;
        for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.path;
        return Error{ErrorCode::MissingKey, program.path, std::nullopt, who,
                     "its key in " + (names.empty() ? std::string("a .ptd file (none given)") : names), "no such key"};
      }
      uint64_t need = t.nbytes().value_or(0);
      if (hit->layout) {
        const auto& l = *hit->layout;
        if (l.dtype != t.dtype || l.sizes != t.sizes) {
          TensorSpec found;
          found.dtype = l.dtype;
          found.sizes = l.sizes;
          return Error{ErrorCode::Mismatch, in->path, hit->data.fileOffset, who + " layout", t.shapeString(),
                       found.shapeString()};
        }
        if (!l.dimOrder.empty() && !t.dimOrder.empty() && l.dimOrder != t.dimOrder)
          return Error{ErrorCode::Mismatch, in->path, hit->data.fileOffset, who + " dim order", "the program's dim order",
                       "a different one"};
      }
      if (hit->data.size < need)
        return Error{ErrorCode::Mismatch, in->path, hit->data.fileOffset, who + " byte size",
                     std::to_string(need) + " bytes", std::to_string(hit->data.size) + " bytes"};
      t.data = hit->data;
      if (t.constantTag.empty()) {  // the file it came from is where a rewrite puts it back
        t.constantTag = dataFileStem(in->path);
      }
      t.data.size = need;
    }
  }
  // Every entry is carried: the export writes back what no tensor it writes
  // names (a delegate's named data, constants no instruction reads, which
  // lowering drops from the program).
  std::set<std::string> named;
  for (const auto& c : program.carriedData) named.insert(c.key);
  for (const auto& f : files)
    for (const auto& e : f.entries) {
      if (!named.insert(e.key).second) continue;
      CarriedData c{dataFileStem(f.path), e.key, e.layout.has_value(), ScalarType::Float, {}, {}, e.data};
      if (e.layout) {
        c.dtype = e.layout->dtype;
        c.sizes = e.layout->sizes;
        c.dimOrder = e.layout->dimOrder;
      }
      program.carriedData.push_back(std::move(c));
    }
  return Ok{};
}

std::vector<std::string> unresolvedExternalKeys(const Program& program) {
  std::set<std::string> keys;
  for (const auto& m : program.methods)
    for (const auto& v : m.values)
      if (auto* t = v.tensorIf(); t && t->external && t->data.data == nullptr && t->nbytes().value_or(0) > 0)
        keys.insert(t->fqn);
  return {keys.begin(), keys.end()};
}

}  // namespace lstudio
