#include "engine/lowering/ControlFlow.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "engine/lowering/passes/GraphEdit.h"

namespace lstudio {
namespace {

/// Control flow laid out as ExecuTorch's emitter lays it (_emit_cond,
/// _emit_map, _emit_scan in exir/emit/_emitter.py); see ControlFlow.h.
/// A subgraph's inputs bound to the caller's values are those values; its
/// other values join the method's table. Nested control flow is inlined
/// where it stands.
class ControlFlowInliner {
 public:
  explicit ControlFlowInliner(const Method& m) : m_(m) {
    out_ = m;
    out_.subgraphs.clear();
    out_.nodes.clear();
    for (size_t i = 0; i < m.operators.size(); ++i)
      opIndex_.emplace(std::make_pair(m.operators[i].name, m.operators[i].overload), static_cast<int32_t>(i));
  }

  Result<Method> run(InlinedLayout& layout) {
    std::vector<ValueId> identity(m_.values.size());
    for (size_t v = 0; v < identity.size(); ++v) identity[v] = static_cast<ValueId>(v);
    if (auto s = appendNodes(m_, identity, false); !s) return s.error();
    layout.inBranch = std::move(inBranch_);
    layout.numberedFirst = std::move(numberedFirst_);
    return std::move(out_);
  }

 private:
  Status appendNodes(const Method& g, const std::vector<ValueId>& map, bool branch) {
    auto at = [&](ValueId v) { return v < 0 ? v : map.at(static_cast<size_t>(v)); };
    for (const Node& n : g.nodes) {
      Status s = Ok{};
      switch (n.kind) {
        case NodeKind::Cond: s = appendCond(g, n, map, branch); break;
        case NodeKind::Map: s = appendMap(g, n, map, branch); break;
        case NodeKind::Scan: s = appendScan(g, n, map, branch); break;
        default: {
          if (branch && n.kind != NodeKind::Kernel)
            return Error{ErrorCode::Unsupported, {}, std::nullopt, "graph '" + g.name + "' of a " + controlFlowOf(g),
                         "operator calls only", std::string("a ") + nodeKindName(n.kind) + " node ('" + n.name + "')"};
          Node e = n;
          for (ValueId& a : e.args) a = at(a);
          for (ValueId& o : e.outputs) o = at(o);
          if (branch) e.op = operatorIndex(g.operators.at(static_cast<size_t>(n.op)));
          push(std::move(e), branch);
        }
      }
      if (!s) return s;
    }
    return Ok{};
  }

  std::string controlFlowOf(const Method& g) const { return &g == &m_ ? "method" : "control-flow node"; }

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
    if (auto s = appendBranch(subgraph(g, n, 0), operands, outputs); !s) return s;
    Node skipFalse;
    skipFalse.kind = NodeKind::JumpFalse;
    skipFalse.name = n.name + "_end";
    const ValueId never = addValue(Value{false, {}});  // a constant false: always jumps
    skipFalse.args = {never};
    const size_t second = push(std::move(skipFalse), true);
    out_.nodes[first].jumpTarget = static_cast<int64_t>(second + 1);
    if (auto s = appendBranch(subgraph(g, n, 1), operands, outputs); !s) return s;
    out_.nodes[second].jumpTarget = static_cast<int64_t>(out_.nodes.size());
    return Ok{};
  }

