#include "engine/formats/delegates/XnnpackPayload.h"

#include <cstring>
#include <memory>
#include <unordered_map>

#include "engine/formats/schema/xnnpack_generated.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::xnnpack {
namespace fb = xnnpack_flatbuffer;

namespace {

// The XH00 header (ExecuTorch's XNNHeader): 4 bytes left free so that its
// magic sits where a bare flatbuffer has its identifier, then
// magic, uint16 length, uint32 flatbuffer offset and size, uint32 constant
// data offset, uint64 constant data size; little-endian.
constexpr uint64_t kHeaderLength = 30;

struct Header {
  uint64_t flatbufferOffset = 0, flatbufferSize = 0, constantOffset = 0, constantSize = 0;
};

Error payloadError(ErrorCode code, const Bytes& blob, const std::string& file, uint64_t at, std::string what,
                   std::string expected, std::string found) {
  Error e;
  e.code = code;
  e.file = file;
  e.offset = blob.fileOffset + at;
  e.what = "XNNPACK payload: " + std::move(what);
  e.expected = std::move(expected);
  e.found = std::move(found);
  return e;
}

Result<Header> readHeader(const Bytes& blob, const std::string& file) {
  const uint8_t* p = blob.data;
  if (blob.size < kHeaderLength)
    return payloadError(ErrorCode::Truncated, blob, file, 0, "XH00 header", std::to_string(kHeaderLength) + " bytes",
                        std::to_string(blob.size) + " bytes");
  uint16_t length = uint16_t(p[8] | (p[9] << 8));
  if (length < kHeaderLength)
    return payloadError(ErrorCode::BadHeader, blob, file, 8, "XH00 header length", ">= 30", std::to_string(length));
  Header h;
  h.flatbufferOffset = readLe32(p + 10);
  h.flatbufferSize = readLe32(p + 14);
  h.constantOffset = readLe32(p + 18);
  h.constantSize = readLe64(p + 22);
  uint64_t fbEnd = 0, constEnd = 0;
  if (h.flatbufferSize == 0 || h.flatbufferOffset < length || !checkedAdd(h.flatbufferOffset, h.flatbufferSize, fbEnd) ||
      fbEnd > blob.size)
    return payloadError(ErrorCode::OutOfRange, blob, file, 10, "XH00 flatbuffer range",
                        "a non-empty range after the header within the " + std::to_string(blob.size) + "-byte payload",
                        "offset " + std::to_string(h.flatbufferOffset) + " size " + std::to_string(h.flatbufferSize));
  if (h.constantOffset < fbEnd || !checkedAdd(h.constantOffset, h.constantSize, constEnd) || constEnd > blob.size)
    return payloadError(ErrorCode::OutOfRange, blob, file, 18, "XH00 constant data range",
                        "after the flatbuffer (byte " + std::to_string(fbEnd) + ") and within the " +
                            std::to_string(blob.size) + "-byte payload",
                        "offset " + std::to_string(h.constantOffset) + " size " + std::to_string(h.constantSize));
  return h;
}

std::string idText(uint32_t id) { return id == kInvalidId ? "none" : std::to_string(id); }

template <class V>
std::string listText(const V* v) {
  std::string s = "[";
  if (v)
    for (uint32_t i = 0; i < v->size(); ++i) s += (i ? ", " : "") + std::to_string(v->Get(i));
  return s + "]";
}

void addInput(Node& n, uint32_t id) {
  if (id != kInvalidId) n.inputs.push_back(id);
}

std::string pair(uint32_t a, uint32_t b) { return std::to_string(a) + "×" + std::to_string(b); }

/// "top, right, bottom, left" of a table with the four padding fields.
template <class T>
std::string padding(const T* t) {
  return std::to_string(t->padding_top()) + ", " + std::to_string(t->padding_right()) + ", " +
         std::to_string(t->padding_bottom()) + ", " + std::to_string(t->padding_left());
}

/// The many tables with one input_id, one output_id and flags.
template <class T>
void oneInOneOut(Node& n, const T* t) {
  addInput(n, t->input_id());
  n.outputs = {t->output_id()};
  n.flags = t->flags();
}

// One function per parameter table; the member's name comes from the union.
void fill(Node& n, const fb::_XNNNode1x1* t) { oneInOneOut(n, t); }
void fill(Node& n, const fb::_XNNNode2x1* t) {
  addInput(n, t->input1_id());
  addInput(n, t->input2_id());
  n.outputs = {t->output_id()};
  n.flags = t->flags();
}
void fill(Node& n, const fb::XNNFullyConnected* t) {
  addInput(n, t->input1_id());
  addInput(n, t->filter_id());
  addInput(n, t->bias_id());
  n.outputs = {t->output_id()};
  n.flags = t->flags();
}
void fill(Node& n, const fb::_XNNNodeConv* t) {
  addInput(n, t->input1_id());
  addInput(n, t->filter_id());
  addInput(n, t->bias_id());
  n.outputs = {t->output_id()};
  n.flags = t->flags();
  n.params = {{"padding (t, r, b, l)", padding(t)},
              {"kernel", pair(t->kernel_height(), t->kernel_width())},
              {"stride", pair(t->subsampling_height(), t->subsampling_width())},
              {"dilation", pair(t->dilation_height(), t->dilation_width())},
              {"groups", std::to_string(t->groups())},
              {"group channels (in, out)",
               std::to_string(t->group_input_channels()) + ", " + std::to_string(t->group_output_channels())},
              {"adjustment", pair(t->adjustment_height(), t->adjustment_width())}};
}
void fill(Node& n, const fb::_XNNPooling2D* t) {
  oneInOneOut(n, t);
  n.params = {{"padding (t, r, b, l)", padding(t)},
              {"pooling", pair(t->pooling_height(), t->pooling_width())},
              {"stride", pair(t->stride_height(), t->stride_width())},
              {"dilation", pair(t->dilation_height(), t->dilation_width())}};
}
void fill(Node& n, const fb::_XNNCat* t, int arity) {
  const uint32_t ids[] = {t->input1_id(), t->input2_id(), t->input3_id(), t->input4_id(), t->input5_id()};
  for (int i = 0; i < arity; ++i) addInput(n, ids[i]);
  n.outputs = {t->output_id()};
  n.flags = t->flags();
  n.params = {{"axis", std::to_string(t->axis())}};
}
void fill(Node& n, const fb::XNNStaticTranspose* t) {
  oneInOneOut(n, t);
  n.params = {{"perm", listText(t->perm())}};
}
void fill(Node& n, const fb::XNNStaticResizeBilinear2D* t) {
  oneInOneOut(n, t);
  n.params = {{"new size", pair(t->new_height(), t->new_width())}};
}
void fill(Node& n, const fb::XNNStaticConstantPad* t) {
  oneInOneOut(n, t);
  n.params = {{"pre paddings", listText(t->pre_paddings())},
              {"post paddings", listText(t->post_paddings())},
              {"padding value", std::to_string(t->padding_value())}};
}
void fill(Node& n, const fb::XNNStaticReshape* t) {
  oneInOneOut(n, t);
  n.params = {{"new shape", listText(t->new_shape())}};
}
void fill(Node& n, const fb::XNNStaticSlice* t) {
  oneInOneOut(n, t);
  n.params = {{"offsets", listText(t->offsets())}, {"sizes", listText(t->sizes())}};
}
void fill(Node& n, const fb::XNNScaledDotProductAttention* t) {
  for (uint32_t id : {t->query_id(), t->key_id(), t->value_id(), t->scale_id(), t->mask_id()}) addInput(n, id);
  n.outputs = {t->output_id()};
  n.flags = t->flags();
}
void fill(Node& n, const fb::XNNArgMaxPooling2d* t) {
  addInput(n, t->input_id());
  n.outputs = {t->output_value_id(), t->output_index_id()};
  n.flags = t->flags();
  n.params = {{"padding (t, r, b, l)", padding(t)}, {"pooling", pair(t->pooling_height(), t->pooling_width())}};
}
void fill(Node& n, const fb::XNNLeakyReLU* t) {
  oneInOneOut(n, t);
  n.params = {{"negative slope", std::to_string(t->negative_slope())}};
}
void fill(Node& n, const fb::XNNELU* t) {
  oneInOneOut(n, t);
  n.params = {{"alpha", std::to_string(t->alpha())}};
}

/// The union member's table, by the shape its member type declares.
void fillByType(Node& n, fb::XNodeUnion type, const void* table) {
  using U = fb::XNodeUnion;
  switch (type) {
    case U::XNNFullyConnected: return fill(n, static_cast<const fb::XNNFullyConnected*>(table));
    case U::XNNConv2d: case U::XNNDepthwiseConv2d: case U::XNNConvTranspose2d:
      return fill(n, static_cast<const fb::_XNNNodeConv*>(table));
    case U::XNNAvgPooling2d: case U::XNNMaxPooling2d: return fill(n, static_cast<const fb::_XNNPooling2D*>(table));
    case U::XNNConcatenate2: return fill(n, static_cast<const fb::_XNNCat*>(table), 2);
    case U::XNNConcatenate3: return fill(n, static_cast<const fb::_XNNCat*>(table), 3);
    case U::XNNConcatenate4: return fill(n, static_cast<const fb::_XNNCat*>(table), 4);
    case U::XNNConcatenate5: return fill(n, static_cast<const fb::_XNNCat*>(table), 5);
    case U::XNNStaticTranspose: return fill(n, static_cast<const fb::XNNStaticTranspose*>(table));
    case U::XNNStaticResizeBilinear2D: return fill(n, static_cast<const fb::XNNStaticResizeBilinear2D*>(table));
    case U::XNNStaticConstantPad: return fill(n, static_cast<const fb::XNNStaticConstantPad*>(table));
    case U::XNNStaticReshape: return fill(n, static_cast<const fb::XNNStaticReshape*>(table));
    case U::XNNStaticSlice: return fill(n, static_cast<const fb::XNNStaticSlice*>(table));
    case U::XNNScaledDotProductAttention:
      return fill(n, static_cast<const fb::XNNScaledDotProductAttention*>(table));
    case U::XNNArgMaxPooling2d: return fill(n, static_cast<const fb::XNNArgMaxPooling2d*>(table));
    case U::XNNLeakyReLU: return fill(n, static_cast<const fb::XNNLeakyReLU*>(table));
    case U::XNNELU: return fill(n, static_cast<const fb::XNNELU*>(table));
    case U::XNNAdd: case U::XNNDiv: case U::XNNMinimum: case U::XNNMaximum: case U::XNNMultiply:
    case U::XNNSubtract: case U::XNNPReLU: case U::XNNBatchMatrixMultiply:
      return fill(n, static_cast<const fb::_XNNNode2x1*>(table));
    default:  // every other member has one input and one output
      return fill(n, static_cast<const fb::_XNNNode1x1*>(table));
  }
}

Node readNode(const fb::XNode* x, uint32_t index, std::vector<std::string>& problems) {
  Node n;
  n.debugHandle = x->debug_handle();
  auto type = x->xnode_union_type();
  if (type == fb::XNodeUnion::NONE || !x->xnode_union()) {
    n.type = "(empty)";
    problems.push_back("xnodes[" + std::to_string(index) + "] has no operator");
  } else if (uint8_t(type) > uint8_t(fb::XNodeUnion::MAX)) {
    n.type = "operator " + std::to_string(int(type));
    problems.push_back("xnodes[" + std::to_string(index) + "] is operator " + std::to_string(int(type)) +
                       ", which this schema does not know (a newer XNNPACK backend?)");
  } else {
    n.type = fb::EnumNameXNodeUnion(type);
    fillByType(n, type, x->xnode_union());
  }
  if (auto* mm = x->output_min_max()) n.outputMinMax = std::make_pair(mm->output_min(), mm->output_max());
  return n;
}

/// The fields per-channel and per-channel-group quantization share.
template <class ChannelQuant>
void channelScales(const ChannelQuant* t, Quantization& out) {
  if (t->scale()) out.scales.assign(t->scale()->begin(), t->scale()->end());
  out.channelDim = t->channel_dim();
  out.scaleBufferIndex = t->scale_buffer_idx();
  out.numScales = t->num_scales();
}

void readQuant(const fb::XNNQuantizedTensorValue* q, Quantization& out) {
  if (auto* t = q->quant_params_as_PerTensorQuant()) {
    out.kind = Quantization::Kind::PerTensor;
    out.scale = t->scale();
    out.zeroPoint = t->zero_point();
  } else if (auto* c = q->quant_params_as_PerChannelQuant()) {
    out.kind = Quantization::Kind::PerChannel;
    channelScales(c, out);
  } else if (auto* g = q->quant_params_as_PerChannelGroupQuant()) {
    out.kind = Quantization::Kind::PerChannelGroup;
    channelScales(g, out);
    out.groupSize = g->group_size();
  } else if (auto* d = q->quant_params_as_PerTokenDynamicQuant()) {
    out.kind = Quantization::Kind::PerTokenDynamic;
    out.numNonbatchDims = d->num_nonbatch_dims();
  }
}

Value readValue(const fb::XValue* x, uint32_t index, std::vector<std::string>& problems) {
  Value v;
  const fb::XNNTensorValue* t = nullptr;
  if (auto* plain = x->xvalue_union_as_XNNTensorValue()) {
    t = plain;
  } else if (auto* q = x->xvalue_union_as_XNNQuantizedTensorValue()) {
    t = q->tensor_value();
    readQuant(q, v.quant);
  }
  if (!t) {
    problems.push_back("xvalues[" + std::to_string(index) + "] holds no tensor value");
    v.id = index;
    return v;
  }
  v.id = t->id_out();
  v.datatype = int16_t(t->datatype());
  if (auto* d = t->dims()) v.dims.assign(d->begin(), d->end());
  if (t->num_dims() != v.dims.size())
    problems.push_back("value " + std::to_string(v.id) + ": num_dims " + std::to_string(t->num_dims()) + " but " +
                       std::to_string(v.dims.size()) + " dims");
  v.constantIndex = t->constant_buffer_idx();
  v.externalId = t->external_id();
  v.flags = t->flags();
  v.dqDatatype = int16_t(t->dq_datatype());
  return v;
}

void readConstants(const fb::XNNGraph* g, Graph& out) {
  if (auto* data = g->constant_data(); data && data->size() > 0) {
    for (uint32_t i = 0; i < data->size(); ++i) {
      const auto* c = data->Get(i);
      Constant k;
      k.size = c->size();
      k.offset = c->offset();  // UINT64_MAX for a named entry, kept as stored
      if (c->named_key() && c->named_key()->size() > 0) {
        k.source = Constant::Source::NamedData;
        k.namedKey = c->named_key()->str();
      } else {
        k.source = Constant::Source::ConstantData;
        uint64_t end = 0;
        if (i > 0 && (!checkedAdd(k.offset, k.size, end) || end > out.constantDataSize))
          out.problems.push_back("constant " + std::to_string(i) + " (offset " + std::to_string(k.offset) + ", " +
                                 std::to_string(k.size) + " B) lies past the " +
                                 std::to_string(out.constantDataSize) + "-byte constant data");
      }
      out.constants.push_back(std::move(k));
    }
  } else if (auto* bufs = g->constant_buffer()) {
    for (uint32_t i = 0; i < bufs->size(); ++i) {
      Constant k;
      k.source = Constant::Source::Flatbuffer;
      k.size = bufs->Get(i)->storage() ? bufs->Get(i)->storage()->size() : 0;
      out.constants.push_back(k);
    }
  }
}

/// Ids the nodes, inputs and outputs name must be values; constants must exist.
void checkReferences(Graph& g) {
  std::unordered_map<uint32_t, size_t> byId;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (!byId.emplace(g.values[i].id, i).second)
      g.problems.push_back("two values have id " + std::to_string(g.values[i].id));
  auto check = [&](uint32_t id, const std::string& where) {
    if (!byId.count(id)) g.problems.push_back(where + " names value " + idText(id) + ", which does not exist");
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::string where = "node " + std::to_string(i) + " (" + g.nodes[i].type + ")";
    for (uint32_t id : g.nodes[i].inputs) check(id, where);
    for (uint32_t id : g.nodes[i].outputs) check(id, where);
  }
  for (uint32_t id : g.inputIds) check(id, "input_ids");
  for (uint32_t id : g.outputIds) check(id, "output_ids");
  for (const Value& v : g.values)
    if (v.constantIndex != 0 && v.constantIndex >= g.constants.size())
      g.problems.push_back("value " + std::to_string(v.id) + " reads constant " + std::to_string(v.constantIndex) +
                           " of " + std::to_string(g.constants.size()));
}

}  // namespace

