// The groups of a graph model: modules found from constant names and repeated structure,
// execution chunks for large graphs, and where weights, inputs, removed views and write-backs
// go (GraphModel::build makes the boxes, then arranges them here).
#include "ui/graph/GraphGrouping.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lstudio::ui {
namespace {

// Groups reordered so that parents precede children, node groups renumbered.
void putParentsFirst(GraphModel& g) {
  std::vector<int> order;
  std::vector<std::vector<int>> kids(g.groups.size());
  for (size_t i = 0; i < g.groups.size(); ++i)
    if (g.groups[i].parent >= 0) kids[g.groups[i].parent].push_back(int(i));
  for (size_t i = 0; i < g.groups.size(); ++i)
    if (g.groups[i].parent < 0) {
      order.push_back(int(i));
      for (size_t k = order.size() - 1; k < order.size(); ++k)
        for (int c : kids[order[k]]) order.push_back(c);
    }
  std::vector<int> newIndex(g.groups.size());
  for (size_t i = 0; i < order.size(); ++i) newIndex[order[i]] = int(i);
  std::vector<GraphGroup> sorted(g.groups.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sorted[i] = g.groups[order[i]];
    if (sorted[i].parent >= 0) sorted[i].parent = newIndex[sorted[i].parent];
  }
  g.groups = std::move(sorted);
  for (GraphNode& n : g.nodes)
    if (n.group >= 0) n.group = newIndex[n.group];
}

// A removed view is drawn where the operator reading it first is (the
// flat programs' groups are made after the boxes).
void placeRemovedViews(GraphModel& g) {
  std::vector<char> placed(g.nodes.size(), 0);
  for (const GraphEdge& e : g.edges)
    if (g.nodes[e.from].kind == VisualKind::View && g.nodes[e.from].node < 0 && !placed[e.from]) {
      g.nodes[e.from].group = g.nodes[e.to].group;
      placed[e.from] = 1;
    }
}

bool isWeight(const GraphNode& n) {
  return n.node < 0 && (n.kind == VisualKind::Parameter || n.kind == VisualKind::Constant);
}

// A weight reads as part of the operator that takes it: a placeholder whose
// every reader is an operator box becomes a line in each reader's box and is
// hosted (for selection and layout) by the first. Method inputs, and
// constants returned or unused, keep boxes of their own.
void hostWeights(GraphModel& g) {
  std::vector<char> readersOk(g.nodes.size(), 0), unread(g.nodes.size(), 1);
  for (size_t i = 0; i < g.nodes.size(); ++i) readersOk[i] = isWeight(g.nodes[i]);
  for (const GraphEdge& e : g.edges) {
    const VisualKind k = g.nodes[e.to].kind;
    unread[e.from] = 0;
    if (k == VisualKind::Input || k == VisualKind::Parameter || k == VisualKind::Constant || k == VisualKind::Output)
      readersOk[e.from] = 0;
  }
  for (const GraphEdge& e : g.edges)  // edges are in argument order
    if (readersOk[e.from] && !unread[e.from]) {
      if (g.nodes[e.from].host < 0) g.nodes[e.from].host = e.to;
      g.nodes[e.to].weights.push_back(e.from);
    }
}

bool isIndex(std::string_view c) {
  return !c.empty() && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::vector<std::string> splitPath(const std::string& s) {
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    size_t dot = s.find('.', at);
    parts.push_back(s.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) return parts;
    at = dot + 1;
  }
}

// How many leading components of `parts` make a module path: never a bare
// container ("layers" of "layers.3"), whose items are the modules.
size_t moduleDepth(const std::vector<std::string>& parts, size_t depth) {
  while (depth > 0 && depth < parts.size() && !isIndex(parts[depth - 1]) && isIndex(parts[depth])) --depth;
  return depth;
}

// Groups of a flat program from the names of what its operators read: the
// reader of "layers.3.attention.wq.weight" belongs to "layers.3.attention"
// (the parameter's owner, a Linear, is that one operator; its parent is the
// module worth a box). Operators that read nothing named join their
// neighbours: the group of the named readers before and after them when
// that is one, else the group their arguments come from.
void groupByConstantNames(GraphModel& g, const Method& m) {
  for (const Node& n : m.nodes)
    if (!n.meta.moduleStack.empty()) return;  // nn_module_stack says it better
  // Per method node: the common prefix of the module paths of the weights it reads.
  std::vector<std::optional<std::vector<std::string>>> module(m.nodes.size());
  for (const GraphEdge& e : g.edges) {
    const GraphNode& w = g.nodes[e.from];
    const int node = g.nodes[e.to].node;
    if (!isWeight(w) || node < 0 || g.nodes[e.to].delegateCall >= 0) continue;
    if (w.title.find('.') == std::string::npos) continue;  // no name ("%12") or no module in it
    std::vector<std::string> parts = splitPath(w.title);
    if (parts.size() < 3) parts.clear();
    else parts.resize(moduleDepth(parts, parts.size() - 2));
    auto& mod = module[node];
    if (!mod) {
      mod = std::move(parts);
    } else {
      size_t k = 0;
      while (k < mod->size() && k < parts.size() && (*mod)[k] == parts[k]) ++k;
      mod->resize(moduleDepth(*mod, k));
    }
  }
  // One group per module path, nested at each module boundary.
  std::map<std::string, int> byPath;
  auto groupOf = [&](const std::vector<std::string>& parts) {
    int parent = -1;
    std::string path;
    for (size_t k = 0; k < parts.size(); ++k) {
      path += (k ? "." : "") + parts[k];
      if (k + 1 < parts.size() && moduleDepth(parts, k + 1) != k + 1) continue;
      auto [it, fresh] = byPath.emplace(path, int(g.groups.size()));
      if (fresh) {
        GraphGroup grp;
        grp.path = path;
        grp.parent = parent;
        g.groups.push_back(grp);
      }
      parent = it->second;
    }
    return parent;
  };
  std::vector<int> group(m.nodes.size(), -1);
  std::vector<int> named;  // method nodes placed by a name, in execution order
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (module[i]) {
      group[i] = groupOf(*module[i]);
      named.push_back(int(i));
    }
  if (g.groups.empty()) return;
  auto common = [&](int a, int b) {
    for (int x = a; x >= 0; x = g.groups[x].parent)
      for (int y = b; y >= 0; y = g.groups[y].parent)
        if (x == y) return x;
    return -1;
  };
  auto inside = [&](int x, int grp) {
    for (; x >= 0; x = g.groups[x].parent)
      if (x == grp) return true;
    return grp < 0;
  };
  std::vector<std::vector<int>> producers(g.nodes.size());
  for (const GraphEdge& e : g.edges) producers[e.to].push_back(e.from);
  // The others: between two named readers of one group, in it. Between two
  // groups (a layer's end), where the producers of their arguments are, as
  // far as those lie in the group holding both (through removed views).
  for (size_t k = 0; k <= named.size(); ++k) {
    const int from = k ? named[k - 1] + 1 : 0, to = k < named.size() ? named[k] : int(m.nodes.size());
    const int before = k ? group[named[k - 1]] : -1, after = k < named.size() ? group[named[k]] : -1;
    const int both = common(before, after);
    for (int i = from; i < to; ++i) {
      if (before == after) {
        group[i] = before;
        continue;
      }
      int joined = -2;  // no producer in a group yet
      std::vector<int> in = producers[g.nodeOfMethodNode[i]];
      for (size_t j = 0; j < in.size(); ++j) {
        const GraphNode& p = g.nodes[in[j]];
        if (p.kind == VisualKind::View && p.node < 0) in.insert(in.end(), producers[in[j]].begin(), producers[in[j]].end());
        if (p.node < 0 || p.delegateCall >= 0 || group[p.node] < 0 || !inside(group[p.node], both)) continue;
        joined = joined == -2 ? group[p.node] : common(joined, group[p.node]);
      }
      group[i] = joined == -2 ? both : joined;
    }
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    GraphNode& n = g.nodes[g.nodeOfMethodNode[i]];
    if (n.group >= 0 && g.groups[n.group].delegate) g.groups[n.group].parent = group[i];  // a delegate's group moves in whole
    else n.group = group[i];
  }
  putParentsFirst(g);
}

// Top-level method nodes in execution order, and how to move one into a group.
std::vector<int> topLevelNodes(const GraphModel& g, const Method& m) {
  std::vector<int> top;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[g.nodeOfMethodNode[i]];
    if (n.group < 0 || (g.groups[n.group].delegate && g.groups[n.group].parent < 0)) top.push_back(int(i));
  }
  return top;
}
void moveInto(GraphModel& g, int methodNode, int group) {
  GraphNode& n = g.nodes[g.nodeOfMethodNode[methodNode]];
  if (n.group < 0) n.group = group;
  else g.groups[n.group].parent = group;  // a delegate's group moves in whole
}

