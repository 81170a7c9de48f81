#include "engine/lowering/passes/GraphEdit.h"

#include "engine/ir/OpRegistry.h"

namespace lstudio::passes {

FreshNames::FreshNames(const Method& m) {
  for (const Value& v : m.values)
    if (!v.name.empty()) used_.insert(v.name);
}

std::string FreshNames::operator()(const std::string& base) {
  int& next = next_[base];
  std::string name = next == 0 ? base : base + "_" + std::to_string(next);
  while (used_.count(name)) name = base + "_" + std::to_string(++next);
  ++next;
  used_.insert(name);
  return name;
}

Status callInFront(Method& m, Node& n, size_t arg, const std::string& target, std::vector<BuildArg> args,
                   const std::vector<TensorSpec>& specs, FreshNames& fresh, std::vector<Node>& nodes) {
  auto made = buildCall(m, target, std::move(args), [&fresh](const std::string& b) { return fresh(b); }, &specs);
  if (!made) return made.error();
  made->meta = n.meta;
  n.args[arg] = made->outputs[0];
  nodes.push_back(std::move(made.value()));
  return Ok{};
}

ValueId addValue(Method& m, Value v) {
  m.values.push_back(std::move(v));
  return static_cast<ValueId>(m.values.size() - 1);
}

void renumberValues(Method& m) {
  const size_t n = m.values.size();
  std::vector<ValueId> order;
  std::vector<ValueId> newId(n, kNoValue);
  auto visit = [&](auto&& self, ValueId v) -> void {
    if (v < 0 || static_cast<size_t>(v) >= n || newId[v] != kNoValue) return;
    newId[v] = static_cast<ValueId>(order.size());
    order.push_back(v);
    const Value& val = m.values[v];
    if (auto* l = std::get_if<IntList>(&val.payload))
      for (ValueId x : l->items) self(self, x);
    if (auto* l = std::get_if<TensorList>(&val.payload))
      for (ValueId x : l->items) self(self, x);
    if (auto* l = std::get_if<OptionalTensorList>(&val.payload))
      for (ValueId x : l->items) self(self, x);
    if (const TensorSpec* t = val.tensorIf()) self(self, t->viewOf);
  };
  for (ValueId v : m.inputs) visit(visit, v);
  for (const InputSpec& in : m.signature.inputs) visit(visit, in.value);
  for (const Node& node : m.nodes)
    for (ValueId o : node.outputs) visit(visit, o);
  for (const Node& node : m.nodes)
    for (ValueId a : node.args) visit(visit, a);
  for (ValueId v : m.outputs) visit(visit, v);
  for (const OutputSpec& o : m.signature.outputs) visit(visit, o.value);
  // Symbolic sizes stay, read or not: a later rewrite may refer to them by name.
  for (size_t v = 0; v < n; ++v)
    if (m.values[v].symbolic) visit(visit, static_cast<ValueId>(v));
  auto map = [&](ValueId& v) {
    if (v >= 0 && static_cast<size_t>(v) < n) v = newId[v];
  };
  std::vector<Value> values;
  values.reserve(order.size());
  for (ValueId v : order) values.push_back(std::move(m.values[v]));
  for (Value& val : values) {
    if (auto* l = std::get_if<IntList>(&val.payload))
      for (ValueId& x : l->items) map(x);
    if (auto* l = std::get_if<TensorList>(&val.payload))
      for (ValueId& x : l->items) map(x);
    if (auto* l = std::get_if<OptionalTensorList>(&val.payload))
      for (ValueId& x : l->items) map(x);
    if (TensorSpec* t = std::get_if<TensorSpec>(&val.payload)) map(t->viewOf), map(t->viewBefore);
  }
  m.values = std::move(values);
  for (Node& node : m.nodes) {
    for (ValueId& a : node.args) map(a);
    for (ValueId& o : node.outputs) map(o);
  }
  for (ValueId& v : m.inputs) map(v);
  for (ValueId& v : m.outputs) map(v);
  for (InputSpec& in : m.signature.inputs) map(in.value);
  for (OutputSpec& o : m.signature.outputs) map(o.value);
}

ValueId addInt(Method& m, int64_t x) { return addValue(m, Value{x, {}}); }

ValueId addIntList(Method& m, const std::vector<int64_t>& xs) {
  IntList l;
  for (int64_t x : xs) l.items.push_back(addInt(m, x));
  return addValue(m, Value{std::move(l), {}});
}

int32_t operatorIndex(Method& m, const OpSchema& s) {
  OperatorRef ref{s.ns + "::" + s.name, s.overload.empty() ? "default" : s.overload};
  for (size_t k = 0; k < m.operators.size(); ++k)
    if (m.operators[k].name == ref.name && m.operators[k].overload == ref.overload) return static_cast<int32_t>(k);
  m.operators.push_back(ref);
  return static_cast<int32_t>(m.operators.size() - 1);
}

void setOperator(Method& m, Node& n, const OpSchema& s) {
  n.kind = NodeKind::Kernel;
  n.op = operatorIndex(m, s);
  n.target = "torch.ops." + s.ns + "." + s.name + "." + (s.overload.empty() ? "default" : s.overload);
}

const OperatorRef* operatorOf(const Method& m, const Node& n) {
  if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size()) return nullptr;
  return &m.operators[n.op];
}

