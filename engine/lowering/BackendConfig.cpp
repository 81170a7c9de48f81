#include "engine/lowering/BackendConfig.h"

#include <nlohmann/json.hpp>

#include "engine/ir/OpRegistry.h"
#include "engine/support/MappedFile.h"

namespace lstudio {
namespace {

using nlohmann::json;

bool powerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// "aten::add.Tensor" -> {"aten::add", "Tensor"}; "aten::linear" -> {"aten::linear", ""}.
std::pair<std::string, std::string> splitOperator(const std::string& op) {
  size_t colons = op.find("::");
  size_t dot = op.find('.', colons == std::string::npos ? 0 : colons + 2);
  if (dot == std::string::npos) return {op, ""};
  return {op.substr(0, dot), op.substr(dot + 1)};
}

std::string normalOverload(const std::string& o) { return o.empty() ? "default" : o; }

Error fieldError(const std::string& file, const std::string& field, std::string expected, std::string found) {
  return Error{ErrorCode::Invalid, file, std::nullopt, "config field '" + field + "'", std::move(expected), std::move(found)};
}

/// Reads one typed field of a config object when it is there; a field of the wrong type
/// is reported by its ExecuTorch name (`path`).
class FieldReader {
 public:
  explicit FieldReader(const std::string& file) : file_(file) {}

  Status boolean(const json& o, const std::string& key, bool& into, const std::string& path) const {
    if (!o.contains(key)) return Ok{};
    if (!o[key].is_boolean()) return fieldError(file_, path, "true or false", o[key].dump());
    into = o[key].get<bool>();
    return Ok{};
  }
  Status unsignedInt(const json& o, const std::string& key, uint64_t& into, const std::string& path) const {
    if (!o.contains(key)) return Ok{};
    if (!o[key].is_number_unsigned()) return fieldError(file_, path, "a positive integer", o[key].dump());
    into = o[key].get<uint64_t>();
    return Ok{};
  }
  Status text(const json& o, const std::string& key, std::string& into, const std::string& path) const {
    if (!o.contains(key)) return Ok{};
    if (!o[key].is_string()) return fieldError(file_, path, "a string", o[key].dump());
    into = o[key].get<std::string>();
    return Ok{};
  }

 private:
  const std::string& file_;
};

/// Every top-level field must be one of ExecutorchBackendConfig's.
Status checkKnownFields(const json& j, const std::string& file) {
  static const char* known[] = {"edge_compile_config", "memory_planning_pass", "to_out_var_pass", "dynamic_memory_planning_mode",
                                "emit_stacktrace", "extract_delegate_segments", "segment_alignment",
                                "constant_tensor_alignment", "delegate_alignment", "sym_shape_eval_pass",
                                "remove_view_copy", "external_constants", "external_mutable_weights",
                                "emit_mutable_buffer_names", "do_quant_fusion_and_const_prop", "run_reinplace_pass",
                                "reinplace_extra_ops", "studio_memory_aware_order", "passes",
                                "enable_non_cpu_memory_planning", "propagate_device_config", "partitioner"};
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) return fieldError(file, key, "a field of ExecutorchBackendConfig", "an unknown field");
  }
  return Ok{};
}

/// One MemoryPlanningPass's options at `path` ("memory_planning_pass" or "memory_planning_pass.forward").
Status readPlanningPass(const json& mp, const FieldReader& read, const std::string& file, const std::string& path,
                        MemoryPlanningConfig& c) {
  if (!mp.is_object()) return fieldError(file, path, "an object", mp.dump());
  for (const auto& [key, value] : mp.items())
    if (key != "algorithms" && key != "alloc_graph_input" && key != "alloc_graph_output" &&
        key != "alloc_mutable_buffers" && key != "share_mutable_buffers" && key != "alignment")
      return fieldError(file, path + "." + key,
                        "algorithms, alloc_graph_input, alloc_graph_output, alloc_mutable_buffers, share_mutable_buffers "
                        "or alignment",
                        "an unknown field");
  if (mp.contains("algorithms")) {
    if (!mp["algorithms"].is_array()) return fieldError(file, path + ".algorithms", "a list of names", mp["algorithms"].dump());
    c.algorithms.clear();
    for (const auto& a : mp["algorithms"]) {
      if (!a.is_string()) return fieldError(file, path + ".algorithms", "names", a.dump());
      c.algorithms.push_back(a.get<std::string>());
    }
  }
  for (auto [key, into] : {std::pair{"alloc_graph_input", &c.allocGraphInput},
                           std::pair{"alloc_graph_output", &c.allocGraphOutput},
                           std::pair{"alloc_mutable_buffers", &c.allocMutableBuffers},
                           std::pair{"share_mutable_buffers", &c.shareMutableBuffers}})
    if (auto s = read.boolean(mp, key, *into, path + "." + key); !s) return s;
  return read.unsignedInt(mp, "alignment", c.alignment, path + ".alignment");
}

