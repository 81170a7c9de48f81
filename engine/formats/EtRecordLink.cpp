#include "engine/formats/EtRecordLink.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "engine/formats/Pt2Reader.h"
#include "engine/formats/ZipArchive.h"
#include "engine/support/MappedFile.h"

namespace lstudio {
namespace {

constexpr uint64_t kMaxMap = uint64_t(256) << 20;  // a debug_handle_map past 256 MiB is refused

Error invalid(const std::string& file, const std::string& what, std::string expected, std::string found) {
  return Error{ErrorCode::Invalid, file, std::nullopt, what, std::move(expected), std::move(found)};
}

/// "aten::addmm" from an operator of either program (overloads differ: default vs out).
std::string operatorName(const Method& m, const Node& n) {
  return n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size() ? m.operators[n.op].name
                                                                                                 : std::string();
}

/// One instruction's handles: an integer or a list of them.
std::vector<int64_t> handlesOf(const nlohmann::json& v) {
  std::vector<int64_t> out;
  if (v.is_number_integer()) out.push_back(v.get<int64_t>());
  else if (v.is_array())
    for (const auto& x : v)
      if (x.is_number_integer()) out.push_back(x.get<int64_t>());
  return out;
}

}  // namespace

Result<EtRecordLink> linkEtRecord(Program& pte, const std::string& etrecordPath) {
  auto file = MappedFile::open(etrecordPath);
  if (!file) return file.error();
  auto zip = ZipArchive::open(file.value());
  if (!zip) return zip.error();
  const ZipEntry* mapEntry = zip->find("debug_handle_map");
  if (!mapEntry)
    return invalid(etrecordPath, "ETRecord", "a debug_handle_map record (written when generate_etrecord gets the ExecuTorch program)",
                   "none");
  auto text = zip->read(*mapEntry, kMaxMap);
  if (!text) return text.error();
  nlohmann::json map = nlohmann::json::parse(text.value(), nullptr, false);
  if (map.is_discarded() || !map.is_object())
    return invalid(etrecordPath, "record 'debug_handle_map'", "a JSON object of methods", "invalid JSON");
  auto edge = readExport(std::move(file.value()));
  if (!edge) return edge.error();

  // Checked in full before anything changes: an ETRecord of another program links nothing.
  struct Link {
    Node* node;
    const Node* origin;
    int64_t handle;
  };
  std::vector<Link> links;
  std::vector<std::pair<Delegate*, const Delegate*>> delegates;  // a .pte delegate, the ETRecord's of the same call
  EtRecordLink out;
  for (Method& m : pte.methods) {
    if (!map.contains(m.name)) {
      if (!m.nodes.empty()) out.notes.push_back("the ETRecord has no debug handles for method " + m.name);
      continue;
    }
    const nlohmann::json& handles = map[m.name];
    if (!handles.is_object())
      return invalid(etrecordPath, "debug_handle_map." + m.name, "an object of instruction ids", handles.dump().substr(0, 40));
    const Method* em = nullptr;
    for (const Method& x : edge->methods)
      if (x.name == m.name) em = &x;
    if (!em) {
      out.notes.push_back("the ETRecord has no edge program for method " + m.name);
      continue;
    }
    // Delegates in call order: the n-th call of a backend in the .pte is the n-th in the edge program.
    if (em->delegates.size() == m.delegates.size())
      for (size_t d = 0; d < m.delegates.size(); ++d)
        if (m.delegates[d].backendId == em->delegates[d].backendId && m.delegates[d].origins.empty())
          delegates.emplace_back(&m.delegates[d], &em->delegates[d]);
    std::unordered_map<int64_t, std::vector<const Node*>> byHandle;
    for (const Node& n : em->nodes)
      if (n.meta.debugHandle) byHandle[*n.meta.debugHandle].push_back(&n);
    // Instruction ids count within chain 0, where the emitter puts the method's body.
    std::vector<Node*> chain;
    for (Node& n : m.nodes)
      if (n.chain == 0) chain.push_back(&n);
    out.instructions += chain.size();
    for (const auto& [key, value] : handles.items()) {
      size_t id = 0;
      auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size())
        return invalid(etrecordPath, "debug_handle_map." + m.name, "instruction ids", "'" + key + "'");
      if (id >= chain.size())
        return invalid(etrecordPath, "debug_handle_map." + m.name,
                       "instruction ids below " + std::to_string(chain.size()) + " (the .pte's method " + m.name + ")",
                       "instruction " + key + ": this ETRecord was written with another program");
      const std::string op = operatorName(m, *chain[id]);
      const Node* origin = nullptr;
      int64_t handle = 0;
      for (int64_t h : handlesOf(value)) {
        auto it = byHandle.find(h);
        if (it == byHandle.end()) continue;
        // The edge node of the same operator, else the first with the handle (a decomposition's source).
        for (const Node* n : it->second)
          if (!origin || (operatorName(*em, *n) == op && operatorName(*em, *origin) != op)) origin = n, handle = h;
        if (origin) break;
      }
      if (origin) links.push_back({chain[id], origin, handle});
    }
  }
  // The operators inside a delegate: which edge node each came from (the ETRecord's lowered
  // modules keep it), and the program the backend was given, which runs the call in the studio.
  for (auto [to, from] : delegates) {
    to->origins = from->origins;
    to->original = from->original;
    to->originalError = from->originalError;
  }
  // A .pte keeps no constant's name: an instruction's constant argument is named after the
  // placeholder its edge node reads in the same place (out variants only append arguments).
  for (Method& m : pte.methods) {
    const Method* em = nullptr;
    for (const Method& x : edge->methods)
      if (x.name == m.name) em = &x;
    if (!em) continue;
    std::unordered_set<ValueId> placeholders;
    for (const InputSpec& s : em->signature.inputs)
      if (s.kind == InputSpec::Kind::Parameter || s.kind == InputSpec::Kind::Buffer || s.kind == InputSpec::Kind::ConstantTensor)
        placeholders.insert(s.value);
    for (const Link& l : links) {
      if (l.node < m.nodes.data() || l.node >= m.nodes.data() + m.nodes.size()) continue;
      for (size_t k = 0; k < l.node->args.size() && k < l.origin->args.size(); ++k) {
        const ValueId a = l.node->args[k], e = l.origin->args[k];
        if (a < 0 || size_t(a) >= m.values.size() || !placeholders.count(e) || size_t(e) >= em->values.size()) continue;
        Value& v = m.values[a];
        const TensorSpec* t = v.tensorIf();
        const TensorSpec* et = em->values[e].tensorIf();
        if (!t || !et || !v.name.empty() || t->storage() != TensorStorage::Constant || t->sizes != et->sizes ||
            t->dtype != et->dtype || em->values[e].name.empty())
          continue;
        v.name = em->values[e].name;
        ++out.namedConstants;
      }
    }
  }
  for (const Link& l : links) {
    l.node->meta.debugHandle = l.handle;
    l.node->meta.moduleStack = l.origin->meta.moduleStack;
    if (l.node->meta.stackTrace.empty()) l.node->meta.stackTrace = l.origin->meta.stackTrace;
    ++out.linked;
  }
  return out;
}

}  // namespace lstudio
