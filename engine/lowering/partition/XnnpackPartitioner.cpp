// XnnpackPartitioner as ExecuTorch 1.5 has it (backends/xnnpack/partition/config/*.py,
// exir/backend/canonical_partitioners/config_partitioner.py and group_partitioner.py),
// in the studio's IR. torch.fx's view of a graph is kept where the checks depend on it:
// a node's users include the graph's output, its "input nodes" are the distinct tensors
// (and symbolic sizes) it reads, and weights are placeholders that a partition can own.
#include "engine/lowering/partition/XnnpackPartitioner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "engine/ir/OpRegistry.h"
#include "engine/ir/ScalarType.h"
#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio {
namespace {

using passes::operatorOf;

enum Precision : uint8_t { kFp32 = 1, kStaticQuant = 2, kDynamicQuant = 4 };

const char* precisionName(uint8_t p) {
  return p == kFp32 ? "FP32" : p == kStaticQuant ? "STATIC_QUANT" : "DYNAMIC_QUANT";
}

/// ExecuTorch's format_target_name: the operator without its namespace, "add.Tensor".
std::string formattedName(const OperatorRef& op) {
  const size_t sep = op.name.find("::");
  const std::string bare = sep == std::string::npos ? op.name : op.name.substr(sep + 2);
  return bare + "." + (op.overload.empty() ? "default" : op.overload);
}

bool isQuantName(const std::string& n) {
  static const char* k[] = {"quantize_per_tensor.tensor", "quantize_per_tensor.default", "quantize_per_channel.default",
                            "quantize_per_channel_group.default", "quantize_per_token.default", "quantize_affine.default"};
  return std::any_of(std::begin(k), std::end(k), [&](const char* x) { return n == x; });
}
bool isDequantName(const std::string& n) {
  static const char* k[] = {"dequantize_per_tensor.tensor", "dequantize_per_tensor.default",
                            "dequantize_per_channel.default", "dequantize_per_channel_group.default",
                            "dequantize_per_token.default", "dequantize_affine.default"};
  return std::any_of(std::begin(k), std::end(k), [&](const char* x) { return n == x; });
}
bool isQparamName(const std::string& n) {
  return n == "choose_qparams.tensor" || n == "choose_qparams_per_token_asymmetric.default" ||
         n == "choose_qparams_affine.default";
}

/// The method as torch.fx shows it to the partitioner.
struct FxView {
  const Method& m;
  std::vector<int> producer;            ///< value -> node writing it, -1
  std::vector<std::vector<int>> users;  ///< node -> distinct nodes reading one of its results, in order
  std::vector<std::vector<int>> readers;  ///< value -> nodes reading it (for weights)
  std::vector<bool> feedsOutput;        ///< node -> a result is a method output (fx's output node is a user)
  std::vector<std::string> names;       ///< node -> formatted operator name, empty for non-kernels
  std::vector<uint8_t> param;           ///< value -> 1: a parameter, buffer or constant (is_param_node)

  explicit FxView(const Method& method) : m(method) {
    const size_t nv = m.values.size(), nn = m.nodes.size();
    producer.assign(nv, -1);
    readers.assign(nv, {});
    users.assign(nn, {});
    feedsOutput.assign(nn, false);
    names.assign(nn, {});
    param.assign(nv, 0);
    for (size_t i = 0; i < nn; ++i) {
      for (ValueId o : m.nodes[i].outputs)
        if (o >= 0 && size_t(o) < nv) producer[o] = int(i);
      if (const OperatorRef* op = operatorOf(m, m.nodes[i])) names[i] = formattedName(*op);
    }
    for (size_t i = 0; i < nn; ++i)
      for (ValueId v : passes::readsOf(m, m.nodes[i])) {
        if (v < 0 || size_t(v) >= nv) continue;
        if (readers[v].empty() || readers[v].back() != int(i)) readers[v].push_back(int(i));
        const int p = producer[v];
        if (p >= 0 && p != int(i) && std::find(users[p].begin(), users[p].end(), int(i)) == users[p].end())
          users[p].push_back(int(i));
      }
    std::vector<ValueId> outs;
    for (ValueId o : m.outputs) m.appendTensors(o, outs);
    for (ValueId o : outs)
      if (o >= 0 && size_t(o) < nv && producer[o] >= 0) feedsOutput[producer[o]] = true;
    for (const InputSpec& s : m.signature.inputs)
      if (s.value >= 0 && size_t(s.value) < nv && s.kind != InputSpec::Kind::User && s.kind != InputSpec::Kind::Token)
        param[s.value] = 1;
    std::vector<bool> input(nv, false);
    for (ValueId v : m.inputs)
      if (v >= 0 && size_t(v) < nv) input[v] = true;
    for (size_t v = 0; v < nv; ++v)  // a constant the graph reads without a placeholder (get_attr)
      if (const TensorSpec* t = m.values[v].tensorIf(); t && !input[v] && producer[v] < 0 && !readers[v].empty())
        param[v] = 1;
  }

  size_t userCount(int node) const { return users[node].size() + (feedsOutput[node] ? 1 : 0); }
  /// The one node reading `node`'s results; -1 when there are more, none, or the output reads them.
  int soleUser(int node) const { return userCount(node) == 1 && !feedsOutput[node] ? users[node][0] : -1; }
  bool isParam(ValueId v) const { return v >= 0 && size_t(v) < param.size() && param[v]; }
  /// The name of the operator writing `v` ("dequantize_per_tensor.default"), or empty.
  const std::string& producerName(ValueId v) const {
    static const std::string none;
    return v >= 0 && size_t(v) < producer.size() && producer[v] >= 0 ? names[producer[v]] : none;
  }
  bool isDequant(ValueId v) const { return isDequantName(producerName(v)); }
  bool isQuant(ValueId v) const { return isQuantName(producerName(v)); }
  const TensorSpec* tensor(ValueId v) const { return v >= 0 && size_t(v) < m.values.size() ? m.values[v].tensorIf() : nullptr; }