/// memory_planning_pass: one pass's options, or a dict of them by method name
/// (every value an object, which no option is).
Status readMemoryPlanning(const json& mp, const FieldReader& read, const std::string& file, ExecutorchBackendConfig& c) {
  const std::string path = "memory_planning_pass";
  if (!mp.is_object()) return fieldError(file, path, "an object", mp.dump());
  bool perMethod = !mp.empty();
  for (const auto& [key, value] : mp.items()) perMethod = perMethod && value.is_object();
  if (!perMethod) return readPlanningPass(mp, read, file, path, c.memoryPlanning);
  for (const auto& [method, options] : mp.items())
    if (auto s = readPlanningPass(options, read, file, path + "." + method, c.memoryPlanningPerMethod[method]); !s) return s;
  return Ok{};
}

json planningToJson(const MemoryPlanningConfig& mp) {
  return {{"algorithms", mp.algorithms},
          {"alloc_graph_input", mp.allocGraphInput},
          {"alloc_graph_output", mp.allocGraphOutput},
          {"alloc_mutable_buffers", mp.allocMutableBuffers},
          {"share_mutable_buffers", mp.shareMutableBuffers},
          {"alignment", mp.alignment}};
}

/// external_constants[i]: one rule of which constants go to which .ptd file.
Result<ConstantTagRule> readTagRule(const json& r, const std::string& path, const FieldReader& read,
                                    const std::string& file) {
  if (!r.is_object()) return fieldError(file, path, "a rule object", r.dump());
  for (const auto& [key, value] : r.items())
    if (key != "name" && key != "module" && key != "op" && key != "min_bytes" && key != "file")
      return fieldError(file, path + "." + key, "name, module, op, min_bytes or file", "an unknown field");
  ConstantTagRule rule;
  if (auto s = read.text(r, "name", rule.namePattern, path + ".name"); !s) return s.error();
  if (auto s = read.text(r, "module", rule.modulePrefix, path + ".module"); !s) return s.error();
  if (auto s = read.text(r, "op", rule.op, path + ".op"); !s) return s.error();
  if (auto s = read.unsignedInt(r, "min_bytes", rule.minBytes, path + ".min_bytes"); !s) return s.error();
  if (r.contains("file") && r["file"].is_null()) rule.file.clear();
  else if (auto s = read.text(r, "file", rule.file, path + ".file"); !s) return s.error();
  return rule;
}

/// external_constants: true, false, or a list of rules (which makes it true).
Status readExternalConstants(const json& e, const FieldReader& read, const std::string& file,
                             ExecutorchBackendConfig& c) {
  if (e.is_boolean()) {
    c.externalConstants = e.get<bool>();
    return Ok{};
  }
  if (!e.is_array()) return fieldError(file, "external_constants", "true, false or a list of rules", e.dump());
  c.externalConstants = true;
  for (size_t i = 0; i < e.size(); ++i) {
    auto rule = readTagRule(e[i], "external_constants[" + std::to_string(i) + "]", read, file);
    if (!rule) return rule.error();
    c.externalConstantRules.push_back(std::move(rule.value()));
  }
  return Ok{};
}

/// A list of operator names (null: none).
Status readOperators(const json& r, const std::string& file, const std::string& path, std::vector<std::string>& ops) {
  ops.clear();
  if (r.is_null()) return Ok{};
  if (!r.is_array()) return fieldError(file, path, "a list of operator names", r.dump());
  for (const auto& op : r) {
    if (!op.is_string()) return fieldError(file, path, "operator names", op.dump());
    ops.push_back(op.get<std::string>());
  }
  return Ok{};
}

