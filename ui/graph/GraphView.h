// The studio's graph: one method of a program as a laid-out data-flow graph.
// Layouts run with Graphviz on the layout thread (ui/graph/GraphLayout.h) and come
// back as plain data; the GUI thread only folds the model, draws and never
// waits. Module groups collapse into single boxes so that a 32-layer
// transformer shows at once and each layer is laid out when opened.
#pragma once

#include <QElapsedTimer>
#include <QStringList>
#include <QPointF>
#include <QRectF>
#include <QWidget>
#include <atomic>
#include <cstdint>
#include <memory>
#include <map>
#include <vector>

#include "engine/ir/Ir.h"
#include "ui/graph/GraphModel.h"

class QGraphicsScene;
class QGraphicsView;
class QLabel;

namespace lstudio::ui {

/// Removed marks a node of the earlier pane in compare mode that the pass took out.
enum class NodeMark : uint8_t { None, Added, Modified, Removed };

class GraphCanvas;
class GraphMinimap;
class GraphItem;
class GraphEdgeItem;
class GraphClusterItem;
struct LayoutResult;

class GraphView : public QWidget {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;

  /// Shows method `methodIndex` of `program`; `marks` is empty or one entry per node (diff of the last pass).
  void setGraph(std::shared_ptr<const Program> program, int methodIndex, std::vector<NodeMark> marks = {},
                bool keepPlace = false);
  void clear();
  /// Stripes on the boxes: one colour per node of the shown method (invalid: none); empty
  /// clears them. Kept until the next setGraph.
  void setNodeTints(std::vector<QColor> tints);
  int tintedItemCount() const;  ///< boxes drawn with a stripe
  /// Expands its groups if collapsed (closing those the previous selection opened), centers it; emits nothing.
  void selectNode(int nodeIndex);
  /// Like selectNode, for a find hit: the groups opened to show it close again
  /// when the next find hit lies elsewhere (each F3 must not leave more open).
  void revealFindHit(int nodeIndex);
  void selectValue(int valueId);                  // the node producing it, or its placeholder
  bool selectNodeByName(const QString& name);     // for synchronized before/after views
  int selectedNode() const;                       // -1 when none / a placeholder is selected
  bool find(const QString& text, bool backwards = false);  // next/previous match; false when none
                                                  // (keys: F3 / Shift+F3 repeat the last text)
  void fitToView();
  void zoomBy(double factor);
  bool layoutPending() const;                     // tests wait on this
  bool showsPreviousGraph() const { return stale_; }  ///< the old picture, dimmed, until the layout arrives

  // Groups, by module path ("layers.3") or delegate ("delegate 0").
  bool setGroupCollapsed(const QString& path, bool collapsed);
  bool isGroupCollapsed(const QString& path) const;
  /// Expands or collapses the group under the selection (keyboard: Return / Shift+Return).
  void toggleSelectedGroup();

  // What is on screen, for tests and the window.
  const GraphModel* model() const { return model_.get(); }
  int visibleItemCount() const;       ///< nodes plus collapsed group boxes drawn
  int visibleEdgeCount() const;
  int visibleGroupBoxCount() const;   ///< collapsed groups drawn as one box
  int markedItemCount() const;        ///< items drawn with an added/modified mark
  /// Where graph node `n` (GraphModel index) or its group box is drawn, in viewport coordinates
  /// (a constant: its line inside its reader's box); null when not shown.
  QPoint viewportPosOfNode(int graphNode) const;
  QPoint viewportPosOfMethodNode(int nodeIndex) const;
  QPoint viewportPosOfGroup(const QString& path) const;
  QGraphicsView* canvas() const;
  QWidget* minimap() const;
  double zoom() const;

  // Compare mode (two panes side by side).
  /// A title above the canvas (which snapshot the pane shows); empty hides it.
  void setTitle(const QString& title);
  QString title() const;
  /// A smaller overview, so that it does not hide a quarter of a narrow pane.
  void setCompactMinimap(bool compact);
  /// Paths of the open groups (those a big graph starts with closed included).
  QStringList expandedGroups() const;
  /// Opens these groups (by path) now, or once the model of the graph being read is built;
  /// those also in `revealed` are the next selection's to close (see revealedGroups).
  void setExpandedGroups(const QStringList& paths, const QStringList& revealed = {});
  /// Paths of the groups the last selection or find hit opened to show its node.
  QStringList revealedGroups() const;
  /// Follows `other`'s navigation: the same zoom, and the named node (or group) nearest
  /// the other's centre at the same place here when this pane draws it; else the same
  /// relative scroll. Emits nothing.
  void followView(const GraphView& other);
  /// Per group path: the marked nodes inside it (added, modified or removed), for tooltips.
  QString groupChangeSummary(const QString& path) const;

 signals:
  void nodeSelected(int nodeIndex);               // user clicked a node
  void valueSelected(int valueId);                // user clicked a placeholder (input value)
  void layoutFinished(qint64 milliseconds);       // a layout was applied
  void viewMoved();                               // scrolled or zoomed (not by followView)
  void groupToggled(const QString& path, bool collapsed);  // a group opened or closed by the user

