// constant_prop_pass (the second half of do_quant_fusion_and_const_prop): a
// node whose inputs are all constants (parameters, buffers nothing mutates,
// lifted constants, earlier folded nodes) is computed now and becomes a new
// lifted constant "_prop_tensor_constant<N>" placed before the first user
// input; constants only folded nodes read leave the signature. As in
// ExecuTorch, full and the quantize/dequantize primitives are never folded,
// and a constant returned as an output is returned through a clone.
// ExecuTorch runs any operator through torch; the studio evaluates the
// layout operators (permute/transpose/t/expand copy into new bytes; view,
// reshape, squeeze, unsqueeze, alias, clone and same-dtype copies share the
// input's bytes) and leaves other operators unfolded.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "engine/ir/OpRegistry.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

bool skipped(const OperatorRef& op) {
  if (op.name == "aten::full") return true;
  if (op.name.rfind("quantized_decomposed::", 0) != 0) return false;
  std::string n = op.name.substr(22);
  return n.rfind("quantize", 0) == 0 || n.rfind("dequantize", 0) == 0 || n.rfind("choose_qparams", 0) == 0;
}

bool contiguous(const TensorSpec& t) {
  for (size_t d = 0; d < t.dimOrder.size(); ++d)
    if (t.dimOrder[d] != d) return false;
  return true;
}

std::optional<int64_t> intArg(const Method& m, const Node& n, size_t k) {
  if (k >= n.args.size()) return std::nullopt;
  auto x = numberOf(m, n.args[k]);
  return x ? std::optional<int64_t>(static_cast<int64_t>(*x)) : std::nullopt;
}

std::optional<std::vector<int64_t>> intsArg(const Method& m, const Node& n, size_t k) {
  if (k >= n.args.size() || n.args[k] < 0) return std::nullopt;
  auto* l = std::get_if<IntList>(&m.values[n.args[k]].payload);
  if (!l) return std::nullopt;
  std::vector<int64_t> r;
  for (ValueId v : l->items) {
    auto x = numberOf(m, v);
    if (!x) return std::nullopt;
    r.push_back(static_cast<int64_t>(*x));
  }
  return r;
}