/// passes: [{"name": "InitializedMutableBufferPass", "patterns": [...]}], the one pass
/// object of ExecuTorch's the studio runs from a config.
Status readPasses(const json& p, const std::string& file, ExecutorchBackendConfig& c) {
  c.initializedMutableBuffers.clear();
  if (!p.is_array()) return fieldError(file, "passes", "a list of passes", p.dump());
  for (const auto& pass : p) {
    if (!pass.is_object() || !pass.contains("name") || !pass["name"].is_string())
      return fieldError(file, "passes", "objects with a \"name\"", pass.dump());
    if (pass["name"] != "InitializedMutableBufferPass")
      return fieldError(file, "passes", "InitializedMutableBufferPass (the studio runs no other pass objects)",
                        pass["name"].get<std::string>());
    for (const auto& [key, value] : pass.items())
      if (key != "name" && key != "patterns")
        return fieldError(file, "passes." + key, "name or patterns", "an unknown field");
    const json& patterns = pass.contains("patterns") ? pass["patterns"] : json::array();
    if (!patterns.is_array()) return fieldError(file, "passes.patterns", "a list of names", patterns.dump());
    for (const auto& x : patterns) {
      if (!x.is_string() || x.get<std::string>().empty())
        return fieldError(file, "passes.patterns", "non-empty names", x.dump());
      c.initializedMutableBuffers.push_back(x.get<std::string>());
    }
  }
  return Ok{};
}

/// One flag of PropagateDeviceConfig: true/false, or {method: true/false}. `method`
/// set: the flag as it applies to that method (ExecuTorch's dict by method name).
Status readPerMethodFlag(const json& v, const std::string& file, const std::string& path, const std::string& method,
                         PerMethodFlag& into) {
  auto set = [&](bool b) {
    if (method.empty()) into.all = b;
    else into.byMethod[method] = b;
  };
  if (v.is_boolean()) {
    set(v.get<bool>());
    return Ok{};
  }
  if (!v.is_object()) return fieldError(file, path, "true, false or {method: true/false}", v.dump());
  for (const auto& [m, b] : v.items()) {
    if (!b.is_boolean()) return fieldError(file, path + "." + m, "true or false", b.dump());
    if (method.empty()) into.byMethod[m] = b.get<bool>();
    else if (m == method) into.byMethod[method] = b.get<bool>();
  }
  if (!method.empty() && !into.byMethod.count(method)) into.byMethod[method] = false;
  return Ok{};
}

/// propagate_device_config: PropagateDeviceConfig's two flags, or a dict of them by method name.
Status readPropagateDevice(const json& p, const std::string& file, PropagateDeviceConfig& c) {
  const std::string path = "propagate_device_config";
  if (!p.is_object()) return fieldError(file, path, "an object", p.dump());
  auto isFlag = [](const std::string& k) { return k == "skip_h2d_for_method_inputs" || k == "skip_d2h_for_method_outputs"; };
  bool flags = true, perMethod = !p.empty();
  for (const auto& [key, value] : p.items()) {
    flags = flags && isFlag(key);
    perMethod = perMethod && !isFlag(key) && value.is_object();
  }
  auto readOne = [&](const json& o, const std::string& at, const std::string& method) -> Status {
    for (const auto& [key, value] : o.items())
      if (!isFlag(key))
        return fieldError(file, at + "." + key, "skip_h2d_for_method_inputs or skip_d2h_for_method_outputs", "an unknown field");
    if (o.contains("skip_h2d_for_method_inputs"))
      if (auto s = readPerMethodFlag(o["skip_h2d_for_method_inputs"], file, at + ".skip_h2d_for_method_inputs", method,
                                     c.skipH2dForMethodInputs); !s)
        return s;
    if (o.contains("skip_d2h_for_method_outputs"))
      if (auto s = readPerMethodFlag(o["skip_d2h_for_method_outputs"], file, at + ".skip_d2h_for_method_outputs", method,
                                     c.skipD2hForMethodOutputs); !s)
        return s;
    return Ok{};
  };
  if (flags) return readOne(p, path, "");
  if (!perMethod)
    return fieldError(file, path, "skip_h2d_for_method_inputs and skip_d2h_for_method_outputs, or a dict of them by method name",
                      p.dump());
  for (const auto& [method, options] : p.items())
    if (auto s = readOne(options, path + "." + method, method); !s) return s;
  return Ok{};
}

json flagToJson(const PerMethodFlag& f) {
  if (f.byMethod.empty()) return f.all;
  json j = json::object();
  for (const auto& [m, b] : f.byMethod) j[m] = b;
  return j;
}

