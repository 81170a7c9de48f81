// GraphView: selection, highlighting, revealing a node inside collapsed groups, find, and
// groups opened and closed.
#include "ui/graph/GraphView.h"

#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "ui/graph/GraphItems.h"
#include "ui/graph/GraphLayout.h"

namespace lstudio::ui {

void GraphView::updateHighlight() {
  for (GraphItem* it : items_)
    if (it) {
      it->setSelected(it->id() == selectedItem_);
      it->setSelectedLine(selectedGraphNode_);  // a constant: its line in every box reading it
    }
  for (GraphEdgeItem* e : edges_) e->setHighlighted(selectedItem_ >= 0 && (e->from() == selectedItem_ || e->to() == selectedItem_));
}

void GraphView::setSelectedItem(int item, bool center) {
  selectedItem_ = item;
  const int n = model_ ? int(model_->nodes.size()) : 0;
  selectedGraphNode_ = item >= 0 && item < n ? item : -1;
  updateHighlight();
  if (center && item >= 0 && item < int(items_.size()) && items_[item]) view_->centerOn(items_[item]);
  refreshMinimap();  // it moves off the selected node
}

void GraphView::clickedItem(int item, bool doubleClick, int weight) {
  if (!model_) return;
  const int n = int(model_->nodes.size());
  if (weight >= 0 && !doubleClick) {  // a constant's line inside its reader: the constant
    selectedItem_ = item;
    selectedGraphNode_ = weight;
    updateHighlight();
    emit valueSelected(model_->nodes[weight].value);
    return;
  }
  if (doubleClick && item >= n) {
    openedByReveal_.clear();  // the user opens groups: they stay open
    focusGroup_ = item - n;
    collapsed_[item - n] = 0;
    requestLayout();
    emit groupToggled(QString::fromStdString(model_->groups[item - n].path), false);
    return;
  }
  setSelectedItem(item, false);
  if (item < n) {
    const GraphNode& gn = model_->nodes[item];
    if (gn.node >= 0) emit nodeSelected(gn.node);
    else if (gn.delegateCall >= 0) emit nodeSelected(gn.delegateCall);  // a payload operator: its delegate
    else if (gn.value >= 0) emit valueSelected(gn.value);
  } else if (const int call = delegateCallOfGroup(item - n); call >= 0) {
    emit nodeSelected(call);  // a delegate's group, folded or open: its call (backend, specs, payload)
  }
}

int GraphView::delegateCallOfGroup(int group) const {
  if (!model_ || group < 0 || group >= int(model_->groups.size()) || !model_->groups[group].delegate) return -1;
  // The group holds the call's own box (and, for a payload the studio decodes, its operators).
  for (const GraphNode& gn : model_->nodes) {
    const int call = gn.kind == VisualKind::Delegate && gn.node >= 0 ? gn.node : gn.delegateCall;
    if (call < 0) continue;
    for (int g = gn.group; g >= 0; g = model_->groups[g].parent)
      if (g == group) return call;
  }
  return -1;
}

void GraphView::revealNode(int graphNode, bool findHit) {
  if (!model_ || graphNode < 0 || graphNode >= int(model_->nodes.size())) return;
  selectedGraphNode_ = graphNode;
  findPos_ = graphNode;
  // Drawn: as itself, or as a line of the box reading it (a constant).
  const int item = shown_ ? shown_->itemOfNode[graphNode] : -1;
  const bool drawn = !pending_ && item >= 0 && item < int(model_->nodes.size()) && items_[item];
  // What the previous reveal opened closes again (but the groups above this node): a find
  // hit always, another selection when it has to open groups itself. Else each selection
  // leaves more open and the layout grows until it takes minutes.
  const bool closed = (findHit || !drawn) && closeRevealedGroups(graphNode);
  if (!closed && drawn) {
    setSelectedItem(item, true);
    selectedGraphNode_ = graphNode;
    updateHighlight();
    return;
  }
  for (int g = model_->nodes[graphNode].group; g >= 0; g = model_->groups[g].parent)
    if (collapsed_[g]) {
      collapsed_[g] = 0;
      openedByReveal_.push_back(g);
    }
  pendingCenter_ = graphNode;
  requestLayout();
}

bool GraphView::closeRevealedGroups(int graphNode) {
  // Groups above the new node stay open (and stay the reveal's to close later).
  bool any = false;
  std::vector<int> kept;
  for (int g : openedByReveal_) {
    bool above = false;
    for (int a = model_->nodes[graphNode].group; a >= 0 && !above; a = model_->groups[a].parent) above = a == g;
    if (above) {
      kept.push_back(g);
    } else if (!collapsed_[g]) {
      collapsed_[g] = 1;
      any = true;
    }
  }
  openedByReveal_ = std::move(kept);
  return any;
}

void GraphView::revealFindHit(int nodeIndex) {
  if (!program_ || nodeIndex < 0 || static_cast<size_t>(nodeIndex) >= program_->methods[methodIndex_].nodes.size()) return;
  if (!model_) {
    pendingSelect_ = nodeIndex;
    return;
  }
  revealNode(model_->nodeOfMethodNode[nodeIndex], true);
}

void GraphView::selectNode(int nodeIndex) {
  if (!program_ || nodeIndex < 0 || static_cast<size_t>(nodeIndex) >= program_->methods[methodIndex_].nodes.size()) return;
  if (!model_) {
    pendingSelect_ = nodeIndex;  // the model is still being built: select when it arrives
    return;
  }
  revealNode(model_->nodeOfMethodNode[nodeIndex]);
}

void GraphView::selectValue(int valueId) {
  if (!model_ || valueId < 0 || static_cast<size_t>(valueId) >= model_->nodeOfValue.size()) return;
  revealNode(model_->nodeOfValue[valueId]);
}

bool GraphView::selectNodeByName(const QString& name) {
  if (!program_) return false;
  const std::string s = name.toStdString();
  const Method& m = program_->methods[methodIndex_];
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].name == s) {
      selectNode(int(i));
      return true;
    }
  if (!model_) return false;
  for (size_t i = 0; i < model_->nodes.size(); ++i)
    if (model_->nodes[i].node < 0 && model_->nodes[i].name == s) {
      revealNode(int(i));
      return true;
    }
  return false;
}

