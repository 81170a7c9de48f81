#include "engine/inspect/SizeBreakdown.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/formats/pte/ProgramTableBytes.h"
#include "engine/inspect/DelegateReport.h"
#include "engine/support/FormatUtil.h"

namespace lstudio {
namespace {

/// A labelled byte range of the file. Ranges are cut into a partition of
/// the file: where two overlap the one listed first keeps the bytes, and
/// whatever no range claims is padding.
struct Range {
  uint64_t start = 0, end = 0;
  std::string part, item;
};

class Partition {
 public:
  explicit Partition(uint64_t fileBytes) : fileBytes_(fileBytes) {}
  void add(uint64_t start, uint64_t size, std::string part, std::string item = {}) {
    uint64_t end = std::min(fileBytes_, start + size);
    if (start < end) ranges_.push_back({start, end, std::move(part), std::move(item)});
  }
  /// Every byte in one part: the ranges clipped against each other in the
  /// order they were added, gaps as padding.
  std::vector<SizePart> parts() const {
    Taken taken;
    std::map<std::string, SizePart> byName;
    std::map<std::string, std::map<std::string, uint64_t>> items;
    uint64_t claimed = 0;
    for (const Range& r : ranges_)
      for (auto [s, e] : freeIn(taken, r.start, r.end)) {
        byName[r.part].bytes += e - s;
        if (!r.item.empty()) items[r.part][r.item] += e - s;
        claim(taken, s, e);
        claimed += e - s;
      }
    if (fileBytes_ > claimed) byName["padding and alignment"].bytes += fileBytes_ - claimed;
    std::vector<SizePart> out;
    for (auto& [name, p] : byName) {
      p.name = name;
      for (auto& [item, bytes] : items[name]) p.items.push_back({item, bytes});
      std::stable_sort(p.items.begin(), p.items.end(), [](auto& a, auto& b) { return a.bytes > b.bytes; });
      out.push_back(std::move(p));
    }
    std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.bytes > b.bytes; });
    return out;
  }

 private:
  /// Bytes already given to a part: disjoint [start, end) by start, touching
  /// ones merged (a .pte's tables lie back to back: the map stays small, and
  /// each range costs a logarithmic step, not a shift of everything after it).
  using Taken = std::map<uint64_t, uint64_t>;

  /// [s, e) is free in `taken` (freeIn's output): recorded, merged with its neighbours.
  static void claim(Taken& taken, uint64_t s, uint64_t e) {
    auto next = taken.lower_bound(s);
    if (next != taken.end() && next->first == e) {
      e = next->second;
      next = taken.erase(next);
    }
    if (next != taken.begin())
      if (auto prev = std::prev(next); prev->second == s) {
        prev->second = e;
        return;
      }
    taken.emplace_hint(next, s, e);
  }

  /// The parts of [s, e) not in `taken`.
  static std::vector<std::pair<uint64_t, uint64_t>> freeIn(const Taken& taken, uint64_t s, uint64_t e) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    uint64_t at = s;
    auto it = taken.lower_bound(s);
    if (it != taken.begin()) --it;
    for (; it != taken.end() && it->first < e; ++it) {
      if (it->second <= at) continue;
      if (it->first > at) out.push_back({at, it->first});
      at = std::max(at, it->second);
    }
    if (at < e) out.push_back({at, e});
    return out;
  }
  uint64_t fileBytes_;
  std::vector<Range> ranges_;
};

bool inside(const Bytes& b, uint64_t start, uint64_t end) {
  return b.size > 0 && b.fileOffset >= start && b.fileOffset + b.size <= end;
}

/// Names of the program's constants by constant table index (a tensor's fqn, else its value).
std::map<uint32_t, std::string> constantNames(const Program& p) {
  std::map<uint32_t, std::string> names;
  for (const Method& m : p.methods)
    for (size_t v = 0; v < m.values.size(); ++v)
      if (const TensorSpec* t = m.values[v].tensorIf(); t && t->dataBufferIndex > 0)
        names.emplace(t->dataBufferIndex, !t->fqn.empty() ? t->fqn : m.name + " %" + std::to_string(v));
  return names;
}

