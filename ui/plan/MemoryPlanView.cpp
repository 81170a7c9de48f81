#include "ui/plan/MemoryPlanView.h"

#include <QComboBox>
#include <QEvent>
#include <algorithm>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/support/FormatUtil.h"
#include "ui/support/Background.h"
#include "ui/plan/PeakTensorModel.h"
#include "ui/plan/PlanCanvas.h"

namespace lstudio::ui {
namespace {
QString bytesText(uint64_t n) { return QString::fromStdString(formatBytes(n)); }
}  // namespace

MemoryPlanView::MemoryPlanView(QWidget* parent) : QWidget(parent) {
  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 0);
  laneCombo_ = new QComboBox(this);
  laneCombo_->setObjectName("arenaCombo");
  // Wide enough for "mem_id 1 — 999.99 MiB" from the start: a width that grew with the
  // arenas filled in when the tab is first shown widened the centre and squeezed the docks.
  laneCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  laneCombo_->setMinimumContentsLength(22);
  laneCombo_->setToolTip(tr("Memory arena (mem_id) to show"));
  colorCombo_ = new QComboBox(this);
  colorCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  colorCombo_->addItems({tr("Producing op"), tr("Module")});
  colorCombo_->setToolTip(tr("What the rectangle colours stand for"));
  fitButton_ = new QPushButton(tr("Fit"), this);
  fitButton_->setToolTip(tr("Show the whole arena (F)\nWheel: zoom steps · Ctrl+wheel: zoom bytes · drag: pan"));
  summary_ = new QLabel(this);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  summary_->setContentsMargins(6, 0, 6, 0);
  top->addWidget(new QLabel(tr("Arena:"), this));
  top->addWidget(laneCombo_);
  top->addSpacing(12);
  top->addWidget(new QLabel(tr("Colour by:"), this));
  top->addWidget(colorCombo_);
  top->addWidget(fitButton_);
  top->addStretch(1);

  stack_ = new QStackedWidget(this);
  message_ = new QLabel(this);
  message_->setAlignment(Qt::AlignCenter);
  message_->setWordWrap(true);
  message_->setMargin(24);
  stack_->addWidget(message_);

  auto* split = new QSplitter(Qt::Horizontal, this);
  canvas_ = new PlanCanvas(split);
  QWidget* side = buildPeakPane(split);
  split->addWidget(canvas_);
  split->addWidget(side);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({700, 300});
  stack_->addWidget(split);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(summary_);  // its own line: beside the combos it squeezed them
  layout->addWidget(stack_, 1);

  connect(laneCombo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0) switchLane(i);
  });
  connect(colorCombo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    canvas_->setColorBy(i == 1 ? PlanCanvas::ColorBy::Module : PlanCanvas::ColorBy::Op);
  });
  connect(fitButton_, &QPushButton::clicked, canvas_, &PlanCanvas::fit);
  connect(canvas_, &PlanCanvas::rectClicked, this, [this](int32_t r) {
    if (r >= 0)
      userSelected(r, false);
    else
      applySelection({}, false);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (syncingTable_ || !cur.isValid()) return;
    userSelected(sorted_->data(sorted_->index(cur.row(), 0), PeakTensorModel::RectRole).toInt(), true);
  });
  connect(&watcher_, &QFutureWatcher<std::shared_ptr<const PlanLayout>>::finished, this, [this] {
    auto layout = watcher_.result();
    // Stale: a later setPlan or clear superseded the job this result belongs to.
    if (watcher_.property("generation").toULongLong() != generation_) return;
    showLayout(std::move(layout));
  });
  showMessage(tr("No program open."));
  ready_ = true;
}

QWidget* MemoryPlanView::buildPeakPane(QWidget* parent) {
  // The tensors alive at the peak: a sortable table, largest first.
  auto* side = new QWidget(parent);
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(4, 0, 0, 0);
  peakLabel_ = new QLabel(side);
  peakLabel_->setWordWrap(true);
  model_ = new PeakTensorModel(this);
  sorted_ = new PeakTensorSortModel(this);
  sorted_->setSourceModel(model_);
  table_ = new QTableView(side);
  table_->setModel(sorted_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(PeakTensorModel::Bytes, Qt::DescendingOrder);  // largest first
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  // Generated names differ at the end (…layers_12_…_k_cache): keep the tail.
  table_->setTextElideMode(Qt::ElideLeft);
  // Bytes first, so the size is never the column cut off at the right.
  table_->horizontalHeader()->moveSection(PeakTensorModel::Bytes, 0);
  table_->viewport()->installEventFilter(this);
  sideLayout->addWidget(peakLabel_);
  sideLayout->addWidget(table_);
  return side;
}

void MemoryPlanView::fitNameColumn() {
  // The names take what the table shows beside Bytes, so their elided tails are in view
  // (their full text is the tooltip); wider names leave the rest to the scroll bar.
  const int room = table_->viewport()->width() - table_->columnWidth(PeakTensorModel::Bytes) - 2;
  const int contents = nameContentsWidth_;
  table_->setColumnWidth(PeakTensorModel::Name, std::clamp(std::min(room, contents), 90, std::max(90, contents)));
}

bool MemoryPlanView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == table_->viewport() && event->type() == QEvent::Resize) fitNameColumn();
  return QWidget::eventFilter(watched, event);
}

