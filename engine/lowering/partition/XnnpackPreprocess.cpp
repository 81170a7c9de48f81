#include "engine/lowering/partition/XnnpackPreprocess.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

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
constexpr int kFp32 = 1;                          // xnn_datatype_fp32

/// A float as ExecuTorch writes it to flatc: non-finite values as the strings its JSON
/// sanitizer leaves ("+inf" for relu's bound, "-inf" and "inf" for clamp's defaults).
Json number(double x, const char* posInf = "inf") {
  if (std::isinf(x)) return x > 0 ? Json(posInf) : Json("-inf");
  return Json(x);
}

class Compiler {
 public:
  explicit Compiler(const Method& m) : m_(m) {}

  Result<XnnpackCompiled> run() {
    removeIdentityClones();
    if (auto s = checkGraph(); !s) return s.error();
    fuseActivations();
    externalIds();
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      if (dropped_.count(int(i))) continue;
      if (auto s = visit(int(i)); !s) return s.error();
    }
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
  // ---- what is refused before anything is written --------------------------------------

  Error refuse(const Node& n, const std::string& why) const {
    const OperatorRef* op = passes::operatorOf(m_, n);
    return Error{ErrorCode::Unsupported, "XNNPACK's preprocess", std::nullopt,
                 "node " + n.name + (op ? " (" + op->fullName() + ")" : ""), "", why};
  }

  bool isParam(ValueId v) const {
    const InputSpec* s = inputSpecOf(m_, v);
    return s && (s->kind == InputSpec::Kind::Parameter || s->kind == InputSpec::Kind::Buffer ||
                 s->kind == InputSpec::Kind::ConstantTensor);
  }
  bool isUserInput(ValueId v) const {
    if (std::find(m_.inputs.begin(), m_.inputs.end(), v) == m_.inputs.end()) return false;
    const InputSpec* s = inputSpecOf(m_, v);
    return !s || s->kind == InputSpec::Kind::User;
  }

