// lowering-studio: the desktop window.
//
// `--screenshot OUT.png` opens the file, optionally runs to a pass and
// selects a node, waits until nothing is loading, lowering or laying out,
// renders the window to a PNG and exits (for the README's pictures and tests).
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QIcon>
#include <QTabWidget>
#include <QTimer>
#include <cstdio>
#include <cstring>

#include "engine/lowering/BackendConfig.h"
#include "ui/config/ConfigEditor.h"
#include "ui/window/MainWindow.h"

#ifndef LSTUDIO_VERSION
#define LSTUDIO_VERSION "dev"
#endif

namespace {

/// Spins the event loop until the window has been idle for a few polls (or the timeout).
bool settle(lstudio::ui::MainWindow& w, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  int quiet = 0;
  while (t.elapsed() < timeoutMs) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    quiet = w.idle() ? quiet + 1 : 0;
    if (quiet >= 5) return true;
    QThread::msleep(10);
  }
  return false;
}

/// The command line: a file to open and, for --screenshot, what to show before rendering.
struct Options {
  QCommandLineOption screenshot{"screenshot", "Render the window to a PNG file and exit.", "out.png"};
  QCommandLineOption runTo{"run-to", "Run the lowering until this pass has run ('end' for all).", "pass"};
  QCommandLineOption select{"select", "Select the node with this name.", "node"};
  QCommandLineOption view{"view", "The view to show: graph, plan, text, summary or size.", "view"};
  QCommandLineOption config{"config", "Start with this ExecutorchBackendConfig (JSON).", "cfg.json"};
  QCommandLineOption dock{"dock", "Bring this panel to the front: inspector, config, constants or log.", "panel"};
  QCommandLineOption compare{"compare", "Show the previous pass's graph beside the current one."};
  QCommandLineOption runProgram{"run-program", "Run the shown program in the interpreter (its values in the inspector)."};
  QCommandLineOption runEveryPass{"run-every-pass", "Run the program after every pass (passes that changed the outputs marked)."};
  QCommandLineOption etdump{"etdump", "Open an ETDump of a run of the .pte (the Profile tab, time stripes).", "run.etdp"};
  QCommandLineOption debugBuffer{"debug-buffer", "The debug buffer of --etdump (default: found beside it).", "buffer.bin"};
  QCommandLineOption size{"size", "Window size for --screenshot (default 1600x1000).", "WxH", "1600x1000"};

  void addTo(QCommandLineParser& parser) const {
    parser.setApplicationDescription("See and steer how a PyTorch program becomes an ExecuTorch program.");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("file", "A file to open (.pte, .bpte, .ptd, .pt2, ETRecord).", "[file]");
    parser.addOptions({screenshot, runTo, select, view, config, dock, compare, runProgram, runEveryPass, etdump, debugBuffer, size});
  }
};

void nameApplication() {
  QCoreApplication::setOrganizationName("LoweringStudio");
  QCoreApplication::setApplicationName("Lowering Studio");
  QCoreApplication::setApplicationVersion(LSTUDIO_VERSION);
}

/// --help and --version answer without a window system (a QApplication aborts without a display).
bool answersWithoutWindow(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* flag : {"-h", "--help", "-?", "--help-all", "-v", "--version"})
      if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

/// --run-to: starts the lowering towards `pass` ("end": all of it); false when there is no such pass.
bool startRunTo(lstudio::ui::MainWindow& w, const QString& pass) {
  if (pass == "end") {
    w.runToPass(QString());
    w.runner()->runToEnd();
    return true;
  }
  if (w.runToPass(pass)) return true;
  std::fprintf(stderr, "lowering-studio: no pass named '%s' (see lowering-cli lower --list-passes)\n", qPrintable(pass));
  return false;
}

/// --dock: brings the panels whose name starts with `panel` to the front; one at the bottom gets room.
void raiseDock(lstudio::ui::MainWindow& w, const QString& panel) {
  for (auto* d : w.findChildren<QDockWidget*>())
    if (d->objectName().startsWith(panel.toLower())) {
      d->show();
      d->raise();
      if (w.dockWidgetArea(d) == Qt::BottomDockWidgetArea) w.resizeDocks({d}, {w.height() * 45 / 100}, Qt::Vertical);
    }
}

