#include "engine/formats/Pt2Writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/support/AtomicFile.h"
#include "engine/ir/OpRegistry.h"
#include "engine/formats/StoredZipWriter.h"
#include "engine/formats/pte/FileOutput.h"

namespace lstudio {
namespace {

using nlohmann::json;

/// c10 ScalarType -> torch.export's serialized numbering.
int serdeScalarType(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return 1;
    case ScalarType::Char: return 2;
    case ScalarType::Short: return 3;
    case ScalarType::Int: return 4;
    case ScalarType::Long: return 5;
    case ScalarType::Half: return 6;
    case ScalarType::Float: return 7;
    case ScalarType::Double: return 8;
    case ScalarType::ComplexHalf: return 9;
    case ScalarType::ComplexFloat: return 10;
    case ScalarType::ComplexDouble: return 11;
    case ScalarType::Bool: return 12;
    case ScalarType::BFloat16: return 13;
    case ScalarType::UInt16: return 28;
    case ScalarType::Float8_e4m3fn: return 29;
    case ScalarType::Float8_e5m2: return 30;
    case ScalarType::Float8_e4m3fnuz: return 31;
    case ScalarType::Float8_e5m2fnuz: return 32;
    case ScalarType::UInt32: return 34;
    case ScalarType::UInt64: return 35;
    default: return 0;
  }
}

/// c10 MemoryFormat -> serialized (Contiguous 1, ChannelsLast 2, ChannelsLast3d 3, Preserve 4).
int serdeMemoryFormat(int64_t c10) {
  switch (c10) {
    case 0: return 1;
    case 1: return 4;
    case 2: return 2;
    case 3: return 3;
    default: return 0;
  }
}

json symInt(int64_t value, const std::string& symbol) {
  if (symbol.empty()) return {{"as_int", value}};
  return {{"as_expr", {{"expr_str", symbol}, {"hint", {{"as_int", value}}}}}};
}

json tensorMeta(const TensorSpec& t) {
  json sizes = json::array(), strides = json::array();
  for (size_t d = 0; d < t.sizes.size(); ++d) sizes.push_back(symInt(t.sizes[d], d < t.symbols.size() ? t.symbols[d] : ""));
  // Contiguous strides in the tensor's dim order unless the source recorded its own.
  std::vector<int64_t> st = t.strides;
  if (st.size() != t.sizes.size()) {
    st.assign(t.sizes.size(), 1);
    int64_t acc = 1;
    for (size_t k = t.dimOrder.size(); k-- > 0;) {
      st[t.dimOrder[k]] = acc;
      acc *= std::max<int64_t>(t.sizes[t.dimOrder[k]], 1);
    }
  }
  for (int64_t s : st) strides.push_back(symInt(s, ""));
  return {{"dtype", serdeScalarType(t.dtype)},
          {"sizes", sizes},
          {"requires_grad", t.requiresGrad},
          {"device", {{"type", "cpu"}, {"index", nullptr}}},
          {"strides", strides},
          {"storage_offset", symInt(t.storageOffset, "")},
          {"layout", 7}};
}

class JsonWriter {
 public:
  JsonWriter(const Method& m) : m_(m) {}

  json tensorRef(ValueId v) const { return {{"name", m_.values[v].name}}; }

