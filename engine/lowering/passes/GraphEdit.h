// Small graph edits the passes share: new values, operator table entries,
// rewiring uses, and what the signature says a value is.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/ir/CallBuilder.h"
#include "engine/ir/Ir.h"
#include "engine/ir/OpSchema.h"
#include "engine/support/MappedFile.h"

namespace lstudio::passes {

/// torch.fx's naming: the first use of a name is bare, later ones get _1, _2, ...
class FreshNames {
 public:
  explicit FreshNames(const Method& m);
  std::string operator()(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_;
};

ValueId addValue(Method& m, Value v);
/// A call of `target` appended to `nodes` in front of node `n` (its meta copied), whose
/// result `n` then reads as argument `arg`: a cast or a tensor made of what was there.
Status callInFront(Method& m, Node& n, size_t arg, const std::string& target, std::vector<BuildArg> args,
                   const std::vector<TensorSpec>& specs, FreshNames& fresh, std::vector<Node>& nodes);
/// Renumbers the values in the order a traced graph lists them (graph inputs,
/// then each node's results, then what the nodes read), dropping values
/// nothing refers to. Passes that add nodes call it so that the value order,
/// which ExecuTorch's planners break ties by, is the order upstream's retrace
/// gives.
void renumberValues(Method& m);
ValueId addInt(Method& m, int64_t x);
ValueId addIntList(Method& m, const std::vector<int64_t>& xs);
/// The operator table index of `schema`, added when missing.
int32_t operatorIndex(Method& m, const OpSchema& schema);
/// Keeps only the operators some kernel node calls, in order of first call.
void dropUnusedOperators(Method& m);
/// Points `n` at `schema` (operator index and the target spelling).
void setOperator(Method& m, Node& n, const OpSchema& schema);
/// "aten::index_put" + "default" of a kernel node, or empty strings.
const OperatorRef* operatorOf(const Method& m, const Node& n);
bool calls(const Method& m, const Node& n, const std::string& name, const std::string& overload = "default");
/// Every read of `from` (node arguments, inside lists, method outputs and
/// signature outputs) reads `to` instead. Returns how many were rewired.
size_t replaceUses(Method& m, ValueId from, ValueId to);
/// Index of the node that writes `v`, or -1.
int producerOf(const Method& m, ValueId v);
/// The values a node reads, lists expanded (tensor items only once).
std::vector<ValueId> readsOf(const Method& m, const Node& n);
/// Number of reads of each value by nodes and method outputs.
std::vector<int> useCounts(const Method& m);
/// The input spec of a graph input value, or null.
const InputSpec* inputSpecOf(const Method& m, ValueId v);
/// True for buffers (and user inputs) the signature says the method mutates.
bool isMutatedInput(const Method& m, ValueId v);
/// The value of an Int/Double/Bool argument, or nullopt.
std::optional<double> numberOf(const Method& m, ValueId v);
/// A number where its operator's schema has a Tensor (torch.export keeps `x + 1e-5` as
/// add.Tensor(x, 1e-05)) becomes a 0-dim constant tensor "_lifted_tensor_constant<k>", as
/// to_edge's ScalarToTensorPass and lift_constant_tensor_pass make it: kernels read a tensor
/// there. torch.tensor's dtypes: float32 for a float, int64 for an int, bool for a bool.
struct LiftedScalars {
  std::vector<ValueId> values;                ///< the new tensors, in node order
  std::shared_ptr<const MappedFile> bytes;    ///< what they point into (null when none)
};
LiftedScalars liftScalarTensorArguments(Method& m);
/// Nodes of a training program (a loss or gradient output): ExecuTorch's backward signature.
bool hasBackwardSignature(const Method& m);

}  // namespace lstudio::passes
