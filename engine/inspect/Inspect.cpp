#include "engine/inspect/Inspect.h"

#include "engine/inspect/DelegateReport.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/planning/MemoryAwareOrder.h"
#include "engine/support/FormatUtil.h"

namespace lstudio {

std::string describeValue(const Method& m, ValueId id) {
  if (id < 0 || static_cast<size_t>(id) >= m.values.size()) return "?";
  const Value& v = m.values[id];
  switch (v.kind()) {
    case ValueKind::None: return "None";
    case ValueKind::Int: return "Int " + std::to_string(std::get<int64_t>(v.payload));
    case ValueKind::Bool: return std::string("Bool ") + (std::get<bool>(v.payload) ? "true" : "false");
    case ValueKind::Double: {
      char b[48];
      std::snprintf(b, sizeof b, "Double %g", std::get<double>(v.payload));
      return b;
    }
    case ValueKind::String: return "String \"" + std::get<std::string>(v.payload) + "\"";
    case ValueKind::Tensor: {
      const TensorSpec& t = v.tensor();
      std::string s = t.shapeString();
      if (t.dynamism == ShapeDynamism::DynamicBound) s += " (dynamic, upper bound)";
      else if (t.dynamism == ShapeDynamism::DynamicUnbound) s += " (dynamic, unbounded)";
      return s;
    }
    default: return valueKindName(v.kind());
  }
}

namespace {

const char* inputKindName(InputSpec::Kind k) {
  switch (k) {
    case InputSpec::Kind::User: return "user_input";
    case InputSpec::Kind::Parameter: return "parameter";
    case InputSpec::Kind::Buffer: return "buffer";
    case InputSpec::Kind::ConstantTensor: return "constant";
    case InputSpec::Kind::CustomObject: return "custom_obj";
    case InputSpec::Kind::Token: return "token";
  }
  return "?";
}

const char* outputKindName(OutputSpec::Kind k) {
  switch (k) {
    case OutputSpec::Kind::User: return "user_output";
    case OutputSpec::Kind::BufferMutation: return "buffer_mutation";
    case OutputSpec::Kind::UserInputMutation: return "user_input_mutation";
    case OutputSpec::Kind::Loss: return "loss_output";
    case OutputSpec::Kind::GradientToParameter: return "gradient_to_parameter";
    case OutputSpec::Kind::GradientToUserInput: return "gradient_to_user_input";
    case OutputSpec::Kind::Token: return "token";
  }
  return "?";
}

SignatureEntry signatureEntry(const Method& m, const char* kind, ValueId v, const std::string& target) {
  SignatureEntry e{kind, {}, target, {}, 0};
  if (v >= 0 && static_cast<size_t>(v) < m.values.size()) {
    e.name = m.values[v].name;
    e.type = describeValue(m, v);
    if (auto* t = m.values[v].tensorIf()) e.bytes = t->nbytes().value_or(0);
  }
  return e;
}

void summarizeGraph(const Method& m, MethodSummary& ms) {
  ms.nodes = m.nodes.size();
  for (const auto& in : m.signature.inputs) {
    ms.signatureInputs.push_back(signatureEntry(m, inputKindName(in.kind), in.value, in.target));
    if (in.kind != InputSpec::Kind::User && in.value != kNoValue)
      if (auto* t = m.values[in.value].tensorIf()) ms.weightBytes += t->nbytes().value_or(0);
  }
  for (const auto& out : m.signature.outputs)
    ms.signatureOutputs.push_back(signatureEntry(m, outputKindName(out.kind), out.value, out.target));
  for (const Node& n : m.nodes) ms.moduleDepth = std::max(ms.moduleDepth, n.meta.moduleStack.size());
  ms.symbols = m.symbolRanges;
  for (const auto& d : m.diagnostics) ms.diagnostics.push_back(d.message);
  forEachGraph(m, [&](const Method& g) {
    if (&g == &m) return;
    std::string line = g.name + ": " + std::to_string(g.nodes.size()) + " nodes (";
    for (size_t i = 0; i < g.nodes.size(); ++i)
      line += (i ? ", " : "") + (g.nodes[i].kind == NodeKind::Kernel && g.nodes[i].op >= 0
                                     ? g.operators[static_cast<size_t>(g.nodes[i].op)].fullName()
                                     : std::string(nodeKindName(g.nodes[i].kind)));
    ms.branches.push_back(line + ")");
    for (const auto& d : g.diagnostics) ms.diagnostics.push_back("in branch " + g.name + ": " + d.message);
  });
}

}  // namespace

ProgramSummary summarize(const Program& p, const std::vector<DataFile>& dataFiles) {
  ProgramSummary s;
  s.file = p.path;
  s.format = p.format;
  s.exportFacts = p.exportFacts;
  s.facts = p.facts;
  s.segments = p.segments.size();
  s.namedData = p.namedData.size();
  for (const auto& n : p.namedData) s.namedDataBytes += n.data.size;
  for (const auto& d : dataFiles) s.dataFiles.push_back(d.path);
  s.unresolvedExternal = unresolvedExternalKeys(p);
  for (const Method& m : p.methods) {
    MethodSummary ms;
    ms.name = m.name;
    for (ValueId v : m.inputs) ms.inputs.push_back({v, describeValue(m, v)});
    for (ValueId v : m.outputs) ms.outputs.push_back({v, describeValue(m, v)});
    ms.instructions = m.nodes.size();
    ms.values = m.values.size();
    ms.chains = m.chainCount;
    std::vector<size_t> calls(m.operators.size(), 0);
    for (const Node& n : m.nodes) {
      if (n.kind == NodeKind::Kernel) {
        ++ms.kernelCalls;
        ++calls[n.op];
      } else if (n.kind == NodeKind::Delegate) {
        ++ms.delegateCalls;
      }
    }
    for (size_t i = 0; i < m.operators.size(); ++i)
      ms.operators.push_back({m.operators[i].name, m.operators[i].overload, calls[i]});
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      DelegateReport r = reportDelegate(p, m, i, dataFiles);
      std::string payload = r.format;
      if (r.xnnpack)
        payload += ": " + std::to_string(r.xnnpack->nodes.size()) + " nodes, " +
                   std::to_string(r.xnnpack->values.size()) + " values, " +
                   formatBytes(r.xnnpack->constantBytes()) + " of constants";
      ms.delegates.push_back({r.backend, r.blobBytes, r.location, r.compileSpecs.size(), payload, r});
    }
    for (const Value& v : m.values) {
      const TensorSpec* t = v.tensorIf();
      if (!t) continue;
      uint64_t nb = t->nbytes().value_or(0);
      auto& c = ms.constants;
      switch (t->storage()) {
        case TensorStorage::Constant:
          if (t->source == ConstantSource::ConstantBuffer) ++c.inlineBuffer, c.inlineBytes += nb;
          else ++c.segment, c.segmentBytes += nb;
          break;
        case TensorStorage::External: ++c.external, c.externalBytes += nb; break;
        case TensorStorage::Mutable: ++c.mutableInit, c.mutableBytes += nb; break;
        default: continue;
      }
      ++c.count;
      c.bytes += nb;
    }
    if (p.format == SourceFormat::Pte) {
      ms.plan = analyzeMemoryPlan(m);
      addReorderedBounds(m, ms.plan);
    }
    else summarizeGraph(m, ms);
    s.methods.push_back(std::move(ms));
  }
  return s;
}