  /// One argument, spelled as its schema type asks (scalar types and memory
  /// formats are ints in the IR but have members of their own in the union).
  json argument(ValueId v, const SchemaArgument* sa) const {
    if (v < 0) return {{"as_none", true}};
    const Value& val = m_.values[v];
    using B = SchemaType::Base;
    B base = sa ? sa->type.base : B::Other;
    switch (val.kind()) {
      case ValueKind::None: return {{"as_none", true}};
      case ValueKind::Tensor: return {{"as_tensor", tensorRef(v)}};
      case ValueKind::Int: {
        int64_t i = std::get<int64_t>(val.payload);
        if (val.symbolic) return {{"as_sym_int", {{"as_name", val.name}}}};
        if (base == B::ScalarType) return {{"as_scalar_type", serdeScalarType(static_cast<ScalarType>(i))}};
        if (base == B::MemoryFormat) return {{"as_memory_format", serdeMemoryFormat(i)}};
        if (base == B::Layout) return {{"as_layout", i == 0 ? 7 : i}};
        if (base == B::SymInt) return {{"as_sym_int", {{"as_int", i}}}};
        return {{"as_int", i}};
      }
      case ValueKind::Bool: return {{"as_bool", std::get<bool>(val.payload)}};
      case ValueKind::Double: return {{"as_float", std::get<double>(val.payload)}};
      case ValueKind::String:
        if (base == B::Device) return {{"as_device", {{"type", std::get<std::string>(val.payload)}, {"index", nullptr}}}};
        return {{"as_string", std::get<std::string>(val.payload)}};
      case ValueKind::IntList: {
        const auto& items = std::get<IntList>(val.payload).items;
        bool sym = base == B::SymInt;
        for (ValueId x : items) sym = sym || m_.values[x].symbolic;
        json a = json::array();
        for (ValueId x : items) {
          const Value& e = m_.values[x];
          if (!sym) a.push_back(std::get<int64_t>(e.payload));
          else if (e.symbolic) a.push_back({{"as_name", e.name}});
          else a.push_back({{"as_int", std::get<int64_t>(e.payload)}});
        }
        return {{sym ? "as_sym_ints" : "as_ints", a}};
      }
      case ValueKind::DoubleList: return {{"as_floats", std::get<DoubleList>(val.payload).items}};
      case ValueKind::BoolList: {
        json a = json::array();
        for (uint8_t b : std::get<BoolList>(val.payload).items) a.push_back(b != 0);
        return {{"as_bools", a}};
      }
      case ValueKind::TensorList: {
        json a = json::array();
        for (ValueId x : std::get<TensorList>(val.payload).items) a.push_back(tensorRef(x));
        return {{"as_tensors", a}};
      }
      case ValueKind::OptionalTensorList: {
        json a = json::array();
        for (ValueId x : std::get<OptionalTensorList>(val.payload).items)
          a.push_back(x == kNoValue ? json{{"as_none", true}} : json{{"as_tensor", tensorRef(x)}});
        return {{"as_optional_tensors", a}};
      }
    }
    return {{"as_none", true}};
  }

  static std::string stackTrace(const std::vector<StackFrame>& frames) {
    std::string s;
    for (size_t i = 0; i < frames.size(); ++i) {
      const StackFrame& f = frames[i];
      if (i) s += "\n  ";
      s += "File \"" + f.file + "\", line " + std::to_string(f.line) + ", in " + f.function;
      if (!f.context.empty()) s += "\n    " + f.context;
    }
    return s;
  }

  static std::string moduleStack(const std::vector<ModuleFrame>& frames) {
    std::string s;
    for (const auto& f : frames) {
      std::string key = "L__self__";
      for (char c : f.path) key += (c == '.' ? '_' : c);
      if (!s.empty()) s += ";";
      s += key + "," + f.path + "," + f.type;
    }
    return s;
  }

  json node(const Node& n) const {
    const OperatorRef& op = m_.operators[n.op];
    const OpSchema* schema = OpRegistry::builtin().find(op.name, op.overload);
    json inputs = json::array();
    for (size_t i = 0; i < n.args.size(); ++i) {
      const SchemaArgument* sa = nullptr;
      std::string name = i < n.argNames.size() ? n.argNames[i] : std::string();
      if (schema)
        for (const auto& a : schema->arguments)
          if (a.name == name) sa = &a;
      inputs.push_back({{"name", name}, {"arg", argument(n.args[i], sa)}, {"kind", sa && sa->kwargOnly ? 2 : 1}});
    }
    json outputs = json::array();
    for (ValueId o : n.outputs) outputs.push_back({{"as_tensor", tensorRef(o)}});
    json meta = json::object();
    if (!n.meta.stackTrace.empty()) meta["stack_trace"] = stackTrace(n.meta.stackTrace);
    if (!n.meta.moduleStack.empty()) meta["nn_module_stack"] = moduleStack(n.meta.moduleStack);
    if (n.meta.debugHandle) meta["debug_handle"] = std::to_string(*n.meta.debugHandle);
    std::string target = n.target.empty() ? "torch.ops." + op.name.substr(0, op.name.find("::")) + "." +
                                                op.name.substr(op.name.find("::") + 2) + "." + op.overload
                                          : n.target;
    return {{"target", target}, {"inputs", inputs}, {"outputs", outputs}, {"metadata", meta},
            {"is_hop_single_tensor_return", nullptr}};
  }

 private:
  const Method& m_;
};

const char* inputKey(InputSpec::Kind k) {
  switch (k) {
    case InputSpec::Kind::User: return "user_input";
    case InputSpec::Kind::Parameter: return "parameter";
    case InputSpec::Kind::Buffer: return "buffer";
    case InputSpec::Kind::ConstantTensor: return "tensor_constant";
    case InputSpec::Kind::CustomObject: return "custom_obj";
    case InputSpec::Kind::Token: return "token";
  }
  return "user_input";
}

}  // namespace

