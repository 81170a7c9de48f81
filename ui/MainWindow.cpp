#include "ui/MainWindow.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QToolBar>
#include <QTreeWidget>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/FormatUtil.h"

namespace lstudio::ui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QTreeWidgetItem* add(QTreeWidgetItem* parent, const QString& key, const QString& value = {}) {
  auto* it = new QTreeWidgetItem(parent, {key, value});
  return it;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Lowering Studio"));
  setAcceptDrops(true);

  tree_ = new QTreeWidget;
  tree_->setHeaderLabels({tr("Item"), tr("Value")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  tree_->setAlternatingRowColors(true);
  report_ = new QPlainTextEdit;
  report_->setReadOnly(true);
  report_->setLineWrapMode(QPlainTextEdit::NoWrap);
  report_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  report_->setPlaceholderText(tr("File > Open (Ctrl+O) a .pte or .bpte program, or drop one here."));
  auto* split = new QSplitter;
  split->addWidget(tree_);
  split->addWidget(report_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);

  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open…"), this, &MainWindow::chooseFile);
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About Lowering Studio"),
                       tr("Lowering Studio %1\nSee and steer how a PyTorch program becomes an ExecuTorch program.")
                           .arg(QApplication::applicationVersion()));
  });
  auto* tb = addToolBar(tr("Main"));
  tb->setObjectName("mainToolbar");
  tb->addAction(open);

  status_ = new QLabel(tr("Ready"));
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);  // indeterminate while a worker reads
  busy_->setMaximumWidth(160);
  busy_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(busy_);

  connect(&watcher_, &QFutureWatcher<LoadedProgram>::finished, this, &MainWindow::onLoaded);

  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  if (!s.contains("window/geometry")) resize(1200, 760);
  updateRecentMenu();
}

MainWindow::~MainWindow() { watcher_.waitForFinished(); }

