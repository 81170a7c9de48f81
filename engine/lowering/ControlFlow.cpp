#include "engine/lowering/ControlFlow.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio {
namespace {

/// torch.cond laid out as ExecuTorch's emitter lays it (_emit_cond):
///   JumpFalse(pred -> false branch), true branch, Move(result -> output)...,
///   JumpFalse(false -> end), false branch, Move(result -> output)...
/// A branch's inputs are the cond's operands; its other values join the
/// method's table. Nested conds are inlined where they stand.
class ControlFlowInliner {
 public:
  explicit ControlFlowInliner(const Method& m) : m_(m) {
    out_ = m;
    out_.subgraphs.clear();
    out_.nodes.clear();
    for (size_t i = 0; i < m.operators.size(); ++i)
      opIndex_.emplace(std::make_pair(m.operators[i].name, m.operators[i].overload), static_cast<int32_t>(i));
  }

  /// The method with its branches inlined; inBranch says, per node, whether it came from a branch.
  Result<Method> run(std::vector<char>& inBranch) {
    std::vector<ValueId> identity(m_.values.size());
    for (size_t v = 0; v < identity.size(); ++v) identity[v] = static_cast<ValueId>(v);
    if (auto s = appendNodes(m_, identity, false); !s) return s.error();
    inBranch = std::move(inBranch_);
    return std::move(out_);
  }

 private:
  Status appendNodes(const Method& g, const std::vector<ValueId>& map, bool branch) {
    auto at = [&](ValueId v) { return v < 0 ? v : map.at(static_cast<size_t>(v)); };
    for (const Node& n : g.nodes) {
      if (n.kind == NodeKind::Cond) {
        if (auto s = appendCond(g, n, map, branch); !s) return s;
        continue;
      }
      if (branch && n.kind != NodeKind::Kernel)
        return Error{ErrorCode::Unsupported, {}, std::nullopt, "branch '" + g.name + "' of a cond",
                     "operator calls only", std::string("a ") + nodeKindName(n.kind) + " node ('" + n.name + "')"};
      Node e = n;
      for (ValueId& a : e.args) a = at(a);
      for (ValueId& o : e.outputs) o = at(o);
      if (branch) e.op = operatorIndex(g.operators.at(static_cast<size_t>(n.op)));
      push(std::move(e), branch);
    }
    return Ok{};
  }

  Status appendCond(const Method& g, const Node& n, const std::vector<ValueId>& map, bool branch) {
    auto at = [&](ValueId v) { return v < 0 ? v : map.at(static_cast<size_t>(v)); };
    if (n.args.empty() || n.subgraphs.size() != 2)
      return Error{ErrorCode::Invalid, {}, std::nullopt, "cond '" + n.name + "'", "a predicate and two branches", "fewer"};
    std::vector<ValueId> operands, outputs;
    for (size_t i = 1; i < n.args.size(); ++i) operands.push_back(at(n.args[i]));
    for (ValueId o : n.outputs) outputs.push_back(at(o));
    Node skipTrue;
    skipTrue.kind = NodeKind::JumpFalse;
    skipTrue.name = n.name;
    skipTrue.args = {at(n.args[0])};
    skipTrue.outputs = outputs;  // the emitter numbers the results here, before either branch's values
    skipTrue.meta = n.meta;
    const size_t first = push(std::move(skipTrue), branch);
    if (auto s = appendBranch(g.subgraphs.at(static_cast<size_t>(n.subgraphs[0])), operands, outputs); !s) return s;
    Node skipFalse;
    skipFalse.kind = NodeKind::JumpFalse;
    skipFalse.name = n.name + "_end";
    out_.values.push_back(Value{false, {}});  // a constant false: always jumps
    skipFalse.args = {static_cast<ValueId>(out_.values.size() - 1)};
    const size_t second = push(std::move(skipFalse), true);
    out_.nodes[first].jumpTarget = static_cast<int64_t>(second + 1);
    if (auto s = appendBranch(g.subgraphs.at(static_cast<size_t>(n.subgraphs[1])), operands, outputs); !s) return s;
    out_.nodes[second].jumpTarget = static_cast<int64_t>(out_.nodes.size());
    return Ok{};
  }

