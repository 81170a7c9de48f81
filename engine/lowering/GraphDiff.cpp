#include "engine/lowering/GraphDiff.h"

#include <string_view>
#include <unordered_map>

#include "engine/lowering/GraphText.h"

namespace lstudio {

MethodDiff diffMethods(const Method& before, const Method& after) {
  MethodDiff d;
  d.after.assign(after.nodes.size(), MethodDiff::Mark::Same);
  d.matchOf.assign(after.nodes.size(), -1);
  std::unordered_map<std::string_view, int> byName;
  byName.reserve(before.nodes.size());
  for (size_t i = 0; i < before.nodes.size(); ++i)
    if (!before.nodes[i].name.empty()) byName.emplace(before.nodes[i].name, static_cast<int>(i));
  std::vector<bool> matched(before.nodes.size(), false);
  for (size_t i = 0; i < after.nodes.size(); ++i) {
    const Node& n = after.nodes[i];
    int j = -1;
    if (!n.name.empty()) {
      if (auto it = byName.find(n.name); it != byName.end() && !matched[it->second]) j = it->second;
    } else if (i < before.nodes.size() && before.nodes[i].name.empty() && !matched[i]) {
      j = static_cast<int>(i);
    }
    if (j < 0) {
      d.after[i] = MethodDiff::Mark::Added;
      ++d.added;
      continue;
    }
    matched[j] = true;
    d.matchOf[i] = j;
    if (nodeLine(before, j) != nodeLine(after, i)) {
      d.after[i] = MethodDiff::Mark::Modified;
      ++d.modified;
    }
  }
  for (size_t j = 0; j < before.nodes.size(); ++j)
    if (!matched[j]) d.removed.push_back(static_cast<int>(j));
  return d;
}

}  // namespace lstudio
