// MemoryAwareOrderPass (studio_memory_aware_order; beyond ExecuTorch, which
// plans in the order to_edge left): just before memory planning, operators
// that do not depend on each other are put in an order with a lower peak of
// live planned bytes (engine/planning/MemoryAwareOrder), counting storages
// as MemoryPlanningPass will plan them. A method whose order cannot be
// lowered keeps its order.
#include <algorithm>

#include "engine/lowering/passes/Passes.h"
#include "engine/lowering/passes/PlannedStorage.h"
#include "engine/planning/MemoryAwareOrder.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::passes {
namespace {

/// The fewest nodes that, taken out and put back elsewhere, turn the given
/// order into `order`: those outside a longest increasing subsequence.
size_t nodesMoved(const std::vector<int32_t>& order) {
  std::vector<int32_t> tails;  // smallest tail of an increasing run of each length
  for (int32_t v : order) {
    auto it = std::lower_bound(tails.begin(), tails.end(), v);
    if (it == tails.end()) tails.push_back(v);
    else *it = v;
  }
  return order.size() - tails.size();
}

class MemoryAwareOrder : public Pass {
 public:
  std::string name() const override { return "MemoryAwareOrderPass"; }
  std::string description() const override {
    return "beyond ExecuTorch: independent operators reordered to lower the peak of live bytes "
           "(studio_memory_aware_order)";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return c.studioMemoryAwareOrder; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      const MemoryPlanningConfig& mc = c.planningFor(m.name);
      if (m.isConstantGetter() || m.nodes.size() < 2) continue;
      TensorRoles roles = tensorRoles(m, mc);
      auto problem = orderProblem(m, {nullptr, [&](ValueId root) {
                                        std::optional<PlannedStorage> ps = plannedStorage(m, mc, roles, root);
                                        return ps ? OrderStorage{ps->bytes, ps->wholeLife, ps->wholeLife}
                                                  : OrderStorage{};
                                      }});
      if (!problem) {
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1, m.name + ": " + problem.error().message()});
        continue;
      }
      OrderResult r = memoryAwareOrder(*problem);
      std::string peaks = formatBytes(r.peakBefore) + " as ordered";
      if (r.peakAfter >= r.peakBefore) {
        out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                   m.name + ": peak of live bytes " + peaks + "; no order found below it"});
        continue;
      }
      const size_t moved = nodesMoved(r.order);
      std::vector<Node> nodes;
      nodes.reserve(m.nodes.size());
      for (int32_t k : r.order) nodes.push_back(std::move(m.nodes[k]));
      m.nodes = std::move(nodes);
      out.changed = true;
      out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                                 m.name + ": peak of live bytes " + peaks + ", " + formatBytes(r.peakAfter) +
                                     " reordered (" + r.rule + "; " + std::to_string(moved) + " of " +
                                     std::to_string(m.nodes.size()) + " nodes moved)"});
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> memoryAwareOrder() { return std::make_shared<MemoryAwareOrder>(); }

}  // namespace lstudio::passes
