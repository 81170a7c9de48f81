// What a pass changed in a method: nodes added, removed or modified.
//
// Nodes are matched by their graph name (torch.export names every node and
// the passes keep names); nodes without names (programs read from a .pte)
// are matched by position. A matched node is modified when its printed line
// (results with their specs, operator, arguments; see GraphText) differs, so
// a new out variant, a new slot or a new shape all count.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/Ir.h"

namespace lstudio {

struct MethodDiff {
  enum class Mark : uint8_t { Same, Added, Modified };
  std::vector<Mark> after;    ///< one per node of the later method
  std::vector<int> removed;   ///< indices of nodes of the earlier method with no counterpart
  std::vector<int> matchOf;   ///< per later node: its earlier node, or -1
  size_t added = 0, modified = 0;
  bool empty() const { return added == 0 && modified == 0 && removed.empty(); }
};

MethodDiff diffMethods(const Method& before, const Method& after);

}  // namespace lstudio
