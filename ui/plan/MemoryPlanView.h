// The memory-plan view of one method: an arena lane per mem_id (x = step,
// y = offset, a rectangle per planned tensor), live bytes over steps with the
// lower bound, arena size and peak, and the tensors alive at the peak. The
// layout is computed on a worker; painting visits only what is in view.
#pragma once

#include <QFutureWatcher>
#include <QWidget>
#include <memory>
#include <vector>

#include "engine/ir/Ir.h"
#include "ui/plan/PlanLayout.h"

class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class QTableView;

namespace lstudio::ui {

class PlanCanvas;
class PeakTensorModel;
class PeakTensorSortModel;

class MemoryPlanView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryPlanView(QWidget* parent = nullptr);
  ~MemoryPlanView() override;

  /// Shows the plan of `methodIndex`; the analysis runs on a worker and
  /// planShown() fires when it is on screen.
  void setPlan(std::shared_ptr<const Program> program, int methodIndex);
  void clear();
  void selectValue(int valueId);   ///< highlight + scroll into view; no signal
  void selectNode(int nodeIndex);  ///< the tensors the node writes; no signal
  int selectedValue() const;
  int rectangleCount() const;      ///< tensor rectangles of the plan (every lane)
  QRectF rectangleFor(int valueId) const;  ///< data units: x = steps [first, last + 1), y = bytes

  bool isPlanReady() const;  ///< a plan (or the reason there is none) is on screen
  QString message() const;   ///< the text shown instead of a plan; empty when a plan shows
  /// Shows the lane of this mem_id; false when the method has none.
  bool showMemId(uint32_t memId);
  /// Colours rectangles by producing op (false) or by module (true).
  void setColorByModule(bool byModule);
  std::shared_ptr<const PlanLayout> planLayout() const { return layout_; }
  PlanCanvas* canvas() const { return canvas_; }
  PeakTensorModel* peakModel() const { return model_; }
  QTableView* peakTable() const { return table_; }  ///< its model is the sorted one
  QComboBox* arenaCombo() const { return laneCombo_; }

 signals:
  void valueSelected(int valueId);
  void nodeSelected(int nodeIndex);  ///< producing node of the clicked tensor, -1 if an input
  void planShown();

 private:
  QWidget* buildPeakPane(QWidget* parent);
  void fitNameColumn();
  bool eventFilter(QObject* watched, QEvent* event) override;
  void showLayout(std::shared_ptr<const PlanLayout> layout);
  void showMessage(const QString& text);
  void switchLane(int lane);
  void applySelection(std::vector<int32_t> rects, bool scroll);
  void userSelected(int32_t rect, bool scroll);  ///< a click: select and emit
  void updateSummary();

  QComboBox* laneCombo_ = nullptr;
  QComboBox* colorCombo_ = nullptr;
  QPushButton* fitButton_ = nullptr;
  QLabel* summary_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* message_ = nullptr;
  PlanCanvas* canvas_ = nullptr;
  QLabel* peakLabel_ = nullptr;
  QTableView* table_ = nullptr;
  PeakTensorModel* model_ = nullptr;
  PeakTensorSortModel* sorted_ = nullptr;  ///< what the table shows: model_ sorted by the clicked column

  QFutureWatcher<std::shared_ptr<const PlanLayout>> watcher_;
  uint64_t generation_ = 0;  ///< drops results of superseded setPlan calls
  bool ready_ = false;
  std::shared_ptr<const PlanLayout> layout_;
  int pendingValue_ = -1, pendingNode_ = -1;  ///< selections asked for before the plan arrived
  bool syncingTable_ = false;
  int nameContentsWidth_ = 0;  ///< the names' column as wide as its longest name
};

}  // namespace lstudio::ui
