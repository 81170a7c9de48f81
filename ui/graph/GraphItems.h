// What GraphView draws with: the boxes, group frames and edges of a laid-out
// graph (QGraphicsItems), the canvas they are drawn on, and the overview
// minimap; plus the label widths and box heights the layout requests use.
#pragma once

#include <QColor>
#include <QGraphicsItem>
#include <QGraphicsView>
#include <QImage>
#include <QPainterPath>
#include <QPolygonF>
#include <QRectF>
#include <QSizeF>
#include <QStringList>
#include <QString>
#include <QWidget>
#include <string>
#include <vector>

#include "ui/graph/GraphModel.h"
#include "ui/graph/GraphView.h"

namespace lstudio::ui {

constexpr double kNodeHeight = 36, kGroupHeight = 44;
/// A constant drawn inside its reader's box: one line each, at most kMaxWeightLines.
constexpr double kWeightLineHeight = 13;
constexpr size_t kMaxWeightLines = 4;

struct Palette {
  QColor fill, border;
};
/// A box's fill and border, by what its node does.
Palette paletteFor(VisualKind k);
/// A partition's colour by its tag ("tag0", "tag3"): distinct hues for neighbouring ids.
QColor partitionColor(const std::string& tag);

enum LabelFont { kTitleFont, kGroupFont, kSubtitleFont };
/// Width of `text` drawn in one of the three label fonts (cached: labels repeat a lot).
double labelWidth(LabelFont font, const std::string& text);

/// The lines a box draws for the constants its operator reads ("wq.weight  float32[256, 256]"):
/// at most kMaxWeightLines, the last then counting the rest. `nodes` gets each line's
/// constant (GraphNode index), -1 for that count.
std::vector<std::string> weightLines(const GraphModel& m, int graphNode, std::vector<int>* nodes = nullptr);
/// A node box's size for the layout: its title, subtitle and constant lines.
QSizeF nodeBoxSize(const GraphModel& m, int graphNode);

// One box: a node, a placeholder, the outputs marker, or a collapsed group.
class GraphItem : public QGraphicsItem {
 public:
  GraphItem(int id, QRectF rect, Palette palette, QString title, QString subtitle, bool group, bool dashed);
  int id() const { return id_; }
  bool isGroup() const { return group_; }
  void setSelected(bool s) {
    if (s != selected_) { selected_ = s; update(); }
  }
  void setMark(NodeMark m) { mark_ = m; }
  /// A stripe down the box's left edge (the values of a run: magnitude or difference); invalid: none.
  void setTint(QColor c) {
    if (c != tint_) { tint_ = c; update(); }
  }
  QColor tint() const { return tint_; }
  /// The partition that takes the node (a band inside the right edge); invalid: none.
  void setPartitionColor(QColor c) { partition_ = c; }
  QColor partitionColor() const { return partition_; }
  NodeMark mark() const { return mark_; }
  /// Lines for the constants the operator reads, each with its GraphNode (-1: not selectable).
  void setLines(QStringList lines, std::vector<int> lineNodes);
  /// The constant of the line at `scenePos`, or -1.
  int lineAt(QPointF scenePos) const;
  /// Highlights the line of this constant (GraphNode index; -1: none).
  void setSelectedLine(int graphNode);
  /// Where the line of this constant is drawn, in scene coordinates; null when the box has none.
  QRectF lineRect(int graphNode) const;
  QRectF boundingRect() const override { return rect_.adjusted(-4, -4, group_ ? 8 : 4, group_ ? 8 : 4); }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) override;

 private:
  void paintLines(QPainter* p);
  QRectF line(int k) const;  ///< the k-th constant line, item coordinates

  int id_;
  QRectF rect_;
  Palette palette_;
  QString title_, subtitle_;
  bool group_, dashed_;
  QStringList lines_;
  std::vector<int> lineNodes_;
  int selectedLine_ = -1;  ///< index into lines_
  bool selected_ = false;
  NodeMark mark_ = NodeMark::None;
  QColor tint_;
  QColor partition_;
};

// An expanded group: a frame with its title; double-click folds it.
class GraphClusterItem : public QGraphicsItem {
 public:
  GraphClusterItem(int group, QRectF rect, QString title, int depth, bool delegate)
      : group_(group), rect_(rect), title_(std::move(title)), depth_(depth), delegate_(delegate) {
    setZValue(-100 + depth);
  }
  int group() const { return group_; }
  QRectF boundingRect() const override { return rect_.adjusted(-1, -1, 1, 1); }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) override;

 private:
  int group_;
  QRectF rect_;
  QString title_;
  int depth_;
  bool delegate_;
};

// A producer -> consumer edge; hover shows what flows along it.
class GraphEdgeItem : public QGraphicsItem {
 public:
  GraphEdgeItem(int from, int to, QPainterPath path, QPolygonF arrow, bool bundled);
  int from() const { return from_; }
  int to() const { return to_; }
  bool bundled() const { return bundled_; }
  void setHighlighted(bool h) {
    if (bundled_) setVisible(h);
    if (h != highlighted_) { highlighted_ = h; setZValue(h ? 3 : 0); update(); }
  }
  QRectF boundingRect() const override { return bounds_; }
  QPainterPath shape() const override { return shape_; }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) override;

 protected:
  void hoverEnterEvent(QGraphicsSceneHoverEvent*) override { hovered_ = true; update(); }
  void hoverLeaveEvent(QGraphicsSceneHoverEvent*) override { hovered_ = false; update(); }

 private:
  int from_, to_;
  QPainterPath path_, shape_;
  QPolygonF arrow_;
  QRectF bounds_;
  bool bundled_;
  bool highlighted_ = false, hovered_ = false;
};

// The main drawing surface: wheel zoom, drag pan, clicks go to the view.
class GraphCanvas : public QGraphicsView {
 public:
  GraphCanvas(GraphView* owner, QGraphicsScene* scene);
  void zoomBy(double factor);

 protected:
  void wheelEvent(QWheelEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void scrollContentsBy(int dx, int dy) override;
  void drawForeground(QPainter* p, const QRectF& rect) override;

 private:
  template <typename T>
  T* itemUnder(const QPoint& pos) const;

  GraphView* owner_;
};

// A small overview of the whole graph with the visible part framed; click or drag to move there.
class GraphMinimap : public QWidget {
 public:
  explicit GraphMinimap(GraphView* owner);
  /// Renders the whole scene anew (after a layout).
  void rebuild();

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;

 private:
  QRectF fitted(const QRectF& sr) const;
  QPointF toScene(QPointF p) const;

  GraphView* owner_;
  QImage image_;
  QRectF target_;
};

}  // namespace lstudio::ui
