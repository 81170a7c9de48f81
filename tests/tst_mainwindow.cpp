// The studio window, offscreen: opening real and broken files off the GUI thread.
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryFile>
#include <QTreeWidget>
#include <QtTest>

#include "tests/TestSupport.h"
#include "ui/MainWindow.h"

using namespace lstudio;
using namespace lstudio::test;

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void opensAProgram() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/numpyrt_const_methods.pte"));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(w.current());
    int methods = 0;
    for (int i = 0; i < w.summaryTree()->topLevelItemCount(); ++i)
      methods += w.summaryTree()->topLevelItem(i)->text(0) == "Method";
    QCOMPARE(methods, 5);
    QVERIFY(w.reportView()->toPlainText().contains("method get_tensor"));
    QVERIFY(w.windowTitle().startsWith("numpyrt_const_methods.pte"));
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-inspect.png"));
  }

  void opensAnExportArchive() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    w.show();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pt2/linear.pt2"));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(!w.summaryTree()->findItems("parameter p_linear_weight", Qt::MatchExactly | Qt::MatchRecursive).isEmpty());
    QVERIFY(w.reportView()->toPlainText().contains("edge dialect check: problems: 1"));
    QString shots = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
    if (!shots.isEmpty()) QVERIFY(w.grab().save(shots + "/studio-pt2.png"));
  }

  void opensADataFile() {
    LSTUDIO_REQUIRE_FIXTURES();
    ui::MainWindow w;
    w.setQuietErrors(true);
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("ptd/linear.ptd"));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), true);
    QVERIFY(!w.summaryTree()->findItems("linear.weight", Qt::MatchExactly | Qt::MatchRecursive).isEmpty());
    QVERIFY(w.reportView()->toPlainText().contains("linear.bias: float32[3], 12 bytes"));
  }

  void findsDataFilesBeside() {
    LSTUDIO_REQUIRE_FIXTURES();
    // linear.pte's data file lives in another folder: nothing beside it, so its
    // external tensors stay unresolved and the window says so.
    ui::MainWindow w;
    w.setQuietErrors(true);
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(fixture("pte/linear.pte"));
    QVERIFY(spy.wait(30000));
    QVERIFY(w.current());
    QCOMPARE(w.current()->summary.unresolvedExternal.size(), size_t(2));
    QVERIFY(!w.summaryTree()->findItems("Unresolved external tensors", Qt::MatchExactly | Qt::MatchRecursive).isEmpty());
  }

  void reportsBrokenFiles() {
    ui::MainWindow w;
    w.setQuietErrors(true);
    QTemporaryFile f;
    QVERIFY(f.open());
    f.write(QByteArray(64, '\x01'));
    f.flush();
    QSignalSpy spy(&w, &ui::MainWindow::loadFinished);
    w.openFile(f.fileName());
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().at(0).toBool(), false);
    QString msg = spy.first().at(1).toString();
    QVERIFY2(msg.contains(f.fileName()) && msg.contains("at byte 4"), qPrintable(msg));
    QVERIFY(!w.current());
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