  /// The tensors a node reads, distinct, in argument order (fx's all_input_nodes).
  std::vector<ValueId> tensorInputs(const Node& n) const {
    std::vector<ValueId> out;
    auto add = [&](ValueId v) {
      v = resolve(v);
      if (v >= 0 && m_.values[v].isTensor() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    };
    for (ValueId a : n.args) {
      if (a < 0) continue;
      if (auto* l = std::get_if<TensorList>(&m_.values[a].payload)) for (ValueId t : l->items) add(t);
      else add(a);
    }
    return out;
  }

  Status checkGraph() const {
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const Node& n = m_.nodes[i];
      if (dropped_.count(int(i))) continue;
      if (n.kind != NodeKind::Kernel || n.op < 0) return refuse(n, "a node that is not an operator call");
      // ConstPropPass folds a node that reads only constants into a new constant.
      const std::vector<ValueId> ins = tensorInputs(n);
      if (!ins.empty() && std::all_of(ins.begin(), ins.end(), [&](ValueId v) { return isParam(v); }))
        return refuse(n, "a node that reads only constants (XNNPACK's ConstPropPass folds it; not written here yet)");
    }
    for (ValueId o : m_.outputs)
      if (isUserInput(o))
        return Error{ErrorCode::Unsupported, "XNNPACK's preprocess", std::nullopt, "output " + m_.values[o].name,
                     "an output the delegate computes", "an input passed through (XNNPACK refuses it too)"};
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
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const Node& n = m_.nodes[i];
      const std::string op = opName(n);
      if (op != "aten::clone.default" && op != "dim_order_ops::_clone_dim_order.default") continue;
      if (n.outputs.empty() || n.args.empty() || !m_.values[n.outputs[0]].isTensor()) continue;
      const ValueId in = resolve(n.args[0]);
      if (op == "aten::clone.default" ? spelled(n, 1)
                                      : dimOrderOf(m_.values[n.outputs[0]].tensor()) != dimOrderOf(m_.values[in].tensor()))
        continue;
      const bool inputToOutput = std::find(m_.inputs.begin(), m_.inputs.end(), in) != m_.inputs.end() &&
                                 std::find(m_.outputs.begin(), m_.outputs.end(), n.outputs[0]) != m_.outputs.end();
      if (inputToOutput) continue;
      dropped_.insert(int(i));
      alias_[n.outputs[0]] = in;
    }
  }

  // ---- FuseActivationPass ------------------------------------------------------------------

  /// A relu or hardtanh whose input is the only use of a convolution, linear, add, sub or
  /// mul leaves the graph; the producer clamps its output instead (output_min_max).
  void fuseActivations() {
    std::map<ValueId, std::set<int>> users;
    for (size_t i = 0; i < m_.nodes.size(); ++i)
      for (ValueId v : tensorInputs(m_.nodes[i])) users[v].insert(int(i));
    std::set<ValueId> outputs(m_.outputs.begin(), m_.outputs.end());
    static const std::set<std::string> kFuseable = {"aten::convolution.default", "aten::add.Tensor", "aten::sub.Tensor",
                                                    "aten::mul.Tensor", "aten::linear.default"};
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const Node& act = m_.nodes[i];
      const std::string op = opName(act);
      if (op != "aten::relu.default" && op != "aten::hardtanh.default") continue;
      const ValueId in = resolve(act.args[0]);
      const int producer = passes::producerOf(m_, in);
      if (producer < 0 || dropped_.count(producer) || !kFuseable.count(opName(m_.nodes[producer]))) continue;
      if (users[in].size() + (outputs.count(in) ? 1 : 0) > 1) continue;
      Json mm;
      if (op == "aten::relu.default") {
        mm["output_min"] = 0;
        mm["output_max"] = "+inf";
      } else {
        mm["output_min"] = spelled(act, 1) ? number(*numberOf(m_, act.args[1])) : Json(-1);
        mm["output_max"] = spelled(act, 2) ? number(*numberOf(m_, act.args[2])) : Json(1);
      }
      minMax_[producer] = std::move(mm);
      dropped_.insert(int(i));
      alias_[act.outputs[0]] = in;
      // Its users now read the producer.
      for (int u : users[act.outputs[0]]) users[in].insert(u);
      if (outputs.count(act.outputs[0])) outputs.insert(in);
    }
    for (ValueId o : m_.outputs) outputs_.push_back(resolve(o));
  }

  ValueId resolve(ValueId v) const {
    for (auto it = alias_.find(v); it != alias_.end(); it = alias_.find(v)) v = it->second;
    return v;
  }

  // ---- values ------------------------------------------------------------------------------

  /// generate_node_to_external_map: user inputs in graph order, then the outputs.
  void externalIds() {
    for (ValueId v : m_.inputs)
      if (isUserInput(v)) external_[v] = externals_++;
    for (ValueId v : outputs_) external_[v] = externals_++;
  }

  Status defineTensor(const Node& n, ValueId v) {
    if (ids_.count(v)) return Ok{};
    const TensorSpec& t = m_.values[v].tensor();
    if (t.dtype != ScalarType::Float)
      return refuse(n, "a " + std::string(scalarTypeName(t.dtype)) + " tensor (" + m_.values[v].name + "): only float32 is written here yet");
    const uint32_t id = uint32_t(xvalues_.size());
    uint32_t ext = kInvalidId, flags = 0;
    if (isUserInput(v)) {
      ext = external_.at(v);
      inputIds_.push_back(id);
      flags = kFlagExternalInput;
    } else if (std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end()) {
      ext = external_.at(v);
      outputIds_.push_back(id);
      flags = kFlagExternalOutput;
    }
    uint32_t buffer = 0;
    if (isParam(v)) {
      auto b = constantBuffer(n, v);
      if (!b) return b.error();
      buffer = *b;
    }
    // get_shape: a dynamic size as its upper bound.
    std::vector<uint64_t> dims(t.sizes.begin(), t.sizes.end());
    for (size_t d = 0; d < dims.size() && d < t.symbols.size(); ++d) {
      if (t.symbols[d].empty()) continue;
      auto bound = passes::sizeUpperBound(t.symbols[d], m_.symbolRanges);
      if (!bound) return refuse(n, "the size " + t.symbols[d] + " of " + m_.values[v].name + " has no upper bound");
      dims[d] = uint64_t(*bound);
    }
    if (dims.empty()) dims = {1};
    Json tv;
    tv["datatype"] = kFp32;
    tv["num_dims"] = dims.size();
    tv["dims"] = dims;
    tv["constant_buffer_idx"] = buffer;
    tv["external_id"] = ext;
    tv["flags"] = flags;
    tv["id_out"] = id;
    Json xv;
    xv["xvalue_union"] = std::move(tv);
    xv["xvalue_union_type"] = "XNNTensorValue";
    xvalues_.push_back(std::move(xv));
    ids_[v] = id;
    return Ok{};
  }

  /// get_serialized_buffer_index: the constant's contiguous float32 bytes, named by their
  /// SHA-256 in the named data (once per key).
  Result<uint32_t> constantBuffer(const Node& n, ValueId v) {
    const TensorSpec& t = m_.values[v].tensor();
    const auto bytes = t.nbytes();
    if (!t.data.data || !bytes || t.data.size != *bytes || *bytes == 0)
      return refuse(n, "the constant " + m_.values[v].name + " without its bytes");
    for (size_t i = 0; i < t.dimOrder.size(); ++i)
      if (t.dimOrder[i] != i) return refuse(n, "the constant " + m_.values[v].name + " is not contiguous");
    std::string data(reinterpret_cast<const char*>(t.data.data), t.data.size);
    const std::string key = xnnpack::sha256Hex(t.data.data, t.data.size);
    const uint32_t index = uint32_t(constantData_.size());
    Json c;
    c["offset"] = kNamedOffset;
    c["size"] = data.size();
    c["named_key"] = key;
    constantData_.push_back(std::move(c));
    if (namedKeys_.insert(key).second) named_.emplace_back(key, std::move(data));
    return index;
  }

  uint32_t id(ValueId v) const { return ids_.at(resolve(v)); }

  // ---- node visitors -------------------------------------------------------------------

  std::string opName(const Node& n) const {
    const OperatorRef* op = passes::operatorOf(m_, n);
    return op ? op->name + "." + op->overload : std::string();
  }
  /// The argument as the call gave it (fx's len(node.args) > k), not a schema default.
  bool spelled(const Node& n, size_t k) const {
    return k < n.args.size() && n.args[k] >= 0 && !(k < 64 && (n.defaultedArgs >> k & 1)) &&
           m_.values[n.args[k]].kind() != ValueKind::None;
  }
  std::vector<int64_t> ints(ValueId list) const {
    std::vector<int64_t> out;
    if (auto* l = std::get_if<IntList>(&m_.values[list].payload))
      for (ValueId i : l->items) out.push_back(int64_t(*numberOf(m_, i)));
    return out;
  }
  bool staticInts(ValueId list) const {
    auto* l = std::get_if<IntList>(&m_.values[list].payload);
    return l && std::all_of(l->items.begin(), l->items.end(), [&](ValueId i) { return numberOf(m_, i).has_value(); });
  }

  void addNode(const Node& n, int index, const char* type, Json body) {
    Json x;
    x["xnode_union"] = std::move(body);
    x["xnode_union_type"] = type;
    x["debug_handle"] = n.meta.debugHandle.value_or(kDefaultDebugHandle);
    auto mm = minMax_.find(index);
    x["output_min_max"] = mm != minMax_.end() ? mm->second : Json(nullptr);
    xnodes_.push_back(std::move(x));
  }

  /// define_nodes_tensor_inputs_outputs: the result first, then every tensor read.
  Status defineResultThenInputs(const Node& n) {
    if (auto s = defineTensor(n, n.outputs[0]); !s) return s;
    for (ValueId v : tensorInputs(n))
      if (auto s = defineTensor(n, v); !s) return s;
    return Ok{};
  }
  /// add, sub, mul: both operands, then the result.
  Status defineOperandsThenResult(const Node& n, size_t operands) {
    for (size_t k = 0; k < operands; ++k)
      if (auto s = defineTensor(n, resolve(n.args[k])); !s) return s;
    return defineTensor(n, n.outputs[0]);
  }

  static Json node1x1(uint32_t in, uint32_t out) { return Json{{"input_id", in}, {"output_id", out}, {"flags", 0}}; }
  static Json node2x1(uint32_t a, uint32_t b, uint32_t out) {
    return Json{{"input1_id", a}, {"input2_id", b}, {"output_id", out}, {"flags", 0}};
  }

  Status visit(int index) {
    const Node& n = m_.nodes[index];
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
        const int64_t dim = int64_t(*numberOf(m_, n.args[1]));
        const int64_t rank = int64_t(m_.values[n.args[0]].tensor().sizes.size());
        if (dim != -1 && dim != rank - 1) return refuse(n, "softmax over a dimension that is not the last");
      }
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, index, it->second, node1x1(id(n.args[0]), id(n.outputs[0])));
      return Ok{};
    }
    if (auto it = kBinaryResultFirst.find(op); it != kBinaryResultFirst.end()) {
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, index, it->second, node2x1(id(n.args[0]), id(n.args[1]), id(n.outputs[0])));
      return Ok{};
    }
    if (auto it = kBinaryOperandsFirst.find(op); it != kBinaryOperandsFirst.end()) {
      if (op != "aten::mul.Tensor" && spelled(n, 2) && numberOf(m_, n.args[2]).value_or(1) != 1)
        return refuse(n, "an alpha other than 1");
      if (auto s = defineOperandsThenResult(n, 2); !s) return s;
      addNode(n, index, it->second, node2x1(id(n.args[0]), id(n.args[1]), id(n.outputs[0])));
      return Ok{};
    }
    if (op == "aten::linear.default") return linear(n, index);
    if (op == "aten::relu.default" || op == "aten::hardtanh.default" || op == "aten::clamp.default")
      return clamp(n, index, op);
    if (op == "aten::leaky_relu.default" || op == "aten::elu.default") {
      if (auto s = defineResultThenInputs(n); !s) return s;
      Json body;
      if (op == "aten::leaky_relu.default") {
        body["negative_slope"] = spelled(n, 1) ? *numberOf(m_, n.args[1]) : 0.01;
      } else {
        body["alpha"] = *numberOf(m_, n.args[1]);
      }
      body.update(node1x1(id(n.args[0]), id(n.outputs[0])));
      addNode(n, index, op == "aten::elu.default" ? "XNNELU" : "XNNLeakyReLU", std::move(body));
      return Ok{};
    }
    if (op == "aten::mm.default") {
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, index, "XNNFullyConnected",
              Json{{"input1_id", id(n.args[0])}, {"filter_id", id(n.args[1])}, {"bias_id", kInvalidId},
                   {"output_id", id(n.outputs[0])}, {"flags", kFlagTransposeWeights}});
      return Ok{};
    }
    if (op == "aten::permute_copy.default") {
      if (auto s = defineResultThenInputs(n); !s) return s;
      std::vector<int64_t> perm = ints(n.args[1]);
      const int64_t rank = int64_t(m_.values[n.args[0]].tensor().sizes.size());
      for (int64_t& d : perm) d = d < 0 ? d + rank : d;
      addNode(n, index, "XNNStaticTranspose",
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
      } else {  // the result's shape, a dynamic size as 0 (XNNPACK infers it)
        const TensorSpec& t = m_.values[n.outputs[0]].tensor();
        shape = t.sizes;
        for (size_t d = 0; d < shape.size() && d < t.symbols.size(); ++d)
          if (!t.symbols[d].empty()) shape[d] = 0;
        if (std::count(shape.begin(), shape.end(), 0) > 1) return refuse(n, "a reshape with more than one dynamic size");
      }
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, index, "XNNStaticReshape",
              Json{{"num_dims", shape.size()}, {"new_shape", shape}, {"input_id", id(n.args[0])},
                   {"output_id", id(n.outputs[0])}, {"flags", 0}});
      return Ok{};
    }
    if (op == "aten::clone.default" || op == "dim_order_ops::_clone_dim_order.default") {  // one the clone removal kept
      if (auto s = defineResultThenInputs(n); !s) return s;
      addNode(n, index, "XNNCopy", node1x1(id(n.args[0]), id(n.outputs[0])));
      return Ok{};
    }
    if (op == "aten::slice_copy.Tensor") return slice(n, index);
    if (op == "aten::cat.default") return cat(n, index);
    return refuse(n, op.empty() ? "an operator without a name" : "an operator the studio's XNNPACK preprocess has no visitor for yet");
  }

  Status linear(const Node& n, int index) {
    for (size_t k = 0; k < 2; ++k)
      if (auto s = defineTensor(n, resolve(n.args[k])); !s) return s;
    uint32_t bias = kInvalidId;
    if (spelled(n, 2)) {
      if (auto s = defineTensor(n, resolve(n.args[2])); !s) return s;
      bias = id(n.args[2]);
    }
    if (auto s = defineTensor(n, n.outputs[0]); !s) return s;
    addNode(n, index, "XNNFullyConnected",
            Json{{"input1_id", id(n.args[0])}, {"filter_id", id(n.args[1])}, {"bias_id", bias},
                 {"output_id", id(n.outputs[0])}, {"flags", 0}});
    return Ok{};
  }

  /// relu, hardtanh and clamp left standing are XNNClamp with their bounds.
  Status clamp(const Node& n, int index, const std::string& op) {
    if (auto s = defineResultThenInputs(n); !s) return s;
    Json mm;
    if (op == "aten::relu.default") {
      mm["output_min"] = 0;
      mm["output_max"] = "+inf";
    } else if (op == "aten::hardtanh.default") {
      mm["output_min"] = spelled(n, 1) ? number(*numberOf(m_, n.args[1])) : Json(-1);
      mm["output_max"] = spelled(n, 2) ? number(*numberOf(m_, n.args[2])) : Json(1);
    } else {
      mm["output_min"] = spelled(n, 1) ? number(*numberOf(m_, n.args[1])) : Json("-inf");
      mm["output_max"] = spelled(n, 2) ? number(*numberOf(m_, n.args[2])) : Json("inf");
    }
    minMax_[index] = std::move(mm);
    addNode(n, index, "XNNClamp", node1x1(id(n.args[0]), id(n.outputs[0])));
    return Ok{};
  }

  Status slice(const Node& n, int index) {
    if (spelled(n, 4) && numberOf(m_, n.args[4]).value_or(1) != 1) return refuse(n, "a slice with a step other than 1");
    if (auto s = defineResultThenInputs(n); !s) return s;
    const std::vector<int64_t>& in = m_.values[n.args[0]].tensor().sizes;
    const int64_t rank = int64_t(in.size());
    int64_t dim = spelled(n, 1) ? int64_t(*numberOf(m_, n.args[1])) : 0;
    if (dim < 0) dim += rank;
    int64_t begin = spelled(n, 2) ? int64_t(numberOf(m_, n.args[2]).value_or(0)) : 0;
    if (begin < 0) begin += in[dim];
    std::vector<int64_t> offsets(in.size(), 0);
    offsets[dim] = begin;
    addNode(n, index, "XNNStaticSlice",
            Json{{"num_dims", in.size()}, {"offsets", offsets}, {"sizes", m_.values[n.outputs[0]].tensor().sizes},
                 {"input_id", id(n.args[0])}, {"output_id", id(n.outputs[0])}, {"flags", 0}});
    return Ok{};
  }

  Status cat(const Node& n, int index) {
    const auto* list = std::get_if<TensorList>(&m_.values[n.args[0]].payload);
    if (!list || list->items.size() < 2 || list->items.size() > 5) return refuse(n, "a cat of other than 2 to 5 tensors");
    for (ValueId t : list->items)
      if (auto s = defineTensor(n, resolve(t)); !s) return s;
    if (auto s = defineTensor(n, n.outputs[0]); !s) return s;
    int64_t axis = spelled(n, 1) ? int64_t(*numberOf(m_, n.args[1])) : 0;
    if (axis < 0) axis += int64_t(m_.values[list->items[0]].tensor().sizes.size());
    auto input = [&](size_t k) { return k < list->items.size() ? id(list->items[k]) : kInvalidId; };
    static const char* kTypes[] = {"", "", "XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNConcatenate5"};
    addNode(n, index, kTypes[list->items.size()],
            Json{{"axis", axis}, {"input1_id", input(0)}, {"input2_id", input(1)}, {"input3_id", input(2)},
                 {"input4_id", input(3)}, {"output_id", id(n.outputs[0])}, {"flags", 0}, {"input5_id", input(4)}});
    return Ok{};
  }

  const Method& m_;
  std::set<int> dropped_;  ///< nodes the passes took out: fused activations, identity clones
  std::map<int, Json> minMax_;
  std::map<ValueId, ValueId> alias_;
  std::vector<ValueId> outputs_;
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
  return Compiler(*m).run();
}

}  // namespace lstudio
