// An ETDump beside the open .pte (File > Open ETDump): the Profile tab, the graph's time and
// gap stripes. The reading and linking is engine/inspect/EtdumpReport, run on a worker.
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QTabWidget>
#include <QTreeWidget>
#include <algorithm>
#include <cmath>

#include "ui/graph/GraphView.h"
#include "ui/graph/Inspector.h"
#include "ui/window/MainWindow.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {

namespace {

/// The debug buffer the runtime's write_etdump_result_to_file was likely given beside RUN.etdp.
QString debugBufferBeside(const QString& etdp) {
  QFileInfo f(etdp);
  for (const QString& name : {f.completeBaseName() + ".bin", f.completeBaseName() + ".debug",
                              f.completeBaseName() + "_debug.bin", f.completeBaseName() + ".debug.bin"}) {
    QFileInfo candidate(f.dir(), name);
    if (candidate.isFile()) return candidate.filePath();
  }
  return {};
}

/// A colour on a ramp from blue (0) through yellow to red (1).
QColor ramp(double t) {
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromHsvF(static_cast<float>((1.0 - t) * 0.66), 0.85f, 0.95f);
}

enum Column { kInstruction, kWhat, kMedian, kShare, kGap, kNode, kColumns };

/// A duration of the runtime's ticks, read as nanoseconds (ExecuTorch's clock on Linux and
/// most POSIX targets; its ETDump stores no tick rate), in the unit that suits it.
QString duration(double ticks) {
  if (ticks < 1e3) return QString::number(ticks, 'f', 0) + " ns";
  if (ticks < 1e6) return QString::number(ticks / 1e3, 'f', ticks < 1e4 ? 2 : 1) + " µs";
  if (ticks < 1e9) return QString::number(ticks / 1e6, 'f', ticks < 1e7 ? 2 : 1) + " ms";
  return QString::number(ticks / 1e9, 'f', 2) + " s";
}

/// A Profile row: sorts by the number behind a column's text (UserRole) where there is one.
class ProfileItem : public QTreeWidgetItem {
 public:
  using QTreeWidgetItem::QTreeWidgetItem;
  bool operator<(const QTreeWidgetItem& other) const override {
    int c = treeWidget() ? treeWidget()->sortColumn() : 0;
    QVariant a = data(c, Qt::UserRole), b = other.data(c, Qt::UserRole);
    if (a.isValid() && b.isValid()) return a.toDouble() < b.toDouble();
    return QTreeWidgetItem::operator<(other);
  }
};

}  // namespace

void MainWindow::openEtdump(const QString& path, const QString& debugBuffer) {
  const auto& input = runner_->state().input;
  if (!input || input->format != SourceFormat::Pte) {
    log(tr("Open ETDump: open the .pte that was run first"));
    return;
  }
  std::string method = shown_ && method_ >= 0 && static_cast<size_t>(method_) < shown_->methods.size()
                           ? shown_->methods[method_].name
                           : std::string();
  QString buffer = debugBuffer.isEmpty() ? debugBufferBeside(path) : debugBuffer;
  programRun_->startEtdump(input, method, path, buffer);
  showRunStarted(tr("Reading the ETDump %1…").arg(QFileInfo(path).fileName()));
}

bool MainWindow::etdumpApplies() const {
  auto e = programRun_->etdump();
  return e && e->ok && shown_ && e->input == runner_->state().input && method_ >= 0 &&
         static_cast<size_t>(method_) < shown_->methods.size() && shown_->methods[method_].name == e->report.method;
}

void MainWindow::onEtdumpFinished() {
  auto e = programRun_->etdump();
  showRunEnded();
  if (!e->ok) {
    status_->setText(tr("The ETDump could not be read"));
    log(tr("ETDump: %1").arg(e->error));
    if (!quietErrors_ && e->error != "cancelled") QMessageBox::warning(this, tr("Cannot read the ETDump"), e->error);
  } else {
    const EtdumpReport& r = e->report;
    QString line = tr("ETDump %1: %2 execution(s) of %3, Method::execute median %4 (%5 ticks), %6 instructions timed")
                       .arg(QFileInfo(e->path).fileName())
                       .arg(r.executions)
                       .arg(q(r.method))
                       .arg(duration(static_cast<double>(e->executeMedian())))
                       .arg(e->executeMedian())
                       .arg(r.instructions.size());
    if (!r.logged.empty()) {
      double worst = 0;
      size_t compared = 0;
      for (const LoggedInstruction& l : r.logged)
        if (l.difference) worst = std::max(worst, *l.difference), ++compared;
      if (!r.valuesRead) line += tr("; values were logged but no debug buffer lies beside it");
      else if (compared) line += tr("; %1 of %2 logged values compared, largest gap to the interpreter %3").arg(compared).arg(r.logged.size()).arg(worst, 0, 'g', 4);
      else if (!e->runNote.isEmpty()) line += tr("; logged values not compared: %1").arg(e->runNote);
    }
    log(line);
    status_->setText(tr("Read the ETDump: times in the Profile tab"));
    views_->setCurrentWidget(profile_);  // what was asked for, in front
    if (valueColouring_ == ValueColouring::Magnitude || valueColouring_ == ValueColouring::None) {
      valueColouring_ = ValueColouring::Time;
      if (auto it = colouringActions_.find(valueColouring_); it != colouringActions_.end()) it->second->setChecked(true);
    }
  }
  updateRunValues();
  fillProfile();
  applyValueTints();
  if (selectedNode_ >= 0 && shown_) inspector_->showNode(shown_, method_, selectedNode_);
  updateActions();
  emit shownChanged();
}

