#include "ui/graph/GraphItems.h"

#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QGraphicsSceneHoverEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace lstudio::ui {
namespace {

// Below these scales text and arrowheads are not drawn (level of detail).
constexpr double kTextScale = 0.45;
constexpr double kArrowScale = 0.25;

const QColor kSelect(0xD8, 0x1B, 0x60);
const QColor kAdded(0x2E, 0x9D, 0x3A);
const QColor kModified(0xE6, 0x7E, 0x00);
const QColor kRemoved(0xD3, 0x2F, 0x2F);
const QColor kEdge(0x8A, 0x99, 0xA8);

QFont titleFont() {
  QFont f;
  f.setPointSizeF(8.5);
  return f;
}
QFont groupFont() {
  QFont f = titleFont();
  f.setBold(true);
  return f;
}
QFont subtitleFont() {
  QFont f;
  f.setPointSizeF(7.5);
  return f;
}

double levelOfDetail(const QStyleOptionGraphicsItem* option, QPainter* painter) {
  return option->levelOfDetailFromTransform(painter->worldTransform());
}

}  // namespace

QColor partitionColor(const std::string& tag) {
  int id = 0;
  for (char c : tag)
    if (c >= '0' && c <= '9') id = id * 10 + (c - '0');
  // Golden-angle steps around the hue circle: ids next to each other never look alike.
  return QColor::fromHsv(int(std::fmod(30.0 + id * 137.508, 360.0)), 200, 215);
}

Palette paletteFor(VisualKind k) {
  switch (k) {
    case VisualKind::Compute: return {QColor(0xE3, 0xEE, 0xFB), QColor(0x3B, 0x78, 0xC4)};
    case VisualKind::View: return {QColor(0xE2, 0xF3, 0xF0), QColor(0x2E, 0x8B, 0x7A)};
    case VisualKind::Memory: return {QColor(0xFD, 0xF0, 0xDC), QColor(0xC7, 0x7C, 0x12)};
    case VisualKind::Delegate: return {QColor(0xEC, 0xE6, 0xF8), QColor(0x67, 0x4E, 0xB3)};
    case VisualKind::Input: return {QColor(0xE6, 0xF4, 0xE4), QColor(0x3E, 0x8E, 0x41)};
    case VisualKind::Parameter: return {QColor(0xEE, 0xF1, 0xF4), QColor(0x78, 0x87, 0x96)};
    case VisualKind::Constant: return {QColor(0xF6, 0xF6, 0xF6), QColor(0x9A, 0x9A, 0x9A)};
    case VisualKind::Output: return {QColor(0x45, 0x55, 0x63), QColor(0x2B, 0x36, 0x40)};
  }
  return {Qt::white, Qt::black};
}

/// Labels repeat a lot (operator names, shapes such as "float32[1, 1, 16]"),
/// and text shaping is most of what a layout request costs on the GUI thread,
/// so widths are kept.
double labelWidth(LabelFont font, const std::string& text) {
  static const QFontMetricsF metrics[3] = {QFontMetricsF(titleFont()), QFontMetricsF(groupFont()),
                                           QFontMetricsF(subtitleFont())};
  static std::unordered_map<std::string, double> cache[3];
  auto& c = cache[font];
  if (auto it = c.find(text); it != c.end()) return it->second;
  if (c.size() > 200000) c.clear();  // bounded: names of huge graphs are mostly unique
  return c.emplace(text, metrics[font].horizontalAdvance(QString::fromStdString(text))).first->second;
}

std::vector<std::string> weightLines(const GraphModel& m, int graphNode, std::vector<int>* nodes) {
  const std::vector<int>& w = m.nodes[graphNode].weights;
  std::vector<std::string> lines;
  const size_t shown = w.size() <= kMaxWeightLines ? w.size() : kMaxWeightLines - 1;
  for (size_t k = 0; k < shown; ++k) {
    lines.push_back(m.displayTitle(w[k]) + "  " + m.nodes[w[k]].subtitle);
    if (nodes) nodes->push_back(w[k]);
  }
  if (shown < w.size()) {
    lines.push_back("+" + std::to_string(w.size() - shown) + " more constants (Inspector)");
    if (nodes) nodes->push_back(-1);
  }
  return lines;
}

QSizeF nodeBoxSize(const GraphModel& m, int graphNode) {
  const GraphNode& gn = m.nodes[graphNode];
  double w = std::max(labelWidth(kTitleFont, m.displayTitle(graphNode)), labelWidth(kSubtitleFont, gn.subtitle));
  const std::vector<std::string> lines = weightLines(m, graphNode);
  for (const std::string& l : lines) w = std::max(w, labelWidth(kSubtitleFont, l));
  const double maxWidth = lines.empty() ? 230.0 : 280.0;
  return {std::clamp(w + 20, 72.0, maxWidth), kNodeHeight + (lines.empty() ? 0 : lines.size() * kWeightLineHeight + 4)};
}

