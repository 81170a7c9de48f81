#include "engine/lowering/partition/XnnpackPreprocess.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/formats/delegates/XnnpackWriter.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio {
namespace {

using Json = nlohmann::ordered_json;
using passes::inputSpecOf;
using passes::numberOf;

constexpr uint32_t kInvalidId = 0xFFFFFFFFu;     // XNN_INVALID_VALUE_ID
constexpr uint64_t kNamedOffset = UINT64_MAX;    // a ConstantDataOffset found by its named_key
constexpr int64_t kDefaultDebugHandle = 65535;   // a node without a debug handle
constexpr uint32_t kFlagExternalInput = 1, kFlagExternalOutput = 2, kFlagTransposeWeights = 1;
constexpr uint32_t kFlagKeepDims = 0x40;          // XNN_FLAG_KEEP_DIMS
constexpr int kFp32 = 1;                          // xnn_datatype_fp32
constexpr int kQint8 = 3, kQint32 = 5, kQcint8 = 6, kQcint32 = 7;  // xnn_datatype_q*int*
constexpr int kQdint8 = 9;  // xnn_datatype_qdint8: quantized at run time
constexpr int kFp16 = 2, kBf16 = 14;
constexpr int64_t kNchwToNhwc[4] = {0, 2, 3, 1}, kNhwcToNchw[4] = {0, 3, 1, 2};
/// The layout copies ChannelsLastTaggedReshapePass inserts (aten._to_copy with a memory format).
const char* const kLayoutCopy = "aten::_to_copy.default";

/// A float as ExecuTorch writes it to flatc: non-finite values as the strings its JSON
/// sanitizer leaves ("+inf" for relu's bound, "-inf" and "inf" for clamp's defaults).
Json number(double x, const char* posInf = "inf") {
  if (std::isinf(x)) return x > 0 ? Json(posInf) : Json("-inf");
  return Json(x);
}

/// torch's is_contiguous for a memory format: the sizes walked from the innermost
/// dimension of `order` outwards, size-1 dimensions skipped.
bool denseIn(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, const std::vector<size_t>& order) {
  int64_t expected = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (sizes[*it] == 1) continue;
    if (strides[*it] != expected) return false;
    expected *= sizes[*it];
  }
  return true;
}

/// ChannelsLastTaggedReshapePass._is_nhwc_tensor: channels-last and not also contiguous.
bool isNhwcTensor(const TensorSpec& t) {
  if (t.sizes.size() != 4) return false;
  std::vector<int64_t> strides = t.strides;
  if (strides.size() != 4) {
    strides.assign(4, 0);
    std::vector<uint8_t> order = t.dimOrder.size() == 4 ? t.dimOrder : std::vector<uint8_t>{0, 1, 2, 3};
    int64_t s = 1;
    for (int k = 3; k >= 0; --k) strides[order[k]] = s, s *= std::max<int64_t>(t.sizes[order[k]], 1);
  }
  return denseIn(t.sizes, strides, {0, 2, 3, 1}) && !denseIn(t.sizes, strides, {0, 1, 2, 3});
}

/// QuantParams (backends/xnnpack/operators/quant_params.py): how one tensor XNNPACK sees is
/// quantized, read off the quantize/dequantize next to it (or, for a bias, made from its
/// input's and weight's).
struct QuantParams {
  bool perChannel = false;
  ValueId qInput = kNoValue;  ///< the value the q/dq reads: the float tensor, or the int8 weight
  double scale = 0;           ///< per tensor
  int64_t zeroPoint = 0;
  std::vector<float> scales;  ///< per channel
  std::vector<int64_t> zeroPoints;
  int64_t axis = 0;
  ScalarType dtype = ScalarType::Char;
  int64_t qmin = 0, qmax = 0;
  bool isOutput = false, isInput = false;
  /// Quantized at run time (choose_qparams): per token, over the last `nonbatchDims` dimensions.
  bool dynamic = false;
  int nonbatchDims = 1;
};

/// How define_tensor lays a tensor out: NHWC (convert_to_nhwc), and for a depthwise or
/// transposed convolution's weight the in/out channels swapped first, per group.
struct Layout {
  bool nhwc = false;
  bool swapInOut = false;
  int64_t groups = 1;
};

class Compiler {
 public:
  explicit Compiler(const Method& m) : g_(m) {}

  Result<XnnpackCompiled> run() {
    // XNNPACKPassManager's passes, in its order (those that change nothing the float32
    // path writes are left out), then the node visitors in graph order.
    removeIdentityClones();
    if (auto s = checkGraph(); !s) return s.error();
    convertToLinear();
    if (auto s = refuseConstantFolding(); !s) return s.error();
    if (auto s = fuseBatchNorms(); !s) return s.error();
    if (auto s = decomposeBatchNorms(); !s) return s.error();
    fuseActivations();
    insertPadQdq();
    if (auto s = unsqueezeConv1d(); !s) return s.error();
    if (auto s = tagChannelsLast(); !s) return s.error();
    removeRedundantCopies();
    externalIds();
    for (const Node& n : g_.nodes) {
      Status s = Ok{};
      try {
        s = visit(n);
      } catch (const std::exception& e) {  // a quantization XNNPACK (or the studio) cannot write
        return refuse(n, e.what());
      }
      if (!s) return s.error();
    }
    if (auto s = checkEveryReadIsWritten(); !s) return s.error();
    Json graph;
    graph["version"] = "0";
    graph["xnodes"] = std::move(xnodes_);
    graph["xvalues"] = std::move(xvalues_);
    graph["num_externs"] = externals_;
    graph["input_ids"] = inputIds_;
    graph["output_ids"] = outputIds_;
    graph["constant_data"] = std::move(constantData_);
    auto payload = xnnpack::payloadFromGraphJson(graph.dump());
    if (!payload) return payload.error();
    return XnnpackCompiled{std::move(payload.value()), std::move(named_)};
  }

