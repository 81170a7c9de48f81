// constant_prop_pass (the second half of do_quant_fusion_and_const_prop): a
// node whose inputs are all constants (parameters, buffers nothing mutates,
// lifted constants, earlier folded nodes) is computed now and becomes a new
// lifted constant "_prop_tensor_constant<N>" placed before the first user
// input; constants only folded nodes read leave the signature. As in
// ExecuTorch, full, the quantize/dequantize primitives, operators that write
// their arguments and operators that draw random numbers are never folded,
// and a constant returned as an output is returned through a clone.
// ExecuTorch runs each operator through torch; the studio runs it through its
// interpreter's kernels (engine/run), whose results agree with ExecuTorch's
// portable kernels. Views, reshapes and same-dtype copies share their input's
// bytes instead of copying them.
#include <algorithm>
#include <map>
#include <set>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/decompositions/Decomposition.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"
#include "engine/run/Interpreter.h"
#include "engine/run/Kernels.h"

namespace lstudio::passes {
namespace {

/// ExecuTorch's skip list: full, and the quantization primitives.
bool skipped(const OperatorRef& op) {
  if (op.name == "aten::full") return true;
  if (op.name.rfind("quantized_decomposed::", 0) != 0) return false;
  std::string n = op.name.substr(22);
  return n.rfind("quantize", 0) == 0 || n.rfind("dequantize", 0) == 0 || n.rfind("choose_qparams", 0) == 0;
}

/// torch's Node.is_impure: the schema writes an argument, or torch tags the operator
/// nondeterministic_seeded (it draws from the random generator).
bool impure(const OpSchema& s) {
  static const std::set<std::string> random = {
      "alpha_dropout", "bernoulli", "cauchy", "dropout", "exponential", "geometric", "gru", "log_normal",
      "lstm", "multinomial", "native_dropout", "normal", "poisson", "rand", "rand_like", "randint",
      "randint_like", "randn", "randn_like", "randperm", "rnn_relu", "rnn_tanh", "rrelu_with_noise",
      "rrelu_with_noise_functional", "uniform", "_fused_dropout", "_standard_gamma"};
  if (s.ns == "aten" && random.count(s.name)) return true;
  return std::any_of(s.arguments.begin(), s.arguments.end(), [](const SchemaArgument& a) { return a.isWrite; });
}

bool contiguous(const TensorSpec& t) {
  for (size_t d = 0; d < t.dimOrder.size(); ++d)
    if (t.dimOrder[d] != d) return false;
  return true;
}

/// Operators whose result, for a contiguous input and result of one dtype, is the
/// input's bytes: folded by sharing them.
bool sharesBytes(const Method& m, const Node& n) {
  static const std::set<std::string> same = {
      "aten::view_copy", "aten::_unsafe_view", "aten::reshape", "aten::alias_copy", "aten::clone",
      "aten::squeeze_copy", "aten::unsqueeze_copy", "aten::detach_copy", "aten::_to_copy",
      "dim_order_ops::_clone_dim_order", "dim_order_ops::_to_dim_order_copy", "aten::lift_fresh_copy"};
  if (!same.count(m.operators[n.op].name) || n.outputs.size() != 1 || n.args.empty() || n.args[0] < 0) return false;
  const TensorSpec* in = m.values[n.args[0]].tensorIf();
  const TensorSpec* out = m.values[n.outputs[0]].tensorIf();
  return in && out && contiguous(*in) && contiguous(*out) && in->dtype == out->dtype && in->nbytes() &&
         in->nbytes() == out->nbytes();
}

/// The interpreter's kernel for a functional operator's out variant, or null.
const run::Kernel* kernelFor(const OperatorRef& op) {
  const OpRegistry& reg = OpRegistry::builtin();
  const OpSchema* fn = reg.find(op.name, op.overload);
  const OpSchema* ov = fn ? reg.outVariant(*fn) : nullptr;
  return ov ? run::findKernel(ov->ns + "::" + ov->name + "." + ov->overload) : nullptr;
}

/// The constants a method starts with: parameters, lifted constants and buffers
/// nothing mutates, when they have data.
std::vector<bool> liftedConstants(const Method& m) {
  std::vector<bool> isConst(m.values.size(), false);
  for (const InputSpec& in : m.signature.inputs) {
    const TensorSpec* t = in.value >= 0 ? m.values[in.value].tensorIf() : nullptr;
    bool lifted = in.kind == InputSpec::Kind::Parameter || in.kind == InputSpec::Kind::ConstantTensor ||
                  (in.kind == InputSpec::Kind::Buffer && !isMutatedInput(m, in.value));
    if (t && lifted && !t->data.empty()) isConst[in.value] = true;
  }
  return isConst;
}

/// True when an argument is known now: a constant tensor (or a list of them), or a
/// scalar or int list that no symbol sizes.
bool constantArgument(const Method& m, const std::vector<bool>& isConst, ValueId v) {
  if (v < 0) return true;
  const Value& x = m.values[v];
  if (x.symbolic) return false;
  if (x.isTensor()) return static_cast<bool>(isConst[v]);
  if (auto* l = std::get_if<IntList>(&x.payload))
    return std::all_of(l->items.begin(), l->items.end(), [&](ValueId i) { return !m.values[i].symbolic; });
  if (auto* l = std::get_if<TensorList>(&x.payload))
    return std::all_of(l->items.begin(), l->items.end(), [&](ValueId i) { return static_cast<bool>(isConst[i]); });
  if (auto* l = std::get_if<OptionalTensorList>(&x.payload))
    return std::all_of(l->items.begin(), l->items.end(), [&](ValueId i) { return i < 0 || isConst[i]; });
  return true;
}

/// The nodes of one method computed from constants only.
struct Folding {
  std::vector<bool> foldedNode;
  std::vector<ValueId> order;          // folded values in node order
  std::map<ValueId, ValueId> aliasOf;  // a result that shares its input's bytes -> that input
  std::vector<size_t> computed;        // the nodes a kernel computes, in order
  std::set<std::string> unevaluated;   // operators on constants only that no kernel computes
  std::vector<std::string> tooLarge;   // nodes left because their results pass the byte budget
  uint64_t budget = 0;                 // foldingBudget()
};

/// The most new bytes folding may make in a method: four times its constants, at least
/// 1 GiB. ExecuTorch sets no bound; a program from an untrusted file whose specs claim a
/// huge arange or expand on constants is then left to compute at run time, and said so,
/// instead of exhausting the machine while it is lowered.
uint64_t foldingBudget(const Method& m, const std::vector<bool>& isConst) {
  uint64_t constants = 0;
  for (size_t v = 0; v < m.values.size(); ++v)
    if (isConst[v] && m.values[v].isTensor()) constants += m.values[v].tensor().data.size;
  return std::max<uint64_t>(uint64_t(1) << 30, constants > UINT64_MAX / 4 ? UINT64_MAX : constants * 4);
}

/// Folds, in node order, every node whose arguments are constants (earlier folded
/// results included) and whose result shares its input's bytes or a kernel computes.
Folding foldNodes(const Method& m, std::vector<bool>& isConst) {
  Folding f;
  f.foldedNode.assign(m.nodes.size(), false);
  const uint64_t budget = f.budget = foldingBudget(m, isConst);
  uint64_t made = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    const OperatorRef* op = operatorOf(m, n);
    const OpSchema* schema = op ? OpRegistry::builtin().find(op->name, op->overload) : nullptr;
    if (!op || skipped(*op) || (schema && impure(*schema)) || n.outputs.empty()) continue;
    if (!std::all_of(n.args.begin(), n.args.end(), [&](ValueId v) { return constantArgument(m, isConst, v); })) continue;
    bool sizedTensors = std::all_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) {
      const TensorSpec* t = m.values[v].tensorIf();
      return t && !m.values[v].symbolic && t->nbytes();
    });
    if (!sizedTensors) continue;
    if (sharesBytes(m, n)) {
      f.aliasOf[n.outputs[0]] = n.args[0];
    } else if (schema && kernelFor(*op)) {
      uint64_t bytes = 0;
      for (ValueId v : n.outputs) bytes += (*m.values[v].tensor().nbytes() + 63) / 64 * 64;
      if (bytes > budget - made) {
        f.tooLarge.push_back(n.name);
        continue;
      }
      made += bytes;
      f.computed.push_back(i);
    } else {
      f.unevaluated.insert(op->fullName());
      continue;
    }
    f.foldedNode[i] = true;
    for (ValueId v : n.outputs) {
      isConst[v] = true;
      f.order.push_back(v);
    }
  }
  return f;
}