const char* quantizationName(Quantization::Kind k) {
  switch (k) {
    case Quantization::Kind::None: return "none";
    case Quantization::Kind::PerTensor: return "per-tensor";
    case Quantization::Kind::PerChannel: return "per-channel";
    case Quantization::Kind::PerChannelGroup: return "per-channel-group";
    case Quantization::Kind::PerTokenDynamic: return "per-token dynamic";
  }
  return "?";
}

std::string datatypeName(int16_t datatype) {
  auto d = fb::XNNDatatype(datatype);
  if (datatype < 0 || d > fb::XNNDatatype::MAX) return "datatype " + std::to_string(datatype);
  std::string s = fb::EnumNameXNNDatatype(d);
  const std::string prefix = "xnn_datatype_";
  return s.rfind(prefix, 0) == 0 ? s.substr(prefix.size()) : s;
}

const Value* Graph::value(uint32_t id) const {
  for (const Value& v : values)
    if (v.id == id) return &v;
  return nullptr;
}

uint64_t Graph::constantBytes() const {
  uint64_t total = 0;
  for (size_t i = 1; i < constants.size(); ++i) total += constants[i].size;
  return total;
}

bool looksLikePayload(const Bytes& blob) {
  if (blob.size < 8) return false;
  const char* m = reinterpret_cast<const char*>(blob.data) + 4;
  return std::memcmp(m, "XH00", 4) == 0 || std::memcmp(m, "XN00", 4) == 0 || std::memcmp(m, "XN01", 4) == 0;
}