/// --view: the tab whose title contains `view`.
void showView(lstudio::ui::MainWindow& w, const QString& view) {
  QString v = view.toLower();
  for (int i = 0; i < w.views()->count(); ++i)
    if (w.views()->tabText(i).toLower().contains(v)) w.views()->setCurrentIndex(i);
}

/// Screenshot mode: every step waits for the window to settle. Returns the exit code.
int takeScreenshot(lstudio::ui::MainWindow& w, const QCommandLineParser& parser, const Options& o, const QString& file,
                   const QString& loadError) {
  if (file.isEmpty() || !settle(w, 120000) || !w.current()) {
    if (file.isEmpty()) std::fprintf(stderr, "lowering-studio: --screenshot needs a file to open\n");
    else if (!loadError.isEmpty()) std::fprintf(stderr, "lowering-studio: %s\n", qPrintable(loadError));
    else std::fprintf(stderr, "lowering-studio: could not open '%s' for the screenshot\n", qPrintable(file));
    return 2;
  }
  if (parser.isSet(o.runTo)) {
    if (!startRunTo(w, parser.value(o.runTo))) return 2;
    settle(w, 120000);
  }
  if (parser.isSet(o.runEveryPass)) {
    w.runEveryPass();
    settle(w, 300000);
  }
  if (parser.isSet(o.runProgram)) {
    w.runProgram();
    settle(w, 120000);
  }
  if (parser.isSet(o.etdump)) {
    w.openEtdump(parser.value(o.etdump), parser.value(o.debugBuffer));
    settle(w, 120000);
  }
  if (parser.isSet(o.dock)) raiseDock(w, parser.value(o.dock));
  if (parser.isSet(o.view)) showView(w, parser.value(o.view));
  if (parser.isSet(o.select) && !w.selectNodeByName(parser.value(o.select))) {
    std::fprintf(stderr, "lowering-studio: no node named '%s' in the shown program\n", qPrintable(parser.value(o.select)));
    return 2;
  }
  settle(w, 60000);
  if (!w.grab().save(parser.value(o.screenshot))) {
    std::fprintf(stderr, "lowering-studio: cannot write '%s'\n", qPrintable(parser.value(o.screenshot)));
    return 3;
  }
  std::printf("wrote %s\n", qPrintable(parser.value(o.screenshot)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A screenshot renders offscreen: it needs no display, whatever the session has.
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--screenshot", 12) == 0 && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
      qputenv("QT_QPA_PLATFORM", "offscreen");
  QCommandLineParser parser;
  const Options o;
  o.addTo(parser);
  if (answersWithoutWindow(argc, argv)) {
    QCoreApplication console(argc, argv);
    nameApplication();
    parser.process(console);  // prints the help or the version and exits
    return 0;
  }
  QApplication app(argc, argv);
  nameApplication();
  QGuiApplication::setDesktopFileName("lowering-studio");
  QApplication::setWindowIcon(QIcon::fromTheme("lowering-studio"));
  parser.process(app);

  lstudio::ui::MainWindow w;
  bool shot = parser.isSet(o.screenshot);
  if (shot) {
    w.setQuietErrors(true);
    QStringList wh = parser.value(o.size).split('x');
    if (wh.size() == 2) w.resize(wh[0].toInt(), wh[1].toInt());
  }
  w.show();
  if (parser.isSet(o.config)) {
    auto c = lstudio::loadConfigFile(parser.value(o.config).toStdString());
    if (!c) {
      std::fprintf(stderr, "lowering-studio: %s\n", c.error().message().c_str());
      return 2;
    }
    w.configEditor()->setConfig(c.value());
    w.applyConfig(c.value());
  }
  if (parser.isSet(o.compare)) w.setCompare(true);
  QString loadError;  // why the file did not open, for the screenshot's message
  QObject::connect(&w, &lstudio::ui::MainWindow::loadFinished, [&](bool ok, const QString& error) {
    if (!ok) loadError = error;
  });
  QString file = parser.positionalArguments().isEmpty() ? QString() : parser.positionalArguments().first();
  if (!file.isEmpty()) w.openFile(file);
  if (shot) return takeScreenshot(w, parser, o, file, loadError);
  if (file.isEmpty()) w.offerRecovery();  // sessions of instances that ended without a clean close
  return app.exec();
}
