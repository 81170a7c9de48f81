#include "engine/lowering/Delower.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/EdgeDialect.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/ControlFlow.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio {
namespace {

/// "aten::add" -> "add": torch.fx names nodes after the operator (as the .pte reader does).
std::string nodeBaseName(const std::string& op) {
  size_t colon = op.rfind("::");
  return colon == std::string::npos ? op : op.substr(colon + 2);
}

bool outNamed(const std::string& overload) { return overload == "out" || overload.ends_with("_out"); }


class MethodDelowerer {
 public:
  MethodDelowerer(const Method& in, DelowerReport& r) : in_(in), m_(in), r_(r) {}

  Result<Method> run() {
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const Node& n = m_.nodes[i];
      if (n.kind == NodeKind::Free)
        return fail("instruction " + std::to_string(i), "kernel, delegate and control-flow instructions",
                    "a free instruction (memory freed at run time cannot be de-lowered)");
    }
    dropPlan();
    for (const Node& n : m_.nodes)
      if (!n.name.empty()) nodeNames_.insert(n.name);
    std::vector<Node> nodes;
    nodes.reserve(m_.nodes.size());
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      auto n = delowerNode(i);
      if (!n) return n.error();
      if (n->name.empty()) {
        std::string base = n->kind == NodeKind::Delegate ? "executorch_call_delegate"
                           : n->op >= 0                   ? nodeBaseName(m_.operators[n->op].name)
                                                          : "node";
        n->name = uniqueNodeName(base);
      }
      nodes.push_back(std::move(n.value()));
    }
    m_.nodes = std::move(nodes);
    // Removed views get their view_copy back first, in instruction order, so
    // that a view inside a branch or loop body goes there with its base.
    Placeholders found = findPlaceholders();
    // Jumps and moves are control flow the emitter inlined: cond, map and scan
    // nodes again, their graphs of their own (their calls functional like the method's).
    if (std::any_of(m_.nodes.begin(), m_.nodes.end(), [](const Node& n) { return n.kind == NodeKind::JumpFalse; })) {
      if (auto s = liftConds(m_); !s) return s.error();
      keepConstantsTheMethodReads(found);
    }
    writeSignature(found);  // the .pte's pytree specs stay: the emitter writes them back unchanged
    passes::dropUnusedOperators(m_);
    for (OperatorRef& r : m_.operators)
      if (r.overload.empty()) r.overload = "default";  // the spelling of the passes' tables
    return std::move(m_);
  }

 private:
  Error fail(std::string what, std::string expected, std::string found) const {
    return Error{ErrorCode::Unsupported, {}, std::nullopt, "method '" + in_.name + "': " + std::move(what),
                 std::move(expected), std::move(found)};
  }

  void dropPlan() {
    m_.nonConstBufferSizes.clear();
    for (Value& v : m_.values)
      if (auto* t = std::get_if<TensorSpec>(&v.payload)) {
        t->slot.reset();
        t->viewOf = kNoValue;
      }
  }

  /// The operator table index for `s` (added when new).
  int32_t operatorFor(const OpSchema& s) {
    OperatorRef ref{s.ns + "::" + s.name, s.overload.empty() ? "default" : s.overload};
    for (size_t k = 0; k < m_.operators.size(); ++k)
      if (m_.operators[k].name == ref.name &&
          (m_.operators[k].overload == ref.overload || (m_.operators[k].overload.empty() && ref.overload == "default")))
        return static_cast<int32_t>(k);
    m_.operators.push_back(ref);
    return static_cast<int32_t>(m_.operators.size() - 1);
  }

  Result<Node> delowerNode(size_t i) {
    Node n = m_.nodes[i];
    if (n.kind == NodeKind::Move || n.kind == NodeKind::JumpFalse) return n;  // a cond's, lifted after
    if (n.kind == NodeKind::Delegate) {
      ++r_.delegates;
      return n;
    }
    if (n.op < 0 || static_cast<size_t>(n.op) >= m_.operators.size())
      return fail("instruction " + std::to_string(i), "an operator of the method's table", std::to_string(n.op));
    const OperatorRef& ref = m_.operators[n.op];
    const OpRegistry& reg = OpRegistry::builtin();
    const OpSchema* s = reg.find(ref.name, ref.overload);
    if (s && s->ns == "executorch_prim" && s->name == "et_view") return viewToViewCopy(n, i);
    const OpSchema* fn = s && s->isOutVariant() ? reg.functionalOf(*s) : nullptr;
    // A call whose arguments do not fit the studio's schema (another
    // version of the operator) is kept as the .pte makes it, like prim ops,
    // in-place write-backs and operators without a known functional form.
    // ExecuTorch's KernelCall: the schema's arguments (outs included), then one
    // return value; an out variant's is its outs, also where the schema returns
    // nothing (split_with_sizes_copy.out: its out list again).
    const size_t expected = s ? s->arguments.size() + (s->isOutVariant() || !s->returns.empty() ? 1 : 0) : 0;
    if (fn && n.args.size() != expected) {
      r_.notes.push_back(in_.name + ": " + where(i) + " has " + std::to_string(n.args.size()) + " arguments, its schema " +
                         std::to_string(expected) + "; kept as called");
      fn = nullptr;
    }
    if (!fn) {
      if (s && n.outputs.empty()) n.outputs = outsOf(n, *s);
      if (!s && !outNamed(ref.overload) && !ref.overload.empty() && ref.overload != "default")
        r_.notes.push_back(in_.name + ": " + ref.fullName() + " is not an operator the studio knows; kept as called");
      size_t colon = ref.name.find("::");
      std::string ns = colon == std::string::npos ? "aten" : ref.name.substr(0, colon);
      n.target = "torch.ops." + ns + "." + nodeBaseName(ref.name) + "." + (ref.overload.empty() ? "default" : ref.overload);
      ++r_.kept;
      return n;
    }
    // Out variant -> functional: schema arguments by name, out arguments become results.
    std::map<std::string, ValueId> byName;
    std::vector<ValueId> outs;
    size_t k = 0;
    for (const SchemaArgument& a : s->arguments) {
      const ValueId v = n.args[k++];
      if (!(a.kwargOnly && a.isWrite)) {
        byName[a.name] = v;
      } else if (a.type.list) {  // `Tensor(a!)[] out` (split_with_sizes_copy, unbind_copy): one result per item
        const auto* items = v >= 0 && static_cast<size_t>(v) < m_.values.size()
                                ? std::get_if<TensorList>(&m_.values[v].payload) : nullptr;
        if (!items) return fail(where(i), "a tensor list for out argument '" + a.name + "'", "value " + std::to_string(v));
        outs.insert(outs.end(), items->items.begin(), items->items.end());
      } else {
        outs.push_back(v);
      }
    }
    Node f;
    f.kind = NodeKind::Kernel;
    f.name = n.name;
    f.meta = n.meta;
    f.chain = n.chain;
    for (const SchemaArgument& a : fn->arguments) {
      ValueId v = kNoValue;
      if (auto it = byName.find(a.name); it != byName.end()) v = it->second;
      else if (auto d = schemaDefault(m_, a)) v = *d;
      if (v == kNoValue) return fail(where(i), "a value for argument '" + a.name + "' of " + fn->qualifiedName(), "none");
      f.args.push_back(v);
      f.argNames.push_back(a.name);
    }
    for (ValueId o : outs)
      if (o < 0 || static_cast<size_t>(o) >= m_.values.size() || !m_.values[o].isTensor())
        return fail(where(i), "tensor out arguments", "value " + std::to_string(o));
    f.outputs = outs;
    f.op = operatorFor(*fn);
    f.target = "torch.ops." + fn->ns + "." + fn->name + "." + (fn->overload.empty() ? "default" : fn->overload);
    ++r_.functionalized;
    return f;
  }

  /// et_view(self, size, out) -> view_copy(self, size) with `out` as its result.
  Result<Node> viewToViewCopy(const Node& n, size_t i) {
    if (n.args.size() < 3) return fail(where(i), "et_view(self, size, out)", std::to_string(n.args.size()) + " arguments");
    const OpSchema* vc = OpRegistry::builtin().find("aten::view_copy", "");
    if (!vc) return fail(where(i), "aten::view_copy in the operator table", "none");
    Node f;
    f.kind = NodeKind::Kernel;
    f.name = n.name;
    f.meta = n.meta;
    f.args = {n.args[0], n.args[1]};
    f.argNames = {"self", "size"};
    f.outputs = {n.args[2]};
    f.op = operatorFor(*vc);
    f.target = "torch.ops.aten.view_copy.default";
    ++r_.views;
    return f;
  }

  /// The values an operator writes, from its schema: out arguments and mutated self.
  std::vector<ValueId> outsOf(const Node& n, const OpSchema& s) const {
    std::vector<ValueId> outs;
    for (size_t k = 0; k < s.arguments.size() && k < n.args.size(); ++k)
      if (s.arguments[k].isWrite && m_.values[n.args[k]].isTensor()) outs.push_back(n.args[k]);
    return outs;
  }

  std::string where(size_t i) const {
    const Node& n = in_.nodes[i];
    std::string op = n.op >= 0 && static_cast<size_t>(n.op) < in_.operators.size() ? in_.operators[n.op].fullName() : "?";
    return "instruction " + std::to_string(i) + " (" + op + ")";
  }

  /// Where the .pte keeps a tensor's bytes (the plan is already dropped in m_).
  TensorStorage storageInPte(ValueId v) const {
    if (static_cast<size_t>(v) >= in_.values.size() || !in_.values[v].isTensor()) return TensorStorage::RunTime;
    return in_.values[v].tensor().storage();
  }

  /// The tensor `v` is a removed view of: the last value the .pte's plan
  /// placed at the same slot, of the same dtype and byte size.
  std::optional<ValueId> viewBase(ValueId v, const std::map<std::pair<uint32_t, uint64_t>, ValueId>& lastAtSlot) const {
    const TensorSpec& t = in_.values[v].tensor();
    if (!t.slot || t.dynamism != ShapeDynamism::Static || t.nbytes().value_or(0) == 0) return std::nullopt;
    auto it = lastAtSlot.find({t.slot->memId, t.slot->offset});
    if (it == lastAtSlot.end() || it->second == v) return std::nullopt;
    const TensorSpec* b = in_.values[it->second].tensorIf();
    if (!b || b->dtype != t.dtype || b->nbytes() != t.nbytes()) return std::nullopt;
    return it->second;
  }

  /// view_copy(base, sizes of `view`) -> view: a view ReplaceViewCopyWithView had removed.
  Node viewCopyNode(ValueId base, ValueId view, const OpSchema& viewCopy, const NodeMeta& meta) {
    Node n;
    n.kind = NodeKind::Kernel;
    std::vector<int64_t> sizes = m_.values[view].tensor().sizes;  // copied: adding values moves the table
    n.args = {base, addIntListValue(sizes)};
    n.argNames = {"self", "size"};
    n.outputs = {view};
    n.op = operatorFor(viewCopy);
    n.target = "torch.ops.aten.view_copy.default";
    n.name = uniqueNodeName("view_copy");
    n.meta = meta;
    ++r_.views;
    return n;
  }

  ValueId addIntListValue(const std::vector<int64_t>& xs) {
    IntList l;
    for (int64_t x : xs) {
      l.items.push_back(static_cast<ValueId>(m_.values.size()));
      m_.values.push_back(Value{x, {}});
    }
    m_.values.push_back(Value{std::move(l), {}});
    return static_cast<ValueId>(m_.values.size() - 1);
  }

  /// The first of base, base_1, base_2, ... not taken. Each base remembers how
  /// far it got (names are never released), so thousands of view_copy nodes
  /// cost one probe each instead of one per earlier view_copy.
  std::string uniqueNodeName(const std::string& base) {
    int& k = nextSuffix_[base];
    std::string name = k == 0 ? base : base + "_" + std::to_string(k);
    while (!nodeNames_.insert(name).second) name = base + "_" + std::to_string(++k);
    ++k;
    return name;
  }

  /// torch.export's signature (findPlaceholders, then writeSignature): constants become parameters, state becomes
  /// buffers (placed first, as torch.export orders placeholders), then the
  /// .pte's inputs. Tensors a .pte reads without any instruction defining
  /// them are told apart here:
  ///   - a view whose copy ReplaceViewCopyWithView removed (it shares its
  ///     base's slot and size): a view_copy of the base is put back;
  ///   - scratch memory a backend's kernel takes as an argument (an operator
  ///     without schema): a result of that kernel, planned for its call only;
  ///   - a delegate's results (its arguments list inputs, then outputs);
  ///   - otherwise state the program had before it ran: a buffer.
  /// Tensors the method reads without an instruction defining them first.
  struct Placeholders {
    std::vector<ValueId> constants, state;  ///< to become parameters, buffers
    std::vector<std::string> firstUse;      ///< [value] "node.arg" that reads it first: a constant's name
    std::set<ValueId> writtenInPlace;       ///< e.g. copy_'s self: state the method updates
  };

  /// rebuildSignature's walk through the nodes in order.
  struct SignatureWalk {
    size_t nv = 0;  ///< values before the walk (it adds view_copy sizes)
    std::vector<bool> defined, seen;
    std::map<std::pair<uint32_t, uint64_t>, ValueId> lastAtSlot;  // in the .pte's plan
    const OpSchema* viewCopy = nullptr;
    std::set<ValueId> loopCarries;  ///< scans' carries (scanCarries)
    std::vector<int64_t> at;        ///< instruction -> where it starts in the rebuilt list
    std::set<size_t> targets;       ///< instructions a jump goes to
    size_t placed = 0;              ///< the instruction being placed
    Placeholders found;
  };

  void define(SignatureWalk& w, ValueId v) const {
    w.defined[v] = true;
    if (static_cast<size_t>(v) >= in_.values.size()) return;
    if (auto* t = in_.values[v].tensorIf(); t && t->slot) w.lastAtSlot[{t->slot->memId, t->slot->offset}] = v;
  }

  Placeholders findPlaceholders() {
    SignatureWalk w;
    w.nv = m_.values.size();
    w.defined.assign(w.nv, false);
    w.seen.assign(w.nv, false);
    w.found.firstUse.resize(w.nv);
    w.viewCopy = OpRegistry::builtin().find("aten::view_copy", "");
    w.loopCarries = scanCarries(m_);
    for (ValueId v : m_.inputs)
      if (v >= 0 && static_cast<size_t>(v) < w.nv) define(w, v);
    std::vector<Node> nodes;
    nodes.reserve(m_.nodes.size());
    w.at.assign(m_.nodes.size() + 1, 0);
    for (const Node& n : m_.nodes)
      if (n.kind == NodeKind::JumpFalse && n.jumpTarget >= 0) w.targets.insert(static_cast<size_t>(n.jumpTarget));
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      w.at[i] = static_cast<int64_t>(nodes.size());  // a jump there runs the view_copy put before it too
      w.placed = i;
      placeArguments(w, m_.nodes[i], nodes);
      nodes.push_back(std::move(m_.nodes[i]));
    }
    w.at.back() = static_cast<int64_t>(nodes.size());
    for (Node& n : nodes)
      if (n.kind == NodeKind::JumpFalse && n.jumpTarget >= 0 && static_cast<size_t>(n.jumpTarget) < w.at.size())
        n.jumpTarget = w.at[static_cast<size_t>(n.jumpTarget)];
    m_.nodes = std::move(nodes);
    placeUntouchedOutputs(w);
    return std::move(w.found);
  }

  /// The tensors node `n` reads, list items in place; records each one's first use.
  std::vector<ValueId> tensorArguments(const Node& n, size_t nv, std::vector<std::string>& firstUse) const {
    std::vector<ValueId> refs;
    for (size_t k = 0; k < n.args.size(); ++k) {
      ValueId a = n.args[k];
      if (a < 0 || static_cast<size_t>(a) >= nv) continue;
      const Value& v = m_.values[a];
      if (v.isTensor() && firstUse[a].empty())
        firstUse[a] = n.name + "." + (k < n.argNames.size() ? n.argNames[k] : "arg" + std::to_string(k));
      if (v.isTensor()) refs.push_back(a);
      if (auto* tl = std::get_if<TensorList>(&v.payload))
        for (ValueId x : tl->items) refs.push_back(x);
      if (auto* ol = std::get_if<OptionalTensorList>(&v.payload))
        for (ValueId x : ol->items) refs.push_back(x);
    }
    return refs;
  }

  /// Tells apart each tensor `n` reads before anything defined it (see above); a
  /// view_copy a removed view needs goes to `nodes` before `n`.
  void placeArguments(SignatureWalk& w, Node& n, std::vector<Node>& nodes) {
    const OpRegistry& reg = OpRegistry::builtin();
    const OpSchema* schema = nullptr;
    if (n.kind == NodeKind::Kernel && n.op >= 0) schema = reg.find(m_.operators[n.op].name, m_.operators[n.op].overload);
    std::set<ValueId> writes(n.outputs.begin(), n.outputs.end());
    if (n.kind == NodeKind::Move && n.args.size() == 2) {  // a cond branch handing over its result
      if (n.args[1] >= 0 && static_cast<size_t>(n.args[1]) < w.nv) w.seen[n.args[1]] = true, define(w, n.args[1]);
      writes.insert(n.args[1]);
    }
    bool inPlace = schema && schema->isInplace();
    // A scan's carry is first written by copy_(carry, init) before its loop:
    // a result of the scan, not state the method had before it ran.
    if (inPlace && !n.args.empty() && n.args[0] >= 0 && static_cast<size_t>(n.args[0]) < w.nv && !w.defined[n.args[0]] &&
        w.loopCarries.count(n.args[0])) {
      w.seen[n.args[0]] = true;
      define(w, n.args[0]);
    }
    if (inPlace && !n.args.empty()) w.found.writtenInPlace.insert(n.args[0]);
    std::vector<ValueId> extraOuts;
    for (ValueId a : tensorArguments(n, w.nv, w.found.firstUse)) {
      if (a < 0 || static_cast<size_t>(a) >= w.nv || w.seen[a]) continue;
      const TensorSpec* t = m_.values[a].tensorIf();
      if (!t) continue;
      w.seen[a] = true;
      TensorStorage st = storageInPte(a);
      if (st == TensorStorage::Constant || st == TensorStorage::External) {
        w.found.constants.push_back(a);
        continue;
      }
      if (w.defined[a]) continue;
      bool hasInitialValue = st == TensorStorage::Mutable;
      if (!hasInitialValue && (n.kind == NodeKind::Delegate || (writes.count(a) && !(inPlace && n.args[0] == a)))) {
        if (n.kind == NodeKind::Delegate) extraOuts.push_back(a);
        define(w, a);
        continue;
      }
      if (!hasInitialValue && w.viewCopy)
        if (auto base = viewBase(a, w.lastAtSlot)) {
          insertViewCopy(w, nodes, viewCopyNode(*base, a, *w.viewCopy, n.meta), *base, a);
          define(w, a);
          continue;
        }
      if (!hasInitialValue && !schema && n.kind == NodeKind::Kernel) {
        extraOuts.push_back(a);  // scratch of a kernel the studio has no schema for
        define(w, a);
        continue;
      }
      w.found.state.push_back(a);
      define(w, a);
    }
    for (ValueId o : extraOuts) n.outputs.push_back(o);
    for (ValueId o : n.outputs)
      if (o >= 0 && static_cast<size_t>(o) < w.nv && !w.defined[o]) define(w, o);
  }

  /// ExecuTorch numbers a removed view where its memory.view node stood, so the
  /// view_copy goes back there: before the calls whose results are numbered
  /// after the view, but after its base's and inside the same straight run of
  /// instructions (no jump, move or jump target crossed).
  void insertViewCopy(SignatureWalk& w, std::vector<Node>& nodes, Node copy, ValueId base, ValueId view) const {
    auto startsJumpTarget = [&](size_t p) {
      for (size_t t : w.targets)
        if (t < w.placed && w.at[t] == static_cast<int64_t>(p)) return true;
      return false;
    };
    auto numberedAfter = [&](const Node& n) {
      if (n.kind != NodeKind::Kernel || n.outputs.empty()) return false;
      for (ValueId o : n.outputs)
        if (o == base || o < view || static_cast<size_t>(o) >= w.nv) return false;
      return true;
    };
    size_t p = nodes.size();
    while (p > 0 && !startsJumpTarget(p) && numberedAfter(nodes[p - 1])) --p;
    nodes.insert(nodes.begin() + static_cast<long>(p), std::move(copy));
    for (size_t i = 0; i < w.placed; ++i)
      if (w.at[i] > static_cast<int64_t>(p)) ++w.at[i];
  }

  /// Tensors the method returns without any instruction touching them.
  void placeUntouchedOutputs(SignatureWalk& w) {
    for (ValueId o : m_.outputs) {
      if (o < 0 || static_cast<size_t>(o) >= w.nv || w.seen[o] || w.defined[o] || !m_.values[o].isTensor()) continue;
      w.seen[o] = true;
      TensorStorage st = storageInPte(o);
      if (st == TensorStorage::Constant || st == TensorStorage::External) w.found.constants.push_back(o);
      else if (auto base = st == TensorStorage::Mutable || !w.viewCopy ? std::nullopt : viewBase(o, w.lastAtSlot))
        m_.nodes.push_back(viewCopyNode(*base, o, *w.viewCopy, {}));
      else w.found.state.push_back(o);
      define(w, o);
    }
  }

  /// A constant only a subgraph reads (a scalar ExecuTorch lifted into a
  /// branch or loop body) stays that graph's own, not a parameter.
  void keepConstantsTheMethodReads(Placeholders& found) const {
    std::set<ValueId> read(m_.outputs.begin(), m_.outputs.end());
    for (const Node& n : m_.nodes)
      for (ValueId a : n.args) {
        read.insert(a);
        if (a < 0 || static_cast<size_t>(a) >= m_.values.size()) continue;
        if (auto* tl = std::get_if<TensorList>(&m_.values[a].payload)) read.insert(tl->items.begin(), tl->items.end());
        else if (auto* ol = std::get_if<OptionalTensorList>(&m_.values[a].payload)) read.insert(ol->items.begin(), ol->items.end());
      }
    std::erase_if(found.constants, [&](ValueId c) { return !read.count(c); });
  }

  /// Names the placeholders and writes the signature: parameters, buffers, then the
  /// .pte's inputs; outputs after the buffer mutations.
  void writeSignature(const Placeholders& found) {
    std::set<std::string> used;
    auto unique = [&](std::string name) {
      std::string s = name;
      for (int k = 1; used.count(s); ++k) s = name + "_" + std::to_string(k);
      used.insert(s);
      return s;
    };
    for (const Value& v : m_.values)
      if (auto* t = v.tensorIf(); t && !t->fqn.empty()) used.insert(t->fqn);

    GraphSignature sig;
    std::vector<ValueId> inputs;
    std::map<ValueId, std::string> bufferName;
    for (ValueId c : found.constants) {
      Value& v = m_.values[c];
      TensorSpec& t = v.tensor();
      std::string name = !t.fqn.empty() ? t.fqn : unique(found.firstUse[c].empty() ? "constant" : found.firstUse[c]);
      if (v.name.empty()) v.name = "p_" + name;
      sig.inputs.push_back(InputSpec{InputSpec::Kind::Parameter, c, name, true});
      inputs.push_back(c);
      ++r_.parameters;
    }
    for (ValueId b : found.state) {
      Value& v = m_.values[b];
      TensorSpec& t = v.tensor();
      // State in mem_id 2 is shared between methods (share_mutable_buffers):
      // one buffer per slot, so it is named by its slot in every method.
      const TensorSpec* stored = b < static_cast<ValueId>(in_.values.size()) ? in_.values[b].tensorIf() : nullptr;
      const bool shared = stored && stored->slot && stored->slot->memId == 2;
      std::string name = !t.fqn.empty() ? t.fqn
                         : shared      ? unique("shared_state_" + std::to_string(stored->slot->offset))
                                       : unique("buffer_" + std::to_string(r_.buffers));
      if (v.name.empty()) v.name = "b_" + name;
      sig.inputs.push_back(InputSpec{InputSpec::Kind::Buffer, b, name, true});
      bufferName[b] = name;
      inputs.push_back(b);
      ++r_.buffers;
    }
    for (ValueId u : m_.inputs) {
      sig.inputs.push_back(InputSpec{InputSpec::Kind::User, u, {}, true});
      inputs.push_back(u);
      ++r_.userInputs;
    }
    // State written in place (ExecuTorch's copy_ write-back) is a buffer mutation
    // the exported graph returns, though the .pte returns only the user's outputs.
    for (ValueId b : found.state)
      if (found.writtenInPlace.count(b) && std::find(m_.outputs.begin(), m_.outputs.end(), b) == m_.outputs.end())
        m_.outputs.insert(m_.outputs.begin(), b);
    for (ValueId o : m_.outputs) {
      auto it = bufferName.find(o);
      if (it != bufferName.end()) sig.outputs.push_back(OutputSpec{OutputSpec::Kind::BufferMutation, o, it->second});
      else sig.outputs.push_back(OutputSpec{OutputSpec::Kind::User, o, {}});
    }
    m_.inputs = std::move(inputs);
    m_.signature = std::move(sig);
  }

  const Method& in_;
  Method m_;
  DelowerReport& r_;
  std::unordered_set<std::string> nodeNames_;  ///< names taken
  std::unordered_map<std::string, int> nextSuffix_;  ///< per base: the suffix to try next
};

}  // namespace