/// edge_compile_config: EdgeCompileConfig's fields by their ExecuTorch names.
Status readEdgeCompileConfig(const json& e, const FieldReader& read, const std::string& file, EdgeCompileConfig& c) {
  if (!e.is_object()) return fieldError(file, "edge_compile_config", "an object", e.dump());
  for (const auto& [key, value] : e.items())
    if (key != "_check_ir_validity" && key != "_skip_dim_order" && key != "_core_aten_ops_exception_list" &&
        key != "preserve_ops")
      return fieldError(file, "edge_compile_config." + key, "a field of EdgeCompileConfig", "an unknown field");
  if (auto s = read.boolean(e, "_check_ir_validity", c.checkIrValidity, "edge_compile_config._check_ir_validity"); !s) return s;
  if (auto s = read.boolean(e, "_skip_dim_order", c.skipDimOrder, "edge_compile_config._skip_dim_order"); !s) return s;
  if (e.contains("_core_aten_ops_exception_list"))
    if (auto s = readOperators(e["_core_aten_ops_exception_list"], file, "edge_compile_config._core_aten_ops_exception_list",
                               c.coreAtenOpsExceptionList);
        !s)
      return s;
  if (e.contains("preserve_ops"))
    if (auto s = readOperators(e["preserve_ops"], file, "edge_compile_config.preserve_ops", c.preserveOps); !s) return s;
  return Ok{};
}

}  // namespace

bool EdgeCompileConfig::lists(const std::vector<std::string>& ops, const std::string& name, const std::string& overload) {
  for (const std::string& op : ops) {
    auto [n, o] = splitOperator(op);
    if (n == name && normalOverload(o) == normalOverload(overload)) return true;
  }
  return false;
}

namespace {

/// An operator list of EdgeCompileConfig: known operators; preserve_ops ATen and no views (as to_edge requires).
Status validateOperators(const std::vector<std::string>& ops, const char* field, bool preserve) {
  const OpRegistry& reg = OpRegistry::builtin();
  for (const std::string& op : ops) {
    auto [name, overload] = splitOperator(op);
    const OpSchema* s = name.find("::") != std::string::npos ? reg.find(name, overload) : nullptr;
    if (!s) return fieldError("config", field, "operators the studio knows, as \"aten::name\" or \"aten::name.overload\"", op);
    if (preserve && s->ns != "aten") return fieldError("config", field, "ATen operators only", op);
    // As to_edge: a view would change what memory planning sees. (An in-place
    // operator may be listed; functionalization removes it before it matters.)
    if (preserve && !s->returns.empty() && !s->returns[0].aliasSet.empty() && !s->returns[0].isWrite)
      return fieldError("config", field, "no view operator", op);
  }
  return Ok{};
}

}  // namespace

const MemoryPlanningConfig& ExecutorchBackendConfig::planningFor(const std::string& method) const {
  if (memoryPlanningPerMethod.empty()) return memoryPlanning;
  static const MemoryPlanningConfig kDefaults;  // MemoryPlanningPass() for a method the dict leaves out
  auto it = memoryPlanningPerMethod.find(method);
  return it == memoryPlanningPerMethod.end() ? kDefaults : it->second;
}

std::vector<MemoryPlanningConfig*> ExecutorchBackendConfig::allPlanning() {
  std::vector<MemoryPlanningConfig*> out{&memoryPlanning};
  for (auto& [method, mp] : memoryPlanningPerMethod) out.push_back(&mp);
  return out;
}