namespace {

std::string ratioString(const ArenaStats& a) {
  if (a.lowerBound == 0) return a.size == 0 ? "1.000" : "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", a.ratio());
  return b;
}

}  // namespace

namespace {

/// The first line: the file and its size, or for a program built in memory
/// (a sample of the zoo, not written yet) what it holds.
std::string fileLine(const ProgramSummary& s) {
  if (s.file.rfind("sample:", 0) == 0 && s.facts.fileSize == 0) {
    uint64_t weights = 0;
    for (const auto& m : s.methods) weights += m.weightBytes;
    return "program: " + s.file + " (built in memory, not saved; " + formatBytes(weights) + " of weights)\n";
  }
  return "file: " + s.file + " (" + std::to_string(s.facts.fileSize) + " bytes)\n";
}

std::string graphText(const ProgramSummary& s) {
  std::ostringstream o;
  const auto& x = s.exportFacts;
  o << fileLine(s);
  o << "format: torch.export program, " << x.container;
  if (!x.archiveVersion.empty()) o << " version " << x.archiveVersion;
  o << "\n";
  auto known = [](const std::string& v) { return v.empty() ? std::string("unknown") : v; };
  o << "schema version: " << known(x.schemaVersion) << ", torch " << known(x.torchVersion) << ", dialect "
    << known(x.dialect) << "\n";
  o << "sample inputs: " << (x.hasSampleInputs ? "yes" : "no") << "\n";
  o << "programs: " << s.methods.size() << "\n";
  for (const auto& m : s.methods) {
    o << "\nprogram " << m.name << "\n";
    o << "  nodes " << m.nodes << ", values " << m.values << ", module depth " << m.moduleDepth
      << ", weights " << m.weightBytes << " bytes\n";
    o << "  operators " << m.operators.size() << ":\n";
    for (const auto& op : m.operators)
      o << "    " << op.count << "x " << op.name << (op.overload.empty() ? "" : "." + op.overload) << "\n";
    o << "  signature inputs " << m.signatureInputs.size() << ":\n";
    for (const auto& e : m.signatureInputs)
      o << "    " << e.kind << " " << e.name << (e.target.empty() ? "" : " (" + e.target + ")") << ": " << e.type
        << ", " << e.bytes << " bytes\n";
    o << "  signature outputs " << m.signatureOutputs.size() << ":\n";
    for (const auto& e : m.signatureOutputs)
      o << "    " << e.kind << " " << e.name << (e.target.empty() ? "" : " (" + e.target + ")") << ": " << e.type << "\n";
    for (const auto& r : m.symbols)
      o << "  symbol " << r.symbol << ": [" << r.min << ", " << (r.max ? std::to_string(*r.max) : "inf") << "]\n";
    if (!m.branches.empty()) {
      o << "  control-flow branches " << m.branches.size() << ":\n";
      for (const auto& b : m.branches) o << "    " << b << "\n";
    }
    o << "  edge dialect check: " << (m.diagnostics.empty() ? std::string("ok") : "problems: " + std::to_string(m.diagnostics.size())) << "\n";
    for (const auto& d : m.diagnostics) o << "    " << d << "\n";
  }
  return o.str();
}

}  // namespace

