// MemoryPlanningPass (always last): every non-constant tensor gets a slot
// (mem_id 1, offset) from the configured algorithms (the smallest total
// kept), with lifetimes in node order, graph inputs and outputs planned or
// not per alloc_graph_input/output, mutable buffers and trained weights
// (weights with a gradient, returned by WeightsToOutputsPass) alive throughout, views
// in their base's bytes. Arena sizes go to non_const_buffer_sizes. With
// studio_memory_aware_order an elementwise result also takes the bytes of an
// argument that dies at its node (beyond ExecuTorch).
#include <algorithm>
#include <map>
#include <set>
#include <numeric>

#include "engine/planning/EtGreedyPlanner.h"
#include "engine/planning/MemoryAwareOrder.h"
#include "engine/planning/MemoryPlanner.h"
#include "engine/planning/Planners.h"
#include "engine/lowering/passes/GraphEdit.h"
#include "engine/lowering/passes/Passes.h"
#include "engine/lowering/passes/PlannedStorage.h"

namespace lstudio::passes {
namespace {

uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

using Lifetimes = std::map<ValueId, std::pair<int32_t, int32_t>>;  // storage root -> first, last step

/// Lifetimes per storage root in node order: graph inputs from the first step, outputs
/// to the last.
Lifetimes lifetimes(const Method& m, int32_t lastStep) {
  Lifetimes life;
  auto touch = [&](ValueId v, int32_t step) {
    if (v < 0 || !m.values[v].isTensor()) return;
    ValueId r = storageRootOf(m, v);
    auto [it, fresh] = life.try_emplace(r, step, step);
    if (!fresh) it->second = {std::min(it->second.first, step), std::max(it->second.second, step)};
  };
  for (int32_t s = 0; s < static_cast<int32_t>(m.nodes.size()); ++s)
    for (ValueId v : m.nodes[s].args) {
      touch(v, s);
      if (auto* tl = std::get_if<TensorList>(&m.values[v].payload))
        for (ValueId x : tl->items) touch(x, s);
      else if (auto* ol = std::get_if<OptionalTensorList>(&m.values[v].payload))
        for (ValueId x : ol->items) touch(x, s);  // e.g. index_put's indices
    }
  // Control flow's results are written by its graphs, not passed to it.
  for (int32_t s = 0; s < static_cast<int32_t>(m.nodes.size()); ++s)
    if (isControlFlow(m.nodes[s].kind))
      for (ValueId v : m.nodes[s].outputs) touch(v, s);
  // Every result of a call whose getitems to_backend moved lives through the last of them.
  for (int32_t s = 0; s < static_cast<int32_t>(m.nodes.size()); ++s) {
    const std::string& until = m.nodes[s].resultsLiveUntil;
    if (until.empty()) continue;
    for (int32_t a = s + 1; a < static_cast<int32_t>(m.nodes.size()); ++a)
      if (m.nodes[a].name == until) {
        for (ValueId v : m.nodes[s].outputs) touch(v, a);
        break;
      }
  }
  for (ValueId v : m.inputs) touch(v, 0);
  for (ValueId v : m.outputs) touch(v, lastStep);
  // ExecuTorch 1.5's output node keeps the specs it had before PropagateDevicePass:
  // a delegate's result that is returned through a host copy stays alive to the end
  // in device memory as well.
  for (int32_t s = 0; s < static_cast<int32_t>(m.nodes.size()); ++s) {
    const Node& n = m.nodes[s];
    if (n.outputs.size() != 1 || n.args.empty() ||
        !(calls(m, n, "et_copy::_d2h_copy", "out") || calls(m, n, "et_copy::_d2h_copy")))
      continue;
    if (std::find(m.outputs.begin(), m.outputs.end(), n.outputs[0]) != m.outputs.end()) touch(n.args[0], lastStep);
  }
  return life;
}

using SharedBytes = std::map<ValueId, ValueId>;  // a result's storage root -> the root whose bytes it takes

/// studio_memory_aware_order: an elementwise result takes the bytes of an
/// argument that dies at its node (overwritableArgument), both planned and
/// neither state nor a graph input; `life` then holds the pair as one storage.
SharedBytes shareDyingArguments(const Method& m, const MemoryPlanningConfig& mc, const TensorRoles& roles,
                                Lifetimes& life) {
  SharedBytes shares;
  for (int32_t i = 0; i < static_cast<int32_t>(m.nodes.size()); ++i) {
    ValueId arg = overwritableArgument(m, m.nodes[i]);
    if (arg == kNoValue) continue;
    ValueId in = storageRootOf(m, arg), out = m.nodes[i].outputs[0];
    if (auto it = shares.find(in); it != shares.end()) in = it->second;
    auto li = life.find(in), lo = life.find(out);
    if (in == out || li == life.end() || lo == life.end() || li->second.second != i || lo->second.first != i ||
        roles.isInput[in])
      continue;
    auto pi = plannedStorage(m, mc, roles, in), po = plannedStorage(m, mc, roles, out);
    if (!pi || !po || pi->wholeLife || po->wholeLife || pi->bytes != po->bytes) continue;
    li->second.second = lo->second.second;
    life.erase(lo);
    shares[out] = in;
  }
  return shares;
}

/// The tensors the planner places in mem_id 1 (their values in `planned`), with their
/// aligned sizes and lifetimes.
PlanProblem planProblem(const Method& m, const MemoryPlanningConfig& mc, const Lifetimes& life,
                        const TensorRoles& roles, int32_t lastStep, std::vector<ValueId>& planned) {
  PlanProblem problem;
  problem.alignment = mc.alignment;
  // In ExecuTorch's order: the placeholders as the graph takes them, then the
  // rest as the graph makes them (value order); the greedy breaks ties by it.
  // (A loop body's operands are the caller's values, numbered before its own.)
  std::vector<std::pair<ValueId, std::pair<int32_t, int32_t>>> order;
  std::set<ValueId> taken;
  for (ValueId v : m.inputs)
    if (auto it = life.find(v); it != life.end() && taken.insert(v).second) order.push_back(*it);
  for (auto& [v, span] : life)
    if (!taken.count(v)) order.push_back({v, span});
  for (auto& [v, span] : order) {
    std::optional<PlannedStorage> ps = plannedStorage(m, mc, roles, v);
    if (!ps) continue;
    auto [first, last] = span;
    if (ps->wholeLife) first = 0, last = lastStep;  // state persists across calls
    problem.tensors.push_back(PlanTensor{ps->bytes, first, last, 1, ps->nbytes});
    planned.push_back(v);
  }
  // ExecuTorch 1.5 still places the result that wrote each mutated buffer
  // back (copy_, or the in-place op reinplace made) as a spec of its own,
  // alive at the output node only; its greedy is followed with them (see
  // PlanProblem).
  for (const OutputSpec& o : m.signature.outputs)
    if (o.kind == OutputSpec::Kind::BufferMutation && o.value >= 0 && m.values[o.value].isTensor()) {
      uint64_t n = m.values[o.value].tensor().nbytes().value_or(0);
      problem.staleWriteBacks.push_back(PlanTensor{alignUp(n, mc.alignment), lastStep, lastStep, 1, n});
    }
  return problem;
}

// share_mutable_buffers: state is planned across methods, one slot per buffer
// name in mem_id 2, bump-allocated in order of first appearance
// (MemoryPlanningPass.run_multimethod).
struct SharedBuffers {
  std::map<std::string, uint64_t> offset;  ///< buffer name -> offset in mem_id 2
  uint64_t arena = 0;
};

/// Every tensor's slot: the planned ones where `slots` says, shared state in mem_id 2,
/// views in their base's; all others none.
void assignSlots(Method& m, const std::vector<ValueId>& planned, const std::vector<PlannedSlot>& slots,
                 const SharedBytes& shares, const std::vector<ValueId>& sharedState, uint64_t alignment,
                 SharedBuffers& shared) {
  auto bufferName = [&](ValueId v) {
    for (const auto& in : m.signature.inputs)
      if (in.value == v) return in.target;
    return std::string();
  };
  for (Value& v : m.values)
    if (auto* t = std::get_if<TensorSpec>(&v.payload)) t->slot.reset();
  for (size_t i = 0; i < planned.size(); ++i) m.values[planned[i]].tensor().slot = slots[i];
  for (auto [result, argument] : shares) m.values[result].tensor().slot = m.values[argument].tensor().slot;
  for (ValueId v : sharedState) {
    auto [it, fresh] = shared.offset.try_emplace(bufferName(v), shared.arena);
    if (fresh) shared.arena += alignUp(m.values[v].tensor().nbytes().value_or(0), alignment);
    m.values[v].tensor().slot = PlannedSlot{2, it->second};
  }
  for (Value& v : m.values)  // views take their base's slot
    if (auto* t = std::get_if<TensorSpec>(&v.payload); t && t->viewOf != kNoValue)
      t->slot = m.values[storageRootOf(m, t->viewOf)].tensor().slot;
}

/// Plans one method and writes its slots and arena sizes; a problem the planners
/// cannot solve fails the pass with a diagnostic.
void planMethod(Method& m, const ExecutorchBackendConfig& c, const MemoryPlanningConfig& mc, SharedBuffers& shared,
                PassOutcome& out) {
  // Control flow first: each graph is planned on its own — a cond branch's
  // inputs are the caller's operands (not planned); a map's or scan's inputs
  // are planned, the slices being its own and the operands' slots left unused,
  // as ExecuTorch does; results are planned — and the method's tensors go
  // after the largest arena, which only one graph uses at a time (ExecuTorch's
  // _apply_algo_to_submodules and input_mem_buffer_sizes).
  uint64_t branchArena = 0;
  for (const Node& n : m.nodes)
    for (int32_t g : n.subgraphs) {
      if (g < 0 || static_cast<size_t>(g) >= m.subgraphs.size()) continue;
      Method& branch = m.subgraphs[static_cast<size_t>(g)];
      MemoryPlanningConfig bc = mc;
      bc.allocGraphInput = n.kind != NodeKind::Cond;
      bc.allocGraphOutput = true;
      SharedBuffers none;
      planMethod(branch, c, bc, none, out);
      if (branch.nonConstBufferSizes.size() > 1)
        branchArena = std::max(branchArena, static_cast<uint64_t>(branch.nonConstBufferSizes[1]));
    }
  std::vector<std::shared_ptr<const MemoryPlanner>> planners;
  for (const auto& a : mc.algorithms) planners.push_back(plannerByName(a));
  PlannerSuite suite(planners);
  // Outputs and state stay alive through the output node, one step past the
  // last node (ExecuTorch's lifetimes end there too).
  const int32_t lastStep = static_cast<int32_t>(m.nodes.size());
  TensorRoles roles = tensorRoles(m, mc);
  std::vector<ValueId> planned;
  Lifetimes life = lifetimes(m, lastStep);
  SharedBytes shares;
  if (c.studioMemoryAwareOrder) shares = shareDyingArguments(m, mc, roles, life);
  PlanProblem problem = planProblem(m, mc, life, roles, lastStep, planned);
  if (auto s = validateProblem(problem); !s) {
    out.failed = true;
    out.diagnostics.push_back({Diagnostic::Severity::Error, -1, m.name + ": " + s.error().message()});
    return;
  }
  // enable_non_cpu_memory_planning: each device's tensors get arenas of their own,
  // planned apart, CPU memory first (ExecuTorch's apply_algo: _partition_specs_by_device).
  std::map<Device, std::vector<size_t>> byDevice;
  for (size_t i = 0; i < planned.size(); ++i)
    byDevice[c.enableNonCpuMemoryPlanning ? m.values[planned[i]].tensor().device : Device{}].push_back(i);
  const bool devices = std::any_of(byDevice.begin(), byDevice.end(), [](const auto& g) { return !g.first.isCpu(); });
  if (devices && !roles.sharedState.empty()) {
    out.failed = true;
    out.diagnostics.push_back({Diagnostic::Severity::Error, -1,
                               m.name + ": share_mutable_buffers and tensors on another device cannot be planned "
                                        "together (ExecuTorch refuses pre-assigned mem_ids with non-CPU planning)"});
    return;
  }
  if (byDevice.empty()) byDevice[Device{}];  // nothing planned: still one (empty) CPU arena
  std::vector<PlannedSlot> slots(planned.size());
  std::vector<int64_t> arenas = {0};
  std::vector<Device> arenaDevices = {Device{}};
  std::string algorithm;
  for (auto& [device, members] : byDevice) {
    PlanProblem part;
    part.alignment = problem.alignment;
    for (size_t i : members) part.tensors.push_back(problem.tensors[i]);
    if (device.isCpu()) part.staleWriteBacks = problem.staleWriteBacks;
    PlanResult r = suite.plan(part);
    if (auto s = verifyPlan(part, r); !s) {
      out.failed = true;
      out.diagnostics.push_back({Diagnostic::Severity::Error, -1, m.name + ": " + s.error().message()});
      return;
    }
    uint64_t extra = device.isCpu() ? branchArena : 0;  // branches run in CPU memory
    const uint32_t memId = static_cast<uint32_t>(arenas.size());
    for (size_t k = 0; k < members.size(); ++k) slots[members[k]] = PlannedSlot{memId, r.offsets[k] + extra};
    // ExecuTorch adds 64 bytes to every arena of a method holding an XNNPACK
    // delegate (its kernels may read past a tensor's end); with nothing planned
    // it stores [0, 0] (exir/memory_planning.py, _compute_total_sizes).
    int64_t arena = static_cast<int64_t>((r.arenaSizes.size() > 1 ? r.arenaSizes[1] : 0) + extra);
    if (!members.empty()) arena += static_cast<int64_t>(etGreedyExtraPadding(m));
    arenas.push_back(arena);
    arenaDevices.push_back(device);
    algorithm = r.algorithm;
  }
  assignSlots(m, planned, slots, shares, roles.sharedState, mc.alignment, shared);
  m.nonConstBufferSizes = arenas;
  m.arenaDevices = devices ? arenaDevices : std::vector<Device>{};
  const int64_t arena = std::accumulate(arenas.begin(), arenas.end(), int64_t{0});
  out.changed = true;
  out.diagnostics.push_back({Diagnostic::Severity::Note, -1,
                             m.name + ": " + std::to_string(planned.size()) + " tensors in " +
                                 std::to_string(arena) + " bytes (" + algorithm + ")" +
                                 (shares.empty() ? std::string()
                                                 : "; " + std::to_string(shares.size()) +
                                                       " results written over an argument that dies there")});
}

class MemoryPlanning : public Pass {
 public:
  std::string name() const override { return "MemoryPlanningPass"; }
  std::string description() const override { return "a slot in an arena for every non-constant tensor (runs last)"; }
  PassOutcome run(Program& p, const ExecutorchBackendConfig& c) const override {
    PassOutcome out;
    // One pass plans every method, and shares mutable state among them when
    // asked; a per-method dict gives each method a pass of its own (state is
    // shared within one pass only, as ExecuTorch's run_multimethod does).
    const bool perMethod = !c.memoryPlanningPerMethod.empty();
    SharedBuffers shared;
    for (Method& m : p.methods) {
      if (m.isConstantGetter()) {  // ExecuTorch emits its getters unplanned
        m.nonConstBufferSizes = {0};
        continue;
      }
      const MemoryPlanningConfig& mc = c.planningFor(m.name);
      if (!perMethod) {
        planMethod(m, c, mc, shared, out);
        continue;
      }
      SharedBuffers own;
      planMethod(m, c, mc, own, out);
      if (mc.shareMutableBuffers && m.nonConstBufferSizes.size() == 2)
        m.nonConstBufferSizes.push_back(static_cast<int64_t>(own.arena));
    }
    if (!perMethod && c.memoryPlanning.shareMutableBuffers)  // every method names the shared arena, even when empty
      for (Method& m : p.methods)
        if (m.nonConstBufferSizes.size() == 2) m.nonConstBufferSizes.push_back(static_cast<int64_t>(shared.arena));
    return out;
  }
};

}  // namespace

std::shared_ptr<const Pass> memoryPlanning() { return std::make_shared<MemoryPlanning>(); }

}  // namespace lstudio::passes