// A big flat program with nothing named (a .pte's constants carry no names)
// still shows its layers: the longest run of one operator sequence repeated
// back to back (a decoder layer, 32 times) becomes groups "block.0", "block.1", …
void groupByRepetition(GraphModel& g, const Method& m, size_t bigGraph) {
  const std::vector<int> top = topLevelNodes(g, m);
  if (top.size() <= bigGraph) return;
  std::map<std::string, int> ids;
  std::vector<int> ops;
  for (int i : top) ops.push_back(ids.emplace(g.nodes[g.nodeOfMethodNode[i]].title, int(ids.size())).first->second);
  // For each period: the longest stretch where every operator equals the one a period later.
  constexpr size_t kMinPeriod = 8, kMinRepeats = 3;
  size_t bestStart = 0, bestPeriod = 0, bestRepeats = 0;
  for (size_t period = kMinPeriod; period * kMinRepeats <= ops.size(); ++period) {
    for (size_t i = 0, run = 0; i + period < ops.size(); ++i) {
      run = ops[i] == ops[i + period] ? run + 1 : 0;
      const size_t repeats = run / period + 1;
      if (repeats >= kMinRepeats && repeats * period > bestRepeats * bestPeriod)
        bestStart = i + 1 - run, bestPeriod = period, bestRepeats = repeats;
    }
  }
  if (bestRepeats * bestPeriod * 2 < ops.size()) return;  // not what the program is made of
  for (size_t k = 0; k < bestRepeats; ++k) {
    GraphGroup b;
    b.path = "block." + std::to_string(k);
    b.type = "repeated operators";
    g.groups.push_back(b);
    for (size_t j = 0; j < bestPeriod; ++j) moveInto(g, top[bestStart + k * bestPeriod + j], int(g.groups.size()) - 1);
  }
}