void GraphItem::setLines(QStringList lines, std::vector<int> lineNodes) {
  lines_ = std::move(lines);
  lineNodes_ = std::move(lineNodes);
}

QRectF GraphItem::line(int k) const {
  return QRectF(rect_.left() + 3, rect_.top() + kNodeHeight + k * kWeightLineHeight, rect_.width() - 6, kWeightLineHeight);
}

int GraphItem::lineAt(QPointF scenePos) const {
  const QPointF p = mapFromScene(scenePos);
  for (size_t k = 0; k < lineNodes_.size(); ++k)
    if (line(int(k)).contains(p)) return lineNodes_[k];
  return -1;
}

QRectF GraphItem::lineRect(int graphNode) const {
  for (size_t k = 0; k < lineNodes_.size(); ++k)
    if (lineNodes_[k] == graphNode) return mapRectToScene(line(int(k)));
  return {};
}

void GraphItem::setSelectedLine(int graphNode) {
  int line = -1;
  for (size_t k = 0; k < lineNodes_.size() && graphNode >= 0; ++k)
    if (lineNodes_[k] == graphNode) line = int(k);
  if (line != selectedLine_) {
    selectedLine_ = line;
    update();
  }
}

GraphItem::GraphItem(int id, QRectF rect, Palette palette, QString title, QString subtitle, bool group, bool dashed)
    : id_(id), rect_(rect), palette_(palette), title_(std::move(title)), subtitle_(std::move(subtitle)),
      group_(group), dashed_(dashed) {
  setZValue(group ? 1 : 2);
}

void GraphItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = levelOfDetail(option, p);
  p->setRenderHint(QPainter::Antialiasing, lod > 0.2);
  const double radius = group_ ? 6 : 4;
  if (group_) {  // a stack of cards: something folded inside
    p->setPen(QPen(palette_.border.lighter(130), 1));
    p->setBrush(QColor(0xF2, 0xF4, 0xF7));
    p->drawRoundedRect(rect_.translated(5, 5), radius, radius);
  }
  const QColor markColor = mark_ == NodeMark::Added ? kAdded : mark_ == NodeMark::Modified ? kModified : kRemoved;
  QPen pen(selected_ ? kSelect : mark_ != NodeMark::None ? markColor : palette_.border);
  pen.setWidthF(selected_ || mark_ != NodeMark::None ? 2.4 : 1.1);
  if (dashed_ && !selected_ && mark_ == NodeMark::None) pen.setStyle(Qt::DashLine);
  p->setPen(pen);
  p->setBrush(palette_.fill);
  p->drawRoundedRect(rect_, radius, radius);
  if (tint_.isValid()) {  // the run's values: a stripe inside the left edge
    p->setPen(Qt::NoPen);
    p->setBrush(tint_);
    p->drawRoundedRect(QRectF(rect_.left() + 1.5, rect_.top() + 1.5, 6, rect_.height() - 3), 2, 2);
  }
  if (partition_.isValid()) {  // a partitioner takes it: a band inside the right edge
    p->setPen(Qt::NoPen);
    p->setBrush(partition_);
    p->drawRoundedRect(QRectF(rect_.right() - 7.5, rect_.top() + 1.5, 6, rect_.height() - 3), 2, 2);
  }
  if (mark_ != NodeMark::None && lod > kArrowScale) {
    QRectF badge(rect_.right() - 7, rect_.top() - 7, 14, 14);
    p->setPen(Qt::NoPen);
    p->setBrush(markColor);
    p->drawEllipse(badge);
    if (lod > kTextScale) {
      p->setPen(Qt::white);
      QFont f = groupFont();
      p->setFont(f);
      p->drawText(badge, Qt::AlignCenter, mark_ == NodeMark::Added ? "+" : mark_ == NodeMark::Modified ? "~" : "−");
    }
  }
  if (lod < kTextScale) return;
  const bool dark = palette_.fill.lightness() < 128;
  QRectF head = rect_;  // the title and subtitle, above any constant lines
  if (!lines_.isEmpty()) {
    head.setHeight(kNodeHeight);
    paintLines(p);
  }
  QRectF text = head.adjusted(8, 3, -8, -3);
  QFont tf = group_ ? groupFont() : titleFont(), sf = subtitleFont();
  QFontMetricsF tm(tf), sm(sf);
  const double total = tm.height() + (subtitle_.isEmpty() ? 0 : sm.height());
  double y = text.center().y() - total / 2;
  p->setFont(tf);
  p->setPen(dark ? Qt::white : QColor(0x1D, 0x26, 0x2F));
  p->drawText(QRectF(text.left(), y, text.width(), tm.height()), Qt::AlignCenter,
              tm.elidedText(title_, Qt::ElideMiddle, text.width()));
  if (!subtitle_.isEmpty()) {
    p->setFont(sf);
    p->setPen(dark ? QColor(0xDD, 0xE3, 0xE8) : QColor(0x5A, 0x67, 0x73));
    p->drawText(QRectF(text.left(), y + tm.height(), text.width(), sm.height()), Qt::AlignCenter,
                sm.elidedText(subtitle_, Qt::ElideRight, text.width()));
  }
}

