// Running the shown snapshot in the engine's interpreter (Lowering > Run Program).
#include <QLabel>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <QFileDialog>
#include <QPlainTextEdit>
#include <QSettings>
#include <QtConcurrent/QtConcurrentRun>
#include <QProgressBar>
#include <QPushButton>

#include "ui/graph/GraphView.h"
#include "ui/graph/Inspector.h"
#include "ui/window/MainWindow.h"
#include "engine/run/Expected.h"
#include "engine/run/Npy.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {

void MainWindow::connectProgramRun() {
  connect(programRun_, &ProgramRunController::progress, this, [this](int done, int total) {
    if (!programRun_->running()) return;
    busy_->setRange(0, std::max(total, 1));
    busy_->setValue(std::min(done, total));
  });
  connect(programRun_, &ProgramRunController::finished, this, &MainWindow::onProgramRunFinished);
  connect(programRun_, &ProgramRunController::everyPassFinished, this, &MainWindow::onEveryPassFinished);
  connect(programRun_, &ProgramRunController::etdumpFinished, this, &MainWindow::onEtdumpFinished);
}

void MainWindow::showRunStarted(const QString& status) {
  busy_->setRange(0, 0);
  busy_->show();
  cancelLoad_->setToolTip(tr("Stop the run (Esc)"));
  cancelLoad_->show();
  status_->setText(status);
  updateActions();
}

void MainWindow::showRunEnded() {
  busy_->setRange(0, 0);
  busy_->setVisible(runner_->busy() || loading_);
  cancelLoad_->setToolTip(tr("Stop loading (Esc)"));
  cancelLoad_->setVisible(loading_);
}

void MainWindow::runEveryPass() {
  if (!shown_ || method_ < 0 || static_cast<size_t>(method_) >= shown_->methods.size() || runner_->busy()) return;
  const std::string method = shown_->methods[method_].name;
  programRun_->startEveryPass(runner_->state(), method);
  showRunStarted(tr("Running %1 after every pass…").arg(q(method)));
}

void MainWindow::onEveryPassFinished() {
  auto r = programRun_->everyPass();
  showRunEnded();
  const PipelineState& s = runner_->state();
  int ran = 0, changed = 0;
  for (size_t k = 0; k < r->rows.size(); ++k) {
    ran += r->rows[k].ran;
    if (!r->rows[k].changed || k == 0 || k > s.records.size()) continue;
    ++changed;
    bool dummy = false;
    log(tr("%1 changed the outputs: %2").arg(q(s.records[k - 1].name), everyPassNote(static_cast<int>(k), &dummy)));
  }
  QString summary = r->cancelled ? tr("Run of every pass cancelled")
                    : changed   ? tr("%1 of %2 snapshots ran on %3; %4 pass(es) changed the outputs (marked ≠)")
                                    .arg(ran).arg(r->rows.size()).arg(r->inputs).arg(changed)
                                : tr("%1 of %2 snapshots ran on %3; no pass changed the outputs")
                                    .arg(ran).arg(r->rows.size()).arg(r->inputs);
  log(summary);
  status_->setText(summary);
  refreshTimeline();
  updateActions();
  emit shownChanged();
}

QString MainWindow::everyPassNote(int row, bool* changed) const {
  *changed = false;
  auto r = programRun_->everyPass();
  const PipelineState& s = runner_->state();
  if (!r || row < 0 || !r->describes(static_cast<size_t>(row), s.snapshot(static_cast<size_t>(row)))) return {};
  const SnapshotValues& v = r->rows[static_cast<size_t>(row)];
  if (!v.ran) return v.error.empty() ? QString() : tr("does not run: %1").arg(q(v.error));
  if (!v.changed) return tr("outputs as before");
  *changed = true;
  QString note;
  if (v.checksums.size() != v.outputsBefore) note = tr("%1 → %2 outputs; ").arg(v.outputsBefore).arg(v.checksums.size());
  note += tr("largest |difference| %1").arg(v.difference, 0, 'g', 4);
  if (v.firstDifference)
    note += tr("; first at node %1 (%2)").arg(q(v.firstDifference->node), q(v.firstDifference->op));
  return note;
}

void MainWindow::runProgram(QStringList npys) {
  if (!shown_ || method_ < 0 || static_cast<size_t>(method_) >= shown_->methods.size() || runner_->busy()) return;
  const PipelineState& state = runner_->state();
  const std::string method = shown_->methods[method_].name;
  std::sort(npys.begin(), npys.end());  // input_0.npy, input_1.npy, …: the inputs' order
  if (!npys.isEmpty()) log(tr("Run on %1").arg(npys.join(", ")));
  programRun_->start(state, snapshot_, method, 0.0, npys);
  showRunStarted(tr("Running %1 (%2)…").arg(q(method), snapshotTitle(snapshot_)));
}

