// The pytree specs of a method's inputs and outputs as torch's
// treespec_dumps writes them (JSON, format version 1) — what torch.export
// stores in a .pt2's module call graph and what ExecuTorch copies into a
// .pte's ContainerMetadata (e.g. fixtures/pte/add.pte):
//   forward(x, y) -> [1, {"type": "builtins.tuple", "context": "null", "children_spec":
//                        [<tuple of 2 leaves>, {"type": "builtins.dict", "context": "[]", ...}]}]
// Used only when a program does not carry its own specs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lstudio {

/// The structure of a pytree: a leaf (one tensor or scalar of the flat
/// list), or a tuple, list or dict of subtrees.
struct PyTree {
  enum class Kind { Leaf, Tuple, List, Dict };
  Kind kind = Kind::Leaf;
  std::vector<std::string> keys;  ///< Dict: each key as a JSON value, e.g. "\"masks\"" or "96"
  std::vector<PyTree> children;

  static PyTree tuple(std::vector<PyTree> children);
  static PyTree leaves(size_t n);  ///< a tuple of n leaves
  size_t leafCount() const;
};

/// treespec_dumps of `tree`.
std::string treespecJson(const PyTree& tree);
/// The input spec of forward(*args) with `n` positional leaves and no kwargs.
std::string treespecArgs(size_t n);
/// The output spec of `n` leaves: the leaf itself when n == 1, else a tuple.
std::string treespecOutputs(size_t n);

}  // namespace lstudio