/// A delegate's payload: for XNNPACK its header, graph and constant data; else one range.
/// Per XNNPACK constant index, the payload operator that reads it ("node 3 XNNFullyConnected").
std::map<uint32_t, std::string> constantReaders(const xnnpack::Graph& g) {
  std::map<uint32_t, uint32_t> constantOf;  // value id -> constant index
  for (const auto& v : g.values)
    if (v.constantIndex) constantOf[v.id] = v.constantIndex;
  std::map<uint32_t, std::string> readers;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t in : g.nodes[k].inputs)
      if (auto c = constantOf.find(in); c != constantOf.end())
        readers.emplace(c->second, "node " + std::to_string(k) + " " + g.nodes[k].type);
  return readers;
}

void addDelegate(Partition& part, const Program& p, const Method& m, size_t i) {
  DelegateReport r = reportDelegate(p, m, i);
  std::string who = m.name + " delegate " + std::to_string(i) + " (" + r.backend + ")";
  const uint64_t at = r.blobFileOffset;
  if (r.xnnpack && r.xnnpack->hasHeader) {
    const auto& g = *r.xnnpack;
    // The payload's own constants by the operator that reads them, then what is left of that data.
    auto readers = constantReaders(g);
    for (size_t k = 1; k < g.constants.size(); ++k)
      if (g.constants[k].source == xnnpack::Constant::Source::ConstantData)
        part.add(at + g.constantDataOffset + g.constants[k].offset, g.constants[k].size,
                 "XNNPACK constant data (in the payload)",
                 who + ": " + (readers.count(uint32_t(k)) ? readers[uint32_t(k)] : "constant " + std::to_string(k)));
    part.add(at + g.constantDataOffset, g.constantDataSize, "XNNPACK constant data (in the payload)", who + ": padding");
    part.add(at + g.flatbufferOffset, g.flatbufferSize, "XNNPACK graphs (nodes and values)", who);
  } else if (r.xnnpack) {
    part.add(at, r.blobBytes, "XNNPACK graphs (nodes and values)", who);
  }
  for (const auto& s : r.layout.sections)  // other backends' framing, where it is known
    part.add(at + s.offset, s.size, "delegate payloads (" + r.backend + ")", who + ": " + s.name);
  part.add(at, r.blobBytes, r.xnnpack ? "XNNPACK headers and padding" : "delegate payloads (" + r.backend + ")", who);
}

/// Who reads each named-data key: the backend, and the payload operator where it is known.
struct NamedDataReader {
  std::string backend, node;
};
std::map<std::string, NamedDataReader> namedDataReaders(const Program& p) {
  std::map<std::string, NamedDataReader> readers;
  for (const Method& m : p.methods)
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      DelegateReport r = reportDelegate(p, m, i);
      for (const auto& u : r.namedData) readers.emplace(u.key, NamedDataReader{r.backend, {}});
      if (!r.xnnpack) continue;
      auto byConstant = constantReaders(*r.xnnpack);
      for (size_t k = 1; k < r.xnnpack->constants.size(); ++k) {
        const auto& c = r.xnnpack->constants[k];
        if (c.source == xnnpack::Constant::Source::NamedData && byConstant.count(uint32_t(k)))
          readers[c.namedKey].node = m.name + " delegate " + std::to_string(i) + ": " + byConstant[uint32_t(k)];
      }
    }
  return readers;
}

}  // namespace

uint64_t SizeBreakdown::total() const {
  uint64_t t = 0;
  for (const auto& p : parts) t += p.bytes;
  return t;
}

