#include "ui/graph/ChangesList.h"

#include <QHeaderView>
#include <map>

#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

constexpr int kNameRole = Qt::UserRole, kKindRole = Qt::UserRole + 1;
// Operator groups open at once while the whole list stays short.
constexpr int kOpenAllBelow = 40;

QString opOf(const Method& m, const Node& n) {
  switch (n.kind) {
    case NodeKind::Kernel: {
      if (n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size()) {
        const auto& ref = m.operators[n.op];
        return q(ref.overload.empty() || ref.overload == "default" ? ref.name : ref.name + "." + ref.overload);
      }
      return n.target.empty() ? QObject::tr("kernel") : q(n.target);
    }
    case NodeKind::Delegate: return QObject::tr("delegate");
    case NodeKind::Move: return "move";
    case NodeKind::Free: return "free";
    case NodeKind::JumpFalse: return "jump_false";
    case NodeKind::Cond: return "cond";
    case NodeKind::Map: return "map";
    case NodeKind::Scan: return "scan";
  }
  return {};
}

QString nameOf(const Node& n, int index) { return n.name.empty() ? QString("%%1").arg(index) : q(n.name); }

}  // namespace

ChangesList::ChangesList(QWidget* parent) : QTreeWidget(parent) {
  setObjectName("changesList");
  setHeaderLabels({tr("Change"), tr("Module")});
  setUniformRowHeights(true);
  setTextElideMode(Qt::ElideMiddle);
  header()->setSectionResizeMode(0, QHeaderView::Stretch);
  header()->setSectionResizeMode(1, QHeaderView::Interactive);
  header()->setStretchLastSection(false);
  header()->resizeSection(1, 110);
  setToolTip(tr("What the pass changed: click a node to show it in both panes"));
  auto activate = [this](QTreeWidgetItem* it) {
    if (!it || it->data(0, kNameRole).isNull()) return;
    emit nodeActivated(it->data(0, kNameRole).toString(), it->data(0, kKindRole).toInt() == Removed);
  };
  connect(this, &QTreeWidget::itemClicked, this, activate);
  connect(this, &QTreeWidget::itemActivated, this, activate);
}

void ChangesList::setChanges(const Method* before, const Method* after, const MethodDiff& diff) {
  clear();
  counts_[0] = counts_[1] = counts_[2] = 0;
  if (!after) return;
  // kind -> operator -> nodes (index, name, module)
  struct Row {
    QString name, module;
  };
  std::map<QString, std::vector<Row>> byOp[3];
  auto add = [&](Kind k, const Method& m, int i) {
    const Node& n = m.nodes[i];
    QString module = n.meta.moduleStack.empty() ? QString() : q(n.meta.moduleStack.back().path);
    byOp[k][opOf(m, n)].push_back({nameOf(n, i), module});
    ++counts_[k];
  };
  for (size_t i = 0; i < diff.after.size() && i < after->nodes.size(); ++i) {
    if (diff.after[i] == MethodDiff::Mark::Added) add(Added, *after, int(i));
    else if (diff.after[i] == MethodDiff::Mark::Modified) add(Modified, *after, int(i));
  }
  if (before)
    for (int j : diff.removed)
      if (j >= 0 && static_cast<size_t>(j) < before->nodes.size()) add(Removed, *before, j);

  const int total = counts_[0] + counts_[1] + counts_[2];
  const QString titles[3] = {tr("Added (%1)"), tr("Modified (%1)"), tr("Removed (%1)")};
  const QColor colours[3] = {QColor(0x2E, 0x9D, 0x3A), QColor(0xC0, 0x6A, 0x00), QColor(0xD3, 0x2F, 0x2F)};
  setUpdatesEnabled(false);
  for (int k : {Added, Modified, Removed}) {
    if (!counts_[k]) continue;
    auto* top = new QTreeWidgetItem(this, {titles[k].arg(counts_[k])});
    top->setData(0, kKindRole, k);
    top->setForeground(0, colours[k]);
    QFont f = top->font(0);
    f.setBold(true);
    top->setFont(0, f);
    top->setFirstColumnSpanned(true);
    for (auto& [op, rows] : byOp[k]) {
      auto* opItem = new QTreeWidgetItem(top, {QString("%1 (%2)").arg(op).arg(rows.size())});
      opItem->setFirstColumnSpanned(true);
      opItem->setToolTip(0, op);
      for (const Row& r : rows) {
        auto* it = new QTreeWidgetItem(opItem, {r.name, r.module});
        it->setData(0, kNameRole, r.name);
        it->setData(0, kKindRole, k);
        it->setToolTip(0, tr("%1 (%2): click to show it in both panes").arg(r.name, op));
        it->setToolTip(1, r.module);
      }
      opItem->setExpanded(total < kOpenAllBelow);
    }
    top->setExpanded(true);
  }
  if (!total) {
    auto* none = new QTreeWidgetItem(this, {tr("The pass changed nothing in this method")});
    none->setFirstColumnSpanned(true);
    none->setDisabled(true);
  }
  setUpdatesEnabled(true);
}

QTreeWidgetItem* ChangesList::kindItem(Kind k) const {
  for (int i = 0; i < topLevelItemCount(); ++i)
    if (!topLevelItem(i)->data(0, kKindRole).isNull() && topLevelItem(i)->data(0, kKindRole).toInt() == k) return topLevelItem(i);
  return nullptr;
}

int ChangesList::count(Kind k) const { return counts_[k]; }

QTreeWidgetItem* ChangesList::nodeItem(Kind k, const QString& name) const {
  QTreeWidgetItem* top = kindItem(k);
  if (!top) return nullptr;
  for (int i = 0; i < top->childCount(); ++i)
    for (int j = 0; j < top->child(i)->childCount(); ++j)
      if (top->child(i)->child(j)->data(0, kNameRole).toString() == name) return top->child(i)->child(j);
  return nullptr;
}

}  // namespace lstudio::ui