// The constants under the title: a rule, then one line each, the selected one marked.
void GraphItem::paintLines(QPainter* p) {
  const double top = rect_.top() + kNodeHeight;
  p->setPen(QPen(palette_.border.lighter(140), 0.8));
  p->drawLine(QPointF(rect_.left() + 4, top - 1), QPointF(rect_.right() - 4, top - 1));
  QFont f = subtitleFont();
  QFontMetricsF fm(f);
  p->setFont(f);
  for (int k = 0; k < lines_.size(); ++k) {
    const QRectF r = line(k);
    if (k == selectedLine_) {
      p->setPen(Qt::NoPen);
      p->setBrush(QColor(0xD8, 0x1B, 0x60, 40));
      p->drawRoundedRect(r, 2, 2);
    }
    p->setPen(k == selectedLine_ ? kSelect : lineNodes_[k] < 0 ? QColor(0x80, 0x8A, 0x94) : QColor(0x4A, 0x55, 0x60));
    p->drawText(r.adjusted(5, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(lines_[k], Qt::ElideMiddle, r.width() - 8));
  }
}

void GraphClusterItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = levelOfDetail(option, p);
  p->setRenderHint(QPainter::Antialiasing, lod > 0.2);
  QColor fill = delegate_ ? QColor(0xF5, 0xF1, 0xFC) : (depth_ % 2 ? QColor(0xF0, 0xF3, 0xF7) : QColor(0xF8, 0xF9, 0xFB));
  p->setPen(QPen(delegate_ ? QColor(0xA8, 0x96, 0xD6) : QColor(0xB8, 0xC3, 0xCE), 1));
  p->setBrush(fill);
  p->drawRoundedRect(rect_, 8, 8);
  if (lod < kTextScale) return;
  QFont f = groupFont();
  f.setPointSizeF(8);
  p->setFont(f);
  p->setPen(QColor(0x4A, 0x58, 0x66));
  QRectF t = rect_.adjusted(10, 4, -10, 0);
  t.setHeight(QFontMetricsF(f).height() + 2);
  p->drawText(t, Qt::AlignLeft | Qt::AlignVCenter, QFontMetricsF(f).elidedText(title_, Qt::ElideRight, t.width()));
}

GraphEdgeItem::GraphEdgeItem(int from, int to, QPainterPath path, QPolygonF arrow, bool bundled)
    : from_(from), to_(to), path_(std::move(path)), arrow_(std::move(arrow)), bundled_(bundled) {
  setAcceptHoverEvents(true);
  setVisible(!bundled);
  QPainterPathStroker s;
  s.setWidth(7);
  shape_ = s.createStroke(path_);
  shape_.addPolygon(arrow_);
  bounds_ = shape_.boundingRect();
}

void GraphEdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = levelOfDetail(option, p);
  p->setRenderHint(QPainter::Antialiasing, lod > 0.2);
  QColor c = highlighted_ || hovered_ ? kSelect : kEdge;
  QPen pen(c, highlighted_ || hovered_ ? 2.2 : 1.2);
  if (lod < kArrowScale) pen.setCosmetic(true), pen.setWidthF(1);
  p->setPen(pen);
  p->setBrush(Qt::NoBrush);
  p->drawPath(path_);
  if (lod >= kArrowScale && !arrow_.isEmpty()) {
    p->setPen(Qt::NoPen);
    p->setBrush(c);
    p->drawPolygon(arrow_);
  }
}

GraphCanvas::GraphCanvas(GraphView* owner, QGraphicsScene* scene) : QGraphicsView(scene, owner), owner_(owner) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState);
  setBackgroundBrush(QColor(0xFD, 0xFD, 0xFE));
  setFocusPolicy(Qt::StrongFocus);
  setFrameShape(QFrame::NoFrame);
}

void GraphCanvas::drawForeground(QPainter* p, const QRectF& rect) {
  if (owner_->stale_) p->fillRect(rect, QColor(255, 255, 255, 140));  // the previous graph, dimmed
}

void GraphCanvas::zoomBy(double factor) {
  double s = transform().m11() * factor;
  if (s < 0.02 || s > 4) factor = std::clamp(s, 0.02, 4.0) / transform().m11();
  scale(factor, factor);
  owner_->emitViewMoved();  // the other pane of a comparison takes the same zoom
}