/// Who still reads each value once folded nodes are gone.
std::vector<int> liveReadsAfter(const Method& m, const std::vector<bool>& foldedNode) {
  std::vector<int> liveReads(m.values.size(), 0);
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!foldedNode[i])
      for (ValueId v : readsOf(m, m.nodes[i])) ++liveReads[v];
  for (ValueId v : m.outputs)
    if (v >= 0) ++liveReads[v];
  return liveReads;
}

/// The folded values something still reads become lifted constants
/// "_prop_tensor_constant<N>" over `bytes`, in ExecuTorch's (reverse) order; returns their input specs.
std::vector<InputSpec> liftFolded(Method& m, const Folding& f, const std::vector<int>& liveReads,
                                  const std::map<ValueId, Bytes>& bytes) {
  std::set<std::string> names;
  size_t constants = 0;
  for (const InputSpec& in : m.signature.inputs) {
    names.insert(in.target);
    if (in.kind == InputSpec::Kind::ConstantTensor) ++constants;
  }
  std::vector<InputSpec> added;
  for (auto it = f.order.rbegin(); it != f.order.rend(); ++it) {
    if (!liveReads[*it]) continue;
    std::string fqn = "_prop_tensor_constant" + std::to_string(constants);
    while (names.count(fqn)) fqn = "_prop_tensor_constant" + std::to_string(++constants);
    names.insert(fqn);
    ++constants;
    TensorSpec& t = m.values[*it].tensor();
    t.fqn = fqn;
    t.slot.reset();
    t.strides.clear();
    t.strides = decompositions::stridesOf(t);
    t.requiresGrad = false;  // a computed constant, not a parameter (ExecuTorch's const prop)
    t.data = bytes.at(*it);
    m.values[*it].name = fqn;
    added.push_back(InputSpec{InputSpec::Kind::ConstantTensor, *it, fqn, true});
  }
  return added;
}

