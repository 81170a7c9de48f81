#include "engine/ir/EdgeDialect.h"

#include <charconv>
#include <cstdlib>

namespace lstudio {
namespace {

ValueId add(Method& m, Value v) {
  m.values.push_back(std::move(v));
  return static_cast<ValueId>(m.values.size() - 1);
}

std::optional<int64_t> parseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

/// A schema default ("1", "None", "False", "[]", "[1, 1]", "0.5", "'mean'",
/// "contiguous_format", "long") as a value of the argument's type.
std::optional<ValueId> schemaDefault(Method& m, const SchemaArgument& a) {
  if (!a.defaultValue) return std::nullopt;
  std::string_view d = *a.defaultValue;
  using B = SchemaType::Base;
  if (d == "None") return add(m, Value{None{}, {}});
  if (a.type.list) {
    std::vector<std::string_view> items;
    if (d.size() >= 2 && d.front() == '[' && d.back() == ']') {
      std::string_view body = d.substr(1, d.size() - 2);
      while (!body.empty()) {
        size_t comma = body.find(',');
        std::string_view item = body.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) items.push_back(item);
        if (comma == std::string_view::npos) break;
        body.remove_prefix(comma + 1);
      }
    } else {
      // "int[2] stride=1" repeats a single value fixedSize times.
      for (int i = 0; i < std::max(a.type.fixedSize, 1); ++i) items.push_back(d);
    }
    if (a.type.base == B::Bool) {
      BoolList l;
      for (auto it : items) l.items.push_back(it == "True");
      return add(m, Value{std::move(l), {}});
    }
    if (a.type.base == B::Float) {
      DoubleList l;
      for (auto it : items) l.items.push_back(std::strtod(std::string(it).c_str(), nullptr));
      return add(m, Value{std::move(l), {}});
    }
    IntList l;
    for (auto it : items) {
      auto v = parseInt(it);
      if (!v) return std::nullopt;
      l.items.push_back(add(m, Value{*v, {}}));
    }
    return add(m, Value{std::move(l), {}});
  }
  if (d == "True" || d == "False") return add(m, Value{d == "True", {}});
  if (d.size() >= 2 && (d.front() == '\'' || d.front() == '"')) return add(m, Value{std::string(d.substr(1, d.size() - 2)), {}});
  if (auto v = parseInt(d)) {
    if (a.type.base == B::Float) return add(m, Value{static_cast<double>(*v), {}});
    return add(m, Value{*v, {}});
  }
  char* end = nullptr;
  std::string s(d);
  double f = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && !s.empty()) return add(m, Value{f, {}});
  // Enum spellings: memory formats and dtypes, as c10 numbers them.
  if (d == "contiguous_format") return add(m, Value{int64_t(0), {}});
  if (d == "preserve_format") return add(m, Value{int64_t(1), {}});
  if (d == "channels_last") return add(m, Value{int64_t(2), {}});
  if (d == "long") return add(m, Value{int64_t(static_cast<int>(ScalarType::Long)), {}});
  if (d == "float") return add(m, Value{int64_t(static_cast<int>(ScalarType::Float)), {}});
  if (d == "strided") return add(m, Value{int64_t(0), {}});
  return std::nullopt;
}

std::string nodeLocation(const Node& n) {
  std::string s = "node '" + n.name + "' (" + n.target + ")";
  if (!n.meta.stackTrace.empty()) {
    const StackFrame& f = n.meta.stackTrace.back();
    s += " at " + f.file + ":" + std::to_string(f.line);
    if (!f.context.empty()) s += ": " + f.context;
  }
  return s;
}

size_t resolveEdgeDialect(Method& m, const OpRegistry& registry) {
  size_t problems = 0;
  auto report = [&](size_t node, std::string message) {
    m.diagnostics.push_back(Diagnostic{Diagnostic::Severity::Warning, static_cast<int32_t>(node), std::move(message)});
    ++problems;
  };
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    Node& n = m.nodes[i];
    if (n.kind != NodeKind::Kernel) continue;
    const OpSchema* schema = nullptr;
    if (n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size())
      schema = registry.find(m.operators[n.op].name, m.operators[n.op].overload);
    if (!schema) schema = registry.findByTarget(n.target);
    if (!schema) {
      report(i, "unknown operator " + n.target + " in " + nodeLocation(n) + ": no schema, so it cannot be checked or lowered");
      continue;
    }
    if (schema->ns == "aten" && !registry.isCoreAten(*schema))
      report(i, "operator " + schema->qualifiedName() + " is not in the core ATen set (to_edge needs it decomposed) in " +
                    nodeLocation(n));
    if (n.argNames.size() != n.args.size()) continue;  // not named: nothing to place
    std::vector<ValueId> args;
    std::vector<std::string> names;
    std::vector<bool> used(n.args.size(), false);
    uint64_t defaulted = 0;
    bool ok = true;
    for (const SchemaArgument& a : schema->arguments) {
      ValueId v = kNoValue;
      for (size_t k = 0; k < n.argNames.size(); ++k)
        if (!used[k] && n.argNames[k] == a.name) {
          v = n.args[k];
          used[k] = true;
          break;
        }
      if (v == kNoValue && a.defaultValue) {
        auto d = schemaDefault(m, a);
        if (d) v = *d;
        if (d && args.size() < 64) defaulted |= uint64_t(1) << args.size();
      }
      if (v == kNoValue) {
        report(i, "argument '" + a.name + "' of " + schema->qualifiedName() + " is missing in " + nodeLocation(n));
        ok = false;
        break;
      }
      args.push_back(v);
      names.push_back(a.name);
    }
    for (size_t k = 0; ok && k < used.size(); ++k)
      if (!used[k]) {
        report(i, "argument '" + n.argNames[k] + "' is not in the schema of " + schema->qualifiedName() + " in " + nodeLocation(n));
        ok = false;
      }
    if (!ok) continue;
    n.args = std::move(args);
    n.argNames = std::move(names);
    n.defaultedArgs = defaulted;
  }
  return problems;
}

}  // namespace lstudio