  /// torch.fx's node.args[k] by the schema's position (kNoValue when the call leaves it out).
  ValueId arg(int node, size_t k) const {
    const Node& n = m.nodes[node];
    return k < n.args.size() ? n.args[k] : kNoValue;
  }
  ValueId argNamed(int node, const std::string& name) const {
    const Node& n = m.nodes[node];
    for (size_t k = 0; k < n.args.size() && k < n.argNames.size(); ++k)
      if (n.argNames[k] == name) return n.args[k];
    return kNoValue;
  }
  bool isNone(ValueId v) const { return v < 0 || m.values[v].kind() == ValueKind::None; }
  std::optional<int64_t> intOf(ValueId v) const {
    if (v < 0 || m.values[v].symbolic) return std::nullopt;
    if (auto* i = std::get_if<int64_t>(&m.values[v].payload)) return *i;
    return std::nullopt;
  }
  std::optional<double> numberOf(ValueId v) const {
    if (v < 0 || m.values[v].symbolic) return std::nullopt;
    return passes::numberOf(m, v);
  }
  std::optional<std::vector<int64_t>> intsOf(ValueId v) const {
    if (v < 0) return std::nullopt;
    if (auto i = intOf(v)) return std::vector<int64_t>{*i};
    const auto* l = std::get_if<IntList>(&m.values[v].payload);
    if (!l) return std::nullopt;
    std::vector<int64_t> out;
    for (ValueId x : l->items) {
      auto i = intOf(x);
      if (!i) return std::nullopt;
      out.push_back(*i);
    }
    return out;
  }
  /// torch.fx's all_input_nodes: the distinct tensors and symbolic numbers the node reads.
  std::vector<ValueId> inputNodes(int node) const {
    std::vector<ValueId> out;
    auto add = [&](ValueId v) {
      if (v < 0 || size_t(v) >= m.values.size()) return;
      const Value& x = m.values[v];
      if (!x.isTensor() && !x.symbolic) return;
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    };
    for (ValueId a : m.nodes[node].args) {
      if (a < 0) continue;
      const Value& x = m.values[a];
      if (auto* l = std::get_if<TensorList>(&x.payload)) for (ValueId i : l->items) add(i);
      else if (auto* o = std::get_if<OptionalTensorList>(&x.payload)) for (ValueId i : o->items) add(i);
      else if (auto* il = std::get_if<IntList>(&x.payload)) for (ValueId i : il->items) add(i);
      else add(a);
    }
    return out;
  }
};

bool hasUnbackedSize(const TensorSpec& t) {
  return std::any_of(t.symbols.begin(), t.symbols.end(), [](const std::string& s) { return !s.empty() && s[0] == 'u'; });
}
bool hasSymbolicSize(const TensorSpec& t) {
  return std::any_of(t.symbols.begin(), t.symbols.end(), [](const std::string& s) { return !s.empty(); });
}

struct Check {
  bool ok = true;
  std::string why;
  static Check no(std::string w) { return {false, std::move(w)}; }
};

/// What a GEMM match takes with it (get_deps): bias, weight, activation and output nodes.
struct Deps {
  bool ok = true;
  std::string why;
  std::vector<int> nodes;        ///< operator nodes
  std::vector<ValueId> weights;  ///< parameter placeholders
};

enum class DepsKind : uint8_t { Generic, Gemm, BatchNorm, MaxDim, Prelu, NodeOnly, Nothing };

struct Config {
  const char* className;
  uint8_t supported;
  DepsKind deps = DepsKind::Generic;
  int weightIdx = -1, biasIdx = -1, actIdx = -1;  // GEMMs
  /// The op's own checks after the common ones (empty why: accepted).
  std::function<Check(const FxView&, int)> extra;
  bool keptWhole = false;       ///< get_original_aten: to_edge_transform_and_lower keeps it undecomposed
  bool fusesRelu = false;       ///< AddConfig's fused_act
  bool skipsCommonChecks = false;
  bool quantOp = false;         ///< q/dq/qparam: int8-family dtypes allowed
};

/// A node's integer pair argument as XNNPACK normalises kernel/stride/padding (an int or a
/// one-element list repeated).
std::optional<std::vector<int64_t>> pair(const FxView& g, ValueId v) {
  auto xs = g.intsOf(v);
  if (!xs) return std::nullopt;
  if (xs->size() == 1) xs->push_back(xs->front());
  return xs;
}

Check meanDim(const FxView& g, int n) {
  const TensorSpec* in = g.tensor(g.arg(n, 0));
  const size_t rank = in ? in->sizes.size() : 0;
  if (rank != 4) return Check::no("mean.dim only supports averaging 4D tensors, got tensor of rank " + std::to_string(rank));
  if (ValueId d = g.argNamed(n, "dtype"); !g.isNone(d)) return Check::no("mean.dim does not support dtype");
  std::vector<int64_t> dims;
  if (ValueId dv = g.arg(n, 1); g.isNone(dv)) dims = {0, 1, 2, 3};
  else if (auto xs = g.intsOf(dv)) dims = *xs;
  else return Check::no("mean.dim has invalid dims: they are not constant");
  for (int64_t& d : dims) {
    if (d < -int64_t(rank) || d >= int64_t(rank)) return Check::no("mean.dim has invalid dims: " + std::to_string(d) + " is out of range");
    if (d < 0) d += int64_t(rank);
  }
  std::sort(dims.begin(), dims.end());
  if (dims != std::vector<int64_t>{2, 3})
    return Check::no("mean.dim only supports averaging 4D tensors across the innermost dimensions");
  auto keep = g.numberOf(g.arg(n, 2));
  if (!keep || *keep == 0) return Check::no("mean.dim only supports keepdim=True");
  return {};
}

Check avgPool(const FxView& g, int n) {
  auto kernel = pair(g, g.arg(n, 1));
  auto stride = pair(g, g.arg(n, 2));
  if (!stride || stride->empty()) stride = kernel;
  auto padding = pair(g, g.arg(n, 3));
  if (!padding || padding->empty()) padding = std::vector<int64_t>{0, 0};
  if (auto ceil = g.numberOf(g.arg(n, 4)); ceil && *ceil != 0) return Check::no("ceil mode is not supported");
  auto countPad = g.numberOf(g.arg(n, 5));
  const bool includePad = !countPad || *countPad != 0;
  if (includePad && std::any_of(padding->begin(), padding->end(), [](int64_t p) { return p != 0; }))
    return Check::no("zero-padding in the averaging calculation is not supported");
  if (ValueId d = g.arg(n, 6); !g.isNone(d) && kernel && kernel->size() >= 2)
    if (auto div = g.intOf(d); !div || *div != (*kernel)[0] * (*kernel)[1]) return Check::no("divisor override is not supported");
  return {};
}

Check maxPool(const FxView& g, int n) {
  const TensorSpec* out = g.m.nodes[n].outputs.empty() ? nullptr : g.tensor(g.m.nodes[n].outputs[0]);
  if (auto ceil = g.numberOf(g.arg(n, 5)); ceil && *ceil != 0 && out && hasSymbolicSize(*out))
    return Check::no("ceil mode is not supported for dynamic shapes");
  auto kernel = pair(g, g.arg(n, 1));
  auto stride = pair(g, g.arg(n, 2));
  if (!stride || stride->empty()) stride = kernel;
  if (kernel && stride && kernel->size() >= 2 && stride->size() >= 2 &&
      ((*stride)[0] > (*kernel)[0] || (*stride)[1] > (*kernel)[1]))
    return Check::no("stride (" + std::to_string((*stride)[0]) + ", " + std::to_string((*stride)[1]) +
                     ") must be less than or equal to kernel size (" + std::to_string((*kernel)[0]) + ", " +
                     std::to_string((*kernel)[1]) + ")");
  return {};
}

Check alphaIsOne(const FxView& g, int n, const char* op) {
  if (auto a = g.numberOf(g.argNamed(n, "alpha")); a && std::abs(*a - 1.0) > 1e-9 + 1e-9 * 1.0)
    return Check::no(std::string(op) + " node doesn't support alpha != 1");
  return {};
}

std::vector<uint8_t> dimOrderOf(const TensorSpec& t) {
  if (!t.dimOrder.empty()) return t.dimOrder;
  std::vector<uint8_t> d(t.sizes.size());
  std::iota(d.begin(), d.end(), 0);
  return d;
}

Check dimOrderPreserved(const FxView& g, int n) {
  const TensorSpec* in = g.tensor(g.arg(n, 0));
  const TensorSpec* out = g.m.nodes[n].outputs.empty() ? nullptr : g.tensor(g.m.nodes[n].outputs[0]);
  if (in && out && dimOrderOf(*in) != dimOrderOf(*out)) return Check::no("Only dim-order preserving clones are supported.");
  return {};
}

Check batchNorm(const FxView& g, int n);

const std::unordered_map<std::string, Config>& configs() {
  static const std::unordered_map<std::string, Config> table = [] {
    std::unordered_map<std::string, Config> t;
    auto generic = [&](const char* target, const char* cls, uint8_t prec, std::function<Check(const FxView&, int)> extra = {}) {
      Config c{cls, prec};
      c.extra = std::move(extra);
      return &(t[target] = c);
    };
    generic("abs.default", "AbsConfig", kFp32);
    generic("add.Tensor", "AddConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) { return alphaIsOne(g, n, "Add"); })
        ->fusesRelu = true;
    generic("sub.Tensor", "SubConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) { return alphaIsOne(g, n, "Sub"); });
    generic("mul.Tensor", "MulConfig", kFp32 | kStaticQuant);
    generic("div.Tensor", "DivConfig", kFp32);
    generic("avg_pool2d.default", "AvgPoolingConfig", kFp32, avgPool);
    generic("max_pool2d.default", "MaxPool2dConfig", kFp32 | kStaticQuant, maxPool)->keptWhole = true;
    generic("bmm.default", "BMMConfig", kFp32);
    generic("cat.default", "CatConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) {
      const size_t k = g.inputNodes(n).size();
      return k < 2 ? Check::no("only support concatenation of > 2 tensors, got " + std::to_string(k) + " tensors") : Check{};
    });
    generic("ceil.default", "CeilConfig", kFp32);
    generic("floor.default", "FloorConfig", kFp32);
    generic("clone.default", "CloneConfig", kFp32, dimOrderPreserved);
    generic("_clone_dim_order.default", "CloneDimOrderConfig", kFp32, [](const FxView& g, int n) {
      ValueId d = g.argNamed(n, "dim_order");
      if (g.isNone(d)) return Check{};
      const TensorSpec* in = g.tensor(g.arg(n, 0));
      auto order = g.intsOf(d);
      if (in && order) {
        std::vector<uint8_t> want(order->begin(), order->end());
        if (want != dimOrderOf(*in)) return Check::no("Only dim-order preserving clones are supported.");
      }
      return Check{};
    });
    generic("_to_dim_order_copy.default", "ToDimOrderCopyConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) {
      const TensorSpec* in = g.tensor(g.arg(n, 0));
      const TensorSpec* out = g.m.nodes[n].outputs.empty() ? nullptr : g.tensor(g.m.nodes[n].outputs[0]);
      if (in && out && in->dtype != out->dtype)
        return Check::no("dtype conversion from " + std::string(scalarTypeName(in->dtype)) + " to " +
                         std::string(scalarTypeName(out->dtype)) + " is not supported");
      return Check{};
    });
    generic("constant_pad_nd.default", "ConstantPadConfig", kFp32, [](const FxView& g, int n) {
      auto pad = g.intsOf(g.arg(n, 1));
      if (pad && std::any_of(pad->begin(), pad->end(), [](int64_t p) { return p < 0; }))
        return Check::no("XNNPACK does not support negative padding values");
      return Check{};
    });
    generic("clamp.default", "ClampConfig", kFp32 | kStaticQuant);
    generic("hardtanh.default", "HardtanhConfig", kFp32 | kStaticQuant);
    generic("relu.default", "ReLUConfig", kFp32 | kStaticQuant);
    for (auto [target, cls] : {std::pair{"exp.default", "ExpConfig"}, {"log.default", "LogConfig"}, {"neg.default", "NegConfig"},
                               {"tanh.default", "TanhConfig"}, {"sigmoid.default", "SigmoidConfig"}, {"sin.default", "SinConfig"},
                               {"cos.default", "CosConfig"}, {"sqrt.default", "SquareRootConfig"},
                               {"rsqrt.default", "ReciprocalSquareRootConfig"}, {"maximum.default", "MaximumConfig"},
                               {"minimum.default", "MinimumConfig"}, {"leaky_relu.default", "LeakyReLUConfig"}})
      generic(target, cls, kFp32);
    generic("gelu.default", "GeluConfig", kFp32, [](const FxView& g, int n) {
      const TensorSpec* out = g.m.nodes[n].outputs.empty() ? nullptr : g.tensor(g.m.nodes[n].outputs[0]);
      return out && out->dtype == ScalarType::Half ? Check::no("GELU does not support fp16") : Check{};
    });
    generic("hardswish.default", "HardswishConfig", kFp32)->keptWhole = true;
    generic("_softmax.default", "SoftmaxConfig", kFp32, [](const FxView& g, int n) {
      const TensorSpec* in = g.tensor(g.arg(n, 0));
      const int64_t rank = in ? int64_t(in->sizes.size()) : 0;
      auto dim = g.intOf(g.arg(n, 1));
      if (!dim || (*dim != -1 && *dim != rank - 1))
        return Check::no("dim must be the last dim, got dim = " + (dim ? std::to_string(*dim) : std::string("?")) +
                         " for tensor of rank " + std::to_string(rank));
      return Check{};
    });
    generic("permute_copy.default", "PermuteConfig", kFp32 | kStaticQuant);
    generic("pow.Tensor_Scalar", "PowConfig", kFp32, [](const FxView& g, int n) {
      ValueId e = g.arg(n, 1);
      auto i = g.intOf(e);
      if (!i) {
        auto d = g.numberOf(e);
        return Check::no("only support int powers, got " + (d ? std::to_string(*d) : std::string("a tensor")));
      }
      return *i != 2 ? Check::no("only support power == 2, got " + std::to_string(*i)) : Check{};
    });
    generic("slice_copy.Tensor", "SliceCopyConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) {
      if (auto step = g.intOf(g.arg(n, 4)); step && *step != 1) return Check::no("the step is " + std::to_string(*step) + ", not 1");
      for (auto [v, what] : {std::pair{g.arg(n, 0), "input"}, {g.m.nodes[n].outputs.empty() ? kNoValue : g.m.nodes[n].outputs[0], "output"}})
        if (const TensorSpec* t = g.tensor(v))
          for (size_t d = 0; d < t->sizes.size(); ++d)
            if ((d < t->symbols.size() && !t->symbols[d].empty()) || t->sizes[d] == 0)
              return Check::no(std::string(what) + " tensor has invalid shape, dim: " +
                               (d < t->symbols.size() && !t->symbols[d].empty() ? t->symbols[d] : std::to_string(t->sizes[d])) +
                               ". Expecting non-zero, int values.");
      return Check{};
    });
    generic("mean.dim", "MeanDimConfig", kFp32 | kStaticQuant, meanDim);
    generic("unsqueeze_copy.default", "UnsqueezeCopyConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) {
      const TensorSpec* in = g.tensor(g.arg(n, 0));
      auto dim = g.intOf(g.arg(n, 1));
      if (!in || !dim || (*dim != -1 && *dim != int64_t(in->sizes.size())))
        return Check::no("unsqueeze_copy only supported on the trailing dimension");
      return Check{};
    });
    generic("upsample_bilinear2d.vec", "UpsampleBilinear2dConfig", kFp32, [](const FxView& g, int n) {
      const TensorSpec* out = g.m.nodes[n].outputs.empty() ? nullptr : g.tensor(g.m.nodes[n].outputs[0]);
      return out && hasSymbolicSize(*out) ? Check::no("dynamic output sizes are not supported") : Check{};
    })->keptWhole = true;
    generic("view_copy.default", "ViewCopyConfig", kFp32 | kStaticQuant, [](const FxView& g, int n) {
      ValueId s = g.arg(n, 1);
      const auto* l = s >= 0 ? std::get_if<IntList>(&g.m.values[s].payload) : nullptr;
      if (!l) return Check{};
      int inferred = 0;
      for (size_t k = 0; k < l->items.size(); ++k) {
        auto i = g.intOf(l->items[k]);
        if (!i) return Check::no("Symbolic reshape is not supported: dim " + std::to_string(k) + " of the shape is symbolic");
        inferred += *i == -1;
      }
      return inferred > 1 ? Check::no("Only a single inferred dimension is supported") : Check{};
    });
    for (auto [target, cls] : {std::pair{"quantize_per_tensor.default", "QuantizedPerTensorConfig"},
                               {"dequantize_per_tensor.default", "DeQuantizedPerTensorConfig"}}) {
      Config* c = generic(target, cls, kStaticQuant);
      c->deps = DepsKind::NodeOnly;
      c->quantOp = true;
    }
    for (auto [target, cls] : {std::pair{"quantize_affine.default", "QuantizeAffineConfig"},
                               {"dequantize_affine.default", "DeQuantizeAffineConfig"},
                               {"choose_qparams_affine.default", "ChooseQParamsAffineConfig"}}) {
      Config* c = generic(target, cls, kDynamicQuant);
      c->deps = DepsKind::Nothing;
      c->skipsCommonChecks = true;
      c->keptWhole = true;
    }
    auto gemm = [&](const char* target, const char* cls, int w, int b, int a) {
      Config* c = generic(target, cls, kFp32 | kStaticQuant | kDynamicQuant);
      c->deps = DepsKind::Gemm;
      c->weightIdx = w, c->biasIdx = b, c->actIdx = a;
      return c;
    };
    gemm("linear.default", "LinearConfig", 1, 2, 0)->keptWhole = true;
    gemm("convolution.default", "ConvolutionConfig", 1, 2, 0);
    gemm("addmm.default", "AddmmConfig", 2, 0, 1);
    gemm("mm.default", "MMConfig", 1, -1, 0);
    Config* bn = generic("_native_batch_norm_legit_no_training.default", "BatchNormConfig", kFp32, batchNorm);
    bn->deps = DepsKind::BatchNorm;
    Config* maxDim = generic("max.dim", "MaxDimConfig", kFp32);
    maxDim->deps = DepsKind::MaxDim;
    maxDim->skipsCommonChecks = true;
    Config* prelu = generic("prelu.default", "PreluConfig", kFp32, [](const FxView& g, int n) {
      auto ins = g.inputNodes(n);
      return ins.size() < 2 || !g.isParam(ins[1]) ? Check::no("Prelu weight must be a parameter") : Check{};
    });
    prelu->deps = DepsKind::Prelu;
    prelu->keptWhole = true;
    return t;
  }();
  return table;
}

