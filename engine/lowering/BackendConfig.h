// ExecutorchBackendConfig as the studio holds it: ExecuTorch's field names
// and defaults (exir/capture/_config.py), with the memory planning pass's own
// options spelled out, and constant tagging rules in place of ExecuTorch's
// callable. Loaded and saved as JSON with those names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/support/Error.h"

namespace lstudio {

/// One rule of external_constants: the first rule that matches a constant
/// decides where it goes (a .ptd file name, or empty = keep in the .pte).
struct ConstantTagRule {
  std::string namePattern;    ///< glob on the fully qualified name ("*.weight"); empty = any
  std::string modulePrefix;   ///< module path prefix ("layers.0."); empty = any
  std::string op;             ///< operator of the first node reading it ("aten::embedding"); empty = any
  uint64_t minBytes = 0;      ///< only constants at least this large
  std::string file;           ///< destination .ptd ("model.ptd"); empty = keep inside the .pte
  bool operator==(const ConstantTagRule&) const = default;
};

struct MemoryPlanningConfig {
  std::vector<std::string> algorithms = {"et-greedy", "best-fit"};  ///< run all, keep the smallest (the suite)
  bool allocGraphInput = true;
  bool allocGraphOutput = true;
  bool allocMutableBuffers = true;
  bool shareMutableBuffers = false;
  uint64_t alignment = 16;
};

/// A flag of PropagateDeviceConfig: one value for every method, and values by
/// method name (ExecuTorch's Union[bool, Dict[str, bool]]; a method the dict
/// does not name takes False).
struct PerMethodFlag {
  bool all = false;
  std::map<std::string, bool> byMethod;  ///< non-empty: the dict form (`all` unused)
  bool operator==(const PerMethodFlag&) const = default;
  bool isDefault() const { return !all && byMethod.empty(); }
};

/// propagate_device_config (PropagateDeviceConfig): whether the runtime skips
/// copying a method's inputs to the device of the delegate that reads them
/// (skip_h2d_for_method_inputs) and its outputs back from it
/// (skip_d2h_for_method_outputs); PropagateDevicePass. Both need
/// enable_non_cpu_memory_planning, as in ExecuTorch.
struct PropagateDeviceConfig {
  PerMethodFlag skipH2dForMethodInputs;
  PerMethodFlag skipD2hForMethodOutputs;
  bool operator==(const PropagateDeviceConfig&) const = default;
};

/// EdgeCompileConfig: how to_edge runs (exir/capture/_config.py), by
/// ExecuTorch's names. Operators are spelled "aten::linear" (the default
/// overload) or "aten::add.Tensor".
struct EdgeCompileConfig {
  bool checkIrValidity = true;  ///< _check_ir_validity: the ATen dialect check after the decompositions
  bool skipDimOrder = false;    ///< _skip_dim_order: keep memory_format ops (no MemoryFormatOpsPass, no LegalizePortableDimOrderPass)
  /// _core_aten_ops_exception_list: non-core ATen operators the ATen dialect check lets through.
  std::vector<std::string> coreAtenOpsExceptionList;
  /// preserve_ops: ATen operators kept whole (out of the decomposition table; the check lets them through).
  std::vector<std::string> preserveOps;

