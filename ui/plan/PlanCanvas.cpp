#include "ui/plan/PlanCanvas.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "engine/support/FormatUtil.h"

namespace lstudio::ui {
namespace {

constexpr double kLeftMargin = 84, kRightMargin = 14, kAxisHeight = 34, kGap = 10;
constexpr double kZoomStep = 1.25;
constexpr int kMaxLabels = 400;

// Distinct, print-friendly colours for the keys that cover the most area;
// the rest get softer hues so the big ones stand out.
const QColor kPalette[] = {
    QColor(78, 121, 167),  QColor(242, 142, 43),  QColor(89, 161, 79),  QColor(225, 87, 89),
    QColor(118, 183, 178), QColor(237, 201, 72),  QColor(176, 122, 161), QColor(255, 157, 167),
    QColor(156, 117, 95),  QColor(148, 103, 189), QColor(23, 190, 207),  QColor(188, 189, 34),
};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

QColor keyColor(const std::string& key, int index, int* paletteUsed) {
  if (key == "input") return QColor(120, 130, 140);
  if (key == "view") return QColor(190, 190, 190);
  if (key == "state") return QColor(160, 150, 130);
  if (*paletteUsed < kPaletteSize) return kPalette[(*paletteUsed)++];
  return QColor::fromHsvF(std::fmod(index * 0.618034, 1.0), 0.32, 0.88);
}

double niceStep(double range, double ticks) {
  if (range <= 0 || ticks <= 0) return 1;
  const double raw = range / ticks, mag = std::pow(10.0, std::floor(std::log10(raw))), n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

/// Byte ticks in the unit that suits the range: 0, 2 MiB, 4 MiB, ...
struct ByteTicks {
  double unit = 1, step = 1;
  const char* suffix = "B";
  int decimals = 0;
  ByteTicks(double range, double ticks) {
    static const struct { double unit; const char* suffix; } units[] = {
        {1024.0 * 1024 * 1024, "GiB"}, {1024.0 * 1024, "MiB"}, {1024.0, "KiB"}, {1.0, "B"}};
    for (const auto& u : units)
      if (range >= u.unit || u.unit == 1.0) {
        unit = u.unit;
        suffix = u.suffix;
        break;
      }
    const double s = unit == 1.0 ? std::max(1.0, niceStep(range, ticks)) : niceStep(range / unit, ticks);
    decimals = s < 1 ? static_cast<int>(std::ceil(-std::log10(s) - 1e-9)) : 0;
    step = unit == 1.0 ? s : s * unit;
  }
  QString label(double bytes) const {
    if (bytes == 0) return QStringLiteral("0");
    return QString::number(bytes / unit, 'f', decimals) + " " + suffix;
  }
};

QString bytesText(uint64_t n) { return QString::fromStdString(formatBytes(n)); }

QString valueName(const Method& m, ValueId v) {
  const std::string& n = m.values[static_cast<size_t>(v)].name;
  return n.empty() ? QStringLiteral("value %1").arg(v) : QString::fromStdString(n);
}

/// The title of a vertical axis, turned to read upwards beside `area`.
void paintAxisTitle(QPainter& p, const QFontMetrics& fm, const QRectF& area, const QColor& pen, const QString& text) {
  p.save();
  p.translate(12, area.center().y());
  p.rotate(-90);
  p.setPen(pen);
  p.drawText(QRectF(-area.height() / 2, -fm.height() / 2.0 - 2, area.height(), fm.height()), Qt::AlignCenter, text);
  p.restore();
}

void paintFrame(QPainter& p, const QRectF& area) {
  p.setPen(QColor(200, 200, 205));
  p.setBrush(Qt::NoBrush);
  p.drawRect(area);
}

/// A label on a light box so the curve never makes it unreadable; the box
/// joins `taken` so later labels can keep clear of it.
void paintBoxedLabel(QPainter& p, const QFontMetrics& fm, QPointF baseline, const QString& text, const QColor& c,
                     std::vector<QRectF>& taken) {
  const QRectF box(baseline.x() - 2, baseline.y() - fm.ascent() - 1, fm.horizontalAdvance(text) + 4, fm.height() + 1);
  p.fillRect(box, QColor(255, 255, 255, 215));
  p.setPen(c);
  p.drawText(baseline, text);
  taken.push_back(box);
}

}  // namespace

PlanCanvas::PlanCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(360, 260);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void PlanCanvas::setPlanLayout(std::shared_ptr<const PlanLayout> layout, int lane) {
  layout_ = std::move(layout);
  recolor();
  selection_.clear();
  hover_ = -1;
  lane_ = 0;
  setLane(lane);
}

void PlanCanvas::setLane(int lane) {
  if (!layout_ || layout_->lanes.empty()) {
    lane_ = 0;
    update();
    return;
  }
  lane_ = std::clamp(lane, 0, static_cast<int>(layout_->lanes.size()) - 1);
  hover_ = -1;
  fit();
}

void PlanCanvas::setColorBy(ColorBy c) {
  colorBy_ = c;
  recolor();
  update();
}

void PlanCanvas::setSelection(std::vector<int32_t> rects) {
  selection_ = std::move(rects);
  update();
}

const PlanLane* PlanCanvas::currentLane() const {
  if (!layout_ || !layout_->planned || lane_ >= static_cast<int>(layout_->lanes.size())) return nullptr;
  return &layout_->lanes[static_cast<size_t>(lane_)];
}

int PlanCanvas::legendHeight() const { return fontMetrics().height() + 12; }

QRectF PlanCanvas::laneArea() const {
  const double plotH = std::max(90.0, height() * 0.26);
  const double top = legendHeight() + 4;
  return QRectF(kLeftMargin, top, std::max(10.0, width() - kLeftMargin - kRightMargin),
                std::max(10.0, height() - top - plotH - kGap - kAxisHeight));
}

QRectF PlanCanvas::plotArea() const {
  const QRectF lane = laneArea();
  return QRectF(lane.left(), lane.bottom() + kGap, lane.width(),
                std::max(10.0, height() - lane.bottom() - kGap - kAxisHeight));
}

double PlanCanvas::sx(double step) const { return laneArea().left() + (step - x0_) * xScale_; }
double PlanCanvas::sy(double bytes) const { return laneArea().bottom() - (bytes - y0_) * yScale_; }
double PlanCanvas::stepAt(double px) const { return x0_ + (px - laneArea().left()) / xScale_; }
double PlanCanvas::bytesAt(double py) const { return y0_ + (laneArea().bottom() - py) / yScale_; }
double PlanCanvas::lastVisibleStep() const { return stepAt(laneArea().right()); }

void PlanCanvas::fit() {
  const PlanLane* l = currentLane();
  const QRectF a = laneArea();
  const double steps = l ? std::max(layout_->report.steps, 1) : 1;
  const double extent = l ? std::max<double>(l->extent, 1) * 1.04 : 1;
  x0_ = 0;
  xScale_ = a.width() / steps;
  y0_ = 0;
  yScale_ = a.height() / extent;
  fitted_ = true;
  update();
}

void PlanCanvas::clampView() {
  const PlanLane* l = currentLane();
  if (!l) return;
  const QRectF a = laneArea();
  const double steps = std::max(layout_->report.steps, 1);
  const double extent = std::max<double>(l->extent, 1) * 1.04;
  xScale_ = std::clamp(xScale_, a.width() / steps, std::max(a.width() / 3.0, a.width() / steps));
  yScale_ = std::clamp(yScale_, a.height() / extent, std::max(a.height() / 32.0, a.height() / extent));
  x0_ = std::clamp(x0_, 0.0, std::max(0.0, steps - a.width() / xScale_));
  y0_ = std::clamp(y0_, 0.0, std::max(0.0, extent - a.height() / yScale_));
}

void PlanCanvas::setStepRange(double first, double last) {
  const QRectF a = laneArea();
  if (last <= first) return;
  xScale_ = a.width() / (last - first);
  x0_ = first;
  fitted_ = false;
  clampView();
  update();
}

void PlanCanvas::setByteRange(double low, double high) {
  const QRectF a = laneArea();
  if (high <= low) return;
  yScale_ = a.height() / (high - low);
  y0_ = low;
  fitted_ = false;
  clampView();
  update();
}

void PlanCanvas::zoomX(double factor, double aroundPx) {
  const double at = stepAt(aroundPx);
  xScale_ *= factor;
  x0_ = at - (aroundPx - laneArea().left()) / xScale_;
  fitted_ = false;
  clampView();
  update();
}

void PlanCanvas::zoomY(double factor, double aroundPy) {
  const double at = bytesAt(aroundPy);
  yScale_ *= factor;
  y0_ = at - (laneArea().bottom() - aroundPy) / yScale_;
  fitted_ = false;
  clampView();
  update();
}

void PlanCanvas::ensureVisible(int32_t rect) {
  if (!layout_ || rect < 0 || static_cast<size_t>(rect) >= layout_->rects.size()) return;
  const PlanRect& r = layout_->rects[static_cast<size_t>(rect)];
  if (r.lane != lane_) setLane(r.lane);
  const QRectF a = laneArea();
  const double visSteps = a.width() / xScale_, visBytes = a.height() / yScale_;
  const double w = r.last + 1 - r.first, h = static_cast<double>(std::max<uint64_t>(r.size, 1));
  if (w > visSteps * 0.9) {
    setStepRange(r.first - w * 0.05, r.last + 1 + w * 0.05);
  } else if (r.first < x0_ || r.last + 1 > x0_ + visSteps) {
    x0_ = r.first + w / 2 - visSteps / 2;
    fitted_ = false;
  }
  if (h > visBytes * 0.9) {
    setByteRange(static_cast<double>(r.offset) - h * 0.05, static_cast<double>(r.offset) + h * 1.05);
  } else if (static_cast<double>(r.offset) < y0_ || static_cast<double>(r.offset) + h > y0_ + visBytes) {
    y0_ = static_cast<double>(r.offset) + h / 2 - visBytes / 2;
    fitted_ = false;
  }
  clampView();
  update();
}

QRectF PlanCanvas::widgetRect(int32_t rect) const {
  if (!layout_ || rect < 0 || static_cast<size_t>(rect) >= layout_->rects.size()) return {};
  const PlanRect& r = layout_->rects[static_cast<size_t>(rect)];
  return QRectF(QPointF(sx(r.first), sy(static_cast<double>(r.offset + r.size))),
                QPointF(sx(r.last + 1), sy(static_cast<double>(r.offset))));
}

int32_t PlanCanvas::rectAt(QPointF p) const {
  const PlanLane* l = currentLane();
  if (!l || !laneArea().contains(p)) return -1;
  const double step = stepAt(p.x()), bytes = bytesAt(p.y());
  // A rectangle thinner than a pixel is still hit within half a pixel of it.
  const double slackSteps = 1.5 / xScale_, slackBytes = 1.5 / yScale_;
  int32_t best = -1;
  double bestArea = 0;
  layout_->forEachInSteps(lane_, step - slackSteps, step + slackSteps, [&](int32_t i) {
    const PlanRect& r = layout_->rects[static_cast<size_t>(i)];
    if (step < r.first - slackSteps || step > r.last + 1 + slackSteps) return;
    if (bytes < static_cast<double>(r.offset) - slackBytes || bytes > static_cast<double>(r.offset + r.size) + slackBytes)
      return;
    const double area = static_cast<double>(r.size) * (r.last - r.first + 1);
    if (best < 0 || area < bestArea) {
      best = i;
      bestArea = area;
    }
  });
  return best;
}

QColor PlanCanvas::colorOf(int32_t rect) const {
  const PlanRect& r = layout_->rects[static_cast<size_t>(rect)];
  const size_t k = static_cast<size_t>(colorBy_ == ColorBy::Op ? r.opKey : r.moduleKey);
  return k < keyColors_.size() ? keyColors_[k] : QColor(Qt::gray);
}

void PlanCanvas::recolor() {
  keyColors_.clear();
  if (!layout_) return;
  const auto& keys = colorBy_ == ColorBy::Op ? layout_->opKeys : layout_->moduleKeys;
  int used = 0;
  for (size_t i = 0; i < keys.size(); ++i) keyColors_.push_back(keyColor(keys[i], static_cast<int>(i), &used));
}

QString PlanCanvas::toolTipFor(int32_t rect) const {
  if (!layout_ || rect < 0 || static_cast<size_t>(rect) >= layout_->rects.size()) return {};
  const PlanRect& r = layout_->rects[static_cast<size_t>(rect)];
  const Method& m = layout_->method();
  const TensorSpec& t = m.values[static_cast<size_t>(r.value)].tensor();
  QString producer = QStringLiteral("none (method input or view)");
  if (r.producer >= 0) {
    const Node& n = m.nodes[static_cast<size_t>(r.producer)];
    producer = QStringLiteral("#%1 %2 (%3)")
                   .arg(r.producer)
                   .arg(QString::fromStdString(n.name.empty() ? std::string("node") : n.name).toHtmlEscaped(),
                        QString::fromStdString(layout_->nodeOp(r.producer)).toHtmlEscaped());
    if (!n.meta.moduleStack.empty() && !n.meta.moduleStack.back().path.empty())
      producer += QStringLiteral("<br>module: %1").arg(QString::fromStdString(n.meta.moduleStack.back().path).toHtmlEscaped());
  }
  QString text = QStringLiteral("<b>%1</b> <span style='color:gray'>value %2</span><br>")
                     .arg(valueName(m, r.value).toHtmlEscaped())
                     .arg(r.value);
  text += QStringLiteral("produced by: %1<br>").arg(producer);
  text += QStringLiteral("%1<br>").arg(QString::fromStdString(t.shapeString()).toHtmlEscaped());
  text += QStringLiteral("size: %1 (%2 B)<br>").arg(bytesText(r.size)).arg(r.size);
  text += QStringLiteral("mem_id %1, offset %2 (%3)<br>")
              .arg(layout_->lanes[static_cast<size_t>(r.lane)].memId)
              .arg(r.offset)
              .arg(bytesText(r.offset));
  text += QStringLiteral("lifetime: steps %1 \u2013 %2 (%3 steps)").arg(r.first).arg(r.last).arg(r.last - r.first + 1);
  if (r.storage >= 0) {
    const size_t aliases = layout_->report.storages[static_cast<size_t>(r.storage)].tensors.size();
    if (aliases > 1) text += QStringLiteral("<br>shares its bytes with %1 other tensor(s)").arg(aliases - 1);
  }
  return text;
}

// ---- painting -----------------------------------------------------------

void PlanCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  painted_ = 0;
  legendMore_ = QRectF();
  if (!currentLane()) return;
  p.setFont(font());
  paintLegend(p, QRectF(kLeftMargin, 0, width() - kLeftMargin - kRightMargin, legendHeight()));
  paintLane(p, laneArea());
  paintPlot(p, plotArea());
  paintStepAxis(p, QRectF(kLeftMargin, plotArea().bottom(), laneArea().width(), kAxisHeight));
}

void PlanCanvas::paintLegend(QPainter& p, const QRectF& area) {
  const auto& keys = colorBy_ == ColorBy::Op ? layout_->opKeys : layout_->moduleKeys;
  const QFontMetrics fm = fontMetrics();
  const QString title = colorBy_ == ColorBy::Op ? tr("Colour: producing op") : tr("Colour: module");
  p.setPen(palette().color(QPalette::PlaceholderText));
  double x = area.left();
  const double cy = area.center().y();
  p.drawText(QPointF(x, cy + fm.ascent() / 2.0 - 1), title);
  x += fm.horizontalAdvance(title) + 14;
  legendMore_ = QRectF();
  legendHidden_ = keys.size();
  for (size_t i = 0; i < keys.size(); ++i) {
    const QString name = QString::fromStdString(keys[i]);
    const double w = 14 + fm.horizontalAdvance(name) + 14;
    const QString more = tr("+%1 more").arg(keys.size() - i);
    if (x + w + (i + 1 < keys.size() ? fm.horizontalAdvance(more) : 0) > area.right()) {
      // Drawn like a link: hovering or clicking it lists the keys left out.
      QFont f = p.font();
      f.setUnderline(true);
      p.save();
      p.setFont(f);
      p.setPen(palette().color(QPalette::Link));
      p.drawText(QPointF(x, cy + fm.ascent() / 2.0 - 1), more);
      p.restore();
      legendMore_ = QRectF(x - 2, area.top(), fm.horizontalAdvance(more) + 4, area.height());
      legendHidden_ = i;
      break;
    }
    p.fillRect(QRectF(x, cy - 5, 10, 10), keyColors_[i]);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QPointF(x + 14, cy + fm.ascent() / 2.0 - 1), name);
    x += w;
  }
}

