#include "engine/inspect/DelegateReport.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/inspect/Inspect.h"
#include "engine/support/FormatUtil.h"

namespace lstudio {
namespace {

/// Compile spec values are opaque bytes; most backends store text (a target
/// name, a JSON blob) or a small little-endian integer.
CompileSpecText specText(const CompileSpec& s) {
  CompileSpecText t{s.key, "", s.value.size()};
  const auto& v = s.value;
  bool printable = !v.empty() && std::all_of(v.begin(), v.end(), [](uint8_t c) {
    return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' || c >= 0x80;
  });
  if (printable) {
    t.value = "\"" + std::string(v.begin(), v.begin() + std::min<size_t>(v.size(), 200)) +
              (v.size() > 200 ? "…" : "") + "\"";
  } else if (!v.empty() && v.size() <= 8) {
    uint64_t n = 0;
    for (size_t i = v.size(); i-- > 0;) n = (n << 8) | v[i];
    t.value = std::to_string(n);
  } else {
    char buf[4];
    t.value = std::to_string(v.size()) + " bytes:";
    for (size_t i = 0; i < std::min<size_t>(v.size(), 16); ++i) {
      std::snprintf(buf, sizeof buf, " %02x", v[i]);
      t.value += buf;
    }
    if (v.size() > 16) t.value += " …";
  }
  return t;
}

void splitCall(const Method& m, const Node& call, size_t callIndex, const std::optional<xnnpack::Graph>& g,
               DelegateReport& r) {
  if (!call.outputs.empty()) {
    std::set<ValueId> outs(call.outputs.begin(), call.outputs.end());
    for (ValueId a : call.args) (outs.count(a) ? r.outputs : r.inputs).push_back(a);
    return;
  }
  if (g && g->inputIds.size() + g->outputIds.size() == call.args.size()) {  // XNNPACK binds inputs, then outputs
    r.inputs.assign(call.args.begin(), call.args.begin() + long(g->inputIds.size()));
    r.outputs.assign(call.args.begin() + long(g->inputIds.size()), call.args.end());
    return;
  }
  // Otherwise an argument is an input when something earlier made it.
  std::set<ValueId> earlier(m.inputs.begin(), m.inputs.end());
  for (size_t i = 0; i < callIndex; ++i) earlier.insert(m.nodes[i].args.begin(), m.nodes[i].args.end());
  for (ValueId a : call.args) {
    const TensorSpec* t = a >= 0 && size_t(a) < m.values.size() ? m.values[a].tensorIf() : nullptr;
    bool stored = t && (t->storage() == TensorStorage::Constant || t->storage() == TensorStorage::External);
    (earlier.count(a) || stored || !t ? r.inputs : r.outputs).push_back(a);
  }
}

std::string stem(const std::string& path) { return std::filesystem::path(path).filename().string(); }

void findNamedData(const Program& p, const Delegate& d, const std::vector<DataFile>& files, DelegateReport& r) {
  for (size_t i = 1; i < r.xnnpack->constants.size(); ++i) {
    const auto& c = r.xnnpack->constants[i];
    if (c.source != xnnpack::Constant::Source::NamedData) continue;
    NamedDataUse use{c.namedKey, c.size, "missing"};
    auto has = [&](const std::vector<NamedBlob>& blobs) {
      return std::any_of(blobs.begin(), blobs.end(), [&](const NamedBlob& b) { return b.key == c.namedKey; });
    };
    if (has(p.namedData)) use.location = "the .pte";
    else if (has(d.namedData)) use.location = "the call (the .pte, once exported)";  // the studio's to_backend made it
    for (const DataFile& f : files)
      if (use.location == "missing" && f.find(c.namedKey)) use.location = stem(f.path);
    for (const CarriedData& d : p.carriedData)
      if (use.location == "missing" && d.key == c.namedKey) use.location = d.file + ".ptd";
    r.namedData.push_back(std::move(use));
  }
}

std::string dimsText(const std::vector<uint32_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string quantText(const xnnpack::Quantization& q) {
  using K = xnnpack::Quantization::Kind;
  std::string s = xnnpack::quantizationName(q.kind);
  char buf[64];
  switch (q.kind) {
    case K::None: return "";
    case K::PerTensor:
      std::snprintf(buf, sizeof buf, " scale %g zero point %d", double(q.scale), q.zeroPoint);
      return s + buf;
    case K::PerChannel:
    case K::PerChannelGroup:
      s += " dim " + std::to_string(q.channelDim);
      if (q.kind == K::PerChannelGroup) s += " group " + std::to_string(q.groupSize);
      if (!q.scales.empty()) s += ", " + std::to_string(q.scales.size()) + " scales";
      if (q.scaleBufferIndex) s += ", " + std::to_string(q.numScales) + " scales in constant " +
                                   std::to_string(q.scaleBufferIndex);
      return s;
    case K::PerTokenDynamic: return s + ", " + std::to_string(q.numNonbatchDims) + " non-batch dims";
  }
  return s;
}

std::string valueLine(const xnnpack::Value& v) {
  std::string s = "%" + std::to_string(v.id) + " " + xnnpack::datatypeName(v.datatype) + dimsText(v.dims);
  if (v.isInput()) s += " input";
  if (v.isOutput()) s += " output";
  if (v.externalId != xnnpack::kInvalidId) s += " (external " + std::to_string(v.externalId) + ")";
  if (v.constantIndex) s += " constant " + std::to_string(v.constantIndex);
  if (v.dqDatatype) s += " quantized at run time to " + xnnpack::datatypeName(v.dqDatatype);
  if (std::string q = quantText(v.quant); !q.empty()) s += ", " + q;
  return s;
}

std::string idsText(const std::vector<uint32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", %" : "%") + std::to_string(ids[i]);
  return s;
}

}  // namespace

DelegateReport reportDelegate(const Program& p, const Method& m, size_t index, const std::vector<DataFile>& files) {
  DelegateReport r;
  const Delegate& d = m.delegates.at(index);
  r.backend = d.backendId;
  r.location = (d.location == Delegate::Location::Inline ? "inline " : "segment ") + std::to_string(d.index);
  r.blobBytes = d.blob.size;
  r.blobFileOffset = d.blob.fileOffset;
  for (const CompileSpec& s : d.compileSpecs) r.compileSpecs.push_back(specText(s));
  r.origins = d.origins;
  if (r.backend == "XnnpackBackend" || xnnpack::looksLikePayload(d.blob)) {
    auto g = xnnpack::decode(d.blob, p.path);
    if (g) {
      r.xnnpack = std::move(g.value());
      r.format = "XNNPACK " + r.xnnpack->identifier + (r.xnnpack->hasHeader ? " with XH00 header" : "");
      findNamedData(p, d, files, r);
    } else {
      r.format = "XNNPACK (cannot be decoded)";
      r.decodeError = g.error().message();
    }
  } else {
    r.layout = describePayload(d.blob);
    r.format = r.layout.format.empty() ? "not decoded" : r.layout.format;
    if (!r.layout.error.empty()) r.decodeError = r.layout.error;
  }
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].kind == NodeKind::Delegate && m.nodes[i].delegate == int32_t(index)) {
      r.callNode = int32_t(i);
      splitCall(m, m.nodes[i], i, r.xnnpack, r);
      break;
    }
  return r;
}

