// to_edge's decompositions: torch.export's operators that are not core ATen,
// rewritten into core ATen operators the way PyTorch's decomposition table
// (torch._decomp's core_aten_decompositions, as ExecuTorch's
// _default_decomposition_table uses it) rewrites them, node for node, so the
// studio's edge program is the one upstream's to_edge makes. Each rule is a
// small function over one node; the RunDecompositions pass applies them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/CallBuilder.h"
#include "engine/ir/Ir.h"

namespace lstudio::decompositions {

/// The symbolic sizes a method's graph computes (sym_size.int, operator.mul),
/// by what they equal in the specs' symbols ("s0", "2*s0"): torch's tracer
/// makes one node per expression and every later use reads it.
class SymbolicSizes {
 public:
  /// Records `n` when it computes a symbolic size from known ones.
  void note(const Method& m, const Node& n);
  void add(const std::string& expression, ValueId v);
  /// The value equal to `expression`, or kNoValue.
  ValueId find(const std::string& expression) const;
  /// What `v` equals, or "" when it is not a known symbolic size.
  std::string expressionOf(ValueId v) const;
  /// What `v` equals, or, for a symbolic Int whose expression the method does not
  /// spell (an unbacked item()), a name of its own ("#<value>"); "" for a number.
  std::string keyOf(const Method& m, ValueId v) const;

 private:
  std::map<std::string, ValueId, std::less<>> byExpression_;
  std::map<ValueId, std::string> expressions_;
};

/// The expression of a * b as sympy writes it: the number first.
std::string productExpression(const SizeRef& a, const SizeRef& b);
/// The expression of a + b as sympy writes it: symbols in order, the number last.
std::string sumExpression(const SizeRef& a, const SizeRef& b);

/// One node being rewritten: its arguments by schema name, and calls that
/// replace it. Calls are appended in order; the last writes the node's
/// results (finish) or the results become existing values (resultIs).
class Rewrite {
 public:
  /// `preserveOps`: EdgeCompileConfig.preserve_ops, which a rule that writes a
  /// composite through another one (lstm through linear) keeps whole, as
  /// torch's recursive decomposition does.
  /// `sizes`: the symbolic sizes computed so far in the method (null: none known).
  Rewrite(Method& m, const Node& node, std::vector<Node>& out, std::function<std::string(const std::string&)> freshName,
          std::vector<std::string> preserveOps = {}, SymbolicSizes* sizes = nullptr);

  /// Whether preserve_ops keeps the operator (e.g. "aten::linear", "default") whole.
  bool preserved(const std::string& name, const std::string& overload) const;

  Method& method() { return m_; }
  const Node& node() const { return node_; }

  // --- the node's arguments, by schema name ---
  ValueId arg(std::string_view name) const;
  /// Whether the source gave the argument (not the schema's default filled in for it).
  bool spelled(std::string_view name) const;
  bool isNone(std::string_view name) const;
  // Specs are returned by value: the calls a rule makes add values, which
  // would leave a reference into the value table dangling.
  TensorSpec tensor(std::string_view name) const { return spec(arg(name)); }
  /// The tensor `v` is; when it is none (a missing or non-tensor argument) the
  /// rewrite fails and an empty spec stands in.
  TensorSpec spec(ValueId v) const;
  /// An Int argument's number; nullopt when it is missing or computed at run time.
  std::optional<int64_t> integer(std::string_view name) const;
  /// An Int argument as a size: its number, or the symbolic Int it is.
  std::optional<SizeRef> sizeArg(std::string_view name) const;
  std::optional<double> number(std::string_view name) const;
  std::optional<std::vector<int64_t>> ints(std::string_view name) const;
  /// Items of a tensor list argument.
  std::vector<ValueId> tensors(std::string_view name) const;
  /// The node's i-th result.
  ValueId result(size_t i = 0) const { return node_.outputs.at(i); }
  TensorSpec resultSpec(size_t i = 0) const { return spec(result(i)); }

  // --- the calls that replace it ---
  /// A call whose results are new values (specs inferred, or given).
  std::vector<TensorRef> call(const std::string& target, std::vector<BuildArg> args,
                              const std::vector<TensorSpec>* specs = nullptr);
  TensorRef op(const std::string& target, std::vector<BuildArg> args, const std::vector<TensorSpec>* specs = nullptr);
  /// The last call: its results are the node's results (their specs kept),
  /// then `extra` ones the node did not have.
  void finish(const std::string& target, std::vector<BuildArg> args, std::vector<TensorSpec> extra = {});
  /// A call whose first result is the node's result `i` (for rules that end in
  /// several calls, one per result).
  void into(size_t i, const std::string& target, std::vector<BuildArg> args);
  /// The node as it is, calling `target` (same arguments, same results).
  void retarget(const std::string& target);
  /// The node's result is `v` (a decomposition that ends in a value it already has).
  void resultIs(ValueId v);
  /// The rule cannot rewrite this node; the pass fails naming it.
  void fail(std::string why);