  Status appendBranch(const Method& b, const std::vector<ValueId>& operands, const std::vector<ValueId>& outputs) {
    if (b.inputs.size() != operands.size() || b.outputs.size() != outputs.size())
      return Error{ErrorCode::Invalid, {}, std::nullopt, "branch '" + b.name + "' of a cond",
                   std::to_string(operands.size()) + " inputs and " + std::to_string(outputs.size()) + " outputs",
                   std::to_string(b.inputs.size()) + " and " + std::to_string(b.outputs.size())};
    std::vector<ValueId> map(b.values.size(), kNoValue);
    std::vector<char> input(b.values.size(), 0);
    for (size_t k = 0; k < operands.size(); ++k) {
      map.at(static_cast<size_t>(b.inputs[k])) = operands[k];
      input[static_cast<size_t>(b.inputs[k])] = 1;
    }
    for (size_t v = 0; v < b.values.size(); ++v)
      if (map[v] == kNoValue) {
        map[v] = static_cast<ValueId>(out_.values.size());
        out_.values.push_back(b.values[v]);
      }
    for (size_t v = 0; v < b.values.size(); ++v) {  // list items, and views, name the method's values now
      if (input[v]) continue;  // an operand: the caller's value, as it is
      Value& x = out_.values[static_cast<size_t>(map[v])];
      auto remap = [&](std::vector<ValueId>& items) {
        for (ValueId& i : items)
          if (i >= 0) i = map.at(static_cast<size_t>(i));
      };
      if (auto* l = std::get_if<IntList>(&x.payload)) remap(l->items);
      else if (auto* tl = std::get_if<TensorList>(&x.payload)) remap(tl->items);
      else if (auto* ol = std::get_if<OptionalTensorList>(&x.payload)) remap(ol->items);
      else if (auto* t = std::get_if<TensorSpec>(&x.payload)) {
        if (t->viewOf != kNoValue) t->viewOf = map.at(static_cast<size_t>(t->viewOf));
        if (t->viewBefore != kNoValue) t->viewBefore = map.at(static_cast<size_t>(t->viewBefore));
      }
    }
    if (auto s = appendNodes(b, map, true); !s) return s;
    for (size_t k = 0; k < outputs.size(); ++k) {
      ValueId from = map.at(static_cast<size_t>(b.outputs[k]));
      if (from == outputs[k]) continue;
      Node move;
      move.kind = NodeKind::Move;
      move.name = b.name + "_move";
      move.args = {from, outputs[k]};
      push(std::move(move), true);
    }
    return Ok{};
  }

  int32_t operatorIndex(const OperatorRef& op) {
    auto [it, added] = opIndex_.try_emplace({op.name, op.overload}, static_cast<int32_t>(out_.operators.size()));
    if (added) out_.operators.push_back(op);
    return it->second;
  }

  size_t push(Node n, bool branch) {
    out_.nodes.push_back(std::move(n));
    inBranch_.push_back(branch ? 1 : 0);
    return out_.nodes.size() - 1;
  }

  const Method& m_;
  Method out_;
  std::vector<char> inBranch_;
  std::map<std::pair<std::string, std::string>, int32_t> opIndex_;
};

/// The inverse of the emitter's cond layout (ExecuTorch's _emit_cond):
///   JumpFalse(pred -> F), true branch, Move(result -> output)...,
///   JumpFalse(false -> end), F: false branch, Move(result -> output)...
/// becomes a cond node whose branches are graphs of their own (subgraphs of
/// the method). A branch reads the tensors and run-time numbers defined
/// outside it as the cond's operands, in the order it first reads them.
class ConditionalLifter {
 public:
  explicit ConditionalLifter(const Method& m) : m_(m) {}