// Flat programs (a .pte has no module stack) still need folding on big
// graphs: runs of consecutive top-level nodes become synthetic groups.
void foldIntoExecutionChunks(GraphModel& g, const Method& m) {
  constexpr size_t kChunk = 150;
  const std::vector<int> top = topLevelNodes(g, m);
  if (top.size() <= 2 * kChunk) return;
  for (size_t k = 0; k < top.size(); ++k) {
    if (k % kChunk == 0) {
      GraphGroup c;
      c.path = "nodes " + std::to_string(top[k]);
      c.type = "execution order";
      g.groups.push_back(c);
    }
    moveInto(g, top[k], int(g.groups.size()) - 1);
  }
  putParentsFirst(g);  // the chunks came last
}

// Weights and constants live with their users: the innermost group that
// holds every consumer, so a collapsed layer carries its own parameters.
void placeWeightsWithUsers(GraphModel& g, const std::vector<std::vector<int>>& consumers) {
  auto chain = [&](int grp) {
    std::vector<int> c;
    for (; grp >= 0; grp = g.groups[grp].parent) c.push_back(grp);
    std::reverse(c.begin(), c.end());
    return c;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode& n = g.nodes[i];
    if (!isWeight(n) || consumers[i].empty()) continue;
    if (n.host >= 0) {  // drawn in its host's box: selecting it opens the host's groups
      n.group = g.nodes[n.host].group;
      continue;
    }
    // A buffer the program mutates is also returned (an edge into the outputs marker): that
    // is not where it is used, else every layer's caches sit in one row above the layers.
    std::vector<int> readers;
    for (int c : consumers[i])
      if (g.nodes[c].kind != VisualKind::Output) readers.push_back(c);
    if (readers.empty()) readers = consumers[i];
    std::vector<int> common = chain(g.nodes[readers[0]].group);
    for (size_t k = 1; k < readers.size() && !common.empty(); ++k) {
      std::vector<int> other = chain(g.nodes[readers[k]].group);
      size_t j = 0;
      while (j < common.size() && j < other.size() && common[j] == other[j]) ++j;
      common.resize(j);
    }
    n.group = common.empty() ? -1 : common.back();
  }
}