MemoryPlanView::~MemoryPlanView() { watcher_.waitForFinished(); }

void MemoryPlanView::setPlan(std::shared_ptr<const Program> program, int methodIndex) {
  ++generation_;
  layout_.reset();
  pendingValue_ = pendingNode_ = -1;
  showMessage(tr("Analysing the memory plan\u2026"));
  ready_ = false;  // until the worker's layout is shown
  watcher_.setProperty("generation", QVariant::fromValue<qulonglong>(generation_));
  watcher_.setFuture(QtConcurrent::run(inBackground(buildPlanLayout), std::move(program), methodIndex));
}

void MemoryPlanView::clear() {
  ++generation_;
  layout_.reset();
  pendingValue_ = pendingNode_ = -1;
  showMessage(tr("No program open."));
}

void MemoryPlanView::showMessage(const QString& text) {
  message_->setText(text);
  stack_->setCurrentIndex(0);
  canvas_->setPlanLayout(nullptr, 0);
  model_->setLane(nullptr, 0);
  laneCombo_->blockSignals(true);
  laneCombo_->clear();
  laneCombo_->blockSignals(false);
  for (QWidget* w : {static_cast<QWidget*>(laneCombo_), static_cast<QWidget*>(colorCombo_), static_cast<QWidget*>(fitButton_)})
    w->setEnabled(false);
  summary_->clear();
  ready_ = true;
}

void MemoryPlanView::showLayout(std::shared_ptr<const PlanLayout> layout) {
  layout_ = std::move(layout);
  if (!layout_ || !layout_->planned) {
    showMessage(layout_ ? QString::fromStdString(layout_->why) : tr("No plan."));
    emit planShown();
    return;
  }
  laneCombo_->blockSignals(true);
  laneCombo_->clear();
  for (const PlanLane& l : layout_->lanes)
    laneCombo_->addItem(l.device.isCpu()
                            ? tr("mem_id %1 \u2014 %2").arg(l.memId).arg(bytesText(l.arena.size))
                            : tr("mem_id %1 on %2 \u2014 %3")
                                  .arg(l.memId)
                                  .arg(QString::fromStdString(l.device.name()), bytesText(l.arena.size)));
  laneCombo_->setCurrentIndex(0);
  laneCombo_->blockSignals(false);
  for (QWidget* w : {static_cast<QWidget*>(laneCombo_), static_cast<QWidget*>(colorCombo_), static_cast<QWidget*>(fitButton_)})
    w->setEnabled(true);
  stack_->setCurrentIndex(1);
  canvas_->setPlanLayout(layout_, 0);
  switchLane(0);
  ready_ = true;
  if (pendingValue_ >= 0) selectValue(pendingValue_);
  if (pendingNode_ >= 0) selectNode(pendingNode_);
  pendingValue_ = pendingNode_ = -1;
  emit planShown();
}

void MemoryPlanView::switchLane(int lane) {
  if (!layout_ || !layout_->planned) return;
  if (laneCombo_->currentIndex() != lane) {
    laneCombo_->blockSignals(true);
    laneCombo_->setCurrentIndex(lane);
    laneCombo_->blockSignals(false);
  }
  if (canvas_->lane() != lane) canvas_->setLane(lane);
  model_->setLane(layout_, lane);
  table_->resizeColumnsToContents();
  nameContentsWidth_ = table_->columnWidth(PeakTensorModel::Name);
  fitNameColumn();
  updateSummary();
}

void MemoryPlanView::setColorByModule(bool byModule) { colorCombo_->setCurrentIndex(byModule ? 1 : 0); }

bool MemoryPlanView::showMemId(uint32_t memId) {
  const int lane = layout_ ? layout_->laneOf(memId) : -1;
  if (lane < 0) return false;
  switchLane(lane);
  return true;
}

