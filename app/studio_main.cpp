// lowering-studio: the desktop window.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>

#include "ui/MainWindow.h"

#ifndef LSTUDIO_VERSION
#define LSTUDIO_VERSION "dev"
#endif

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("LoweringStudio");
  QApplication::setApplicationName("Lowering Studio");
  QApplication::setApplicationVersion(LSTUDIO_VERSION);
  QApplication::setDesktopFileName("lowering-studio");
  QApplication::setWindowIcon(QIcon::fromTheme("lowering-studio"));

  QCommandLineParser parser;
  parser.setApplicationDescription("See and steer how a PyTorch program becomes an ExecuTorch program.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("file", "A file to open (.pte, .bpte, .ptd, .pt2, ETRecord).", "[file]");
  parser.process(app);

  lstudio::ui::MainWindow w;
  w.show();
  if (!parser.positionalArguments().isEmpty()) w.openFile(parser.positionalArguments().first());
  return app.exec();
}
