// MainWindow's side of the lowering: the pass timeline, following the runner
// as passes run, and re-running after a config change.
#include "ui/window/MainWindow.h"

#include <QCheckBox>
#include <QPushButton>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QStyle>
#include <QTreeWidget>

#include "engine/lowering/Pass.h"
#include "engine/support/FormatUtil.h"
#include "ui/config/ConfigEditor.h"
#include "ui/config/ConstantTable.h"
#include "ui/graph/Inspector.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

QIcon dot(const QColor& c, bool hollow = false) {
  QPixmap pm(12, 12);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(c.darker(130), 1.2));
  p.setBrush(hollow ? QBrush(Qt::NoBrush) : QBrush(c));
  p.drawEllipse(QRectF(1.5, 1.5, 9, 9));
  return QIcon(pm);
}

QIcon stateIcon(PassRecord::State s) {
  switch (s) {
    case PassRecord::State::NotRun: return dot(QColor(170, 170, 170), true);
    case PassRecord::State::Skipped: return dot(QColor(200, 200, 200));
    case PassRecord::State::Unchanged: return dot(QColor(120, 144, 156));
    case PassRecord::State::Changed: return dot(QColor(33, 150, 243));
    case PassRecord::State::Failed: return dot(QColor(229, 57, 53));
  }
  return {};
}

QString stateText(PassRecord::State s) {
  switch (s) {
    case PassRecord::State::NotRun: return QObject::tr("not run");
    case PassRecord::State::Skipped: return QObject::tr("skipped by config");
    case PassRecord::State::Unchanged: return QObject::tr("unchanged");
    case PassRecord::State::Changed: return QObject::tr("changed");
    case PassRecord::State::Failed: return QObject::tr("failed");
  }
  return {};
}

/// A pass's wall time as the timeline shows it: always two decimals, so 13.38 never reads as 13.
QString passTime(const PassRecord& r) {
  if (r.state == PassRecord::State::NotRun || r.state == PassRecord::State::Skipped) return {};
  return QString::number(r.milliseconds, 'f', 2);
}

}  // namespace

QWidget* MainWindow::buildPassLegend() {
  // Two columns of dot + meaning, so the legend fits the dock's width.
  auto* legend = new QWidget;
  legend->setObjectName("passLegend");
  auto* grid = new QGridLayout(legend);
  grid->setContentsMargins(2, 2, 2, 2);
  grid->setHorizontalSpacing(10);
  grid->setVerticalSpacing(1);
  struct Entry {
    QIcon icon;
    QString text, tip;
  };
  const Entry entries[] = {
      {stateIcon(PassRecord::State::Changed), stateText(PassRecord::State::Changed), tr("The pass changed the program; the graph marks what it added or modified")},
      {stateIcon(PassRecord::State::Unchanged), stateText(PassRecord::State::Unchanged), tr("The pass ran and the program is the same")},
      {stateIcon(PassRecord::State::NotRun), stateText(PassRecord::State::NotRun), tr("Not reached yet: F10 runs the next pass")},
      {stateIcon(PassRecord::State::Skipped), stateText(PassRecord::State::Skipped), tr("The config turns this pass off")},
      {stateIcon(PassRecord::State::Failed), stateText(PassRecord::State::Failed), tr("The pass stopped with an error (see its tooltip and the log)")},
      {dot(QColor(76, 175, 80)), tr("input program"), tr("The program as opened, before any pass")},
  };
  for (int i = 0; i < int(std::size(entries)); ++i) {
    auto* cell = new QLabel(entries[i].text);
    auto* icon = new QLabel;
    icon->setPixmap(entries[i].icon.pixmap(12, 12));
    auto* row = new QHBoxLayout;
    row->setSpacing(4);
    row->addWidget(icon);
    row->addWidget(cell, 1);
    icon->setToolTip(entries[i].tip);
    cell->setToolTip(entries[i].tip);
    grid->addLayout(row, i / 2, i % 2);
  }
  return legend;
}