/// Only result 0 of a multi-result node is read (fx: every user is getitem(node, 0)).
bool onlyFirstResultRead(const FxView& g, int n) {
  const Node& node = g.m.nodes[n];
  std::vector<ValueId> outs;
  for (ValueId o : g.m.outputs) g.m.appendTensors(o, outs);
  for (size_t k = 1; k < node.outputs.size(); ++k) {
    ValueId o = node.outputs[k];
    if (o >= 0 && (!g.readers[o].empty() || std::find(outs.begin(), outs.end(), o) != outs.end())) return false;
  }
  return true;
}

Check batchNorm(const FxView& g, int n) {
  // can_decompose, with its reasons; else can_fuse into the conv / linear before it.
  auto decompose = [&]() -> Check {
    const TensorSpec* in = g.tensor(g.arg(n, 0));
    const size_t rank = in ? in->sizes.size() : 0;
    if (rank < 2 || rank > 4) return Check::no("Unsupported input rank " + std::to_string(rank) + " for XNN batch norm operator.");
    if (!onlyFirstResultRead(g, n)) return Check::no("Batch norm users must only access the output tensor.");
    if (in->symbols.size() > 1 && !in->symbols[1].empty()) return Check::no("Channel dimension must be statically known.");
    if (ValueId w = g.arg(n, 1); !g.isNone(w) && !g.isParam(w)) return Check::no("Batch norm affine weight must be static.");
    if (ValueId b = g.arg(n, 2); !g.isNone(b) && !g.isParam(b)) return Check::no("Batch norm affine bias must be static.");
    if (!g.isParam(g.arg(n, 3)) || !g.isParam(g.arg(n, 4))) return Check::no("Batch norm running mean and variance must be static.");
    if (const Node& node = g.m.nodes[n]; !node.args.empty() && g.m.values[node.args.back()].symbolic)
      return Check::no("Batch norm epsilon must be static.");
    return {};
  };
  Check d = decompose();
  if (d.ok) return d;
  auto ins = g.inputNodes(n);
  const int before = ins.empty() ? -1 : g.producer[ins[0]];
  if (before >= 0 && (g.names[before] == "convolution.default" || g.names[before] == "linear.default") &&
      onlyFirstResultRead(g, n) && g.isParam(g.arg(before, 1)) && g.isParam(g.arg(n, 1))) {
    const TensorSpec* convIn = g.tensor(g.arg(before, 0));
    if (g.names[before] == "linear.default" || (convIn && (convIn->sizes.size() == 3 || convIn->sizes.size() == 4))) return {};
  }
  return Check::no("BatchNorm cannot be decomposed (" + d.why + ") or fused with the node before it");
}