 private:
  /// XNNPACK refuses at load a graph whose node reads a value nothing defines (neither an
  /// input, a constant, nor an earlier node's result): such a payload is never written.
  Status checkEveryReadIsWritten() const {
    std::set<uint64_t> defined;
    for (const Json& v : xvalues_) {
      const Json& u = v.at("xvalue_union");
      const Json& t = u.contains("tensor_value") ? u.at("tensor_value") : u;
      if ((t.at("flags").get<uint32_t>() & kFlagExternalInput) || t.at("constant_buffer_idx").get<uint32_t>() != 0)
        defined.insert(t.at("id_out").get<uint64_t>());
    }
    for (const Json& x : xnodes_) {
      const Json& body = x.at("xnode_union");
      for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string& key = it.key();
        if (key.size() < 3 || key.compare(key.size() - 3, 3, "_id") != 0 || key.rfind("output", 0) == 0) continue;
        const uint64_t v = it.value().get<uint64_t>();
        if (v != kInvalidId && !defined.count(v))
          return Error{ErrorCode::Invalid, "XNNPACK's preprocess", std::nullopt,
                       "every value an " + x.at("xnode_union_type").get<std::string>() + " reads defined before it",
                       "", "value " + std::to_string(v) + " read (" + key + ") before anything writes it (a studio bug)"};
      }
      for (auto it = body.begin(); it != body.end(); ++it)
        if (it.key().rfind("output", 0) == 0 && it.key().size() > 3 && it.key().compare(it.key().size() - 3, 3, "_id") == 0)
          defined.insert(it.value().get<uint64_t>());
    }
    return Ok{};
  }

  // ---- the working graph ---------------------------------------------------------------

  std::string opName(const Node& n) const {
    if (n.op < 0) return n.target;  // a node one of the passes made or renamed
    const OperatorRef* op = passes::operatorOf(g_, n);
    return op ? op->name + "." + op->overload : std::string();
  }

  Error refuse(const Node& n, const std::string& why) const {
    const std::string op = opName(n);
    return Error{ErrorCode::Unsupported, "XNNPACK's preprocess", std::nullopt,
                 "node " + n.name + (op.empty() ? "" : " (" + op + ")"), "", why};
  }

  bool isParam(ValueId v) const {
    const InputSpec* s = inputSpecOf(g_, v);
    return s && (s->kind == InputSpec::Kind::Parameter || s->kind == InputSpec::Kind::Buffer ||
                 s->kind == InputSpec::Kind::ConstantTensor);
  }
  bool isPlaceholder(ValueId v) const {
    return std::find(g_.inputs.begin(), g_.inputs.end(), v) != g_.inputs.end() || inputSpecOf(g_, v);
  }
  bool isUserInput(ValueId v) const {
    if (std::find(g_.inputs.begin(), g_.inputs.end(), v) == g_.inputs.end()) return false;
    const InputSpec* s = inputSpecOf(g_, v);
    return !s || s->kind == InputSpec::Kind::User;
  }
  bool isOutput(ValueId v) const { return std::find(g_.outputs.begin(), g_.outputs.end(), v) != g_.outputs.end(); }
  const TensorSpec& spec(ValueId v) const { return g_.values[v].tensor(); }
  size_t rank(ValueId v) const { return spec(v).sizes.size(); }

  /// The tensors a node reads, distinct, in argument order (fx's all_input_nodes).
  std::vector<ValueId> tensorInputs(const Node& n) const {
    std::vector<ValueId> out;
    auto add = [&](ValueId v) {
      if (v >= 0 && g_.values[v].isTensor() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    };
    for (ValueId a : n.args) {
      if (a < 0) continue;
      if (auto* l = std::get_if<TensorList>(&g_.values[a].payload)) for (ValueId t : l->items) add(t);
      else add(a);
    }
    return out;
  }

  /// The nodes reading v (each once), and whether the graph output does (fx's users).
  std::vector<size_t> readers(ValueId v) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const std::vector<ValueId> ins = tensorInputs(g_.nodes[i]);
      if (std::find(ins.begin(), ins.end(), v) != ins.end()) out.push_back(i);
    }
    return out;
  }
  size_t userCount(ValueId v) const { return readers(v).size() + (isOutput(v) ? 1 : 0); }

  /// fx's replace_input_with on node `i`: every argument that is `from` reads `to`.
  void replaceInput(size_t i, ValueId from, ValueId to) {
    for (ValueId& a : g_.nodes[i].args) {
      if (a == from) a = to;
      else if (a >= 0)
        if (auto* l = std::get_if<TensorList>(&g_.values[a].payload);
            l && std::find(l->items.begin(), l->items.end(), from) != l->items.end()) {
          TensorList copy = *l;  // the list value may be shared: give this node its own
          std::replace(copy.items.begin(), copy.items.end(), from, to);
          Value v = g_.values[a];
          v.payload = std::move(copy);
          a = passes::addValue(g_, std::move(v));
        }
    }
  }
  /// The same on the graph's output node.
  void replaceOutput(ValueId from, ValueId to) {
    std::replace(g_.outputs.begin(), g_.outputs.end(), from, to);
    for (OutputSpec& o : g_.signature.outputs)
      if (o.value == from) o.value = to;
  }

  void eraseNodes(const std::set<size_t>& erased) {
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!erased.count(i)) kept.push_back(std::move(g_.nodes[i]));
    g_.nodes = std::move(kept);
  }

  /// A number argument; one that is not (a symbolic size) stops the compilation.
  double num(ValueId v) const {
    const std::optional<double> x = v >= 0 ? numberOf(g_, v) : std::nullopt;
    if (!x) throw std::runtime_error("a number argument that is not a constant number");
    return *x;
  }
  /// The argument as the call gave it (fx's len(node.args) > k), not a schema default.
  bool spelled(const Node& n, size_t k) const {
    return k < n.args.size() && n.args[k] >= 0 && !(k < 64 && (n.defaultedArgs >> k & 1)) &&
           g_.values[n.args[k]].kind() != ValueKind::None;
  }
  std::vector<int64_t> ints(ValueId list) const {
    std::vector<int64_t> out;
    if (list < 0) return out;
    if (auto* l = std::get_if<IntList>(&g_.values[list].payload))
      for (ValueId i : l->items) out.push_back(int64_t(num(i)));
    else if (auto x = numberOf(g_, list))
      out.push_back(int64_t(*x));
    return out;
  }
  bool staticInts(ValueId list) const {
    auto* l = std::get_if<IntList>(&g_.values[list].payload);
    return l && std::all_of(l->items.begin(), l->items.end(), [&](ValueId i) { return numberOf(g_, i).has_value(); });
  }

  // ---- what is refused before anything is written --------------------------------------

  Status checkGraph() const {
    for (const Node& n : g_.nodes) {
      if (n.kind != NodeKind::Kernel || n.op < 0) return refuse(n, "a node that is not an operator call");
    }
    for (ValueId o : g_.outputs)
      if (isUserInput(o))
        return Error{ErrorCode::Unsupported, "XNNPACK's preprocess", std::nullopt, "output " + g_.values[o].name,
                     "an output the delegate computes", "an input passed through (XNNPACK refuses it too)"};
    return Ok{};
  }

  /// ConstPropPass folds a node that reads only constants into a new constant.
  Status refuseConstantFolding() const {
    for (const Node& n : g_.nodes) {
      if (opName(n).rfind("quantized_decomposed::", 0) == 0) continue;  // ConstPropPass skips the quantization ops
      const std::vector<ValueId> ins = tensorInputs(n);
      if (!ins.empty() && std::all_of(ins.begin(), ins.end(), [&](ValueId v) { return isParam(v); }))
        return refuse(n, "a node that reads only constants (XNNPACK's ConstPropPass folds it; not written here yet)");
    }
    return Ok{};
  }

  // ---- XNNPACKRemoveCloneOpsTransform -------------------------------------------------------

  static std::vector<uint8_t> dimOrderOf(const TensorSpec& t) {
    if (!t.dimOrder.empty()) return t.dimOrder;
    std::vector<uint8_t> d(t.sizes.size());
    for (size_t i = 0; i < d.size(); ++i) d[i] = uint8_t(i);
    return d;
  }

  /// A clone that keeps its input's dim order is dropped (its readers read the input),
  /// except one that copies a graph input straight to an output.
  void removeIdentityClones() {
    std::set<size_t> erased;
    std::vector<ValueId> dequantized;  // the dequantizes the removed clones read
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      const std::string op = opName(n);
      if (op != "aten::clone.default" && op != "dim_order_ops::_clone_dim_order.default") continue;
      if (n.outputs.empty() || n.args.empty() || !g_.values[n.outputs[0]].isTensor()) continue;
      const ValueId in = n.args[0], out = n.outputs[0];
      if (op == "aten::clone.default" ? spelled(n, 1) : dimOrderOf(spec(out)) != dimOrderOf(spec(in))) continue;
      if (std::find(g_.inputs.begin(), g_.inputs.end(), in) != g_.inputs.end() && isOutput(out)) continue;
      passes::replaceUses(g_, out, in);
      erased.insert(i);
      if (const Node* dq = producer(in); dq && isStaticQdqOp(opName(*dq), "dequantize")) dequantized.push_back(in);
    }
    eraseNodes(erased);
    if (erased.empty()) return;
    // eliminate_dq_q: a dequantize that fed a removed clone and now feeds a quantize with the
    // same parameters is a round trip; the quantize's readers read the quantized tensor.
    for (ValueId dqOut : dequantized) {
      const Node dq = *producer(dqOut);
      for (size_t r : readers(dqOut)) {
        const Node& q = g_.nodes[r];
        if (!isStaticQdqOp(opName(q), "quantize") || !sameQuantArgs(dq, q)) continue;
        passes::replaceUses(g_, q.outputs[0], dq.args[0]);
      }
    }
    eliminateDeadCode();
  }
  /// ExecuTorch's _QUANT_OPS / _DEQUANT_OPS: static per-tensor or per-channel.
  static bool isStaticQdqOp(const std::string& op, const std::string& kind) {
    const std::string prefix = "quantized_decomposed::" + kind + "_per_";
    return op == prefix + "tensor.default" || op == prefix + "channel.default";
  }
  /// list(dq.args)[1:] == list(q.args)[1:]
  bool sameQuantArgs(const Node& a, const Node& b) const {
    const bool perChannel = opName(a).find("per_channel") != std::string::npos;
    if (perChannel != (opName(b).find("per_channel") != std::string::npos)) return false;
    const size_t positional = perChannel ? 7 : 6;  // dequantize's keyword-only out_dtype is not in fx's args
    if (a.args.size() < positional || b.args.size() < positional) return false;
    for (size_t k = 1; k < positional; ++k) {
      if (a.args[k] == b.args[k]) continue;
      const auto x = a.args[k] >= 0 ? numberOf(g_, a.args[k]) : std::nullopt;
      const auto y = b.args[k] >= 0 ? numberOf(g_, b.args[k]) : std::nullopt;
      if (!x || !y || *x != *y) return false;
    }
    return true;
  }

  // ---- ConvertToLinearPass (its addmm/mm-to-linear transform) -------------------------------

  /// mm or addmm of a transposed weight (t_copy or permute_copy) is linear on the weight
  /// itself; a linear's lone reader that reshapes to the shape it already has goes.
  /// (The pass's other half rebuilds linear from the nodes torch.nn.Linear decomposed
  /// into; linear reaches the partitioner whole, so there are none.)
  void convertToLinear() {
    for (Node& n : g_.nodes) {
      const std::string op = opName(n);
      if (op != "aten::mm.default" && op != "aten::addmm.default") continue;
      const bool addmm = op == "aten::addmm.default";
      const ValueId wt = n.args[addmm ? 2 : 1];
      const int producer = passes::producerOf(g_, wt);
      if (producer < 0) continue;
      const std::string pop = opName(g_.nodes[producer]);
      if (pop != "aten::t_copy.default" && pop != "aten::permute_copy.default") continue;
      const ValueId w = g_.nodes[producer].args[0];
      std::vector<ValueId> args = addmm ? std::vector<ValueId>{n.args[1], w, n.args[0]} : std::vector<ValueId>{n.args[0], w};
      n.op = -1;
      n.target = "aten::linear.default";
      n.args = std::move(args);
      n.defaultedArgs = 0;
    }
    eliminateDeadCode();
    std::set<size_t> erased;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (opName(n) != "aten::linear.default" || userCount(n.outputs[0]) != 1) continue;
      const std::vector<size_t> r = readers(n.outputs[0]);
      if (r.size() != 1 || opName(g_.nodes[r[0]]) != "aten::view_copy.default") continue;
      std::vector<int64_t> shape = spec(n.args[0]).sizes;
      if (shape.empty() || rank(n.args[1]) < 1) continue;
      shape.back() = spec(n.args[1]).sizes[0];
      const ValueId view = g_.nodes[r[0]].outputs[0];
      if (shape != spec(view).sizes) continue;
      passes::replaceUses(g_, view, n.outputs[0]);
      erased.insert(r[0]);
    }
    eraseNodes(erased);
  }

  /// fx's eliminate_dead_code: nodes whose results nothing reads, until none is left.
  void eliminateDeadCode() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = g_.nodes.size(); i-- > 0;) {
        const Node& n = g_.nodes[i];
        if (n.outputs.empty() || !std::all_of(n.outputs.begin(), n.outputs.end(), [&](ValueId o) { return userCount(o) == 0; }))
          continue;
        g_.nodes.erase(g_.nodes.begin() + long(i));
        changed = true;
      }
    }
  }

  // ---- FuseBatchNormPass -------------------------------------------------------------------

  /// A batch norm in inference form after a convolution or linear that nothing else reads
  /// folds into that node's weight and bias (torch.nn.utils.fusion's arithmetic, in
  /// float32 as torch does it); the batch norm leaves the graph.
  Status fuseBatchNorms() {
    std::set<size_t> erased;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const std::string op = opName(g_.nodes[i]);
      const bool isConv = op == "aten::convolution.default";
      if (!isConv && op != "aten::linear.default") continue;
      const ValueId out = g_.nodes[i].outputs[0];
      const std::vector<size_t> r = readers(out);
      if (r.size() != 1 || isOutput(out)) continue;
      const Node& bn = g_.nodes[r[0]];
      const std::string bnOp = opName(bn);
      if (bnOp != "aten::_native_batch_norm_legit_no_training.default" && bnOp != "aten::native_batch_norm.default") continue;
      bool onlyResult = true;  // every reader takes the normalised tensor (getitem 0)
      for (size_t k = 1; k < bn.outputs.size(); ++k) onlyResult = onlyResult && userCount(bn.outputs[k]) == 0;
      const Node& node = g_.nodes[i];
      if (!onlyResult || !spelled(bn, 1) || !isParam(node.args[1]) || !isParam(bn.args[1])) continue;
      if (isConv && rank(node.args[0]) != 3 && rank(node.args[0]) != 4) continue;
      for (size_t k : {size_t(2), size_t(3), size_t(4)})
        if (!spelled(bn, k) || !isParam(bn.args[k])) return refuse(bn, "a batch norm whose statistics are not constants");
      const bool hasBias = spelled(node, 2);
      if (hasBias && !isParam(node.args[2])) return refuse(node, "a bias that is not a constant");
      for (ValueId v : {node.args[1], bn.args[1], bn.args[2], bn.args[3], bn.args[4]})
        if (spec(v).dtype != ScalarType::Float || !spec(v).data.data) return refuse(bn, "a batch norm fused from other than float32 constants");
      if (hasBias && (spec(node.args[2]).dtype != ScalarType::Float || !spec(node.args[2]).data.data))
        return refuse(node, "a bias other than float32");
      const size_t epsArg = bnOp == "aten::native_batch_norm.default" ? 7 : 6;
      const std::optional<double> eps = epsArg < bn.args.size() ? numberOf(g_, bn.args[epsArg]) : std::nullopt;
      if (!eps) return refuse(bn, "a batch norm whose epsilon is not a number");
      const bool transposed = isConv && numberOf(g_, node.args[6]).value_or(0) != 0;

      auto floats = [&](ValueId v) {
        std::vector<float> f(spec(v).data.size / 4);
        std::memcpy(f.data(), spec(v).data.data, f.size() * 4);
        return f;
      };
      const std::vector<float> w = floats(node.args[1]), mean = floats(bn.args[3]), var = floats(bn.args[4]);
      const std::vector<float> gamma = floats(bn.args[1]), beta = floats(bn.args[2]);
      const size_t channels = mean.size();
      std::vector<float> b = hasBias ? floats(node.args[2]) : std::vector<float>(channels, 0.0f);
      const std::vector<int64_t>& ws = spec(node.args[1]).sizes;
      const size_t channelDim = transposed ? 1 : 0;
      if (ws.size() < 2 || size_t(ws[channelDim]) != channels || gamma.size() != channels || beta.size() != channels ||
          var.size() != channels || b.size() != channels)
        return refuse(bn, "a batch norm whose channels do not match the weight's");
      // bn_var_rsqrt = rsqrt(var + eps): torch adds the float eps in float32 and takes
      // 1 / sqrt as its vectorised rsqrt does.
      std::vector<float> invStd(channels), scale(channels);
      for (size_t c = 0; c < channels; ++c) {
        invStd[c] = 1.0f / std::sqrt(var[c] + float(*eps));
        scale[c] = gamma[c] * invStd[c];
      }
      std::vector<float> fw(w.size()), fb(channels);
      size_t inner = 1;
      for (size_t d = channelDim + 1; d < ws.size(); ++d) inner *= size_t(ws[d]);
      for (size_t k = 0; k < w.size(); ++k) fw[k] = w[k] * scale[(k / inner) % channels];
      for (size_t c = 0; c < channels; ++c)
        fb[c] = isConv ? (b[c] - mean[c]) * invStd[c] * gamma[c] + beta[c] : (b[c] - mean[c]) * scale[c] + beta[c];

      const ValueId newW = addConstant(node.args[1], ws, std::move(fw), "_fused_bn");
      const ValueId newB = addConstant(node.args[1], {int64_t(channels)}, std::move(fb), hasBias ? "_fused_bn" : "_bias_fused_bn");
      Node& conv = g_.nodes[i];
      conv.args[1] = newW;
      if (conv.args.size() < 3) conv.args.resize(3, kNoValue);
      conv.args[2] = newB;
      conv.defaultedArgs &= ~uint64_t(4);
      passes::replaceUses(g_, g_.nodes[r[0]].outputs[0], out);
      erased.insert(r[0]);
    }
    eraseNodes(erased);
    return Ok{};
  }

  // ---- DecomposeBatchNorm ------------------------------------------------------------------

  /// A batch norm left standing is a depthwise 1x1 convolution: weight gamma / sqrt(var + eps),
  /// bias beta - mean * gamma / sqrt(var + eps), worked in double as ExecuTorch does (with
  /// eps first made a float32) and stored as float32. An [N, C] input goes through
  /// unsqueeze and squeeze around a 1-d convolution.
  Status decomposeBatchNorms() {
    std::vector<Node> nodes;
    for (Node& bn : g_.nodes) {
      const std::string op = opName(bn);
      if (op != "aten::_native_batch_norm_legit_no_training.default" && op != "aten::native_batch_norm.default") {
        nodes.push_back(std::move(bn));
        continue;
      }
      const ValueId in = bn.args[0];
      const size_t r = rank(in);
      bool onlyResult = true;
      for (size_t k = 1; k < bn.outputs.size(); ++k) onlyResult = onlyResult && userCount(bn.outputs[k]) == 0;
      if (r < 2 || r > 4 || !onlyResult) return refuse(bn, "a batch norm XNNPACK cannot make a convolution of");
      if (!spec(in).symbols.empty() && spec(in).symbols.size() > 1 && !spec(in).symbols[1].empty())
        return refuse(bn, "a batch norm over a dynamic number of channels");
      const bool training = op == "aten::native_batch_norm.default";
      if (training && numberOf(g_, bn.args[5]).value_or(1) != 0) return refuse(bn, "a batch norm in training mode");
      const std::optional<double> eps = numberOf(g_, bn.args[training ? 7 : 6]);
      if (!eps) return refuse(bn, "a batch norm whose epsilon is not a number");
      auto floats = [&](size_t k, float fallback, size_t channels) -> std::optional<std::vector<float>> {
        if (!spelled(bn, k)) return std::vector<float>(channels, fallback);
        const ValueId v = bn.args[k];
        if (!isParam(v) || spec(v).dtype != ScalarType::Float || !spec(v).data.data || spec(v).data.size != channels * 4)
          return std::nullopt;
        std::vector<float> f(channels);
        std::memcpy(f.data(), spec(v).data.data, channels * 4);
        return f;
      };
      const size_t channels = size_t(spec(in).sizes[1]);
      auto gamma = floats(1, 1.0f, channels), beta = floats(2, 0.0f, channels);
      auto mean = floats(3, 0.0f, channels), var = floats(4, 0.0f, channels);
      if (!gamma || !beta || !mean || !var || !spelled(bn, 3) || !spelled(bn, 4))
        return refuse(bn, "a batch norm whose statistics are not float32 constants");
      std::vector<float> w(channels), b(channels);
      for (size_t c = 0; c < channels; ++c) {
        const double denom = std::sqrt(double((*var)[c]) + double(float(*eps)));
        w[c] = float(double((*gamma)[c]) / denom);
        b[c] = float(-double((*mean)[c]) * double((*gamma)[c]) / denom + double((*beta)[c]));
      }
      const size_t spatial = std::max<size_t>(r - 2, 1);
      std::vector<int64_t> wShape = {int64_t(channels), 1};
      wShape.resize(2 + spatial, 1);
      const ValueId like = spelled(bn, 1) ? bn.args[1] : bn.args[3];
      const ValueId weight = addConstant(like, wShape, std::move(w), "_decomposed_bn_weight");
      const ValueId bias = addConstant(like, {int64_t(channels)}, std::move(b), "_decomposed_bn_bias");
      const ValueId out = bn.outputs[0];
      ValueId convIn = in, convOut = out;
      if (r == 2) {  // NC -> NCL
        convIn = reshaped(in, true, "aten_unsqueeze_copy_default");
        nodes.push_back(madeNode("aten::unsqueeze_copy.default", {in, passes::addInt(g_, 2)}, convIn, g_.values[convIn].name));
        convOut = reshaped(out, true, "aten_convolution_default");
      }
      Value no;
      no.payload = false;
      const std::vector<int64_t> ones(spatial, 1), zeros(spatial, 0);
      nodes.push_back(madeNode("aten::convolution.default",
                               {convIn, weight, bias, passes::addIntList(g_, ones), passes::addIntList(g_, zeros),
                                passes::addIntList(g_, ones), passes::addValue(g_, std::move(no)), passes::addIntList(g_, zeros),
                                passes::addInt(g_, int64_t(channels))},
                               convOut, "aten_convolution_default"));
      if (r == 2) nodes.push_back(madeNode("aten::squeeze_copy.dim", {convOut, passes::addInt(g_, 2)}, out, "aten_squeeze_copy_dim"));
    }
    g_.nodes = std::move(nodes);
    return Ok{};
  }

  /// A new float32 parameter (create_constant_placeholder), its bytes held by the compiler.
  ValueId addConstant(ValueId like, std::vector<int64_t> sizes, std::vector<float> data, const std::string& suffix) {
    owned_.push_back(std::move(data));
    Value v;
    TensorSpec t;
    t.dtype = ScalarType::Float;
    t.sizes = std::move(sizes);
    t.data.data = reinterpret_cast<const uint8_t*>(owned_.back().data());
    t.data.size = owned_.back().size() * 4;
    v.payload = std::move(t);
    v.name = g_.values[like].name + suffix;
    const ValueId id = passes::addValue(g_, std::move(v));
    g_.signature.inputs.push_back(InputSpec{InputSpec::Kind::Parameter, id, g_.values[id].name});
    return id;
  }

  // ---- FuseActivationPass ------------------------------------------------------------------

  /// A relu or hardtanh whose input is the only use of a convolution, linear, add, sub or
  /// mul leaves the graph; the producer clamps its output instead (output_min_max).
  void fuseActivations() {
    static const std::set<std::string> kFuseable = {"aten::convolution.default", "aten::add.Tensor", "aten::sub.Tensor",
                                                    "aten::mul.Tensor", "aten::linear.default"};
    std::set<size_t> erased;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& act = g_.nodes[i];
      const std::string op = opName(act);
      if (op != "aten::relu.default" && op != "aten::hardtanh.default") continue;
      const ValueId in = act.args[0];
      const int producer = passes::producerOf(g_, in);
      if (producer < 0 || erased.count(size_t(producer)) || !kFuseable.count(opName(g_.nodes[producer]))) continue;
      if (userCount(in) > 1) continue;
      Json mm;
      if (op == "aten::relu.default") {
        mm["output_min"] = 0;
        mm["output_max"] = "+inf";
      } else {
        mm["output_min"] = spelled(act, 1) ? number(num(act.args[1])) : Json(-1);
        mm["output_max"] = spelled(act, 2) ? number(num(act.args[2])) : Json(1);
      }
      minMax_[in] = std::move(mm);
      passes::replaceUses(g_, act.outputs[0], in);
      erased.insert(i);
    }
    eraseNodes(erased);
  }

  // ---- InsertPadQDQPass ----------------------------------------------------------------------

  /// A zero constant_pad_nd of a dequantized tensor is written quantized: an implicit
  /// quantize/dequantize pair (the input's parameters) after it, unless a reader quantizes it.
  void insertPadQdq() {
    std::vector<Node> nodes;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node n = g_.nodes[i];  // a copy: the readers rewired below are later nodes of g_
      nodes.push_back(n);
      if (opName(n) != "aten::constant_pad_nd.default") continue;
      const Node* dq = producer(n.args[0]);
      if (!dq || opName(*dq) != "quantized_decomposed::dequantize_per_tensor.default") continue;
      if (spelled(n, 2) && num(n.args[2]) != 0.0) continue;
      const std::vector<int64_t> pads = ints(n.args[1]);
      if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; })) continue;
      const ValueId out = n.outputs[0];
      const std::vector<size_t> users = readers(out);
      if (std::any_of(users.begin(), users.end(), [&](size_t r) { return isQuantOp(opName(g_.nodes[r])); })) continue;
      const Node params = *dq;
      const ValueId dqOut = implicitQdqPair(nodes, out, params);
      // node.replace_all_uses_with(dq): the pad's readers (later nodes of g_, and the graph's
      // outputs) read the dequantized value; the new quantize, in `nodes`, reads the pad.
      passes::replaceUses(g_, out, dqOut);
    }
    g_.nodes = std::move(nodes);
  }

  // ---- Conv1dUnsqueezePass ------------------------------------------------------------------

  /// A node the passes make: `target` on `args`, writing `out`.
  static Node madeNode(const char* target, std::vector<ValueId> args, ValueId out, const std::string& name) {
    Node n;
    n.kind = NodeKind::Kernel;
    n.op = -1;
    n.target = target;
    n.name = name;
    n.args = std::move(args);
    n.outputs = {out};
    return n;
  }
  /// A tensor like `like` with one more (or one fewer) trailing size-1 dimension.
  /// A quantize and dequantize of `v` with `params`' scale, zero point, range and dtype, both
  /// implicit, appended to `nodes`: the dequantized value.
  ValueId implicitQdqPair(std::vector<Node>& nodes, ValueId v, const Node& params) {
    nodes.push_back(qdqNode(v, params, true, v, true));
    nodes.push_back(qdqNode(nodes.back().outputs[0], params, false, v, true));
    return nodes.back().outputs[0];
  }
  /// A per-tensor quantize (or dequantize) of `reads` with `params`' scale, zero point, range
  /// and dtype (its args 1..5), its result shaped as `like`.
  Node qdqNode(ValueId reads, const Node& params, bool quantize, ValueId like, bool implicit) {
    Value out;
    TensorSpec t = spec(like);
    t.data = {};
    t.dtype = quantize ? ScalarType(int(num(params.args.at(5)))) : ScalarType::Float;
    out.payload = std::move(t);
    out.name = quantize ? "quantize_per_tensor_default" : "dequantize_per_tensor_default";
    const ValueId o = passes::addValue(g_, std::move(out));
    std::vector<ValueId> args{reads};
    for (size_t k = 1; k <= 5; ++k) args.push_back(params.args.at(k));
    Node n = madeNode(quantize ? "quantized_decomposed::quantize_per_tensor.default"
                               : "quantized_decomposed::dequantize_per_tensor.default",
                      std::move(args), o, g_.values[o].name);
    n.meta.implicitQdq = implicit;
    return n;
  }

  ValueId reshaped(ValueId like, bool addDim, const std::string& name) {
    Value v;
    TensorSpec t;
    t.dtype = spec(like).dtype;
    t.sizes = spec(like).sizes;
    t.symbols = spec(like).symbols;
    if (addDim) {
      t.sizes.push_back(1);
      if (!t.symbols.empty()) t.symbols.push_back("");
    } else {
      t.sizes.pop_back();
      if (!t.symbols.empty()) t.symbols.pop_back();
    }
    v.payload = std::move(t);
    v.name = name;
    return passes::addValue(g_, std::move(v));
  }

  /// XNNPACK convolves in 2-d only: a 1-d convolution becomes unsqueeze (a trailing
  /// size-1 dimension), a 2-d convolution over a [.., k, 1] weight, and squeeze.
  Status unsqueezeConv1d() {
    std::vector<Node> nodes;
    const std::vector<Node> original = g_.nodes;  // g_ stays whole while producers and readers are looked up
    for (Node n : original) {
      if (opName(n) != "aten::convolution.default" || rank(n.args[1]) != 3) {
        nodes.push_back(std::move(n));
        continue;
      }
      const ValueId in = n.args[0], out = n.outputs[0];
      ValueId w = n.args[1];
      // A quantized weight: the int8 constant its dequantize reads, and that result, grow a dim.
      const Node* wdq = producer(w);
      const bool quantizedWeight = wdq && isDequantOp(opName(*wdq)) && !producedByQuant(wdq->args[0]);
      if (quantizedWeight) {
        TensorSpec& read = g_.values[w].tensor();
        read.sizes.push_back(1);
        if (!read.dimOrder.empty()) read.dimOrder.push_back(3);
        w = wdq->args[0];
      }
      if (!isParam(w)) return refuse(n, "a 1-d convolution whose weight is not a constant");
      g_.values[w].tensor().sizes.push_back(1);  // the same bytes, read as [out, in, k, 1]
      if (!g_.values[w].tensor().dimOrder.empty()) g_.values[w].tensor().dimOrder.push_back(3);
      for (size_t k : {size_t(3), size_t(4), size_t(5), size_t(7)}) {
        std::vector<int64_t> xs = ints(n.args[k]);
        xs.push_back(k == 3 || k == 5 ? 1 : 0);
        n.args[k] = passes::addIntList(g_, xs);
      }
      const ValueId in4 = reshaped(in, true, "aten_unsqueeze_copy_default");
      const ValueId out4 = reshaped(out, true, n.name);
      nodes.push_back(madeNode("aten::unsqueeze_copy.default", {in, passes::addInt(g_, -1)}, in4, g_.values[in4].name));
      // insert_q_dq_pair: quantized values stay quantized through the reshapes (implicit q/dq).
      n.args[0] = in4;
      if (const Node* dq = producer(in); dq && isDequantOp(opName(*dq)))
        n.args[0] = implicitQdqPair(nodes, in4, *dq);
      const std::vector<size_t> users = readers(out);
      const bool quantizedOutput = !users.empty() && !isOutput(out) &&
                                   std::all_of(users.begin(), users.end(), [&](size_t r) { return isQuantOp(opName(g_.nodes[r])); });
      const Node outputQuantize = quantizedOutput ? g_.nodes[users[0]] : Node{};
      n.outputs = {out4};
      if (auto mm = minMax_.extract(out)) minMax_[out4] = std::move(mm.mapped());  // a fused activation
      const std::string squeezeName = "aten_squeeze_copy_dim";
      nodes.push_back(std::move(n));
      const ValueId squeezed = quantizedOutput ? implicitQdqPair(nodes, out4, outputQuantize) : out4;
      nodes.push_back(madeNode("aten::squeeze_copy.dim", {squeezed, passes::addInt(g_, -1)}, out, squeezeName));
    }
    g_.nodes = std::move(nodes);
    return Ok{};
  }

  // ---- ChannelsLastTaggedReshapePass -------------------------------------------------------

  /// XNN_NHWC_NODE: present once the pass has decided a value's layout; true for NHWC.
  std::map<ValueId, bool> nhwcTag_;
  /// PARTNER_NODE: the same tensor in the other layout (both directions).
  std::map<ValueId, ValueId> partner_;
  /// The layout copies made, each to be placed right after the value it copies.
  struct Inserted {
    ValueId after;
    Node node;
  };
  std::vector<Inserted> inserted_;

  bool isNhwcNode(ValueId v) const {
    auto it = nhwcTag_.find(v);
    return it != nhwcTag_.end() && it->second;
  }
  bool canBeNhwc(ValueId v) const {
    const bool nchwConstant = isParam(v) && nhwcTag_.count(v) && !isNhwcNode(v);
    return rank(v) == 4 && !nchwConstant;
  }

  ValueId layoutCopy(ValueId src, bool toNhwc) {
    Value v;
    TensorSpec t;
    t.dtype = spec(src).dtype;
    t.sizes = spec(src).sizes;
    t.symbols = spec(src).symbols;
    if (toNhwc) t.dimOrder = {0, 2, 3, 1};
    v.payload = std::move(t);
    v.name = "aten__to_copy_default";
    const ValueId out = passes::addValue(g_, std::move(v));
    Node n;
    n.kind = NodeKind::Kernel;
    n.op = -1;
    n.target = kLayoutCopy;
    n.name = g_.values[out].name;
    n.args = {src};
    n.outputs = {out};
    inserted_.push_back({src, std::move(n)});
    nhwcTag_[out] = toNhwc;
    return out;
  }

  /// input_to_nhwc / input_to_nchw: `target` (a node index, or -1 for the graph output)
  /// reads `in` in the layout asked for, through a copy when it is in the other.
  Status convertInput(ValueId in, long target, bool toNhwc) {
    const Node* user = target >= 0 ? &g_.nodes[size_t(target)] : nullptr;
    auto refuseHere = [&](const std::string& why) -> Status {
      if (user) return refuse(*user, why);
      return Error{ErrorCode::Unsupported, "XNNPACK's preprocess", std::nullopt, "output " + g_.values[in].name, "", why};
    };
    if (isParam(in)) {
      if (nhwcTag_.count(in) && isNhwcNode(in) != toNhwc)
        return refuseHere("the constant " + g_.values[in].name + " is read both channels-last and contiguous");
      nhwcTag_[in] = toNhwc;  // the serializer writes the constant in that layout
    }
    const bool isNhwc = isPlaceholder(in) ? isNhwcTensor(spec(in)) : isNhwcNode(in);
    if (isNhwc == toNhwc) return Ok{};
    if (toNhwc && !canBeNhwc(in)) return refuseHere("a tensor that cannot be made channels-last (" + g_.values[in].name + ")");
    auto p = partner_.find(in);
    const ValueId copy = p != partner_.end() ? p->second : layoutCopy(in, toNhwc);
    const Node* made = producer(in);
    const std::string op = made ? opName(*made) : std::string();
    if (op == "quantized_decomposed::dequantize_per_tensor.default") return copyThenQdq(in, copy);
    if (op == "quantized_decomposed::quantize_per_tensor.default") return dqThenCopyThenQ(in, copy, target);
    if (producedByQuant(in) || producedByDequant(in))
      return refuseHere("a layout change of a tensor quantized other than per tensor (" + g_.values[in].name + ")");
    if (user) replaceInput(size_t(target), in, copy);
    else replaceOutput(in, copy);
    partner_[in] = copy;
    partner_[copy] = in;
    return Ok{};
  }

  /// A quantize or dequantize with a dequantize's or quantize's parameters, placed after `after`,
  /// tagged and laid out as `like`.
  ValueId qdqAfter(ValueId after, ValueId reads, const Node& params, bool quantize, ValueId like, bool implicit) {
    Node n = qdqNode(reads, params, quantize, like, implicit);
    const ValueId out = n.outputs[0];
    inserted_.push_back({after, std::move(n)});
    if (nhwcTag_.count(like)) nhwcTag_[out] = nhwcTag_.at(like);
    return out;
  }
  Node& nodeMaking(ValueId v) {
    for (Node& n : g_.nodes)
      if (!n.outputs.empty() && n.outputs[0] == v) return n;
    for (Inserted& i : inserted_)
      if (i.node.outputs[0] == v) return i.node;
    throw std::runtime_error("a value without the node that makes it");
  }

  /// insert_copy_q_dq: dq -> (copy q dq') -> every reader of dq. The operator after it keeps
  /// reading quantized values; the new q is implicit, and dq' as dq was.
  Status copyThenQdq(ValueId dqOut, ValueId copy) {
    Node& dq = nodeMaking(dqOut);
    const bool dqImplicit = dq.meta.implicitQdq;
    dq.meta.implicitQdq = true;
    const Node params = dq;
    const ValueId q = qdqAfter(copy, copy, params, true, copy, true);
    const ValueId dq2 = qdqAfter(q, q, params, false, copy, dqImplicit);
    // before.replace_all_uses_with(dq'), then the copy reads dq again.
    passes::replaceUses(g_, dqOut, dq2);
    for (Inserted& i : inserted_)
      if (i.node.outputs[0] != copy)
        for (ValueId& a : i.node.args)
          if (a == dqOut) a = dq2;
    nodeMaking(copy).args[0] = dqOut;
    return Ok{};
  }

  /// insert_dq_copy_q: q -> (dq copy q') -> the reader, all of them implicit.
  Status dqThenCopyThenQ(ValueId qOut, ValueId copy, long target) {
    const Node params = nodeMaking(qOut);
    const ValueId dq = qdqAfter(qOut, qOut, params, false, qOut, true);
    nodeMaking(copy).args[0] = dq;
    const ValueId q2 = qdqAfter(copy, copy, params, true, copy, true);
    if (target >= 0) replaceInput(size_t(target), qOut, q2);
    else replaceOutput(qOut, q2);
    return Ok{};
  }

  Status tagChannelsLast() {
    static const std::set<std::string> kNeedsNhwc = {
        "aten::convolution.default", "aten::upsample_bilinear2d.vec", "aten::mean.dim", "aten::max_pool2d.default",
        "aten::amax.default",        "aten::max.dim",                 "aten::avg_pool2d.default", "aten::prelu.default"};
    static const std::set<std::string> kNeedsNchw = {"aten::squeeze_copy.dim", "aten::unsqueeze_copy.default",
                                                     "aten::linear.default", "aten::view_copy.default"};
    for (ValueId v : g_.inputs)
      if (g_.values[v].isTensor() && rank(v) == 4) nhwcTag_[v] = isNhwcTensor(spec(v));
    for (const InputSpec& s : g_.signature.inputs)
      if (s.value >= 0 && g_.values[s.value].isTensor() && rank(s.value) == 4) nhwcTag_[s.value] = isNhwcTensor(spec(s.value));
    const size_t original = g_.nodes.size();
    for (size_t i = 0; i < original; ++i) {
      const Node& n = g_.nodes[i];
      const std::string op = opName(n);
      const ValueId out = n.outputs.empty() ? kNoValue : n.outputs[0];
      const std::vector<ValueId> ins = tensorInputs(n);
      if (ins.empty()) {
        if (out >= 0 && g_.values[out].isTensor() && rank(out) == 4) nhwcTag_[out] = isNhwcTensor(spec(out));
        continue;
      }
      if (kNeedsNhwc.count(op)) {
        if (auto s = convertInput(n.args[0], long(i), true); !s) return s;
        for (size_t k = 1; k < ins.size(); ++k)
          if (isPlaceholder(ins[k]) && isNhwcNode(ins[k])) return refuse(n, "a channels-last operand other than the first");
        nhwcTag_[out] = true;
      } else if (kNeedsNchw.count(op)) {
        for (ValueId v : ins)
          if (auto s = convertInput(v, long(i), false); !s) return s;
      } else if (op == kLayoutCopy) {
        return refuse(n, "a memory-format copy in the partition");
      } else {  // any layout, as long as every operand has the same one
        const size_t nhwc = size_t(std::count_if(ins.begin(), ins.end(), [&](ValueId v) { return isNhwcNode(v); }));
        if (nhwc == ins.size()) {
          nhwcTag_[out] = true;
        } else if (nhwc > 0) {
          const bool allCan = std::all_of(ins.begin(), ins.end(), [&](ValueId v) { return canBeNhwc(v); });
          for (ValueId v : ins)
            if (auto s = convertInput(v, long(i), allCan); !s) return s;
          if (allCan) nhwcTag_[out] = true;
        }
      }
    }
    for (ValueId o : std::vector<ValueId>(g_.outputs))
      if (auto s = convertInput(o, -1, isNhwcTensor(spec(o))); !s) return s;
    placeInsertedCopies();
    return Ok{};
  }

  /// Puts each copy right after what it copies (fx's inserting_after: a later copy after
  /// the same value comes first). A copy of a graph input goes among the placeholders,
  /// so before every operator, in placeholder order.
  void placeInsertedCopies() {
    std::vector<Node> nodes;
    std::function<void(ValueId)> after = [&](ValueId v) {
      for (auto it = inserted_.rbegin(); it != inserted_.rend(); ++it)
        if (it->after == v) {
          nodes.push_back(it->node);
          after(it->node.outputs[0]);
        }
    };
    for (const InputSpec& s : g_.signature.inputs) after(s.value);
    for (ValueId v : g_.inputs)
      if (!inputSpecOf(g_, v)) after(v);
    for (const Node& n : g_.nodes) {
      nodes.push_back(n);
      for (ValueId o : n.outputs) after(o);
    }
    g_.nodes = std::move(nodes);
    inserted_.clear();
  }

  // ---- RemoveRedundantCopyPass -------------------------------------------------------------

  /// Two copies back to back in opposite directions cancel; a copy into the layout its
  /// input already has is dropped.
  void removeRedundantCopies() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (opName(g_.nodes[i]) != kLayoutCopy) continue;
      if (producedByDequant(g_.nodes[i].args[0])) {
        removeRedundantQuantizedCopy(i);
        continue;
      }
      const ValueId in = g_.nodes[i].args[0], out = g_.nodes[i].outputs[0];
      const int producer = passes::producerOf(g_, in);
      const bool inIsCopy = producer >= 0 && opName(g_.nodes[producer]) == kLayoutCopy;
      if (inIsCopy && isNhwcNode(in) != isNhwcNode(out) && userCount(in) == 1) {
        passes::replaceUses(g_, out, g_.nodes[producer].args[0]);
        eraseNodes({size_t(producer), i});
        i -= 2;
      } else if (isNhwcNode(in) == isNhwcNode(out)) {
        passes::replaceUses(g_, out, in);
        eraseNodes({i});
        i -= 1;
      }
    }
  }

  // ---- quantization parameters -----------------------------------------------------------

  static bool isQuantOp(const std::string& op) {
    return op.rfind("quantized_decomposed::quantize_per_", 0) == 0;
  }
  static bool isDequantOp(const std::string& op) {
    return op.rfind("quantized_decomposed::dequantize_per_", 0) == 0;
  }
  /// The node producing v, when it is an operator call in this graph.
  const Node* producer(ValueId v) const {
    const int p = v >= 0 ? passes::producerOf(g_, v) : -1;
    return p >= 0 ? &g_.nodes[size_t(p)] : nullptr;
  }
  bool producedByQuant(ValueId v) const {
    const Node* p = producer(v);
    return p && isQuantOp(opName(*p));
  }
  bool producedByDequant(ValueId v) const {
    const Node* p = producer(v);
    return p && isDequantOp(opName(*p));
  }

  /// QuantParams.from_q_dq_node: the parameters a (static) quantize or dequantize spells.
  QuantParams fromQdqNode(const Node& q) const {
    const std::string op = opName(q);
    QuantParams qp;
    qp.qInput = tensorInputs(q).at(0);
    if (isDynamicQdq(q)) {  // _from_dynamic_input_node
      qp.dynamic = true;
      qp.qInput = q.args.at(0);
      qp.dtype = ScalarType::Float;
      qp.nonbatchDims = feedsIntoConvolution(q) ? 3 : 1;
      qp.isInput = isPlaceholder(qp.qInput);
      return qp;
    }
    if (op.find("per_token") != std::string::npos || op.find(".tensor") != std::string::npos ||
        op.find("per_channel_group") != std::string::npos)
      throw std::runtime_error("values quantized by " + op + " with parameters that are not chosen at run time");
    qp.perChannel = op.find("per_channel") != std::string::npos;
    const size_t at = qp.perChannel ? 4 : 3;  // quant_min, quant_max, dtype follow
    if (qp.perChannel) {
      qp.scales = floats(q.args.at(1));
      qp.zeroPoints = integers(q.args.at(2));
      qp.axis = int64_t(num(q.args.at(3)));
    } else {
      qp.scale = num(q.args.at(1));
      qp.zeroPoint = int64_t(num(q.args.at(2)));
    }
    qp.qmin = int64_t(num(q.args.at(at)));
    qp.qmax = int64_t(num(q.args.at(at + 1)));
    qp.dtype = ScalarType(int(num(q.args.at(at + 2))));
    if (qp.dtype == ScalarType::Byte) throw std::runtime_error("unsigned quantization (XNNPACK does not support it)");
    qp.isOutput = isOutput(q.outputs.at(0));
    qp.isInput = isPlaceholder(qp.qInput);
    return qp;
  }
  /// is_dynamic_qdq: a q/dq whose scale and zero point choose_qparams computes at run time.
  bool isDynamicQdq(const Node& q) const {
    auto chosen = [&](size_t k) {
      const Node* p = k < q.args.size() ? producer(q.args[k]) : nullptr;
      return p && opName(*p).find("choose_qparams") != std::string::npos;
    };
    return chosen(1) && chosen(2);
  }
  /// _feeds_into_conv: the first linear or convolution found walking the readers depth-first.
  bool feedsIntoConvolution(const Node& from) const {
    std::vector<const Node*> stack{&from};
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      const std::string op = opName(*n);
      if (op.find("linear") != std::string::npos) return false;
      if (op.find("convolution") != std::string::npos) return true;
      for (ValueId o : n->outputs)
        for (size_t r : readers(o)) stack.push_back(&g_.nodes[r]);
    }
    return false;
  }
  /// A constant tensor's values, as float32 / int64 (per-channel scales and zero points).
  std::vector<float> floats(ValueId v) const {
    const TensorSpec& t = spec(v);
    if (!isParam(v) || t.dtype != ScalarType::Float || !t.data.data)
      throw std::runtime_error("per-channel scales that are not a float32 constant (" + g_.values[v].name + ")");
    std::vector<float> out(t.data.size / 4);
    std::memcpy(out.data(), t.data.data, out.size() * 4);
    return out;
  }
  std::vector<int64_t> integers(ValueId v) const {
    const TensorSpec& t = spec(v);
    if (!isParam(v) || !t.data.data || (t.dtype != ScalarType::Long && t.dtype != ScalarType::Int))
      throw std::runtime_error("per-channel zero points that are not an integer constant (" + g_.values[v].name + ")");
    const size_t size = elementSize(t.dtype), count = t.data.size / size;
    std::vector<int64_t> out(count);
    for (size_t i = 0; i < count; ++i) {
      if (size == 8) std::memcpy(&out[i], t.data.data + i * 8, 8);
      else { int32_t x; std::memcpy(&x, t.data.data + i * 4, 4); out[i] = x; }
    }
    return out;
  }

  /// QuantParams.from_weights: a weight read through a dequantize (of a quantize) of a constant.
  std::optional<QuantParams> fromWeights(ValueId w) const {
    const Node* dq = producer(w);
    if (!dq || !isDequantOp(opName(*dq))) return std::nullopt;
    const Node* src = dq;
    if (const Node* q = producer(tensorInputs(*dq).at(0)); q && isQuantOp(opName(*q))) src = q;
    if (!isPlaceholder(tensorInputs(*src).at(0)))
      throw std::runtime_error("a quantized weight that is not derived from a constant");
    return fromQdqNode(*src);
  }
  /// QuantParams.from_inputs: a value made by an implicit dequantize is read quantized.
  std::optional<QuantParams> fromInputs(ValueId v) const {
    const Node* dq = producer(v);
    if (!dq || !isDequantOp(opName(*dq)) || !dq->meta.implicitQdq) return std::nullopt;
    if (const Node* q = producer(dq->args.at(0)); q && isQuantOp(opName(*q)) && isParam(q->args.at(0)))
      return fromQdqNode(*q);
    return fromQdqNode(*dq);
  }
  /// QuantParams.from_outputs: a value whose only reader is an implicit quantize is written quantized.
  std::optional<QuantParams> fromOutputs(ValueId v) const {
    if (userCount(v) != 1 || isOutput(v)) return std::nullopt;
    const Node& q = g_.nodes[readers(v).at(0)];
    if (!isQuantOp(opName(q)) || !q.meta.implicitQdq) return std::nullopt;
    return fromQdqNode(q);
  }
  /// QuantParams.from_bias: int32, scaled by the input's scale times the weight's.
  std::optional<QuantParams> fromBias(ValueId bias, const std::optional<QuantParams>& weight,
                                      const std::optional<QuantParams>& input) const {
    if (!weight || !input) {
      if (weight || input) throw std::runtime_error("weight and input should both be quantized");
      return std::nullopt;
    }
    if (input->dynamic) return std::nullopt;  // the bias stays float32
    if (input->perChannel) throw std::runtime_error("an input quantized per channel");
    QuantParams qp;
    qp.perChannel = weight->perChannel;
    qp.qInput = bias;
    if (qp.perChannel) {
      // torch: a float32 tensor times a Python float, in float32
      for (float x : weight->scales) qp.scales.push_back(x * float(input->scale));
      qp.zeroPoints.assign(weight->zeroPoints.size(), 0);
    } else {
      qp.scale = weight->scale * input->scale;
    }
    qp.dtype = ScalarType::Int;
    qp.qmin = -(int64_t(1) << 31);
    qp.qmax = (int64_t(1) << 31) - 1;
    return qp;
  }

  /// quantize_tensor: quantized_decomposed's quantize_per_tensor / quantize_per_channel on a
  /// float32 constant (a bias), in float32 as torch computes them: round half to even, clamp.
  static std::string quantize(const TensorSpec& t, const QuantParams& qp) {
    const size_t count = t.data.size / 4;
    std::vector<float> in(count);
    std::memcpy(in.data(), t.data.data, count * 4);
    const size_t out = elementSize(qp.dtype);
    std::string bytes(count * out, '\0');
    int64_t inner = 1, channels = 1;
    if (qp.perChannel) {
      channels = t.sizes.at(size_t(qp.axis));
      for (size_t d = size_t(qp.axis) + 1; d < t.sizes.size(); ++d) inner *= t.sizes[d];
      if (int64_t(qp.scales.size()) != channels) throw std::runtime_error("per-channel scales that do not match the tensor");
    }
    for (size_t i = 0; i < count; ++i) {
      float x;
      if (qp.perChannel) {
        const size_t c = size_t((int64_t(i) / inner) % channels);
        x = std::nearbyint(in[i] * (1.0f / qp.scales[c])) + float(qp.zeroPoints[c]);
      } else {
        x = std::nearbyint(in[i] * float(1.0 / qp.scale)) + float(qp.zeroPoint);
      }
      x = std::min(std::max(x, float(qp.qmin)), float(qp.qmax));
      if (out == 4) {
        const int32_t y = int32_t(x);
        std::memcpy(&bytes[i * 4], &y, 4);
      } else {
        bytes[i] = char(int8_t(x));
      }
    }
    return bytes;
  }

  /// _try_remove_quantized_redundant_to_copy: in dq -> copy -> q -> dq -> copy' -> q', two copies
  /// in opposite directions cancel (q''s readers read what the first dq read); copy' into the
  /// layout the first copy already made is dropped with its q/dq. `i` (copy') is kept pointing
  /// at the last node visited.
  void removeRedundantQuantizedCopy(size_t& i) {
    const ValueId copyOut = g_.nodes[i].outputs[0];
    if (userCount(copyOut) != 1 || isOutput(copyOut)) return;
    const ValueId qOut = g_.nodes[readers(copyOut)[0]].outputs.at(0);
    if (!producedByQuant(qOut)) return;
    const Node* dq = producer(g_.nodes[i].args[0]);
    if (tensorInputs(*dq).size() != 1) return;
    const Node* prevQ = producer(dq->args[0]);
    if (!prevQ || !isQuantOp(opName(*prevQ)) || tensorInputs(*prevQ).size() != 1) return;
    const ValueId prevCopyOut = prevQ->args[0];
    const Node* prevCopy = producer(prevCopyOut);
    std::vector<ValueId> removable;
    if (prevCopy && opName(*prevCopy) == kLayoutCopy && isNhwcNode(prevCopyOut) != isNhwcNode(copyOut) &&
        userCount(prevCopyOut) == 1) {
      const Node* prevDq = producer(prevCopy->args[0]);
      if (!prevDq || !isDequantOp(opName(*prevDq)) || tensorInputs(*prevDq).size() != 1) return;
      passes::replaceUses(g_, qOut, prevDq->args[0]);
      removable = {qOut, copyOut, dq->outputs[0], prevQ->outputs[0], prevCopyOut, prevDq->outputs[0]};
    } else if (isNhwcNode(prevCopyOut) == isNhwcNode(copyOut)) {
      passes::replaceUses(g_, qOut, dq->args[0]);
      removable = {qOut, copyOut, dq->outputs[0]};
    } else {
      return;
    }
    for (ValueId v : removable) {  // _safe_remove_node: only what nothing reads any more
      const int k = passes::producerOf(g_, v);
      if (k < 0 || userCount(v) != 0) continue;
      eraseNodes({size_t(k)});
      if (size_t(k) <= i) --i;
    }
  }

  // ---- values ------------------------------------------------------------------------------

  /// generate_node_to_external_map: user inputs in graph order, then the outputs.
  void externalIds() {
    for (ValueId v : g_.inputs)
      if (isUserInput(v)) external_[v] = externals_++;
    for (ValueId v : g_.outputs) external_[v] = externals_++;
  }

  /// define_tensor. `forceFp32`: a float16/bfloat16 tensor written as float32 (a convolution's
  /// weight and bias, a dynamically quantized or bfloat16 linear's bias), as upstream forces it.
  Status defineTensor(const Node& n, ValueId v, Layout layout = {}, const std::optional<QuantParams>& qp = std::nullopt,
                      bool forceFp32 = false) {
    if (ids_.count(v)) return Ok{};
    if (qp && ids_.count(qp->qInput)) {  // the same tensor, already defined by what it quantizes
      ids_[v] = ids_.at(qp->qInput);
      return Ok{};
    }
    layout.nhwc = layout.nhwc || isNhwcNode(v);
    const TensorSpec& t = spec(v);
    const bool halfWidth = t.dtype == ScalarType::Half || t.dtype == ScalarType::BFloat16;
    if (!qp && t.dtype != ScalarType::Float && !halfWidth)
      return refuse(n, "a " + std::string(scalarTypeName(t.dtype)) + " tensor (" + g_.values[v].name +
                           "): XNNPACK's delegate takes float32, float16, bfloat16 and int8-quantized values");
    const uint32_t id = uint32_t(xvalues_.size());
    uint32_t ext = kInvalidId, flags = 0;
    // gen_ids_and_flags: a tensor quantized from a graph input is that input, one quantized
    // into a graph output that output.
    const ValueId io = qp && qp->dynamic ? qp->qInput : v;  // dynamic quantization is the float tensor itself
    const bool quantizedInput = qp && qp->isInput && !isParam(qp->qInput);
    if (isUserInput(io) || quantizedInput) {
      const ValueId in = quantizedInput && !isUserInput(io) ? qp->qInput : io;
      if (!external_.count(in)) return refuse(n, "an input of the delegate that is not one of its graph's inputs");
      ext = external_.at(in);
      inputIds_.push_back(id);
      flags = kFlagExternalInput;
    } else if (isOutput(io) || (qp && qp->isOutput)) {
      ValueId out = io;
      if (!isOutput(io)) {
        const std::vector<size_t> rs = readers(io);
        if (rs.empty()) return refuse(n, "a quantized output without its quantize");
        out = g_.nodes[rs[0]].outputs.at(0);
      }
      if (!external_.count(out)) return refuse(n, "an output of the delegate that is not one of its graph's outputs");
      ext = external_.at(out);
      outputIds_.push_back(id);
      flags = kFlagExternalOutput;
    }
    // get_shape: a dynamic size as its upper bound.
    std::vector<int64_t> dims = t.sizes;
    for (size_t d = 0; d < dims.size() && d < t.symbols.size(); ++d) {
      if (t.symbols[d].empty()) continue;
      auto bound = passes::sizeUpperBound(t.symbols[d], g_.symbolRanges);
      if (!bound) return refuse(n, "the size " + t.symbols[d] + " of " + g_.values[v].name + " has no upper bound");
      dims[d] = *bound;
    }
    if (dims.empty()) dims = {1};
    uint32_t buffer = 0;
    const ValueId stored = qp ? qp->qInput : v;  // a quantized constant's bytes are its q/dq input's
    if (isParam(stored)) {
      auto b = constantBuffer(n, stored, layout, qp, forceFp32);
      if (!b) return b.error();
      buffer = *b;
    } else if (layout.swapInOut) {
      return refuse(n, "a convolution weight that is not a constant");
    }
    if (layout.swapInOut) dims = {dims[1] * layout.groups, dims[0] / layout.groups, dims[2], dims[3]};
    if (layout.nhwc) {
      if (dims.size() != 4) return refuse(n, "a channels-last tensor that is not 4-dimensional (" + g_.values[v].name + ")");
      dims = {dims[0], dims[2], dims[3], dims[1]};
    }
    int datatype = kFp32;
    if (!qp && halfWidth && !forceFp32) datatype = t.dtype == ScalarType::Half ? kFp16 : kBf16;
    if (qp && qp->dynamic) {
      datatype = kQdint8;
    } else if (qp) {
      const bool int32 = qp->dtype == ScalarType::Int;
      if (!int32 && qp->dtype != ScalarType::Char) return refuse(n, "a value quantized to " + std::string(scalarTypeName(qp->dtype)));
      if (qp->perChannel && !int32 && qp->qmin == -8 && qp->qmax == 7)
        return refuse(n, "4-bit per-channel weights (not written here yet)");
      datatype = qp->perChannel ? (int32 ? kQcint32 : kQcint8) : (int32 ? kQint32 : kQint8);
    }
    Json tv;
    tv["datatype"] = datatype;
    tv["num_dims"] = dims.size();
    tv["dims"] = dims;
    tv["constant_buffer_idx"] = buffer;
    tv["external_id"] = ext;
    tv["flags"] = flags;
    tv["id_out"] = id;
    Json xv;
    if (!qp) {
      xv["xvalue_union"] = std::move(tv);
      xv["xvalue_union_type"] = "XNNTensorValue";
    } else {
      Json q;
      Json params;
      const char* kind = "PerTensorQuant";
      if (qp->dynamic) {
        params["num_nonbatch_dims"] = qp->nonbatchDims;
        kind = "PerTokenDynamicQuant";
      } else if (qp->perChannel) {
        // A depthwise or transposed convolution's weight has its output channels last now.
        int64_t axis = qp->axis;
        if (layout.swapInOut) axis = axis == 0 ? int64_t(dims.size()) - 1 : axis == 1 ? 0 : axis;
        std::string scaleBytes(qp->scales.size() * 4, '\0');
        std::memcpy(scaleBytes.data(), qp->scales.data(), scaleBytes.size());
        params["scale"] = Json::array();
        params["channel_dim"] = axis;
        params["scale_buffer_idx"] = namedConstant("scale_", std::move(scaleBytes));
        params["num_scales"] = qp->scales.size();
        kind = "PerChannelQuant";
      } else {
        params["scale"] = qp->scale;
        params["zero_point"] = qp->zeroPoint;
      }
      q["tensor_value"] = std::move(tv);
      q["quant_params"] = std::move(params);
      q["quant_params_type"] = kind;
      xv["xvalue_union"] = std::move(q);
      xv["xvalue_union_type"] = "XNNQuantizedTensorValue";
    }
    xvalues_.push_back(std::move(xv));
    ids_[v] = id;
    if (qp) ids_[qp->qInput] = id;
    return Ok{};
  }

  /// get_serialized_buffer_index: the constant's bytes (float32, or quantized as `qp` says) in
  /// the layout asked for, named by their SHA-256 in the named data (once per key).
  Result<uint32_t> constantBuffer(const Node& n, ValueId v, const Layout& layout, const std::optional<QuantParams>& qp,
                                  bool forceFp32) {
    const TensorSpec& t = spec(v);
    const auto bytes = t.nbytes();
    if (!t.data.data || !bytes || t.data.size != *bytes || *bytes == 0)
      return refuse(n, "the constant " + g_.values[v].name + " without its bytes");
    for (size_t i = 0; i < t.dimOrder.size(); ++i)
      if (t.dimOrder[i] != i) return refuse(n, "the constant " + g_.values[v].name + " is not contiguous");
    std::string data;
    size_t element = 4;
    if (qp && t.dtype != qp->dtype) {
      if (t.dtype != ScalarType::Float) return refuse(n, "a quantized constant that is neither float32 nor already quantized");
      data = quantize(t, *qp);
      element = elementSize(qp->dtype);
    } else if (!qp && (t.dtype == ScalarType::Half || t.dtype == ScalarType::BFloat16) && forceFp32) {
      const size_t count = t.data.size / 2;
      data.resize(count * 4);
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data.data + i * 2, 2);
        const float f = t.dtype == ScalarType::Half ? halfToFloat(h) : bfloat16ToFloat(h);
        std::memcpy(&data[i * 4], &f, 4);
      }
      element = 4;
    } else {
      if (!qp && t.dtype != ScalarType::Float && t.dtype != ScalarType::Half && t.dtype != ScalarType::BFloat16)
        return refuse(n, "the constant " + g_.values[v].name + " is not a float tensor");
      data.assign(reinterpret_cast<const char*>(t.data.data), t.data.size);
      element = elementSize(t.dtype);
    }
    if (layout.swapInOut || layout.nhwc) {
      if (t.sizes.size() != 4) return refuse(n, "a channels-last constant that is not 4-dimensional (" + g_.values[v].name + ")");
      std::vector<int64_t> s = t.sizes;
      if (layout.swapInOut) {
        // (g, A/g, B, h, w) -> (g, B, A/g, h, w), read as (B*g, A/g, h, w).
        const int64_t g = layout.groups, a = s[0] / g, b = s[1], hw = s[2] * s[3];
        std::string swapped(data.size(), '\0');
        for (int64_t gi = 0; gi < g; ++gi)
          for (int64_t ai = 0; ai < a; ++ai)
            for (int64_t bi = 0; bi < b; ++bi)
              std::memcpy(&swapped[size_t(((gi * b + bi) * a + ai) * hw) * element],
                          &data[size_t(((gi * a + ai) * b + bi) * hw) * element], size_t(hw) * element);
        data = std::move(swapped);
        s = {b * g, a, s[2], s[3]};
      }
      if (layout.nhwc) {  // channels_last: [N, C, H, W] stored as N, H, W, C
        std::string cl(data.size(), '\0');
        const int64_t c = s[1], hw = s[2] * s[3];
        for (int64_t ni = 0; ni < s[0]; ++ni)
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t p = 0; p < hw; ++p)
              std::memcpy(&cl[size_t((ni * hw + p) * c + ci) * element], &data[size_t((ni * c + ci) * hw + p) * element], element);
        data = std::move(cl);
      }
    }
    return namedConstant("", std::move(data));
  }

  /// A ConstantDataOffset found by its named key (`prefix` + the bytes' SHA-256).
  uint32_t namedConstant(const std::string& prefix, std::string data) {
    const std::string key = prefix + xnnpack::sha256Hex(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    const uint32_t index = uint32_t(constantData_.size());
    Json c;
    c["offset"] = kNamedOffset;
    c["size"] = data.size();
    c["named_key"] = key;
    constantData_.push_back(std::move(c));
    if (namedKeys_.insert(key).second) named_.emplace_back(key, std::move(data));
    return index;
  }

  uint32_t id(ValueId v) const { return ids_.at(v); }

  // ---- node visitors -------------------------------------------------------------------

  void addNode(const Node& n, const char* type, Json body) {
    Json x;
    x["xnode_union"] = std::move(body);
    x["xnode_union_type"] = type;
    x["debug_handle"] = n.meta.debugHandle.value_or(kDefaultDebugHandle);
    auto mm = n.outputs.empty() ? minMax_.end() : minMax_.find(n.outputs[0]);
    x["output_min_max"] = mm != minMax_.end() ? mm->second : Json(nullptr);
    xnodes_.push_back(std::move(x));
  }

  /// define_nodes_tensor_inputs_outputs: the result first, then every tensor read.
  Status defineResultThenInputs(const Node& n, Layout layout = {}) {
    if (auto s = defineTensor(n, n.outputs[0], layout, fromOutputs(n.outputs[0])); !s) return s;
    for (ValueId v : tensorInputs(n))
      if (auto s = defineTensor(n, v, layout, fromInputs(v)); !s) return s;
    return Ok{};
  }
  /// add, sub, mul: both operands, then the result.
  Status defineOperandsThenResult(const Node& n, size_t operands) {
    for (size_t k = 0; k < operands; ++k)
      if (auto s = defineTensor(n, n.args[k], {}, fromInputs(n.args[k])); !s) return s;
    return defineTensor(n, n.outputs[0], {}, fromOutputs(n.outputs[0]));
  }

  static Json node1x1(uint32_t in, uint32_t out, uint32_t flags = 0) {
    return Json{{"input_id", in}, {"output_id", out}, {"flags", flags}};
  }
  static Json node2x1(uint32_t a, uint32_t b, uint32_t out) {
    return Json{{"input1_id", a}, {"input2_id", b}, {"output_id", out}, {"flags", 0}};
  }

  Status visit(const Node& n) {
    const std::string op = opName(n);
    static const std::map<std::string, const char*> kUnary = {
        {"aten::abs.default", "XNNAbs"},       {"aten::ceil.default", "XNNCeiling"},
        {"aten::cos.default", "XNNCos"},       {"aten::exp.default", "XNNExp"},
        {"aten::floor.default", "XNNFloor"},   {"aten::gelu.default", "XNNGelu"},
        {"aten::hardswish.default", "XNNHardswish"}, {"aten::log.default", "XNNLog"},
        {"aten::neg.default", "XNNNegate"},    {"aten::rsqrt.default", "XNNReciprocalSquareRoot"},
        {"aten::sigmoid.default", "XNNSigmoid"}, {"aten::sin.default", "XNNSin"},
        {"aten::sqrt.default", "XNNSquareRoot"}, {"aten::tanh.default", "XNNTanh"},
        {"aten::pow.Tensor_Scalar", "XNNSquare"}, {"aten::_softmax.default", "XNNSoftmax"}};
    static const std::map<std::string, const char*> kBinaryResultFirst = {
        {"aten::div.Tensor", "XNNDiv"}, {"aten::maximum.default", "XNNMaximum"},
        {"aten::minimum.default", "XNNMinimum"}, {"aten::bmm.default", "XNNBatchMatrixMultiply"}};
    static const std::map<std::string, const char*> kBinaryOperandsFirst = {
        {"aten::add.Tensor", "XNNAdd"}, {"aten::sub.Tensor", "XNNSubtract"}, {"aten::mul.Tensor", "XNNMultiply"}};
    if (auto it = kUnary.find(op); it != kUnary.end()) {
      if (op == "aten::_softmax.default") {
        const int64_t dim = int64_t(num(n.args[1]));
        const int64_t r = int64_t(rank(n.args[0]));
        if (dim != -1 && dim != r - 1) return refuse(n, "softmax over a dimension that is not the last");
      }
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, it->second, node1x1(id(n.args[0]), id(n.outputs[0])));
      return Ok{};
    }
    if (auto it = kBinaryResultFirst.find(op); it != kBinaryResultFirst.end()) {
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, it->second, node2x1(id(n.args[0]), id(n.args[1]), id(n.outputs[0])));
      return Ok{};
    }
    if (auto it = kBinaryOperandsFirst.find(op); it != kBinaryOperandsFirst.end()) {
      if (op != "aten::mul.Tensor" && spelled(n, 2) && numberOf(g_, n.args[2]).value_or(1) != 1)
        return refuse(n, "an alpha other than 1");
      if (auto s = defineOperandsThenResult(n, 2); !s) return s;
      addNode(n, it->second, node2x1(id(n.args[0]), id(n.args[1]), id(n.outputs[0])));
      return Ok{};
    }
    if (op == "aten::linear.default") return linear(n);
    if (isQuantOp(op) || isDequantOp(op)) return quantizeNode(n, isDequantOp(op));
    if (op.rfind("quantized_decomposed::choose_qparams", 0) == 0) return Ok{};  // XNNPACK chooses them itself
    if (op == "aten::addmm.default") {  // bias + input @ weight: a fully connected layer on the weight transposed
      if ((spelled(n, 3) && numberOf(g_, n.args[3]).value_or(1) != 1) || (spelled(n, 4) && numberOf(g_, n.args[4]).value_or(1) != 1))
        return refuse(n, "an addmm with beta or alpha other than 1");
      // define_nodes_tensor_inputs_outputs with its input type map: output, input, weight, bias.
      const std::optional<QuantParams> input = fromInputs(n.args[1]), weight = fromWeights(n.args[2]);
      if (auto s = defineTensor(n, n.outputs[0], {}, fromOutputs(n.outputs[0])); !s) return s;
      if (auto s = defineTensor(n, n.args[1], {}, input); !s) return s;
      if (auto s = defineTensor(n, n.args[2], {}, weight); !s) return s;
      if (auto s = defineTensor(n, n.args[0], {}, fromBias(n.args[0], weight, input),
                                spec(n.args[2]).dtype == ScalarType::BFloat16); !s) return s;
      addNode(n, "XNNFullyConnected",
              Json{{"input1_id", id(n.args[1])}, {"filter_id", id(n.args[2])}, {"bias_id", id(n.args[0])},
                   {"output_id", id(n.outputs[0])}, {"flags", kFlagTransposeWeights}});
      return Ok{};
    }
    if (op == "aten::convolution.default") return convolution(n);
    if (op == kLayoutCopy) return layoutCopyNode(n);
    if (op == "aten::mean.dim") return globalAvgPool(n);
    if (op == "aten::max_pool2d.default" || op == "aten::avg_pool2d.default") return pool(n, op);
    if (op == "aten::constant_pad_nd.default") return constantPad(n);
    if (op == "aten::upsample_bilinear2d.vec") {  // StaticResizeBilinear2DVisitor: result, then input, NHWC
      if (rank(n.args[0]) != 4) return refuse(n, "a bilinear upsampling whose input is not 4-dimensional");
      if (auto s = defineTensor(n, n.outputs[0], {true}); !s) return s;
      if (auto s = defineTensor(n, n.args[0], {true}); !s) return s;
      const std::vector<int64_t>& size = spec(n.outputs[0]).sizes;
      constexpr uint32_t kFlagAlignCorners = 0x8;  // XNN_FLAG_ALIGN_CORNERS
      addNode(n, "XNNStaticResizeBilinear2D",
              Json{{"new_height", size[2]}, {"new_width", size[3]}, {"input_id", id(n.args[0])},
                   {"output_id", id(n.outputs[0])}, {"flags", num(n.args.at(2)) != 0 ? kFlagAlignCorners : 0u}});
      return Ok{};
    }
    if (op == "aten::relu.default" || op == "aten::hardtanh.default" || op == "aten::clamp.default")
      return clamp(n, op);
    if (op == "aten::leaky_relu.default" || op == "aten::elu.default") {
      if (auto s = defineResultThenInputs(n); !s) return s;
      Json body;
      if (op == "aten::leaky_relu.default") {
        body["negative_slope"] = spelled(n, 1) ? num(n.args[1]) : 0.01;
      } else {
        body["alpha"] = num(n.args[1]);
      }
      body.update(node1x1(id(n.args[0]), id(n.outputs[0])));
      addNode(n, op == "aten::elu.default" ? "XNNELU" : "XNNLeakyReLU", std::move(body));
      return Ok{};
    }
    if (op == "aten::mm.default") {
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, "XNNFullyConnected",
              Json{{"input1_id", id(n.args[0])}, {"filter_id", id(n.args[1])}, {"bias_id", kInvalidId},
                   {"output_id", id(n.outputs[0])}, {"flags", kFlagTransposeWeights}});
      return Ok{};
    }
    if (op == "aten::permute_copy.default") {
      if (auto s = defineResultThenInputs(n); !s) return s;
      std::vector<int64_t> perm = ints(n.args[1]);
      const int64_t r = int64_t(rank(n.args[0]));
      for (int64_t& d : perm) d = d < 0 ? d + r : d;
      if (isNhwcNode(n.outputs[0])) {  // the same permutation, on channels-last dims
        if (perm.size() != 4) return refuse(n, "a channels-last permute that is not 4-dimensional");
        std::vector<int64_t> contiguous(4), channelsLast(4);
        for (size_t k = 0; k < 4; ++k) contiguous[k] = kNhwcToNchw[perm[k]];
        for (size_t k = 0; k < 4; ++k) channelsLast[k] = contiguous[kNchwToNhwc[k]];
        perm = channelsLast;
      }
      addNode(n, "XNNStaticTranspose",
              Json{{"num_dims", perm.size()}, {"perm", perm}, {"input_id", id(n.args[0])},
                   {"output_id", id(n.outputs[0])}, {"flags", 0}});
      return Ok{};
    }
    if (op == "aten::view_copy.default" || op == "aten::squeeze_copy.dim" || op == "aten::unsqueeze_copy.default") {
      std::vector<int64_t> shape;
      if (op == "aten::view_copy.default") {
        if (!staticInts(n.args[1])) return refuse(n, "a reshape to a symbolic size");
        shape = ints(n.args[1]);
        for (int64_t& d : shape) d = d == -1 ? 0 : d;  // XNNPACK infers a 0
        if (nhwcTag_.count(n.outputs[0])) {
          if (shape.size() != 4) return refuse(n, "a channels-last reshape that is not 4-dimensional");
          shape = {shape[0], shape[2], shape[3], shape[1]};
        }
      } else {  // the result's shape, a dynamic size as 0 (XNNPACK infers it)
        if (op == "aten::squeeze_copy.dim") {
          const int64_t dim = int64_t(numberOf(g_, n.args[1]).value_or(0));
          if (dim != -1 && dim != int64_t(rank(n.args[0])) - 1) return refuse(n, "a squeeze of other than the last dimension");
        }
        const TensorSpec& t = spec(n.outputs[0]);
        shape = t.sizes;
        for (size_t d = 0; d < shape.size() && d < t.symbols.size(); ++d)
          if (!t.symbols[d].empty()) shape[d] = 0;
      }
      if (std::count(shape.begin(), shape.end(), 0) > 1) return refuse(n, "a reshape with more than one dynamic size");
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, "XNNStaticReshape",
              Json{{"num_dims", shape.size()}, {"new_shape", shape}, {"input_id", id(n.args[0])},
                   {"output_id", id(n.outputs[0])}, {"flags", 0}});
      return Ok{};
    }
    if (op == "aten::clone.default" || op == "dim_order_ops::_clone_dim_order.default") {  // one the clone removal kept
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, "XNNCopy", node1x1(id(n.args[0]), id(n.outputs[0])));
      return Ok{};
    }
    if (op == "aten::slice_copy.Tensor") return slice(n);
    if (op == "aten::cat.default") return cat(n);
    return refuse(n, op.empty() ? "an operator without a name" : "an operator the studio's XNNPACK preprocess has no visitor for yet");
  }

  /// FullyConnected: input, weight, bias, output; quantized as the q/dq around them say.
  Status linear(const Node& n) {
    const std::optional<QuantParams> input = fromInputs(n.args[0]), weight = fromWeights(n.args[1]);
    if (auto s = defineTensor(n, n.args[0], {}, input); !s) return s;
    if (auto s = defineTensor(n, n.args[1], {}, weight); !s) return s;
    uint32_t bias = kInvalidId;
    if (spelled(n, 2)) {
      // No fp16 bias kernels with dynamic quantization; bf16 fully connected takes a float32 bias.
      const bool forceFp32 = (input && input->dynamic) || spec(n.args[1]).dtype == ScalarType::BFloat16;
      if (auto s = defineTensor(n, n.args[2], {}, fromBias(n.args[2], weight, input), forceFp32); !s) return s;
      bias = id(n.args[2]);
    }
    if (auto s = defineTensor(n, n.outputs[0], {}, fromOutputs(n.outputs[0])); !s) return s;
    addNode(n, "XNNFullyConnected",
            Json{{"input1_id", id(n.args[0])}, {"filter_id", id(n.args[1])}, {"bias_id", bias},
                 {"output_id", id(n.outputs[0])}, {"flags", 0}});
    return Ok{};
  }

  /// A quantize or dequantize XNNPACK does not fold into its neighbours is a conversion
  /// between float32 and int8; one it folds (implicit) names the same tensor as its input.
  Status quantizeNode(const Node& n, bool dequantize) {
    const std::string op = opName(n);
    const ValueId in = n.args[0], out = n.outputs[0];
    if (isDynamicQdq(n)) {  // always a conversion to qdint8; its dequantize names the same tensor
      if (dequantize) {
        if (ids_.count(in)) ids_[out] = ids_.at(in);
        return Ok{};
      }
      QuantParams qp = fromQdqNode(n);
      if (auto s = defineTensor(n, in); !s) return s;
      qp.qInput = out;
      qp.isInput = false;
      if (auto s = defineTensor(n, out, {}, qp); !s) return s;
      addNode(n, "XNNConvert", node1x1(id(in), id(out)));
      return Ok{};
    }
    if (op.find("per_tensor.default") == std::string::npos) {
      fromQdqNode(n);  // per channel: only a weight's, read by its operator
      return Ok{};
    }
    QuantParams qp = fromQdqNode(n);
    if (!std::isfinite(qp.scale) || (qp.scale != 0 && !std::isnormal(float(qp.scale))))
      return refuse(n, "a scale that is not finite and normal");
    if (qp.zeroPoint < -128 || qp.zeroPoint > 127) return refuse(n, "a zero point outside int8's range");
    if (n.meta.implicitQdq) {
      if (ids_.count(in)) ids_[out] = ids_.at(in);
      return Ok{};
    }
    if (dequantize) {
      if (auto s = defineTensor(n, out); !s) return s;  // float32
      qp.isOutput = false;
      if (auto s = defineTensor(n, in, {}, qp); !s) return s;
    } else {
      if (auto s = defineTensor(n, in); !s) return s;  // float32
      qp.qInput = out;
      qp.isInput = false;
      if (auto s = defineTensor(n, out, {}, qp); !s) return s;
    }
    addNode(n, "XNNConvert", node1x1(id(in), id(out)));
    return Ok{};
  }

  /// Conv2d's visitor: input, filter, output, bias, each channels-last but the bias.
  Status convolution(const Node& n) {
    const ValueId in = n.args[0], w = n.args[1], out = n.outputs[0];
    if (rank(in) != 4) return refuse(n, "a convolution that is not 2-dimensional (XNNPACK's Conv1dUnsqueezePass is not written here yet)");
    const std::vector<int64_t> ks = spec(w).sizes;
    const int64_t groups = int64_t(num(n.args[8]));
    const bool transposed = numberOf(g_, n.args[6]).value_or(0) != 0;
    const int64_t groupIn = transposed ? ks[0] / groups : ks[1];
    const int64_t groupOut = transposed ? ks[1] : ks[0] / groups;
    const bool depthwise = groupIn == 1 && groupOut % groupIn == 0 && !transposed;
    const std::optional<QuantParams> input = fromInputs(in), weight = fromWeights(w);
    if (weight && weight->perChannel && ((transposed && (weight->axis != 1 || groups != 1)) || (depthwise && weight->axis != 0)))
      return refuse(n, "per-channel weights along a dimension XNNPACK cannot take for this convolution");
    if (auto s = defineTensor(n, in, {true}, input); !s) return s;
    if (auto s = defineTensor(n, w, {true, depthwise || transposed, transposed ? groups : 1}, weight, true); !s) return s;
    if (auto s = defineTensor(n, out, {true}, fromOutputs(out)); !s) return s;
    uint32_t bias = kInvalidId;
    if (spelled(n, 2)) {
      if (auto s = defineTensor(n, n.args[2], {}, fromBias(n.args[2], weight, input), true); !s) return s;
      bias = id(n.args[2]);
    }
    auto pair = [&](size_t k) {
      std::vector<int64_t> v = ints(n.args[k]);
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    const std::vector<int64_t> stride = pair(3), padding = pair(4), dilation = pair(5), outPad = pair(7);
    if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2 || outPad.size() != 2)
      return refuse(n, "a convolution that is not 2-dimensional");
    Json body{{"padding_top", padding[0]},     {"padding_right", padding[1]},   {"padding_bottom", padding[0]},
              {"padding_left", padding[1]},    {"kernel_height", ks[2]},        {"kernel_width", ks[3]},
              {"subsampling_height", stride[0]}, {"subsampling_width", stride[1]}, {"dilation_height", dilation[0]},
              {"dilation_width", dilation[1]}, {"group_input_channels", groupIn}, {"group_output_channels", groupOut},
              {"groups", groups},              {"adjustment_height", outPad[0]}, {"adjustment_width", outPad[1]},
              {"input1_id", id(in)},           {"filter_id", id(w)},            {"bias_id", bias},
              {"output_id", id(out)},          {"flags", 0}};
    addNode(n, depthwise ? "XNNDepthwiseConv2d" : transposed ? "XNNConvTranspose2d" : "XNNConv2d", std::move(body));
    return Ok{};
  }

  /// ConvertMemoryFormat: a layout copy is a transpose between NCHW and NHWC.
  Status layoutCopyNode(const Node& n) {
    const bool toNhwc = isNhwcNode(n.outputs[0]);
    const std::optional<QuantParams> input = fromInputs(n.args[0]), output = fromOutputs(n.outputs[0]);
    if (auto s = defineTensor(n, n.args[0], {!toNhwc && rank(n.args[0]) == 4}, input); !s) return s;
    if (auto s = defineTensor(n, n.outputs[0], {toNhwc}, output); !s) return s;
    const int64_t* perm = toNhwc ? kNchwToNhwc : kNhwcToNchw;
    addNode(n, "XNNStaticTranspose",
            Json{{"num_dims", 4}, {"perm", std::vector<int64_t>(perm, perm + 4)}, {"input_id", id(n.args[0])},
                 {"output_id", id(n.outputs[0])}, {"flags", 0}});
    return Ok{};
  }

  /// mean over H and W, dims kept: global average pooling.
  Status globalAvgPool(const Node& n) {
    if (rank(n.args[0]) != 4) return refuse(n, "a mean whose input is not 4-dimensional");
    std::vector<int64_t> dims = ints(n.args[1]);
    for (int64_t& d : dims) d = d < 0 ? d + 4 : d;
    std::sort(dims.begin(), dims.end());
    if (dims != std::vector<int64_t>{2, 3}) return refuse(n, "a mean over other dimensions than the innermost two");
    if (!spelled(n, 2) || numberOf(g_, n.args[2]).value_or(0) == 0) return refuse(n, "a mean that does not keep its dimensions");
    if (spelled(n, 3)) return refuse(n, "a mean with a dtype");
    if (auto s = defineResultThenInputs(n, {true}); !s) return s;
    addNode(n, "XNNGlobalAvgPooling2d", node1x1(id(n.args[0]), id(n.outputs[0]), kFlagKeepDims));
    return Ok{};
  }

  Status pool(const Node& n, const std::string& op) {
    const bool isMax = op == "aten::max_pool2d.default";
    if (rank(n.args[0]) != 4) return refuse(n, "a pooling whose input is not 4-dimensional");
    if (auto s = defineResultThenInputs(n, {true}); !s) return s;
    // normalize_pool2d_args: one value broadcasts; no stride means the kernel's.
    auto pair = [&](size_t k, std::vector<int64_t> fallback) {
      std::vector<int64_t> v = k < n.args.size() && spelled(n, k) ? ints(n.args[k]) : std::vector<int64_t>{};
      if (v.empty()) return fallback;
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    const std::vector<int64_t> kernel = pair(1, {}), stride = pair(2, kernel), padding = pair(3, {0, 0});
    const std::vector<int64_t> dilation = isMax ? pair(4, {1, 1}) : std::vector<int64_t>{0, 0};
    if (kernel.size() != 2) return refuse(n, "a pooling without a 2-d kernel");
    int64_t padBottom = padding[0], padRight = padding[1];
    if (isMax && spelled(n, 5) && numberOf(g_, n.args[5]).value_or(0) != 0) {  // ceil_mode: pad the far side
      const std::vector<int64_t>& in = spec(n.args[0]).sizes;
      auto extra = [](int64_t size, int64_t k, int64_t s, int64_t p, int64_t d) -> int64_t {
        const int64_t noCeil = size + 2 * p - d * (k - 1) - 1;
        const int64_t outSize = (noCeil + s - 1) / s + 1;
        const bool adjust = (outSize - 1) * s >= size + p;
        const int64_t partial = noCeil % s;
        return partial > 0 && !adjust ? s - partial : 0;
      };
      padBottom += extra(in[2], kernel[0], stride[0], padding[0], dilation[0]);
      padRight += extra(in[3], kernel[1], stride[1], padding[1], dilation[1]);
    }
    Json body{{"padding_top", padding[0]},   {"padding_right", padRight},   {"padding_bottom", padBottom},
              {"padding_left", padding[1]},  {"pooling_height", kernel[0]}, {"pooling_width", kernel[1]},
              {"stride_height", stride[0]},  {"stride_width", stride[1]},   {"dilation_height", dilation[0]},
              {"dilation_width", dilation[1]}, {"input_id", id(n.args[0])}, {"output_id", id(n.outputs[0])},
              {"flags", kFlagKeepDims}};
    addNode(n, isMax ? "XNNMaxPooling2d" : "XNNAvgPooling2d", std::move(body));
    return Ok{};
  }

  /// constant_pad_nd: torch's (before, after) pairs from the last dimension become
  /// XNNPACK's per-dimension pre and post paddings.
  Status constantPad(const Node& n) {
    if (auto s = defineResultThenInputs(n); !s) return s;
    std::vector<int64_t> pads = ints(n.args[1]);
    const size_t r = rank(n.args[0]);
    if (pads.size() % 2 || pads.size() > 2 * r) return refuse(n, "a padding list of odd length");
    pads.resize(2 * r, 0);
    std::vector<int64_t> pre, post;
    for (size_t d = 0; d < r; ++d) {
      pre.push_back(pads[2 * (r - 1 - d)]);
      post.push_back(pads[2 * (r - 1 - d) + 1]);
    }
    if (isNhwcNode(n.outputs[0])) {
      if (r != 4) return refuse(n, "a channels-last padding that is not 4-dimensional");
      pre = {pre[0], pre[2], pre[3], pre[1]};
      post = {post[0], post[2], post[3], post[1]};
    }
    const double value = spelled(n, 2) ? numberOf(g_, n.args[2]).value_or(0.0) : 0.0;
    addNode(n, "XNNStaticConstantPad",
            Json{{"pre_paddings", pre}, {"post_paddings", post}, {"padding_value", number(value)},
                 {"input_id", id(n.args[0])}, {"output_id", id(n.outputs[0])}, {"flags", 0}});
    return Ok{};
  }

  /// relu, hardtanh and clamp left standing are XNNClamp with their bounds.
  Status clamp(const Node& n, const std::string& op) {
    if (auto s = defineResultThenInputs(n); !s) return s;
    Json mm;
    if (op == "aten::relu.default") {
      mm["output_min"] = 0;
      mm["output_max"] = "+inf";
    } else if (op == "aten::hardtanh.default") {
      mm["output_min"] = spelled(n, 1) ? number(num(n.args[1])) : Json(-1);
      mm["output_max"] = spelled(n, 2) ? number(num(n.args[2])) : Json(1);
    } else {
      mm["output_min"] = spelled(n, 1) ? number(num(n.args[1])) : Json("-inf");
      mm["output_max"] = spelled(n, 2) ? number(num(n.args[2])) : Json("inf");
    }
    minMax_[n.outputs[0]] = std::move(mm);
    addNode(n, "XNNClamp", node1x1(id(n.args[0]), id(n.outputs[0])));
    return Ok{};
  }

  Status slice(const Node& n) {
    if (spelled(n, 4) && numberOf(g_, n.args[4]).value_or(1) != 1) return refuse(n, "a slice with a step other than 1");
    if (auto s = defineResultThenInputs(n); !s) return s;
    std::vector<int64_t> in = spec(n.args[0]).sizes, out = spec(n.outputs[0]).sizes;
    const int64_t r = int64_t(in.size());
    int64_t dim = spelled(n, 1) ? int64_t(num(n.args[1])) : 0;
    if (dim < 0) dim += r;
    if (nhwcTag_.count(n.outputs[0])) {
      if (r != 4) return refuse(n, "a channels-last slice that is not 4-dimensional");
      in = {in[0], in[2], in[3], in[1]};
      out = {out[0], out[2], out[3], out[1]};
      dim = kNhwcToNchw[dim];
    }
    int64_t begin = spelled(n, 2) ? int64_t(numberOf(g_, n.args[2]).value_or(0)) : 0;
    if (begin < 0) begin += in[dim];
    std::vector<int64_t> offsets(in.size(), 0);
    offsets[dim] = begin;
    addNode(n, "XNNStaticSlice",
            Json{{"num_dims", in.size()}, {"offsets", offsets}, {"sizes", out},
                 {"input_id", id(n.args[0])}, {"output_id", id(n.outputs[0])}, {"flags", 0}});
    return Ok{};
  }

  Status cat(const Node& n) {
    const auto* list = std::get_if<TensorList>(&g_.values[n.args[0]].payload);
    if (!list || list->items.size() < 2 || list->items.size() > 5) return refuse(n, "a cat of other than 2 to 5 tensors");
    for (ValueId t : list->items)
      if (auto s = defineTensor(n, t, {}, fromInputs(t)); !s) return s;
    if (auto s = defineTensor(n, n.outputs[0], {}, fromOutputs(n.outputs[0])); !s) return s;
    int64_t axis = spelled(n, 1) ? int64_t(num(n.args[1])) : 0;
    if (axis < 0) axis += int64_t(rank(list->items[0]));
    if (nhwcTag_.count(n.outputs[0])) axis = kNhwcToNchw[axis];
    auto input = [&](size_t k) { return k < list->items.size() ? id(list->items[k]) : kInvalidId; };
    static const char* kTypes[] = {"", "", "XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNConcatenate5"};
    addNode(n, kTypes[list->items.size()],
            Json{{"axis", axis}, {"input1_id", input(0)}, {"input2_id", input(1)}, {"input3_id", input(2)},
                 {"input4_id", input(3)}, {"output_id", id(n.outputs[0])}, {"flags", 0}, {"input5_id", input(4)}});
    return Ok{};
  }

  Method g_;  ///< the lowered module, as the passes leave it
  std::deque<std::vector<float>> owned_;  ///< bytes of the constants the passes make
  std::map<ValueId, Json> minMax_;        ///< output_min_max of a node, by its result
  std::map<ValueId, uint32_t> external_;
  uint32_t externals_ = 0;
  std::map<ValueId, uint32_t> ids_;
  Json xnodes_ = Json::array(), xvalues_ = Json::array();
  std::vector<uint32_t> inputIds_, outputIds_;
  Json constantData_ = Json::array({Json{{"offset", 0}, {"size", 0}, {"named_key", ""}}});
  std::vector<std::pair<std::string, std::string>> named_;
  std::set<std::string> namedKeys_;
};

}  // namespace

Result<XnnpackCompiled> compileForXnnpack(const Program& lowered) {
  const Method* m = lowered.method("forward");
  if (!m) return Error{ErrorCode::Invalid, lowered.path, std::nullopt, "a lowered module", "a method forward", "none"};
  // The visitors read arguments by their schema's positions and types, which the verifier
  // checked; a lookup that still fails (a value read before it is defined) is a refusal.
  try {
    return Compiler(*m).run();
  } catch (const std::exception& e) {
    return Error{ErrorCode::Unsupported, "XNNPACK's preprocess", std::nullopt, "a partition it can compile", "",
                 std::string("an argument it cannot read (") + e.what() + ")"};
  }
}

}  // namespace lstudio
