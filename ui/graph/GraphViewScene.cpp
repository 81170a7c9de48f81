// GraphView: the scene built from a finished layout (cluster frames, boxes, edges) and where
// the view lands on it.
#include "ui/graph/GraphView.h"

#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QLabel>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "ui/graph/GraphItems.h"
#include "ui/graph/GraphLayout.h"

namespace lstudio::ui {

namespace {

// Three points of an arrowhead from `base` to `tip`.
QPolygonF arrowHead(QPointF base, QPointF tip) {
  QPointF d = tip - base, nrm(-d.y() * 0.45, d.x() * 0.45);
  QPolygonF arrow;
  arrow << tip << base + nrm << base - nrm;
  return arrow;
}

// A bundled edge (not laid out) is a straight line from the bottom of one box
// to the top of the other; false when the boxes are too close for one.
bool bundledEdgePath(const QRectF& a, const QRectF& b, QPainterPath& path, QPolygonF& arrow) {
  QPointF from(a.center().x(), a.bottom() - 4), to(b.center().x(), b.top() + 4);
  QLineF line(from, to);
  if (line.length() < 12) return false;
  QPointF base = line.pointAt(1 - 9 / line.length());
  path.moveTo(from);
  path.lineTo(base);
  arrow = arrowHead(base, to);
  return true;
}

// Graphviz's Bezier points for one edge, its arrow tip last when it drew one.
void laidOutEdgePath(const std::vector<double>& pts, bool hasArrow, QPainterPath& path, QPolygonF& arrow) {
  path.moveTo(pts[0], pts[1]);
  size_t curveEnd = hasArrow ? pts.size() - 2 : pts.size();
  for (size_t k = 2; k + 5 < curveEnd; k += 6)
    path.cubicTo(QPointF(pts[k], pts[k + 1]), QPointF(pts[k + 2], pts[k + 3]), QPointF(pts[k + 4], pts[k + 5]));
  if (hasArrow) arrow = arrowHead(QPointF(pts[curveEnd - 2], pts[curveEnd - 1]), QPointF(pts[curveEnd], pts[curveEnd + 1]));
}

// "%x: float32[4, 256]", and how many values the edge stands for.
QString edgeToolTip(const Method& m, const VisibleGraph::Edge& e) {
  QString tip;
  if (e.value >= 0 && static_cast<size_t>(e.value) < m.values.size()) {
    const Value& v = m.values[e.value];
    tip = QString("%%1: %2").arg(QString::fromStdString(v.name.empty() ? std::to_string(e.value) : v.name),
                                 v.isTensor() ? QString::fromStdString(v.tensor().shapeString()) : QString(valueKindName(v.kind())));
  }
  if (e.count > 1) tip += GraphView::tr("\n(and %1 more values)").arg(e.count - 1);
  if (e.bundled) tip += GraphView::tr("\n(one of many uses: drawn while selected)");
  return tip;
}

}  // namespace

void GraphView::applyLayout(uint64_t, const LayoutResult& r, qint64 elapsedMs) {
  pending_ = false;
  if (!r.ok) {
    busy_->setText(tr("Layout failed: %1").arg(QString::fromStdString(r.error)));
    busy_->adjustSize();
    return;
  }
  busy_->hide();
  const QPointF oldCenter = view_->mapToScene(view_->viewport()->rect().center());
  quietView_ = true;  // the other pane follows once this one is placed
  stale_ = false;
  scene_->clear();
  items_.assign(model_->nodes.size() + model_->groups.size(), nullptr);
  clusters_.assign(model_->groups.size(), nullptr);
  edges_.clear();
  addClusterFrames(r);
  addBoxes(r);
  addEdges(r);
  scene_->setSceneRect(QRectF(-30, -30, r.width + 60, r.height + 60));

  if (selectedGraphNode_ >= 0) selectedItem_ = shown_->itemOfNode[selectedGraphNode_];
  else if (selectedItem_ >= 0 && !items_[selectedItem_]) selectedItem_ = -1;
  updateHighlight();
  placeViewAfterLayout(oldCenter);
  quietView_ = false;
  queueMinimapRebuild();
  emit layoutFinished(elapsedMs);
  emitViewMoved();
}

// The frames of the open groups, nested by depth.
void GraphView::addClusterFrames(const LayoutResult& r) {
  const VisibleGraph& vis = *shown_;
  for (size_t i = 0; i < vis.clusters.size() && i < r.clusters.size(); ++i) {
    int g = vis.clusters[i];
    const GraphGroup& grp = model_->groups[g];
    int depth = 0;
    for (int p = grp.parent; p >= 0; p = model_->groups[p].parent) ++depth;
    const auto& b = r.clusters[i];
    auto* c = new GraphClusterItem(g, QRectF(b.x, b.y, b.width, b.height),
                                   QString::fromStdString(grp.shortPath(*model_) + "   " + grp.type), depth, grp.delegate);
    c->setToolTip(tr("%1 — double-click to collapse").arg(QString::fromStdString(grp.label())));
    scene_->addItem(c);
    clusters_[g] = c;
  }
}

// After a partitioner: per group, how many of its operators each partition takes and how
// many stay out (nested groups included), for the collapsed boxes' band and tooltip.
std::vector<GraphView::GroupPartitions> GraphView::groupPartitions() const {
  const Method& m = program_->methods[methodIndex_];
  std::vector<GroupPartitions> out;
  for (const GraphNode& gn : model_->nodes) {
    if (gn.node < 0 || static_cast<size_t>(gn.node) >= m.nodes.size() || gn.group < 0) continue;
    const NodeMeta& meta = m.nodes[gn.node].meta;
    if (meta.delegationTag.empty() && meta.notDelegatedBecause.empty()) continue;
    if (out.empty()) out.resize(model_->groups.size());
    for (int g = gn.group; g >= 0; g = model_->groups[g].parent) {
      if (meta.delegationTag.empty()) ++out[g].leftOut;
      else ++out[g].byTag[meta.delegationTag];
    }
  }
  return out;
}

// One box per visible item: a node, or a collapsed group.
void GraphView::addBoxes(const LayoutResult& r) {
  const VisibleGraph& vis = *shown_;
  const int n = int(model_->nodes.size());
  const std::vector<GroupPartitions> partitions = groupPartitions();
  for (size_t i = 0; i < vis.items.size() && i < r.items.size(); ++i) {
    int id = vis.items[i];
    const auto& b = r.items[i];
    QRectF rect(b.x, b.y, b.width, b.height);
    GraphItem* it = id < n ? nodeBox(id, rect) : collapsedGroupBox(id, rect);
    if (id >= n && !partitions.empty()) {
      // A group one partition takes whole shows its band; its tooltip counts the rest.
      const GroupPartitions& gp = partitions[id - n];
      if (gp.byTag.size() == 1 && gp.leftOut == 0) it->setPartitionColor(partitionColor(gp.byTag.begin()->first));
      QStringList parts;
      for (const auto& [tag, count] : gp.byTag) parts << tr("%1: %2").arg(QString::fromStdString(tag)).arg(count);
      if (gp.leftOut) parts << tr("not delegated: %1").arg(gp.leftOut);
      if (!parts.isEmpty()) it->setToolTip(it->toolTip() + tr("<br>XNNPACK partitions (operators): ") + parts.join(", "));
    }
    scene_->addItem(it);
    items_[id] = it;
  }
}

void GraphView::setNodeTints(std::vector<QColor> tints) {
  tints_ = std::move(tints);
  if (!model_) return;
  for (size_t i = 0; i < items_.size() && i < model_->nodes.size(); ++i)
    if (GraphItem* it = items_[i]) {
      int n = model_->nodes[i].node;
      it->setTint(n >= 0 && static_cast<size_t>(n) < tints_.size() ? tints_[n] : QColor());
    }
}

int GraphView::tintedItemCount() const {
  int n = 0;
  for (GraphItem* it : items_) n += it && it->tint().isValid();
  return n;
}

GraphItem* GraphView::nodeBox(int graphNode, const QRectF& rect) const {
  const GraphNode& gn = model_->nodes[graphNode];
  auto* it = new GraphItem(graphNode, rect, paletteFor(gn.kind), QString::fromStdString(model_->displayTitle(graphNode)),
                           QString::fromStdString(gn.subtitle), false, gn.kind == VisualKind::Constant);
  if (gn.node >= 0 && !marks_.empty()) it->setMark(marks_[gn.node]);
  if (gn.node >= 0 && static_cast<size_t>(gn.node) < tints_.size()) it->setTint(tints_[gn.node]);
  QString tip = QString("<b>%1</b><br>%2").arg(QString::fromStdString(gn.title).toHtmlEscaped(),
                                               QString::fromStdString(gn.subtitle).toHtmlEscaped());
  if (!gn.name.empty()) tip += QString("<br>name: %1").arg(QString::fromStdString(gn.name).toHtmlEscaped());
  tip += QString("<br>kind: %1").arg(visualKindName(gn.kind));
  if (gn.group >= 0) tip += QString("<br>module: %1").arg(QString::fromStdString(model_->groups[gn.group].path).toHtmlEscaped());
  if (const Method& m = program_->methods[methodIndex_]; gn.node >= 0 && static_cast<size_t>(gn.node) < m.nodes.size()) {
    const NodeMeta& meta = m.nodes[gn.node].meta;  // a partitioner's verdict
    if (!meta.delegationTag.empty()) {
      it->setPartitionColor(partitionColor(meta.delegationTag));
      tip += tr("<br>XNNPACK partition %1").arg(QString::fromStdString(meta.delegationTag).toHtmlEscaped());
    } else if (!meta.notDelegatedBecause.empty()) {
      tip += tr("<br>not delegated: %1").arg(QString::fromStdString(meta.notDelegatedBecause).toHtmlEscaped());
    }
  }
  if (!gn.weights.empty()) {
    std::vector<int> lineNodes;
    QStringList lines;
    for (const std::string& l : weightLines(*model_, graphNode, &lineNodes)) lines << QString::fromStdString(l);
    it->setLines(lines, std::move(lineNodes));
    tip += tr("<br>reads %n constant(s) (click one to inspect it):", nullptr, int(gn.weights.size()));
    for (int w : gn.weights)
      tip += QString("<br>&nbsp;&nbsp;%1 %2").arg(QString::fromStdString(model_->nodes[w].title).toHtmlEscaped(),
                                                  QString::fromStdString(model_->nodes[w].subtitle).toHtmlEscaped());
  }
  it->setToolTip(tip);
  return it;
}

GraphItem* GraphView::collapsedGroupBox(int item, const QRectF& rect) const {
  const int g = item - int(model_->nodes.size());
  const GraphGroup& grp = model_->groups[g];
  Palette pal{QColor(0xFF, 0xFF, 0xFF), grp.delegate ? paletteFor(VisualKind::Delegate).border : QColor(0x5B, 0x6B, 0x7A)};
  // Inside an open parent the box names only its own part of the path.
  auto* it = new GraphItem(item, rect, pal, QString::fromStdString(grp.shortPath(*model_)),
                           QString::fromStdString((grp.type.empty() ? "" : grp.type + ", ") + std::to_string(grp.nodeCount) + " nodes"),
                           true, false);
  if (groupMarks_[g]) it->setMark(groupMarks_[g] == 1 ? NodeMark::Added : groupMarks_[g] == 2 ? NodeMark::Modified : NodeMark::Removed);
  QString tip = tr("%1 — double-click or Return to expand").arg(QString::fromStdString(grp.label()).toHtmlEscaped());
  if (grp.repeat) tip += tr("<br>%1 sibling groups running the same operators, folded as one").arg(grp.repeat);
  const QString changed = groupChangeSummary(QString::fromStdString(grp.path));
  if (!changed.isEmpty()) tip += "<br>" + changed;
  it->setToolTip(tip);
  return it;
}

// Edges as Graphviz routed them; bundled ones (left out of the layout) as
// straight lines, hidden until an end is selected.
void GraphView::addEdges(const LayoutResult& r) {
  const Method& m = program_->methods[methodIndex_];
  size_t laid = 0;
  for (const auto& e : shown_->edges) {
    QPainterPath path;
    QPolygonF arrow;
    if (e.bundled) {
      if (!items_[e.from] || !items_[e.to]) continue;
      if (!bundledEdgePath(items_[e.from]->sceneBoundingRect(), items_[e.to]->sceneBoundingRect(), path, arrow)) continue;
    } else {
      if (laid >= r.edgePoints.size()) break;
      const size_t i = laid++;
      if (r.edgePoints[i].size() < 2) continue;
      laidOutEdgePath(r.edgePoints[i], r.arrow[i], path, arrow);
    }
    auto* item = new GraphEdgeItem(e.from, e.to, path, arrow, e.bundled);
    item->setToolTip(edgeToolTip(m, e));
    scene_->addItem(item);
    edges_.push_back(item);
  }
}

// Where the view looks after a layout: at the node asked for, the whole
// graph the first time, a group just opened, or where it looked before.
void GraphView::placeViewAfterLayout(QPointF oldCenter) {
  const VisibleGraph& vis = *shown_;
  const int n = int(model_->nodes.size());
  if (pendingCenter_ >= 0 && items_[vis.itemOfNode[pendingCenter_]]) {
    view_->centerOn(items_[vis.itemOfNode[pendingCenter_]]);
  } else if (firstLayout_) {
    // Fit when that stays readable; otherwise start at the top (the inputs).
    view_->resetTransform();
    QRectF sr = scene_->sceneRect();
    QSizeF vp = view_->viewport()->size();
    double fit = std::min(vp.width() / sr.width(), vp.height() / sr.height());
    double s = std::clamp(fit, 0.85, 1.0);
    view_->scale(s, s);
    view_->centerOn(startColumn(vp.width() / s, vp.height() / s), sr.top() + vp.height() / s / 2);
  } else if (focusGroup_ >= 0 && focusGroup_ < int(clusters_.size()) && (clusters_[focusGroup_] || items_[n + focusGroup_])) {
    QGraphicsItem* f = clusters_[focusGroup_] ? static_cast<QGraphicsItem*>(clusters_[focusGroup_]) : items_[n + focusGroup_];
    QRectF b = f->sceneBoundingRect();
    QRectF vis2 = view_->mapToScene(view_->viewport()->rect()).boundingRect();
    if (b.height() > vis2.height()) view_->centerOn(b.center().x(), b.top() + vis2.height() / 2 - 20);
    else view_->centerOn(b.center());
  } else {
    view_->centerOn(oldCenter);
  }
  firstLayout_ = false;
  pendingCenter_ = -1;
  focusGroup_ = -1;
}

// Where the first view looks sideways: at the program's inputs, with as many
// of the boxes in its top band as a screen's width holds, so that it starts
// filled even when the middle of a wide graph is empty. Inputs first: a
// shallow program (a .pte whose layers fold into one box) has its last
// operators and a long row of cache write-backs in the same band, and the
// densest stretch of that band is its end.
double GraphView::startColumn(double width, double height) const {
  const QRectF sr = scene_->sceneRect();
  const int n = int(model_->nodes.size());
  constexpr int kInput = 1000;  // one input outweighs any number of other boxes
  std::vector<std::pair<double, int>> xs;  // centre, weight
  for (GraphItem* it : items_)
    if (it && it->sceneBoundingRect().top() < sr.top() + height) {
      const bool input = it->id() < n && model_->nodes[it->id()].kind == VisualKind::Input;
      xs.push_back({it->sceneBoundingRect().center().x(), input ? kInput : 1});
    }
  if (xs.empty()) return sr.center().x();
  std::sort(xs.begin(), xs.end());
  size_t best = 0, bestEnd = 1;
  long bestWeight = -1, weight = 0;
  for (size_t a = 0, b = 0; a < xs.size(); ++a) {
    while (b < xs.size() && xs[b].first - xs[a].first <= width - 80) weight += xs[b++].second;
    if (weight > bestWeight) bestWeight = weight, best = a, bestEnd = b;
    weight -= xs[a].second;
  }
  return (xs[best].first + xs[bestEnd - 1].first) / 2;
}

}  // namespace lstudio::ui