/// The partitioner's checks and the nodes each match takes, for one XnnpackPartitioner.
class Partitioner {
 public:
  Partitioner(const FxView& g, const PartitionerSpec& spec) : g_(g), spec_(spec) {}

  /// check_constraints: empty why when node `n` is taken.
  Check check(int n, const Config& c) const {
    if (!c.skipsCommonChecks) {
      if (enabled(c) == 0) return Check::no("the partitioner's config_precisions leave no precision XNNPACK's " + g_.names[n] + " supports");
      if (Check d = validDtypes(n, c); !d.ok) return d;
    }
    if (c.deps == DepsKind::MaxDim) return maxDim(n);
    if (c.deps == DepsKind::Gemm) {
      Deps d = gemmDeps(n, c);
      if (!d.ok) return Check::no(d.why);
    }
    if (c.extra) return c.extra(g_, n);
    return {};
  }

  /// get_node_and_deps: the operator nodes and weights a match takes (node first).
  Deps take(int n, const Config& c) const {
    Deps d;
    switch (c.deps) {
      case DepsKind::Gemm: d = gemmDeps(n, c); d.nodes.insert(d.nodes.begin(), n); return d;
      case DepsKind::Nothing: return d;
      case DepsKind::NodeOnly: d.nodes = {n}; return d;
      case DepsKind::Prelu: {
        d.nodes = {n};
        auto ins = g_.inputNodes(n);
        if (ins.size() > 1) d.weights.push_back(ins[1]);
        return d;
      }
      case DepsKind::BatchNorm: {
        if (!onlyFirstResultRead(g_, n)) return d;  // upstream: not partitioned
        d.nodes = {n};
        auto ins = g_.inputNodes(n);
        for (size_t k = 1; k < ins.size() && k < 5; ++k)
          if (g_.isParam(ins[k])) d.weights.push_back(ins[k]);
        return d;
      }
      case DepsKind::MaxDim: d.nodes = {n}; return d;
      case DepsKind::Generic: return genericDeps(n, c);
    }
    return d;
  }