QString PlanCanvas::legendOverflowText() const {
  if (!layout_ || legendMore_.isEmpty()) return {};
  const auto& keys = colorBy_ == ColorBy::Op ? layout_->opKeys : layout_->moduleKeys;
  QString t = "<table cellspacing=2>";
  for (size_t i = legendHidden_; i < keys.size() && i < keyColors_.size(); ++i)
    t += QStringLiteral("<tr><td style='background:%1'>&nbsp;&nbsp;&nbsp;</td><td>%2</td></tr>")
             .arg(keyColors_[i].name(), QString::fromStdString(keys[i]).toHtmlEscaped());
  return t + "</table>";
}

void PlanCanvas::paintLane(QPainter& p, const QRectF& a) {
  const PlanLane& l = *currentLane();
  paintByteGrid(p, a, l);
  p.save();
  p.setClipRect(a);
  paintRectLabels(p, a, paintRects(p, a));
  paintLaneMarks(p, a, l);
  p.restore();
  paintFrame(p, a);
}

/// The byte axis with grid lines; the arena's bytes on white, above it grey.
void PlanCanvas::paintByteGrid(QPainter& p, const QRectF& a, const PlanLane& l) {
  const QFontMetrics fm = fontMetrics();
  const QColor muted = palette().color(QPalette::PlaceholderText);
  const double b0 = bytesAt(a.bottom()), b1 = bytesAt(a.top());
  const ByteTicks ticks(b1 - b0, std::max(2.0, a.height() / 48));
  p.fillRect(a, QColor(250, 250, 251));
  const double arenaTop = std::max(a.top(), sy(static_cast<double>(l.arena.size)));
  if (arenaTop < a.bottom()) p.fillRect(QRectF(QPointF(a.left(), arenaTop), a.bottomRight()), Qt::white);
  for (double t = std::ceil(b0 / ticks.step) * ticks.step; t <= b1; t += ticks.step) {
    const double y = sy(t);
    p.setPen(QColor(232, 232, 236));
    p.drawLine(QPointF(a.left(), y), QPointF(a.right(), y));
    p.setPen(muted);
    const QString s = ticks.label(t);
    p.drawText(QRectF(0, y - fm.height() / 2.0, a.left() - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter, s);
  }
  paintAxisTitle(p, fm, a, muted, tr("offset in mem_id %1").arg(l.memId));
}

/// The rectangles in view; an outline (a darker fill under an inset) only
/// when there is room for it. Returns the boxes big enough for a label.
std::vector<PlanCanvas::RectLabel> PlanCanvas::paintRects(QPainter& p, const QRectF& a) {
  const QFontMetrics fm = fontMetrics();
  const double s0 = stepAt(a.left()), s1 = stepAt(a.right());
  std::vector<RectLabel> labels;
  QColor colors[2];
  int32_t lastKey = -1;
  const bool byOp = colorBy_ == ColorBy::Op;
  int painted = 0;
  // Zoomed out, many tensors shrink to one pixel and land on the same
  // pixels; each pixel gets one fill.
  const int dotsW = static_cast<int>(a.width()) + 4, dotsH = static_cast<int>(a.height()) + 4;
  dots_.assign(static_cast<size_t>(dotsW) * static_cast<size_t>(dotsH), 0);
  layout_->forEachInSteps(lane_, s0, s1, [&](int32_t i) {
    const PlanRect& r = layout_->rects[static_cast<size_t>(i)];
    const double top = sy(static_cast<double>(r.offset + r.size)), bottom = sy(static_cast<double>(r.offset));
    if (bottom < a.top() || top > a.bottom()) return;
    double left = sx(r.first), right = sx(r.last + 1);
    left = std::max(left, a.left() - 2);
    right = std::min(right, a.right() + 2);
    QRectF box(QPointF(left, top), QPointF(right, bottom));
    if (box.width() < 1) box.setWidth(1);
    if (box.height() < 1) box.setTop(box.bottom() - 1);
    ++painted;
    if (box.width() <= 1 && box.height() <= 1) {
      const int ix = static_cast<int>(box.left() - a.left()) + 2, iy = static_cast<int>(box.top() - a.top()) + 2;
      if (ix >= 0 && iy >= 0 && ix < dotsW && iy < dotsH) {
        uint8_t& dot = dots_[static_cast<size_t>(iy) * static_cast<size_t>(dotsW) + static_cast<size_t>(ix)];
        if (dot) return;
        dot = 1;
      }
    }
    const int32_t key = byOp ? r.opKey : r.moduleKey;
    if (key != lastKey) {
      colors[0] = colorOf(i);
      colors[1] = colors[0].darker(135);
      lastKey = key;
    }
    if (box.width() >= 5 && box.height() >= 5) {
      p.fillRect(box, colors[1]);
      p.fillRect(box.adjusted(1, 1, -1, -1), colors[0]);
      if (box.width() > 56 && box.height() > fm.height() + 2 && labels.size() < kMaxLabels) labels.push_back({box, i});
    } else {
      p.fillRect(box, colors[0]);
    }
  });
  painted_ = painted;
  return labels;
}

/// Value names in the boxes they fit in.
void PlanCanvas::paintRectLabels(QPainter& p, const QRectF& a, const std::vector<RectLabel>& labels) {
  const QFontMetrics fm = fontMetrics();
  const Method& m = layout_->method();
  p.setPen(QColor(20, 20, 20));
  for (const RectLabel& lb : labels) {
    const QRectF inner = lb.box.intersected(a).adjusted(4, 1, -4, -1);
    if (inner.width() < 40) continue;
    p.drawText(inner, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(valueName(m, layout_->rects[lb.rect].value), Qt::ElideRight, static_cast<int>(inner.width())));
  }
}

/// Arena size, peak step, hover and selection on top of the rectangles.
void PlanCanvas::paintLaneMarks(QPainter& p, const QRectF& a, const PlanLane& l) {
  const QFontMetrics fm = fontMetrics();
  const double ay = sy(static_cast<double>(l.arena.size));
  if (ay >= a.top() && ay <= a.bottom()) {
    p.setPen(QPen(QColor(200, 40, 40), 1, Qt::DashLine));
    p.drawLine(QPointF(a.left(), ay), QPointF(a.right(), ay));
    const QString s = tr("arena size %1").arg(bytesText(l.arena.size));
    p.drawText(QPointF(a.right() - fm.horizontalAdvance(s) - 4, ay - 3), s);
  }
  if (l.arena.peakStep >= 0) {
    const double px = sx(l.arena.peakStep + 0.5);
    p.setPen(QPen(QColor(230, 120, 0), 1, Qt::DotLine));
    p.drawLine(QPointF(px, a.top()), QPointF(px, a.bottom()));
  }
  if (hover_ >= 0 && layout_->rects[static_cast<size_t>(hover_)].lane == lane_) {
    p.setPen(QPen(QColor(40, 40, 40), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(widgetRect(hover_).adjusted(-0.5, -0.5, 0.5, 0.5));
  }
  for (int32_t s : selection_) {
    if (layout_->rects[static_cast<size_t>(s)].lane != lane_) continue;
    QRectF r = widgetRect(s);
    if (r.width() < 3) r.adjust(-1.5, 0, 1.5, 0);
    if (r.height() < 3) r.adjust(0, -1.5, 0, 1.5);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(Qt::white, 4));
    p.drawRect(r);
    p.setPen(QPen(QColor(10, 10, 10), 2));
    p.drawRect(r);
  }
}

void PlanCanvas::paintPlot(QPainter& p, const QRectF& a) {
  const PlanLane& l = *currentLane();
  p.fillRect(a, Qt::white);
  const LiveScale py{a, std::max<double>({static_cast<double>(l.arena.size), static_cast<double>(l.arena.lowerBound),
                                          static_cast<double>(l.maxLive), 1.0}) * 1.12};
  paintLiveAxis(p, a, py);
  p.save();
  p.setClipRect(a);
  paintLiveCurve(p, a, l, py);
  // The peak label moves aside rather than cover the line labels.
  std::vector<QRectF> taken;
  paintArenaLines(p, a, l, py, taken);
  if (l.arena.peakStep >= 0) paintPeakMarker(p, a, l, py, taken);
  plotLabels_ = std::move(taken);
  p.restore();
  paintFrame(p, a);
}

void PlanCanvas::paintLiveAxis(QPainter& p, const QRectF& a, const LiveScale& py) {
  const QFontMetrics fm = fontMetrics();
  const QColor muted = palette().color(QPalette::PlaceholderText);
  const ByteTicks ticks(py.max, std::max(2.0, a.height() / 36));
  for (double t = 0; t <= py.max; t += ticks.step) {
    p.setPen(QColor(236, 236, 240));
    p.drawLine(QPointF(a.left(), py(t)), QPointF(a.right(), py(t)));
    p.setPen(muted);
    p.drawText(QRectF(0, py(t) - fm.height() / 2.0, a.left() - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               ticks.label(t));
  }
  paintAxisTitle(p, fm, a, muted, tr("live bytes"));
}

/// The live-bytes curve: one point per step, or the largest value per
/// pixel column when steps are denser than pixels.
void PlanCanvas::paintLiveCurve(QPainter& p, const QRectF& a, const PlanLane& l, const LiveScale& py) {
  const int32_t steps = static_cast<int32_t>(l.live.size());
  const int32_t first = std::max(0, static_cast<int32_t>(std::floor(stepAt(a.left())))),
                last = std::min(steps - 1, static_cast<int32_t>(std::ceil(stepAt(a.right()))));
  if (first > last) return;
  QPolygonF curve;
  curve << QPointF(sx(first), a.bottom());
  if (xScale_ >= 1) {
    for (int32_t s = first; s <= last; ++s) {
      const double y = py(static_cast<double>(l.live[static_cast<size_t>(s)]));
      curve << QPointF(sx(s), y) << QPointF(sx(s + 1), y);
    }
  } else {
    for (double px = std::floor(sx(first)); px <= a.right() + 1; px += 1) {
      const int32_t lo = std::max(first, static_cast<int32_t>(std::floor(stepAt(px)))),
                    hi = std::min(last, static_cast<int32_t>(std::floor(stepAt(px + 1))));
      if (lo > last) break;
      uint64_t v = 0;
      for (int32_t s = lo; s <= hi; ++s) v = std::max(v, l.live[static_cast<size_t>(s)]);
      curve << QPointF(px, py(static_cast<double>(v))) << QPointF(px + 1, py(static_cast<double>(v)));
    }
  }
  curve << QPointF(curve.back().x(), a.bottom());
  p.setPen(QPen(QColor(50, 100, 160), 1));
  p.setBrush(QColor(78, 121, 167, 80));
  p.drawPolygon(curve);
}

/// The arena size, the lower bound and the reordered bound as labelled lines across the plot.
void PlanCanvas::paintArenaLines(QPainter& p, const QRectF& a, const PlanLane& l, const LiveScale& py,
                                 std::vector<QRectF>& taken) {
  const QFontMetrics fm = fontMetrics();
  auto hline = [&](double v, const QColor& c, Qt::PenStyle style, const QString& text, bool above) {
    const double y = py(v);
    p.setPen(QPen(c, 1.5, style));
    p.drawLine(QPointF(a.left(), y), QPointF(a.right(), y));
    paintBoxedLabel(p, fm, QPointF(a.left() + 6, above ? y - 4 : y + fm.ascent() + 2), text, c, taken);
  };
  hline(static_cast<double>(l.arena.size), QColor(200, 40, 40), Qt::SolidLine,
        tr("arena size %1").arg(bytesText(l.arena.size)), true);
  hline(static_cast<double>(l.arena.lowerBound), QColor(40, 140, 60), Qt::DashLine,
        tr("lower bound %1").arg(bytesText(l.arena.lowerBound)),
        py(static_cast<double>(l.arena.size)) - py(static_cast<double>(l.arena.lowerBound)) < -fm.height());
  // Beyond ExecuTorch: the bound another order and in-place reuse reach (studio_memory_aware_order).
  if (l.arena.reorderedBound && l.arena.reorderedBound < l.arena.lowerBound)
    hline(static_cast<double>(l.arena.reorderedBound), QColor(120, 60, 170), Qt::DotLine,
          tr("reordered bound %1 (studio_memory_aware_order)").arg(bytesText(l.arena.reorderedBound)), false);
}

/// The peak step: a dotted line, a marker on the curve and a label that
/// keeps clear of the line labels.
void PlanCanvas::paintPeakMarker(QPainter& p, const QRectF& a, const PlanLane& l, const LiveScale& py,
                                 std::vector<QRectF>& taken) {
  const QFontMetrics fm = fontMetrics();
  const int32_t steps = static_cast<int32_t>(l.live.size());
  const double px = sx(l.arena.peakStep + 0.5);
  p.setPen(QPen(QColor(230, 120, 0), 1, Qt::DotLine));
  p.drawLine(QPointF(px, a.top()), QPointF(px, a.bottom()));
  const double y = py(static_cast<double>(l.live[static_cast<size_t>(std::min(l.arena.peakStep, steps - 1))]));
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(230, 120, 0));
  QPolygonF marker;
  marker << QPointF(px, y) << QPointF(px - 5, y - 8) << QPointF(px + 5, y - 8);
  p.drawPolygon(marker);
  // Off screen, the label stays at the edge and points the way.
  const QString s = px < a.left()    ? tr("\u2190 peak at step %1").arg(l.arena.peakStep)
                    : px > a.right() ? tr("peak at step %1 \u2192").arg(l.arena.peakStep)
                                     : tr("peak at step %1").arg(l.arena.peakStep);
  const double w = fm.horizontalAdvance(s);
  double base = std::max(a.top() + fm.ascent() + 2, y - 11);
  auto fits = [&](double x) {
    const QRectF box(x - 2, base - fm.ascent() - 1, w + 4, fm.height() + 1);
    if (box.left() < a.left() || box.right() > a.right()) return false;
    for (const QRectF& t : taken)
      if (t.intersects(box)) return false;
    return true;
  };
  // Beside the line at the marker's height, else a line lower each time, so it
  // never covers the arena and lower-bound labels.
  const double clampedLeft = std::clamp(px - w / 2, a.left() + 2, std::max(a.left() + 2, a.right() - w - 2));
  QPointF at(clampedLeft, base);
  bool placed = false;
  for (base = at.y(); !placed && base <= a.bottom() - fm.descent(); base += fm.height() + 1)
    for (double candidate : {px - w / 2, px + 10, px - 10 - w, clampedLeft})
      if (fits(candidate)) {
        at = QPointF(candidate, base);
        placed = true;
        break;
      }
  paintBoxedLabel(p, fm, at, s, QColor(190, 95, 0), taken);
}

void PlanCanvas::paintStepAxis(QPainter& p, const QRectF& a) {
  const QFontMetrics fm = fontMetrics();
  const double s0 = stepAt(a.left()), s1 = stepAt(a.right());
  const double step = std::max(1.0, niceStep(s1 - s0, std::max(2.0, a.width() / 90)));
  const QColor muted = palette().color(QPalette::PlaceholderText);
  for (double t = std::ceil(s0 / step) * step; t <= s1; t += step) {
    const double x = sx(t);
    p.setPen(QColor(160, 160, 165));
    p.drawLine(QPointF(x, a.top()), QPointF(x, a.top() + 4));
    p.setPen(muted);
    const QString s = QString::number(static_cast<qint64>(t));
    p.drawText(QRectF(x - 40, a.top() + 5, 80, fm.height()), Qt::AlignHCenter | Qt::AlignTop, s);
  }
  p.setPen(muted);
  p.drawText(QRectF(0, a.top() + 5, a.left() - 6, fm.height()), Qt::AlignRight | Qt::AlignTop, tr("step"));
}

// ---- interaction --------------------------------------------------------

void PlanCanvas::resizeEvent(QResizeEvent*) {
  if (fitted_)
    fit();
  else
    clampView();
}

void PlanCanvas::wheelEvent(QWheelEvent* e) {
  if (!currentLane()) return;
  const double notches = e->angleDelta().y() / 120.0;
  if (notches == 0) return;
  const double factor = std::pow(kZoomStep, notches);
  if (e->modifiers() & Qt::ControlModifier)
    zoomY(factor, e->position().y());
  else
    zoomX(factor, e->position().x());
  e->accept();
}

void PlanCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  if (legendMore_.contains(e->position())) return;  // opened on release: a tooltip hides at a press
  pressed_ = true;
  dragged_ = false;
  pressPos_ = lastPos_ = e->position();
  setFocus();
}

void PlanCanvas::mouseMoveEvent(QMouseEvent* e) {
  if (pressed_) {
    const QPointF d = e->position() - lastPos_;
    if ((e->position() - pressPos_).manhattanLength() > 3) dragged_ = true;
    if (dragged_) {
      x0_ -= d.x() / xScale_;
      if (laneArea().contains(pressPos_)) y0_ += d.y() / yScale_;
      fitted_ = false;
      clampView();
      update();
      setCursor(Qt::ClosedHandCursor);
    }
    lastPos_ = e->position();
    return;
  }
  const int32_t h = rectAt(e->position());
  if (h != hover_) {
    hover_ = h;
    update();
  }
}

void PlanCanvas::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && !pressed_ && legendMore_.contains(e->position())) {
    // The legend's "+N more" opens the full list.
    QToolTip::showText(e->globalPosition().toPoint(), legendOverflowText(), this, legendMore_.toAlignedRect(), 30000);
    return;
  }
  if (e->button() != Qt::LeftButton || !pressed_) return;
  pressed_ = false;
  unsetCursor();
  if (!dragged_) emit rectClicked(rectAt(e->position()));
}