void GraphCanvas::wheelEvent(QWheelEvent* e) {
  if (e->angleDelta().y() == 0) return QGraphicsView::wheelEvent(e);
  zoomBy(std::pow(1.0015, e->angleDelta().y()));
  e->accept();
}

template <typename T>
T* GraphCanvas::itemUnder(const QPoint& pos) const {
  for (QGraphicsItem* it : items(pos))
    if (auto* x = dynamic_cast<T*>(it)) return x;
  return nullptr;
}

void GraphCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && !owner_->stale_) {
    if (auto* it = itemUnder<GraphItem>(e->position().toPoint())) {
      owner_->clickedItem(it->id(), false, it->lineAt(mapToScene(e->position().toPoint())));
      e->accept();
      return;
    }
    // An open delegate's frame: its call (a QNN payload has no nodes to click inside).
    if (auto* c = itemUnder<GraphClusterItem>(e->position().toPoint()); c && owner_->delegateCallOfGroup(c->group()) >= 0) {
      owner_->clickedItem(int(owner_->model()->nodes.size()) + c->group(), false);
      e->accept();
      return;
    }
  }
  QGraphicsView::mousePressEvent(e);
}

void GraphCanvas::mouseDoubleClickEvent(QMouseEvent* e) {
  QPoint pos = e->position().toPoint();
  if (owner_->stale_) {  // the previous graph's items name another model's nodes
  } else if (auto* it = itemUnder<GraphItem>(pos)) {
    owner_->clickedItem(it->id(), true);
  } else if (auto* c = itemUnder<GraphClusterItem>(pos)) {
    owner_->setGroupCollapsed(QString::fromStdString(owner_->model()->groups[c->group()].path), true);
  }
  e->accept();
}

void GraphCanvas::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_Minus:
    case Qt::Key_Return:
    case Qt::Key_Enter:
    case Qt::Key_Escape:
    case Qt::Key_F3:
      e->ignore();  // handled by GraphView
      return;
    default: QGraphicsView::keyPressEvent(e);
  }
}

void GraphCanvas::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  owner_->refreshMinimap();
  owner_->emitViewMoved();
}

GraphMinimap::GraphMinimap(GraphView* owner) : QWidget(owner), owner_(owner) {
  setFixedSize(180, 130);
  setCursor(Qt::PointingHandCursor);
  setToolTip(QObject::tr("Overview: click or drag to move the view"));
}

void GraphMinimap::rebuild() {
  QRectF sr = owner_->scene_->sceneRect();
  image_ = QImage(size() * devicePixelRatioF(), QImage::Format_ARGB32_Premultiplied);
  image_.setDevicePixelRatio(devicePixelRatioF());
  image_.fill(QColor(255, 255, 255, 235));
  if (!sr.isEmpty()) {
    QPainter p(&image_);
    p.setRenderHint(QPainter::Antialiasing);
    target_ = fitted(sr);
    owner_->scene_->render(&p, target_, sr, Qt::KeepAspectRatio);
  }
  update();
}

QRectF GraphMinimap::fitted(const QRectF& sr) const {
  QRectF area = QRectF(rect()).adjusted(4, 4, -4, -4);
  double s = std::min(area.width() / sr.width(), area.height() / sr.height());
  QSizeF size(sr.width() * s, sr.height() * s);
  return QRectF(area.center() - QPointF(size.width() / 2, size.height() / 2), size);
}

QPointF GraphMinimap::toScene(QPointF p) const {
  QRectF sr = owner_->scene_->sceneRect();
  if (target_.isEmpty()) return sr.center();
  return {sr.left() + (p.x() - target_.left()) / target_.width() * sr.width(),
          sr.top() + (p.y() - target_.top()) / target_.height() * sr.height()};
}

void GraphMinimap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.drawImage(QPointF(0, 0), image_);
  p.setPen(QColor(0xB0, 0xBA, 0xC4));
  p.setBrush(Qt::NoBrush);
  p.drawRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5));
  QRectF sr = owner_->scene_->sceneRect();
  if (sr.isEmpty() || target_.isEmpty()) return;
  QRectF vis = owner_->view_->mapToScene(owner_->view_->viewport()->rect()).boundingRect().intersected(sr);
  double sx = target_.width() / sr.width(), sy = target_.height() / sr.height();
  QRectF r(target_.left() + (vis.left() - sr.left()) * sx, target_.top() + (vis.top() - sr.top()) * sy,
           vis.width() * sx, vis.height() * sy);
  p.setPen(QPen(kSelect, 1.5));
  p.setBrush(QColor(0xD8, 0x1B, 0x60, 18));
  p.drawRect(r);
}

void GraphMinimap::mousePressEvent(QMouseEvent* e) { owner_->view_->centerOn(toScene(e->position())); }

void GraphMinimap::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) owner_->view_->centerOn(toScene(e->position()));
}

}  // namespace lstudio::ui