 private:
  uint8_t enabled(const Config& c) const {
    if (spec_.configPrecisions.empty()) return c.supported;
    uint8_t e = 0;
    for (const std::string& p : spec_.configPrecisions)
      e |= p == "FP32" ? kFp32 : p == "STATIC_QUANT" ? kStaticQuant : p == "DYNAMIC_QUANT" ? kDynamicQuant : 0;
    return e & c.supported;
  }

  std::string opLabel(int n) const { return "XNNPACK's " + g_.names[n]; }

  Check validDtypes(int n, const Config& c) const {
    auto valid = [&](ScalarType t) {
      if (t == ScalarType::Float || t == ScalarType::Half) return true;
      if (t == ScalarType::BFloat16) return spec_.enableBf16;
      return c.quantOp && (t == ScalarType::QInt32 || t == ScalarType::QInt8 || t == ScalarType::QUInt8 || t == ScalarType::Char);
    };
    auto allowed = [&] { return std::string(c.quantOp ? "float32, float16 and int8 types" : spec_.enableBf16 ? "float32, float16 and bfloat16" : "float32 and float16"); };
    const Node& node = g_.m.nodes[n];
    const OperatorRef* op = operatorOf(g_.m, node);
    const OpSchema* schema = op ? OpRegistry::builtin().find(op->name, op->overload) : nullptr;
    std::optional<ScalarType> first;
    for (size_t k = 0; k < node.args.size(); ++k) {
      if (schema && k < schema->arguments.size() && schema->arguments[k].kwargOnly) continue;  // fx checks args only
      ValueId a = node.args[k];
      if (a < 0) continue;
      std::vector<ValueId> items;
      const Value& x = g_.m.values[a];
      if (auto* l = std::get_if<TensorList>(&x.payload)) items = l->items;
      else if (auto* o = std::get_if<OptionalTensorList>(&x.payload)) items = o->items;
      else if (auto* il = std::get_if<IntList>(&x.payload)) items = il->items;
      else items = {a};
      const bool tensorSlot = schema && k < schema->arguments.size() && schema->arguments[k].type.isTensorLike();
      for (ValueId v : items) {
        if (v < 0) continue;
        const Value& y = g_.m.values[v];
        if (y.symbolic) return Check::no("argument " + std::to_string(k) + " is a size computed at run time, not a tensor");
        const TensorSpec* t = y.tensorIf();
        // A number in a Tensor slot is, upstream, the 0-dim constant ScalarToTensorPass made of
        // it (an fx node: int64, float32 or bool); a number elsewhere is no node at all.
        std::optional<ScalarType> dtype = t ? std::optional(t->dtype) : std::nullopt;
        if (!t && tensorSlot) {
          if (y.kind() == ValueKind::Int) dtype = ScalarType::Long;
          else if (y.kind() == ValueKind::Double) dtype = ScalarType::Float;
          else if (y.kind() == ValueKind::Bool) dtype = ScalarType::Bool;
        }
        if (!dtype) continue;
        if (t && hasUnbackedSize(*t)) return Check::no("an input's size is data-dependent (unbacked)");
        if (auto e = t ? t->numel() : std::nullopt; e && *e == 0) return Check::no("an input is empty: XNNPACK has no empty tensors");
        if (!valid(*dtype))
          return Check::no(std::string(scalarTypeName(*dtype)) + " is not supported by " + opLabel(n) + " (" + allowed() + " only)");
        if (!first) first = *dtype;
        else if (*first != *dtype)
          return Check::no(g_.names[n] + " does not support mixed input dtypes, got: [" + std::string(scalarTypeName(*first)) +
                           ", " + std::string(scalarTypeName(*dtype)) + "]");
      }
    }
    for (ValueId o : node.outputs) {
      const TensorSpec* t = g_.tensor(o);
      if (!t) return Check::no("a result is not a tensor");
      if (!valid(t->dtype))
        return Check::no("its result is " + std::string(scalarTypeName(t->dtype)) + ", which " + opLabel(n) + " does not produce (" +
                         allowed() + " only)");
    }
    return {};
  }