void MainWindow::buildProfileTab() {
  profile_ = new QTreeWidget;
  profile_->setObjectName("profileTree");
  profile_->setColumnCount(kColumns);
  profile_->setHeaderLabels({tr("#"), tr("Operator / delegate"), tr("Median time"), tr("Share"), tr("Logged gap"),
                             tr("Node")});
  profile_->headerItem()->setToolTip(kMedian, tr("The runtime's ticks read as nanoseconds, its clock on Linux (the "
                                                 "ETDump stores no tick rate); the ticks of every execution in each "
                                                 "row's tooltip"));
  profile_->setRootIsDecorated(true);
  profile_->setSortingEnabled(true);
  profile_->setAlternatingRowColors(true);
  profile_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  profile_->setHeaderHidden(false);
  // A row selects its node in the graph (and the inspector shows its times).
  connect(profile_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
    while (item && item->parent()) item = item->parent();
    if (item) selectNodeByName(item->text(kNode));
  });
  views_->addTab(profile_, tr("Profile"));
}

void MainWindow::fillProfile() {
  profile_->clear();
  auto e = programRun_->etdump();
  if (!e || !e->ok || e->input != runner_->state().input) return;
  const EtdumpReport& r = e->report;
  uint64_t total = e->executeMedian();
  auto number = [](QTreeWidgetItem* item, int column, double value, const QString& text) {
    item->setData(column, Qt::DisplayRole, text);
    item->setData(column, Qt::UserRole, value);
    item->setTextAlignment(column, Qt::AlignRight | Qt::AlignVCenter);
  };
  profile_->setSortingEnabled(false);
  for (const ProfiledInstruction& t : r.instructions) {
    auto* item = new ProfileItem(profile_);
    uint64_t median = medianOf(t.ticks);
    item->setData(kInstruction, Qt::DisplayRole, static_cast<qulonglong>(t.instruction));
    item->setText(kWhat, q(t.what));
    item->setText(kNode, q(t.node));
    number(item, kMedian, static_cast<double>(median), duration(static_cast<double>(median)));
    double share = total ? 100.0 * static_cast<double>(median) / static_cast<double>(total) : 0.0;
    number(item, kShare, share, QString::number(share, 'f', 1) + "%");
    if (const LoggedInstruction* l = e->logged(t.node)) {
      if (l->difference) number(item, kGap, *l->difference, QString::number(*l->difference, 'g', 4));
      else item->setText(kGap, q(l->notCompared));
    }
    item->setToolTip(kMedian, tr("%1 execution(s): %2 ticks").arg(t.ticks.size()).arg([&] {
      QStringList xs;
      for (uint64_t x : t.ticks) xs << QString::number(x);
      return xs.join(", ");
    }()));
    for (const auto& inner : t.delegateEvents) {
      auto* child = new ProfileItem(item);
      child->setText(kWhat, q(inner.name));
      const double m = static_cast<double>(medianOf(inner.ticks));
      number(child, kMedian, m, duration(m));
    }
  }
  profile_->setSortingEnabled(true);
  profile_->sortByColumn(kMedian, Qt::DescendingOrder);
}

void MainWindow::applyEtdumpTints() {
  auto e = programRun_->etdump();
  if (!etdumpApplies()) return graph_->setNodeTints({});
  const Method& m = shown_->methods[method_];
  std::vector<QColor> tints(m.nodes.size());
  if (valueColouring_ == ValueColouring::Time) {
    // Each node's share of the slowest node's median, on a square-root ramp (a few nodes
    // usually take most of the time; the rest stay told apart).
    uint64_t top = 0;
    for (const ProfiledInstruction& t : e->report.instructions) top = std::max(top, medianOf(t.ticks));
    for (size_t i = 0; i < m.nodes.size(); ++i)
      if (const ProfiledInstruction* t = e->timing(m.nodes[i].name))
        tints[i] = ramp(top ? std::sqrt(static_cast<double>(medianOf(t->ticks)) / static_cast<double>(top)) : 0.0);
  } else {
    // Equal: green; a gap: yellow (1e-9) to red (1 or more); not compared: grey.
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const LoggedInstruction* l = e->logged(m.nodes[i].name);
      if (!l) continue;
      if (!l->difference) tints[i] = QColor(0xB0, 0xB7, 0xBF);
      else if (*l->difference == 0) tints[i] = QColor(0x2E, 0x9D, 0x4F);
      else tints[i] = ramp(0.5 + 0.5 * std::clamp((std::log10(*l->difference) + 9) / 9, 0.0, 1.0));
    }
  }
  graph_->setNodeTints(std::move(tints));
}

}  // namespace lstudio::ui
