// De-lowering: a program read from a .pte becomes a graph the lowering passes
// can run again, so a user can re-plan, re-align and re-tag constants of a
// program they already have. It undoes what to_executorch did:
//   - out-variant kernel calls become the functional operator they came from
//     (aten::add.out -> aten::add.Tensor), their out arguments become the
//     node's results; views (executorch_prim::et_view) become view_copy;
//   - the memory plan is dropped (slots, arenas, shared view storage);
//   - the method's inputs regain torch.export's signature: constant tensors
//     become parameters (named by their fully qualified name when the .pte
//     keeps one, else after the first operator argument that reads them,
//     e.g. "convolution_1.weight"), state the program reads before writing
//     becomes a buffer (mutated when a method output returns it), the
//     .pte's inputs are the user inputs;
//   - delegate calls, prim ops (sym sizes, scalar arithmetic), in-place
//     write-backs (copy_) and kernels of operators the studio has no schema
//     for (custom backends' ops) stay as they are.
// Control flow (MoveCall, JumpFalseCall, FreeCall) cannot be undone and is
// an error naming the instruction.
#pragma once

#include <string>
#include <vector>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"

namespace lstudio {

struct DelowerReport {
  size_t functionalized = 0;  ///< out-variant calls made functional again
  size_t views = 0;           ///< et_view calls made view_copy again
  size_t kept = 0;            ///< kernel calls kept as the .pte has them (prim ops, copy_, unknown operators)
  size_t delegates = 0;
  size_t parameters = 0, buffers = 0, userInputs = 0;
  std::vector<std::string> notes;
};

/// The de-lowered form of `pte` (a Program read from a .pte). Weights and
/// delegate blobs stay spans into the mapped file.
Result<Program> delowerProgram(const Program& pte, DelowerReport* report = nullptr);

/// A config that lowers the de-lowered program back the way `pte` was made,
/// as far as the file tells: its segment alignment, view_copy kept when the
/// .pte still calls it on static shapes, external tensors left in their files.
ExecutorchBackendConfig configMatching(const Program& pte);

}  // namespace lstudio
