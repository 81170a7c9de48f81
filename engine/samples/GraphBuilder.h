// Composes programs the way torch.export writes them: placeholders for
// parameters, buffers and user inputs; ATen calls with their real schemas
// (arguments named and defaults filled in) and inferred result shapes; the
// module hierarchy and a source line on every node; a complete graph
// signature; deterministic weights. Used by the sample zoo and by tests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <string>
#include <variant>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/CallBuilder.h"
#include "engine/ir/Ir.h"
#include "engine/ir/TreeSpec.h"

namespace lstudio {

/// How a parameter or buffer is filled (deterministic, no randomness).
struct WeightInit {
  enum class Kind : uint8_t { Pattern, Constant, Zeros } kind = Kind::Pattern;
  double value = 0;     ///< Constant
  double scale = 0.02;  ///< Pattern: a fixed pseudo-random sequence in [-scale, scale]
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string method = "forward");

  /// Module scope recorded in nn_module_stack of the nodes that follow.
  void enterModule(const std::string& path, const std::string& type);
  void exitModule();
  /// The source line recorded as stack trace of the nodes that follow.
  void at(const std::string& file, int line, const std::string& function, const std::string& code);

  TensorRef input(const std::string& name, ScalarType dtype, std::vector<int64_t> sizes,
                std::vector<std::string> symbols = {});
  TensorRef parameter(const std::string& fqn, ScalarType dtype, std::vector<int64_t> sizes, WeightInit init = {});
  TensorRef buffer(const std::string& fqn, ScalarType dtype, std::vector<int64_t> sizes, WeightInit init = {},
                 bool persistent = true);
  /// A lifted tensor constant (torch.export's tensor_constant input), e.g. a
  /// frozen quantized weight.
  TensorRef constant(const std::string& name, ScalarType dtype, std::vector<int64_t> sizes, WeightInit init = {});
  /// A symbolic size with its range (torch.export's range_constraints).
  TensorRef symbol(const std::string& name, int64_t hint, int64_t min, int64_t max);

  /// Calls `target` ("aten.addmm.default") with positional arguments in
  /// schema order; missing trailing arguments take their defaults. Returns
  /// the result values (one per tensor result). Errors are kept and
  /// reported by finish(); the returned ids are then kNoValue.
  std::vector<TensorRef> call(const std::string& target, std::vector<BuildArg> args);
  /// call() for single-result operators.
  TensorRef op(const std::string& target, std::vector<BuildArg> args);

  void output(TensorRef v);
  /// `value` is the new content of buffer `fqn` (torch.export's buffer mutation).
  void bufferMutation(TensorRef value, const std::string& fqn);
  void lossOutput(TensorRef v);
  void gradientOutput(TensorRef v, const std::string& parameterFqn);

  /// The structure of forward's arguments and results (torch.export's
  /// in_spec / out_spec), when they are not a flat tuple: the leaves are the
  /// user inputs and user outputs in order. finish() checks the counts.
  void callSpecs(PyTree inputs, PyTree outputs);

  /// finish() writes the weights to an unlinked temporary file in `dir` and
  /// maps it, instead of filling a buffer in memory (for samples of gigabytes).
  void spillWeightsTo(std::string dir) { spillDir_ = std::move(dir); }

  /// The finished program (format Pt2), weights filled in one owned buffer
  /// (or one mapped temporary file, see spillWeightsTo).
  Result<Program> finish(const std::string& name);

  const Method& method() const { return m_; }

 private:
  TensorRef placeholder(const std::string& name, TensorSpec spec, InputSpec::Kind kind, const std::string& fqn, bool persistent);
  std::string freshName(const std::string& base);
  /// torch.export's order of the signature's inputs and outputs, and the root call's pytree specs.
  Status finishSignature(const std::string& name);
  /// The weights filled at `offsets` of one buffer of `total` bytes (or a spilled temporary file).
  Result<std::shared_ptr<const MappedFile>> storeWeights(const std::string& name, const std::vector<uint64_t>& offsets,
                                                         uint64_t total);

  Method m_;
  std::vector<ModuleFrame> modules_;
  std::optional<StackFrame> source_;
  struct PendingWeight {
    ValueId value;
    WeightInit init;
  };
  std::vector<PendingWeight> weights_;
  std::vector<InputSpec> userInputs_, stateInputs_;
  std::optional<std::pair<PyTree, PyTree>> callSpecs_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> nextSuffix_;
  std::optional<Error> error_;
  std::string spillDir_;
};

}  // namespace lstudio