std::string toText(const ProgramSummary& s) {
  if (s.format != SourceFormat::Pte) return graphText(s);
  std::ostringstream o;
  const auto& f = s.facts;
  o << fileLine(s);
  o << "format: ExecuTorch program, identifier " << f.identifier << ", schema version " << f.schemaVersion;
  if (f.bundled) o << ", embedded at byte " << f.embeddedOffset << " of a bundled program (" << f.bundledTestSuites << " test suites)";
  o << "\n";
  o << "header: " << headerName(f.header);
  if (f.header != ContainerFacts::Header::None)
    o << ", program " << f.programSize << " bytes, segment base " << f.segmentBaseOffset << ", segment data "
      << f.segmentDataSize << " bytes";
  o << "\n";
  o << "segments: " << s.segments;
  if (f.segmentAlignment) o << ", alignment " << f.segmentAlignment << " (inferred)";
  o << "\n";
  o << "constant storage: "
    << (f.constants == ContainerFacts::Constants::ConstantSegment ? "constant_segment"
        : f.constants == ContainerFacts::Constants::ConstantBuffer ? "constant_buffer (legacy)" : "none")
    << "\n";
  o << "named data: " << s.namedData << " entries, " << s.namedDataBytes << " bytes\n";
  for (const auto& d : s.dataFiles) o << "data file: " << d << "\n";
  if (!s.unresolvedExternal.empty()) {
    o << "unresolved external tensors: " << s.unresolvedExternal.size() << " (pass --ptd FILE)\n";
  }
  o << "methods: " << s.methods.size() << "\n";
  for (const auto& m : s.methods) {
    o << "\nmethod " << m.name << "\n";
    o << "  instructions " << m.instructions << " (kernel " << m.kernelCalls << ", delegate " << m.delegateCalls
      << "), values " << m.values << ", chains " << m.chains << "\n";
    o << "  inputs " << m.inputs.size() << ":\n";
    for (const auto& io : m.inputs) o << "    [" << io.value << "] " << io.description << "\n";
    o << "  outputs " << m.outputs.size() << ":\n";
    for (const auto& io : m.outputs) o << "    [" << io.value << "] " << io.description << "\n";
    o << "  operators " << m.operators.size() << ":\n";
    for (const auto& op : m.operators)
      o << "    " << op.count << "x " << op.name << (op.overload.empty() ? "" : "." + op.overload) << "\n";
    o << "  delegates " << m.delegates.size() << ":\n";
    for (const auto& d : m.delegates)
      o << "    " << d.id << ": " << d.bytes << " bytes (" << d.location << "), " << d.compileSpecs
        << " compile specs, payload " << d.payload << "\n";
    const auto& c = m.constants;
    o << "  constants " << c.count << ", " << c.bytes << " bytes: constant_buffer " << c.inlineBuffer << ", segment "
      << c.segment << ", external " << c.external << ", mutable " << c.mutableInit << "\n";
    o << "  memory plan: " << m.plan.tensors.size() << " planned tensors, alignment " << m.plan.alignment;
    if (m.plan.unreferenced) o << ", " << m.plan.unreferenced << " unreferenced";
    if (m.plan.loops) o << ", has loops";
    o << "\n";
    for (const auto& a : m.plan.arenas)
      o << "    mem_id " << a.memId << ": arena " << a.size << " bytes, lower bound " << a.lowerBound
        << " bytes (peak at step " << a.peakStep << "), ratio " << ratioString(a) << ", " << a.tensors
        << " tensors in " << a.storages << " storages\n";
    for (const auto& a : m.plan.arenas)
      if (a.reorderedBound)
        o << "    mem_id " << a.memId << ": lower bound " << a.reorderedBound
          << " bytes in a memory-aware order with in-place reuse (studio_memory_aware_order, beyond ExecuTorch)\n";
    o << "    overlap check: "
      << (m.plan.overlapFree() ? std::string("ok") : std::to_string(m.plan.overlapCount) + " overlapping pairs")
      << "\n";
    for (const auto& ov : m.plan.overlaps)
      o << "      values[" << ov.a << "] and values[" << ov.b << "] share bytes in mem_id " << ov.memId
        << " at step " << ov.step << "\n";
  }
  return o.str();
}