// Unused weights (BatchNorm's num_batches_tracked) go to the module their name says.
void placeUnusedWeightsByName(GraphModel& g, const std::vector<std::vector<int>>& consumers) {
  std::map<std::string, int> byPath;
  for (size_t i = 0; i < g.groups.size(); ++i) byPath.emplace(g.groups[i].path, int(i));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode& n = g.nodes[i];
    if (!isWeight(n) || !consumers[i].empty()) continue;
    for (size_t dot = n.title.rfind('.'); dot != std::string::npos && dot > 0; dot = n.title.rfind('.', dot - 1)) {
      auto it = byPath.find(n.title.substr(0, dot));
      if (it != byPath.end()) {
        n.group = it->second;
        break;
      }
    }
  }
}

void placeWeights(GraphModel& g) {
  std::vector<std::vector<int>> consumers(g.nodes.size());
  for (const GraphEdge& e : g.edges) consumers[e.from].push_back(e.to);
  placeWeightsWithUsers(g, consumers);
  placeUnusedWeightsByName(g, consumers);
}

// A program with many inputs (static attention: every layer's caches come in
// as inputs, 128 of them) would open onto one wide row of them above its
// folded layers. An input read only inside one group goes into that group
// (the innermost holding all its readers), so it folds with it and shows
// beside its readers when the group is opened; inputs read at the top level
// or by several groups stay where they were.
void placeInputsWithUsers(GraphModel& g) {
  constexpr size_t kManyInputs = 16;
  std::vector<int> inputs;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == VisualKind::Input && g.nodes[i].node < 0 && g.nodes[i].group < 0) inputs.push_back(int(i));
  if (inputs.size() <= kManyInputs) return;
  std::vector<int> common(g.nodes.size(), -2);  // -2: no reader yet
  auto meet = [&](int a, int b) {
    for (int x = a; x >= 0; x = g.groups[x].parent)
      for (int y = b; y >= 0; y = g.groups[y].parent)
        if (x == y) return x;
    return -1;
  };
  for (const GraphEdge& e : g.edges) {
    int& c = common[e.from];
    const int reader = g.nodes[e.to].group;
    c = c == -2 ? reader : c < 0 ? -1 : meet(c, reader);
  }
  for (int i : inputs) {
    int c = common[i];
    while (c >= 0 && g.groups[c].delegate) c = g.groups[c].parent;  // never inside a delegate's payload
    if (c >= 0) g.nodes[i].group = c;
  }
}