Status ExecutorchBackendConfig::validate() const {
  if (auto s = validateOperators(edgeCompile.coreAtenOpsExceptionList, "edge_compile_config._core_aten_ops_exception_list", false); !s)
    return s;
  if (auto s = validateOperators(edgeCompile.preserveOps, "edge_compile_config.preserve_ops", true); !s) return s;
  auto align = [&](const char* field, uint64_t v) -> Status {
    if (!powerOfTwo(v)) return fieldError("config", field, "a power of two", std::to_string(v));
    return Ok{};
  };
  auto planning = [&](const std::string& path, const MemoryPlanningConfig& mp) -> Status {
    if (auto s = align((path + ".alignment").c_str(), mp.alignment); !s) return s;
    for (const auto& a : mp.algorithms)
      if (a != "naive" && a != "et-greedy" && a != "best-fit")
        return fieldError("config", path + ".algorithms", "naive, et-greedy or best-fit", a);
    if (mp.algorithms.empty()) return fieldError("config", path + ".algorithms", "at least one algorithm", "none");
    if (mp.shareMutableBuffers && !mp.allocMutableBuffers)
      return fieldError("config", path + ".share_mutable_buffers", "false when alloc_mutable_buffers is false", "true");
    return Ok{};
  };
  if (auto s = planning("memory_planning_pass", memoryPlanning); !s) return s;
  for (const auto& [method, mp] : memoryPlanningPerMethod) {
    if (method.empty()) return fieldError("config", "memory_planning_pass", "method names", "\"\"");
    if (auto s = planning("memory_planning_pass." + method, mp); !s) return s;
  }
  if (auto s = align("segment_alignment", segmentAlignment); !s) return s;
  if (constantTensorAlignment)
    if (auto s = align("constant_tensor_alignment", *constantTensorAlignment); !s) return s;
  if (delegateAlignment)
    if (auto s = align("delegate_alignment", *delegateAlignment); !s) return s;
  for (const auto& p : initializedMutableBuffers)
    if (p.empty()) return fieldError("config", "passes.patterns", "non-empty names", "\"\"");
  for (size_t k = 0; k < partitioners.size(); ++k)
    for (const std::string& p : partitioners[k].configPrecisions)
      if (p != "FP32" && p != "STATIC_QUANT" && p != "DYNAMIC_QUANT")
        return fieldError("config", "partitioner[" + std::to_string(k) + "].config_precisions",
                          "FP32, STATIC_QUANT or DYNAMIC_QUANT", p);
  for (const char* mode : {"dynamic_memory_planning_mode", "sym_shape_eval_pass"}) {
    const std::string& v = std::string(mode) == "sym_shape_eval_pass" ? symShapeEval : dynamicMemoryPlanningMode;
    if (v != "upper_bound" && v != "hint") return fieldError("config", mode, "\"upper_bound\" or \"hint\"", v);
  }
  return Ok{};
}

namespace {

/// partitioner: a list, each entry a partitioner's name ("xnnpack" or "XnnpackPartitioner": its
/// defaults) or an object {"name": ..., and XnnpackPartitioner's constructor options}.
Status readPartitioners(const json& j, const FieldReader& read, const std::string& file, std::vector<PartitionerSpec>& into) {
  if (!j.is_array()) return fieldError(file, "partitioner", "a list of partitioners", j.dump());
  for (size_t k = 0; k < j.size(); ++k) {
    const json& e = j[k];
    const std::string path = "partitioner[" + std::to_string(k) + "]";
    PartitionerSpec spec;
    std::string name;
    if (e.is_string()) {
      name = e.get<std::string>();
    } else if (e.is_object()) {
      for (const auto& [key, value] : e.items())
        if (key != "name" && key != "config_precisions" && key != "per_op_mode" &&
            key != "force_non_static_weights_for_f32_linear" && key != "enable_bf16")
          return fieldError(file, path + "." + key, "an option of XnnpackPartitioner", "an unknown option");
      if (!e.contains("name")) return fieldError(file, path + ".name", "a partitioner's name", "none");
      if (Status s = read.text(e, "name", name, path + ".name"); !s) return s;
      if (e.contains("config_precisions")) {
        const json& p = e["config_precisions"];
        for (const json& x : p.is_array() ? p : json::array({p})) {
          if (!x.is_string()) return fieldError(file, path + ".config_precisions", "FP32, STATIC_QUANT or DYNAMIC_QUANT", x.dump());
          spec.configPrecisions.push_back(x.get<std::string>());
        }
      }
      for (auto [key, flag] : {std::pair{"per_op_mode", &spec.perOpMode},
                               std::pair{"force_non_static_weights_for_f32_linear", &spec.forceNonStaticWeightsForF32Linear},
                               std::pair{"enable_bf16", &spec.enableBf16}})
        if (Status s = read.boolean(e, key, *flag, path + "." + key); !s) return s;
    } else {
      return fieldError(file, path, "a partitioner's name or options", e.dump());
    }
    if (name != "xnnpack" && name != "XnnpackPartitioner")
      return fieldError(file, path + ".name", "XnnpackPartitioner (the partitioner the studio has)", name);
    into.push_back(spec);
  }
  return Ok{};
}

}  // namespace

