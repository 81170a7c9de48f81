#include "engine/lowering/GraphText.h"

#include <algorithm>
#include <sstream>

#include "engine/inspect/Inspect.h"

namespace lstudio {
namespace {

std::string valueRef(const Method& m, ValueId v) {
  if (v < 0) return "None";
  const Value& x = m.values[v];
  switch (x.kind()) {
    case ValueKind::Tensor: return "%" + (x.name.empty() ? std::to_string(v) : x.name);
    case ValueKind::IntList: {
      std::string s = "[";
      const auto& items = std::get<IntList>(x.payload).items;
      for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + valueRef(m, items[i]);
      return s + "]";
    }
    case ValueKind::TensorList:
    case ValueKind::OptionalTensorList: {
      const auto& items = x.kind() == ValueKind::TensorList ? std::get<TensorList>(x.payload).items
                                                            : std::get<OptionalTensorList>(x.payload).items;
      std::string s = "[";
      for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + valueRef(m, items[i]);
      return s + "]";
    }
    case ValueKind::Int:
      return x.symbolic ? x.name : std::to_string(std::get<int64_t>(x.payload));
    default: {
      std::string d = describeValue(m, v);
      size_t sp = d.find(' ');
      return sp == std::string::npos ? d : d.substr(sp + 1);
    }
  }
}

std::string spec(const TensorSpec& t) {
  std::string s = t.shapeString();
  if (!t.device.isCpu()) s += " on " + t.device.name();
  if (t.slot) s += "@" + std::to_string(t.slot->memId) + ":" + std::to_string(t.slot->offset);
  if (t.viewOf != kNoValue) s += " view";
  if (t.external) s += " in " + (t.constantTag.empty() ? std::string("a .ptd") : t.constantTag + ".ptd");
  return s;
}

/// A view lowering made a window on its base (no node makes it) is printed
/// where it is first read, so that every name the text uses is defined.
void printViewsReadBy(const Method& m, const std::vector<ValueId>& read, std::vector<char>& printed, std::ostream& o) {
  std::vector<ValueId> tensors;
  for (ValueId a : read) m.appendTensors(a, tensors);
  for (ValueId v : tensors) {
    const TensorSpec& t = m.values[v].tensor();
    if (t.viewOf == kNoValue || printed[v]) continue;
    printed[v] = 1;
    o << "  " << valueRef(m, v) << ": " << spec(t) << " = view(" << valueRef(m, t.viewOf) << ")\n";
  }
}

}  // namespace

std::string nodeLine(const Method& m, size_t index) {
  const Node& n = m.nodes[index];
  std::ostringstream o;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    ValueId v = n.outputs[i];
    o << (i ? ", " : "") << valueRef(m, v);
    if (auto* t = m.values[v].tensorIf()) o << ": " << spec(*t);
  }
  if (!n.outputs.empty()) o << " = ";
  if (n.kind == NodeKind::Kernel && n.op >= 0) o << m.operators[n.op].fullName();
  else if (n.kind == NodeKind::Delegate && n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size())
    o << nodeKindName(n.kind) << " " << m.delegates[n.delegate].backendId;
  else o << nodeKindName(n.kind);
  if (isControlFlow(n.kind)) {
    o << "[";
    for (size_t i = 0; i < n.subgraphs.size(); ++i) {
      int32_t g = n.subgraphs[i];
      o << (i ? ", " : "") << (g >= 0 && static_cast<size_t>(g) < m.subgraphs.size() ? m.subgraphs[g].name : "?");
    }
    o << "]";
  }
  // The emitter's return argument repeats an out variant's outs (out=%5, %5):
  // shown once.
  size_t shown = n.args.size();
  if (n.kind == NodeKind::Kernel && !n.argNames.empty() && n.args.size() == n.argNames.size() + 1) {
    std::vector<ValueId> ret, named;
    m.appendTensors(n.args.back(), ret);
    for (size_t i = 0; i + 1 < n.args.size(); ++i) m.appendTensors(n.args[i], named);
    bool repeats = !ret.empty();
    for (ValueId v : ret) repeats = repeats && std::find(named.begin(), named.end(), v) != named.end();
    if (repeats) shown = n.args.size() - 1;
  }
  o << "(";
  for (size_t i = 0; i < shown; ++i) {
    o << (i ? ", " : "");
    if (i < n.argNames.size() && !n.argNames[i].empty()) o << n.argNames[i] << "=";
    o << valueRef(m, n.args[i]);
  }
  o << ")";
  return o.str();
}

std::string graphText(const Method& m) {
  std::ostringstream o;
  o << "method " << m.name << "(";
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    ValueId v = m.inputs[i];
    o << (i ? ", " : "") << valueRef(m, v);
    if (auto* t = m.values[v].tensorIf()) o << ": " << spec(*t);
  }
  o << ")\n";
  std::vector<char> printed(m.values.size(), 0);  // defined already: inputs, results of nodes
  for (ValueId v : m.inputs)
    if (v >= 0 && static_cast<size_t>(v) < printed.size()) printed[v] = 1;
  for (const Node& n : m.nodes) {
    std::vector<ValueId> made;
    for (ValueId v : n.outputs) m.appendTensors(v, made);
    for (ValueId v : made) printed[v] = 1;
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    printViewsReadBy(m, m.nodes[i].args, printed, o);
    o << "  " << nodeLine(m, i);
    if (!m.nodes[i].meta.delegationTag.empty()) o << "  # delegation_tag " << m.nodes[i].meta.delegationTag;
    o << "\n";
  }
  printViewsReadBy(m, m.outputs, printed, o);
  o << "  return (";
  for (size_t i = 0; i < m.outputs.size(); ++i) o << (i ? ", " : "") << valueRef(m, m.outputs[i]);
  o << ")\n";
  if (m.nonConstBufferSizes.size() > 1) {
    o << "  arenas:";
    for (size_t i = 1; i < m.nonConstBufferSizes.size(); ++i) {
      o << " mem_id " << i << " = " << m.nonConstBufferSizes[i] << " bytes";
      if (i < m.arenaDevices.size() && !m.arenaDevices[i].isCpu()) o << " on " << m.arenaDevices[i].name();
    }
    o << "\n";
  }
  // The branches control flow calls, each a graph of its own.
  for (const Method& g : m.subgraphs) {
    std::istringstream lines(graphText(g));
    for (std::string line; std::getline(lines, line);) o << "  " << line << "\n";
  }
  return o.str();
}

uint64_t programFingerprint(const Program& p) {
  uint64_t h = 1469598103934665603ull;
  for (const Method& top : p.methods) {
    for (char c : graphText(top)) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;  // branches included
    forEachGraph(top, [&](const Method& m) {
      // The arenas too: planning a method with nothing to place changes only them.
      h = (h ^ m.nonConstBufferSizes.size()) * 1099511628211ull;
      for (int64_t a : m.nonConstBufferSizes) h = (h ^ static_cast<uint64_t>(a)) * 1099511628211ull;
      // And which tensors require grad or keep an initial value (InitializedMutableBufferPass),
      // which the text does not show but the .pte stores.
      for (const Value& v : m.values)
        if (const TensorSpec* t = v.tensorIf())
          h = (h ^ ((t->requiresGrad ? 2u : 1u) | (t->source == ConstantSource::MutableSegment ? 4u : 0u))) * 1099511628211ull;
    });
  }
  return h;
}

}  // namespace lstudio
