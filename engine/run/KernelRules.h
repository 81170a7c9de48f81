// What ExecuTorch's runtime (the executorch 1.5.1 wheel: its portable kernels, the optimized ones
// that replace 23 of them, and the prim ops) checks of a kernel call that the studio can know
// before a file is written: that the operator is registered at all (else load fails with
// OperatorMissing, 0x14), and the kernel's dim-order check (else the call fails with
// InvalidArgument, 0x12). Export refuses a program that breaks them; the interpreter refuses to
// run such a call, as the runtime does.
#pragma once

#include <optional>
#include <string>

#include "engine/ir/Ir.h"

namespace lstudio {

/// Whether the runtime's kernel libraries register `op` ("aten::add.out"). Operators of other
/// namespaces (quantized_decomposed, llama, a backend's or the user's own library) are taken
/// as registered: the user links that library.
bool runtimeHasKernel(const OperatorRef& op);

/// The rule a kernel call of `m` breaks, in words ("same dim order: input 0 is [0, 2, 3, 1],
/// out is contiguous; the kernel needs all contiguous or all channels-last"), or nothing.
/// `n` is an emitted kernel call: args are schema arguments, then outs, then returns.
std::optional<std::string> kernelRuleViolation(const Method& m, const Node& n);

}  // namespace lstudio