void MainWindow::onProgramRunFinished() {
  auto r = programRun_->result();
  showRunEnded();
  if (!r->ok) {
    status_->setText(r->error == "cancelled" ? tr("Run cancelled") : tr("The program could not run"));
    log(tr("Run: %1").arg(r->error));
  } else {
    QString line = tr("Ran %1 (%2) on %3: %4 instructions, %5 outputs")
                       .arg(q(r->run.method), snapshotTitle(r->snapshot), r->inputs)
                       .arg(r->run.instructions)
                       .arg(r->run.outputs.size());
    if (r->reference < 0)
      line += r->referenceNote.isEmpty() ? tr("; nothing earlier to compare with") : tr("; no reference (%1)").arg(r->referenceNote);
    else if (r->firstDifference)
      line += tr("; first node that differs from %1: %2 (%3, largest |difference| %4)")
                  .arg(r->referenceNote, q(r->firstDifference->node), q(r->firstDifference->op))
                  .arg(r->firstDifference->difference, 0, 'g', 4);
    else
      line += tr("; every node equals its namesake in %1").arg(r->referenceNote);
    if (!r->run.stoppedAt.empty())
      line += tr("; stopped at %1: the values up to it are shown").arg(q(r->run.stoppedAt));
    log(line);
    status_->setText(r->firstDifference     ? tr("Ran: a node differs from %1").arg(r->referenceNote)
                     : r->run.stoppedAt.empty() ? tr("Ran the program")
                                                : tr("Ran up to a delegate call"));
  }
  if (r->ok && !expectedFiles_.isEmpty()) compareWithExpected();
  updateRunValues();
  applyValueTints();
  if (!r->ok || !r->firstDifference || !selectFirstDifference()) {
    if (selectedNode_ >= 0) inspector_->showNode(shown_, method_, selectedNode_);
  }
  updateActions();
  emit shownChanged();
}

void MainWindow::chooseExpectedOutputs() {
  QStringList files = QFileDialog::getOpenFileNames(this, tr("The eager model's outputs: one .npy file per output (name order)"),
                                                    QSettings().value("lastDirectory").toString(),
                                                    tr("NumPy arrays (*.npy);;All files (*)"));
  if (!files.isEmpty()) setExpectedOutputs(files);
}

void MainWindow::setExpectedOutputs(QStringList files) {
  std::sort(files.begin(), files.end());  // output_0.npy, output_1.npy, …: the outputs' order
  expectedFiles_ = files;
  log(tr("Expected outputs: %1; every run is compared with them").arg(files.join(", ")));
  auto r = programRun_->result();
  if (r && r->ok && r->snapshot == snapshot_) compareWithExpected();
  else runProgram();
}

void MainWindow::compareWithExpected() {
  auto r = programRun_->result();
  if (!r || !r->ok || expectedWatcher_.isRunning()) return;
  // Reading the arrays (a language model's logits are large) and comparing run on a worker.
  const QStringList files = expectedFiles_;
  std::vector<run::HostValue> outputs = r->run.outputs;
  // The reference run (the input program, or the first snapshot that runs) tells whether the
  // passes made a gap: when its outputs are as expected, the first node that differs from it
  // (selected after the run) is where.
  struct Reference {
    std::vector<run::HostValue> outputs;
    QString title;
    std::optional<run::NodeDifference> firstDifference;
  } reference{r->reference >= 0 ? r->referenceOutputs : std::vector<run::HostValue>{}, r->referenceNote,
              r->firstDifference};
  if (!reference.title.isEmpty()) reference.title[0] = reference.title[0].toUpper();
  expectedWatcher_.disconnect();
  connect(&expectedWatcher_, &QFutureWatcher<QStringList>::finished, this, [this] {
    const QStringList lines = expectedWatcher_.result();
    for (const QString& l : lines) log(l);
    status_->setText(lines.isEmpty() ? QString() : lines.back());
  });
  expectedWatcher_.setFuture(QtConcurrent::run([files, outputs = std::move(outputs), reference = std::move(reference)] {
    QStringList lines;
    double worstUlp = 0, worstAbs = 0, referenceAbs = 0;
    bool compared = true;
    for (qsizetype i = 0; i < files.size(); ++i) {
      const QString name = QFileInfo(files[i]).fileName();
      auto expected = run::readNpy(files[i].toStdString());
      if (!expected) {
        lines << QObject::tr("Expected output %1: %2").arg(i).arg(q(expected.error().message()));
        compared = false;
        continue;
      }
      if (static_cast<size_t>(i) >= outputs.size()) {
        lines << QObject::tr("Expected output %1 (%2): the method has %3 outputs").arg(i).arg(name).arg(outputs.size());
        compared = false;
        continue;
      }
      const run::ExpectedDifference d = run::differenceFromExpected(outputs[i], expected.value());
      if (!d.mismatch.empty()) {
        lines << QObject::tr("Output %1 against %2: not compared, %3").arg(i).arg(name, q(d.mismatch));
        compared = false;
        continue;
      }
      worstUlp = std::max(worstUlp, d.maxUlp);
      worstAbs = std::max(worstAbs, d.maxAbs);
      lines << QObject::tr("Output %1 against %2: largest |difference| %3, %4 ULP").arg(i).arg(name).arg(d.maxAbs, 0, 'g', 4).arg(d.maxUlp);
      if (static_cast<size_t>(i) < reference.outputs.size()) {
        const run::ExpectedDifference rd = run::differenceFromExpected(reference.outputs[i], expected.value());
        referenceAbs = std::max(referenceAbs, rd.mismatch.empty() ? rd.maxAbs : std::numeric_limits<double>::infinity());
      }
    }
    if (static_cast<size_t>(files.size()) != outputs.size()) compared = false;
    // Where a gap comes from, when there is one and a reference ran (exactly: the GUI's runs
    // compare at tolerance 0).
    if (compared && worstAbs > 0 && reference.outputs.size() == outputs.size()) {
      if (referenceAbs > 0)
        lines << QObject::tr("%1 is already %2 from the expected outputs: the gap comes before these passes "
                             "(the export, the inputs, or a kernel both runs share)")
                     .arg(reference.title).arg(referenceAbs, 0, 'g', 4);
      else if (reference.firstDifference)
        lines << QObject::tr("%1 gives the expected outputs exactly: the passes after it made the gap; it starts at node "
                             "%2 (%3), selected")
                     .arg(reference.title, q(reference.firstDifference->node), q(reference.firstDifference->op));
      else
        lines << QObject::tr("%1 gives the expected outputs exactly; no node with a namesake there differs: the gap "
                             "is in nodes lowering made")
                     .arg(reference.title);
    }
    lines << (compared ? QObject::tr("Expected outputs: every output compared, at most %1 ULP apart").arg(worstUlp)
                       : QObject::tr("Expected outputs: %1 files for %2 outputs, not all compared").arg(files.size()).arg(outputs.size()));
    return lines;
  }));
}