int MainWindow::timelineWidth() const {
  // Every pass name of the pipeline (and the .pte's first pass) beside its icon, the time column and a scroll bar.
  const QFontMetrics bold = [this] {
    QFont f = timeline_->font();
    f.setBold(true);  // the shown pass is bold
    return QFontMetrics(f);
  }();
  int name = bold.horizontalAdvance(tr("ExecuTorch program (.pte)"));
  for (const auto& pass : defaultPasses()) name = std::max(name, bold.horizontalAdvance(q(pass->name())));
  name = std::max(name, bold.horizontalAdvance("DelowerPtePass"));
  const int icon = timeline_->iconSize().isValid() ? timeline_->iconSize().width() : 16;
  const int time = bold.horizontalAdvance("000.0 ms") + 12;
  const int chrome = style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 4 * style()->pixelMetric(QStyle::PM_DefaultFrameWidth) + 20;
  return name + icon + time + chrome;
}

void MainWindow::connectPipeline() {
  connect(runner_, &PipelineRunner::stateChanged, this, &MainWindow::onPipelineState);
  connect(runner_, &PipelineRunner::busyChanged, this, [this](bool b) {
    busy_->setVisible(b || watcher_.isRunning());
    if (reportArenas_ && !b) reportArenaChange();
    if (!b && pending_) restorePending();
    if (!b && exportWhenDone_) {
      exportWhenDone_ = false;
      if (runner_->state().atEnd() && !runner_->state().failed) exportProgram();
    }
    updateActions();
  });
  connect(runner_, &PipelineRunner::passFinished, this, [this](int i, const PassRecord& r) {
    log(QString("[%1] %2: %3 (%4 ms)").arg(i + 1).arg(q(r.name), stateText(r.state)).arg(r.milliseconds, 0, 'f', 2));
    for (const Diagnostic& d : r.diagnostics)
      log(QString("    %1%2").arg(d.node >= 0 ? QString("node %1: ").arg(d.node) : QString(), q(d.message)));
  });
  // A click shows a snapshot already computed; a double click (or Enter) runs up to that pass.
  connect(timeline_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* it) {
    int row = timeline_->indexOfTopLevelItem(it);
    const PipelineState& s = runner_->state();
    if (row <= static_cast<int>(s.position)) showSnapshot(row);
  });
  connect(timeline_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* it) {
    int row = timeline_->indexOfTopLevelItem(it);
    if (row > 0 && pipelineActive()) runner_->runTo(row - 1);
  });
  connect(hideUnchanged_, &QCheckBox::toggled, this, &MainWindow::refreshTimeline);
}

void MainWindow::onPipelineState() {
  const PipelineState& s = runner_->state();
  if (!s.input) return;
  // Running or undoing passes shows the newest snapshot; a state with the
  // same position (a re-delivery) keeps what the user chose on the timeline.
  if (static_cast<int>(s.position) != shownPosition_) {
    // Stepping through passes is looking, not editing: it does not make the session unsaved
    // (a saved workspace still records where the lowering stands).
    shownPosition_ = static_cast<int>(s.position);
    snapshot_ = static_cast<int>(s.position);
    if (s.failed) {
      // Show the program the failing pass choked on, with the node selected.
      snapshot_ = static_cast<int>(s.position) - 1;
      const PassRecord& r = s.records[s.position - 1];
      for (const Diagnostic& d : r.diagnostics)
        if (d.node >= 0) selectedNode_ = d.node;
      revealOnShow_ = selectedNode_;  // the graph centres it (and opens the groups above it)
      status_->setText(tr("%1 failed: %2").arg(q(r.name), r.diagnostics.empty() ? QString() : q(r.diagnostics.front().message)));
    }
  }
  // Stopped in to_edge at an operator the studio cannot lower: upstream's edge program is the way on.
  const std::string stoppedIn = s.failed && s.position > 0 ? s.records[s.position - 1].name : std::string();
  openEtRecord_->setVisible(stoppedIn == "EXIRATenDialectVerifier" || stoppedIn == "run_decompositions");
  snapshot_ = std::min(snapshot_, static_cast<int>(s.position));
  shown_ = s.snapshotAtOrBefore(snapshot_);
  refreshTimeline();
  // A failed pass in sight in the Passes list (the 29th of 30 was below its fold).
  if (s.failed) timeline_->scrollToItem(timeline_->topLevelItem(static_cast<int>(s.position)));
  refreshShown();
  updateActions();
}