/// Constant inputs only folded nodes read leave the program; the new constants go
/// before the first user input. Returns how many inputs left.
size_t rebuildInputs(Method& m, const std::vector<bool>& isConst, const std::vector<int>& liveReads,
                     const std::vector<InputSpec>& added) {
  std::vector<InputSpec> inputs;
  for (const InputSpec& in : m.signature.inputs)
    if (in.value < 0 || !(isConst[in.value] && !liveReads[in.value] && in.kind != InputSpec::Kind::User))
      inputs.push_back(in);
  size_t firstUser = 0;
  while (firstUser < inputs.size() && inputs[firstUser].kind != InputSpec::Kind::User) ++firstUser;
  inputs.insert(inputs.begin() + static_cast<std::ptrdiff_t>(firstUser), added.begin(), added.end());
  size_t removedInputs = m.signature.inputs.size() + added.size() - inputs.size();
  m.signature.inputs = std::move(inputs);
  m.inputs.clear();
  for (const InputSpec& in : m.signature.inputs) m.inputs.push_back(in.value);
  return removedInputs;
}

/// A constant returned as an output is returned through a clone (a planned copy).
void cloneConstantOutputs(Method& m, const std::vector<bool>& isConst) {
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    ValueId v = m.outputs[o];
    const InputSpec* in = inputSpecOf(m, v);
    if (!in || in->kind == InputSpec::Kind::User || !isConst[v]) continue;
    const OpSchema* clone = OpRegistry::builtin().find("aten::clone", "");
    if (!clone) continue;
    Value copy = m.values[v];
    TensorSpec& t = copy.tensor();
    t.data = {};
    t.fqn.clear();
    copy.name += "_clone";
    ValueId c = addValue(m, std::move(copy));
    Node n;
    n.name = m.values[c].name;
    n.args = {v, addValue(m, Value{None{}, {}})};
    n.argNames = {"self", "memory_format"};
    n.outputs = {c};
    setOperator(m, n, *clone);
    m.nodes.push_back(std::move(n));
    m.outputs[o] = c;
    for (OutputSpec& s : m.signature.outputs)
      if (s.value == v) s.value = c;
  }
}

