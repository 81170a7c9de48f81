// What the graph view draws, as plain data: one box per node of a method,
// placeholders for its inputs and constants, an outputs marker, producer ->
// consumer edges, and the module hierarchy as groups: from nn_module_stack,
// or for a flat program (a .pte) from the names of the constants it reads.
// Weights and constants are drawn as lines inside the box of the operator
// reading them, not as boxes of their own; runs of identical sibling groups
// (layers.0 … layers.31) fold into one family box.
// Built once per setGraph; which groups are collapsed is the view's state,
// and visibleGraph() folds the model down to what one layout has to place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"

namespace lstudio::ui {

enum class VisualKind : uint8_t { Compute, View, Memory, Delegate, Input, Parameter, Constant, Output };
const char* visualKindName(VisualKind k);

struct GraphNode {
  VisualKind kind = VisualKind::Compute;
  int node = -1;             ///< index into Method::nodes; -1 for placeholders and the outputs marker
  ValueId value = kNoValue;  ///< placeholders: the input or constant value
  int group = -1;            ///< innermost group, -1 at the top level
  std::string title;         ///< "addmm.out", "layers.0.attention.wq.weight"
  std::string subtitle;      ///< "float32[4, 256]"
  std::string name;          ///< graph name of the node or value
  std::string target;        ///< operator as the source spelled it
  /// A node of a delegate's decoded payload (an XNNPACK operator): the
  /// Method node that calls the delegate; -1 for every other node.
  int delegateCall = -1;
  /// A weight, buffer or constant drawn as a line inside its first reader's
  /// box (that GraphNode's index), not as a box of its own; -1 otherwise.
  int host = -1;
  /// The constants drawn as lines inside this box (GraphNode indices), in argument order.
  std::vector<int> weights;
};

struct GraphEdge {
  int from = -1, to = -1;    ///< GraphNode indices
  ValueId value = kNoValue;  ///< the value flowing along the edge
  bool sideEffect = false;   ///< into the outputs marker for a mutated buffer, not a user output
};

struct GraphModel;

struct GraphGroup {
  std::string path;   ///< "layers.3"; delegates: "delegate 0"
  std::string type;   ///< short class name ("TransformerBlock") or backend id
  int parent = -1;
  bool delegate = false;
  /// A family: this many structurally identical sibling groups (its children), else 0.
  int repeat = 0;
  int nodeCount = 0;  ///< graph nodes inside, nested groups included
  std::string label() const;  ///< "layers.3 (TransformerBlock, 112 nodes)"
  /// The path below the parent group's ("attention.wq" inside "layers.3").
  std::string shortPath(const GraphModel& m) const;
};

struct GraphModel {
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
  std::vector<GraphGroup> groups;  ///< parents before children
  std::vector<int> nodeOfMethodNode;  ///< Method::nodes index -> GraphNode index
  std::vector<int> nodeOfValue;       ///< ValueId -> producing GraphNode, or -1

  static GraphModel build(const Method& m);
  /// The title to draw: a weight inside a module's group drops that module's path.
  std::string displayTitle(int n) const;
  /// True when node `n` lies inside group `g` (at any depth).
  bool inGroup(int n, int g) const;
};

/// The model folded by a collapsed set. Item ids: GraphNode index for a node
/// shown on its own, nodes.size() + group index for a collapsed group's box.
struct VisibleGraph {
  struct Edge {
    int from = -1, to = -1;  ///< item ids
    ValueId value = kNoValue;
    int count = 1;           ///< model edges merged into this one
    /// Not laid out: one end fans out to (or in from) many items, e.g. a rope
    /// table read by every layer; drawn only while an end is selected.
    bool bundled = false;
  };
  std::vector<int> itemOfNode;  ///< GraphNode -> item id showing it
  std::vector<int> items;       ///< item ids in a stable order
  std::vector<Edge> edges;
  std::vector<int> clusters;    ///< expanded groups with something visible inside
  int itemGroup(const GraphModel& m, int item) const;  ///< group the item is drawn in, -1 at top
};

/// Edges from an item with more than `fanout` visible targets are bundled.
VisibleGraph visibleGraph(const GraphModel& m, const std::vector<char>& collapsed, size_t fanout = 8);

/// Which groups start collapsed: none on small graphs; on big ones all, then
/// the largest are opened while the view stays small (a single wrapper module,
/// never a family of repeated layers: it is what keeps a deep model on one screen).
/// A delegate whose payload was decoded starts closed on any graph: it opens
/// into its operators on demand.
std::vector<char> initialCollapsed(const GraphModel& m, size_t bigGraph = 300);

}  // namespace lstudio::ui
