// The graph view on the 32-layer llama sample (~3,600 nodes): time from
// setGraph to the first layout on screen, time for setGraph itself on the
// GUI thread, time to open one layer, and frame times for pan/zoom repaints
// (the viewport rendered to an image). Medians and p95 in milliseconds.
//
//   QT_QPA_PLATFORM=offscreen bench_graphview [--layers N] [--runs R] [--frames F]
#include <QApplication>
#include <QElapsedTimer>
#include <QGraphicsView>
#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/samples/SampleZoo.h"
#include "ui/graph/GraphView.h"

using namespace lstudio;
using lstudio::ui::GraphView;

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

// The longest the event loop went without serving a 2 ms timer while waiting for layouts.
QElapsedTimer beat;
double longestStall = 0;
bool measuring = false;

/// Runs the event loop until the view applied its newest layout; returns ms since `t`.
double waitLayout(GraphView& v, const QElapsedTimer& t) {
  measuring = true;
  beat.restart();
  while (v.layoutPending()) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  QCoreApplication::processEvents();  // the repaint after the layout
  measuring = false;
  return t.nsecsElapsed() / 1e6;
}

std::vector<double> frames(GraphView& v, int n) {
  QGraphicsView* c = v.canvas();
  QImage img(c->viewport()->size(), QImage::Format_ARGB32_Premultiplied);
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    // Pan, then zoom in and out around the middle: what dragging and the wheel do.
    switch (i % 4) {
      case 0: c->verticalScrollBar()->setValue(c->verticalScrollBar()->value() + 60); break;
      case 1: c->horizontalScrollBar()->setValue(c->horizontalScrollBar()->value() + 30); break;
      case 2: v.zoomBy(1.15); break;
      case 3: v.zoomBy(1 / 1.15); break;
    }
    QElapsedTimer t;
    t.start();
    QPainter p(&img);
    c->viewport()->render(&p);
    p.end();
    ms.push_back(t.nsecsElapsed() / 1e6);
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
  QApplication app(argc, argv);
  int layers = 32, runs = 5, frameCount = 120;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--frames")) frameCount = std::atoi(argv[++i]);
  }
  SampleOptions o;
  o.layers = layers;
  auto built = buildSample("llama", o);
  if (!built.ok()) {
    std::fprintf(stderr, "llama: %s\n", built.error().message().c_str());
    return 1;
  }
  auto program = std::make_shared<const Program>(std::move(built.value()));
  std::printf("llama --layers %d: %zu nodes\n", layers, program->methods[0].nodes.size());

  std::vector<double> first, call, expandLayer, expandAll;
  QTimer heartbeat;
  QObject::connect(&heartbeat, &QTimer::timeout, [&] {
    if (measuring) longestStall = std::max(longestStall, beat.nsecsElapsed() / 1e6);
    beat.restart();
  });
  beat.start();
  heartbeat.start(2);
  for (int r = 0; r < runs; ++r) {
    GraphView v;
    v.resize(1400, 900);
    v.show();
    QElapsedTimer t;
    t.start();
    v.setGraph(program, 0);
    call.push_back(t.nsecsElapsed() / 1e6);
    first.push_back(waitLayout(v, t));
    const QString layer = QString("layers.%1").arg(r % layers);
    t.restart();
    v.setGroupCollapsed(layer, false);
    expandLayer.push_back(waitLayout(v, t));
    // The layer with every group inside it open.
    t.restart();
    for (const auto& g : v.model()->groups) {
      QString path = QString::fromStdString(g.path);
      if (path.startsWith(layer + ".")) v.setGroupCollapsed(path, false);
    }
    expandAll.push_back(waitLayout(v, t));
    if (r == 0) {
      std::printf("visible after opening %s fully: %d items, %d edges\n", qPrintable(layer), v.visibleItemCount(),
                  v.visibleEdgeCount());
    }
  }
  std::printf("setGraph on the GUI thread: median %.1f ms, p95 %.1f ms\n", percentile(call, 0.5), percentile(call, 0.95));
  std::printf("setGraph -> first layout shown: median %.1f ms, p95 %.1f ms\n", percentile(first, 0.5), percentile(first, 0.95));
  std::printf("open one layer (sub-modules folded): median %.1f ms\n", percentile(expandLayer, 0.5));
  std::printf("open one layer and all its sub-modules: median %.1f ms\n", percentile(expandAll, 0.5));
  heartbeat.stop();
  std::printf("longest GUI thread stall while layouts ran and were applied (2 ms timer): %.1f ms\n", longestStall);

  GraphView v;
  v.resize(1400, 900);
  v.show();
  QElapsedTimer t;
  t.start();
  v.setGraph(program, 0);
  waitLayout(v, t);
  t.restart();
  for (const auto& g : v.model()->groups) {
    QString path = QString::fromStdString(g.path);
    if (path.startsWith("layers.1.") || path.startsWith("layers.2.") || path == "layers.1" || path == "layers.2")
      v.setGroupCollapsed(path, false);
  }
  double open2 = waitLayout(v, t);
  std::printf("frames with layers.1 and layers.2 fully open (%d items, laid out in %.0f ms):\n", v.visibleItemCount(), open2);
  auto near = frames(v, frameCount);
  std::printf("  at readable zoom %.2f: median %.2f ms, p95 %.2f ms\n", v.zoom(), percentile(near, 0.5), percentile(near, 0.95));
  v.fitToView();
  auto far = frames(v, frameCount);
  std::printf("  fitted (zoom %.3f, level of detail): median %.2f ms, p95 %.2f ms\n", v.zoom(), percentile(far, 0.5),
              percentile(far, 0.95));
  return 0;
}