bool MainWindow::runApplies() const {
  auto r = programRun_->result();
  return r && shown_ && r->input == runner_->state().input && r->snapshot == snapshot_ && method_ >= 0 &&
         static_cast<size_t>(method_) < shown_->methods.size() && shown_->methods[method_].name == r->run.method;
}

void MainWindow::updateRunValues() {
  inspector_->setRunValues(programRun_->result(), runApplies());
  inspector_->setEtdump(programRun_->etdump(), etdumpApplies());
}

void MainWindow::setValueColouring(ValueColouring c) {
  valueColouring_ = c;
  applyValueTints();
}

namespace {

/// A colour on a ramp from blue (0) through yellow to red (1).
QColor ramp(double t) {
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromHsvF(static_cast<float>((1.0 - t) * 0.66), 0.85f, 0.95f);
}

}  // namespace

void MainWindow::applyValueTints() {
  if (valueColouring_ == ValueColouring::Time || valueColouring_ == ValueColouring::Gap) return applyEtdumpTints();
  auto r = programRun_->result();
  if (valueColouring_ == ValueColouring::None || !r || !r->ok || !runApplies()) return graph_->setNodeTints({});
  const Method& m = shown_->methods[method_];
  std::vector<QColor> tints(m.nodes.size());
  if (valueColouring_ == ValueColouring::Magnitude) {
    // log10 of each node's largest |value|, spread over the run's range of them.
    std::vector<double> mag(m.nodes.size(), -1);
    std::vector<bool> bad(m.nodes.size(), false);
    double lo = 1e300, hi = -1e300;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      const run::TracedNode* t = r->node(m.nodes[i].name);
      if (!t) continue;
      double top = 0;
      for (const auto& v : t->values) {
        run::ValueStats st = run::valueStats(v, 0);
        bad[i] = bad[i] || st.nans || st.infinities;
        top = std::max({top, std::fabs(st.min), std::fabs(st.max)});
      }
      mag[i] = std::log10(std::max(top, 1e-30));
      lo = std::min(lo, mag[i]);
      hi = std::max(hi, mag[i]);
    }
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      if (bad[i]) tints[i] = QColor(0xC2, 0x18, 0x5B);
      else if (r->node(m.nodes[i].name)) tints[i] = ramp(hi > lo ? (mag[i] - lo) / (hi - lo) : 0.5);
    }
  } else if (r->reference >= 0) {
    // Equal: green; a difference: yellow (1e-9 or less of the largest) to red (1 or more).
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      auto it = r->differences.find(m.nodes[i].name);
      if (!r->node(m.nodes[i].name)) continue;
      if (it == r->differences.end()) tints[i] = QColor(0xB0, 0xB7, 0xBF);  // no namesake in the reference
      else if (it->second == 0) tints[i] = QColor(0x2E, 0x9D, 0x4F);
      else tints[i] = ramp(0.5 + 0.5 * std::clamp((std::log10(it->second) + 9) / 9, 0.0, 1.0));
    }
  }
  graph_->setNodeTints(std::move(tints));
}

bool MainWindow::selectFirstDifference() {
  auto r = programRun_->result();
  if (!r || !r->firstDifference) return false;
  if (r->snapshot != snapshot_) showSnapshot(r->snapshot);
  return selectNodeByName(q(r->firstDifference->node));
}

}  // namespace lstudio::ui