  Check maxDim(int n) const {
    auto ok = [](ScalarType t) {
      return t == ScalarType::Float || t == ScalarType::Half || t == ScalarType::Char || t == ScalarType::QInt8;
    };
    const TensorSpec* in = g_.tensor(g_.arg(n, 0));
    if (!in || in->sizes.size() != 4) return Check::no("Unsupported input rank " + std::to_string(in ? in->sizes.size() : 0) + " (max.dim needs 4)");
    const Node& node = g_.m.nodes[n];
    if (const TensorSpec* out = node.outputs.empty() ? nullptr : g_.tensor(node.outputs[0]); !out || !ok(out->dtype))
      return Check::no("Unsupported output dtype " + std::string(out ? scalarTypeName(out->dtype) : "?"));
    if (!ok(in->dtype)) return Check::no("Unsupported input dtype " + std::string(scalarTypeName(in->dtype)));
    if (!onlyFirstResultRead(g_, n)) return Check::no("Unsupported user of max.dim: its indices are read");
    return {};
  }

  bool isDynamicQdq(ValueId v) const {
    if (!g_.isQuant(v) && !g_.isDequant(v)) return false;
    const int p = g_.producer[v];
    auto fromQparams = [&](ValueId s) {
      const int q = s >= 0 ? g_.producer[s] : -1;
      return q >= 0 && isQparamName(g_.names[q]);
    };
    return fromQparams(g_.arg(p, 1)) && fromQparams(g_.arg(p, 2));
  }

  uint8_t detect(int n, const Config& c) const {
    if (!g_.isDequant(g_.arg(n, c.weightIdx))) return kFp32;
    return isDynamicQdq(g_.arg(n, c.actIdx)) ? kDynamicQuant : kStaticQuant;
  }