void MemoryPlanView::updateSummary() {
  const PlanLane& l = layout_->lanes[static_cast<size_t>(canvas_->lane())];
  const ArenaStats& a = l.arena;
  QString s = tr("arena %1 · lower bound %2").arg(bytesText(a.size), bytesText(a.lowerBound));
  if (a.lowerBound) s += tr(" (%1\u00d7)").arg(a.ratio(), 0, 'f', 3);
  if (a.reorderedBound && a.reorderedBound < a.lowerBound)
    s += tr(" · <span style='color:#783caa'>%1 in a memory-aware order</span> (studio_memory_aware_order)")
             .arg(bytesText(a.reorderedBound));
  s += tr(" · %1 tensors, %2 storages · %3 steps").arg(a.tensors).arg(a.storages).arg(layout_->report.steps);
  if (!layout_->report.overlapFree()) s += tr(" · <b style='color:#c00'>%1 overlaps</b>").arg(layout_->report.overlapCount);
  // Control flow: each cond branch, map or scan body was planned on its own at
  // the start of the arena (ExecuTorch's input_mem_buffer_sizes); the method's tensors follow.
  QStringList branches;
  uint64_t reserved = 0;
  for (const Method& b : layout_->method().subgraphs)
    if (b.nonConstBufferSizes.size() > a.memId) {
      const uint64_t bytes = static_cast<uint64_t>(b.nonConstBufferSizes[a.memId]);
      reserved = std::max(reserved, bytes);
      branches << QString::fromStdString(b.name) + " " + bytesText(bytes);
    }
  if (reserved > 0)
    s += tr("<br>bytes 0 to %1 hold the control-flow graphs (cond branches, map and scan bodies), one at a "
            "time (%2): the graph's tensors start after them")
             .arg(bytesText(reserved), branches.join(", "));
  summary_->setText(s);
  uint64_t peakBytes = 0;
  for (int32_t st : l.peakStorages) peakBytes += layout_->report.storages[static_cast<size_t>(st)].size;
  peakLabel_->setText(a.peakStep >= 0 ? tr("<b>Tensors alive at the peak</b> (step %1): %2 storages, %3")
                                            .arg(a.peakStep)
                                            .arg(l.peakStorages.size())
                                            .arg(bytesText(peakBytes))
                                      : tr("<b>Tensors alive at the peak</b>: none"));
}

void MemoryPlanView::applySelection(std::vector<int32_t> rects, bool scroll) {
  if (!layout_ || !layout_->planned) return;
  if (!rects.empty()) {
    const int lane = layout_->rects[static_cast<size_t>(rects.front())].lane;
    if (lane != canvas_->lane()) switchLane(lane);
  }
  canvas_->setSelection(rects);
  if (scroll && !rects.empty()) canvas_->ensureVisible(rects.front());
  syncingTable_ = true;
  const int row = rects.empty() ? -1 : model_->rowOfRect(rects.front());
  if (row >= 0) {
    const QModelIndex shown = sorted_->mapFromSource(model_->index(row, 0));
    table_->selectionModel()->setCurrentIndex(shown, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(shown);
  } else {
    table_->selectionModel()->clear();
  }
  syncingTable_ = false;
}

void MemoryPlanView::userSelected(int32_t rect, bool scroll) {
  if (!layout_ || rect < 0 || static_cast<size_t>(rect) >= layout_->rects.size()) return;
  applySelection({rect}, scroll);
  const PlanRect& r = layout_->rects[static_cast<size_t>(rect)];
  emit valueSelected(r.value);
  emit nodeSelected(r.producer);
}

void MemoryPlanView::selectValue(int valueId) {
  if (!ready_) {
    pendingValue_ = valueId;
    return;
  }
  if (!layout_ || !layout_->planned) return;
  const auto& map = layout_->rectOfValue;
  const int32_t r = valueId >= 0 && static_cast<size_t>(valueId) < map.size() ? map[static_cast<size_t>(valueId)] : -1;
  applySelection(r >= 0 ? std::vector<int32_t>{r} : std::vector<int32_t>{}, true);
}

void MemoryPlanView::selectNode(int nodeIndex) {
  if (!ready_) {
    pendingNode_ = nodeIndex;
    return;
  }
  if (!layout_ || !layout_->planned) return;
  // The node's written tensors, largest first, so the scroll lands on the one that matters.
  std::vector<int32_t> rects;
  for (size_t i = 0; i < layout_->rects.size(); ++i)
    if (layout_->rects[i].producer == nodeIndex && nodeIndex >= 0) rects.push_back(static_cast<int32_t>(i));
  std::stable_sort(rects.begin(), rects.end(), [&](int32_t a, int32_t b) {
    return layout_->rects[static_cast<size_t>(a)].size > layout_->rects[static_cast<size_t>(b)].size;
  });
  applySelection(std::move(rects), true);
}

int MemoryPlanView::selectedValue() const {
  const auto& sel = canvas_->selection();
  return layout_ && !sel.empty() ? layout_->rects[static_cast<size_t>(sel.front())].value : -1;
}

int MemoryPlanView::rectangleCount() const { return layout_ && layout_->planned ? static_cast<int>(layout_->rects.size()) : 0; }

QRectF MemoryPlanView::rectangleFor(int valueId) const {
  if (!layout_ || valueId < 0 || static_cast<size_t>(valueId) >= layout_->rectOfValue.size()) return {};
  const int32_t i = layout_->rectOfValue[static_cast<size_t>(valueId)];
  if (i < 0) return {};
  const PlanRect& r = layout_->rects[static_cast<size_t>(i)];
  return QRectF(r.first, static_cast<double>(r.offset), r.last + 1 - r.first, static_cast<double>(r.size));
}

bool MemoryPlanView::isPlanReady() const { return ready_; }

QString MemoryPlanView::message() const { return stack_->currentIndex() == 0 ? message_->text() : QString(); }

}  // namespace lstudio::ui