// The same for the caches' write-backs at a program's end (a copy_ into each
// layer's buffers, 64 for 32 layers), drawn as one wide row below the folded
// layers with a long edge each: an operator at the top level that nothing
// but the outputs reads, and whose arguments come from one group (its
// constants aside), goes into that group.
void placeWriteBacksWithProducers(GraphModel& g) {
  constexpr size_t kMany = 16;
  auto meet = [&](int a, int b) {
    for (int x = a; x >= 0; x = g.groups[x].parent)
      for (int y = b; y >= 0; y = g.groups[y].parent)
        if (x == y) return x;
    return -1;
  };
  std::vector<std::vector<int>> producers(g.nodes.size());
  std::vector<char> read(g.nodes.size(), 0);
  for (const GraphEdge& e : g.edges) {
    producers[e.to].push_back(e.from);
    if (g.nodes[e.to].kind != VisualKind::Output) read[e.from] = 1;
  }
  std::vector<std::pair<int, int>> moves;  // node, group
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    if (n.node < 0 || n.group >= 0 || read[i] || n.kind == VisualKind::Delegate) continue;
    int common = -2;
    std::vector<int> in = producers[i];
    for (size_t k = 0; k < in.size() && common != -1; ++k) {
      const GraphNode& p = g.nodes[in[k]];
      if (p.node < 0 && p.kind == VisualKind::View && p.group < 0) {  // a removed view: where its base comes from
        in.insert(in.end(), producers[in[k]].begin(), producers[in[k]].end());
        continue;
      }
      if (isWeight(p) || p.kind == VisualKind::Input) continue;
      common = common == -2 ? p.group : p.group < 0 ? -1 : meet(common, p.group);
    }
    while (common >= 0 && g.groups[common].delegate) common = g.groups[common].parent;
    if (common >= 0) moves.push_back({int(i), common});
  }
  if (moves.size() <= kMany) return;
  std::vector<int> moved(g.nodes.size(), -1);
  for (auto [i, grp] : moves) g.nodes[i].group = moved[i] = grp;
  for (GraphNode& n : g.nodes)  // its constants, and the removed views only it reads, go with it
    if (n.host >= 0 && moved[n.host] >= 0) n.group = moved[n.host];
  std::vector<int> to(g.nodes.size(), -2);
  for (const GraphEdge& e : g.edges)
    to[e.from] = to[e.from] == -2 && moved[e.to] >= 0 ? moved[e.to] : -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode& v = g.nodes[i];
    if (v.node < 0 && v.kind == VisualKind::View && v.group < 0 && to[i] >= 0) v.group = to[i];
  }
}

// The last of a run of identical layers often runs more than the others:
// what comes after it (the final norm, the last token's selection) is pulled
// into it when a .pte is grouped by the names of its constants, where each
// other layer's tail is the next layer's start. When it runs the same
// operators as its siblings up to where its own differ, only the rest goes
// out of it (to its parent), and it joins the family. False (nothing moved)
// when it differs early, or the rest holds a delegate.
bool trimLastMember(GraphModel& g, const std::vector<std::vector<int>>& inside, int member, int like) {
  const std::vector<int>& mine = inside[member];
  const std::vector<int>& theirs = inside[like];
  size_t same = 0;
  while (same < mine.size() && same < theirs.size() && g.nodes[mine[same]].title == g.nodes[theirs[same]].title) ++same;
  if (same == mine.size() || same * 10 < theirs.size() * 9 || mine.size() - same > theirs.size() / 4) return false;
  for (size_t k = same; k < mine.size(); ++k)
    if (g.nodes[mine[k]].delegateCall >= 0 || (g.nodes[mine[k]].group >= 0 && g.groups[g.nodes[mine[k]].group].delegate)) return false;
  const int parent = g.groups[member].parent;
  std::vector<char> moved(g.nodes.size(), 0);
  for (size_t k = same; k < mine.size(); ++k) {
    moved[mine[k]] = 1;
    g.nodes[mine[k]].group = parent;
  }
  // What is drawn with a moved operator moves with it: its constants, the removed views it reads.
  for (GraphNode& n : g.nodes)
    if (n.host >= 0 && moved[n.host]) n.group = parent;
  for (const GraphEdge& e : g.edges)
    if (moved[e.to] && g.nodes[e.from].kind == VisualKind::View && g.nodes[e.from].node < 0 && g.inGroup(e.from, member))
      g.nodes[e.from].group = parent;
  return true;
}

