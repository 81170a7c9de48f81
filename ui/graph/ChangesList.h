// Compare mode's list of what the pass changed in the shown method: nodes
// added, modified and removed (from GraphDiff), each kind with its count and
// its nodes by operator. Activating a node asks the window to show it in both
// panes.
#pragma once

#include <QTreeWidget>

#include "engine/ir/Ir.h"
#include "engine/lowering/GraphDiff.h"

namespace lstudio::ui {

class ChangesList : public QTreeWidget {
  Q_OBJECT
 public:
  enum Kind { Added, Modified, Removed };
  explicit ChangesList(QWidget* parent = nullptr);

  /// What `diff` says changed from `before` to `after`; null methods clear the list.
  void setChanges(const Method* before, const Method* after, const MethodDiff& diff);
  /// The top row of a kind ("Added (3)"), or null when the pass made no change of it.
  QTreeWidgetItem* kindItem(Kind k) const;
  /// How many nodes the list names for a kind.
  int count(Kind k) const;
  /// The node row named `name` under kind `k`, or null.
  QTreeWidgetItem* nodeItem(Kind k, const QString& name) const;

 signals:
  /// A node row was clicked (or chosen with the keyboard): `name` in the method after
  /// the pass (added, modified) or before it (removed).
  void nodeActivated(const QString& name, bool removed);

 private:
  int counts_[3] = {0, 0, 0};
};

}  // namespace lstudio::ui
