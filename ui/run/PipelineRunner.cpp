#include "ui/run/PipelineRunner.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QtConcurrent/QtConcurrentRun>

#include "ui/support/Background.h"

namespace lstudio::ui {

std::shared_ptr<const Program> PipelineState::snapshot(size_t index) const {
  if (index == 0) return input;
  if (index > position || index > records.size()) return nullptr;
  return records[index - 1].after;
}

std::shared_ptr<const Program> PipelineState::snapshotAtOrBefore(size_t index) const {
  for (size_t i = std::min(index, position) + 1; i-- > 0;)
    if (auto s = snapshot(i)) return s;
  return input;
}

struct PipelineRunner::Session {
  Session(std::shared_ptr<const Program> input, ExecutorchBackendConfig config)
      : input(input), pipeline(std::move(input), std::move(config)) {}
  std::shared_ptr<const Program> input;
  Pipeline pipeline;
  /// Diff per pass, kept while its before and after snapshots stay the same.
  struct Cached {
    std::shared_ptr<const Program> before, after;
    std::shared_ptr<const std::vector<MethodDiff>> diffs;
  };
  std::vector<Cached> cache;

  /// The pipeline's state; with diffs only on the worker (they may take milliseconds).
  PipelineState state(bool withDiffs) {
    PipelineState s;
    s.input = input;
    s.records = pipeline.records();
    s.position = pipeline.position();
    s.failed = pipeline.failed();
    s.config = pipeline.config();
    if (!withDiffs) return s;
    cache.resize(s.records.size());
    s.diffs.resize(s.position);
    std::shared_ptr<const Program> before = input;
    for (size_t i = 0; i < s.position && i < s.records.size(); ++i) {
      const auto& after = s.records[i].after;
      if (!after) continue;
      if (after != before) {
        Cached& c = cache[i];
        if (c.before != before || c.after != after) {
          auto d = std::make_shared<std::vector<MethodDiff>>();
          for (size_t m = 0; m < std::min(before->methods.size(), after->methods.size()); ++m)
            d->push_back(diffMethods(before->methods[m], after->methods[m]));
          c = Cached{before, after, std::move(d)};
        }
        s.diffs[i] = c.diffs;
      }
      before = after;
    }
    return s;
  }
};

PipelineRunner::PipelineRunner(QObject* parent) : QObject(parent) {
  pool_.setMaxThreadCount(1);  // one pipeline, one thread: operations run in the order posted
  qRegisterMetaType<lstudio::PassRecord>();
}

PipelineRunner::~PipelineRunner() {
  stop_->store(true);
  pool_.waitForDone();
}

void PipelineRunner::start(std::shared_ptr<const Program> input, ExecutorchBackendConfig config) {
  stop_->store(true);  // the old pipeline's run stops at its next pass
  stop_ = std::make_shared<std::atomic<bool>>(false);
  ++generation_;
  session_ = std::make_shared<Session>(input, config);
  state_ = session_->state(false);  // nothing has run: no diffs
  emit stateChanged();
}

void PipelineRunner::clear() {
  stop_->store(true);
  stop_ = std::make_shared<std::atomic<bool>>(false);
  ++generation_;
  session_.reset();
  state_ = PipelineState{};
  emit stateChanged();
}

void PipelineRunner::post(Op op) {
  if (!session_) return;
  auto session = session_;
  quint64 gen = generation_;
  auto stop = stop_;
  if (pending_++ == 0) emit busyChanged(true);
  // States of this operation posted to the GUI thread and not delivered yet.
  // An intermediate state with a newer one queued behind it is dropped: when
  // passes finish faster than the window refreshes, the window shows the
  // newest state once instead of working through every stale one while the
  // GUI thread serves no input (seconds on a long run to the end).
  auto queued = std::make_shared<std::atomic<int>>(0);
  (void)QtConcurrent::run(&pool_, inBackground([this, session, gen, stop, op, queued] {
    auto publish = [&] {
      if (stop->load()) return;
      queued->fetch_add(1);
      QMetaObject::invokeMethod(this, [this, s = session->state(true), gen, queued] {
        if (queued->fetch_sub(1) > 1) return;  // a newer state follows
        deliver(s, gen, false);
      }, Qt::QueuedConnection);
    };
    if (!stop->load()) op(session->pipeline, publish);
    queued->fetch_add(1);
    QMetaObject::invokeMethod(this, [this, s = session->state(true), gen, queued] {
      queued->fetch_sub(1);
      deliver(s, gen, true);
    }, Qt::QueuedConnection);
  }));
}

void PipelineRunner::deliver(PipelineState s, quint64 generation, bool last) {
  if (generation == generation_) {
    size_t before = state_.position;
    state_ = std::move(s);
    for (size_t i = before; i < state_.position && state_.position <= state_.records.size(); ++i)
      emit passFinished(static_cast<int>(i), state_.records[i]);
    emit stateChanged();
  }
  if (last && --pending_ == 0) emit busyChanged(false);
}

void PipelineRunner::step() {
  post([](Pipeline& p, const auto&) { p.step(); });
}

void PipelineRunner::back() {
  post([](Pipeline& p, const auto&) { p.back(); });
}

void PipelineRunner::reset() {
  post([](Pipeline& p, const auto&) { p.reset(); });
}

void PipelineRunner::runToEnd() {
  auto stop = stop_;
  post([stop](Pipeline& p, const auto& publish) {
    while (!stop->load() && p.step()) publish();
  });
}

void PipelineRunner::runTo(int passIndex) {
  auto stop = stop_;
  post([stop, passIndex](Pipeline& p, const auto& publish) {
    if (passIndex < 0) return;
    while (p.position() > static_cast<size_t>(passIndex) + 1) p.back();
    while (!stop->load() && p.position() <= static_cast<size_t>(passIndex) && p.step()) publish();
  });
}

void PipelineRunner::stop() {
  stop_->store(true);
  stop_ = std::make_shared<std::atomic<bool>>(false);
}

void PipelineRunner::setConfig(ExecutorchBackendConfig config) {
  post([config = std::move(config)](Pipeline& p, const auto&) { p.setConfig(config); });
}

void PipelineRunner::waitForIdle() {
  while (pending_ > 0) {
    pool_.waitForDone();
    QCoreApplication::sendPostedEvents(this);
  }
}

}  // namespace lstudio::ui