Result<ExecutorchBackendConfig> configFromJson(const std::string& text, const std::string& file) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error{ErrorCode::Invalid, file, std::nullopt, "config", "a JSON object", "invalid JSON"};
  ExecutorchBackendConfig c;
  if (auto s = checkKnownFields(j, file); !s) return s.error();
  // Each reader checks the type and reports the field by its ExecuTorch name.
  FieldReader read(file);
  Status s = Ok{};
  if (j.contains("edge_compile_config"))
    if (!(s = readEdgeCompileConfig(j["edge_compile_config"], read, file, c.edgeCompile))) return s.error();
  if (j.contains("memory_planning_pass"))
    if (!(s = readMemoryPlanning(j["memory_planning_pass"], read, file, c))) return s.error();
  if (j.contains("to_out_var_pass")) {
    const json& t = j["to_out_var_pass"];
    if (!t.is_object()) return fieldError(file, "to_out_var_pass", "an object", t.dump());
    if (!(s = read.boolean(t, "ignore_to_out_var_failure", c.ignoreToOutVarFailure, "to_out_var_pass.ignore_to_out_var_failure")))
      return s.error();
  }
  if (!(s = read.text(j, "dynamic_memory_planning_mode", c.dynamicMemoryPlanningMode, "dynamic_memory_planning_mode"))) return s.error();
  if (!(s = read.text(j, "sym_shape_eval_pass", c.symShapeEval, "sym_shape_eval_pass"))) return s.error();
  for (auto [key, into] : {std::pair{"emit_stacktrace", &c.emitStacktrace}, std::pair{"extract_delegate_segments", &c.extractDelegateSegments},
                           std::pair{"remove_view_copy", &c.removeViewCopy},
                           std::pair{"external_mutable_weights", &c.externalMutableWeights},
                           std::pair{"emit_mutable_buffer_names", &c.emitMutableBufferNames},
                           std::pair{"do_quant_fusion_and_const_prop", &c.doQuantFusionAndConstProp},
                           std::pair{"run_reinplace_pass", &c.runReinplacePass},
                           std::pair{"studio_memory_aware_order", &c.studioMemoryAwareOrder},
                           std::pair{"enable_non_cpu_memory_planning", &c.enableNonCpuMemoryPlanning}})
    if (!(s = read.boolean(j, key, *into, key))) return s.error();
  if (!(s = read.unsignedInt(j, "segment_alignment", c.segmentAlignment, "segment_alignment"))) return s.error();
  for (auto [key, into] : {std::pair{"constant_tensor_alignment", &c.constantTensorAlignment},
                           std::pair{"delegate_alignment", &c.delegateAlignment}}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    uint64_t v = 0;
    if (!(s = read.unsignedInt(j, key, v, key))) return s.error();
    *into = v;
  }
  if (j.contains("external_constants"))
    if (!(s = readExternalConstants(j["external_constants"], read, file, c))) return s.error();
  if (j.contains("reinplace_extra_ops"))
    if (!(s = readOperators(j["reinplace_extra_ops"], file, "reinplace_extra_ops", c.reinplaceExtraOps))) return s.error();
  if (j.contains("passes"))
    if (!(s = readPasses(j["passes"], file, c))) return s.error();
  if (j.contains("propagate_device_config"))
    if (!(s = readPropagateDevice(j["propagate_device_config"], file, c.propagateDevice))) return s.error();
  if (j.contains("partitioner"))
    if (!(s = readPartitioners(j["partitioner"], read, file, c.partitioners))) return s.error();
  if (auto v = c.validate(); !v) {
    Error e = v.error();
    e.file = file;
    return e;
  }
  return c;
}

namespace {
json partitionersToJson(const std::vector<PartitionerSpec>& ps) {
  json out = json::array();
  for (const PartitionerSpec& p : ps)
    out.push_back({{"name", p.name},
                   {"config_precisions", p.configPrecisions},
                   {"per_op_mode", p.perOpMode},
                   {"force_non_static_weights_for_f32_linear", p.forceNonStaticWeightsForF32Linear},
                   {"enable_bf16", p.enableBf16}});
  return out;
}
}  // namespace