/// Computes the folded nodes of `m` into one new allocation (64-byte aligned each result)
/// and returns where every folded value's bytes are: a kernel's result there, a shared result
/// its input's bytes.
Result<std::map<ValueId, Bytes>> computeFolded(Program& p, const Method& m, const std::vector<bool>& isConst,
                                                const Folding& f, const ExecutorchBackendConfig& config) {
  // The computed nodes alone, as out variants: what the kernels take.
  Program calls;
  calls.path = p.path;
  calls.methods.push_back(m);
  Method& cm = calls.methods[0];
  cm.nodes.clear();
  for (size_t i : f.computed) cm.nodes.push_back(m.nodes[i]);
  PassOutcome outVar = toOutVar()->run(calls, config);
  if (outVar.failed)
    return Error{ErrorCode::Unsupported, p.path, std::nullopt, "folding constants in " + m.name, "",
                 outVar.diagnostics.empty() ? "ToOutVarPass failed" : outVar.diagnostics.front().message};
  LiftedScalars scalars = liftScalarTensorArguments(cm);  // kernels read a number in a Tensor slot as a tensor
  std::map<ValueId, uint64_t> offset;
  uint64_t total = 0;
  for (size_t i : f.computed)
    for (ValueId v : m.nodes[i].outputs) {
      offset[v] = total;
      total += (*m.values[v].tensor().nbytes() + 63) / 64 * 64;
    }
  std::map<ValueId, Bytes> bytes;
  Status status = Ok{};
  auto fill = [&](uint8_t* base) {
    std::vector<uint8_t*> at(cm.values.size(), nullptr);
    for (size_t v = 0; v < m.values.size(); ++v)
      if (isConst[v] && m.values[v].isTensor()) at[v] = const_cast<uint8_t*>(m.values[v].tensor().data.data);
    for (ValueId v : scalars.values) at[v] = const_cast<uint8_t*>(cm.values[v].tensor().data.data);
    for (ValueId v : f.order) {
      auto alias = f.aliasOf.find(v);
      at[v] = alias != f.aliasOf.end() ? at[alias->second] : base + offset.at(v);
    }
    std::vector<size_t> all(cm.nodes.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    status = run::runKernelCalls(cm, all, [&](ValueId v) { return at[v]; });
    for (ValueId v : f.order) {
      uint64_t size = *m.values[v].tensor().nbytes();
      ValueId root = v;
      for (auto a = f.aliasOf.find(root); a != f.aliasOf.end(); a = f.aliasOf.find(root)) root = a->second;
      if (auto o = offset.find(root); o != offset.end()) bytes[v] = Bytes{at[v], size, o->second};
      else bytes[v] = Bytes{at[v], size, m.values[root].tensor().data.fileOffset};
    }
  };
  if (total) p.derivedData.push_back(MappedFile::generated(p.path + " (folded constants)", total, fill));
  else fill(nullptr);
  if (!status) {
    Error e = status.error();
    e.file = p.path;
    e.what = m.name + ": " + e.what;
    return e;
  }
  return bytes;
}

/// A folded constant does not require grad, so neither does a result computed from no
/// tensor that does: ExecuTorch's SpecPropPass re-traces the graph after constant
/// propagation and gives it that. (Only true turns to false: an operator torch does not
/// differentiate kept false already.)
void dropGradWithoutSource(Method& m) {
  for (const Node& n : m.nodes) {
    bool fromGrad = false;
    for (ValueId v : readsOf(m, n))
      if (const TensorSpec* t = m.values[v].tensorIf(); t && t->requiresGrad) fromGrad = true;
    if (fromGrad) continue;
    for (ValueId v : n.outputs)
      if (TensorSpec* t = std::get_if<TensorSpec>(&m.values[v].payload)) t->requiresGrad = false;
  }
}

class ConstantProp : public Pass {
 public:
  std::string name() const override { return "ConstantPropPass"; }
  std::string description() const override {
    return "nodes computed from constants only become new constants (do_quant_fusion_and_const_prop)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.doQuantFusionAndConstProp; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      std::vector<bool> isConst = liftedConstants(m);
      Folding f = foldNodes(m, isConst);
      auto bytes = computeFolded(p, m, isConst, f, config);
      if (!bytes) {
        out.failed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Error, -1, bytes.error().message()});
        return out;
      }
      std::vector<int> liveReads = liveReadsAfter(m, f.foldedNode);
      std::vector<InputSpec> added = liftFolded(m, f, liveReads, bytes.value());
      size_t removedInputs = rebuildInputs(m, isConst, liveReads, added);
      size_t k = 0;
      size_t before = m.nodes.size();
      std::erase_if(m.nodes, [&](const Node&) { return f.foldedNode[k++]; });
      cloneConstantOutputs(m, isConst);
      if (before != m.nodes.size()) dropGradWithoutSource(m);
      if (before != m.nodes.size() || !added.empty() || removedInputs) {
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(before - m.nodes.size()) + " nodes folded, " +
                                       std::to_string(added.size()) + " new constants, " +
                                       std::to_string(removedInputs) + " constant inputs dropped"});
      }
      if (!f.unevaluated.empty()) {
        std::string ops;
        for (const std::string& o : f.unevaluated) ops += (ops.empty() ? "" : ", ") + o;
        out.diagnostics.push_back({Diagnostic::Severity::Warning, -1,
                                   m.name + ": left unfolded, no kernel to compute them (ExecuTorch folds them): " + ops});
      }
      if (!f.tooLarge.empty())
        out.diagnostics.push_back({Diagnostic::Severity::Warning, -1,
                                   m.name + ": " + std::to_string(f.tooLarge.size()) + " nodes left unfolded (first '" +
                                       f.tooLarge.front() + "'): their results would pass " +
                                       std::to_string(f.budget >> 20) +
                                       " MiB of new constants (4x the program's constants, at least 1 GiB)"});
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> constantProp() { return std::make_shared<ConstantProp>(); }

}  // namespace lstudio::passes
