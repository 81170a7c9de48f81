// Graphviz `dot` layout as a pure function from plain data to plain data.
// Graphviz keeps global state and is not thread-safe, so every call goes
// through layoutPool(): one process-wide pool with a single thread.
#pragma once

#include <string>
#include <vector>

class QThreadPool;

namespace lstudio::ui {

struct LayoutRequest {
  struct Item {
    int id = -1;
    double width = 0, height = 0;  ///< points
    int cluster = -1;              ///< index into clusters, -1 at the top level
  };
  struct Cluster {
    int id = -1;                   ///< the caller's group id
    int parent = -1;               ///< index into clusters
    std::string label;             ///< title; Graphviz reserves room for it at the top
    double fontSize = 11;
  };
  struct Edge {
    int from = -1, to = -1;  ///< indices into items
    /// May stay on the consumer's rank (minlen 0): weights sit beside their
    /// user instead of reaching up into the rank of the previous module.
    bool sameRank = false;
  };
  std::vector<Item> items;
  std::vector<Cluster> clusters;  ///< parents before children
  std::vector<Edge> edges;
};

struct LayoutResult {
  struct Box {
    double x = 0, y = 0, width = 0, height = 0;  ///< top-left, y down
  };
  bool ok = false;
  std::string error;
  double width = 0, height = 0;
  std::vector<Box> items;     ///< per request item
  std::vector<Box> clusters;  ///< per request cluster
  /// Per request edge: cubic Bezier points (1 + 3k), y down; the arrow tip
  /// last when Graphviz drew one (then `arrow[e]` is true).
  std::vector<std::vector<double>> edgePoints;  ///< x0, y0, x1, y1, ...
  std::vector<char> arrow;
  double milliseconds = 0;
};

/// Runs `dot` on the request. Call only on layoutPool()'s thread.
LayoutResult runLayout(const LayoutRequest& request);

/// The single thread all Graphviz calls run on.
QThreadPool* layoutPool();

}  // namespace lstudio::ui