 protected:
  void resizeEvent(QResizeEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;

 private:
  friend class GraphCanvas;
  friend class GraphMinimap;
  /// Drops the model and everything drawn from it but the scene's items (see stale_).
  void forgetGraph();
  void requestLayout();
  void applyLayout(uint64_t serial, const LayoutResult& result, qint64 elapsedMs);
  void addClusterFrames(const LayoutResult& r);
  void addBoxes(const LayoutResult& r);
  GraphItem* nodeBox(int graphNode, const QRectF& rect) const;
  GraphItem* collapsedGroupBox(int item, const QRectF& rect) const;
  struct GroupPartitions {
    std::map<std::string, int> byTag;  ///< operators per partition tag
    int leftOut = 0;                   ///< operators a partitioner left out
  };
  /// Per group of the model (empty when no partitioner ran on the shown method).
  std::vector<GroupPartitions> groupPartitions() const;
  void addEdges(const LayoutResult& r);
  void placeViewAfterLayout(QPointF oldCenter);
  double startColumn(double width, double height) const;
  void queueMinimapRebuild();
  /// `weight`: the constant whose line inside the item's box was clicked, or -1.
  void clickedItem(int item, bool doubleClick, int weight = -1);
  /// The Method node that calls the delegate whose payload `group` draws; -1 for other groups.
  int delegateCallOfGroup(int group) const;
  void setSelectedItem(int item, bool center);
  void revealNode(int graphNode, bool findHit = false);  // expands groups above it
  /// Closes what the last reveal (find hit or selection) opened, but the groups above
  /// `graphNode`; true if any closed.
  bool closeRevealedGroups(int graphNode);
  void updateHighlight();
  void placeMinimap();
  void showBusy(const QString& text);
  void refreshMinimap();
  int itemForNode(int graphNode) const;
  bool matches(int graphNode, const QString& text) const;
  void emitViewMoved();
  void elideTitle();
  /// The item drawing the node named `key` (or the group "group:<path>"), or null.
  GraphItem* itemForKey(const QString& key) const;
  QString keyOfItem(int item) const;
  int itemForKeyIndex(const QString& key) const;  ///< the item id of itemForKey, or -1

  GraphCanvas* view_ = nullptr;
  QGraphicsScene* scene_ = nullptr;
  GraphMinimap* minimap_ = nullptr;
  QLabel* busy_ = nullptr;
  QLabel* title_ = nullptr;
  QString fullTitle_;
  QString anchor_;  ///< the node (or group) followView last kept at the same place as the other pane's
  bool quietView_ = false;       ///< no viewMoved while a layout is placed or followView moves
  QStringList expandOnModel_;    ///< groups to open once the model arrives
  /// Per group: up to kGroupChangeList marked method nodes inside, and how many in all.
  std::vector<std::vector<int>> groupChanged_;
  std::vector<int> groupChangedCount_;

  std::shared_ptr<const Program> program_;
  int methodIndex_ = -1;
  std::shared_ptr<const GraphModel> model_;
  std::vector<NodeMark> marks_;
  std::vector<char> collapsed_;
  /// Groups the last selection or find hit opened to reveal its node (closed by the next one
  /// that has to open groups); groups the user opens are not in it.
  std::vector<int> openedByReveal_;
  QStringList revealedBefore_;  ///< paths openedByReveal_ held in the previous graph (see setGraph)
  std::vector<int> groupMarks_;  ///< per group: 1 added, 2 modified inside

  // The layout on screen.
  std::shared_ptr<const VisibleGraph> shown_;
  std::vector<GraphItem*> items_;            ///< by item id (null when not drawn)
  std::vector<QColor> tints_;                ///< per method node (setNodeTints)
  std::vector<GraphClusterItem*> clusters_;  ///< by group
  std::vector<GraphEdgeItem*> edges_;
  bool firstLayout_ = true;
  /// The scene still holds the previous graph's items (drawn dimmed, not clickable)
  /// while the new one is read and laid out; items_ and the rest no longer point to them.
  bool stale_ = false;
  int focusGroup_ = -1;  ///< group just opened: keep it in view

  uint64_t serial_ = 0;
  /// Shared with queued layout jobs so that stale ones skip Graphviz.
  std::shared_ptr<std::atomic<uint64_t>> latest_ = std::make_shared<std::atomic<uint64_t>>(0);
  bool pending_ = false;
  bool minimapQueued_ = false;  ///< an overview rebuild is posted
  int selectedItem_ = -1;
  int selectedGraphNode_ = -1;
  int pendingCenter_ = -1;  ///< graph node to center once its layout arrives
  int findPos_ = -1;
  QString lastFind_;
  int pendingSelect_ = -1;  ///< method node to select once the model is built
  QElapsedTimer clock_;     ///< since setGraph (first layout) or the newest layout request
};

}  // namespace lstudio::ui
