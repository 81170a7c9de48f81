// The inspector: everything known about the selected node or value, as
// rich text — operator and schema, arguments with their specs, where each
// result's bytes live (arena slot and lifetime once planned, constant,
// .ptd), module path and stack trace.
#pragma once

#include <QTextBrowser>
#include <memory>

#include "engine/ir/Ir.h"
#include "engine/planning/MemoryPlanAnalysis.h"
#include "ui/run/ProgramRun.h"

namespace lstudio::ui {

/// Rich text for node `node` of `m` (plan may be null before planning). With
/// the program, a delegate call also shows its payload and the named data it reads.
QString nodeDetails(const Method& m, int node, const MemoryPlanReport* plan, const Program* program = nullptr,
                    const QString& values = {});
/// Rich text for the values a run gave node `node` (shape, statistics, histogram, first
/// values, the difference from the run's reference); `applies`: the run is of the snapshot shown.
QString valuesDetails(const ProgramRunResult& r, const std::string& node, bool applies);
/// Rich text for what an ETDump recorded of node `node`: its time in each execution, its share
/// of Method::execute, the events inside a delegate call, the logged values' gap.
QString etdumpDetails(const EtdumpResult& e, const std::string& node);
/// Rich text for a value (a placeholder, constant or intermediate tensor).
QString valueDetails(const Method& m, int value, const MemoryPlanReport* plan);

class Inspector : public QTextBrowser {
  Q_OBJECT
 public:
  explicit Inspector(QWidget* parent = nullptr);
  void showNode(std::shared_ptr<const Program> p, int method, int node);
  void showValue(std::shared_ptr<const Program> p, int method, int value);
  /// The values of the last run (Lowering > Run Program), shown under a node's results;
  /// `applies`: the run is of the snapshot the views show.
  void setRunValues(std::shared_ptr<const ProgramRunResult> run, bool applies);
  /// The ETDump opened (File > Open ETDump): a node's times and logged-value gap;
  /// `applies`: it is of the program and method shown.
  void setEtdump(std::shared_ptr<const EtdumpResult> etdump, bool applies);
  /// A message about no node or value (what a pass did); shows no program.
  void showMessage(const QString& html);
  /// Shows nothing (its placeholder) and lets go of the program it showed.
  void showNothing();
  /// The program and method whose node or value is shown; null and -1 otherwise.
  std::shared_ptr<const Program> program() const { return program_; }
  int method() const { return method_; }

 signals:
  /// The user clicked a value link ("value:N") or a node link ("node:N").
  void valueActivated(int value);
  void nodeActivated(int node);

 private:
  const MemoryPlanReport* planFor(const std::shared_ptr<const Program>& p, int method);
  std::shared_ptr<const Program> program_;
  int method_ = -1;
  std::shared_ptr<const Program> planProgram_;
  int planMethod_ = -1;
  std::unique_ptr<MemoryPlanReport> plan_;
  std::shared_ptr<const ProgramRunResult> run_;
  bool runApplies_ = false;
  std::shared_ptr<const EtdumpResult> etdump_;
  bool etdumpApplies_ = false;
};

}  // namespace lstudio::ui
