#include "ui/graph/GraphView.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QKeyEvent>
#include <QLabel>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "ui/support/Background.h"
#include "ui/graph/GraphItems.h"
#include "ui/graph/GraphLayout.h"

namespace lstudio::ui {

namespace {
constexpr size_t kGroupChangeList = 12;  // changed nodes a collapsed group's tooltip names
}

GraphView::GraphView(QWidget* parent) : QWidget(parent) {
  scene_ = new QGraphicsScene(this);
  scene_->setItemIndexMethod(QGraphicsScene::NoIndex);
  view_ = new GraphCanvas(this, scene_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  title_ = new QLabel(this);
  title_->setObjectName("paneTitle");
  // One line (elided in the middle, whole in the tooltip): both panes' canvases start at one height.
  title_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  title_->setStyleSheet("QLabel { background: #eef2f6; color: #1f2d3a; font-weight: bold; padding: 4px 8px; border-bottom: 1px solid #cbd2d9; }");
  title_->hide();
  layout->addWidget(title_);
  layout->addWidget(view_);
  minimap_ = new GraphMinimap(this);
  minimap_->hide();
  busy_ = new QLabel(tr("Laying out…"), this);
  busy_->setStyleSheet("QLabel { background: rgba(255,255,255,220); color: #445; padding: 4px 8px; border: 1px solid #cbd2d9; border-radius: 4px; }");
  busy_->hide();
  busy_->move(8, 8);
  setFocusProxy(view_);
}

GraphView::~GraphView() {
  *latest_ = UINT64_MAX;
  // The canvas goes before the scene: a scene deleted by ~QWidget would detach
  // itself from the canvas, whose scroll callback reaches this half-destroyed view.
  delete view_;
  view_ = nullptr;
}

void GraphView::clear() {
  quietView_ = true;  // the scene empties before items_ does: no pane may follow this one meanwhile
  forgetGraph();
  stale_ = false;
  scene_->clear();
  scene_->setSceneRect(QRectF());
  minimap_->hide();
  quietView_ = false;
}

void GraphView::forgetGraph() {
  ++serial_;
  *latest_ = serial_;
  pending_ = false;
  busy_->hide();
  items_.clear();
  clusters_.clear();
  edges_.clear();
  shown_.reset();
  model_.reset();
  program_.reset();
  methodIndex_ = -1;
  marks_.clear();
  collapsed_.clear();
  openedByReveal_.clear();
  revealedBefore_.clear();
  expandOnModel_.clear();
  groupChanged_.clear();
  groupChangedCount_.clear();
  selectedItem_ = selectedGraphNode_ = pendingCenter_ = findPos_ = focusGroup_ = pendingSelect_ = -1;
}

void GraphView::setGraph(std::shared_ptr<const Program> program, int methodIndex, std::vector<NodeMark> marks, bool keepPlace) {
  if (!program || methodIndex < 0 || static_cast<size_t>(methodIndex) >= program->methods.size()) return clear();
  // The previous picture stays up, dimmed and inert, until the new layout replaces it:
  // a blank canvas between two passes loses the reader's place.
  // What the last selection opened stays the next selection's to close if the new graph
  // opens it again (setExpandedGroups, compare mode keeping its groups from pass to pass).
  QStringList revealed = revealedGroups();
  forgetGraph();
  revealedBefore_ = std::move(revealed);
  stale_ = !scene_->items().isEmpty();
  view_->viewport()->update();
  clock_.start();
  program_ = std::move(program);
  methodIndex_ = methodIndex;
  marks_ = std::move(marks);
  if (marks_.size() != program_->methods[methodIndex].nodes.size()) marks_.clear();
  tints_.clear();
  // Another snapshot of the same program keeps the zoom and the place the view looks at.
  firstLayout_ = !(keepPlace && stale_);
  // Folding 10,000 nodes into a model takes tens of milliseconds: not on the GUI thread.
  struct Prepared {
    std::shared_ptr<const GraphModel> model;
    std::vector<char> collapsed;
  };
  const uint64_t serial = ++serial_;
  *latest_ = serial;
  pending_ = true;
  showBusy(tr("Reading the graph…"));
  auto* watcher = new QFutureWatcher<Prepared>(this);
  connect(watcher, &QFutureWatcher<Prepared>::finished, this, [this, watcher, serial] {
    watcher->deleteLater();
    if (serial != serial_) return;
    Prepared p = watcher->result();
    model_ = p.model;
    collapsed_ = std::move(p.collapsed);
    groupMarks_.assign(model_->groups.size(), 0);
    groupChanged_.assign(model_->groups.size(), {});
    groupChangedCount_.assign(model_->groups.size(), 0);
    for (size_t i = 0; i < marks_.size(); ++i)
      if (marks_[i] != NodeMark::None)
        for (int g = model_->nodes[model_->nodeOfMethodNode[i]].group; g >= 0; g = model_->groups[g].parent) {
          groupMarks_[g] = std::max(groupMarks_[g], marks_[i] == NodeMark::Added ? 1 : marks_[i] == NodeMark::Modified ? 2 : 3);
          if (groupChanged_[g].size() < kGroupChangeList) groupChanged_[g].push_back(int(i));
          ++groupChangedCount_[g];
        }
    for (const QString& path : std::exchange(expandOnModel_, {})) {
      const std::string p = path.toStdString();
      for (size_t g = 0; g < model_->groups.size(); ++g)
        if (model_->groups[g].path == p && collapsed_[g]) {
          collapsed_[g] = 0;
          if (revealedBefore_.contains(path)) openedByReveal_.push_back(int(g));
        }
    }
    revealedBefore_.clear();
    if (pendingSelect_ >= 0) {
      int graphNode = model_->nodeOfMethodNode[pendingSelect_];
      bool hidden = false;  // like revealNode: if it has to open groups, what the last selection opened closes
      for (int g = model_->nodes[graphNode].group; g >= 0; g = model_->groups[g].parent) hidden |= bool(collapsed_[g]);
      if (hidden) closeRevealedGroups(graphNode);
      for (int g = model_->nodes[graphNode].group; g >= 0; g = model_->groups[g].parent)
        if (collapsed_[g]) {
          collapsed_[g] = 0;
          openedByReveal_.push_back(g);  // the next selection closes them again
        }
      selectedGraphNode_ = findPos_ = pendingCenter_ = graphNode;
      pendingSelect_ = -1;
    }
    requestLayout();
  });
  watcher->setFuture(QtConcurrent::run(inBackground([program = program_, methodIndex] {
    auto model = std::make_shared<const GraphModel>(GraphModel::build(program->methods[methodIndex]));
    return Prepared{model, initialCollapsed(*model)};
  })));
}

void GraphView::showBusy(const QString& text) {
  busy_->setText(text);
  busy_->adjustSize();
  busy_->show();
  busy_->raise();
}

void GraphView::requestLayout() {
  if (!model_) return;
  if (!firstLayout_) clock_.start();
  auto vis = std::make_shared<const VisibleGraph>(visibleGraph(*model_, collapsed_));
  const int n = int(model_->nodes.size());
  LayoutRequest req;
  std::vector<int> clusterIndex(model_->groups.size(), -1);
  for (int g : vis->clusters) {
    const GraphGroup& grp = model_->groups[g];
    LayoutRequest::Cluster c;
    c.id = g;
    c.parent = grp.parent >= 0 ? clusterIndex[grp.parent] : -1;
    c.label = grp.shortPath(*model_) + "   " + grp.type;
    c.fontSize = 10;
    clusterIndex[g] = int(req.clusters.size());
    req.clusters.push_back(std::move(c));
  }
  std::unordered_map<int, int> requestIndex;
  for (int item : vis->items) {
    LayoutRequest::Item it;
    it.id = item;
    if (item < n) {
      const QSizeF size = nodeBoxSize(*model_, item);
      it.width = size.width();
      it.height = size.height();
    } else {
      const GraphGroup& grp = model_->groups[item - n];
      double w = std::max(labelWidth(kGroupFont, grp.shortPath(*model_)), labelWidth(kSubtitleFont, grp.type + ", 0000 nodes"));
      it.width = std::clamp(w + 28, 110.0, 280.0);
      it.height = kGroupHeight;
    }
    int g = vis->itemGroup(*model_, item);
    it.cluster = g >= 0 ? clusterIndex[g] : -1;
    requestIndex[item] = int(req.items.size());
    req.items.push_back(it);
  }
  for (const auto& e : vis->edges)
    if (!e.bundled) {
      VisualKind k = e.from < n ? model_->nodes[e.from].kind : VisualKind::Compute;
      req.edges.push_back({requestIndex[e.from], requestIndex[e.to], k == VisualKind::Parameter || k == VisualKind::Constant});
    }

  const uint64_t serial = ++serial_;
  std::shared_ptr<std::atomic<uint64_t>> latest = latest_;
  *latest = serial;
  pending_ = true;
  showBusy(tr("Laying out %1 items…").arg(req.items.size()));
  auto* watcher = new QFutureWatcher<LayoutResult>(this);
  connect(watcher, &QFutureWatcher<LayoutResult>::finished, this, [this, watcher, serial, vis] {
    watcher->deleteLater();
    if (serial != serial_) return;  // the user moved on
    shown_ = vis;
    applyLayout(serial, watcher->result(), clock_.elapsed());
  });
  watcher->setFuture(QtConcurrent::run(layoutPool(), inBackground([req = std::move(req), latest, serial] {
    if (latest->load() != serial) return LayoutResult{};  // stale before it started: skip Graphviz
    return runLayout(req);
  })));
}

// The overview renders the whole scene: in an event of its own, so that
// placing the items and drawing the overview are two shorter GUI-thread
// stretches instead of one long one.
void GraphView::queueMinimapRebuild() {
  if (minimapQueued_) return;
  minimapQueued_ = true;
  QTimer::singleShot(0, this, [this] {
    minimapQueued_ = false;
    minimap_->rebuild();
    refreshMinimap();
  });
}


void GraphView::fitToView() {
  QRectF sr = scene_->sceneRect();
  if (sr.isEmpty()) return;
  view_->fitInView(sr, Qt::KeepAspectRatio);
  if (view_->transform().m11() > 1.5) {
    view_->resetTransform();
    view_->scale(1.5, 1.5);
    view_->centerOn(sr.center());
  }
  refreshMinimap();
  emitViewMoved();
}

void GraphView::zoomBy(double factor) {
  view_->zoomBy(factor);  // the canvas tells viewMoved
  refreshMinimap();
}

void GraphView::emitViewMoved() {
  if (!quietView_) emit viewMoved();
}

void GraphView::setTitle(const QString& title) {
  fullTitle_ = title;
  title_->setToolTip(title);
  title_->setVisible(!title.isEmpty());
  elideTitle();
}

void GraphView::elideTitle() {
  const int room = std::max(width() - 18, 40);
  title_->setText(title_->fontMetrics().elidedText(fullTitle_, Qt::ElideMiddle, room));
}

QString GraphView::title() const { return fullTitle_; }

void GraphView::setCompactMinimap(bool compact) {
  const QSize size = compact ? QSize(96, 64) : QSize(180, 130);
  if (minimap_->size() == size) return;
  minimap_->setFixedSize(size);
  if (!items_.empty()) queueMinimapRebuild();
  refreshMinimap();
}

QStringList GraphView::expandedGroups() const {
  if (!model_) return expandOnModel_;
  QStringList open;
  for (size_t g = 0; g < model_->groups.size() && g < collapsed_.size(); ++g)
    if (!collapsed_[g]) open << QString::fromStdString(model_->groups[g].path);
  return open;
}

void GraphView::setExpandedGroups(const QStringList& paths, const QStringList& revealed) {
  if (!model_) {
    if (program_) {  // a graph is being read: open them when its model is built
      expandOnModel_ = paths;
      revealedBefore_ += revealed;
    }
    return;
  }
  bool any = false;
  for (const QString& path : paths) {
    const std::string p = path.toStdString();
    for (size_t g = 0; g < model_->groups.size(); ++g)
      if (model_->groups[g].path == p && collapsed_[g]) {
        collapsed_[g] = 0;
        if (revealed.contains(path)) openedByReveal_.push_back(int(g));
        any = true;
      }
  }
  if (any) requestLayout();
}

QStringList GraphView::revealedGroups() const {
  QStringList paths;
  if (model_)
    for (int g : openedByReveal_) paths << QString::fromStdString(model_->groups[g].path);
  return paths;
}

QString GraphView::groupChangeSummary(const QString& path) const {
  if (!model_ || groupChanged_.empty()) return {};
  const std::string p = path.toStdString();
  for (size_t g = 0; g < model_->groups.size(); ++g) {
    if (model_->groups[g].path != p) continue;
    if (!groupChangedCount_[g]) return {};
    const Method& m = program_->methods[methodIndex_];
    QStringList lines;
    for (int i : groupChanged_[g]) {
      const char* what = marks_[i] == NodeMark::Added ? "added" : marks_[i] == NodeMark::Modified ? "modified" : "removed";
      lines << QString("%1 <i>%2</i>").arg(QString::fromStdString(m.nodes[i].name.empty() ? "%" + std::to_string(i) : m.nodes[i].name).toHtmlEscaped(), tr(what));
    }
    if (groupChangedCount_[g] > int(groupChanged_[g].size())) lines << tr("and %1 more").arg(groupChangedCount_[g] - int(groupChanged_[g].size()));
    return tr("<b>%n changed inside:</b>", nullptr, groupChangedCount_[g]) + "<br>" + lines.join("<br>");
  }
  return {};
}

QString GraphView::keyOfItem(int item) const {
  const int n = int(model_->nodes.size());
  if (item < n) return QString::fromStdString(model_->nodes[item].name);
  return "group:" + QString::fromStdString(model_->groups[item - n].path);
}

int GraphView::itemForKeyIndex(const QString& key) const {
  GraphItem* it = itemForKey(key);
  return it ? it->id() : -1;
}

GraphItem* GraphView::itemForKey(const QString& key) const {
  if (!model_ || !shown_ || key.isEmpty()) return nullptr;
  const int n = int(model_->nodes.size());
  if (key.startsWith("group:")) {
    const std::string p = key.mid(6).toStdString();
    for (size_t g = 0; g < model_->groups.size(); ++g)
      if (model_->groups[g].path == p) return size_t(n) + g < items_.size() ? items_[n + g] : nullptr;
    return nullptr;
  }
  const std::string s = key.toStdString();
  for (int i = 0; i < n; ++i)
    if (model_->nodes[i].name == s) {
      int item = itemForNode(i);
      return item == i && item < int(items_.size()) ? items_[item] : nullptr;  // drawn as itself, not inside a box
    }
  return nullptr;
}

void GraphView::followView(const GraphView& other) {
  if (&other == this || !shown_ || pending_ || items_.empty()) return;
  quietView_ = true;
  const double s = other.zoom();
  if (std::abs(zoom() - s) > 1e-9) view_->setTransform(QTransform::fromScale(s, s));
  const QPointF c = other.view_->mapToScene(other.view_->viewport()->rect().center());
  // The other pane's named item nearest its centre, if drawn here too: at the same place.
  GraphItem* there = nullptr;
  GraphItem* here = nullptr;
  if (other.model_ && other.shown_ && !other.pending_) {
    // The other's selection, else the node this pane last kept aligned, while the other shows
    // them; else the nearest to its centre. A sticky anchor does not jump from node to node.
    const QRectF seen = other.view_->mapToScene(other.view_->viewport()->rect()).boundingRect();
    auto inSight = [&](int item) {
      return item >= 0 && item < int(other.items_.size()) && other.items_[item] && seen.contains(other.items_[item]->sceneBoundingRect().center());
    };
    for (int item : {other.selectedItem_, other.itemForKeyIndex(anchor_)})
      if (!here && inSight(item) && (here = itemForKey(other.keyOfItem(item)))) {
        there = other.items_[item];
        anchor_ = other.keyOfItem(item);
      }
  }
  if (!here && other.model_ && other.shown_ && !other.pending_) {
    std::vector<std::pair<double, GraphItem*>> near;
    for (GraphItem* it : other.items_)
      if (it) {
        QPointF d = it->sceneBoundingRect().center() - c;
        near.push_back({d.x() * d.x() + d.y() * d.y(), it});
      }
    std::sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < near.size() && k < 12 && !here; ++k)
      if ((here = itemForKey(other.keyOfItem(near[k].second->id())))) {
        there = near[k].second;
        anchor_ = other.keyOfItem(there->id());
      }
  }
  if (here && there) {
    // Where the other pane draws it, from its viewport's top left: the same here.
    const QPointF want = other.view_->mapFromScene(there->sceneBoundingRect().center());
    const QPointF mid = QRectF(view_->viewport()->rect()).center();
    view_->centerOn(here->sceneBoundingRect().center() + (mid - want) / s);
  } else {
    auto follow = [](QScrollBar* to, const QScrollBar* from) {
      const int range = from->maximum() - from->minimum();
      const double f = range > 0 ? double(from->value() - from->minimum()) / range : 0.5;
      to->setValue(to->minimum() + int(std::lround(f * (to->maximum() - to->minimum()))));
    };
    follow(view_->horizontalScrollBar(), other.view_->horizontalScrollBar());
    follow(view_->verticalScrollBar(), other.view_->verticalScrollBar());
  }
  quietView_ = false;
  refreshMinimap();
}

double GraphView::zoom() const { return view_->transform().m11(); }
bool GraphView::layoutPending() const { return pending_; }

int GraphView::visibleItemCount() const {
  int c = 0;
  for (auto* it : items_) c += it != nullptr;
  return c;
}
int GraphView::visibleEdgeCount() const { return int(edges_.size()); }
int GraphView::visibleGroupBoxCount() const {
  int c = 0;
  for (auto* it : items_) c += it && it->isGroup();
  return c;
}
int GraphView::markedItemCount() const {
  int c = 0;
  for (auto* it : items_) c += it && it->mark() != NodeMark::None;
  return c;
}

int GraphView::itemForNode(int graphNode) const {
  if (!shown_ || graphNode < 0 || static_cast<size_t>(graphNode) >= shown_->itemOfNode.size()) return -1;
  return shown_->itemOfNode[graphNode];
}

QPoint GraphView::viewportPosOfNode(int graphNode) const {
  int item = itemForNode(graphNode);
  if (item < 0 || !items_[item]) return {};
  // A constant drawn inside its reader: its line there.
  const QRectF line = item != graphNode ? items_[item]->lineRect(graphNode) : QRectF();
  return view_->mapFromScene(line.isNull() ? items_[item]->sceneBoundingRect().center() : line.center());
}

QPoint GraphView::viewportPosOfMethodNode(int nodeIndex) const {
  if (!model_ || nodeIndex < 0 || static_cast<size_t>(nodeIndex) >= model_->nodeOfMethodNode.size()) return {};
  return viewportPosOfNode(model_->nodeOfMethodNode[nodeIndex]);
}

QPoint GraphView::viewportPosOfGroup(const QString& path) const {
  if (!model_) return {};
  const std::string p = path.toStdString();
  for (size_t g = 0; g < model_->groups.size(); ++g)
    if (model_->groups[g].path == p) {
      size_t item = model_->nodes.size() + g;
      if (item < items_.size() && items_[item]) return view_->mapFromScene(items_[item]->sceneBoundingRect().center());
      if (clusters_[g]) return view_->mapFromScene(clusters_[g]->sceneBoundingRect().topLeft() + QPointF(20, 8));
    }
  return {};
}

QGraphicsView* GraphView::canvas() const { return view_; }
QWidget* GraphView::minimap() const { return minimap_; }

void GraphView::placeMinimap() {
  const int margin = 10;
  int sb = view_->verticalScrollBar()->isVisible() ? view_->verticalScrollBar()->width() : 0;
  int hb = view_->horizontalScrollBar()->isVisible() ? view_->horizontalScrollBar()->height() : 0;
  const int left = margin, right = width() - minimap_->width() - margin - sb;
  const int top = margin, bottom = height() - minimap_->height() - margin - hb;
  // Bottom right unless that hides the selected node; then the first corner that does not.
  QRect selected;
  if (selectedItem_ >= 0 && selectedItem_ < int(items_.size()) && items_[selectedItem_]) {
    QRect r = view_->mapFromScene(items_[selectedItem_]->sceneBoundingRect()).boundingRect();  // viewport coordinates
    selected = QRect(view_->viewport()->mapTo(this, r.topLeft()), r.size());
  }
  const QPoint corners[] = {{right, bottom}, {left, bottom}, {right, top}, {left, top}};
  QPoint at = corners[0];
  if (!selected.isEmpty())
    for (const QPoint& c : corners)
      if (!QRect(c, minimap_->size()).intersects(selected)) {
        at = c;
        break;
      }
  minimap_->move(at);
  minimap_->raise();
}

void GraphView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  if (!fullTitle_.isEmpty()) elideTitle();
  refreshMinimap();
}

