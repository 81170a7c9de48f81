// The operator registry: builds the lookup tables over the built-in schema table
// and answers set-membership and out-variant questions.
#include "engine/ir/OpRegistry.h"

#include <algorithm>

namespace lstudio {

namespace {

std::string key(std::string_view ns, std::string_view name, std::string_view overload) {
  std::string k;
  k.reserve(ns.size() + name.size() + overload.size() + 3);
  k.append(ns).append("::").append(name);
  if (!overload.empty()) k.append(".").append(overload);
  return k;
}

bool consumePrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

std::string_view normalOverload(std::string_view overload) {
  return overload == "default" ? std::string_view{} : overload;
}

/// One argument of the grouping signature: what stays when outs, alias
/// annotations and TensorOptions are dropped.
bool sameSignatureArgument(const SchemaArgument& a, const SchemaArgument& b) {
  return a.name == b.name && a.type == b.type && a.defaultValue == b.defaultValue && a.kwargOnly == b.kwargOnly;
}

bool isTensorOptionsRun(const std::vector<const SchemaArgument*>& kw, size_t i) {
  static constexpr std::pair<std::string_view, SchemaType::Base> kRun[] = {
      {"dtype", SchemaType::Base::ScalarType},
      {"layout", SchemaType::Base::Layout},
      {"device", SchemaType::Base::Device},
      {"pin_memory", SchemaType::Base::Bool},
  };
  if (i + 4 > kw.size()) return false;
  for (size_t j = 0; j < 4; ++j) {
    const SchemaArgument& a = *kw[i + j];
    if (a.name != kRun[j].first || a.type.base != kRun[j].second || a.type.list) return false;
  }
  return true;
}

/// The arguments ExecuTorch's to_out_var compares when pairing a functional op with
/// its out variant (torchgen's FunctionSchema.signature()): no out arguments, and no
/// TensorOptions run, which out variants drop (_to_copy.out, empty.out, ...).
std::vector<const SchemaArgument*> signatureArguments(const OpSchema& s) {
  std::vector<const SchemaArgument*> pos, kw, res;
  for (const auto& a : s.arguments) {
    if (a.kwargOnly && a.isWrite) continue;
    (a.kwargOnly ? kw : pos).push_back(&a);
  }
  res = pos;
  for (size_t i = 0; i < kw.size();) {
    if (isTensorOptionsRun(kw, i)) {
      i += 4;
      continue;
    }
    res.push_back(kw[i++]);
  }
  return res;
}

bool sameSignature(const OpSchema& a, const OpSchema& b) {
  auto sa = signatureArguments(a), sb = signatureArguments(b);
  if (sa.size() != sb.size()) return false;
  for (size_t i = 0; i < sa.size(); ++i)
    if (!sameSignatureArgument(*sa[i], *sb[i])) return false;
  return true;
}

}  // namespace

const OpRegistry& OpRegistry::builtin() {
  // A function-local static: initialised once, safely, on first use.
  static const OpRegistry registry = [] {
    OpRegistry r;
    auto table = detail::builtinSchemaTable();
    r.schemas_.reserve(table.size());
    r.sets_.reserve(table.size());
    for (const auto& e : table) {
      auto parsed = parseSchema(e.text);
      if (!parsed) {
        r.loadErrors_.push_back(std::string(e.text) + ": " + parsed.error().message());
        continue;
      }
      std::string k = parsed->qualifiedName();
      if (!r.byQualified_.emplace(k, r.schemas_.size()).second) {
        r.loadErrors_.push_back(k + ": listed twice");
        continue;
      }
      r.byName_[key(parsed->ns, parsed->name, {})].push_back(r.schemas_.size());
      if (std::find(r.namespaces_.begin(), r.namespaces_.end(), parsed->ns) == r.namespaces_.end())
        r.namespaces_.push_back(parsed->ns);
      r.schemas_.push_back(std::move(parsed).value());
      r.sets_.push_back(e.sets);
    }
    // Longest first, so "quantized_decomposed_..." is never read as a shorter namespace.
    std::sort(r.namespaces_.begin(), r.namespaces_.end(), [](const std::string& a, const std::string& b) {
      return a.size() > b.size() || (a.size() == b.size() && a < b);
    });
    return r;
  }();
  return registry;
}

const OpSchema* OpRegistry::findKey(std::string_view ns, std::string_view name, std::string_view overload) const {
  auto it = byQualified_.find(key(ns, name, normalOverload(overload)));
  return it == byQualified_.end() ? nullptr : &schemas_[it->second];
}

const OpSchema* OpRegistry::find(std::string_view qualifiedName, std::string_view overload) const {
  size_t sep = qualifiedName.find("::");
  if (sep == std::string_view::npos) return findKey("aten", qualifiedName, overload);
  return findKey(qualifiedName.substr(0, sep), qualifiedName.substr(sep + 2), overload);
}

const OpSchema* OpRegistry::findByTarget(std::string_view target) const {
  while (!target.empty() && target.front() == ' ') target.remove_prefix(1);
  while (!target.empty() && target.back() == ' ') target.remove_suffix(1);

  // FX prints dialect ops by their Python path with '.' turned into '_':
  // "executorch_exir_dialects_edge__ops_aten_add_Tensor". Names and overloads both
  // contain '_', so every split is tried, the longest op name first.
  std::string_view mangled = target;
  if (consumePrefix(mangled, "executorch_exir_dialects_edge__ops_") ||
      consumePrefix(mangled, "executorch_exir_dialects_backend__ops_")) {
    for (const auto& ns : namespaces_) {
      std::string_view rest = mangled;
      if (!consumePrefix(rest, ns) || !consumePrefix(rest, "_")) continue;
      for (size_t p = rest.rfind('_'); p != std::string_view::npos && p > 0; p = rest.rfind('_', p - 1)) {
        if (p + 1 >= rest.size()) continue;
        if (const OpSchema* s = findKey(ns, rest.substr(0, p), rest.substr(p + 1))) return s;
      }
    }
    return nullptr;
  }

  if (size_t sep = target.find("::"); sep != std::string_view::npos) {
    std::string_view ns = target.substr(0, sep), rest = target.substr(sep + 2);
    size_t dot = rest.find('.');
    if (dot == std::string_view::npos) return findKey(ns, rest, {});
    return findKey(ns, rest.substr(0, dot), rest.substr(dot + 1));
  }

  std::string_view dotted = target;
  if (!consumePrefix(dotted, "torch.ops.") && !consumePrefix(dotted, "exir_ops.edge.") &&
      !consumePrefix(dotted, "exir_ops.backend."))
    dotted = target;
  std::vector<std::string_view> parts;
  for (size_t b = 0;;) {
    size_t e = dotted.find('.', b);
    parts.push_back(dotted.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  if (parts.size() > 3 || std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); }))
    return nullptr;
  // "ns.name[.overload]" when the first part is a namespace, else "name[.overload]" in aten.
  if (parts.size() >= 2 && std::find(namespaces_.begin(), namespaces_.end(), parts[0]) != namespaces_.end())
    if (const OpSchema* s = findKey(parts[0], parts[1], parts.size() == 3 ? parts[2] : std::string_view{})) return s;
  if (parts.size() <= 2) return findKey("aten", parts[0], parts.size() == 2 ? parts[1] : std::string_view{});
  return nullptr;
}

