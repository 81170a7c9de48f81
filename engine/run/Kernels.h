// The interpreter's kernels: one function per ExecuTorch operator ("aten::add.out"),
// following the semantics of ExecuTorch's portable kernels (kernels/portable/cpu/).
// Arguments arrive as ExecuTorch passes them: the schema's arguments, then the outs,
// then the returns (the same values as the outs).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/run/RunValue.h"
#include "engine/support/Error.h"

namespace lstudio::run {

/// What a kernel sees: the method's values by id, and a way to fail with a message.
class KernelContext {
 public:
  explicit KernelContext(std::vector<RunValue>& values) : values_(values) {}
  RunValue& value(ValueId id) { return values_.at(static_cast<size_t>(id)); }
  RunTensor& tensor(ValueId id);
  int64_t integer(ValueId id);
  double scalar(ValueId id);  ///< an Int, Double or Bool value as a number
  bool isNone(ValueId id) { return value(id).kind == ValueKind::None; }
  std::vector<int64_t> ints(ValueId id);  ///< an IntList's items (or one Int)
  /// Gives `out` these sizes (and a contiguous dim order when it has none of its rank);
  /// fails when its storage cannot hold them.
  bool resize(RunTensor& out, const std::vector<int64_t>& sizes);
  /// Counts `ops` element operations against `workLimit` for the whole run (0: no limit);
  /// false, with the message set, past it. resize() counts each output element.
  bool allowWork(uint64_t ops) {
    workDone_ = ops > UINT64_MAX - workDone_ ? UINT64_MAX : workDone_ + ops;
    return workLimit == 0 || workDone_ <= workLimit ||
           fail("more than " + std::to_string(workLimit) + " element operations (the run's work limit)");
  }
  uint64_t workLimit = 0;
  bool fail(std::string message) {
    message_ = std::move(message);
    return false;
  }
  const std::string& message() const { return message_; }

 private:
  std::vector<RunValue>& values_;
  std::string message_;
  uint64_t workDone_ = 0;
};

/// A kernel: false with ctx.message() set when it cannot run on these values.
using Kernel = std::function<bool(KernelContext& ctx, const std::vector<ValueId>& args)>;

/// The kernel for an operator ("aten::add" + "out"), or nullptr.
const Kernel* findKernel(const std::string& fullName);
/// Every operator the interpreter runs, sorted.
std::vector<std::string> kernelNames();

}  // namespace lstudio::run
