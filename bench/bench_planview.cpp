// Redraw time of the memory-plan view on the llama sample lowered through
// the whole pipeline (32 layers by default): the canvas is rendered into a
// QImage repeatedly at several zoom levels; prints the median and p95 frame
// time per level (target: under 16 ms). Also times building the layout.
//
//   bench_planview [--layers N] [--frames F] [--width W --height H]
#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/samples/SampleZoo.h"
#include "engine/lowering/Pipeline.h"
#include "ui/plan/MemoryPlanView.h"
#include "ui/plan/PlanCanvas.h"

using namespace lstudio;

namespace {

/// CPU time of this thread: what a frame costs, apart from waiting for a
/// core on a busy machine (which wall time includes).
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int layers = 32, frames = 60, width = 1600, height = 900;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int n = std::atoi(argv[i + 1]);
    if (a == "--layers") layers = n;
    else if (a == "--frames") frames = n;
    else if (a == "--width") width = n;
    else if (a == "--height") height = n;
  }
  SampleOptions o;
  o.layers = layers;
  auto built = buildSample("llama", o);
  if (!built) {
    std::fprintf(stderr, "%s\n", built.error().message().c_str());
    return 1;
  }
  QElapsedTimer t;
  t.start();
  Pipeline pipeline(std::make_shared<const Program>(std::move(built.value())), ExecutorchBackendConfig{});
  pipeline.runToEnd();
  if (pipeline.failed()) {
    std::fprintf(stderr, "lowering failed\n");
    return 1;
  }
  const double lowerMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
  auto program = pipeline.current();

  std::vector<double> layoutMs;
  std::shared_ptr<const ui::PlanLayout> layout;
  for (int i = 0; i < 5; ++i) {
    t.restart();
    layout = ui::buildPlanLayout(program, 0);
    layoutMs.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  if (!layout->planned) {
    std::fprintf(stderr, "not planned: %s\n", layout->why.c_str());
    return 1;
  }
  std::printf("llama %d layers: %d steps, %zu tensor rectangles, %zu storages; lowering %.0f ms, layout median %.1f ms\n",
              layers, layout->report.steps, layout->rects.size(), layout->report.storages.size(), lowerMs,
              quantile(layoutMs, 0.5));

  ui::PlanCanvas canvas;
  canvas.resize(width, height);
  canvas.setPlanLayout(layout, 0);
  QImage image(canvas.size(), QImage::Format_ARGB32_Premultiplied);
  const double steps = layout->report.steps;
  struct Level {
    const char* name;
    double span;  ///< fraction of the steps across the width
    bool modules;
  };
  const Level levels[] = {{"fit (whole program)", 1.0, false}, {"fit, coloured by module", 1.0, true},
                          {"1/4 of the steps", 0.25, false}, {"1/32 of the steps", 1.0 / 32, false},
                          {"40 steps", 40.0 / steps, false}};
  std::printf("%-28s %8s %10s %10s %10s %10s\n", "zoom", "in view", "median ms", "p95 ms", "cpu med", "cpu p95");
  for (const Level& lv : levels) {
    canvas.setColorBy(lv.modules ? ui::PlanCanvas::ColorBy::Module : ui::PlanCanvas::ColorBy::Op);
    canvas.fit();
    std::vector<double> ms, cpu;
    int painted = 0;
    for (int f = 0; f < frames; ++f) {
      // Pan across the program so every frame draws a different part.
      const double span = lv.span * steps;
      const double start = span >= steps ? 0 : (steps - span) * f / std::max(1, frames - 1);
      if (span < steps) canvas.setStepRange(start, start + span);
      const double c0 = threadCpuMs();
      t.restart();
      canvas.render(&image);
      ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
      cpu.push_back(threadCpuMs() - c0);
      painted = std::max(painted, canvas.paintedRectangles());
    }
    std::printf("%-28s %8d %10.2f %10.2f %10.2f %10.2f\n", lv.name, painted, quantile(ms, 0.5), quantile(ms, 0.95),
                quantile(cpu, 0.5), quantile(cpu, 0.95));
  }
  return 0;
}