  /// `nodes` (jump targets counted from their first) with every cond lifted;
  /// the branches go to `owner.subgraphs`.
  Result<std::vector<Node>> lift(Method& owner, std::vector<Node> nodes) {
    std::vector<Node> out;
    for (size_t i = 0; i < nodes.size();) {
      const Node& n = nodes[i];
      if (n.kind == NodeKind::Move)
        return fail(i, "control flow as a cond lays it out (moves end its branches)", "a move elsewhere");
      if (n.kind != NodeKind::JumpFalse) {
        out.push_back(n);
        ++i;
        continue;
      }
      const int64_t t1 = n.jumpTarget;
      const bool shaped = !n.args.empty() && !jumpsAlways(m_, n) && t1 >= static_cast<int64_t>(i) + 2 &&
                          t1 <= static_cast<int64_t>(nodes.size());
      const Node* skip = shaped ? &nodes[static_cast<size_t>(t1 - 1)] : nullptr;
      const int64_t t2 = skip ? skip->jumpTarget : -1;
      if (!skip || !jumpsAlways(m_, *skip) || t2 < t1 ||
          t2 > static_cast<int64_t>(nodes.size()))
        return fail(i, "control flow as a cond lays it out (a jump on a value past its true branch, which ends in a jump on false past the false branch)",
                    "a jump to instruction " + std::to_string(n.jumpTarget));
      std::vector<Node> whenTrue(nodes.begin() + static_cast<long>(i) + 1, nodes.begin() + t1 - 1);
      std::vector<Node> whenFalse(nodes.begin() + t1, nodes.begin() + t2);
      rebase(whenTrue, static_cast<int64_t>(i) + 1);
      rebase(whenFalse, t1);
      auto cond = liftCond(owner, n, std::move(whenTrue), std::move(whenFalse));
      if (!cond) return cond.error();
      out.push_back(std::move(cond.value()));
      i = static_cast<size_t>(t2);
    }
    return out;
  }

 private:
  Error fail(size_t i, std::string expected, std::string found) const {
    return Error{ErrorCode::Unsupported, {}, std::nullopt, "method '" + m_.name + "': instruction " + std::to_string(i),
                 std::move(expected), std::move(found)};
  }

  static void rebase(std::vector<Node>& nodes, int64_t start) {
    for (Node& n : nodes)
      if (n.kind == NodeKind::JumpFalse) n.jumpTarget -= start;
  }

  /// The moves that end a branch: (from, to) in order; they are taken off `nodes`.
  static std::vector<std::pair<ValueId, ValueId>> trailingMoves(std::vector<Node>& nodes) {
    std::vector<std::pair<ValueId, ValueId>> moves;
    while (!nodes.empty() && nodes.back().kind == NodeKind::Move && nodes.back().args.size() == 2) {
      moves.insert(moves.begin(), {nodes.back().args[0], nodes.back().args[1]});
      nodes.pop_back();
    }
    return moves;
  }

  /// Values the region reads that it does not define: tensors and run-time numbers.
  void readsFromOutside(const std::vector<Node>& region, const std::vector<std::pair<ValueId, ValueId>>& moves,
                        std::vector<ValueId>& operands) const {
    std::set<ValueId> written;
    for (const Node& n : region) written.insert(n.outputs.begin(), n.outputs.end());
    auto read = [&](ValueId v) {
      if (v < 0 || static_cast<size_t>(v) >= m_.values.size() || written.count(v)) return;
      const Value& x = m_.values[v];
      if (!x.isTensor() && !x.symbolic) return;
      if (std::find(operands.begin(), operands.end(), v) == operands.end()) operands.push_back(v);
    };
    auto readAll = [&](ValueId v) {
      read(v);
      if (v < 0 || static_cast<size_t>(v) >= m_.values.size()) return;
      if (auto* l = std::get_if<TensorList>(&m_.values[v].payload))
        for (ValueId x : l->items) read(x);
      else if (auto* ol = std::get_if<OptionalTensorList>(&m_.values[v].payload))
        for (ValueId x : ol->items) read(x);
      else if (auto* il = std::get_if<IntList>(&m_.values[v].payload))
        for (ValueId x : il->items) read(x);
    };
    for (const Node& n : region)
      for (ValueId a : n.args)
        if (std::find(n.outputs.begin(), n.outputs.end(), a) == n.outputs.end()) readAll(a);
    for (auto [from, to] : moves) read(from);
  }