bool calls(const Method& m, const Node& n, const std::string& name, const std::string& overload) {
  const OperatorRef* op = operatorOf(m, n);
  if (!op || op->name != name) return false;
  auto norm = [](const std::string& o) { return o.empty() ? std::string("default") : o; };
  return norm(op->overload) == norm(overload);
}

namespace {
template <typename F>
void forEachRead(Method& m, F&& f) {
  for (Node& n : m.nodes)
    for (ValueId& v : n.args) {
      if (v < 0) continue;
      if (auto* tl = std::get_if<TensorList>(&m.values[v].payload))
        for (ValueId& x : tl->items) f(x);
      else if (auto* ol = std::get_if<OptionalTensorList>(&m.values[v].payload))
        for (ValueId& x : ol->items) f(x);
      f(v);
    }
}
}  // namespace

size_t replaceUses(Method& m, ValueId from, ValueId to) {
  size_t count = 0;
  auto swap = [&](ValueId& v) {
    if (v == from) v = to, ++count;
  };
  forEachRead(m, swap);
  for (ValueId& v : m.outputs) swap(v);
  for (OutputSpec& o : m.signature.outputs) swap(o.value);
  return count;
}

int producerOf(const Method& m, ValueId v) {
  for (size_t i = 0; i < m.nodes.size(); ++i)
    for (ValueId o : m.nodes[i].outputs)
      if (o == v) return static_cast<int>(i);
  return -1;
}

std::vector<ValueId> readsOf(const Method& m, const Node& n) {
  std::vector<ValueId> r;
  for (ValueId v : n.args) {
    if (v < 0) continue;
    r.push_back(v);
    if (auto* tl = std::get_if<TensorList>(&m.values[v].payload)) r.insert(r.end(), tl->items.begin(), tl->items.end());
    else if (auto* ol = std::get_if<OptionalTensorList>(&m.values[v].payload))
      for (ValueId x : ol->items)
        if (x >= 0) r.push_back(x);
  }
  return r;
}

std::vector<int> useCounts(const Method& m) {
  std::vector<int> uses(m.values.size(), 0);
  for (const Node& n : m.nodes)
    for (ValueId v : readsOf(m, n)) ++uses[v];
  for (ValueId v : m.outputs)
    if (v >= 0) ++uses[v];
  return uses;
}

const InputSpec* inputSpecOf(const Method& m, ValueId v) {
  for (const InputSpec& s : m.signature.inputs)
    if (s.value == v) return &s;
  return nullptr;
}

