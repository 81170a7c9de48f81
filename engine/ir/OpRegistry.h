// The operator registry: the schemas the studio knows (ATen, quantized_decomposed,
// dim_order_ops, executorch_prim, ...), lookups by any spelling of a graph target,
// set membership (core ATen, portable kernels) and the functional -> out mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/OpSchema.h"

namespace lstudio {

class OpRegistry {
 public:
  /// The registry built into the studio (parsed once, thread-safe to use).
  static const OpRegistry& builtin();

  /// Looks up "aten::add" + "Tensor" (overload "" or "default" = the default overload).
  /// A name without "::" is taken to be in aten.
  const OpSchema* find(std::string_view qualifiedName, std::string_view overload) const;
  /// Accepts "aten::add.Tensor", "aten.add.Tensor", "torch.ops.aten.add.Tensor", "add.Tensor" (aten assumed)
  /// and the edge-dialect form "executorch_exir_dialects_edge__ops_aten_add_Tensor" (also "_backend__ops_"
  /// and "exir_ops.edge." spellings). ".default" / "_default" name the default overload.
  const OpSchema* findByTarget(std::string_view target) const;
  /// True when the op is in the core ATen operator set that to_edge accepts: tagged
  /// `core` in native_functions.yaml, or tagged `view_copy` (ExecuTorch's verifier
  /// admits both).
  bool isCoreAten(const OpSchema& op) const;
  /// True when ExecuTorch's portable kernel library has a kernel for this (.out) schema.
  bool hasPortableKernel(const OpSchema& op) const;
  /// True when ExecuTorch's quantized kernel library (kernels/quantized) has a kernel for it.
  bool hasQuantizedKernel(const OpSchema& op) const;
  /// True when ExecuTorch registers it as a prim op (executorch_prim::*, aten::sym_size.int, ...).
  bool hasPrimKernel(const OpSchema& op) const;
  /// The out variant to_out_var would pick for a functional (or mutable) op: same name,
  /// an out variant whose arguments without the outs, alias annotations and
  /// TensorOptions (dtype, layout, device, pin_memory) equal the op's, preferring the
  /// overload "out" / "<overload>_out"; or null. An out variant maps to itself.
  const OpSchema* outVariant(const OpSchema& functional) const;
  /// The inverse, for de-lowering a .pte: the functional overload whose out variant is
  /// `out` (preferring "X" for "X_out" and the default overload for "out"); or null.
  const OpSchema* functionalOf(const OpSchema& out) const;
  size_t size() const { return schemas_.size(); }

  /// Every schema, in table order.
  const std::vector<OpSchema>& schemas() const { return schemas_; }
  /// Table entries that failed to parse or repeat a name (empty for a correct table).
  const std::vector<std::string>& loadErrors() const { return loadErrors_; }

 private:
  OpRegistry() = default;
  const OpSchema* findKey(std::string_view ns, std::string_view name, std::string_view overload) const;
  uint8_t setsOf(const OpSchema& op) const;

  std::vector<OpSchema> schemas_;
  std::vector<uint8_t> sets_;                                   ///< per schema, detail::OpSet bits
  std::map<std::string, size_t, std::less<>> byQualified_;       ///< "ns::name.overload" / "ns::name"
  std::map<std::string, std::vector<size_t>, std::less<>> byName_;  ///< "ns::name" -> every overload
  std::vector<std::string> namespaces_;                         ///< longest first
  std::vector<std::string> loadErrors_;
};

namespace detail {

/// Set membership bits of a built-in schema.
enum OpSet : uint8_t {
  kNoSet = 0,
  kCore = 1,       ///< core ATen (or view_copy) functional op
  kPortable = 2,   ///< kernel in ExecuTorch's portable library
  kQuantized = 4,  ///< kernel in ExecuTorch's quantized library
  kPrim = 8,       ///< ExecuTorch prim op
};

struct BuiltinSchema {
  uint8_t sets;
  const char* text;
};

/// The built-in table (OpSchemaTable.cpp).
std::span<const BuiltinSchema> builtinSchemaTable();

}  // namespace detail

}  // namespace lstudio