  /// map_impl(body, [xs], operands) -> stacked, as _emit_map lays it out:
  ///   sym_size.int(xs, 0) -> n
  ///   L: select_copy.int_out(xs, 0, i, out=slice), body(slice, operands...) -> y,
  ///   et_copy_index(stacked, y, i), i = add(i, 1), done = eq(i, n), JumpFalse(done -> L),
  ///   i = sub(i, n)  (back to 0 for the next call)
  Status appendMap(const Method& g, const Node& n, const std::vector<ValueId>& map, bool branch) {
    auto at = [&](ValueId v) { return v < 0 ? v : map.at(static_cast<size_t>(v)); };
    const size_t mapped = static_cast<size_t>(std::count(n.argNames.begin(), n.argNames.end(), "xs"));
    if (n.subgraphs.size() != 1 || n.args.empty() || mapped != 1 || n.outputs.size() != 1)
      return Error{ErrorCode::Unsupported, {}, std::nullopt, "map '" + n.name + "'",
                   "one body over one tensor with one result (all ExecuTorch's emitter lays out)",
                   std::to_string(mapped) + " mapped tensors and " + std::to_string(n.outputs.size()) + " results"};
    const Method& body = subgraph(g, n, 0);
    const ValueId xs = at(n.args[0]), stacked = at(n.outputs[0]);
    markStacked(stacked);
    std::vector<ValueId> bound{kNoValue};
    for (size_t i = 1; i < n.args.size(); ++i) bound.push_back(at(n.args[i]));
    loopName_ = n.name.empty() ? "map" : n.name;
    Loop loop = openLoop(n, xs, branch, {stacked});
    auto inner = appendGraph(body, bound);
    if (!inner) return inner.error();
    loopName_ = n.name.empty() ? "map" : n.name;  // a loop nested in the body named its own
    loop.slices({(*inner)[static_cast<size_t>(body.inputs[0])]});
    if (body.outputs.size() != 1) return arity(n, body, 1);
    copyIndex(stacked, (*inner)[static_cast<size_t>(body.outputs[0])], loop.index, branch);
    closeLoop(loop, branch);
    return Ok{};
  }

  /// scan(combine_fn, init, xs, additional) -> (carries, stacked ys), as _emit_scan
  /// lays it out: sym_size.int(xs[0], 0) -> n, copy_(carry, init)...,
  ///   L: select_copy.int_out(x, 0, i, out=slice)..., combine_fn(carries, slices, additional)
  ///   -> (next, y), copy_(carry, next)..., et_copy_index(ys, y, i)..., i = add(i, 1),
  ///   done = eq(i, n), JumpFalse(done -> L), i = sub(i, n)
  Status appendScan(const Method& g, const Node& n, const std::vector<ValueId>& map, bool branch) {
    auto at = [&](ValueId v) { return v < 0 ? v : map.at(static_cast<size_t>(v)); };
    std::vector<ValueId> init, xs, extra;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const std::string& role = i < n.argNames.size() ? n.argNames[i] : std::string();
      (role == "init" ? init : role == "xs" ? xs : extra).push_back(at(n.args[i]));
    }
    if (n.subgraphs.size() != 1 || xs.empty() || n.outputs.size() < init.size())
      return Error{ErrorCode::Unsupported, {}, std::nullopt, "scan '" + n.name + "'",
                   "a combine_fn, at least one tensor to scan over and a result per carry",
                   std::to_string(xs.size()) + " tensors to scan and " + std::to_string(n.outputs.size()) + " results"};
    const Method& body = subgraph(g, n, 0);
    if (body.outputs.size() != n.outputs.size()) return arity(n, body, n.outputs.size());
    std::vector<ValueId> carries, ys;
    for (size_t k = 0; k < n.outputs.size(); ++k) (k < init.size() ? carries : ys).push_back(at(n.outputs[k]));
    for (ValueId y : ys) markStacked(y);
    std::vector<ValueId> results = carries;
    results.insert(results.end(), ys.begin(), ys.end());
    loopName_ = n.name.empty() ? "scan" : n.name;
    Loop loop = openLoop(n, xs.front(), branch, results);
    for (size_t k = 0; k < init.size(); ++k) copyInto(carries[k], init[k], branch);
    std::vector<ValueId> bound = carries;
    bound.insert(bound.end(), xs.size(), kNoValue);
    bound.insert(bound.end(), extra.begin(), extra.end());
    loop.top = out_.nodes.size();
    std::vector<size_t> selects;
    std::vector<ValueId> dims;
    for (ValueId x : xs) {  // each slice's select, its body placeholder bound once the body is in
      dims.push_back(addValue(Value{int64_t{0}, {}}));
      selects.push_back(selectSlice(x, dims.back(), loop.index, kNoValue, branch));
    }
    auto inner = appendGraph(body, bound);
    if (!inner) return inner.error();
    loopName_ = n.name.empty() ? "scan" : n.name;
    std::vector<ValueId> slices;
    for (size_t k = 0; k < xs.size(); ++k) {
      const ValueId slice = (*inner)[static_cast<size_t>(body.inputs.at(carries.size() + k))];
      slices.push_back(slice);
      Node& sel = out_.nodes[selects[k]];
      sel.args[3] = sel.args[4] = slice;
      sel.outputs = {slice};
    }
    // ExecuTorch numbers every slice's index before the body's placeholders.
    std::vector<ValueId>& first = numberedFirst_[selects.front()];
    first.insert(first.end(), dims.begin(), dims.end());
    first.insert(first.end(), slices.begin(), slices.end());
    for (size_t k = 0; k < carries.size(); ++k)
      copyInto(carries[k], (*inner)[static_cast<size_t>(body.outputs[k])], branch);
    for (size_t k = 0; k < ys.size(); ++k)
      copyIndex(ys[k], (*inner)[static_cast<size_t>(body.outputs[carries.size() + k])], loop.index, branch);
    closeLoop(loop, branch);
    return Ok{};
  }