void PlanCanvas::leaveEvent(QEvent*) {
  if (hover_ >= 0) {
    hover_ = -1;
    update();
  }
}

void PlanCanvas::keyPressEvent(QKeyEvent* e) {
  if (!currentLane()) return QWidget::keyPressEvent(e);
  const QRectF a = laneArea();
  const bool ctrl = e->modifiers() & Qt::ControlModifier;
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      ctrl ? zoomY(kZoomStep, a.center().y()) : zoomX(kZoomStep, a.center().x());
      break;
    case Qt::Key_Minus:
      ctrl ? zoomY(1 / kZoomStep, a.center().y()) : zoomX(1 / kZoomStep, a.center().x());
      break;
    case Qt::Key_Left:
    case Qt::Key_Right:
      x0_ += (e->key() == Qt::Key_Left ? -0.1 : 0.1) * a.width() / xScale_;
      fitted_ = false;
      clampView();
      update();
      break;
    case Qt::Key_Up:
    case Qt::Key_Down:
      y0_ += (e->key() == Qt::Key_Up ? 0.1 : -0.1) * a.height() / yScale_;
      fitted_ = false;
      clampView();
      update();
      break;
    case Qt::Key_0:
    case Qt::Key_Home:
    case Qt::Key_F:
      fit();
      break;
    default:
      QWidget::keyPressEvent(e);
  }
}

bool PlanCanvas::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    if (legendMore_.contains(he->pos())) {
      QToolTip::showText(he->globalPos(), legendOverflowText(), this, legendMore_.toAlignedRect());
      return true;
    }
    const int32_t r = rectAt(he->pos());
    if (r >= 0)
      QToolTip::showText(he->globalPos(), toolTipFor(r), this, widgetRect(r).toAlignedRect().intersected(rect()));
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace lstudio::ui
