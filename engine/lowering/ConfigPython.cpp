#include "engine/lowering/ConfigPython.h"

#include <algorithm>
#include <cstdio>

#include "engine/lowering/ConstantTagging.h"

namespace lstudio {
namespace {

/// A Python string literal for any bytes (double quotes, escapes for the rest).
std::string pyStr(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

const char* pyBool(bool b) { return b ? "True" : "False"; }

/// "aten::add_.Tensor" -> torch.ops.aten.add_.Tensor; no overload -> .default.
std::string pyOp(const std::string& name) {
  std::string ns = "aten", rest = name;
  if (size_t colons = name.find("::"); colons != std::string::npos) {
    ns = name.substr(0, colons);
    rest = name.substr(colons + 2);
  }
  if (rest.find('.') == std::string::npos) rest += ".default";
  return "torch.ops." + ns + "." + rest;
}

bool usesRules(const ExecutorchBackendConfig& c) { return c.externalConstants && !c.externalConstantRules.empty(); }

/// The imports the script needs.
std::string pythonImports(const ExecutorchBackendConfig& c, bool rules, bool hintShapes) {
  std::string out;
  if (rules) out += "import fnmatch\n\n";
  if (!c.reinplaceExtraOps.empty() || !c.edgeCompile.preserveOps.empty() || !c.edgeCompile.coreAtenOpsExceptionList.empty())
    out += "import torch\n";
  out += "from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig\n";
  out += "from executorch.exir.dynamic_shape import DynamicMemoryPlanningMode\n";
  out += "from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy\n";
  out += "from executorch.exir.passes import MemoryPlanningPass, ToOutVarPass\n";
  if (!c.initializedMutableBuffers.empty())
    out += "from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass\n";
  if (!(c.propagateDevice == PropagateDeviceConfig{}))
    out += "from executorch.exir.passes.propagate_device_config import PropagateDeviceConfig\n";
  out += std::string("from executorch.exir.passes.sym_shape_eval_pass import ") +
         (hintShapes ? "HintBasedSymShapeEvalPass" : "ConstraintBasedSymShapeEvalPass") + "\n";
  return out;
}

/// The external_constants rules as a table and the tag function ExecuTorch calls with
/// each constant placeholder.
std::string constantTagFunction(const ExecutorchBackendConfig& c) {
  std::string out;
  out += "\n# The studio's external_constants rules; the first that matches decides.\n";
  out += "# (name glob, module prefix, first op reading it, min bytes, .ptd tag or None = keep in the .pte)\n";
  out += "CONSTANT_RULES = [\n";
  for (const ConstantTagRule& r : c.externalConstantRules)
    out += "    (" + pyStr(r.namePattern) + ", " + pyStr(r.modulePrefix) + ", " + pyStr(r.op) + ", " +
           std::to_string(r.minBytes) + ", " + (r.file.empty() ? std::string("None") : pyStr(tagFromFileName(r.file))) +
           "),\n";
  out += "]\n\n\n";
  out += "def constant_tag_fn(edge):\n";
  out += "    \"\"\"external_constants callable for `edge`, the EdgeProgramManager to_executorch lowers.\"\"\"\n";
  out += "    # ExecuTorch calls it with each constant placeholder of every method; its fully\n";
  out += "    # qualified name is in the method's graph signature, not on the node.\n";
  out += "    fqns = {}\n";
  out += "    for method in edge.methods:\n";
  out += "        sig = edge.exported_program(method).graph_signature\n";
  out += "        fqns.update({**sig.inputs_to_parameters, **sig.inputs_to_buffers, **sig.inputs_to_lifted_tensor_constants})\n\n";
  out += "    def tag(node):\n";
  out += "        name = fqns.get(node.name, node.name)\n";
  out += "        module = name.rpartition(\".\")[0]\n";
  out += "        readers = [u for u in node.users if u.op == \"call_function\" and hasattr(u.target, \"name\")]\n";
  out += "        op = readers[0].target.name() if readers else \"\"\n";
  out += "        nbytes = node.meta[\"spec\"].nbytes()\n";
  out += "        for pattern, prefix, rule_op, min_bytes, file in CONSTANT_RULES:\n";
  out += "            prefix = prefix.rstrip(\".\")\n";
  out += "            if pattern and not fnmatch.fnmatchcase(name, pattern):\n";
  out += "                continue\n";
  out += "            if prefix and not (module == prefix or module.startswith(prefix + \".\")):\n";
  out += "                continue\n";
  out += "            if rule_op and not (op == rule_op or op.startswith(rule_op + \".\") or op == \"aten::\" + rule_op):\n";
  out += "                continue\n";
  out += "            if nbytes >= min_bytes:\n";
  out += "                return file\n";
  out += "        return None\n\n";
  out += "    return tag\n\n";
  return out;
}

/// memory_planning_pass=MemoryPlanningPass(...), with a note on planners ExecuTorch lacks.
/// MemoryPlanningPass(...) after `lead` ("    memory_planning_pass=" or "        \"forward\": "),
/// its options indented by `indent` more.
std::string planningPass(const MemoryPlanningConfig& mp, const std::string& lead, const std::string& indent) {
  std::string out;
  out += lead + "MemoryPlanningPass(\n";
  // ExecuTorch's suite has its greedy only; the studio's other planners have no Python spelling.
  std::vector<std::string> studioOnly;
  for (const std::string& a : mp.algorithms)
    if (a != "et-greedy") studioOnly.push_back(a);
  if (!studioOnly.empty()) {
    std::string list;
    for (const std::string& a : studioOnly) list += (list.empty() ? "" : ", ") + a;
    bool greedyToo = std::find(mp.algorithms.begin(), mp.algorithms.end(), "et-greedy") != mp.algorithms.end();
    out += indent + "# The studio " + (greedyToo ? "also ran " : "ran ") + list +
           " (no ExecuTorch equivalent)" + (greedyToo ? " and kept the smallest plan.\n" : "; greedy is the closest.\n");
  }
  out += indent + "memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[greedy]),\n";
  out += indent + "alloc_graph_input=" + pyBool(mp.allocGraphInput) + ",\n";
  out += indent + "alloc_graph_output=" + pyBool(mp.allocGraphOutput) + ",\n";
  out += indent + "alloc_mutable_buffers=" + pyBool(mp.allocMutableBuffers) + ",\n";
  out += indent + "share_mutable_buffers=" + pyBool(mp.shareMutableBuffers) + ",\n";
  out += indent + "alignment=" + std::to_string(mp.alignment) + ",\n";
  out += indent.substr(4) + "),\n";
  return out;
}

/// [torch.ops.aten.linear.default, ...]
std::string pyOpList(const std::vector<std::string>& ops) {
  std::string out = "[";
  for (size_t i = 0; i < ops.size(); ++i) out += (i ? ", " : "") + pyOp(ops[i]);
  return out + "]";
}

/// edge_compile_config = EdgeCompileConfig(...), what to_edge takes.
std::string edgeCompileConfig(const EdgeCompileConfig& e) {
  std::string out = "# programs: the torch.export programs; edge = to_edge(programs, compile_config=edge_compile_config)\n";
  out += "edge_compile_config = EdgeCompileConfig(\n";
  out += std::string("    _check_ir_validity=") + pyBool(e.checkIrValidity) + ",\n";
  out += std::string("    _skip_dim_order=") + pyBool(e.skipDimOrder) + ",\n";
  out += "    _core_aten_ops_exception_list=" + pyOpList(e.coreAtenOpsExceptionList) + ",\n";
  out += "    preserve_ops=" + pyOpList(e.preserveOps) + ",\n";
  out += ")\n\n";
  return out;
}

}  // namespace

std::string partitionerToPython(const PartitionerSpec& p) {
  std::string args;
  auto add = [&](const std::string& a) { args += (args.empty() ? "" : ", ") + a; };
  if (!p.configPrecisions.empty()) {
    std::string list;
    for (const std::string& x : p.configPrecisions) list += (list.empty() ? "" : ", ") + ("ConfigPrecisionType." + x);
    add("config_precisions=[" + list + "]");
  }
  if (p.perOpMode) add("per_op_mode=True");
  if (p.forceNonStaticWeightsForF32Linear) add("force_non_static_weights_for_f32_linear=True");
  if (p.enableBf16) add("enable_bf16=True");
  return "XnnpackPartitioner(" + args + ")";
}

namespace {

/// partitioner = [XnnpackPartitioner(...)], and the to_edge_transform_and_lower call that takes it.
std::string partitionerList(const std::vector<PartitionerSpec>& ps) {
  std::string out = "from executorch.backends.xnnpack.partition.config.xnnpack_config import ConfigPrecisionType\n";
  out += "from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner\n";
  out += "from executorch.exir import to_edge_transform_and_lower\n\n";
  out += "partitioner = [\n";
  for (const PartitionerSpec& p : ps) out += "    " + partitionerToPython(p) + ",\n";
  out += "]\n";
  out += "# edge = to_edge_transform_and_lower(programs, partitioner=partitioner, compile_config=edge_compile_config)\n\n";
  return out;
}

}  // namespace

std::string configToPython(const ExecutorchBackendConfig& c) {
  const bool rules = usesRules(c);
  const bool hintShapes = c.symShapeEval == "hint";

  std::string out = pythonImports(c, rules, hintShapes);
  if (rules) out += constantTagFunction(c);

  out += "\n";
  out += edgeCompileConfig(c.edgeCompile);
  if (!c.partitioners.empty()) out += partitionerList(c.partitioners);
  out += "# then edge.to_executorch(config)\n";
  out += "config = ExecutorchBackendConfig(\n";
  if (c.memoryPlanningPerMethod.empty()) {
    out += planningPass(c.memoryPlanning, "    memory_planning_pass=", "        ");
  } else {  // one pass per method; a method left out gets MemoryPlanningPass() as ExecuTorch's defaults
    out += "    memory_planning_pass={\n";
    for (const auto& [method, mp] : c.memoryPlanningPerMethod)
      out += planningPass(mp, "        " + pyStr(method) + ": ", "            ");
    out += "    },\n";
  }
  out += std::string("    to_out_var_pass=ToOutVarPass(ignore_to_out_var_failure=") + pyBool(c.ignoreToOutVarFailure) + "),\n";
  out += "    dynamic_memory_planning_mode=DynamicMemoryPlanningMode.";
  // ExecuTorch's enum names the non-upper-bound mode SYMBOLIC; the studio calls it "hint".
  out += c.dynamicMemoryPlanningMode == "upper_bound" ? "UPPER_BOUND,\n" : "SYMBOLIC,\n";
  out += std::string("    emit_stacktrace=") + pyBool(c.emitStacktrace) + ",\n";
  out += std::string("    extract_delegate_segments=") + pyBool(c.extractDelegateSegments) + ",\n";
  out += "    segment_alignment=" + std::to_string(c.segmentAlignment) + ",\n";
  out += "    constant_tensor_alignment=" +
         (c.constantTensorAlignment ? std::to_string(*c.constantTensorAlignment) : std::string("None")) + ",\n";
  out += "    delegate_alignment=" + (c.delegateAlignment ? std::to_string(*c.delegateAlignment) : std::string("None")) + ",\n";
  out += std::string("    sym_shape_eval_pass=") +
         (hintShapes ? "HintBasedSymShapeEvalPass(),\n" : "ConstraintBasedSymShapeEvalPass(),\n");
  out += std::string("    remove_view_copy=") + pyBool(c.removeViewCopy) + ",\n";
  out += std::string("    external_constants=") +
         (rules ? "constant_tag_fn(edge),\n" : std::string(pyBool(c.externalConstants)) + ",\n");
  out += std::string("    external_mutable_weights=") + pyBool(c.externalMutableWeights) + ",\n";
  out += std::string("    emit_mutable_buffer_names=") + pyBool(c.emitMutableBufferNames) + ",\n";
  out += std::string("    do_quant_fusion_and_const_prop=") + pyBool(c.doQuantFusionAndConstProp) + ",\n";
  out += std::string("    run_reinplace_pass=") + pyBool(c.runReinplacePass) + ",\n";
  if (c.reinplaceExtraOps.empty()) {
    out += "    reinplace_extra_ops=None,\n";
  } else {
    std::string list = pyOpList(c.reinplaceExtraOps);
    out += "    reinplace_extra_ops=frozenset({" + list.substr(1, list.size() - 2) + "}),\n";
  }
  if (!c.initializedMutableBuffers.empty()) {
    std::string list;
    for (const auto& p : c.initializedMutableBuffers) list += (list.empty() ? "" : ", ") + pyStr(p);
    out += "    passes=[InitializedMutableBufferPass([" + list + "])],\n";
  }
  if (!c.enableNonCpuMemoryPlanning) out += "    enable_non_cpu_memory_planning=False,\n";
  if (!(c.propagateDevice == PropagateDeviceConfig{})) {
    auto flag = [](const PerMethodFlag& f) {
      if (f.byMethod.empty()) return std::string(pyBool(f.all));
      std::string d;
      for (const auto& [m, b] : f.byMethod) d += (d.empty() ? "" : ", ") + pyStr(m) + ": " + pyBool(b);
      return "{" + d + "}";
    };
    out += "    propagate_device_config=PropagateDeviceConfig(\n        skip_h2d_for_method_inputs=" +
           flag(c.propagateDevice.skipH2dForMethodInputs) + ",\n        skip_d2h_for_method_outputs=" +
           flag(c.propagateDevice.skipD2hForMethodOutputs) + ",\n    ),\n";
  }
  out += ")\n";
  if (c.studioMemoryAwareOrder)
    out += "# studio_memory_aware_order=True: beyond ExecuTorch, which has no such field. The studio\n"
           "# reorders operators before memory planning to lower the peak of live bytes and writes\n"
           "# elementwise results over arguments that die there; ExecuTorch plans in the given order.\n";
  return out;
}

}  // namespace lstudio