  /// get_deps of gemm_configs.py: precision, then bias, weight, activation and output.
  Deps gemmDeps(int n, const Config& c) const {
    Deps d;
    auto no = [&](std::string why) {
      d.ok = false;
      d.why = std::move(why);
      return d;
    };
    uint8_t p = detect(n, c);
    if (!(c.supported & p)) return no(std::string("Unsupported precision type ") + precisionName(p));
    bool overwritten = false;
    if (!(enabled(c) & p) && enabled(c) == kFp32 && p != kFp32) p = kFp32, overwritten = true;
    const bool force = p == kFp32 && spec_.forceNonStaticWeightsForF32Linear;
    // Bias: a constant, when the call has one.
    if (!force && c.biasIdx >= 0 && g_.inputNodes(n).size() > 2) {
      ValueId b = g_.arg(n, c.biasIdx);
      if (!g_.isNone(b)) {
        if (!g_.isParam(b)) return no("Expected bias to be a static param (the bias is not a constant)");
        d.weights.push_back(b);
      }
    }
    // Weight.
    const bool isLinear = std::string(c.className) == "LinearConfig";
    const bool isConv = std::string(c.className) == "ConvolutionConfig";
    const bool weightNeeded = !(force && !isConv) && !(isLinear && overwritten);
    ValueId w = g_.arg(n, c.weightIdx);
    if (weightNeeded) {
      if (p == kFp32) {
        if (!g_.isParam(w)) return no("Expected weight to be a static param (the weight is not a constant)");
        d.weights.push_back(w);
      } else {
        if (!g_.isDequant(w)) return no("Expected weight to have a dequantized node");
        const int dq = g_.producer[w];
        ValueId raw = g_.arg(dq, 0);
        if (!g_.isParam(raw)) return no("Expected weight to be a static param (the quantized weight is not a constant)");
        d.nodes.push_back(dq);
        d.weights.push_back(raw);
        const std::string& dqName = g_.names[dq];
        const bool perChannel = dqName.find("per_channel") != std::string::npos;
        if (dqName.find("per_tensor") != std::string::npos && !perChannel && p == kDynamicQuant)
          return no("XNNPACK does not support per tensor quantized weights for dynamic quantization of activations");
        if (perChannel) {
          auto ins = g_.inputNodes(dq);
          if (ins.size() < 2) return no("Expected channel quantized to have scale/zp nodes");
          for (size_t k = 1; k < ins.size() && k < 3; ++k)
            if (g_.isParam(ins[k])) d.weights.push_back(ins[k]);
        }
      }
    }
    // Activation.
    if (p != kFp32) {
      ValueId a = g_.arg(n, c.actIdx);
      if (!g_.isDequant(a)) return no("Expected act input to be dequant node");
      const int dq = g_.producer[a];
      d.nodes.push_back(dq);
      if (p == kDynamicQuant) {
        ValueId qv = g_.arg(dq, 0);
        if (!g_.isQuant(qv)) return no("Expected dequant input to be quant node");
        const int q = g_.producer[qv];
        ValueId scale = g_.arg(q, 1), zp = g_.arg(q, 2);
        const int cs = scale >= 0 ? g_.producer[scale] : -1, cz = zp >= 0 ? g_.producer[zp] : -1;
        if (cs < 0 || cz < 0 || !isQparamName(g_.names[cs])) return no("expected to find choose_qparam node");
        d.nodes.push_back(q);
        if (std::find(d.nodes.begin(), d.nodes.end(), cs) == d.nodes.end()) d.nodes.push_back(cs);
      }
    }
    // Output: a relu / hardtanh after it; for static quantization the quantize too.
    auto fusedAct = [&](int u) { return u >= 0 && (g_.names[u] == "relu.default" || g_.names[u] == "hardtanh.default"); };
    if (p == kStaticQuant) {
      int u = g_.soleUser(n);
      if (g_.userCount(n) != 1) return no("Expected quantized node to have a single output");
      if (fusedAct(u)) {
        d.nodes.push_back(u);
        if (g_.userCount(u) == 1) u = g_.soleUser(u);
      }
      if (u < 0 || !isQuantName(g_.names[u])) return no("Expected output node to have a quantized node");
      d.nodes.push_back(u);
    } else if (p == kFp32) {
      if (int u = g_.soleUser(n); fusedAct(u)) d.nodes.push_back(u);
    }
    if (isConv) {
      if (Check x = convChecks(n, p); !x.ok) return no(x.why);
    }
    return d;
  }

  Check convChecks(int n, uint8_t p) const {
    const TensorSpec* w = g_.tensor(g_.arg(n, 1));
    const int rank = w ? int(w->sizes.size()) : 0;
    if (rank - 2 > 2) return Check::no("Only support 1D + 2D Conv (this is a " + std::to_string(rank - 2) + "D convolution)");
    auto groups = g_.intOf(g_.arg(n, 8));
    auto transposed = g_.numberOf(g_.arg(n, 6));
    if (p == kDynamicQuant && w && rank >= 2 && groups && *groups >= 1) {
      const bool t = transposed && *transposed != 0;
      const int64_t groupIn = t ? w->sizes[0] / *groups : w->sizes[1];
      if (rank - 2 != 2 || groupIn == 1)
        return Check::no("XNNPACK only supports standard 2D convolutions for dynamic quantization");
    }
    return {};
  }

  /// GenericNodePartitionerConfig.get_node_and_deps: the node, and with static quantization
  /// enabled the dequantize nodes feeding it and the quantize after it.
  Deps genericDeps(int n, const Config& c) const {
    Deps d;
    d.nodes = {n};
    if (!(enabled(c) & kStaticQuant)) return d;
    auto ins = g_.inputNodes(n);
    for (ValueId v : ins)
      if (!g_.isDequant(v)) return d;
    if (g_.userCount(n) != 1) return d;
    int out = g_.soleUser(n);
    int act = -1;
    if (c.fusesRelu && out >= 0 && g_.names[out] == "relu.default") {
      act = out;
      if (g_.userCount(out) == 1) out = g_.soleUser(out);
    }
    if (out < 0 || !isQuantName(g_.names[out])) return d;
    for (ValueId v : ins) d.nodes.push_back(g_.producer[v]);
    if (act >= 0) d.nodes.push_back(act);
    d.nodes.push_back(out);
    return d;
  }

  const FxView& g_;
  const PartitionerSpec& spec_;
};

/// A union-find keyed by vertex, groups listed in the order their first member was registered.
class DisjointSets {
 public:
  int find(int x) {
    if (!parent_.count(x)) {
      parent_[x] = x;
      order_.push_back(x);
    }
    int r = x;
    while (parent_[r] != r) r = parent_[r];
    while (parent_[x] != r) {
      int next = parent_[x];
      parent_[x] = r;
      x = next;
    }
    return r;
  }
  void unite(int x, int y) { parent_[find(x)] = find(y); }
  bool contains(int x) const { return parent_.count(x) != 0; }
  std::vector<std::vector<int>> groups() {
    std::vector<std::vector<int>> out;
    std::unordered_map<int, size_t> at;
    for (int x : order_) {
      int r = find(x);
      auto [it, fresh] = at.try_emplace(r, out.size());
      if (fresh) out.emplace_back();
      out[it->second].push_back(x);
    }
    return out;
  }

 private:
  std::unordered_map<int, int> parent_;
  std::vector<int> order_;
};

using Bits = std::vector<uint64_t>;
inline void setBit(Bits& b, size_t i) { b[i / 64] |= uint64_t(1) << (i % 64); }
inline bool bit(const Bits& b, size_t i) { return (b[i / 64] >> (i % 64)) & 1; }

}  // namespace

