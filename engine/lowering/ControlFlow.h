// Control flow in its two forms: a cond, map or scan node whose graphs are
// graphs of their own (Method::subgraphs; how the reader and the lowering
// passes see it), and ExecuTorch's instructions for it (_emit_cond, _emit_map
// and _emit_scan in exir/emit/_emitter.py):
//   cond: JumpFalse(pred -> F), true branch, Move(result -> output)...,
//         JumpFalse(false -> end), F: false branch, Move(result -> output)...
//   map:  sym_size.int(xs, 0) -> n; L: select_copy.int_out(xs, 0, i) -> slice,
//         body, et_copy_index(stacked, y, i), i = add.Scalar(i, 1),
//         done = eq.Scalar(i, n), JumpFalse(done -> L), i = sub.Scalar(i, n)
//   scan: sym_size.int(xs[0], 0) -> n, copy_(carry, init)...; L: one select per
//         xs, combine_fn, copy_(carry, next)..., et_copy_index(ys, y, i)...,
//         then the same counting and jump back as map.
// The emitter inlines control flow; the de-lowerer lifts it back.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio {

/// What the emitter needs to number an inlined method's values as ExecuTorch does.
struct InlinedLayout {
  std::vector<char> inBranch;  ///< per node: whether it came from a subgraph
  /// node -> values ExecuTorch numbers before that node's own (a loop's results,
  /// index and count; a scan's slices before its body's values).
  std::map<size_t, std::vector<ValueId>> numberedFirst;
};

/// `m` with every cond, map and scan inlined where it stands (nested ones too).
/// A subgraph's inputs become the caller's operands (a map's or scan's slices
/// values of their own), its other values join the method's table.
Result<Method> inlineControlFlow(const Method& m, InlinedLayout& layout);

/// The inverse, on a method whose calls are functional already: its jumps and
/// moves become cond nodes whose branches go to m.subgraphs. A branch reads
/// the tensors and run-time numbers defined outside it as the cond's operands,
/// in the order it first reads them. A jump of another shape is refused,
/// naming the instruction.
Status liftConds(Method& m);

/// The carries of the scans laid out in `m`'s instructions: the values the
/// copy_(carry, init) after a loop's sym_size.int write.
std::set<ValueId> scanCarries(const Method& m);

}  // namespace lstudio