std::string originText(const DelegateReport& r, uint32_t debugHandle) {
  for (const DelegateOrigin& o : r.origins)
    if (o.debugHandle == debugHandle)
      return o.op + " (" + o.node + (o.module.empty() ? "" : ", in " + o.module) + ")";
  return {};
}

std::string delegateText(const DelegateReport& r, const Method& m, bool full) {
  std::string o = r.backend + ", " + formatBytes(r.blobBytes) + " (" + r.location + "), payload " + r.format + "\n";
  for (const auto& s : r.compileSpecs) o += "  compile spec " + s.key + " = " + s.value + "\n";
  if (r.callNode >= 0) {
    o += "  called by instruction " + std::to_string(r.callNode) + "\n";
    for (ValueId v : r.inputs) o += "    in  [" + std::to_string(v) + "] " + describeValue(m, v) + "\n";
    for (ValueId v : r.outputs) o += "    out [" + std::to_string(v) + "] " + describeValue(m, v) + "\n";
  } else {
    o += "  never called\n";
  }
  if (!r.decodeError.empty()) o += "  payload: " + r.decodeError + "\n";
  for (const auto& [k, v] : r.layout.facts) o += "  " + k + ": " + v + "\n";
  if (full)
    for (const auto& sec : r.layout.sections)
      o += "  " + sec.name + ": " + std::to_string(sec.size) + " bytes at " + std::to_string(sec.offset) + "\n";
  if (!r.xnnpack) return o;
  const auto& g = *r.xnnpack;
  std::map<std::string, size_t> byType;
  for (const auto& n : g.nodes) ++byType[n.type];
  o += "  " + std::to_string(g.nodes.size()) + " nodes:";
  for (const auto& [t, c] : byType) o += " " + std::to_string(c) + "× " + t;
  size_t quantized = std::count_if(g.values.begin(), g.values.end(),
                                   [](const auto& v) { return v.quant.kind != xnnpack::Quantization::Kind::None; });
  o += "\n  " + std::to_string(g.values.size()) + " values (" + std::to_string(quantized) + " quantized), " +
       std::to_string(g.inputIds.size()) + " inputs, " + std::to_string(g.outputIds.size()) + " outputs\n";
  o += "  " + std::to_string(g.constants.empty() ? 0 : g.constants.size() - 1) + " constants, " +
       formatBytes(g.constantBytes()) + "\n";
  for (const auto& u : r.namedData)
    o += "    named data " + u.key + ": " + formatBytes(u.bytes) + " in " + u.location + "\n";
  for (const auto& pr : g.problems) o += "  problem: " + pr + "\n";
  if (!full) return o;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    o += "  node " + std::to_string(i) + " " + n.type + "(" + idsText(n.inputs) + ") -> " + idsText(n.outputs);
    for (const auto& [k, v] : n.params) o += ", " + k + " " + v;
    if (n.outputMinMax) o += ", clamp [" + std::to_string(n.outputMinMax->first) + ", " +
                             std::to_string(n.outputMinMax->second) + "]";
    o += ", debug handle " + std::to_string(n.debugHandle);
    if (std::string from = originText(r, n.debugHandle); !from.empty()) o += " <- " + from;
    o += "\n";
  }
  for (const auto& v : g.values) o += "  value " + valueLine(v) + "\n";
  return o;
}