template <typename T>
void gatherTyped(uint8_t* dstBytes, const uint8_t* srcBytes, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& stride) {
  T* dst = reinterpret_cast<T*>(dstBytes);
  const T* src = reinterpret_cast<const T*>(srcBytes);
  const size_t rank = sizes.size();
  if (rank == 0) {
    std::memcpy(dst, src, sizeof(T));
    return;
  }
  if (rank == 2) {  // the common case (a transposed weight): tiles keep both sides in cache
    const int64_t rows = sizes[0], cols = sizes[1], s0 = stride[0], s1 = stride[1];
    constexpr int64_t kTile = 32;
    for (int64_t ib = 0; ib < rows; ib += kTile)
      for (int64_t jb = 0; jb < cols; jb += kTile)
        for (int64_t i = ib; i < std::min(rows, ib + kTile); ++i)
          for (int64_t j = jb; j < std::min(cols, jb + kTile); ++j) dst[i * cols + j] = src[i * s0 + j * s1];
    return;
  }
  // Odometer over the outer dimensions, a strided row at a time.
  const int64_t inner = sizes[rank - 1], innerStride = stride[rank - 1];
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= static_cast<uint64_t>(sizes[d]);
  std::vector<int64_t> idx(rank - 1, 0);
  int64_t base = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < inner; ++j) dst[r * inner + j] = src[base + j * innerStride];
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < sizes[d]) {
        base += stride[d];
        break;
      }
      base -= stride[d] * (sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

/// dst[idx] = src[sum idx[d] * stride[d]] for a contiguous `dst` of `sizes`.
void gather(uint8_t* dst, const uint8_t* src, uint32_t es, const std::vector<int64_t>& sizes,
            const std::vector<int64_t>& stride) {
  switch (es) {
    case 1: return gatherTyped<uint8_t>(dst, src, sizes, stride);
    case 2: return gatherTyped<uint16_t>(dst, src, sizes, stride);
    case 4: return gatherTyped<uint32_t>(dst, src, sizes, stride);
    default: {
      struct E8 { uint64_t v; };
      struct E16 { uint64_t a, b; };
      if (es == 8) return gatherTyped<E8>(dst, src, sizes, stride);
      if (es == 16) return gatherTyped<E16>(dst, src, sizes, stride);
    }
  }
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * sizes[d];
  return s;
}

/// Where a folded value's bytes are: existing bytes (shared, never copied), or
/// new bytes number `owned` computed when the pass ends.
struct FoldRef {
  Bytes shared;
  int owned = -1;
};

/// New bytes: a strided gather from another constant.
struct NewBytes {
  FoldRef source;
  uint32_t elementSize = 0;
  std::vector<int64_t> sizes, stride;
  uint64_t size = 0;
};

/// How a layout operator computes its result from input `in`: the same bytes
/// (nullopt stride) or a gather; nullopt when the studio cannot compute it.
struct Plan {
  bool same = false;
  std::vector<int64_t> stride;
};
std::optional<Plan> evaluate(const Method& m, const Node& n, const TensorSpec& in, const TensorSpec& out) {
  const std::string& op = m.operators[n.op].name;
  if (!contiguous(in) || !contiguous(out) || in.dtype != out.dtype) return std::nullopt;
  static const std::set<std::string> sameBytes = {
      "aten::view_copy", "aten::_unsafe_view", "aten::reshape", "aten::alias_copy", "aten::clone",
      "aten::squeeze_copy", "aten::unsqueeze_copy", "aten::detach_copy", "aten::_to_copy",
      "dim_order_ops::_clone_dim_order", "dim_order_ops::_to_dim_order_copy", "aten::lift_fresh_copy"};
  if (sameBytes.count(op)) {
    if (in.nbytes() != out.nbytes()) return std::nullopt;
    return Plan{true, {}};
  }
  const uint32_t es = elementSize(in.dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16) return std::nullopt;
  std::vector<int64_t> inStride = contiguousStrides(in.sizes);
  const size_t rank = in.sizes.size();
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  if (op == "aten::permute_copy") {
    auto dims = intsArg(m, n, 1);
    if (!dims || dims->size() != rank) return std::nullopt;
    perm = *dims;
  } else if (op == "aten::transpose_copy" || op == "aten::t_copy") {
    int64_t a = 0, b = rank < 2 ? 0 : 1;
    if (op == "aten::transpose_copy") {
      auto x = intArg(m, n, 1), y = intArg(m, n, 2);
      if (!x || !y) return std::nullopt;
      a = *x, b = *y;
    }
    if (a < 0) a += static_cast<int64_t>(rank);
    if (b < 0) b += static_cast<int64_t>(rank);
    if (rank > 0 && (a >= static_cast<int64_t>(rank) || b >= static_cast<int64_t>(rank) || a < 0 || b < 0))
      return std::nullopt;
    if (rank > 0) std::swap(perm[a], perm[b]);
  } else if (op == "aten::expand_copy") {
    if (out.sizes.size() < rank) return std::nullopt;
    std::vector<int64_t> stride(out.sizes.size(), 0);
    for (size_t d = 0; d < rank; ++d) {
      size_t od = out.sizes.size() - rank + d;
      if (in.sizes[d] == out.sizes[od]) stride[od] = inStride[d];
      else if (in.sizes[d] != 1) return std::nullopt;
    }
    return Plan{false, stride};
  } else {
    return std::nullopt;
  }
  if (out.sizes.size() != rank) return std::nullopt;
  std::vector<int64_t> stride(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t p = perm[d] < 0 ? perm[d] + static_cast<int64_t>(rank) : perm[d];
    if (p < 0 || p >= static_cast<int64_t>(rank) || in.sizes[p] != out.sizes[d]) return std::nullopt;
    stride[d] = inStride[p];
  }
  return Plan{false, stride};
}

/// A folded value whose bytes are new: where they go once computed.
struct Placed {
  size_t method;
  ValueId value;
  int owned;
};

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
  std::map<ValueId, FoldRef> folded;
  std::vector<bool> foldedNode;
  std::vector<ValueId> order;  // folded values in node order
};