nlohmann::json toJson(const ProgramSummary& s) {
  using nlohmann::json;
  const auto& f = s.facts;
  json j;
  j["file"] = s.file;
  j["format"] = s.format == SourceFormat::Pte ? "pte" : s.format == SourceFormat::Pt2 ? "pt2" : "etrecord";
  j["file_size"] = f.fileSize;
  if (s.format != SourceFormat::Pte) {
    j["export"] = {{"container", s.exportFacts.container}, {"archive_version", s.exportFacts.archiveVersion},
                   {"schema_version", s.exportFacts.schemaVersion}, {"torch_version", s.exportFacts.torchVersion},
                   {"dialect", s.exportFacts.dialect}, {"sample_inputs", s.exportFacts.hasSampleInputs}};
    json methods = json::array();
    for (const auto& m : s.methods) {
      auto sig = [](const std::vector<SignatureEntry>& v) {
        json a = json::array();
        for (const auto& e : v)
          a.push_back({{"kind", e.kind}, {"name", e.name}, {"target", e.target}, {"type", e.type}, {"bytes", e.bytes}});
        return a;
      };
      json ops = json::array();
      for (const auto& op : m.operators) ops.push_back({{"name", op.name}, {"overload", op.overload}, {"count", op.count}});
      methods.push_back({{"name", m.name},
                         {"nodes", m.nodes},
                         {"values", m.values},
                         {"operators", ops},
                         {"module_depth", m.moduleDepth},
                         {"weight_bytes", m.weightBytes},
                         {"edge_dialect_problems", m.diagnostics},
                         {"branches", m.branches},
                         {"signature", {{"inputs", sig(m.signatureInputs)}, {"outputs", sig(m.signatureOutputs)}}}});
    }
    j["methods"] = std::move(methods);
    return j;
  }
  j["identifier"] = f.identifier;
  j["schema_version"] = f.schemaVersion;
  j["header"] = f.header == ContainerFacts::Header::None ? "none" : f.header == ContainerFacts::Header::Eh00 ? "eh00-32" : "eh00-24";
  j["program_size"] = f.programSize;
  j["segment_base_offset"] = f.segmentBaseOffset;
  j["segment_data_size"] = f.segmentDataSize;
  j["segments"] = s.segments;
  j["segment_alignment"] = f.segmentAlignment;
  j["constant_storage"] = f.constants == ContainerFacts::Constants::ConstantSegment ? "constant_segment"
                          : f.constants == ContainerFacts::Constants::ConstantBuffer ? "constant_buffer" : "none";
  j["bundled"] = f.bundled;
  j["named_data"] = {{"count", s.namedData}, {"bytes", s.namedDataBytes}};
  j["data_files"] = s.dataFiles;
  j["unresolved_external"] = s.unresolvedExternal;
  json methods = json::array();
  for (const auto& m : s.methods) {
    json jm;
    jm["name"] = m.name;
    jm["instructions"] = m.instructions;
    jm["values"] = m.values;
    jm["chains"] = m.chains;
    jm["kernel_calls"] = m.kernelCalls;
    jm["delegate_calls"] = m.delegateCalls;
    auto io = [](const std::vector<IoSummary>& v) {
      json a = json::array();
      for (const auto& x : v) a.push_back({{"value", x.value}, {"type", x.description}});
      return a;
    };
    jm["inputs"] = io(m.inputs);
    jm["outputs"] = io(m.outputs);
    jm["operators"] = json::array();
    for (const auto& op : m.operators)
      jm["operators"].push_back({{"name", op.name}, {"overload", op.overload}, {"count", op.count}});
    jm["delegates"] = json::array();
    for (const auto& d : m.delegates) {
      json jd = delegateJson(d.report);  // backend, specs, inputs, outputs, named data, decoded payload
      jd.update({{"id", d.id}, {"bytes", d.bytes}, {"location", d.location}, {"payload", d.payload}});
      jm["delegates"].push_back(std::move(jd));
    }
    const auto& c = m.constants;
    jm["constants"] = {{"count", c.count},          {"bytes", c.bytes},
                       {"constant_buffer", c.inlineBuffer}, {"segment", c.segment},
                       {"external", c.external},    {"mutable", c.mutableInit},
                       {"external_bytes", c.externalBytes}, {"mutable_bytes", c.mutableBytes}};
    jm["arenas"] = json::array();
    for (const auto& a : m.plan.arenas)
      jm["arenas"].push_back({{"mem_id", a.memId},
                              {"size", a.size},
                              {"lower_bound", a.lowerBound},
                              {"reordered_bound", a.reorderedBound},
                              {"ratio", a.ratio()},
                              {"peak_step", a.peakStep},
                              {"high_water", a.highWater},
                              {"tensors", a.tensors},
                              {"storages", a.storages}});
    jm["memory_plan"] = {{"planned_tensors", m.plan.tensors.size()},
                         {"alignment", m.plan.alignment},
                         {"unreferenced", m.plan.unreferenced},
                         {"loops", m.plan.loops},
                         {"overlaps", m.plan.overlapCount}};
    methods.push_back(std::move(jm));
  }
  j["methods"] = std::move(methods);
  return j;
}

}  // namespace lstudio