std::string exportedProgramJson(const Program& program, const Method& m) {
  JsonWriter w(m);
  json tensorValues = json::object(), symInts = json::object();
  for (const Value& v : m.values) {
    if (auto* t = v.tensorIf(); t && !v.name.empty()) tensorValues[v.name] = tensorMeta(*t);
    if (v.symbolic && v.kind() == ValueKind::Int) symInts[v.name] = {{"as_expr", {{"expr_str", v.name}, {"hint", {{"as_int", std::get<int64_t>(v.payload)}}}}}};
  }
  json inputs = json::array(), outputs = json::array(), nodes = json::array();
  for (ValueId v : m.inputs) inputs.push_back(w.argument(v, nullptr));
  for (const Node& n : m.nodes) nodes.push_back(w.node(n));
  for (ValueId v : m.outputs) outputs.push_back(w.argument(v, nullptr));
  json inSpecs = json::array(), outSpecs = json::array();
  for (const InputSpec& s : m.signature.inputs) {
    const char* key = inputKey(s.kind);
    json body;
    if (s.kind == InputSpec::Kind::User) body = {{"arg", w.argument(s.value, nullptr)}};
    else body = {{"arg", {{"name", s.value >= 0 ? m.values[s.value].name : std::string()}}}};
    if (s.kind == InputSpec::Kind::Parameter) body["parameter_name"] = s.target;
    if (s.kind == InputSpec::Kind::Buffer) body["buffer_name"] = s.target, body["persistent"] = s.persistent;
    if (s.kind == InputSpec::Kind::ConstantTensor) body["tensor_constant_name"] = s.target;
    inSpecs.push_back({{key, body}});
  }
  for (const OutputSpec& s : m.signature.outputs) {
    json arg = {{"as_tensor", {{"name", s.value >= 0 ? m.values[s.value].name : std::string()}}}};
    switch (s.kind) {
      case OutputSpec::Kind::User: outSpecs.push_back({{"user_output", {{"arg", arg}}}}); break;
      // LossOutputSpec.arg is a TensorArgument, not an Argument union (torch/_export/serde/schema.py).
      case OutputSpec::Kind::Loss: outSpecs.push_back({{"loss_output", {{"arg", arg["as_tensor"]}}}}); break;
      case OutputSpec::Kind::BufferMutation:
        outSpecs.push_back({{"buffer_mutation", {{"arg", arg["as_tensor"]}, {"buffer_name", s.target}}}});
        break;
      case OutputSpec::Kind::GradientToParameter:
        outSpecs.push_back({{"gradient_to_parameter", {{"arg", arg["as_tensor"]}, {"parameter_name", s.target}}}});
        break;
      case OutputSpec::Kind::GradientToUserInput:
        outSpecs.push_back({{"gradient_to_user_input", {{"arg", arg["as_tensor"]}, {"user_input_name", s.target}}}});
        break;
      case OutputSpec::Kind::UserInputMutation:
        outSpecs.push_back({{"user_input_mutation", {{"arg", arg["as_tensor"]}, {"user_input_name", s.target}}}});
        break;
      case OutputSpec::Kind::Token: outSpecs.push_back({{"token", {{"arg", arg["as_tensor"]}}}}); break;
    }
  }
  json ranges = json::object();
  for (const auto& r : m.symbolRanges) ranges[r.symbol] = {{"min_val", r.min}, {"max_val", r.max ? json(*r.max) : json(nullptr)}};
  json calls = json::array();
  for (const auto& c : m.moduleCalls) {
    json sig = nullptr;
    if (!c.inSpec.empty() || !c.outSpec.empty())
      sig = {{"inputs", json::array()}, {"outputs", json::array()}, {"in_spec", c.inSpec}, {"out_spec", c.outSpec}};
    calls.push_back({{"fqn", c.fqn}, {"signature", sig}});
  }
  const ExportFacts& f = program.exportFacts;
  std::string dialect = f.dialect.empty() ? "ATEN" : f.dialect;
  json doc = {{"graph_module",
               {{"graph",
                 {{"inputs", inputs},
                  {"outputs", outputs},
                  {"nodes", nodes},
                  {"tensor_values", tensorValues},
                  {"sym_int_values", symInts},
                  {"sym_bool_values", json::object()},
                  {"sym_float_values", json::object()},
                  {"custom_obj_values", json::object()},
                  {"is_single_tensor_return", false}}},
                {"signature", {{"input_specs", inSpecs}, {"output_specs", outSpecs}}},
                {"module_call_graph", calls},
                {"metadata", json::object()},
                {"treespec_namedtuple_fields", json::object()}}},
              {"opset_version", {{"aten", 10}}},
              {"range_constraints", ranges},
              {"schema_version", {{"major", 8}, {"minor", 12}}},
              {"verifiers", json::array({dialect})},
              {"torch_version", f.torchVersion.empty() ? "unknown" : f.torchVersion}};
  return doc.dump();
}