nlohmann::json delegateJson(const DelegateReport& r) {
  using nlohmann::json;
  json j = {{"backend", r.backend}, {"location", r.location}, {"bytes", r.blobBytes},
            {"file_offset", r.blobFileOffset}, {"format", r.format}, {"inputs", r.inputs},
            {"outputs", r.outputs}, {"call", r.callNode}};
  j["compile_specs"] = json::array();
  for (const auto& s : r.compileSpecs) j["compile_specs"].push_back({{"key", s.key}, {"value", s.value}, {"bytes", s.bytes}});
  if (!r.decodeError.empty()) j["error"] = r.decodeError;
  if (!r.layout.format.empty()) {
    json facts = json::object(), sections = json::array();
    for (const auto& [k, v] : r.layout.facts) facts[k] = v;
    for (const auto& sec : r.layout.sections)
      sections.push_back({{"name", sec.name}, {"offset", sec.offset}, {"size", sec.size}});
    j["layout"] = {{"format", r.layout.format}, {"facts", facts}, {"sections", sections}};
  }
  j["named_data"] = json::array();
  for (const auto& u : r.namedData) j["named_data"].push_back({{"key", u.key}, {"bytes", u.bytes}, {"in", u.location}});
  if (!r.xnnpack) return j;
  const auto& g = *r.xnnpack;
  json x = {{"identifier", g.identifier}, {"header", g.hasHeader}, {"version", g.version},
            {"num_externs", g.numExterns}, {"input_ids", g.inputIds}, {"output_ids", g.outputIds},
            {"constant_data_size", g.constantDataSize}, {"problems", g.problems}};
  x["nodes"] = json::array();
  for (const auto& n : g.nodes) {
    json params = json::object();
    for (const auto& [k, v] : n.params) params[k] = v;
    x["nodes"].push_back({{"type", n.type}, {"debug_handle", n.debugHandle}, {"inputs", n.inputs},
                          {"outputs", n.outputs}, {"flags", n.flags}, {"params", params}});
    if (n.outputMinMax) x["nodes"].back()["output_min_max"] = {n.outputMinMax->first, n.outputMinMax->second};
    if (std::string from = originText(r, n.debugHandle); !from.empty()) x["nodes"].back()["made_from"] = from;
  }
  x["values"] = json::array();
  for (const auto& v : g.values) {
    json q = {{"kind", xnnpack::quantizationName(v.quant.kind)}};
    using K = xnnpack::Quantization::Kind;
    if (v.quant.kind == K::PerTensor) q.update({{"scale", v.quant.scale}, {"zero_point", v.quant.zeroPoint}});
    if (v.quant.kind == K::PerChannel || v.quant.kind == K::PerChannelGroup)
      q.update({{"channel_dim", v.quant.channelDim}, {"scales", v.quant.scales}, {"group_size", v.quant.groupSize},
                {"scale_buffer_idx", v.quant.scaleBufferIndex}, {"num_scales", v.quant.numScales}});
    if (v.quant.kind == K::PerTokenDynamic) q["num_nonbatch_dims"] = v.quant.numNonbatchDims;
    x["values"].push_back({{"id", v.id}, {"datatype", xnnpack::datatypeName(v.datatype)}, {"dims", v.dims},
                           {"constant_buffer_idx", v.constantIndex}, {"external_id", v.externalId},
                           {"flags", v.flags}, {"dq_datatype", xnnpack::datatypeName(v.dqDatatype)}, {"quant", q}});
  }
  x["constants"] = json::array();
  for (const auto& c : g.constants)
    x["constants"].push_back({{"source", c.source == xnnpack::Constant::Source::NamedData      ? "named_data"
                                         : c.source == xnnpack::Constant::Source::Flatbuffer ? "flatbuffer"
                                                                                              : "constant_data"},
                              {"offset", c.offset}, {"size", c.size}, {"named_key", c.namedKey}});
  j["xnnpack"] = std::move(x);
  return j;
}

}  // namespace lstudio