Result<Graph> decode(const Bytes& blob, const std::string& file) {
  Graph g;
  if (blob.size < 8)
    return payloadError(ErrorCode::Truncated, blob, file, 0, "identifier", "at least 8 bytes",
                        std::to_string(blob.size) + " bytes");
  std::string magic(reinterpret_cast<const char*>(blob.data) + 4, 4);
  Bytes fbBytes = blob;
  if (magic == "XH00") {
    auto h = readHeader(blob, file);
    if (!h) return h.error();
    g.hasHeader = true;
    g.flatbufferOffset = h->flatbufferOffset;
    g.flatbufferSize = h->flatbufferSize;
    g.constantDataOffset = h->constantOffset;
    g.constantDataSize = h->constantSize;
    fbBytes = Bytes{blob.data + h->flatbufferOffset, h->flatbufferSize, blob.fileOffset + h->flatbufferOffset};
    if (fbBytes.size < 8)
      return payloadError(ErrorCode::Truncated, blob, file, h->flatbufferOffset, "XNNGraph flatbuffer",
                          "at least 8 bytes", std::to_string(fbBytes.size) + " bytes");
  } else {
    g.flatbufferSize = blob.size;
  }
  g.identifier.assign(reinterpret_cast<const char*>(fbBytes.data) + 4, 4);
  if (g.identifier != "XN00" && g.identifier != "XN01")
    return payloadError(ErrorCode::BadMagic, blob, file, fbBytes.fileOffset - blob.fileOffset + 4,
                        "flatbuffer identifier", "\"XN00\" or \"XN01\"", describeMagic(g.identifier));
  // The verifier needs the buffer aligned as it was written; a payload inline
  // in the program's flatbuffer may not be, so verify and read a copy then.
  std::unique_ptr<uint64_t[]> aligned;
  const uint8_t* buf = fbBytes.data;
  if (reinterpret_cast<uintptr_t>(buf) % 8 != 0) {
    aligned.reset(new uint64_t[(fbBytes.size + 7) / 8]);
    std::memcpy(aligned.get(), buf, fbBytes.size);
    buf = reinterpret_cast<const uint8_t*>(aligned.get());
  }
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 10'000'000;
  flatbuffers::Verifier verifier(buf, fbBytes.size, opts);
  if (!verifier.VerifyBuffer<fb::XNNGraph>(nullptr))
    return payloadError(ErrorCode::Verification, blob, file, fbBytes.fileOffset - blob.fileOffset,
                        "XNNGraph flatbuffer", "a well-formed XNNGraph (" + std::to_string(fbBytes.size) + " bytes)",
                        "a table, vector or union that fails verification");
  const fb::XNNGraph* root = flatbuffers::GetRoot<fb::XNNGraph>(buf);
  if (root->version()) g.version = root->version()->str();
  g.numExterns = root->num_externs();
  if (auto* v = root->input_ids()) g.inputIds.assign(v->begin(), v->end());
  if (auto* v = root->output_ids()) g.outputIds.assign(v->begin(), v->end());
  if (auto* nodes = root->xnodes()) {
    g.nodes.reserve(nodes->size());
    for (uint32_t i = 0; i < nodes->size(); ++i) g.nodes.push_back(readNode(nodes->Get(i), i, g.problems));
  }
  if (auto* values = root->xvalues()) {
    g.values.reserve(values->size());
    for (uint32_t i = 0; i < values->size(); ++i) g.values.push_back(readValue(values->Get(i), i, g.problems));
  }
  readConstants(root, g);
  checkReferences(g);
  constexpr size_t kShownProblems = 50;  // a damaged payload can break every id; the first ones tell
  if (g.problems.size() > kShownProblems) {
    size_t more = g.problems.size() - kShownProblems;
    g.problems.resize(kShownProblems);
    g.problems.push_back("and " + std::to_string(more) + " more problems");
  }
  return g;
}

}  // namespace lstudio::xnnpack
