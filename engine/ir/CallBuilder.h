// Making one operator call the way torch.export writes it: arguments in
// schema order, named, defaults filled in; result tensors with inferred
// specs. Shared by the sample builder (engine/samples) and the to_edge
// decompositions (engine/lowering/decompositions), which both add calls to
// a method.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio {

/// A value of the graph being built (a tensor, or a symbolic size). A type
/// of its own so that plain integers in argument lists stay integers.
struct TensorRef {
  ValueId id = kNoValue;
};

/// One size in a size list: a number, or a symbolic Int of the graph (the
/// result of sym_size.int or of arithmetic on it) with what it equals in
/// the specs' symbols ("s0", "2*s0") and its example value.
struct SizeRef {
  int64_t value = 0;  ///< the number; for a symbolic size its example value
  ValueId symbolic = kNoValue;
  std::string expression;
  bool isSymbolic() const { return symbolic != kNoValue; }
};

/// One argument of a call, positional in schema order.
struct BuildArg {
  using V = std::variant<None, TensorRef, int64_t, double, bool, std::vector<int64_t>, std::vector<TensorRef>, ScalarType,
                         std::string, std::vector<SizeRef>>;
  V v;
  BuildArg(None n = {}) : v(n) {}
  BuildArg(TensorRef t) : v(t) {}
  BuildArg(int x) : v(int64_t(x)) {}
  BuildArg(int64_t x) : v(x) {}
  BuildArg(double x) : v(x) {}
  BuildArg(bool x) : v(x) {}
  BuildArg(std::vector<int64_t> x) : v(std::move(x)) {}
  BuildArg(std::initializer_list<int64_t> x) : v(std::vector<int64_t>(x)) {}
  BuildArg(std::vector<TensorRef> x) : v(std::move(x)) {}  ///< a tensor list
  BuildArg(ScalarType x) : v(x) {}
  BuildArg(std::string x) : v(std::move(x)) {}  ///< a string (rounding_mode, device)
  BuildArg(const char* x) : v(std::string(x)) {}
  BuildArg(std::vector<SizeRef> x) : v(std::move(x)) {}  ///< sizes, some computed at run time
};

/// Result specs of an ATen call whose arguments are already in schema order
/// (sizes, dtype, dim order; symbols carried where sizes are symbolic).
Result<std::vector<TensorSpec>> inferResultSpecs(const Method& m, const std::string& qualifiedName,
                                                 const std::string& overload, const std::vector<ValueId>& args);

/// The index of `ref` in the method's operator table, added when missing.
int32_t operatorIndexOf(Method& m, const OperatorRef& ref);

/// A call of `target` ("torch.ops.aten.add.Tensor" or "aten.add.Tensor"): its
/// argument values are added to `m`, and its results too, named by `freshName`
/// from the operator's name, with `specs` when given, else inferred. The node
/// is returned, not added: the caller places it and sets its metadata.
Result<Node> buildCall(Method& m, const std::string& target, std::vector<BuildArg> args,
                       const std::function<std::string(const std::string&)>& freshName,
                       const std::vector<TensorSpec>* specs = nullptr);

}  // namespace lstudio