uint8_t OpRegistry::setsOf(const OpSchema& op) const {
  auto it = byQualified_.find(op.qualifiedName());
  return it == byQualified_.end() ? 0 : sets_[it->second];
}

bool OpRegistry::isCoreAten(const OpSchema& op) const { return setsOf(op) & detail::kCore; }
bool OpRegistry::hasPortableKernel(const OpSchema& op) const { return setsOf(op) & detail::kPortable; }
bool OpRegistry::hasQuantizedKernel(const OpSchema& op) const { return setsOf(op) & detail::kQuantized; }
bool OpRegistry::hasPrimKernel(const OpSchema& op) const { return setsOf(op) & detail::kPrim; }

const OpSchema* OpRegistry::outVariant(const OpSchema& functional) const {
  if (functional.isOutVariant()) return findKey(functional.ns, functional.name, functional.overload);
  auto it = byName_.find(key(functional.ns, functional.name, {}));
  if (it == byName_.end()) return nullptr;
  std::string preferred = functional.overload.empty() ? "out" : functional.overload + "_out";
  const OpSchema* found = nullptr;
  for (size_t i : it->second) {
    const OpSchema& s = schemas_[i];
    if (!s.isOutVariant() || !sameSignature(functional, s)) continue;
    if (s.overload == preferred) return &s;
    if (!found) found = &s;
  }
  return found;
}

const OpSchema* OpRegistry::functionalOf(const OpSchema& out) const {
  if (!out.isOutVariant()) return nullptr;
  auto it = byName_.find(key(out.ns, out.name, {}));
  if (it == byName_.end()) return nullptr;
  std::string preferred;
  if (out.overload.size() > 4 && out.overload.ends_with("_out")) preferred = out.overload.substr(0, out.overload.size() - 4);
  const OpSchema* found = nullptr;
  for (size_t i : it->second) {
    const OpSchema& s = schemas_[i];
    if (s.isOutVariant() || s.isInplace() || outVariant(s) != &out) continue;
    if (s.overload == preferred) return &s;
    if (!found) found = &s;
  }
  return found;
}

}  // namespace lstudio