// Sibling groups doing the same thing (layers.0 … layers.31) read as one
// family: a run of at least three consecutive indices whose groups hold the
// same operator sequence gets a parent group, "layers.0-31", shown as one box.
void foldRepeatedSiblings(GraphModel& g) {
  constexpr size_t kMinRun = 3;
  std::vector<std::vector<int>> inside(g.groups.size());  // per group: the operators inside (graph nodes), in order
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].node >= 0 || g.nodes[i].delegateCall >= 0)
      for (int grp = g.nodes[i].group; grp >= 0; grp = g.groups[grp].parent) inside[grp].push_back(int(i));
  std::vector<std::string> ops(g.groups.size());  // per group: the operators inside, as one string
  for (size_t grp = 0; grp < g.groups.size(); ++grp)
    for (int i : inside[grp]) ops[grp] += g.nodes[i].title + ";";
  // Siblings "<prefix>.<index>" by parent and prefix, ordered by index.
  std::map<std::pair<int, std::string>, std::map<long, int>> families;
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const std::string& p = g.groups[i].path;
    size_t dot = p.rfind('.');
    if (dot == std::string::npos || g.groups[i].delegate || !isIndex(std::string_view(p).substr(dot + 1)) || p.size() - dot > 9) continue;
    families[{g.groups[i].parent, p.substr(0, dot)}][std::stol(p.substr(dot + 1))] = int(i);
  }
  const size_t before = g.groups.size();
  for (const auto& family : families) {
    const auto& key = family.first;  // not a structured binding: clang 14 cannot capture one
    const auto& members = family.second;
    std::vector<std::pair<long, int>> run;
    auto close = [&] {
      if (run.size() >= kMinRun) {
        GraphGroup f;
        f.path = key.second + "." + std::to_string(run.front().first) + "-" + std::to_string(run.back().first);
        const std::string& type = g.groups[run.front().second].type;
        f.type = "×" + std::to_string(run.size()) + (type.empty() ? "" : " " + type);
        f.parent = key.first;
        f.repeat = int(run.size());
        g.groups.push_back(f);
        for (const auto& r : run) g.groups[r.second].parent = int(g.groups.size()) - 1;
      }
      run.clear();
    };
    for (const auto& [index, grp] : members) {
      const bool next = !run.empty() && index == run.back().first + 1;
      if (!run.empty() && (!next || ops[grp] != ops[run.back().second])) {
        const bool last = index == members.rbegin()->first;
        if (!(next && last && run.size() + 1 >= kMinRun && trimLastMember(g, inside, grp, run.back().second))) close();
      }
      run.push_back({index, grp});
    }
    close();
  }
  if (g.groups.size() > before) putParentsFirst(g);
}

void countNodesPerGroup(GraphModel& g) {
  for (const GraphNode& n : g.nodes)
    if (n.host < 0)
      for (int grp = n.group; grp >= 0; grp = g.groups[grp].parent) ++g.groups[grp].nodeCount;
}

}  // namespace

void arrangeGroups(GraphModel& g, const Method& m) {
  hostWeights(g);
  groupByConstantNames(g, m);
  groupByRepetition(g, m, 300);
  foldIntoExecutionChunks(g, m);
  placeRemovedViews(g);
  placeInputsWithUsers(g);
  placeWriteBacksWithProducers(g);  // before the weights: a buffer goes where its write-back went
  placeWeights(g);
  foldRepeatedSiblings(g);
  countNodesPerGroup(g);
}

}  // namespace lstudio::ui
