// The studio's memory planners: the no-reuse baseline, its own best-fit
// planner, and the suite that keeps the smallest plan of several.
#pragma once

#include <memory>
#include <vector>

#include "engine/planning/MemoryPlanner.h"

namespace lstudio {

/// Bump allocation in collection order, no reuse: the upper baseline
/// (ExecuTorch's `naive`).
class NaivePlanner : public MemoryPlanner {
 public:
  std::string name() const override { return "naive"; }
  PlanResult plan(const PlanProblem& p) const override;
};

/// Best-fit offset search, in the spirit of TFLite's arena planner: tensors
/// are placed one by one, each at the offset of the smallest gap among the
/// already placed tensors whose lifetimes overlap it (or on top of them when
/// no gap fits). The placement order matters and no order is best for every
/// graph, so several are tried (size descending, lifetime length descending,
/// size x lifetime descending, definition order) and the smallest total
/// kept. Exact assignment is NP-complete; this is a heuristic that usually
/// lands within a few percent of the lower bound but is not guaranteed to.
/// Placed tensors are indexed by blocks of steps, so each placement costs
/// about the live set; the orders run concurrently.
class BestFitPlanner : public MemoryPlanner {
 public:
  std::string name() const override { return "best-fit"; }
  PlanResult plan(const PlanProblem& p) const override;
};

/// Runs several planners and keeps the smallest total, like ExecuTorch's
/// MemoryPlanningAlgorithmSuite (ties go to the earlier planner). The
/// planners run concurrently.
class PlannerSuite : public MemoryPlanner {
 public:
  explicit PlannerSuite(std::vector<std::shared_ptr<const MemoryPlanner>> planners);
  std::string name() const override { return "suite"; }
  PlanResult plan(const PlanProblem& p) const override;

 private:
  std::vector<std::shared_ptr<const MemoryPlanner>> planners_;
};

/// "naive", "et-greedy", "best-fit", "suite" (et-greedy + best-fit; the default).
std::shared_ptr<const MemoryPlanner> plannerByName(const std::string& name);
std::vector<std::string> plannerNames();

}  // namespace lstudio