  struct Loop {
    ValueId index = kNoValue, count = kNoValue;
    size_t top = 0;  ///< the first node of an iteration (the jump back goes there)
    std::function<void(std::vector<ValueId>)> slices;
  };

  /// The iteration index, the count (sym_size.int of xs's first dimension) and,
  /// for a map, the select that starts each iteration. ExecuTorch numbers the
  /// results first, then the index and the count.
  Loop openLoop(const Node& n, ValueId xs, bool branch, const std::vector<ValueId>& results) {
    Loop loop;
    loop.index = addValue(runTimeInt());
    loop.count = addValue(runTimeInt());
    const ValueId dim = addValue(Value{int64_t{0}, {}});
    Node size = kernel({"aten::sym_size", "int"}, {xs, dim}, {loop.count});
    size.meta = n.meta;
    const size_t at = push(std::move(size), branch);
    std::vector<ValueId>& first = numberedFirst_[at];
    first = results;
    first.push_back(loop.index);
    first.push_back(loop.count);
    if (n.kind == NodeKind::Map) {
      const ValueId selectDim = addValue(Value{int64_t{0}, {}});
      loop.top = out_.nodes.size();
      const size_t sel = selectSlice(xs, selectDim, loop.index, kNoValue, branch);
      loop.slices = [this, sel, selectDim](std::vector<ValueId> slices) {
        Node& s = out_.nodes[sel];
        s.args[3] = s.args[4] = slices.front();
        s.outputs = {slices.front()};
        numberedFirst_[sel] = {selectDim, slices.front()};
      };
    }
    return loop;
  }

  size_t selectSlice(ValueId xs, ValueId dim, ValueId index, ValueId slice, bool branch) {
    return push(kernel({"aten::select_copy", "int_out"}, {xs, dim, index, slice, slice}, {slice}), branch);
  }

  void copyIndex(ValueId stacked, ValueId y, ValueId index, bool branch) {
    push(kernel({"executorch_prim::et_copy_index", "tensor"}, {stacked, y, index}, {stacked}), branch);
  }

  /// aten::copy_(to, from, non_blocking=False): the emitter adds `to` as its return.
  void copyInto(ValueId to, ValueId from, bool branch) {
    push(kernel({"aten::copy_", "default"}, {to, from, addValue(Value{false, {}})}, {to}), branch);
  }

  /// i += 1; done = (i == n); jump back unless done; i -= n.
  void closeLoop(const Loop& loop, bool branch) {
    push(kernel({"executorch_prim::add", "Scalar"}, {loop.index, addValue(Value{int64_t{1}, {}})}, {loop.index}), branch);
    Value doneValue{false, {}};
    doneValue.symbolic = true;  // eq.Scalar writes it: not a constant false
    const ValueId done = addValue(std::move(doneValue));
    push(kernel({"executorch_prim::eq", "Scalar"}, {loop.index, loop.count}, {done}), branch);
    Node back;
    back.kind = NodeKind::JumpFalse;
    back.name = loopName_ + "_jump_back";
    back.args = {done};
    back.jumpTarget = static_cast<int64_t>(loop.top);
    push(std::move(back), branch);
    push(kernel({"executorch_prim::sub", "Scalar"}, {loop.index, loop.count}, {loop.index}), branch);
  }

