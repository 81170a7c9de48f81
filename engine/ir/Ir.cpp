#include "engine/ir/Ir.h"

#include <algorithm>
#include <cctype>

namespace lstudio {

const char* tensorStorageName(TensorStorage s) {
  switch (s) {
    case TensorStorage::RunTime: return "run-time";
    case TensorStorage::Planned: return "planned";
    case TensorStorage::Constant: return "constant";
    case TensorStorage::External: return "external";
    case TensorStorage::Mutable: return "mutable";
  }
  return "?";
}

std::string Device::name() const {
  std::string base = type == DeviceType::Cuda ? "cuda" : "cpu";
  return isCpu() ? base : base + ":" + std::to_string(index);
}

std::optional<Device> parseDevice(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Device d;
  size_t colon = s.find(':');
  std::string type = s.substr(0, colon);
  if (colon != std::string::npos) {
    std::string digits = s.substr(colon + 1);
    if (digits.empty() || digits.size() > 3 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
    int index = std::stoi(digits);
    if (index > 127) return std::nullopt;
    d.index = static_cast<int8_t>(index);
  }
  if (type == "cpu") d.type = DeviceType::Cpu;
  else if (type == "cuda") d.type = DeviceType::Cuda;
  else return std::nullopt;
  return d;
}

const char* valueKindName(ValueKind k) {
  static const char* names[] = {"None",   "Int",        "Bool",       "Double",   "String",            "Tensor",
                                "IntList", "DoubleList", "BoolList",   "TensorList", "OptionalTensorList"};
  return names[static_cast<int>(k)];
}

const char* nodeKindName(NodeKind k) {
  switch (k) {
    case NodeKind::Kernel: return "kernel";
    case NodeKind::Delegate: return "delegate";
    case NodeKind::Move: return "move";
    case NodeKind::JumpFalse: return "jump_false";
    case NodeKind::Free: return "free";
    case NodeKind::Cond: return "cond";
    case NodeKind::Map: return "map";
    case NodeKind::Scan: return "scan";
  }
  return "?";
}

bool jumpsAlways(const Method& m, const Node& n) {
  if (n.kind != NodeKind::JumpFalse || n.args.size() != 1 || n.args[0] < 0 ||
      static_cast<size_t>(n.args[0]) >= m.values.size())
    return false;
  const Value& v = m.values[n.args[0]];
  const bool* b = std::get_if<bool>(&v.payload);
  return b && !*b && !v.symbolic;
}

const char* headerName(ContainerFacts::Header h) {
  switch (h) {
    case ContainerFacts::Header::None: return "none";
    case ContainerFacts::Header::Eh00Short: return "eh00 (24 bytes)";
    case ContainerFacts::Header::Eh00: return "eh00 (32 bytes)";
  }
  return "?";
}

TensorStorage TensorSpec::storage() const {
  // A planned tensor with an initial value (in the file or, for external
  // mutable weights, in a .ptd) is state that lives in the arena.
  if (slot)
    return dataBufferIndex > 0 || mutableSegmentIndex || external || !data.empty() ? TensorStorage::Mutable
                                                                                   : TensorStorage::Planned;
  if (external) return TensorStorage::External;
  if (dataBufferIndex > 0 || !data.empty()) return TensorStorage::Constant;
  return TensorStorage::RunTime;
}

std::optional<uint64_t> TensorSpec::numel() const {
  uint64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return std::nullopt;
    if (s != 0 && n > UINT64_MAX / static_cast<uint64_t>(s)) return std::nullopt;
    n *= static_cast<uint64_t>(s);
  }
  return n;
}

std::optional<uint64_t> TensorSpec::nbytes() const {
  auto n = numel();
  uint64_t es = elementSize(dtype);
  if (!n || es == 0) return std::nullopt;
  if (*n > UINT64_MAX / es) return std::nullopt;
  return *n * es;
}

std::string TensorSpec::shapeString() const {
  std::string s(scalarTypeName(dtype));
  s += '[';
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    if (i < symbols.size() && !symbols[i].empty())
      s += symbols[i] + "<=" + std::to_string(sizes[i]);
    else
      s += std::to_string(sizes[i]);
  }
  s += ']';
  return s;
}

OperatorRef operatorFromTarget(std::string_view t) {
  for (std::string_view prefix :
       {"torch.ops.", "executorch.exir.dialects.edge.ops.", "executorch.exir.dialects.edge._ops.", "torch._ops."})
    if (t.substr(0, prefix.size()) == prefix) {
      t.remove_prefix(prefix.size());
      break;
    }
  std::string s(t);
  if (size_t colons = s.find("::"); colons != std::string::npos) s.replace(colons, 2, ".");
  size_t d1 = s.find('.');
  if (d1 == std::string::npos) return {s, ""};
  size_t d2 = s.find('.', d1 + 1);
  std::string ns = s.substr(0, d1);
  std::string name = d2 == std::string::npos ? s.substr(d1 + 1) : s.substr(d1 + 1, d2 - d1 - 1);
  std::string overload = d2 == std::string::npos ? "default" : s.substr(d2 + 1);
  return {ns + "::" + name, overload};
}

void Method::appendTensors(ValueId v, std::vector<ValueId>& out) const {
  if (v < 0 || static_cast<size_t>(v) >= values.size()) return;
  const Value& x = values[v];
  if (x.isTensor()) out.push_back(v);
  else if (auto* l = std::get_if<TensorList>(&x.payload))
    for (ValueId i : l->items) appendTensors(i, out);
  else if (auto* o = std::get_if<OptionalTensorList>(&x.payload))
    for (ValueId i : o->items) appendTensors(i, out);
}

const Method* Program::method(const std::string& name) const {
  for (const auto& m : methods)
    if (m.name == name) return &m;
  return nullptr;
}

const DelegateOrigin* Delegate::origin(uint32_t debugHandle) const {
  for (const DelegateOrigin& o : origins)
    if (o.debugHandle == debugHandle) return &o;
  return nullptr;
}

}  // namespace lstudio
