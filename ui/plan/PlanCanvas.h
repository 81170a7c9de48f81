// The drawing surface of the memory-plan view: one arena lane (x = step,
// y = byte offset, a rectangle per planned tensor) above the plot of live
// bytes over steps, both on the same x axis. Paints with QPainter over the
// rectangles in view only (PlanLayout's step buckets), with labels and
// outlines only when they are big enough to read.
#pragma once

#include <QRectF>
#include <QWidget>
#include <memory>
#include <vector>

#include "ui/plan/PlanLayout.h"

namespace lstudio::ui {

class PlanCanvas : public QWidget {
  Q_OBJECT
 public:
  enum class ColorBy { Op, Module };

  explicit PlanCanvas(QWidget* parent = nullptr);

  void setPlanLayout(std::shared_ptr<const PlanLayout> layout, int lane);
  void setLane(int lane);
  int lane() const { return lane_; }
  void setColorBy(ColorBy c);
  ColorBy colorBy() const { return colorBy_; }
  /// Outlines these rectangles (indices into PlanLayout::rects).
  void setSelection(std::vector<int32_t> rects);
  const std::vector<int32_t>& selection() const { return selection_; }
  /// Pans (and zooms out if needed) so the rectangle is in view.
  void ensureVisible(int32_t rect);
  void fit();
  /// Shows steps [first, last] across the width (the y range is kept).
  void setStepRange(double first, double last);
  /// Shows bytes [low, high) over the lane's height.
  void setByteRange(double low, double high);
  double firstVisibleStep() const { return x0_; }
  double lastVisibleStep() const;

  /// Index into PlanLayout::rects of the rectangle at a widget point, or -1;
  /// the smallest one when several (a view over its base) are there.
  int32_t rectAt(QPointF p) const;
  /// Where a rectangle is drawn now, in widget pixels.
  QRectF widgetRect(int32_t rect) const;
  /// Rectangles in view at the last paintEvent (sub-pixel ones on an
  /// already filled pixel are counted but not filled again).
  int paintedRectangles() const { return painted_; }
  QRectF laneArea() const;
  QRectF plotArea() const;
  QColor colorOf(int32_t rect) const;
  QString toolTipFor(int32_t rect) const;
  /// Where the legend's "+N more" was drawn (empty when every key fits).
  QRectF legendMoreRect() const { return legendMore_; }
  /// Every legend key the "+N more" stands for, with its colour (rich text).
  QString legendOverflowText() const;
  /// Boxes of the plot's labels at the last paint: arena size, lower bound, then the peak.
  const std::vector<QRectF>& plotLabelBoxes() const { return plotLabels_; }

 signals:
  void rectClicked(int32_t rect);  ///< -1 for a click on empty space

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void leaveEvent(QEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  bool event(QEvent*) override;

 private:
  const PlanLane* currentLane() const;
  double sx(double step) const;
  double sy(double bytes) const;
  double stepAt(double px) const;
  double bytesAt(double py) const;
  void zoomX(double factor, double aroundPx);
  void zoomY(double factor, double aroundPy);
  void clampView();
  int legendHeight() const;
  void paintLegend(QPainter& p, const QRectF& area);
  void paintLane(QPainter& p, const QRectF& area);
  struct RectLabel {
    QRectF box;
    int32_t rect;
  };
  void paintByteGrid(QPainter& p, const QRectF& area, const PlanLane& lane);
  std::vector<RectLabel> paintRects(QPainter& p, const QRectF& area);
  void paintRectLabels(QPainter& p, const QRectF& area, const std::vector<RectLabel>& labels);
  void paintLaneMarks(QPainter& p, const QRectF& area, const PlanLane& lane);
  void paintPlot(QPainter& p, const QRectF& area);
  /// Pixel y of a byte count in the live-bytes plot, whose top is `max` bytes.
  struct LiveScale {
    QRectF area;
    double max;
    double operator()(double bytes) const { return area.bottom() - bytes / max * area.height(); }
  };
  void paintLiveAxis(QPainter& p, const QRectF& area, const LiveScale& py);
  void paintLiveCurve(QPainter& p, const QRectF& area, const PlanLane& lane, const LiveScale& py);
  void paintArenaLines(QPainter& p, const QRectF& area, const PlanLane& lane, const LiveScale& py, std::vector<QRectF>& taken);
  void paintPeakMarker(QPainter& p, const QRectF& area, const PlanLane& lane, const LiveScale& py, std::vector<QRectF>& taken);
  void paintStepAxis(QPainter& p, const QRectF& area);
  void recolor();

  std::shared_ptr<const PlanLayout> layout_;
  int lane_ = 0;
  ColorBy colorBy_ = ColorBy::Op;
  std::vector<QColor> keyColors_;  ///< per key of the current colouring
  std::vector<int32_t> selection_;
  int32_t hover_ = -1;
  // View: step at the left edge and pixels per step; bytes at the bottom
  // edge of the lane and pixels per byte.
  double x0_ = 0, xScale_ = 1, y0_ = 0, yScale_ = 1;
  bool fitted_ = false;
  QPointF pressPos_, lastPos_;
  bool pressed_ = false, dragged_ = false;
  int painted_ = 0;
  QRectF legendMore_;          ///< the "+N more" of the last paint
  size_t legendHidden_ = 0;    ///< first key the legend had no room for
  std::vector<QRectF> plotLabels_;
  std::vector<uint8_t> dots_;  ///< pixels already filled by a sub-pixel rectangle this frame
};

}  // namespace lstudio::ui