  static Value runTimeInt() {
    Value v{int64_t{0}, {}};
    v.symbolic = true;
    return v;
  }

  /// A stacked result grows by one slice per iteration (et_copy_index resizes
  /// it), so ExecuTorch makes it DYNAMIC_BOUND.
  void markStacked(ValueId v) {
    if (auto* t = std::get_if<TensorSpec>(&out_.values[static_cast<size_t>(v)].payload))
      t->dynamism = ShapeDynamism::DynamicBound;
  }

  Node kernel(OperatorRef op, std::vector<ValueId> args, std::vector<ValueId> outputs) {
    Node k;
    k.kind = NodeKind::Kernel;
    // Named after its loop: a body's own calls keep their names, which these must not take.
    k.name = loopName_ + "_" + op.name.substr(op.name.find("::") + 2);
    k.target = op.fullName();
    k.op = operatorIndex(op);
    k.args = std::move(args);
    k.outputs = std::move(outputs);
    return k;
  }

  ValueId addValue(Value v) {
    out_.values.push_back(std::move(v));
    return static_cast<ValueId>(out_.values.size() - 1);
  }

  static Error arity(const Node& n, const Method& body, size_t expected) {
    return Error{ErrorCode::Invalid, {}, std::nullopt, std::string(nodeKindName(n.kind)) + " '" + n.name + "'",
                 "a graph with " + std::to_string(expected) + " results", "'" + body.name + "' with " + std::to_string(body.outputs.size())};
  }

  const Method& subgraph(const Method& g, const Node& n, size_t k) const { return g.subgraphs.at(static_cast<size_t>(n.subgraphs.at(k))); }