void GraphView::refreshMinimap() {
  // Only useful when part of the graph is out of sight.
  QRectF sr = scene_->sceneRect().adjusted(25, 25, -25, -25);
  bool whole = sr.isEmpty() || view_->mapToScene(view_->viewport()->rect()).boundingRect().contains(sr);
  bool room = width() > 2.5 * minimap_->width() && height() > 2.5 * minimap_->height();
  minimap_->setVisible(shown_ && !whole && room);
  if (minimap_->isVisible()) {
    placeMinimap();
    minimap_->update();
  }
}

void GraphView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomBy(1.25); break;
    case Qt::Key_Minus: zoomBy(0.8); break;
    case Qt::Key_Return:
    case Qt::Key_Enter:
      if (e->modifiers() & Qt::ShiftModifier) {
        if (model_ && selectedGraphNode_ >= 0 && model_->nodes[selectedGraphNode_].group >= 0)
          setGroupCollapsed(QString::fromStdString(model_->groups[model_->nodes[selectedGraphNode_].group].path), true);
      } else {
        toggleSelectedGroup();
      }
      break;
    case Qt::Key_Escape: setSelectedItem(-1, false); break;
    case Qt::Key_F3: find(lastFind_, e->modifiers() & Qt::ShiftModifier); break;
    default: QWidget::keyPressEvent(e); return;
  }
  e->accept();
}

}  // namespace lstudio::ui