XnnpackPartitioning partitionForXnnpack(const Method& m, const PartitionerSpec& spec) {
  const FxView g(m);
  const Partitioner part(g, spec);
  const size_t nn = m.nodes.size();
  XnnpackPartitioning out;
  out.partitionOf.assign(nn, -1);
  out.reasonOf.assign(nn, {});
  out.configOf.assign(nn, {});
  out.implicitQdq.assign(nn, false);

  // Vertices: node i is i, a weight placeholder v is nn + v.
  DisjointSets sets;
  for (size_t i = 0; i < nn; ++i) {
    const Node& node = m.nodes[i];
    if (node.kind != NodeKind::Kernel || g.names[i].empty()) {
      out.reasonOf[i] = node.kind == NodeKind::Delegate ? "already a delegate call" : "not an operator XNNPACK can take";
      continue;
    }
    auto c = configs().find(g.names[i]);
    if (c == configs().end()) {
      out.reasonOf[i] = "XNNPACK has no config for " + g.names[i];
      continue;
    }
    Check ok = part.check(int(i), c->second);
    if (!ok.ok) {
      out.reasonOf[i] = ok.why;
      continue;
    }
    Deps d = part.take(int(i), c->second);
    // get_deps / get_node_and_deps tag the q/dq a pattern takes, whether or not it is valid.
    for (int x : d.nodes)
      if (x != int(i) && (isQuantName(g.names[x]) || isDequantName(g.names[x]))) out.implicitQdq[x] = true;
    std::vector<int> members;
    for (int x : d.nodes) members.push_back(x);
    for (ValueId w : d.weights)
      if (!sets.contains(int(nn) + w)) members.push_back(int(nn) + w);  // a shared weight stays with its first taker
    if (members.empty()) {
      out.reasonOf[i] = c->second.deps == DepsKind::Nothing ? "taken by XNNPACK only as part of a quantized pattern" : "";
      continue;
    }
    for (int x : d.nodes)
      if (out.configOf[x].empty()) out.configOf[x] = c->second.className;
    sets.find(members[0]);
    for (size_t k = 1; k < members.size(); ++k) sets.unite(members[0], members[k]);
  }
  std::vector<std::vector<int>> groups = sets.groups();

  // GroupBasedPartitioner: ids by reverse graph order of each group's last node, then any two
  // partitions merge (lower id absorbs higher) when their union has no path leaving and re-entering it.
  std::vector<std::vector<int>> members;  // by id
  if (spec.perOpMode) {
    members = groups;
  } else {
    std::vector<int> groupOf(nn, -1);
    for (size_t k = 0; k < groups.size(); ++k)
      for (int x : groups[k])
        if (x < int(nn)) groupOf[x] = int(k);
    std::vector<bool> assigned(groups.size(), false);
    for (size_t i = nn; i-- > 0;)
      if (int k = groupOf[i]; k >= 0 && !assigned[k]) {
        assigned[k] = true;
        members.push_back(groups[k]);
      }
    // Nodes reachable from each node through its users (its downstream), as bit sets.
    const size_t words = (nn + 63) / 64;
    std::vector<Bits> down(nn, Bits(words, 0));
    for (size_t i = nn; i-- > 0;)
      for (int u : g.users[i]) {
        setBit(down[i], size_t(u));
        for (size_t w = 0; w < words; ++w) down[i][w] |= down[u][w];
      }
    std::vector<Bits> inside(members.size(), Bits(words, 0));
    for (size_t p = 0; p < members.size(); ++p)
      for (int x : members[p])
        if (x < int(nn)) setBit(inside[p], size_t(x));
    auto usersOf = [&](int x) -> const std::vector<int>& { return x < int(nn) ? g.users[x] : g.readers[x - int(nn)]; };
    auto canMerge = [&](size_t a, size_t b) {
      Bits both = inside[a];
      for (size_t w = 0; w < words; ++w) both[w] |= inside[b][w];
      Bits reach(words, 0);
      for (size_t p : {a, b})
        for (int x : members[p])
          for (int u : usersOf(x))
            if (!bit(both, size_t(u)))
              for (size_t w = 0; w < words; ++w) reach[w] |= down[u][w];
      for (size_t w = 0; w < words; ++w)
        if (reach[w] & both[w]) return false;
      return true;
    };
    std::vector<bool> merged(members.size(), false);
    for (size_t a = 0; a < members.size(); ++a) {
      if (merged[a]) continue;
      for (size_t b = a + 1; b < members.size(); ++b) {
        if (merged[b] || !canMerge(a, b)) continue;
        members[a].insert(members[a].end(), members[b].begin(), members[b].end());
        for (size_t w = 0; w < words; ++w) inside[a][w] |= inside[b][w];
        members[b].clear();
        merged[b] = true;
      }
    }
  }
  for (size_t id = 0; id < members.size(); ++id) {
    if (members[id].empty()) continue;
    XnnpackPartition p;
    p.id = int(id);
    p.tag = "tag" + std::to_string(id);
    for (int x : members[id]) {
      if (x < int(nn)) p.nodes.push_back(x);
      else p.constants.push_back(ValueId(x - int(nn)));
    }
    std::sort(p.nodes.begin(), p.nodes.end());
    std::sort(p.constants.begin(), p.constants.end());
    for (int x : p.nodes) out.partitionOf[x] = int(out.partitions.size()), out.reasonOf[x].clear();
    out.partitions.push_back(std::move(p));
  }
  return out;
}

bool xnnpackMayKeepWhole(const OperatorRef& op) {
  auto c = configs().find(formattedName(op));
  return c != configs().end() && c->second.keptWhole;
}

std::vector<std::string> xnnpackOpsToNotDecompose() {
  std::vector<std::string> out;
  for (const auto& [target, c] : configs())
    if (c.keptWhole) out.push_back((target.find("_affine") != std::string::npos ? "torchao::" : "aten::") + target);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<bool> xnnpackKeepsWhole(const Method& m, const PartitionerSpec& spec) {
  std::vector<bool> keep(m.nodes.size(), false);
  const FxView g(m);
  const Partitioner part(g, spec);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].kind != NodeKind::Kernel) continue;
    auto c = configs().find(g.names[i]);
    keep[i] = c != configs().end() && c->second.keptWhole && part.check(int(i), c->second).ok;
  }
  return keep;
}

std::vector<PartitionerSpec> recordedPartitioners(const Program& p) {
  const auto& to = p.exportFacts.delegatedTo;
  if (std::find(to.begin(), to.end(), "XnnpackBackend") == to.end()) return {};
  return {PartitionerSpec{}};
}

}  // namespace lstudio