SizeBreakdown sizeBreakdown(const Program& p) {
  SizeBreakdown b;
  b.file = p.path;
  b.fileBytes = p.backing ? p.backing->size() : p.facts.fileSize;
  Partition part(b.fileBytes);
  const uint64_t fbStart = p.facts.embeddedOffset, fbEnd = fbStart + p.facts.programSize;
  // Most specific first: what lies inside a segment or the flatbuffer claims its bytes before the container does.
  for (const Method& m : p.methods)
    for (size_t i = 0; i < m.delegates.size(); ++i) addDelegate(part, p, m, i);
  auto readers = namedDataReaders(p);
  for (const NamedBlob& n : p.namedData) {
    auto it = readers.find(n.key);
    std::string who = it == readers.end() ? "no delegate" : it->second.backend;
    std::string item = it == readers.end() || it->second.node.empty() ? n.key : it->second.node + " (" + n.key + ")";
    part.add(n.data.fileOffset, n.data.size, "named data read by " + who, item);
  }
  auto names = constantNames(p);
  for (size_t k = 1; k < p.constants.size(); ++k) {
    const Bytes& c = p.constants[k];
    bool inFlatbuffer = inside(c, fbStart, fbEnd);
    std::string name = names.count(uint32_t(k)) ? names[uint32_t(k)] : "constant " + std::to_string(k);
    part.add(c.fileOffset, c.size, inFlatbuffer ? "constants (constant_buffer, in the flatbuffer)" : "constants (constant segment)",
             name);
  }
  for (const Method& m : p.methods)
    for (size_t v = 0; v < m.values.size(); ++v)
      if (const TensorSpec* t = m.values[v].tensorIf(); t && t->source == ConstantSource::MutableSegment)
        part.add(t->data.fileOffset, t->data.size, "mutable data (initial values)",
                 !t->fqn.empty() ? t->fqn : m.name + " %" + std::to_string(v));
  for (size_t s = 0; s < p.segments.size(); ++s)
    part.add(p.segments[s].offset, p.segments[s].size, "segments no table names", "segment " + std::to_string(s));
  // The flatbuffer by what its tables hold, then what lies between them.
  if (p.backing && p.format == SourceFormat::Pte && !p.facts.identifier.empty())
    for (const auto& r : pte::programTableBytes(*p.backing, fbStart, p.facts.programSize))
      part.add(r.offset, r.size, "program flatbuffer", r.owner);
  part.add(fbStart, p.facts.programSize, "program flatbuffer", "header, vtables shared, offsets and alignment");
  if (p.facts.bundled) part.add(0, b.fileBytes, "bundled program wrapper (test suites)");
  b.parts = part.parts();
  return b;
}

SizeBreakdown sizeBreakdown(const DataFile& d) {
  SizeBreakdown b;
  b.file = d.path;
  b.fileBytes = d.file ? d.file->size() : 0;
  Partition part(b.fileBytes);
  for (const auto& e : d.entries) part.add(e.data.fileOffset, e.data.size, e.layout ? "tensors" : "named blobs", e.key);
  for (size_t s = 0; s < d.segments.size(); ++s)
    part.add(d.segments[s].offset, d.segments[s].size, "segments no entry names", "segment " + std::to_string(s));
  part.add(0, d.headerLength, "header");
  part.add(d.flatbufferOffset, d.flatbufferSize, "flatbuffer (entry table)");
  b.parts = part.parts();
  return b;
}

namespace {

struct DiffRow {
  std::string name;
  uint64_t a = 0, b = 0;
  int64_t delta() const { return int64_t(b) - int64_t(a); }
  std::vector<DiffRow> items;
};

/// Rows for every part (and item) of either side, largest change first.
std::vector<DiffRow> diffRows(const SizeBreakdown& a, const SizeBreakdown& b) {
  std::map<std::string, DiffRow> parts;
  std::map<std::string, std::map<std::string, DiffRow>> items;
  auto take = [&](const SizeBreakdown& side, bool second) {
    for (const SizePart& p : side.parts) {
      DiffRow& r = parts[p.name];
      r.name = p.name;
      (second ? r.b : r.a) = p.bytes;
      for (const SizeItem& i : p.items) {
        DiffRow& ir = items[p.name][i.name];
        ir.name = i.name;
        (second ? ir.b : ir.a) = i.bytes;
      }
    }
  };
  take(a, false);
  take(b, true);
  auto byChange = [](const DiffRow& x, const DiffRow& y) { return std::llabs(x.delta()) > std::llabs(y.delta()); };
  std::vector<DiffRow> out;
  for (auto& [name, r] : parts) {
    for (auto& [item, ir] : items[name])
      if (ir.delta() != 0) r.items.push_back(ir);
    std::stable_sort(r.items.begin(), r.items.end(), byChange);
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), byChange);
  return out;
}

std::string signedBytes(int64_t d) { return (d > 0 ? "+" : d < 0 ? "-" : "±") + formatBytes(uint64_t(std::llabs(d))); }

}  // namespace

std::string sizeDiffText(const SizeBreakdown& a, const SizeBreakdown& b, size_t itemsShown) {
  char buf[96];
  std::string o = "a: " + a.file + " (" + formatBytes(a.fileBytes) + ")\nb: " + b.file + " (" + formatBytes(b.fileBytes) +
                  "), " + signedBytes(int64_t(b.fileBytes) - int64_t(a.fileBytes)) + "\n";
  for (const DiffRow& r : diffRows(a, b)) {
    std::snprintf(buf, sizeof buf, "%12llu B %12llu B  %10s  ", static_cast<unsigned long long>(r.a),
                  static_cast<unsigned long long>(r.b), signedBytes(r.delta()).c_str());
    o += buf + r.name + "\n";
    for (size_t i = 0; i < r.items.size() && i < itemsShown; ++i)
      o += "                                         " + signedBytes(r.items[i].delta()) + "  " + r.items[i].name + "\n";
    if (r.items.size() > itemsShown) o += "                                         … " + std::to_string(r.items.size() - itemsShown) + " more changed\n";
  }
  return o;
}