void MainWindow::showSnapshot(int row) {
  const PipelineState& s = runner_->state();
  if (!s.input || row < 0 || row > static_cast<int>(s.position)) return;
  snapshot_ = row;
  shown_ = s.snapshotAtOrBefore(row);
  refreshTimeline();
  refreshShown();
}

void MainWindow::refreshTimeline() {
  QSignalBlocker block(timeline_);
  timeline_->clear();
  const PipelineState& s = runner_->state();
  if (!s.input) {
    if (current_.program) {
      auto* it = new QTreeWidgetItem(timeline_, {tr("Stored program (.pte)"), QString()});
      it->setIcon(0, dot(QColor(76, 175, 80)));
      it->setToolTip(0, tr("An ExecuTorch program as stored: its graph and memory plan are shown as they are."));
      timeline_->setCurrentItem(it);
    }
    return;
  }
  bool pte = current_.program && current_.program->format == SourceFormat::Pte;
  auto* input = new QTreeWidgetItem(timeline_, {pte ? tr("ExecuTorch program (.pte)") : tr("Exported program"), QString()});
  input->setIcon(0, dot(QColor(76, 175, 80)));
  input->setToolTip(0, tr("The program as imported, before any pass"));
  double total = 0;
  for (size_t i = 0; i < s.records.size(); ++i) {
    const PassRecord& r = s.records[i];
    auto* it = new QTreeWidgetItem(timeline_, {q(r.name), passTime(r)});
    it->setIcon(0, stateIcon(r.state));
    it->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
    if (!it->text(1).isEmpty()) it->setToolTip(1, tr("%1: %2 ms").arg(q(r.name), it->text(1)));
    QString tip = "<b>" + q(r.name).toHtmlEscaped() + "</b><br>" + q(r.description).toHtmlEscaped() + "<br><i>" + stateText(r.state) + "</i>";
    for (const Diagnostic& d : r.diagnostics) tip += "<br>" + q(d.message).toHtmlEscaped();
    bool changedOutputs = false;
    QString values = everyPassNote(static_cast<int>(i + 1), &changedOutputs);
    if (!values.isEmpty()) tip += "<br>values: " + values.toHtmlEscaped();
    if (changedOutputs) {  // Run Every Pass found this pass changed the numbers
      it->setText(0, it->text(0) + QStringLiteral("  ≠"));
      it->setForeground(0, QColor(191, 54, 12));
    }
    it->setToolTip(0, tip);
    if (r.state == PassRecord::State::NotRun) it->setForeground(0, QColor(140, 140, 140));
    if (r.state == PassRecord::State::Failed) it->setForeground(0, QColor(198, 40, 40));
    bool quiet = r.state == PassRecord::State::Unchanged || r.state == PassRecord::State::Skipped;
    it->setHidden(hideUnchanged_->isChecked() && quiet);
    total += r.milliseconds;
  }
  if (QTreeWidgetItem* cur = timeline_->topLevelItem(snapshot_)) {
    timeline_->setCurrentItem(cur);
    QFont f = cur->font(0);
    f.setBold(true);
    cur->setFont(0, f);
  }
  timeline_->headerItem()->setText(1, QString("%1 ms").arg(total, 0, 'f', 1));
}

bool MainWindow::showPassInInspector() {
  // With no node selected the inspector tells what the pass of the shown snapshot did.
  const PipelineState& s = runner_->state();
  if (!shown_ || snapshot_ <= 0 || !s.input || snapshot_ > static_cast<int>(s.records.size())) return false;
  const PassRecord& r = s.records[snapshot_ - 1];
  QString h = "<h3>" + q(r.name).toHtmlEscaped() + "</h3><p>" + q(r.description).toHtmlEscaped() + "</p><p>" + stateText(r.state);
  if (r.state != PassRecord::State::NotRun && r.state != PassRecord::State::Skipped)
    h += QString(" in %1 ms").arg(r.milliseconds, 0, 'f', 2);
  h += "</p>";
  if (!diff_.empty())
    h += tr("<p>%1 nodes added, %2 modified, %3 removed</p>").arg(diff_.added).arg(diff_.modified).arg(diff_.removed.size());
  h += partitionSummary();
  inspector_->showMessage(h);
  return true;
}

