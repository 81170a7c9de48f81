// The loop of the passes that rewrite nodes one at a time, in place: every node of
// every method, in program order, goes to the pass's rewrite, which changes it, leaves
// it alone, or says why it could not change it.
#pragma once

#include <cstdint>
#include <string>

#include "engine/ir/Ir.h"
#include "engine/lowering/Pass.h"

namespace lstudio::passes {

/// Where a rewrite says why it left a node as it was.
class NodeReport {
 public:
  NodeReport(PassOutcome& out, const Node& n, int32_t index) : out_(out), n_(n), index_(index) {}
  /// The pass goes on.
  void warning(const std::string& why) const { add(Diagnostic::Severity::Warning, why); }
  /// The pass fails.
  void error(const std::string& why) const {
    out_.failed = true;
    add(Diagnostic::Severity::Error, why);
  }

 private:
  void add(Diagnostic::Severity severity, const std::string& why) const {
    out_.diagnostics.push_back({severity, index_, "node '" + n_.name + "': " + why});
  }
  PassOutcome& out_;
  const Node& n_;
  int32_t index_;
};

/// Calls `rewrite(Method&, Node&, const NodeReport&)` on every node; it returns true when
/// it changed the node, and may add values but not nodes. The pass changed the program
/// when any rewrite did.
template <typename Rewrite>
PassOutcome rewriteNodes(Program& p, Rewrite rewrite) {
  PassOutcome out;
  for (Method& m : graphsOf(p))
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      Node& n = m.nodes[i];
      if (rewrite(m, n, NodeReport(out, n, static_cast<int32_t>(i)))) out.changed = true;
    }
  return out;
}

}  // namespace lstudio::passes
