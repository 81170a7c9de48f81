#include "ui/run/ProgramRun.h"

#include <QCoreApplication>
#include <QFutureWatcher>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>

#include "engine/lowering/Executable.h"
#include "engine/run/Npy.h"
#include "ui/support/Background.h"

namespace lstudio::ui {

const run::TracedNode* ProgramRunResult::node(const std::string& name) const {
  auto it = byNode.find(name);
  return it == byNode.end() ? nullptr : &run.trace[it->second];
}

namespace {

/// The program after timeline row `row` of `state`, made executable.
Result<Program> executableRow(const PipelineState& state, int row) {
  auto snap = state.snapshot(static_cast<size_t>(row));
  if (!snap) return Error{ErrorCode::Invalid, "", std::nullopt, "running", "a snapshot that exists", "none"};
  std::vector<std::string> toCome;
  for (size_t i = static_cast<size_t>(row); i < state.records.size(); ++i) toCome.push_back(state.records[i].name);
  return executableSnapshot(*snap, row ? state.records[static_cast<size_t>(row) - 1].name : "", toCome, state.config);
}

/// The inputs of a run the user named none for: the example inputs torch.export.save kept in
/// the .pt2 that was opened, else the iota rule (no inputs given). Returns their description.
QString defaultInputs(const Program& input, run::RunOptions& o) {
  if (input.format == SourceFormat::Pt2)
    if (auto sample = pt2SampleInputs(input.path); sample && !sample->empty()) {
      o.inputs = std::move(sample.value());
      return QStringLiteral("the .pt2's sample inputs");
    }
  return QStringLiteral("iota inputs");
}

QString rowTitle(const PipelineState& state, int row) {
  return row == 0 ? QStringLiteral("the input program")
                  : QStringLiteral("the program after %1").arg(QString::fromStdString(state.records[row - 1].name));
}

/// The reference for `r`: the input program, or the first snapshot that runs (an ATen
/// program's input does not); none when that is the snapshot run. Fills the difference of
/// every node from its namesake there, and the first node past the tolerance.
void compareWithReference(const PipelineState& state, ProgramRunResult& r, run::RunOptions o,
                          const std::atomic<bool>& cancelled) {
  o.progress = [&cancelled](uint64_t, uint64_t) { return !cancelled.load(); };
  for (int row = 0; row < r.snapshot && !cancelled.load(); ++row) {
    auto ref = executableRow(state, row);
    if (!ref) continue;
    auto refRun = run::runProgram(ref.value(), o);
    if (!refRun) {  // (an ATen program emits, but calls operators without kernels: try the next)
      if (r.referenceNote.isEmpty())
        r.referenceNote = QStringLiteral("%1 does not run: %2")
                              .arg(rowTitle(state, row), QString::fromStdString(refRun.error().message()));
      continue;
    }
    r.reference = row;
    r.referenceNote = rowTitle(state, row);
    std::map<std::string, const run::TracedNode*> refNodes;
    for (const auto& t : refRun->trace) refNodes.emplace(t.node, &t);
    for (const auto& t : r.run.trace) {
      auto it = refNodes.find(t.node);
      if (t.node.empty() || it == refNodes.end()) continue;
      double worst = t.values.size() == it->second->values.size() ? 0 : std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < t.values.size() && i < it->second->values.size(); ++i)
        worst = std::max(worst, run::maxDifference(t.values[i], it->second->values[i]));
      r.differences[t.node] = worst;
    }
    r.firstDifference = run::firstDifferingNode(r.run, refRun.value(), r.tolerance);
    r.referenceOutputs = std::move(refRun->outputs);
    return;
  }
}

}  // namespace

ProgramRunController::ProgramRunController(QObject* parent) : QObject(parent) {}

ProgramRunController::~ProgramRunController() { cancel(); }

void ProgramRunController::cancel() {
  if (cancel_) cancel_->store(true);
}

void ProgramRunController::clear() {
  cancel();
  ++serial_;  // a run still finishing reports to no one
  running_ = false;
  result_.reset();
  everyPass_.reset();
  etdump_.reset();
}

template <class R, class Work>
void ProgramRunController::launch(Work work, std::shared_ptr<const R> ProgramRunController::*into,
                                  void (ProgramRunController::*done)()) {
  cancel();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  running_ = true;
  quint64 serial = ++serial_;
  auto cancelled = cancel_;
  QPointer<ProgramRunController> self(this);
  // Progress reaches the GUI thread queued; a destroyed controller hears nothing.
  auto report = [self](uint64_t doneSoFar, uint64_t total) {
    QMetaObject::invokeMethod(self, [self, doneSoFar, total] {
      if (self) emit self->progress(static_cast<int>(doneSoFar), static_cast<int>(total));
    }, Qt::QueuedConnection);
  };
  auto* watcher = new QFutureWatcher<std::shared_ptr<const R>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, serial, into, done] {
    watcher->deleteLater();
    if (serial != serial_) return;  // a newer run replaced this one
    this->*into = watcher->result();
    running_ = false;
    emit (this->*done)();
  });
  watcher->setFuture(QtConcurrent::run(inBackground([work = std::move(work), cancelled, report] {
    return std::shared_ptr<const R>(work(*cancelled, report));
  })));
}

