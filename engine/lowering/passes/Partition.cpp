// The partition step of to_edge_transform_and_lower: each partitioner of the
// config tags the nodes it takes (ExecuTorch's node.meta["delegation_tag"])
// and the studio keeps, for every node it leaves out, the partitioner's reason.
// to_backend (ToBackend.cpp), which turns each tag into an executorch_call_delegate,
// comes after it; the graph is otherwise unchanged here.
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class Partition : public Pass {
 public:
  std::string name() const override { return "XnnpackPartitioner"; }
  std::string description() const override {
    return "to_edge_transform_and_lower: the nodes XNNPACK takes, tagged by partition; each node left out keeps why";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return !c.partitioners.empty(); }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      if (m.isConstantGetter()) continue;
      for (Node& n : m.nodes) n.meta.delegationTag.clear(), n.meta.notDelegatedBecause.clear();
      // Partitioners run in order; a later one sees only what the earlier left (upstream:
      // one to_backend round each, on the graph the earlier round lowered).
      for (const PartitionerSpec& spec : config.partitioners) {
        XnnpackPartitioning r = partitionForXnnpack(m, spec);
        for (size_t i = 0; i < m.nodes.size(); ++i) {
          Node& n = m.nodes[i];
          if (!n.meta.delegationTag.empty()) continue;
          if (r.partitionOf[i] >= 0) {
            n.meta.delegationTag = r.partitions[r.partitionOf[i]].tag;
            n.meta.notDelegatedBecause.clear();
            out.changed = true;
          } else if (n.meta.notDelegatedBecause.empty()) {
            n.meta.notDelegatedBecause = r.reasonOf[i];
          }
        }
      }
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> partition() { return std::make_shared<Partition>(); }

}  // namespace lstudio::passes