namespace lstudio {

std::string dataFileText(const DataFile& d) {
  std::ostringstream o;
  o << "file: " << d.path << " (" << d.file->size() << " bytes)\n";
  o << "format: ExecuTorch tensor data (FlatTensor" << (d.legacy ? ", first generation" : "") << "), version " << d.version << "\n";
  o << "header: FH01, " << d.headerLength << " bytes, flatbuffer " << d.flatbufferSize << " bytes, segment base "
    << d.segmentBaseOffset << ", segment data " << d.segmentDataSize << " bytes\n";
  o << "segments: " << d.segments.size() << "\n";
  o << "entries " << d.entries.size() << ":\n";
  for (const auto& e : d.entries) {
    o << "  " << e.key << ": ";
    if (e.layout) {
      TensorSpec t;
      t.dtype = e.layout->dtype;
      t.sizes = e.layout->sizes;
      o << t.shapeString() << ", " << t.nbytes().value_or(0) << " bytes";
    } else {
      o << "blob, " << e.data.size << " bytes";
    }
    o << " (segment " << e.segmentIndex << " at byte " << e.data.fileOffset << ")\n";
  }
  return o.str();
}

nlohmann::json dataFileJson(const DataFile& d) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : d.entries) {
    nlohmann::json j = {{"key", e.key}, {"segment", e.segmentIndex}, {"offset", e.data.fileOffset}, {"bytes", e.data.size}};
    if (e.layout) {
      j["dtype"] = std::string(scalarTypeName(e.layout->dtype));
      j["sizes"] = e.layout->sizes;
    }
    entries.push_back(std::move(j));
  }
  return {{"file", d.path},        {"format", "ptd"},          {"file_size", d.file->size()},
          {"legacy", d.legacy},    {"version", d.version},     {"segments", d.segments.size()},
          {"entries", entries}};
}

}  // namespace lstudio