bool isMutatedInput(const Method& m, ValueId v) {
  const InputSpec* in = inputSpecOf(m, v);
  if (!in) return false;
  for (const OutputSpec& o : m.signature.outputs) {
    if (o.kind == OutputSpec::Kind::BufferMutation && in->kind == InputSpec::Kind::Buffer && o.target == in->target)
      return true;
    if (o.kind == OutputSpec::Kind::UserInputMutation && in->kind == InputSpec::Kind::User &&
        o.target == m.values[v].name)
      return true;
  }
  return false;
}

std::optional<double> numberOf(const Method& m, ValueId v) {
  if (v < 0) return std::nullopt;
  const Value& x = m.values[v];
  if (x.symbolic) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(&x.payload)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&x.payload)) return *d;
  if (auto* b = std::get_if<bool>(&x.payload)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

LiftedScalars liftScalarTensorArguments(Method& m) {
  struct Lift { size_t node, arg; ScalarType dtype; uint64_t offset; };
  std::vector<Lift> lifts;
  std::string bytes;
  const OpRegistry& reg = OpRegistry::builtin();
  for (size_t ni = 0; ni < m.nodes.size(); ++ni) {
    const Node& n = m.nodes[ni];
    if (n.kind != NodeKind::Kernel || n.op < 0) continue;
    const OpSchema* s = reg.find(m.operators[n.op].name, m.operators[n.op].overload);
    if (!s) continue;
    for (size_t a = 0; a < n.args.size() && a < s->arguments.size(); ++a) {
      const SchemaType& t = s->arguments[a].type;
      if (t.base != SchemaType::Base::Tensor || t.list || n.args[a] < 0) continue;
      const Value& v = m.values[n.args[a]];
      if (v.symbolic) continue;  // known only at run time (SymToTensorPass makes it a tensor); its payload is a hint
      uint64_t at = (bytes.size() + 15) / 16 * 16;
      bytes.resize(at);
      if (auto* d = std::get_if<double>(&v.payload)) {
        float f = static_cast<float>(*d);
        bytes.append(reinterpret_cast<const char*>(&f), 4);
        lifts.push_back({ni, a, ScalarType::Float, at});
      } else if (auto* i = std::get_if<int64_t>(&v.payload)) {
        bytes.append(reinterpret_cast<const char*>(i), 8);
        lifts.push_back({ni, a, ScalarType::Long, at});
      } else if (auto* b = std::get_if<bool>(&v.payload)) {
        bytes.push_back(*b ? 1 : 0);
        lifts.push_back({ni, a, ScalarType::Bool, at});
      }
    }
  }
  LiftedScalars r;
  if (lifts.empty()) return r;
  r.bytes = MappedFile::fromBytes(m.name + " (lifted scalar constants)", bytes.data(), bytes.size());
  for (const Lift& l : lifts) {
    TensorSpec t;
    t.dtype = l.dtype;
    t.data = Bytes{r.bytes->data() + l.offset, elementSize(l.dtype), l.offset};
    ValueId id = addValue(m, Value{std::move(t), "_lifted_tensor_constant" + std::to_string(r.values.size())});
    m.nodes[l.node].args[l.arg] = id;
    r.values.push_back(id);
  }
  return r;
}

bool hasBackwardSignature(const Method& m) {
  for (const OutputSpec& o : m.signature.outputs)
    if (o.kind == OutputSpec::Kind::Loss || o.kind == OutputSpec::Kind::GradientToParameter ||
        o.kind == OutputSpec::Kind::GradientToUserInput)
      return true;
  return false;
}

void dropUnusedOperators(Method& m) {
  std::vector<int32_t> remap(m.operators.size(), -1);
  std::vector<OperatorRef> kept;
  for (Node& n : m.nodes)
    if (n.kind == NodeKind::Kernel && n.op >= 0) {
      if (remap[n.op] < 0) {
        remap[n.op] = static_cast<int32_t>(kept.size());
        kept.push_back(m.operators[n.op]);
      }
      n.op = remap[n.op];
    }
  m.operators = std::move(kept);
}

}  // namespace lstudio::passes