QString MainWindow::partitionSummary() const {
  // After a partitioner: what each partition takes and why the rest stays out, most common first.
  if (!shown_ || method_ >= static_cast<int>(shown_->methods.size())) return {};
  const Method& m = shown_->methods[method_];
  std::map<std::string, int> byTag, byReason;
  int leftOut = 0, calls = 0, lowered = 0;
  for (const Node& n : m.nodes) {
    if (!n.meta.delegationTag.empty()) ++byTag[n.meta.delegationTag];
    else if (!n.meta.notDelegatedBecause.empty()) ++byReason[n.meta.notDelegatedBecause], ++leftOut;
    // After to_backend: each partition one call, its operators in the lowered module.
    if (n.kind == NodeKind::Delegate && n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size()) {
      const Delegate& d = m.delegates[n.delegate];
      ++calls;
      if (d.original && !d.original->methods.empty()) lowered += int(d.original->methods.front().nodes.size());
    }
  }
  if (byTag.empty() && byReason.empty()) return {};
  QString h;
  if (byTag.empty() && calls)
    h = tr("<p><b>XNNPACK</b>: %n delegate call(s), %1 operator(s) lowered into them</p>", nullptr, calls).arg(lowered);
  else {
    h = tr("<p><b>XNNPACK</b>: %n partition(s)", nullptr, int(byTag.size()));
    for (const auto& [tag, count] : byTag) h += tr("<br>%1: %n operator(s)", nullptr, count).arg(q(tag).toHtmlEscaped());
    h += "</p>";
  }
  if (leftOut) {
    std::vector<std::pair<int, std::string>> reasons;
    for (const auto& [reason, count] : byReason) reasons.emplace_back(count, reason);
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    h += tr("<p><b>Not delegated</b>: %n operator(s) (Edit › Find What XNNPACK Did Not Take)", nullptr, leftOut);
    for (size_t i = 0; i < reasons.size() && i < 12; ++i)
      h += QString("<br>%1× %2").arg(reasons[i].first).arg(q(reasons[i].second).toHtmlEscaped());
    if (reasons.size() > 12) h += tr("<br>and %n other reason(s)", nullptr, int(reasons.size() - 12));
    h += "</p>";
  }
  return h;
}

bool MainWindow::pipelineActive() const { return runner_->hasPipeline(); }

bool MainWindow::runToPass(const QString& name) {
  const PipelineState& s = runner_->state();
  for (size_t i = 0; i < s.records.size(); ++i)
    if (q(s.records[i].name) == name) {
      runner_->runTo(static_cast<int>(i));
      return true;
    }
  return false;
}

void MainWindow::applyConfig(const ExecutorchBackendConfig& c) {
  if (sender() != config_) {
    QSignalBlocker b(config_);
    config_->setConfig(c);
  }
  if (sender() != constants_) {
    QSignalBlocker b(constants_);
    constants_->setConfig(c);
  }
  log(tr("Config changed; re-running %n pass(es)", nullptr, int(runner_->state().position)));
  setModified(true);
  if (!runner_->hasPipeline()) return;
  if (auto cur = runner_->state().snapshotAtOrBefore(runner_->state().position); cur && !cur->methods.empty())
    arenasBeforeConfig_ = cur->methods[0].nonConstBufferSizes;
  reportArenas_ = true;
  runner_->setConfig(c);
}

void MainWindow::reportArenaChange() {
  // What-if: the arena sizes before and after a config change.
  reportArenas_ = false;
  const PipelineState& s = runner_->state();
  auto last = s.snapshotAtOrBefore(s.position);
  std::vector<int64_t> now = last && !last->methods.empty() ? last->methods[0].nonConstBufferSizes : std::vector<int64_t>{};
  QStringList parts;
  for (size_t i = 1; i < std::max(now.size(), arenasBeforeConfig_.size()); ++i) {
    int64_t was = i < arenasBeforeConfig_.size() ? arenasBeforeConfig_[i] : 0, is = i < now.size() ? now[i] : 0;
    parts << tr("mem_id %1: %2 → %3").arg(i).arg(q(formatBytes(uint64_t(was))), q(formatBytes(uint64_t(is))));
  }
  if (parts.isEmpty()) return;
  log(tr("Arena after the config change: %1").arg(parts.join(", ")));
  status_->setText(tr("Arena: %1").arg(parts.join(", ")));
}

}  // namespace lstudio::ui