int GraphView::selectedNode() const {
  if (!model_) return pendingSelect_;
  if (selectedGraphNode_ < 0) return -1;
  return model_->nodes[selectedGraphNode_].node;
}

bool GraphView::matches(int i, const QString& text) const {
  const GraphNode& gn = model_->nodes[i];
  auto has = [&](const std::string& s) { return !s.empty() && QString::fromStdString(s).contains(text, Qt::CaseInsensitive); };
  if (has(gn.name) || has(gn.title) || has(gn.target)) return true;
  return gn.group >= 0 && has(model_->groups[gn.group].path);
}

bool GraphView::find(const QString& text, bool backwards) {
  lastFind_ = text;
  if (!model_ || text.isEmpty()) return false;
  const int n = int(model_->nodes.size());
  int start = findPos_ >= 0 ? findPos_ : (backwards ? 0 : n - 1);
  for (int k = 1; k <= n; ++k) {
    int i = ((start + (backwards ? -k : k)) % n + n) % n;
    if (matches(i, text)) {
      revealNode(i, true);
      return true;
    }
  }
  return false;
}

bool GraphView::setGroupCollapsed(const QString& path, bool collapsed) {
  if (!model_) return false;
  const std::string p = path.toStdString();
  for (size_t g = 0; g < model_->groups.size(); ++g)
    if (model_->groups[g].path == p) {
      bool hidden = false;  // an open group inside a folded one (a family of layers) is opened to be seen
      for (int a = model_->groups[g].parent; a >= 0 && !collapsed; a = model_->groups[a].parent) hidden |= bool(collapsed_[a]);
      if (bool(collapsed_[g]) == collapsed && !hidden) return true;
      collapsed_[g] = collapsed;
      for (int a = model_->groups[g].parent; a >= 0 && !collapsed; a = model_->groups[a].parent) collapsed_[a] = 0;
      openedByReveal_.clear();
      focusGroup_ = int(g);
      requestLayout();
      emit groupToggled(path, collapsed);
      return true;
    }
  return false;
}

bool GraphView::isGroupCollapsed(const QString& path) const {
  if (!model_) return false;
  const std::string p = path.toStdString();
  for (size_t g = 0; g < model_->groups.size(); ++g)
    if (model_->groups[g].path == p) return collapsed_[g];
  return false;
}

void GraphView::toggleSelectedGroup() {
  if (!model_ || selectedItem_ < 0) return;
  const int n = int(model_->nodes.size());
  int g = selectedItem_ >= n ? selectedItem_ - n : -1;
  if (g >= 0) {
    clickedItem(selectedItem_, true);
  } else if ((g = model_->nodes[selectedItem_].group) >= 0) {
    collapsed_[g] = 1;
    focusGroup_ = g;
    requestLayout();
    emit groupToggled(QString::fromStdString(model_->groups[g].path), true);
  }
}

}  // namespace lstudio::ui