void MainWindow::chooseFile() {
  QSettings s;
  QString dir = s.value("lastDirectory").toString();
  QString path = QFileDialog::getOpenFileName(this, tr("Open program"), dir,
                                              tr("Programs and data (*.pte *.bpte *.pt2 *.ptd *.bin);;ExecuTorch programs (*.pte *.bpte);;torch.export archives (*.pt2);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::openFile(const QString& path) {
  QSettings s;
  s.setValue("lastDirectory", QFileInfo(path).absolutePath());
  std::string p = path.toStdString();
  status_->setText(tr("Loading %1…").arg(QFileInfo(path).fileName()));
  busy_->show();
  // A newer load replaces the watched future; the older result is dropped.
  watcher_.setFuture(QtConcurrent::run([p] { return loadProgram(p, dataFilesBeside(p)); }));
}

void MainWindow::onLoaded() {
  busy_->hide();
  LoadedProgram r = watcher_.result();
  if (!r.ok) {
    status_->setText(tr("Could not open %1").arg(QFileInfo(q(r.path)).fileName()));
    if (!quietErrors_) {
      QMessageBox box(QMessageBox::Critical, tr("Cannot open program"),
                      tr("%1 is not a valid ExecuTorch program.").arg(QFileInfo(q(r.path)).fileName()),
                      QMessageBox::Ok, this);
      box.setInformativeText(q(r.error));
      box.setDetailedText(q(r.error));
      box.exec();
    }
    emit loadFinished(false, q(r.error));
    return;
  }
  current_ = std::move(r);
  showSummary(current_);
  QSettings s;
  QStringList recent = s.value("recentFiles").toStringList();
  recent.removeAll(q(current_.path));
  recent.prepend(q(current_.path));
  while (recent.size() > 10) recent.removeLast();
  s.setValue("recentFiles", recent);
  updateRecentMenu();
  emit loadFinished(true, {});
}

void MainWindow::showSummary(const LoadedProgram& p) {
  if (p.dataFile) {  // a .ptd on its own
    const DataFile& d = *p.dataFile;
    setWindowTitle(tr("%1 — Lowering Studio").arg(QFileInfo(q(p.path)).fileName()));
    status_->setText(tr("%1: %n tensor(s)", nullptr, int(d.entries.size())).arg(QFileInfo(q(p.path)).fileName()));
    report_->setPlainText(q(p.report));
    tree_->clear();
    auto* file = new QTreeWidgetItem(tree_, {tr("Data file"), QFileInfo(q(p.path)).fileName()});
    add(file, tr("Size"), q(formatBytes(d.file->size())));
    add(file, tr("Format"), d.legacy ? tr("FlatTensor (first generation)") : tr("FlatTensor"));
    auto* entries = add(file, tr("Entries"), QString::number(d.entries.size()));
    for (const auto& e : d.entries) {
      QString what = q(formatBytes(e.data.size));
      if (e.layout) {
        TensorSpec t;
        t.dtype = e.layout->dtype;
        t.sizes = e.layout->sizes;
        what = q(t.shapeString()) + ", " + what;
      }
      add(entries, q(e.key), what);
    }
    file->setExpanded(true);
    entries->setExpanded(true);
    return;
  }
  const ProgramSummary& s = p.summary;
  setWindowTitle(tr("%1 — Lowering Studio").arg(QFileInfo(q(p.path)).fileName()));
  status_->setText(tr("%1: %2, %3")
                       .arg(QFileInfo(q(p.path)).fileName(),
                            s.format == SourceFormat::Pte ? tr("%n method(s)", nullptr, int(s.methods.size()))
                                                          : tr("%n program(s)", nullptr, int(s.methods.size())),
                            q(formatBytes(s.facts.fileSize))));
  report_->setPlainText(q(p.report));
  tree_->clear();
  auto* file = new QTreeWidgetItem(tree_, {tr("File"), QFileInfo(q(p.path)).fileName()});
  add(file, tr("Size"), q(formatBytes(s.facts.fileSize)));
  if (s.format == SourceFormat::Pte) {
    add(file, tr("Identifier"), q(s.facts.identifier));
    add(file, tr("Header"), q(headerName(s.facts.header)));
    add(file, tr("Segments"), QString::number(s.segments));
    add(file, tr("Named data"), tr("%1 (%2)").arg(s.namedData).arg(q(formatBytes(s.namedDataBytes))));
  }
  for (const auto& d : s.dataFiles) add(file, tr("Data file"), q(d));
  if (!s.unresolvedExternal.empty())
    add(file, tr("Unresolved external tensors"), QString::number(s.unresolvedExternal.size()));
  file->setExpanded(true);
  if (s.format != SourceFormat::Pte) {
    add(file, tr("Container"), q(s.exportFacts.container));
    add(file, tr("Schema version"), q(s.exportFacts.schemaVersion));
    add(file, tr("torch"), q(s.exportFacts.torchVersion));
    for (const auto& m : s.methods) {
      auto* mi = new QTreeWidgetItem(tree_, {tr("Program"), q(m.name)});
      add(mi, tr("Nodes"), QString::number(m.nodes));
      add(mi, tr("Weights"), q(formatBytes(m.weightBytes)));
      add(mi, tr("Module depth"), QString::number(m.moduleDepth));
      auto* ops = add(mi, tr("Operators"), QString::number(m.operators.size()));
      for (const auto& op : m.operators)
        add(ops, q(op.name + (op.overload.empty() ? "" : "." + op.overload)), tr("%n call(s)", nullptr, int(op.count)));
      auto* ins = add(mi, tr("Signature inputs"), QString::number(m.signatureInputs.size()));
      for (const auto& e : m.signatureInputs)
        add(ins, q(e.kind + " " + e.name), q(e.type + (e.target.empty() ? "" : "  " + e.target)));
      auto* outs = add(mi, tr("Signature outputs"), QString::number(m.signatureOutputs.size()));
      for (const auto& e : m.signatureOutputs) add(outs, q(e.kind + " " + e.name), q(e.type));
      auto* edge = add(mi, tr("Edge dialect check"), m.diagnostics.empty() ? tr("ok") : tr("%n problem(s)", nullptr, int(m.diagnostics.size())));
      for (const auto& d : m.diagnostics) add(edge, QString(), q(d))->setToolTip(1, q(d));
      edge->setExpanded(true);
      mi->setExpanded(true);
      ops->setExpanded(true);
      ins->setExpanded(true);
    }
    return;
  }
  for (const auto& m : s.methods) {
    auto* mi = new QTreeWidgetItem(tree_, {tr("Method"), q(m.name)});
    add(mi, tr("Instructions"), QString::number(m.instructions));
    add(mi, tr("Values"), QString::number(m.values));
    auto* ins = add(mi, tr("Inputs"), QString::number(m.inputs.size()));
    for (const auto& io : m.inputs) add(ins, QString("[%1]").arg(io.value), q(io.description));
    auto* outs = add(mi, tr("Outputs"), QString::number(m.outputs.size()));
    for (const auto& io : m.outputs) add(outs, QString("[%1]").arg(io.value), q(io.description));
    auto* ops = add(mi, tr("Operators"), QString::number(m.operators.size()));
    for (const auto& op : m.operators)
      add(ops, q(op.name + (op.overload.empty() ? "" : "." + op.overload)), tr("%n call(s)", nullptr, int(op.count)));
    auto* dels = add(mi, tr("Delegates"), QString::number(m.delegates.size()));
    for (const auto& d : m.delegates) add(dels, q(d.id), q(formatBytes(d.bytes) + ", " + d.location));
    add(mi, tr("Constants"), tr("%1 (%2)").arg(m.constants.count).arg(q(formatBytes(m.constants.bytes))));
    auto* mem = add(mi, tr("Memory plan"), m.plan.overlapFree() ? tr("no overlaps") : tr("%1 overlaps").arg(m.plan.overlapCount));
    for (const auto& a : m.plan.arenas)
      add(mem, tr("mem_id %1").arg(a.memId),
          tr("arena %1, lower bound %2, ratio %3")
              .arg(q(formatBytes(a.size)), q(formatBytes(a.lowerBound)))
              .arg(a.lowerBound ? QString::number(a.ratio(), 'f', 3) : QStringLiteral("n/a")));
    mi->setExpanded(true);
    ops->setExpanded(true);
    mem->setExpanded(true);
  }
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& f : recent) recentMenu_->addAction(f, this, [this, f] { openFile(f); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openFile(urls.first().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  QMainWindow::closeEvent(e);
}

}  // namespace lstudio::ui
