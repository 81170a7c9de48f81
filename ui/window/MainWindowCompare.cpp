// Compare mode (View > Compare with Previous Pass, Ctrl+D): the snapshot
// before the shown pass in a pane beside the graph. Each pane is titled with
// the snapshot it shows; panning, zooming and opening groups in one pane do
// the same in the other; the Changes dock lists what the pass added, modified
// and removed, and a click there shows the node in both panes.
#include <QAction>
#include <QDockWidget>
#include <QSplitter>

#include "ui/graph/ChangesList.h"
#include "ui/graph/GraphView.h"
#include "ui/window/MainWindow.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {

QDockWidget* MainWindow::buildChangesDock(QDockWidget* besideInspector) {
  changes_ = new ChangesList;
  auto* d = new QDockWidget(tr("Changes"), this);
  d->setObjectName("changesDock");
  d->setWidget(changes_);
  addDockWidget(Qt::RightDockWidgetArea, d);
  tabifyDockWidget(besideInspector, d);
  besideInspector->raise();
  d->hide();  // only while comparing
  return d;
}

bool MainWindow::comparing() const { return compare_ && compare_->isChecked(); }

void MainWindow::setCompare(bool on) {
  if (compare_->isChecked() != on) compare_->setChecked(on);
  const bool wasShown = before_->isVisible();
  before_->setVisible(on);
  if (on && !wasShown)
    if (auto* split = qobject_cast<QSplitter*>(before_->parentWidget())) {
      const int half = std::max(split->width() / 2, 1);
      split->setSizes({half, half});  // two panes of one width, not the earlier squeezed to a strip
    }
  graph_->setCompactMinimap(on);
  before_->setCompactMinimap(on);
  changesDock_->setVisible(on);
  if (on) changesDock_->raise();
  graphShown_ = nullptr;  // re-show both sides
  refreshShown();
}

void MainWindow::connectCompare() {
  // Each pane follows the other; the guard keeps the follower from leading back.
  auto follow = [this](GraphView* from, GraphView* to) {
    if (syncingPanes_ || !comparing() || !to->isVisible()) return;
    syncingPanes_ = true;
    to->followView(*from);
    syncingPanes_ = false;
  };
  connect(graph_, &GraphView::viewMoved, this, [this, follow] { follow(graph_, before_); });
  connect(before_, &GraphView::viewMoved, this, [this, follow] { follow(before_, graph_); });
  auto toggle = [this](GraphView* to, const QString& path, bool collapsed) {
    if (syncingPanes_ || !comparing()) return;
    syncingPanes_ = true;
    to->setGroupCollapsed(path, collapsed);
    syncingPanes_ = false;
  };
  connect(graph_, &GraphView::groupToggled, this, [this, toggle](const QString& p, bool c) { toggle(before_, p, c); });
  connect(before_, &GraphView::groupToggled, this, [this, toggle](const QString& p, bool c) { toggle(graph_, p, c); });
  connect(changes_, &ChangesList::nodeActivated, this, &MainWindow::showChange);
}

QString MainWindow::snapshotTitle(int row) const {
  const PipelineState& s = runner_->state();
  while (row > 0 && !s.snapshot(static_cast<size_t>(row))) --row;  // a pass that changed nothing shares its snapshot
  if (row <= 0 || static_cast<size_t>(row) > s.records.size()) return tr("the input program");
  return tr("after %1 (step %2)").arg(q(s.records[row - 1].name)).arg(row);
}

void MainWindow::refreshCompare(const QStringList& keepOpen, const QStringList& revealed) {
  if (!comparing()) {
    graph_->setTitle({});
    before_->setTitle({});
    changes_->setChanges(nullptr, nullptr, {});
    return;
  }
  const PipelineState& s = runner_->state();
  auto before = s.input && shown_ ? s.snapshotAtOrBefore(std::max(snapshot_ - 1, 0)) : nullptr;
  if (!shown_) {
    before_->clear();
    graph_->setTitle({});
    before_->setTitle({});
    changes_->setChanges(nullptr, nullptr, {});
    return;
  }
  graph_->setTitle(tr("after: %1").arg(snapshotTitle(snapshot_)));
  if (before && before != shown_ && method_ < static_cast<int>(before->methods.size())) {
    // The earlier pane marks what the pass removed, and the nodes it went on to modify.
    const Method& bm = before->methods[method_];
    std::vector<NodeMark> marks(bm.nodes.size(), NodeMark::None);
    for (int j : diff_.removed)
      if (j >= 0 && static_cast<size_t>(j) < marks.size()) marks[j] = NodeMark::Removed;
    for (size_t i = 0; i < diff_.after.size() && i < diff_.matchOf.size(); ++i)
      if (diff_.after[i] == MethodDiff::Mark::Modified && diff_.matchOf[i] >= 0 && static_cast<size_t>(diff_.matchOf[i]) < marks.size())
        marks[diff_.matchOf[i]] = NodeMark::Modified;
    before_->setGraph(before, method_, std::move(marks));
    before_->setTitle(tr("before: %1").arg(snapshotTitle(snapshot_ - 1)));
    changes_->setChanges(&bm, &shown_->methods[method_], diff_);
  } else {
    before_->clear();
    before_->setTitle(snapshot_ <= 0 ? tr("before: nothing (the input program comes first)") : tr("before: the same program"));
    changes_->setChanges(nullptr, &shown_->methods[method_], {});
  }
  graph_->setExpandedGroups(keepOpen, revealed);
  before_->setExpandedGroups(keepOpen, revealed);
}

void MainWindow::showChange(const QString& name, bool removed) {
  // A removed node exists only before; the others are selected in the shown program, which
  // selects them (by name) in the earlier pane too. Each pane opens its group and centres it.
  if (removed) before_->selectNodeByName(name);
  else selectNodeByName(name);
}

}  // namespace lstudio::ui
