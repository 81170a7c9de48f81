// torch.cond in its two forms: a cond node whose branches are graphs of their
// own (Method::subgraphs; how the reader and the lowering passes see it), and
// ExecuTorch's instructions for it (_emit_cond in exir/emit/_emitter.py):
//   JumpFalse(pred -> F), true branch, Move(result -> output)...,
//   JumpFalse(false -> end), F: false branch, Move(result -> output)...
// The emitter inlines conds; the de-lowerer lifts them back.
#pragma once

#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio {

/// `m` with every cond inlined where it stands (nested ones too). A branch's
/// inputs become the cond's operands, its other values join the method's
/// table. `inBranch` says per node of the result whether it came from a branch.
Result<Method> inlineConds(const Method& m, std::vector<char>& inBranch);

/// The inverse, on a method whose calls are functional already: its jumps and
/// moves become cond nodes whose branches go to m.subgraphs. A branch reads
/// the tensors and run-time numbers defined outside it as the cond's operands,
/// in the order it first reads them. A jump of another shape is refused,
/// naming the instruction.
Status liftConds(Method& m);

}  // namespace lstudio