/// A training .pte says with ExecuTorch's getters which outputs of a method are
/// gradients and which are the trained weights (__et_training_gradients_index_<m>,
/// __et_training_parameters_index_<m>, __et_training_fqn_<m>): those outputs get
/// their kinds back (GradientToParameter, and Token as weights_to_outputs_pass
/// marks a trained weight), named by the parameters' names.
void markTrainingOutputs(Program& p) {
  auto firstInt = [&](const std::string& name) -> std::optional<int64_t> {
    const Method* g = p.method(name);
    if (!g || g->outputs.empty() || g->outputs[0] < 0 || static_cast<size_t>(g->outputs[0]) >= g->values.size()) return {};
    if (auto* i = std::get_if<int64_t>(&g->values[g->outputs[0]].payload)) return *i;
    return {};
  };
  for (Method& m : p.methods) {
    auto gradients = firstInt("__et_training_gradients_index_" + m.name);
    auto weights = firstInt("__et_training_parameters_index_" + m.name);
    const Method* names = p.method("__et_training_fqn_" + m.name);
    if (!gradients || !weights || !names || *gradients < 0 || *weights < *gradients) continue;
    std::vector<std::string> fqns;
    for (ValueId v : names->outputs)
      if (v >= 0 && static_cast<size_t>(v) < names->values.size())
        if (auto* s = std::get_if<std::string>(&names->values[v].payload)) fqns.push_back(*s);
    auto& outs = m.signature.outputs;
    for (size_t i = static_cast<size_t>(*gradients); i < outs.size(); ++i) {
      const bool weight = i >= static_cast<size_t>(*weights);
      const size_t k = i - static_cast<size_t>(weight ? *weights : *gradients);
      if (k >= fqns.size()) break;
      outs[i].kind = weight ? OutputSpec::Kind::Token : OutputSpec::Kind::GradientToParameter;
      outs[i].target = fqns[k];
      if (weight)  // the weight's state input is named like the parameter it is
        for (InputSpec& in : m.signature.inputs)
          if (in.value == outs[i].value && in.kind == InputSpec::Kind::Buffer) in.target = fqns[k];
    }
  }
}