  // --- sizes, as torch's SymInt arithmetic records them while it traces ---
  /// Dimension `dim` of `tensor`: its number when static, else the result of
  /// sym_size.int on the first input with that symbol. There is one such call
  /// per symbol, at the start of the graph, as torch's tracer binds an input's
  /// symbolic sizes.
  SizeRef size(ValueId tensor, size_t dim);
  /// Every dimension of `tensor` from `from` to `to`.
  std::vector<SizeRef> sizes(ValueId tensor, size_t from, size_t to);
  /// a * b: numbers multiply, 1 * x is x, anything else is an operator.mul call.
  SizeRef mul(const SizeRef& a, const SizeRef& b);
  /// a + b: numbers add, x + 0 is x, anything else is an operator.add call
  /// (the program's own when it computes the same sum).
  SizeRef add(const SizeRef& a, const SizeRef& b);
  /// A contiguous tensor of `dtype` with these sizes (symbols where they are symbolic).
  static TensorSpec contiguousSpec(ScalarType dtype, const std::vector<SizeRef>& sizes);

  const std::optional<std::string>& failure() const { return failure_; }
  /// Results replaced by existing values: (result, replacement).
  const std::vector<std::pair<ValueId, ValueId>>& replaced() const { return replaced_; }

 private:
  void place(Node n);
  /// The `_operator.<name>` call on two sizes whose result equals `expression`.
  SizeRef scalarCall(const std::string& name, const SizeRef& a, const SizeRef& b, int64_t hint, std::string expression);
  /// A call on a tensor with symbolic sizes whose result sizes are spelled as
  /// numbers (view, expand, reshape, full...) would fix sizes the program
  /// computes at run time: the rewrite fails, naming it, rather than write a wrong file.
  bool spellsStaticSizes(const std::string& target, const std::vector<BuildArg>& args);

  Method& m_;
  Node node_;
  std::vector<Node>& out_;
  std::function<std::string(const std::string&)> freshName_;
  std::vector<std::string> preserveOps_;
  mutable std::optional<std::string> failure_;
  std::vector<std::pair<ValueId, ValueId>> replaced_;
  SymbolicSizes ownSizes_;
  SymbolicSizes* sizes_;
};

using Rule = void (*)(Rewrite&);

/// The rule for an operator ("aten::linear", "default"), or null when the
/// operator is kept as it is (core ATen, or no decomposition known).
Rule ruleFor(const OperatorRef& op);

/// A size as a call argument: its number, or the symbolic Int that holds it.
inline BuildArg sizeArgument(const SizeRef& s) { return s.isSymbolic() ? BuildArg(TensorRef{s.symbolic}) : BuildArg(s.value); }

/// A contiguous tensor of `dtype` and `sizes`; `symbols` (one per dimension, "" where
/// static) make it dynamic.
TensorSpec denseSpec(ScalarType dtype, std::vector<int64_t> sizes, std::vector<std::string> symbols = {});
/// Contiguous strides of `sizes`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes);
/// The strides a spec records, or its dim order's when none were recorded.
std::vector<int64_t> stridesOf(const TensorSpec& t);
/// The strides of a view of a tensor (sizes, strides) with new sizes, when the
/// bytes allow one without a copy (torch's computeStride); nullopt otherwise.
std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& newSizes);
/// The strides torch's fake tensors give that view (torch._refs' view, which keeps the
/// stride of a dimension it does not touch, a 1 included, where computeStride
/// recomputes it): those of the exported program and of upstream's to_edge.
std::optional<std::vector<int64_t>> fakeViewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                    const std::vector<int64_t>& newSizes);
/// torch's reshape: a view when the layout allows one, else a contiguous clone viewed.
TensorRef reshape(Rewrite& r, ValueId x, const std::vector<int64_t>& sizes);
/// The same with sizes that may be symbolic.
TensorRef reshape(Rewrite& r, ValueId x, const std::vector<SizeRef>& sizes);
/// Within a rank: a negative dimension counts from the end.
inline int64_t wrapDim(int64_t d, size_t rank) { return d < 0 ? d + static_cast<int64_t>(rank) : d; }
/// The strides torch gives the result of a call, where they follow from its
/// operator and inputs (views, elementwise operators, clone, the edge
/// dialect's view copies); nullopt for operators that decide their own layout.
std::optional<std::vector<int64_t>> derivedStrides(const Method& m, const OperatorRef& op, const std::vector<ValueId>& args,
                                                   const TensorSpec& result);
/// split, split_with_sizes, unbind and their unsafe forms: every result a piece of the input.
bool isSplit(const std::string& name);
/// Dimensions outermost first by stride (ties in dimension order).
std::vector<uint8_t> dimOrderOf(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
/// True when the tensor's elements are laid out contiguously in row-major order
/// (size-1 dimensions ignored, as torch's is_contiguous does).
bool isContiguous(const TensorSpec& t);

// The rule families (one file each).
void registerActivationRules(std::vector<std::pair<std::string, Rule>>& table);
void registerConvolutionRules(std::vector<std::pair<std::string, Rule>>& table);
void registerEinsumRules(std::vector<std::pair<std::string, Rule>>& table);
void registerLinearAlgebraRules(std::vector<std::pair<std::string, Rule>>& table);
void registerNormalizationRules(std::vector<std::pair<std::string, Rule>>& table);
void registerShapeRules(std::vector<std::pair<std::string, Rule>>& table);
void registerVisionRules(std::vector<std::pair<std::string, Rule>>& table);

}  // namespace lstudio::decompositions
