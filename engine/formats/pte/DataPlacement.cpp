#include "engine/formats/pte/DataPlacement.h"

#include <set>

namespace lstudio::pte {

namespace {

bool isPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

Status Planner::plan() {
  if (auto s = checkOptions(); !s) return s;
  if (auto s = planTensors(); !s) return s;
  if (auto s = planDelegates(); !s) return s;
  if (auto s = planNamedData(); !s) return s;
  return Ok{};
}

Status Planner::checkOptions() const {
  for (auto [v, name] : {std::pair{o_.segmentAlignment, "segmentAlignment"},
                         std::pair{o_.constantTensorAlignment, "constantTensorAlignment"},
                         std::pair{o_.delegateAlignment, "delegateAlignment"},
                         std::pair{o_.ptdSegmentAlignment, "ptdSegmentAlignment"}})
    if (!isPowerOfTwo(v) || v > (1ull << 30))
      return error(ErrorCode::Invalid, std::string("option ") + name, "a power of two up to 2^30", std::to_string(v));
  return Ok{};
}

Result<Bytes> Planner::tensorBytes(const TensorSpec& t, size_t m, size_t v, const char* role) const {
  auto nb = t.nbytes();
  std::string w = where(m) + ".values[" + std::to_string(v) + "]";
  if (!nb) return error(ErrorCode::Overflow, w + " byte size", "numel x element size < 2^64", t.shapeString());
  if (*nb == 0) return Bytes{t.data.data, 0, t.data.fileOffset};
  if (!t.data.data || t.data.size < *nb)
    return error(ErrorCode::Invalid, w + " " + role + " bytes", std::to_string(*nb) + " bytes for " + t.shapeString(),
                 t.data.data ? std::to_string(t.data.size) + " bytes" : "none");
  return Bytes{t.data.data, *nb, t.data.fileOffset};
}

void Planner::buildTable(std::vector<Use>& uses, std::vector<Bytes>& table, const std::string& what) {
  std::map<uint32_t, Bytes> byIdx;
  bool consistent = true;
  for (const auto& u : uses) {
    if (u.idx == 0) continue;
    auto [it, inserted] = byIdx.emplace(u.idx, u.bytes);
    if (!inserted && !sameBytes(it->second, u.bytes)) consistent = false;
  }
  // Indices far beyond the number of tensors would only make an empty table huge.
  if (consistent && !byIdx.empty() && byIdx.rbegin()->first > uses.size() + 1024) {
    notes.push_back(what + ": indices up to " + std::to_string(byIdx.rbegin()->first) + " for " +
                    std::to_string(uses.size()) + " tensors; the table was renumbered");
    for (auto& u : uses) u.idx = 0;
    byIdx.clear();
  } else if (!consistent) {
    notes.push_back(what + ": tensors sharing an index had different bytes; the table was renumbered");
    for (auto& u : uses) u.idx = 0;
    byIdx.clear();
  }
  uint32_t maxIdx = byIdx.empty() ? 0 : byIdx.rbegin()->first;
  table.assign(static_cast<size_t>(maxIdx) + 1, Bytes{});
  BlobPool pool;
  std::vector<uint32_t> poolToTable;
  for (const auto& [i, b] : byIdx) {
    table[i] = b;
    bool added = false;
    pool.add(b, &added);
    if (added) poolToTable.push_back(i);
  }
  size_t gaps = maxIdx - byIdx.size();
  if (gaps) notes.push_back(what + ": " + std::to_string(gaps) + " indices no tensor uses were written empty");
  size_t appended = 0;
  for (auto& u : uses) {
    if (u.idx != 0) continue;
    bool added = false;
    uint32_t k = pool.add(u.bytes, &added);
    if (added) {
      poolToTable.push_back(static_cast<uint32_t>(table.size()));
      table.push_back(u.bytes);
      ++appended;
    }
    u.idx = poolToTable[k];
  }
  if (appended && consistent && !byIdx.empty())
    notes.push_back(what + ": " + std::to_string(appended) + " entries appended for tensors without an index");
}

std::string Planner::tagFor(const TensorSpec& t) const {
  if (auto it = o_.externalTags.find(t.fqn); it != o_.externalTags.end()) return it->second;
  if (!t.constantTag.empty()) return t.constantTag;
  if (t.data.data)
    for (const auto& f : p_.externalFiles) {
      if (!f || t.data.data < f->data() || t.data.data >= f->data() + f->size()) continue;
      std::string name = f->path();
      if (size_t slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
      if (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0) name = name.substr(0, dot);
      if (!name.empty()) return name;
    }
  return o_.defaultExternalTag;
}

Status Planner::addExternal(const TensorSpec& t, size_t m, size_t v) {
  std::string w = where(m) + ".values[" + std::to_string(v) + "]";
  if (t.fqn.empty())
    return error(ErrorCode::Invalid, w + " external tensor", "a fully qualified name", "none");
  if (!o_.writeDataFiles) return Ok{};
  auto nb = t.nbytes();
  if (!nb) return error(ErrorCode::Overflow, w + " byte size", "numel x element size < 2^64", t.shapeString());
  if (*nb > 0 && (!t.data.data || t.data.size < *nb))
    return error(ErrorCode::MissingKey, "external tensor '" + t.fqn + "' of " + w,
                 "its bytes (resolve the program against its .ptd files first, or write without data files)",
                 "unresolved");
  std::string tag = tagFor(t);
  if (tag.empty() || tag == "." || tag == ".." || tag.find('/') != std::string::npos ||
      tag.find('\0') != std::string::npos)
    return error(ErrorCode::Invalid, "data file tag of external tensor '" + t.fqn + "'",
                 "a file name without '/'", "\"" + tag + "\"");
  ExternalEntry e{t.fqn, Bytes{t.data.data, *nb, t.data.fileOffset}, t.dtype, t.sizes, t.dimOrder};
  if (auto it = externalKeys_.find(t.fqn); it != externalKeys_.end()) {
    const ExternalEntry& prev = external[it->second.first][it->second.second];
    if (it->second.first != tag || prev.dtype != e.dtype || prev.sizes != e.sizes || !sameBytes(prev.bytes, e.bytes))
      return error(ErrorCode::Mismatch, "external tensor '" + t.fqn + "' of " + w,
                   "the same data file, layout and bytes wherever the key is used", "a different one");
    return Ok{};
  }
  auto& list = external[tag];
  externalKeys_[t.fqn] = {tag, list.size()};
  list.push_back(std::move(e));
  return Ok{};
}

void Planner::addCarriedData() {
  if (!o_.writeDataFiles || p_.carriedData.empty()) return;
  std::set<std::string> written;  // a tensor of the program under that name decides where it goes
  for (const Method& m : p_.methods)
    for (const Value& v : m.values)
      if (const TensorSpec* t = v.tensorIf(); t && !t->fqn.empty()) written.insert(t->fqn);
  for (const CarriedData& c : p_.carriedData) {
    if (written.count(c.key) || externalKeys_.count(c.key)) continue;
    auto& list = external[c.file];
    externalKeys_[c.key] = {c.file, list.size()};
    list.push_back(ExternalEntry{c.key, c.data, c.dtype, c.sizes, c.dimOrder, c.hasLayout});
  }
}

void Planner::keepSourceOrder() {
  // carriedData lists every entry of the opened .ptd files in their order; entries made here sort last.
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < p_.carriedData.size(); ++i) rank.emplace(p_.carriedData[i].key, i);
  auto rankOf = [&](const ExternalEntry& e) {
    auto it = rank.find(e.key);
    return it == rank.end() ? rank.size() : it->second;
  };
  for (auto& [tag, list] : external) {
    std::stable_sort(list.begin(), list.end(),
                     [&](const ExternalEntry& a, const ExternalEntry& b) { return rankOf(a) < rankOf(b); });
    for (size_t i = 0; i < list.size(); ++i) externalKeys_[list[i].key] = {tag, i};
  }
}

Status Planner::planTensors() {
  std::vector<Use> consts, muts;
  bool legacyMutable = false;
  bufferIdx.resize(p_.methods.size());
  for (size_t m = 0; m < p_.methods.size(); ++m) {
    const Method& method = p_.methods[m];
    bufferIdx[m].assign(method.values.size(), 0);
    for (size_t v = 0; v < method.values.size(); ++v) {
      const TensorSpec* t = method.values[v].tensorIf();
      if (!t) continue;
      if (t->external) {
        // The runtime looks external tensors up by name; the index is kept as the IR has it.
        bufferIdx[m][v] = t->dataBufferIndex;
        if (auto s = addExternal(*t, m, v); !s) return s;
        continue;
      }
      if (t->slot) {
        if (t->dataBufferIndex == 0 && !t->mutableSegmentIndex && t->data.empty()) continue;  // planned
        auto b = tensorBytes(*t, m, v, "initial value");
        if (!b) return b.error();
        uint32_t keep = t->source == ConstantSource::MutableSegment ? t->dataBufferIndex : 0;
        if (t->source == ConstantSource::ConstantSegment || t->source == ConstantSource::ConstantBuffer)
          legacyMutable = true;
        muts.push_back(Use{m, v, keep, b.value()});
      } else if (t->dataBufferIndex > 0 || !t->data.empty()) {
        auto b = tensorBytes(*t, m, v, "constant");
        if (!b) return b.error();
        consts.push_back(Use{m, v, t->dataBufferIndex, b.value()});
      }
    }
  }
  addCarriedData();
  keepSourceOrder();
  if (p_.facts.constants == ContainerFacts::Constants::ConstantBuffer)
    notes.push_back("constants moved from the legacy constant_buffer to constant_segment");
  if (legacyMutable)
    notes.push_back("initial values of mutable tensors moved from the constant table to mutable_data_segments");
  buildTable(consts, constants, "constant table");
  for (const auto& u : consts) bufferIdx[u.m][u.v] = u.idx;
  // Constant segment: each entry padded to the tensor alignment, the last unpadded.
  SegmentPlan cseg;
  uint64_t cur = 0;
  for (size_t i = 0; i < constants.size(); ++i) {
    constantOffsets.push_back(cur);
    cseg.parts.emplace_back(cur, constants[i]);
    cur += constants[i].size;
    if (i + 1 < constants.size()) cur = alignUp(cur, o_.constantTensorAlignment);
  }
  cseg.size = cur;
  segments.push_back(std::move(cseg));
  if (!muts.empty()) {
    buildTable(muts, mutables, "mutable data table");
    for (const auto& u : muts) bufferIdx[u.m][u.v] = u.idx;
    // Unpadded, as ExecuTorch writes it: the runtime copies these bytes into the arena.
    SegmentPlan mseg;
    for (const auto& b : mutables) {
      mutableOffsets.push_back(mseg.size);
      mseg.parts.emplace_back(mseg.size, b);
      mseg.size += b.size;
    }
    mutableSegment = static_cast<int>(segments.size());
    segments.push_back(std::move(mseg));
  }
  return Ok{};
}

Status Planner::planDelegates() {
  BlobPool segPool, inlinePool;
  std::vector<uint32_t> segIndex;  // pool index -> segment index
  delegateRefs.resize(p_.methods.size());
  for (size_t m = 0; m < p_.methods.size(); ++m) {
    const auto& ds = p_.methods[m].delegates;
    for (size_t d = 0; d < ds.size(); ++d) {
      const Bytes& blob = ds[d].blob;
      if (blob.size && !blob.data)
        return error(ErrorCode::Invalid, where(m) + ".delegates[" + std::to_string(d) + "] blob",
                     std::to_string(blob.size) + " bytes", "none");
      bool added = false;
      if (o_.extractDelegateSegments && blob.size > 0) {
        uint32_t k = segPool.add(blob, &added);
        if (added) {
          segIndex.push_back(static_cast<uint32_t>(segments.size()));
          SegmentPlan s;
          s.size = blob.size;
          s.parts.emplace_back(0, blob);
          segments.push_back(std::move(s));
          ++delegateSegments;
        }
        delegateRefs[m].push_back(DelegateRef{true, segIndex[k]});
      } else {
        uint32_t k = inlinePool.add(blob, &added);
        delegateRefs[m].push_back(DelegateRef{false, k});
      }
    }
  }
  inlineData = inlinePool.blobs();
  return Ok{};
}

Status Planner::planNamedData() {
  BlobPool pool;
  std::vector<uint32_t> segIndex;
  std::map<std::string, Bytes> seen;
  for (size_t i = 0; i < p_.namedData.size(); ++i) {
    const NamedBlob& nb = p_.namedData[i];
    if (nb.data.size && !nb.data.data)
      return error(ErrorCode::Invalid, "named_data[" + std::to_string(i) + "] '" + nb.key + "'",
                   std::to_string(nb.data.size) + " bytes", "none");
    if (auto it = seen.find(nb.key); it != seen.end()) {
      if (!sameBytes(it->second, nb.data))
        return error(ErrorCode::Invalid, "named_data[" + std::to_string(i) + "] '" + nb.key + "'",
                     "one blob per key", "the key again with different bytes");
      notes.push_back("named_data key '" + nb.key + "' repeated with the same bytes: written once");
      continue;
    }
    seen.emplace(nb.key, nb.data);
    bool added = false;
    uint32_t k = pool.add(nb.data, &added);
    if (added) {
      segIndex.push_back(static_cast<uint32_t>(segments.size()));
      SegmentPlan s;
      s.size = nb.data.size;
      s.parts.emplace_back(0, nb.data);
      segments.push_back(std::move(s));
    }
    namedData.emplace_back(nb.key, segIndex[k]);
  }
  return Ok{};
}

}  // namespace lstudio::pte