void ProgramRunController::start(const PipelineState& state, int snapshot, const std::string& method, double tolerance,
                                 const QStringList& npys) {
  auto work = [state, snapshot, method, tolerance, npys](const std::atomic<bool>& cancelled, const auto& report) {
    auto r = std::make_shared<ProgramRunResult>();
    r->input = state.input;
    r->snapshot = snapshot;
    r->tolerance = tolerance;
    run::RunOptions o = throughDelegates({});  // a delegate call runs its original program where kept
    o.method = method;
    o.trace = true;
    o.stopAtDelegate = true;  // else the values up to it are worth showing
    r->inputs = npys.isEmpty() ? defaultInputs(*state.input, o) : QStringLiteral("%1 .npy input(s)").arg(npys.size());
    for (const QString& f : npys) {
      auto v = run::readNpy(f.toStdString());
      if (!v) {
        r->error = QString::fromStdString(v.error().message());
        return r;
      }
      o.inputs.push_back(std::move(v.value()));
    }
    o.progress = [&cancelled, report](uint64_t done, uint64_t total) {
      report(done, total);
      return !cancelled.load();
    };
    auto executable = executableRow(state, snapshot);
    if (!executable) {
      r->error = QString::fromStdString(executable.error().message());
      return r;
    }
    auto ran = run::runProgram(executable.value(), o);
    if (!ran) {
      r->error = cancelled.load() ? QStringLiteral("cancelled") : QString::fromStdString(ran.error().message());
      return r;
    }
    r->run = std::move(ran.value());
    for (size_t i = 0; i < r->run.trace.size(); ++i)
      if (!r->run.trace[i].node.empty()) r->byNode.emplace(r->run.trace[i].node, i);
    r->ok = true;
    compareWithReference(state, *r, o, cancelled);
    return r;
  };
  launch<ProgramRunResult>(std::move(work), &ProgramRunController::result_, &ProgramRunController::finished);
}

void ProgramRunController::startEveryPass(const PipelineState& state, const std::string& method) {
  auto work = [state, method](const std::atomic<bool>& cancelled, const auto& report) {
    auto r = std::make_shared<EveryPassResult>();
    std::vector<std::string> names;
    for (const auto& rec : state.records) names.push_back(rec.name);
    for (size_t k = 0; k <= state.position && k <= state.records.size(); ++k) r->snapshots.push_back(state.snapshot(k));
    run::RunOptions o;
    o.method = method;
    r->inputs = defaultInputs(*state.input, o);
    o.progress = [&cancelled](uint64_t, uint64_t) { return !cancelled.load(); };
    size_t total = r->snapshots.size();
    r->rows = runEverySnapshot(r->snapshots, names, state.config, o, [&cancelled, report, total](size_t row) {
      report(row, total);
      return !cancelled.load();
    });
    r->cancelled = cancelled.load();
    return r;
  };
  launch<EveryPassResult>(std::move(work), &ProgramRunController::everyPass_, &ProgramRunController::everyPassFinished);
}

const ProfiledInstruction* EtdumpResult::timing(const std::string& node) const {
  auto it = byNode.find(node);
  return it == byNode.end() ? nullptr : &report.instructions[it->second];
}

const LoggedInstruction* EtdumpResult::logged(const std::string& node) const {
  auto it = logByNode.find(node);
  return it == logByNode.end() ? nullptr : &report.logged[it->second];
}

void ProgramRunController::startEtdump(std::shared_ptr<const Program> program, const std::string& method,
                                       const QString& path, const QString& debugBuffer) {
  auto work = [program, method, path, debugBuffer](const std::atomic<bool>& cancelled, const auto& report) {
    auto r = std::make_shared<EtdumpResult>();
    r->path = path;
    r->debugBuffer = debugBuffer;
    r->input = program;
    auto dump = readEtdump(path.toStdString());
    if (!dump) return r->error = QString::fromStdString(dump.error().message()), r;
    std::shared_ptr<const MappedFile> buffer;
    if (!debugBuffer.isEmpty()) {
      auto b = MappedFile::open(debugBuffer.toStdString());
      if (!b) return r->error = QString::fromStdString(b.error().message()), r;
      buffer = b.value();
    }
    auto linked = linkEtdump(dump.value(), *program, method, buffer.get());
    if (!linked) return r->error = QString::fromStdString(linked.error().message()), r;
    r->report = std::move(linked.value());
    if (buffer && (!r->report.logged.empty() || !r->report.outputs.empty())) {
      run::RunOptions o = throughDelegates({});  // a delegate call through its original program, where linked
      o.method = r->report.method;
      o.trace = true;
      o.progress = [&cancelled, report](uint64_t done, uint64_t total) {
        report(done, total);
        return !cancelled.load();
      };
      auto traced = run::runProgram(*program, o);
      if (traced) compareWithInterpreter(r->report, traced.value());
      else r->runNote = QString::fromStdString(traced.error().message());
    }
    const Method* m = nullptr;
    for (const Method& x : program->methods)
      if (x.name == r->report.method) m = &x;
    for (size_t i = 0; m && i < r->report.instructions.size(); ++i)
      r->byNode.emplace(m->nodes[r->report.instructions[i].instruction].name, i);
    for (size_t i = 0; m && i < r->report.logged.size(); ++i)
      r->logByNode.emplace(m->nodes[r->report.logged[i].instruction].name, i);
    r->ok = !cancelled.load();
    if (!r->ok) r->error = QStringLiteral("cancelled");
    return r;
  };
  launch<EtdumpResult>(std::move(work), &ProgramRunController::etdump_, &ProgramRunController::etdumpFinished);
}

void ProgramRunController::waitForIdle() {
  while (running_) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
}

}  // namespace lstudio::ui