/// Folds, in node order, every node whose arguments are constants (earlier folded
/// results included) and whose layout operator the studio evaluates; new bytes are
/// appended to `made`.
Folding foldNodes(const Method& m, std::vector<bool>& isConst, std::vector<NewBytes>& made) {
  Folding f;
  f.foldedNode.assign(m.nodes.size(), false);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    const OperatorRef* op = operatorOf(m, n);
    if (!op || skipped(*op) || n.outputs.size() != 1 || n.args.empty() || n.args[0] < 0) continue;
    if (!std::all_of(n.args.begin(), n.args.end(), [&](ValueId v) { return constantArgument(m, isConst, v); })) continue;
    const TensorSpec* in = m.values[n.args[0]].tensorIf();
    const TensorSpec* res = m.values[n.outputs[0]].tensorIf();
    if (!in || !res) continue;
    auto plan = evaluate(m, n, *in, *res);
    if (!plan) continue;
    FoldRef source;
    if (auto it = f.folded.find(n.args[0]); it != f.folded.end()) source = it->second;
    else source.shared = in->data;
    FoldRef result = source;  // same bytes: no copy, not even of new bytes
    if (!plan->same) {
      made.push_back(NewBytes{source, elementSize(in->dtype), res->sizes, plan->stride, res->nbytes().value_or(0)});
      result = FoldRef{{}, static_cast<int>(made.size() - 1)};
    }
    f.folded[n.outputs[0]] = result;
    f.foldedNode[i] = true;
    isConst[n.outputs[0]] = true;
    f.order.push_back(n.outputs[0]);
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
/// "_prop_tensor_constant<N>", in ExecuTorch's (reverse) order; returns their input specs.
std::vector<InputSpec> liftFolded(Method& m, size_t method, const Folding& f, const std::vector<int>& liveReads,
                                  std::vector<Placed>& placed) {
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
    t.strides = contiguousStrides(t.sizes);
    t.requiresGrad = false;  // a computed constant, not a parameter (ExecuTorch's const prop)
    m.values[*it].name = fqn;
    const FoldRef& ref = f.folded.at(*it);
    if (ref.owned < 0) t.data = ref.shared;
    else placed.push_back(Placed{method, *it, ref.owned});
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

/// One owned allocation for every new constant (64-byte aligned each), filled in
/// node order so a gather may read an earlier result.
void computeNewBytes(Program& p, const std::vector<NewBytes>& made, const std::vector<Placed>& placed) {
  uint64_t total = 0;
  std::vector<uint64_t> offsets;
  for (const NewBytes& nb : made) {
    offsets.push_back(total);
    total += (nb.size + 63) / 64 * 64;
  }
  auto file = MappedFile::generated(p.path + " (folded constants)", total, [&](uint8_t* base) {
    for (size_t i = 0; i < made.size(); ++i) {
      const FoldRef& s = made[i].source;
      const uint8_t* src = s.owned >= 0 ? base + offsets[s.owned] : s.shared.data;
      gather(base + offsets[i], src, made[i].elementSize, made[i].sizes, made[i].stride);
    }
  });
  for (const Placed& x : placed)
    p.methods[x.method].values[x.value].tensor().data =
        Bytes{file->data() + offsets[x.owned], made[x.owned].size, offsets[x.owned]};
  p.derivedData.push_back(std::move(file));
}

class ConstantProp : public Pass {
 public:
  std::string name() const override { return "ConstantPropPass"; }
  std::string description() const override {
    return "nodes computed from constants only become new constants (do_quant_fusion_and_const_prop)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.doQuantFusionAndConstProp; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig&) const override {
    PassOutcome out;
    std::vector<NewBytes> made;  // computed into one owned allocation when the pass ends
    std::vector<Placed> placed;
    for (size_t mi = 0; mi < p.methods.size(); ++mi) {
      Method& m = p.methods[mi];
      std::vector<bool> isConst = liftedConstants(m);
      Folding f = foldNodes(m, isConst, made);
      std::vector<int> liveReads = liveReadsAfter(m, f.foldedNode);
      std::vector<InputSpec> added = liftFolded(m, mi, f, liveReads, placed);
      size_t removedInputs = rebuildInputs(m, isConst, liveReads, added);
      size_t k = 0;
      size_t before = m.nodes.size();
      std::erase_if(m.nodes, [&](const Node&) { return f.foldedNode[k++]; });
      cloneConstantOutputs(m, isConst);
      if (before != m.nodes.size() || !added.empty() || removedInputs) {
        out.changed = true;
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": " + std::to_string(f.order.size()) + " nodes folded, " +
                                       std::to_string(added.size()) + " new constants, " +
                                       std::to_string(removedInputs) + " constant inputs dropped"});
      }
    }
    if (!made.empty()) computeNewBytes(p, made, placed);
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> constantProp() { return std::make_shared<ConstantProp>(); }

}  // namespace lstudio::passes