Status writePt2(const Program& program, const std::string& path) {
  if (program.methods.empty())
    return Error{ErrorCode::Invalid, path, std::nullopt, "program to write", "at least one method", "none"};
  const Method& m = program.methods.front();
  std::string root = std::filesystem::path(path).stem().string();
  if (root.empty()) root = "archive";
  // Records in a fixed order; weights numbered in signature order.
  // The state dict (parameters and persistent buffers) goes to
  // data/weights/weight_<i>; lifted constants and non-persistent buffers,
  // which torch keeps in ExportedProgram.constants (its verifier refuses them
  // in the state dict), to data/constants/tensor_<i>; each described by its config.
  json config = json::object(), constConfig = json::object();
  std::vector<std::pair<std::string, Bytes>> weights;
  size_t nWeights = 0, nConstants = 0;
  for (const InputSpec& s : m.signature.inputs) {
    if (s.kind != InputSpec::Kind::Parameter && s.kind != InputSpec::Kind::Buffer && s.kind != InputSpec::Kind::ConstantTensor) continue;
    if (s.value < 0) continue;
    const TensorSpec& t = m.values[s.value].tensor();
    bool constant = s.kind == InputSpec::Kind::ConstantTensor || (s.kind == InputSpec::Kind::Buffer && !s.persistent);
    std::string name = constant ? "tensor_" + std::to_string(nConstants++) : "weight_" + std::to_string(nWeights++);
    (constant ? constConfig : config)[s.target] = {{"path_name", name}, {"is_param", s.kind == InputSpec::Kind::Parameter},
                                                   {"use_pickle", false}, {"tensor_meta", tensorMeta(t)}};
    weights.push_back({(constant ? "data/constants/" : "data/weights/") + name, t.data});
  }
  std::string model = exportedProgramJson(program, m);
  std::string cfg = json{{"config", config}}.dump();

  // Records in a fixed order. The bytes are those minizip wrote for this
  // archive before (see StoredZipWriter.h), so writing stays deterministic.
  std::string mc = json{{"config", constConfig}}.dump();
  std::vector<StoredZipRecord> records;
  auto add = [&](const std::string& name, const void* data, uint64_t size) {
    records.push_back({root + "/" + name, static_cast<const uint8_t*>(data), size});
  };
  auto text = [&](const std::string& name, const std::string& s) { add(name, s.data(), s.size()); };
  const std::string format = "pt2", version = "0", byteorder = "little", dataVersion = "6\n", noSampleInputs;
  text("archive_format", format);
  text("archive_version", version);
  text("byteorder", byteorder);
  text(".data/version", dataVersion);
  text("models/model.json", model);
  text("data/weights/model_weights_config.json", cfg);
  text("data/constants/model_constants_config.json", mc);
  // torch.export.load reads this record for every model; empty is what
  // torch.export writes without example inputs (and loads as none).
  text("data/sample_inputs/model.pt", noSampleInputs);
  const pte::MappedRanges mapped(program);  // weights in mapped files are copied file to file
  for (const auto& [name, bytes] : weights) {
    add(name, bytes.data, bytes.data ? bytes.size : 0);
    if (auto source = bytes.data ? mapped.source(bytes.data, bytes.size) : std::nullopt)
      records.back().sourceFd = source->first, records.back().sourceOffset = source->second;
  }

  removeStaleTemporaries(path);  // left by a write that was killed
  std::string tmp = temporaryNameFor(path);
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Error{ErrorCode::Io, path, std::nullopt, "cannot create a temporary file beside it", "", std::strerror(errno)};
  auto fail = [&](Error e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  };
  mode_t mask = ::umask(0);  // mkstemp makes 0600; archives are ordinary files
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (auto s = writeStoredZip(fd, path, records); !s) return fail(s.error());
  // Durable before it replaces anything: flush the finished archive first.
  if (::fsync(fd) != 0)
    return fail(Error{ErrorCode::Io, path, std::nullopt, "cannot flush the archive to disk", "", std::strerror(errno)});
  if (::close(fd) != 0) {
    Error e{ErrorCode::Io, path, std::nullopt, "cannot close the archive", "", std::strerror(errno)};
    ::unlink(tmp.c_str());
    return e;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e{ErrorCode::Io, path, std::nullopt, "cannot rename the temporary file into place", "", std::strerror(errno)};
    ::unlink(tmp.c_str());
    return e;
  }
  syncFolder(std::filesystem::path(path).parent_path().string());  // the rename survives a power cut
  return Ok{};
}

}  // namespace lstudio
