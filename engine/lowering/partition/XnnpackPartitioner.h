// ExecuTorch's XnnpackPartitioner (backends/xnnpack/partition/), written here:
// each operator XNNPACK has a config for is checked as upstream checks it
// (dtypes, ranks, static weights, quantization patterns, the op's own
// limits), the nodes a match takes with it (weights, bias, q/dq, a fused
// relu) are grouped, and the groups are merged into partitions as ExecuTorch's
// GroupBasedPartitioner merges them (any two whose union makes no cycle).
// Every node left out keeps the reason, in words.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

/// One partition: upstream's tag ("tag0"; ids are not renumbered after merging),
/// its operator nodes in graph order and the constants (weights) it takes.
struct XnnpackPartition {
  int id = 0;
  std::string tag;
  std::vector<int> nodes;          ///< indices into Method::nodes
  std::vector<ValueId> constants;  ///< parameter / buffer / constant inputs it owns
};

struct XnnpackPartitioning {
  std::vector<XnnpackPartition> partitions;  ///< by ascending id
  /// Per node of the method: the partition index it went to (-1: none) and, when none,
  /// why ("int64 is not supported by XNNPACK's add.Tensor", "the weight is not a constant").
  std::vector<int> partitionOf;
  std::vector<std::string> reasonOf;
  /// Per node: the XNNPACK config that took it ("LinearConfig"), empty when none did.
  std::vector<std::string> configOf;
  /// Per node: a quantize/dequantize a config took as part of a quantized pattern (the
  /// operator's input, weight or output quantization), which XNNPACK folds into the
  /// operator's tensors (upstream's tag_as_implicit_q_dq).
  std::vector<bool> implicitQdq;
};

/// Partitions one graph (an edge-dialect method) as XnnpackPartitioner(spec) does.
XnnpackPartitioning partitionForXnnpack(const Method& m, const PartitionerSpec& spec);

/// The operators XnnpackPartitioner's ops_to_not_decompose may name ("aten::linear.default"):
/// to_edge_transform_and_lower's first decomposition keeps every one of them whole.
std::vector<std::string> xnnpackOpsToNotDecompose();
/// ops_to_not_decompose, per node of an ATen-dialect method: whether
/// to_edge_transform_and_lower keeps it whole for XNNPACK (linear, hardswish, max_pool2d,
/// prelu, upsample_bilinear2d.vec, when the config's checks pass on it), so that the
/// partitioner sees it as one operator.
std::vector<bool> xnnpackKeepsWhole(const Method& m, const PartitionerSpec& spec);
/// Whether `op` is one of those operators (the ATen dialect check lets them through,
/// as to_edge_transform_and_lower adds them to _core_aten_ops_exception_list).
bool xnnpackMayKeepWhole(const OperatorRef& op);

/// The partitioners a program records it was lowered with: XnnpackPartitioner with its
/// defaults for an ETRecord whose delegate_map names XnnpackBackend (its edge program is
/// from before partitioning); none otherwise.
std::vector<PartitionerSpec> recordedPartitioners(const Program& p);

}  // namespace lstudio