  Result<Node> liftCond(Method& owner, const Node& jump, std::vector<Node> whenTrue, std::vector<Node> whenFalse) {
    auto movesTrue = trailingMoves(whenTrue), movesFalse = trailingMoves(whenFalse);
    Node cond;
    cond.kind = NodeKind::Cond;
    const size_t k = owner.subgraphs.size() / 2;
    cond.name = k == 0 ? "cond" : "cond_" + std::to_string(k);
    cond.target = "torch.ops.higher_order.cond";
    cond.meta = jump.meta;
    cond.chain = jump.chain;
    for (const auto* moves : {&movesTrue, &movesFalse})
      for (auto [from, to] : *moves)
        if (std::find(cond.outputs.begin(), cond.outputs.end(), to) == cond.outputs.end()) cond.outputs.push_back(to);
    std::vector<ValueId> operands;
    readsFromOutside(whenTrue, movesTrue, operands);
    readsFromOutside(whenFalse, movesFalse, operands);
    for (ValueId o : cond.outputs)  // a result the branch wrote in place (no move) is not read from outside
      operands.erase(std::remove(operands.begin(), operands.end(), o), operands.end());
    cond.args.push_back(jump.args[0]);
    cond.argNames.push_back("pred");
    for (ValueId v : operands) {
      cond.args.push_back(v);
      cond.argNames.push_back("operands");
    }
    for (int b = 0; b < 2; ++b) {
      Method branch = m_;
      branch.name = std::string(b == 0 ? "true_graph_" : "false_graph_") + std::to_string(k);
      branch.nodes.clear();
      branch.subgraphs.clear();
      branch.signature = {};
      branch.moduleCalls.clear();
      branch.delegates.clear();
      branch.diagnostics.clear();
      branch.encodedInputSpec.clear();
      branch.encodedOutputSpec.clear();
      branch.inputs = operands;
      branch.outputs.clear();
      const auto& moves = b == 0 ? movesTrue : movesFalse;
      for (ValueId o : cond.outputs) {
        ValueId from = o;
        for (auto [f, t] : moves)
          if (t == o) from = f;
        branch.outputs.push_back(from);
      }
      auto nodes = lift(branch, std::move(b == 0 ? whenTrue : whenFalse));
      if (!nodes) return nodes.error();
      for (const Node& n : *nodes)
        if (n.kind == NodeKind::Delegate)
          return Error{ErrorCode::Unsupported, {}, std::nullopt, "method '" + m_.name + "': branch " + branch.name,
                       "operator calls", "a delegate call"};
      branch.nodes = std::move(nodes.value());
      passes::dropUnusedOperators(branch);
      for (OperatorRef& r : branch.operators)
        if (r.overload.empty()) r.overload = "default";
      cond.subgraphs.push_back(static_cast<int32_t>(owner.subgraphs.size()));
      owner.subgraphs.push_back(std::move(branch));
    }
    return cond;
  }

  const Method& m_;
};

}  // namespace

Result<Method> inlineConds(const Method& m, std::vector<char>& inBranch) { return ControlFlowInliner(m).run(inBranch); }

Status liftConds(Method& m) {
  auto lifted = ConditionalLifter(m).lift(m, std::move(m.nodes));
  if (!lifted) return lifted.error();
  m.nodes = std::move(lifted.value());
  return Ok{};
}

}  // namespace lstudio
