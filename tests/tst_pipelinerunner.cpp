// The pipeline runner's hand-over to the GUI thread: states that pile up
// while the GUI thread is busy collapse into the newest one, and no finished
// pass goes unreported.
#include <QSignalSpy>
#include <QtTest>

#include "engine/samples/SampleZoo.h"
#include "ui/run/PipelineRunner.h"

using namespace lstudio;

class TestPipelineRunner : public QObject {
  Q_OBJECT
 private slots:
  void collapsesStatesQueuedBehindABusyGuiThread() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    ui::PipelineRunner r;
    r.start(std::make_shared<const Program>(std::move(p.value())), {});
    const size_t passes = r.state().records.size();
    QVERIFY(passes > 2);
    QSignalSpy states(&r, &ui::PipelineRunner::stateChanged);
    QSignalSpy finished(&r, &ui::PipelineRunner::passFinished);
    r.runToEnd();
    // Waits for the worker without serving events, as a GUI thread stuck in a
    // long refresh would: every pass's state is queued by the time they arrive.
    r.waitForIdle();
    QVERIFY(r.state().atEnd());
    QVERIFY(!r.busy());
    QCOMPARE(states.count(), 1);  // only the newest state, not one per pass
    QCOMPARE(finished.count(), int(passes));
    for (int i = 0; i < finished.count(); ++i) QCOMPARE(finished.at(i).at(0).toInt(), i);
  }

  void deliversEachStateWhenTheGuiKeepsUp() {
    auto p = buildSample("mlp");
    QVERIFY(p.ok());
    ui::PipelineRunner r;
    r.start(std::make_shared<const Program>(std::move(p.value())), {});
    QSignalSpy states(&r, &ui::PipelineRunner::stateChanged);
    r.step();
    QTRY_VERIFY(!r.busy());
    r.step();
    QTRY_VERIFY(!r.busy());
    QCOMPARE(states.count(), 2);
    QCOMPARE(r.state().position, size_t(2));
  }
};

QTEST_GUILESS_MAIN(TestPipelineRunner)
#include "tst_pipelinerunner.moc"