Result<Program> delowerProgram(const Program& pte, DelowerReport* report) {
  DelowerReport local;
  DelowerReport& r = report ? *report : local;
  if (pte.format != SourceFormat::Pte)
    return Error{ErrorCode::Unsupported, pte.path, std::nullopt, "de-lowering", "a program read from a .pte",
                 "a torch.export graph (lower it directly)"};
  Program out = pte;
  out.format = SourceFormat::Pt2;
  out.exportFacts = ExportFacts{};
  out.exportFacts.container = "de-lowered .pte";
  out.exportFacts.dialect = "EDGE";
  for (Method& m : out.methods) {
    // A constant method has nothing to undo: its values stay as stored (its constants made
    // parameters would give it inputs, and it would be planned and emitted as a method).
    if (m.isConstantGetter()) continue;
    MethodDelowerer d(m, r);
    auto dm = d.run();
    if (!dm) {
      Error e = dm.error();
      if (e.file.empty()) e.file = pte.path;
      return e;
    }
    m = std::move(dm.value());
  }
  markTrainingOutputs(out);
  return out;
}

/// enable_non_cpu_memory_planning and propagate_device_config as a .pte shows them.
/// Tensors on a device planned in CPU memory mean the flag was off; so does a delegate
/// with a target_device reading a tensor made elsewhere than by an _h2d_copy or a
/// delegate, and not an input left on the device (the only sign for a "cpu" target).
/// A method input or output left on a device means its copy was skipped.
static void readDeviceConfig(const Program& pte, ExecutorchBackendConfig& c) {
  for (const Method& m : pte.methods) {
    auto onDevice = [&](ValueId v) {
      const TensorSpec* t = v >= 0 && static_cast<size_t>(v) < m.values.size() ? m.values[v].tensorIf() : nullptr;
      return t && !t->device.isCpu();
    };
    for (const Value& v : m.values)
      if (const TensorSpec* t = v.tensorIf(); t && !t->device.isCpu() && t->slot &&
                                               (t->slot->memId >= m.arenaDevices.size() || m.arenaDevices[t->slot->memId].isCpu()))
        c.enableNonCpuMemoryPlanning = false;
    std::vector<int> producer(m.values.size(), -1);
    for (size_t i = 0; i < m.nodes.size(); ++i)
      for (ValueId o : m.nodes[i].outputs)
        if (o >= 0 && static_cast<size_t>(o) < producer.size()) producer[o] = static_cast<int>(i);
    for (const Node& n : m.nodes) {
      if (n.kind != NodeKind::Delegate || n.delegate < 0 || static_cast<size_t>(n.delegate) >= m.delegates.size()) continue;
      const auto& specs = m.delegates[n.delegate].compileSpecs;
      if (std::none_of(specs.begin(), specs.end(), [](const CompileSpec& s) { return s.key == "target_device"; })) continue;
      for (size_t a = 0; a + n.outputs.size() < n.args.size(); ++a) {
        ValueId v = n.args[a];
        if (v < 0 || static_cast<size_t>(v) >= m.values.size() || !m.values[v].isTensor()) continue;
        const int p = producer[v];
        const Node* made = p >= 0 ? &m.nodes[p] : nullptr;
        const bool copied = made && (made->kind == NodeKind::Delegate ||
                                     (made->kind == NodeKind::Kernel && made->op >= 0 &&
                                      m.operators[made->op].name == "et_copy::_h2d_copy"));
        const bool inputOnDevice = !made && !m.values[v].tensor().device.isCpu();
        if (!copied && !inputOnDevice) c.enableNonCpuMemoryPlanning = false;
      }
    }
    if (!c.enableNonCpuMemoryPlanning) break;
    if (std::any_of(m.inputs.begin(), m.inputs.end(), onDevice)) c.propagateDevice.skipH2dForMethodInputs.byMethod[m.name] = true;
    if (std::any_of(m.outputs.begin(), m.outputs.end(), onDevice)) c.propagateDevice.skipD2hForMethodOutputs.byMethod[m.name] = true;
  }
  if (!c.enableNonCpuMemoryPlanning) c.propagateDevice = {};
  // One flag for every method when they agree (the plain form).
  for (PerMethodFlag* f : {&c.propagateDevice.skipH2dForMethodInputs, &c.propagateDevice.skipD2hForMethodOutputs}) {
    size_t on = f->byMethod.size(), methods = 0;
    for (const Method& m : pte.methods) methods += !m.isConstantGetter();
    if (on > 0 && on == methods) f->byMethod.clear(), f->all = true;
  }
}

