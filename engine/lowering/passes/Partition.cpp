// The partition step of to_edge_transform_and_lower: a partitioner of the config
// tags the nodes it takes (ExecuTorch's node.meta["delegation_tag"]) and the studio
// keeps, for every node it leaves out, the partitioner's reason. to_backend
// (ToBackend.cpp), which turns each tag into an executorch_call_delegate, comes after
// it; the graph is otherwise unchanged here. Several partitioners are rounds, each a
// partition and a to_backend on the graph the round before lowered, as upstream calls
// to_backend once per partitioner.
#include "engine/lowering/partition/XnnpackPartitioner.h"
#include "engine/lowering/passes/Passes.h"

namespace lstudio::passes {
namespace {

class Partition : public Pass {
 public:
  explicit Partition(size_t round) : round_(round) {}
  std::string name() const override { return partitionRoundName("XnnpackPartitioner", round_); }
  std::string description() const override {
    return round_ == 0 ? "to_edge_transform_and_lower: the nodes XNNPACK takes, tagged by partition; each node left out keeps why"
                       : "the next partitioner of the config, on the graph the previous to_backend made";
  }
  bool enabled(const ExecutorchBackendConfig& c) const override { return round_ < c.partitioners.size(); }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& config) const override {
    PassOutcome out;
    for (Method& m : p.methods) {
      if (m.isConstantGetter()) continue;
      // The earlier rounds' partitions are delegate calls by now; what they left is
      // this partitioner's to take, and its reasons replace theirs.
      XnnpackPartitioning r = partitionForXnnpack(m, config.partitioners[round_]);
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        Node& n = m.nodes[i];
        const bool taken = r.partitionOf[i] >= 0;
        n.meta.delegationTag = taken ? r.partitions[r.partitionOf[i]].tag : std::string();
        n.meta.notDelegatedBecause = taken ? std::string() : r.reasonOf[i];
        n.meta.implicitQdq = taken && r.implicitQdq[i];
        out.changed = out.changed || taken;
      }
    }
    return out;
  }

 private:
  size_t round_;
};

}  // namespace

std::shared_ptr<const Pass> partition(size_t round) { return std::make_shared<Partition>(round); }

}  // namespace lstudio::passes