std::string configToJson(const ExecutorchBackendConfig& c) {
  json rules = json::array();
  for (const auto& r : c.externalConstantRules)
    rules.push_back({{"name", r.namePattern}, {"module", r.modulePrefix}, {"op", r.op}, {"min_bytes", r.minBytes},
                     {"file", r.file.empty() ? json(nullptr) : json(r.file)}});
  json j = {{"edge_compile_config",
             {{"_check_ir_validity", c.edgeCompile.checkIrValidity},
              {"_skip_dim_order", c.edgeCompile.skipDimOrder},
              {"_core_aten_ops_exception_list", c.edgeCompile.coreAtenOpsExceptionList},
              {"preserve_ops", c.edgeCompile.preserveOps}}},
            {"memory_planning_pass", planningToJson(c.memoryPlanning)},
            {"to_out_var_pass", {{"ignore_to_out_var_failure", c.ignoreToOutVarFailure}}},
            {"dynamic_memory_planning_mode", c.dynamicMemoryPlanningMode},
            {"emit_stacktrace", c.emitStacktrace},
            {"extract_delegate_segments", c.extractDelegateSegments},
            {"segment_alignment", c.segmentAlignment},
            {"constant_tensor_alignment", c.constantTensorAlignment ? json(*c.constantTensorAlignment) : json(nullptr)},
            {"delegate_alignment", c.delegateAlignment ? json(*c.delegateAlignment) : json(nullptr)},
            {"sym_shape_eval_pass", c.symShapeEval},
            {"remove_view_copy", c.removeViewCopy},
            // Rules act only while external_constants is on (a list turns it on when read back).
            {"external_constants", c.externalConstants && !c.externalConstantRules.empty() ? rules : json(c.externalConstants)},
            {"external_mutable_weights", c.externalMutableWeights},
            {"emit_mutable_buffer_names", c.emitMutableBufferNames},
            {"do_quant_fusion_and_const_prop", c.doQuantFusionAndConstProp},
            {"run_reinplace_pass", c.runReinplacePass},
            {"reinplace_extra_ops", c.reinplaceExtraOps},
            {"passes", c.initializedMutableBuffers.empty()
                           ? json::array()
                           : json::array({{{"name", "InitializedMutableBufferPass"}, {"patterns", c.initializedMutableBuffers}}})},
            {"enable_non_cpu_memory_planning", c.enableNonCpuMemoryPlanning},
            {"propagate_device_config",
             {{"skip_h2d_for_method_inputs", flagToJson(c.propagateDevice.skipH2dForMethodInputs)},
              {"skip_d2h_for_method_outputs", flagToJson(c.propagateDevice.skipD2hForMethodOutputs)}}},
            {"studio_memory_aware_order", c.studioMemoryAwareOrder},
            {"partitioner", partitionersToJson(c.partitioners)}};
  if (!c.memoryPlanningPerMethod.empty()) {
    json perMethod = json::object();
    for (const auto& [method, mp] : c.memoryPlanningPerMethod) perMethod[method] = planningToJson(mp);
    j["memory_planning_pass"] = perMethod;
  }
  return j.dump(2) + "\n";
}

Result<ExecutorchBackendConfig> applySetting(const ExecutorchBackendConfig& c, const std::string& keyEqualsValue) {
  const size_t eq = keyEqualsValue.find('=');
  if (eq == std::string::npos || eq == 0)
    return fieldError("--set", keyEqualsValue, "KEY=VALUE", "no '='");
  const std::string key = keyEqualsValue.substr(0, eq), text = keyEqualsValue.substr(eq + 1);
  json j = json::parse(configToJson(c));
  json* at = &j;
  size_t from = 0;
  for (;;) {
    const size_t dot = key.find('.', from);
    const std::string part = key.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!at->is_object() || !at->contains(part))
      return fieldError("--set", key, "a field of ExecutorchBackendConfig", "an unknown field");
    at = &(*at)[part];
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;  // a bare word: a string
  if (at->is_array() && value.is_string()) {  // "et-greedy,best-fit" for a list of names
    json list = json::array();
    for (size_t p = 0, q; p <= text.size(); p = q + 1) {
      q = text.find(',', p);
      if (q == std::string::npos) q = text.size();
      if (q > p) list.push_back(text.substr(p, q - p));
    }
    value = list;
  }
  *at = value;
  return configFromJson(j.dump(), "--set " + key);
}

Result<ExecutorchBackendConfig> loadConfigFile(const std::string& path) {
  if (path.empty()) return ExecutorchBackendConfig{};
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return configFromJson(std::string(reinterpret_cast<const char*>(f.value()->data()), f.value()->size()), path);
}

}  // namespace lstudio