nlohmann::json sizeDiffJson(const SizeBreakdown& a, const SizeBreakdown& b) {
  nlohmann::json parts = nlohmann::json::array();
  for (const DiffRow& r : diffRows(a, b)) {
    nlohmann::json items = nlohmann::json::array();
    for (const DiffRow& i : r.items) items.push_back({{"name", i.name}, {"a", i.a}, {"b", i.b}, {"delta", i.delta()}});
    parts.push_back({{"name", r.name}, {"a", r.a}, {"b", r.b}, {"delta", r.delta()}, {"items", items}});
  }
  return {{"a", a.file}, {"b", b.file}, {"a_bytes", a.fileBytes}, {"b_bytes", b.fileBytes}, {"parts", parts}};
}

std::string sizeText(const SizeBreakdown& b, size_t itemsShown) {
  char buf[64];
  std::string o = b.file + ": " + std::to_string(b.fileBytes) + " bytes (" + formatBytes(b.fileBytes) + ")\n";
  for (const SizePart& p : b.parts) {
    double share = b.fileBytes ? 100.0 * double(p.bytes) / double(b.fileBytes) : 0;
    std::snprintf(buf, sizeof buf, "%12llu B  %5.1f%%  ", static_cast<unsigned long long>(p.bytes), share);
    o += buf + p.name + "\n";
    for (size_t i = 0; i < p.items.size() && i < itemsShown; ++i)
      o += "                         " + formatBytes(p.items[i].bytes) + "  " + p.items[i].name + "\n";
    if (p.items.size() > itemsShown)
      o += "                         … " + std::to_string(p.items.size() - itemsShown) + " more\n";
  }
  o += "total " + std::to_string(b.total()) + " bytes\n";
  return o;
}

namespace {

nlohmann::json leaf(const std::string& name, uint64_t bytes) {
  return {{"name", name}, {"bytes", bytes}, {"parts", nlohmann::json::array()}};
}

/// Items grouped by the prefix of their names up to the last `separator`:
/// constants by module path ("layers.0.attention" holding "wq.weight"), the
/// flatbuffer's tables by method ("forward" holding "values"). One level.
nlohmann::json byPrefix(const std::vector<SizeItem>& items, const std::string& separator) {
  std::map<std::string, std::vector<const SizeItem*>> groups;
  for (const auto& i : items) {
    size_t at = i.name.rfind(separator);
    groups[at == std::string::npos ? std::string() : i.name.substr(0, at)].push_back(&i);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [module, members] : groups) {
    if (module.empty()) {
      for (const SizeItem* i : members) out.push_back(leaf(i->name, i->bytes));
      continue;
    }
    nlohmann::json g = leaf(module, 0);
    for (const SizeItem* i : members) {
      g["parts"].push_back(leaf(i->name.substr(module.size() + separator.size()), i->bytes));
      g["bytes"] = g["bytes"].get<uint64_t>() + i->bytes;
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

nlohmann::json sizeJson(const SizeBreakdown& b) {
  nlohmann::json parts = nlohmann::json::array();
  for (const SizePart& p : b.parts) {
    nlohmann::json part = leaf(p.name, p.bytes);
    uint64_t itemised = 0;
    for (const auto& i : p.items) itemised += i.bytes;
    if (!p.items.empty()) {
      if (p.name.rfind("constants", 0) == 0 || p.name.rfind("mutable", 0) == 0) part["parts"] = byPrefix(p.items, ".");
      else if (p.name == "program flatbuffer") part["parts"] = byPrefix(p.items, ": ");
      else
        for (const auto& i : p.items) part["parts"].push_back(leaf(i.name, i.bytes));
      if (itemised < p.bytes) part["parts"].push_back(leaf("(not itemised)", p.bytes - itemised));
    }
    parts.push_back(std::move(part));
  }
  // Leaves add up to the file: every part is its children's sum, the parts the file's size.
  return {{"file", b.file}, {"total", b.total()}, {"parts", parts}};
}

}  // namespace lstudio
