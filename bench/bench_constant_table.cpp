// The constant tagging table on large programs: the 256-layer llama sample
// (~2.3k constants) and a generated chain of 10k parameters. Reports medians
// of the GUI-thread work a user waits for: showing the program,
// re-evaluating destinations after a rule edit, filtering, sorting by size.
//
//   QT_QPA_PLATFORM=offscreen bench_constant_table [--constants N] [--runs R]
#include <QApplication>
#include <QLineEdit>
#include <QTableView>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/samples/GraphBuilder.h"
#include "engine/samples/SampleZoo.h"
#include "ui/config/ConstantTable.h"

using namespace lstudio;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <class F>
double timeMs(F&& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// `n` parameters in blocks of 100, each added to a running sum.
std::shared_ptr<const Program> chain(int n) {
  GraphBuilder b;
  TensorRef x = b.input("x", ScalarType::Float, {16, 1});
  for (int i = 0; i < n; ++i) {
    TensorRef w = b.parameter("blocks." + std::to_string(i / 100) + ".p" + std::to_string(i % 100) + ".weight",
                              ScalarType::Float, {16, 16 * (1 + i % 7)});
    x = b.op("aten.add.Tensor", {x, b.op("aten.sum.dim_IntList", {w, std::vector<int64_t>{1}, true})});
  }
  b.output(x);
  auto p = b.finish("chain");
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().message().c_str());
    std::exit(1);
  }
  return std::make_shared<const Program>(std::move(p.value()));
}

void run(QApplication& app, const char* what, std::shared_ptr<const Program> program, int runs) {
  ui::ConstantTable table;
  table.resize(1200, 800);
  table.show();
  ExecutorchBackendConfig plain, rules;
  rules.externalConstants = true;
  rules.externalConstantRules = {{.namePattern = "*.1*", .file = "a.ptd"},
                                 {.namePattern = "*.weight", .minBytes = 8192, .file = "weights.ptd"},
                                 {.op = "aten::embedding", .file = "embeddings.ptd"}};
  std::vector<double> show, reeval, filter, sort;
  for (int r = 0; r < runs; ++r) {
    table.view()->sortByColumn(-1, Qt::AscendingOrder);
    table.filterEdit()->clear();
    show.push_back(timeMs([&] {
      table.setProgram(program, 0, plain);
      app.processEvents();
    }));
    reeval.push_back(timeMs([&] {
      table.setConfig(rules);
      app.processEvents();
    }));
    filter.push_back(timeMs([&] {
      table.filterEdit()->setText(".1");
      app.processEvents();
    }));
    table.filterEdit()->clear();
    sort.push_back(timeMs([&] {
      table.view()->sortByColumn(ui::ConstantTable::Bytes, Qt::DescendingOrder);
      app.processEvents();
    }));
  }
  std::printf("%s: %d constants, median of %d runs\n", what, table.model()->rowCount(), runs);
  std::printf("  show program        %8.2f ms\n", median(show));
  std::printf("  re-evaluate config  %8.2f ms\n", median(reeval));
  std::printf("  filter              %8.2f ms\n", median(filter));
  std::printf("  sort by bytes       %8.2f ms\n", median(sort));
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  int constants = 10000, runs = 7;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--constants")) constants = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[++i]);
  }
  auto llama = buildSample("llama", {.layers = 256, .dim = 64, .heads = 4, .kvHeads = 2, .seq = 16, .vocab = 256});
  if (!llama) {
    std::fprintf(stderr, "%s\n", llama.error().message().c_str());
    return 1;
  }
  run(app, "llama, 256 layers", std::make_shared<const Program>(std::move(llama.value())), runs);
  run(app, "parameter chain", chain(constants), runs);
  return 0;
}
