// MainWindow's Size tab: the treemap of where the opened file's bytes go,
// the comparison with another file, and a clicked block selected in the
// other views through the window's shared selection.
#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSettings>
#include <QTabBar>
#include <QTabWidget>
#include <QStatusBar>
#include <QTime>
#include <tuple>

#include "ui/config/ConstantTable.h"
#include "ui/window/MainWindow.h"
#include "ui/size/SizeView.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

/// The method and value the size breakdown calls `name`: a tensor's fully
/// qualified name, else "method %value". {-1, -1} when `p` has none.
std::pair<int, int> findConstant(const Program& p, const std::string& name) {
  // A name may also label a planned tensor (a training program's weight output): the one with data first.
  for (bool withData : {true, false})
    for (size_t m = 0; m < p.methods.size(); ++m)
      for (size_t v = 0; v < p.methods[m].values.size(); ++v) {
        const TensorSpec* t = p.methods[m].values[v].tensorIf();
        if (!t || t->fqn.empty() || t->fqn != name) continue;
        const TensorStorage s = t->storage();
        if (!withData || s == TensorStorage::Constant || s == TensorStorage::External || s == TensorStorage::Mutable)
          return {int(m), int(v)};
      }
  const size_t at = name.rfind(" %");
  if (at == std::string::npos) return {-1, -1};
  const std::string method = name.substr(0, at);
  const int value = std::atoi(name.c_str() + at + 2);
  for (size_t m = 0; m < p.methods.size(); ++m)
    if (p.methods[m].name == method && value >= 0 && size_t(value) < p.methods[m].values.size() &&
        p.methods[m].values[value].tensorIf())
      return {int(m), value};
  return {-1, -1};
}

}  // namespace

void MainWindow::buildSizeTab() {
  sizeView_ = new SizeView;
  sizeView_->setObjectName("sizeView");
  views_->addTab(sizeView_, tr("Size"));
}

void MainWindow::connectSizeView() {
  connect(sizeView_, &SizeView::compareRequested, this, &MainWindow::compareSizes);
  connect(sizeView_, &SizeView::constantActivated, this, &MainWindow::selectSizeConstant);
  connect(sizeView_, &SizeView::delegateActivated, this, &MainWindow::selectDelegateCall);
  connect(sizeView_, &SizeView::compareFinished, this, [this](bool ok, const QString& message) {
    if (ok) return;
    log(tr("Error: %1").arg(message));
    statusBar()->showMessage(message, 10'000);
  });
}

void MainWindow::showSizes(const LoadedProgram& p) {
  if (!p.sizes.empty()) return sizeView_->setFiles(p.sizes);
  const QString name = QFileInfo(q(p.path)).fileName().toHtmlEscaped();
  sizeView_->setFiles({}, p.program && p.program->format != SourceFormat::Pte
                              ? tr("<p>The size breakdown is for ExecuTorch files (.pte, .bpte, .ptd); <b>%1</b> is a "
                                   "torch.export program.</p><p>Export it (File › Export…, Ctrl+E) and open the .pte "
                                   "to see where its bytes go.</p>")
                                    .arg(name)
                              : tr("There is no size breakdown of %1.").arg(name));
}

void MainWindow::compareSizes() {
  if (!current_.ok || current_.sizes.empty()) return;
  const QString path = QFileDialog::getOpenFileName(this, tr("Compare sizes with"), QSettings().value("lastDirectory").toString(),
                                                    tr("ExecuTorch files (*.pte *.bpte *.ptd);;All files (*)"));
  if (path.isEmpty()) return;
  views_->setCurrentWidget(sizeView_);
  log(tr("Comparing the size of %1 with %2").arg(QFileInfo(q(current_.path)).fileName(), path));
  sizeView_->compareWith(path);
}

void MainWindow::selectSizeConstant(const QString& name) {
  if (!current_.program || !shown_) return;
  // The breakdown names the constants of the program as opened; the shown
  // snapshot (after de-lowering, say) may number its values otherwise.
  const auto [method, value] = findConstant(*current_.program, name.toStdString());
  if (method < 0) return;
  int shownMethod = method, shownValue = value;
  if (shown_ != current_.program) {
    const std::string& fqn = current_.program->methods[method].values[value].tensor().fqn;
    std::tie(shownMethod, shownValue) = fqn.empty() ? std::pair{-1, -1} : findConstant(*shown_, fqn);
  }
  if (shownMethod >= 0 && shownMethod != method_) methodTabs_->setCurrentIndex(shownMethod);  // shows that method
  if (constants_->program() == current_.program && constants_->methodIndex() == method && constants_->selectConstant(value)) {
    auto* dock = findChild<QDockWidget*>("constantsDock");
    if (dock && dock->toggleViewAction()->isChecked()) dock->raise();
  }
  if (shownMethod >= 0) selectValue(shownValue);
}

void MainWindow::selectDelegateCall(const QString& methodName, int delegate) {
  if (!shown_) return;
  for (size_t m = 0; m < shown_->methods.size(); ++m) {
    if (q(shown_->methods[m].name) != methodName) continue;
    const auto& nodes = shown_->methods[m].nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].kind == NodeKind::Delegate && nodes[i].delegate == delegate) {
        if (int(m) != method_) methodTabs_->setCurrentIndex(int(m));
        selectNode(int(i));
        return;
      }
  }
}

}  // namespace lstudio::ui