ExecutorchBackendConfig configMatching(const Program& pte) {
  ExecutorchBackendConfig c;
  if (pte.facts.segmentAlignment > 0) c.segmentAlignment = pte.facts.segmentAlignment;
  bool inlineBlobs = false;
  for (const Method& m : pte.methods) {
    for (const Node& n : m.nodes) {
      if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m.operators.size()) continue;
      const OperatorRef& ref = m.operators[n.op];
      if (ref.name != "aten::view_copy" || n.args.empty()) continue;
      // A view_copy left in the program: remove_view_copy was off, unless the
      // method returns its result or its dynamism differs from its base's
      // (those stay copies either way; a dynamic view is an et_view otherwise).
      const TensorSpec* t = m.values[n.args[0]].tensorIf();
      const TensorSpec* view = m.values[n.args.back()].tensorIf();
      const bool returned = std::any_of(n.outputs.begin(), n.outputs.end(), [&](ValueId o) {
        return std::find(m.outputs.begin(), m.outputs.end(), o) != m.outputs.end();
      }) || std::find(m.outputs.begin(), m.outputs.end(), n.args.back()) != m.outputs.end();
      if (t && view && t->dynamism == view->dynamism && !returned) c.removeViewCopy = false;
    }
    for (const Value& v : m.values) {
      auto* t = v.tensorIf();
      // Planned state stored with its name: emit_mutable_buffer_names was on.
      if (t && t->slot && !t->external && !t->fqn.empty()) c.emitMutableBufferNames = true;
    }
    for (const Delegate& d : m.delegates) inlineBlobs = inlineBlobs || (d.location == Delegate::Location::Inline && !d.blob.empty());
  }
  // Each method's planning pass: inputs and outputs left to the caller
  // (alloc_graph_input/output off), a third arena (mem_id 2) for the state
  // methods share (share_mutable_buffers). Methods planned alike read as one
  // pass; otherwise as a dict of them by method name.
  auto anyPlanned = [](const Method& m, bool inputs) -> std::optional<bool> {
    std::optional<bool> planned;
    for (ValueId v : inputs ? m.inputs : m.outputs)
      if (const TensorSpec* t = v >= 0 && static_cast<size_t>(v) < m.values.size() ? m.values[v].tensorIf() : nullptr;
          t && t->storage() != TensorStorage::Constant && t->storage() != TensorStorage::External)
        planned = planned.value_or(false) || t->slot.has_value();
    return planned;
  };
  std::map<std::string, MemoryPlanningConfig> byMethod;
  for (const Method& m : pte.methods) {
    if (m.isConstantGetter()) continue;
    MemoryPlanningConfig& mp = byMethod[m.name];
    mp.alignment = storedPlanAlignment(m);  // a MemoryPlanningPass(alignment=4096) is kept
    // Arenas in CPU memory: a third one holds the shared state; others are a device's.
    size_t cpuArenas = 0;
    for (size_t id = 1; id < m.nonConstBufferSizes.size(); ++id)
      cpuArenas += id >= m.arenaDevices.size() || m.arenaDevices[id].isCpu();
    mp.shareMutableBuffers = cpuArenas == 2;
    if (auto p = anyPlanned(m, true)) mp.allocGraphInput = *p;
    if (auto p = anyPlanned(m, false)) mp.allocGraphOutput = *p;
  }
  auto same = [](const MemoryPlanningConfig& a, const MemoryPlanningConfig& b) {
    return a.alignment == b.alignment && a.shareMutableBuffers == b.shareMutableBuffers && a.allocGraphInput == b.allocGraphInput &&
           a.allocGraphOutput == b.allocGraphOutput;
  };
  const bool alike = std::all_of(byMethod.begin(), byMethod.end(),
                                 [&](const auto& e) { return same(e.second, byMethod.begin()->second); });
  if (!alike) c.memoryPlanningPerMethod = std::move(byMethod);
  else if (!byMethod.empty()) c.memoryPlanning = byMethod.begin()->second;
  c.extractDelegateSegments = !inlineBlobs;
  readDeviceConfig(pte, c);
  // A header padded past 16-byte alignment: the schema's force_align was raised, by
  // constant_tensor_alignment when every constant sits on it, else by delegate_alignment.
  const ContainerFacts& f = pte.facts;
  if (uint64_t pad = f.headerPadding; f.headerLength && pad > (f.headerLength + 15u) / 16 * 16) {
    bool constantsOnIt = true;
    for (size_t i = 1; i < pte.constants.size(); ++i)
      constantsOnIt = constantsOnIt && (pte.constants[i].fileOffset - pte.constants[1].fileOffset) % pad == 0;
    if (inlineBlobs && !constantsOnIt) c.delegateAlignment = pad;
    else c.constantTensorAlignment = pad;
  }
  return c;
}

}  // namespace lstudio