  /// The graph's nodes, its inputs bound to `bound` (kNoValue: a value of its
  /// own); returns where each of its values went.
  Result<std::vector<ValueId>> appendGraph(const Method& b, const std::vector<ValueId>& bound) {
    if (b.inputs.size() != bound.size())
      return Error{ErrorCode::Invalid, {}, std::nullopt, "graph '" + b.name + "'", std::to_string(bound.size()) + " inputs",
                   std::to_string(b.inputs.size())};
    std::vector<ValueId> map(b.values.size(), kNoValue);
    std::vector<char> input(b.values.size(), 0);
    for (size_t k = 0; k < bound.size(); ++k) {
      if (bound[k] == kNoValue) continue;
      map.at(static_cast<size_t>(b.inputs[k])) = bound[k];
      input[static_cast<size_t>(b.inputs[k])] = 1;
    }
    for (size_t v = 0; v < b.values.size(); ++v)
      if (map[v] == kNoValue) map[v] = addValue(b.values[v]);
    for (size_t v = 0; v < b.values.size(); ++v) {  // list items, and views, name the method's values now
      if (input[v]) continue;  // bound: the caller's value, as it is
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
    if (auto s = appendNodes(b, map, true); !s) return s.error();
    return map;
  }

  Status appendBranch(const Method& b, const std::vector<ValueId>& operands, const std::vector<ValueId>& outputs) {
    if (b.inputs.size() != operands.size() || b.outputs.size() != outputs.size())
      return Error{ErrorCode::Invalid, {}, std::nullopt, "branch '" + b.name + "' of a cond",
                   std::to_string(operands.size()) + " inputs and " + std::to_string(outputs.size()) + " outputs",
                   std::to_string(b.inputs.size()) + " and " + std::to_string(b.outputs.size())};
    auto map = appendGraph(b, operands);
    if (!map) return map.error();
    for (size_t k = 0; k < outputs.size(); ++k) {
      ValueId from = (*map).at(static_cast<size_t>(b.outputs[k]));
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
  std::map<size_t, std::vector<ValueId>> numberedFirst_;
  std::map<std::pair<std::string, std::string>, int32_t> opIndex_;
  std::string loopName_;  ///< the map or scan whose loop is being laid out
};

/// The inverse of the emitter's layouts (see ControlFlow.h): jumps and moves
/// become cond nodes, counted loops map and scan nodes, whose graphs are
/// graphs of their own (subgraphs of the method). A graph reads the tensors
/// and run-time numbers defined outside it as operands, in the order it
/// first reads them.
class ControlFlowLifter {
 public:
  explicit ControlFlowLifter(const Method& m) : m_(m) {}

  /// `nodes` (jump targets counted from their first) with every cond lifted;
  /// the branches go to `owner.subgraphs`.
  Result<std::vector<Node>> lift(Method& owner, std::vector<Node> nodes) {
    std::vector<Node> out;
    for (size_t i = 0; i < nodes.size();) {
      const Node& n = nodes[i];
      if (auto end = loopEnd(nodes, i)) {
        auto loop = liftLoop(owner, nodes, i, *end);
        if (!loop) return loop.error();
        out.push_back(std::move(loop.value()));
        i = *end + 1;
        continue;
      }
      if (n.kind == NodeKind::JumpFalse && n.jumpTarget <= static_cast<int64_t>(i))
        return fail(i, "a loop as map and scan lay it out (sym_size.int, slices, body, add.Scalar, eq.Scalar, a jump back, sub.Scalar)",
                    "a jump back to instruction " + std::to_string(n.jumpTarget));
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
      // A 0-dim constant is a scalar ExecuTorch lifted where the graph reads it: the graph's own.
      if (const TensorSpec* t = x.tensorIf(); t && t->sizes.empty() && !t->slot && !t->data.empty()) return;
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

  bool calls(const Node& n, const char* name, const char* overload) const {
    if (n.kind != NodeKind::Kernel || n.op < 0 || static_cast<size_t>(n.op) >= m_.operators.size()) return false;
    const OperatorRef& r = m_.operators[static_cast<size_t>(n.op)];
    const std::string o = r.overload.empty() ? "default" : r.overload;
    return r.name == name && o == overload;
  }
  /// The one value a call writes: its result, or for a prim op read from a
  /// .pte (no results recorded) its last argument, the return.
  static ValueId written(const Node& n) {
    if (n.outputs.size() == 1) return n.outputs[0];
    return n.outputs.empty() && n.kind == NodeKind::Kernel && !n.args.empty() ? n.args.back() : kNoValue;
  }

  /// A counted loop starts at `i` when it is sym_size.int(xs, 0) -> n and a
  /// later jump back is followed by sub.Scalar(i, n): that node's index.
  std::optional<size_t> loopEnd(const std::vector<Node>& nodes, size_t i) const {
    if (!calls(nodes[i], "aten::sym_size", "int") || written(nodes[i]) == kNoValue) return std::nullopt;
    const ValueId count = written(nodes[i]);
    for (size_t j = i + 1; j + 1 < nodes.size(); ++j) {
      const Node& n = nodes[j];
      if (n.kind != NodeKind::JumpFalse || n.jumpTarget <= static_cast<int64_t>(i) || n.jumpTarget > static_cast<int64_t>(j)) continue;
      const Node& reset = nodes[j + 1];
      if (calls(reset, "executorch_prim::sub", "Scalar") && reset.args.size() >= 2 && reset.args[1] == count) return j + 1;
    }
    return std::nullopt;
  }

  /// nodes[first..last] laid out by _emit_map or _emit_scan, as a map or scan
  /// node. Without carries, one slice and one stacked result it is a map
  /// (a scan of that shape is emitted the same way).
  Result<Node> liftLoop(Method& owner, const std::vector<Node>& nodes, size_t first, size_t last) {
    const size_t jump = last - 1;
    const int64_t top = nodes[jump].jumpTarget;
    auto bad = [&](size_t at, std::string found) {
      return fail(at, "a loop as map and scan lay it out (sym_size.int, copy_ of each init, select_copy of each xs, "
                      "body, copy_ of each carry, et_copy_index of each y, add.Scalar, eq.Scalar, a jump back, sub.Scalar)",
                  std::move(found));
    };
    if (jump < 2 || !calls(nodes[jump - 1], "executorch_prim::eq", "Scalar") ||
        !calls(nodes[jump - 2], "executorch_prim::add", "Scalar"))
      return bad(jump, "other instructions before the jump back");
    const ValueId index = written(nodes[jump - 2]);
    // Before the loop: copy_(carry, init) per carry.
    std::vector<ValueId> carries, init;
    for (size_t k = first + 1; k < static_cast<size_t>(top); ++k) {
      if (!calls(nodes[k], "aten::copy_", "default") || nodes[k].args.size() < 2) return bad(k, "another instruction before the loop");
      carries.push_back(nodes[k].args[0]);
      init.push_back(nodes[k].args[1]);
    }
    // Each iteration starts with select_copy(x, 0, i) -> slice per xs.
    std::vector<ValueId> xs, slices;
    size_t k = static_cast<size_t>(top);
    for (; k < jump && calls(nodes[k], "aten::select_copy", "int") && nodes[k].args.size() >= 3 && nodes[k].args[2] == index; ++k) {
      xs.push_back(nodes[k].args[0]);
      slices.push_back(written(nodes[k]));
    }
    if (xs.empty() || xs.front() != nodes[first].args.at(0)) return bad(static_cast<size_t>(top), "no slice of the scanned tensor");
    // It ends with copy_(carry, next) per carry, then et_copy_index(ys, y, i) per y.
    size_t tail = jump - 2;
    std::vector<ValueId> ys, yFrom, next(carries.size(), kNoValue);
    while (tail > k && calls(nodes[tail - 1], "executorch_prim::et_copy_index", "tensor") && nodes[tail - 1].args.size() >= 3) {
      --tail;
      ys.insert(ys.begin(), nodes[tail].args[0]);
      yFrom.insert(yFrom.begin(), nodes[tail].args[1]);
    }
    while (tail > k && calls(nodes[tail - 1], "aten::copy_", "default") && nodes[tail - 1].args.size() >= 2) {
      auto c = std::find(carries.begin(), carries.end(), nodes[tail - 1].args[0]);
      if (c == carries.end()) break;
      --tail;
      next[static_cast<size_t>(c - carries.begin())] = nodes[tail].args[1];
    }
    if (std::find(next.begin(), next.end(), kNoValue) != next.end()) return bad(tail, "a carry the loop never updates");
    std::vector<Node> body(nodes.begin() + static_cast<long>(k), nodes.begin() + static_cast<long>(tail));
    rebase(body, static_cast<int64_t>(k));
    const bool isMap = carries.empty() && xs.size() == 1 && ys.size() == 1;
    Node loop;
    loop.kind = isMap ? NodeKind::Map : NodeKind::Scan;
    loop.meta = nodes[first].meta;
    loop.chain = nodes[first].chain;
    const size_t nth = owner.subgraphs.size();
    loop.name = std::string(isMap ? "map_impl" : "scan") + (nth ? "_" + std::to_string(nth) : "");
    loop.target = isMap ? "torch.ops.higher_order.map_impl" : "torch.ops.higher_order.scan";
    std::vector<ValueId> operands;
    readsFromOutside(body, {}, operands);
    for (const auto* own : {&carries, &slices})
      for (ValueId v : *own) operands.erase(std::remove(operands.begin(), operands.end(), v), operands.end());
    // torch.export passes the user's operands first, then the weights it lifted
    // out of the body; the body plans its inputs in that order.
    std::stable_partition(operands.begin(), operands.end(), [&](ValueId v) {
      const TensorSpec* t = m_.values[static_cast<size_t>(v)].tensorIf();
      return !t || t->storage() != TensorStorage::Constant;
    });
    auto arg = [&](ValueId v, const char* role) {
      loop.args.push_back(v);
      loop.argNames.push_back(role);
    };
    for (ValueId v : init) arg(v, "init");
    for (ValueId v : xs) arg(v, "xs");
    for (ValueId v : operands) arg(v, isMap ? "operands" : "additional_inputs");
    loop.outputs = carries;
    loop.outputs.insert(loop.outputs.end(), ys.begin(), ys.end());
    std::vector<ValueId> inputs = carries, outputs = next;
    inputs.insert(inputs.end(), slices.begin(), slices.end());
    inputs.insert(inputs.end(), operands.begin(), operands.end());
    outputs.insert(outputs.end(), yFrom.begin(), yFrom.end());
    auto graph = newGraph(owner, std::string(isMap ? "body_graph_" : "scan_combine_graph_") + std::to_string(nth),
                          std::move(inputs), std::move(outputs), std::move(body));
    if (!graph) return graph.error();
    loop.subgraphs.push_back(*graph);
    return loop;
  }

  /// A graph of `owner` made of `nodes` (control flow in them lifted too):
  /// its index in owner.subgraphs.
  Result<int32_t> newGraph(Method& owner, std::string name, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                           std::vector<Node> nodes) {
    Method g = m_;
    g.name = std::move(name);
    g.nodes.clear();
    g.subgraphs.clear();
    g.signature = {};
    g.moduleCalls.clear();
    g.delegates.clear();
    g.diagnostics.clear();
    g.encodedInputSpec.clear();
    g.encodedOutputSpec.clear();
    g.inputs = std::move(inputs);
    g.outputs = std::move(outputs);
    // Inside the graph its inputs are placeholders, whatever the caller passes
    // (a weight, say): a map's or scan's are planned like the body's own tensors.
    for (ValueId v : g.inputs)
      if (auto* t = v >= 0 ? std::get_if<TensorSpec>(&g.values[static_cast<size_t>(v)].payload) : nullptr) {
        t->data = Bytes{};
        t->dataBufferIndex = 0;
        t->mutableSegmentIndex.reset();
        t->external = false;
        t->source = ConstantSource::None;
        t->fqn.clear();
        t->constantTag.clear();
      }
    auto lifted = lift(g, std::move(nodes));
    if (!lifted) return lifted.error();
    for (const Node& n : *lifted)
      if (n.kind == NodeKind::Delegate)
        return Error{ErrorCode::Unsupported, {}, std::nullopt, "method '" + m_.name + "': graph " + g.name,
                     "operator calls", "a delegate call"};
    g.nodes = std::move(lifted.value());
    passes::dropUnusedOperators(g);
    for (OperatorRef& r : g.operators)
      if (r.overload.empty()) r.overload = "default";
    owner.subgraphs.push_back(std::move(g));
    return static_cast<int32_t>(owner.subgraphs.size() - 1);
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
      const auto& moves = b == 0 ? movesTrue : movesFalse;
      std::vector<ValueId> outputs;
      for (ValueId o : cond.outputs) {
        ValueId from = o;
        for (auto [f, t] : moves)
          if (t == o) from = f;
        outputs.push_back(from);
      }
      auto g = newGraph(owner, std::string(b == 0 ? "true_graph_" : "false_graph_") + std::to_string(k), operands,
                        std::move(outputs), std::move(b == 0 ? whenTrue : whenFalse));
      if (!g) return g.error();
      cond.subgraphs.push_back(*g);
    }
    return cond;
  }

  const Method& m_;
};

}  // namespace

Result<Method> inlineControlFlow(const Method& m, InlinedLayout& layout) { return ControlFlowInliner(m).run(layout); }

std::set<ValueId> scanCarries(const Method& m) {
  std::set<ValueId> carries;
  auto calls = [&](const Node& n, const char* name) {
    return n.kind == NodeKind::Kernel && n.op >= 0 && static_cast<size_t>(n.op) < m.operators.size() &&
           m.operators[static_cast<size_t>(n.op)].name == name;
  };
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (!calls(m.nodes[i], "aten::sym_size")) continue;
    bool loops = false;  // a jump back to past this node follows
    for (size_t j = i + 1; j < m.nodes.size() && !loops; ++j)
      loops = m.nodes[j].kind == NodeKind::JumpFalse && m.nodes[j].jumpTarget > static_cast<int64_t>(i) &&
              m.nodes[j].jumpTarget <= static_cast<int64_t>(j);
    for (size_t k = i + 1; loops && k < m.nodes.size() && calls(m.nodes[k], "aten::copy_") && !m.nodes[k].args.empty(); ++k)
      carries.insert(m.nodes[k].args[0]);
  }
  return carries;
}

Status liftConds(Method& m) {
  auto lifted = ControlFlowLifter(m).lift(m, std::move(m.nodes));
  if (!lifted) return lifted.error();
  m.nodes = std::move(lifted.value());
  return Ok{};
}

}  // namespace lstudio