  /// Whether `ops` (one of the lists above) names the operator `name` with overload `overload`.
  static bool lists(const std::vector<std::string>& ops, const std::string& name, const std::string& overload);
};

/// A partitioner of to_edge_transform_and_lower (`partitioner=[...]`). Only ExecuTorch's
/// XnnpackPartitioner for now, with its constructor's options by upstream's names.
struct PartitionerSpec {
  std::string name = "XnnpackPartitioner";
  /// config_precisions: "FP32", "STATIC_QUANT", "DYNAMIC_QUANT"; empty: every precision a config supports.
  std::vector<std::string> configPrecisions;
  bool perOpMode = false;                          ///< per_op_mode: one partition per matched op
  bool forceNonStaticWeightsForF32Linear = false;  ///< force_non_static_weights_for_f32_linear
  bool enableBf16 = false;                         ///< enable_bf16
  bool operator==(const PartitionerSpec&) const = default;
};

/// The studio's config: ExecutorchBackendConfig's fields (to_executorch), and
/// to_edge's EdgeCompileConfig, written as "edge_compile_config" in the JSON.
struct ExecutorchBackendConfig {
  EdgeCompileConfig edgeCompile;
  MemoryPlanningConfig memoryPlanning;
  /// memory_planning_pass given as a dict, one pass per method name. A method
  /// the dict does not name gets MemoryPlanningPass() with its defaults, as
  /// to_executorch does. Empty: `memoryPlanning` plans every method.
  std::map<std::string, MemoryPlanningConfig> memoryPlanningPerMethod;
  bool ignoreToOutVarFailure = false;       ///< to_out_var_pass(ignore_to_out_var_failure)
  std::string dynamicMemoryPlanningMode = "upper_bound";  ///< "upper_bound" | "hint"
  bool emitStacktrace = false;
  bool extractDelegateSegments = true;
  uint64_t segmentAlignment = 128;
  std::optional<uint64_t> constantTensorAlignment;  ///< None: ExecuTorch's default
  std::optional<uint64_t> delegateAlignment;
  std::string symShapeEval = "upper_bound";  ///< sym_shape_eval_pass: "upper_bound" | "hint"
  bool removeViewCopy = true;
  /// external_constants: false, true (every constant to "_default_external_constant.ptd"), or rules.
  bool externalConstants = false;
  std::vector<ConstantTagRule> externalConstantRules;
  bool externalMutableWeights = false;
  bool emitMutableBufferNames = false;
  bool doQuantFusionAndConstProp = false;
  bool runReinplacePass = false;
  std::vector<std::string> reinplaceExtraOps;
  /// passes: the passes to_executorch runs first. The studio runs ExecuTorch's
  /// InitializedMutableBufferPass(patterns): a mutable buffer whose name contains one of
  /// these keeps its initial value in the program. Empty: passes=[].
  std::vector<std::string> initializedMutableBuffers;
  /// enable_non_cpu_memory_planning: tensors a delegate places on another device
  /// (its target_device compile spec) get host/device copies around the call and
  /// are planned in arenas of their own, one per device (non_const_buffer_device);
  /// off, they are only marked as on the device and planned in CPU memory.
  bool enableNonCpuMemoryPlanning = true;
  /// propagate_device_config; ExecuTorch's dict by method name is read into
  /// the flags' per-method values.
  PropagateDeviceConfig propagateDevice;
  /// studio_memory_aware_order, beyond ExecuTorch (which has no such field):
  /// operators reordered to lower the peak of live bytes before memory
  /// planning, and elementwise results written over an argument that dies at
  /// them. Off by default; Copy as Python writes it as a comment.
  bool studioMemoryAwareOrder = false;
  /// partitioner: to_edge_transform_and_lower's partitioners, in order (empty: to_edge alone).
  /// Saved as "partitioner" in the JSON; a name alone ("xnnpack") takes the defaults.
  std::vector<PartitionerSpec> partitioners;

  /// The memory planning pass that plans `method`.
  const MemoryPlanningConfig& planningFor(const std::string& method) const;
  /// Every memory planning pass of the config: the one, or each method's.
  std::vector<MemoryPlanningConfig*> allPlanning();

  /// Every field with ExecuTorch's name; power-of-two alignments, known modes,
  /// operator lists of known operators (preserve_ops: ATen, not views).
  Status validate() const;
};

/// Reads a config from JSON text. Unknown keys and wrong types are errors
/// naming the field (`file` names the source in messages).
Result<ExecutorchBackendConfig> configFromJson(const std::string& text, const std::string& file = "config");
std::string configToJson(const ExecutorchBackendConfig& c);
/// `c` with one field changed by "KEY=VALUE": KEY a path in the config's JSON
/// ("segment_alignment", "memory_planning_pass.algorithms"), VALUE JSON or else a
/// plain string; a list field takes a comma-separated list of names.
Result<ExecutorchBackendConfig> applySetting(const ExecutorchBackendConfig& c, const std::string& keyEqualsValue);
/// Reads a config file; an empty path gives the defaults.
Result<ExecutorchBackendConfig> loadConfigFile(const std::string& path);

}  // namespace lstudio
