#include "engine/lowering/ConstantTagging.h"

#include <set>

namespace lstudio {

std::string tagFromFileName(const std::string& file) {
  std::string t = file;
  if (size_t slash = t.rfind('/'); slash != std::string::npos) t = t.substr(slash + 1);
  if (t.size() > 4 && t.compare(t.size() - 4, 4, ".ptd") == 0) t.resize(t.size() - 4);
  return t;
}

bool globMatch(const std::string& pattern, const std::string& name) {
  // Iterative matcher with one backtrack point: linear in practice, no recursion on hostile patterns.
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool ruleMatches(const ConstantTagRule& rule, const ConstantEntry& c) {
  if (!rule.namePattern.empty() && !globMatch(rule.namePattern, c.name)) return false;
  if (!rule.modulePrefix.empty()) {
    // "layers.1" matches "layers.1" and "layers.1.attention", not "layers.10".
    const std::string& m = c.module;
    std::string prefix = rule.modulePrefix;
    if (prefix.back() == '.') prefix.pop_back();
    bool under = m.compare(0, prefix.size(), prefix) == 0 && (m.size() == prefix.size() || m[prefix.size()] == '.');
    if (!under) return false;
  }
  if (!rule.op.empty() && c.op != rule.op && c.op.rfind(rule.op + ".", 0) != 0 && "aten::" + rule.op != c.op)
    return false;
  return c.bytes >= rule.minBytes;
}

std::string constantDestination(const ExecutorchBackendConfig& config, const ConstantEntry& c) {
  if (c.lifted || !c.pinnedReason.empty()) return {};
  if (config.externalConstants) {
    if (config.externalConstantRules.empty()) return kDefaultExternalTag;
    for (const ConstantTagRule& r : config.externalConstantRules)
      if (ruleMatches(r, c)) return r.file.empty() ? std::string{} : tagFromFileName(r.file);
  }
  if (config.externalMutableWeights && c.mutableWeight) return kDefaultExternalTag;
  return {};
}

namespace {

std::string moduleOf(const std::string& fqn) {
  size_t dot = fqn.rfind('.');
  return dot == std::string::npos ? std::string{} : fqn.substr(0, dot);
}

}  // namespace

std::vector<ConstantEntry> listConstants(const Method& m, const ExecutorchBackendConfig& config) {
  std::vector<std::string> firstOp(m.values.size());
  for (const Node& n : m.nodes) {
    if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size()) continue;
    for (ValueId a : n.args)
      if (a >= 0 && static_cast<size_t>(a) < firstOp.size() && firstOp[a].empty()) firstOp[a] = m.operators[n.op].name;
  }
  std::set<std::string> mutated, withGradient;
  for (const OutputSpec& o : m.signature.outputs) {
    if (o.kind == OutputSpec::Kind::BufferMutation) mutated.insert(o.target);
    if (o.kind == OutputSpec::Kind::GradientToParameter) withGradient.insert(o.target);
  }
  auto entry = [&](ValueId v, const std::string& fqn) {
    const Value& val = m.values[v];
    const TensorSpec& t = val.tensor();
    ConstantEntry c;
    c.value = v;
    c.name = !fqn.empty() ? fqn : !t.fqn.empty() ? t.fqn : !val.name.empty() ? val.name : "value " + std::to_string(v);
    c.module = moduleOf(c.name);
    c.op = firstOp[v];
    c.dtype = t.dtype;
    c.sizes = t.sizes;
    c.bytes = t.nbytes().value_or(0);
    return c;
  };
  std::vector<ConstantEntry> out;
  bool exported = false;  // a graph with torch.export's signature, not a program read from a .pte
  for (const InputSpec& in : m.signature.inputs) exported = exported || in.kind != InputSpec::Kind::User;
  if (exported) {
    for (const InputSpec& in : m.signature.inputs) {
      if (in.value == kNoValue || static_cast<size_t>(in.value) >= m.values.size() || !m.values[in.value].isTensor()) continue;
      bool constant = in.kind == InputSpec::Kind::Parameter || in.kind == InputSpec::Kind::ConstantTensor ||
                      (in.kind == InputSpec::Kind::Buffer && !mutated.count(in.target));
      if (!constant) continue;
      ConstantEntry c = entry(in.value, in.target);
      // ExecuTorch leaves lifted tensor constants (placeholders named "*_lifted_tensor*") in the program.
      c.lifted = m.values[in.value].name.find("_lifted_tensor") != std::string::npos;
      c.mutableWeight = in.kind == InputSpec::Kind::Parameter && withGradient.count(in.target);
      out.push_back(std::move(c));
    }
  } else {
    // A program read from a .pte: its constant and external tensors.
    for (size_t v = 0; v < m.values.size(); ++v) {
      const TensorSpec* t = m.values[v].tensorIf();
      if (!t) continue;
      TensorStorage s = t->storage();
      if (s != TensorStorage::Constant && s != TensorStorage::External) continue;
      ConstantEntry c = entry(static_cast<ValueId>(v), t->fqn);
      if (t->fqn.empty()) c.pinnedReason = "no fully qualified name to key it by in a .ptd";
      out.push_back(std::move(c));
    }
  }
  for (ConstantEntry& c : out) {
    c.destination = constantDestination(config, c);
    const TensorSpec& t = m.values[c.value].tensor();
    // Without a rule for it, an external tensor of a .pte stays in its file.
    if (c.destination.empty() && t.external && !config.externalConstants)
      c.destination = t.constantTag.empty() ? kDefaultExternalTag : t.constantTag;
  }
  return out;
}

size_t applyConstantTags(Method& m, const std::vector<ConstantEntry>& entries) {
  size_t changed = 0;
  for (const ConstantEntry& c : entries) {
    TensorSpec& t = m.values[c.value].tensor();
    bool external = !c.destination.empty();
    if (t.external == external && t.constantTag == c.destination) continue;
    if (external && t.fqn.empty()) t.fqn = c.name;
    t.external = external;
    t.constantTag = c.destination;
    if (!external && t.source == ConstantSource::External) t.source = ConstantSource::None;
    ++changed;
  }
  return changed;
}

}  // namespace lstudio
