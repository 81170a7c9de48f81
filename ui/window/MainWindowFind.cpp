// MainWindow's find: the bar over the views, the matches in the shown
// method and moving between them.
#include <QGraphicsView>
#include <QLabel>
#include <algorithm>

#include "ui/graph/FindBar.h"
#include "ui/graph/GraphView.h"
#include "ui/window/MainWindow.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

bool nodeMatches(const Method& m, const Node& node, const QString& text) {
  // After a partitioner: "not delegated" is every node it left out, and a node also matches
  // by its partition's tag ("tag0") or by the words of why it was left out ("int64").
  if (text.compare(kNotDelegatedQuery, Qt::CaseInsensitive) == 0) return !node.meta.notDelegatedBecause.empty();
  if (!node.meta.delegationTag.empty() && q(node.meta.delegationTag).compare(text, Qt::CaseInsensitive) == 0) return true;
  if (q(node.meta.notDelegatedBecause).contains(text, Qt::CaseInsensitive)) return true;
  if (q(node.name).contains(text, Qt::CaseInsensitive)) return true;
  if (node.op >= 0 && q(m.operators[node.op].fullName()).contains(text, Qt::CaseInsensitive)) return true;
  for (const ModuleFrame& f : node.meta.moduleStack)
    if (q(f.path).contains(text, Qt::CaseInsensitive)) return true;
  return false;
}

}  // namespace

void MainWindow::connectFindBar() {
  // Typing keeps a selection that still matches, else goes to the next match.
  connect(findBar_, &FindBar::textEdited, this, [this](const QString& text) {
    findText_ = text;
    const auto& hits = findHits(text);
    if (text.isEmpty() || std::binary_search(hits.begin(), hits.end(), selectedNode_)) updateFindCount();
    else findNode(text);
  });
  connect(findBar_, &FindBar::next, this, [this] { findNode(findBar_->text()); });
  connect(findBar_, &FindBar::previous, this, [this] { findNode(findBar_->text(), true); });
  connect(findBar_, &FindBar::closed, this, [this] { graph_->canvas()->setFocus(); });
}

const std::vector<int>& MainWindow::findHits(const QString& text) {
  FindCache& c = findCache_;
  if (c.program == shown_ && c.method == method_ && c.text == text) return c.hits;
  c = FindCache{shown_, method_, text, {}};
  if (!shown_ || text.isEmpty() || method_ >= static_cast<int>(shown_->methods.size())) return c.hits;
  const Method& m = shown_->methods[method_];
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (nodeMatches(m, m.nodes[i], text)) c.hits.push_back(static_cast<int>(i));
  return c.hits;
}

void MainWindow::updateFindCount() {
  if (!findBar_->isVisible() || findText_.isEmpty()) return findBar_->setCount(0, 0);
  const auto& hits = findHits(findText_);
  const auto at = std::lower_bound(hits.begin(), hits.end(), selectedNode_);
  const bool onHit = at != hits.end() && *at == selectedNode_;
  findBar_->setCount(onHit ? static_cast<int>(at - hits.begin()) + 1 : 0, static_cast<int>(hits.size()));
}

bool MainWindow::findNode(const QString& text, bool backwards) {
  findText_ = text;
  findBar_->setText(text);
  const std::vector<int> hits = findHits(text);  // a copy: selecting may refresh the cache
  if (hits.empty()) {
    if (!text.isEmpty()) status_->setText(tr("No node matches \"%1\"").arg(text));
    updateFindCount();
    return false;
  }
  // The next match after the selection (the previous one before it), around the end.
  int pick;
  if (backwards) {
    auto it = std::lower_bound(hits.begin(), hits.end(), std::max(selectedNode_, 0));
    pick = it == hits.begin() ? hits.back() : *(it - 1);
  } else {
    auto it = std::upper_bound(hits.begin(), hits.end(), selectedNode_);
    pick = it == hits.end() ? hits.front() : *it;
  }
  findingHit_ = true;
  selectNode(pick);
  findingHit_ = false;
  status_->setText(tr("Found \"%1\": %2").arg(text, q(shown_->methods[method_].nodes[pick].name)));
  return true;
}

}  // namespace lstudio::ui
