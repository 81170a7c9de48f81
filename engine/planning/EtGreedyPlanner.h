// ExecuTorch's `greedy` memory planner (exir/memory_planning.py), rewritten
// from its rules so the studio can re-plan a program exactly as
// to_executorch() would and compare other planners with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/planning/MemoryPlanner.h"

namespace lstudio {

struct Method;

/// Which generation of ExecuTorch's greedy to follow.
enum class EtGreedyGeneration : uint8_t {
  /// ExecuTorch 0.6 and later (PR #7926, merged as #7995 in January 2025);
  /// still the default at cff6f4dd (August 2026, after 1.4).
  Current,
  /// ExecuTorch 0.1 to 0.5: collection order, whole objects reused by
  /// closest size. For re-planning programs those releases produced.
  Legacy,
};

struct EtGreedyOptions {
  EtGreedyGeneration generation = EtGreedyGeneration::Current;
  /// Current generation only: let a tensor sit above the tensors it
  /// overlaps in time inside an existing object. ExecuTorch's default is
  /// true; the Vulkan backend turns it off.
  bool allowOverlappingAllocations = true;
  /// Bytes added to the end of every arena that holds a tensor. ExecuTorch
  /// adds 64 when the method calls an XNNPACK delegate (XNNPACK may read
  /// past the end of a tensor), see etGreedyExtraPadding(); 0.5 and earlier
  /// never pad.
  uint64_t extraPadding = 0;
  /// Bytes reserved at the start of each arena (per mem_id), ExecuTorch's
  /// `input_mem_buffer_sizes`: the arenas of control-flow submodules,
  /// planned before the method's own tensors. Empty: none.
  std::vector<uint64_t> reservedPrefix;
};

/// A block of an arena that tensors with disjoint lifetimes (or, in the
/// current generation, disjoint byte ranges) take turns in.
struct EtSharedObject {
  uint32_t memId = 1;
  uint64_t offset = 0;  ///< in the arena, after materialization
  uint64_t size = 0;    ///< fixed by its first tensor (current generation)
  /// Hull of its tensors' lifetimes. Legacy: `last` is ExecuTorch's
  /// last_used_index, the last step of the tensor that last claimed it.
  int32_t first = 0, last = 0;
  std::vector<size_t> tensors;  ///< in placement order
};

/// A plan plus how greedy reached it, for views that explain the plan.
struct EtGreedyTrace {
  PlanResult result;
  std::vector<size_t> order;         ///< tensor indices in the order they were placed
  std::vector<int32_t> memObjId;     ///< per tensor: its object's index within its arena (mem_obj_id)
  std::vector<uint64_t> objectOffset;  ///< per tensor: offset inside its object
  std::vector<EtSharedObject> objects;  ///< by mem_id, then mem_obj_id
  /// A tensor met an object without lifetime conflicts that was too small
  /// for it. Only possible with PlanTensor::bytes and an alignment below 16;
  /// ExecuTorch stops there with "Allocation specs are not sorted", this
  /// planner skips the object instead.
  bool unsortedSpecs = false;
};

/// ExecuTorch's greedy planner, current generation by default.
///
/// Every arena (mem_id) is a row of shared objects laid end to end in the
/// order they were created; a tensor lives inside exactly one object.
///
/// Current generation: tensors are visited largest first. ExecuTorch builds
/// that order by inserting each spec after the ones of equal size and then
/// reversing the list, so tensors of equal size come in reverse collection
/// order. For each tensor, within its arena:
///  1. the first object none of whose tensors is alive at the same time
///     takes it at offset 0 (objects are never resized: sorting makes every
///     later tensor no larger than the object's first);
///  2. otherwise the first object where it fits above the highest end of
///     the tensors it overlaps in time takes it there, provided that end is
///     above 0;
///  3. otherwise a new object of exactly its size is appended.
/// An arena's size is the end of its last object (after any reserved
/// prefix) plus the extra padding; arenas without tensors stay 0, and a
/// problem without tensors gives {0, 0}. Only inclusive lifetimes, sizes
/// and the collection order matter: FX node indices (ExecuTorch) and
/// instruction steps (the studio) give the same plan when they order
/// starts and ends alike.
///
/// Legacy generation: tensors are visited in collection order. An object
/// is available when the tensor starts after the last step of the tensor
/// most recently put in it. Among the available objects the one closest in
/// size wins and grows to the tensor's size if smaller. As in ExecuTorch,
/// every object that was the best so far during the scan is marked busy
/// until the tensor's last step, even when a closer object wins later.
///
/// Where it is not optimal: objects cannot grow, so a tensor that would fit
/// with a few more bytes of an object gets a new object of its own; step 2
/// stacks on the highest overlapping tensor and never uses a gap below it;
/// step 1 takes the first free object, not the best one; and objects never
/// share bytes, so a tensor cannot straddle two objects whose occupants are
/// dead. The arena can exceed the lower bound (peak of live bytes) even on
/// tiny problems; see tst_etgreedy's knownWeakness.
///
/// What a PlanProblem cannot express: ExecuTorch's in-place results
/// (TensorSpec::inplace_base, 2026) are placed on their base after all
/// other tensors and do not constrain them; here they must be folded into
/// their base's storage, which also stretches the base's lifetime.
class EtGreedyPlanner : public MemoryPlanner {
 public:
  explicit EtGreedyPlanner(EtGreedyOptions options = {});

  std::string name() const override { return "et-greedy"; }
  PlanResult plan(const PlanProblem& p) const override;

  /// The plan with the objects and placement order behind it.
  EtGreedyTrace planTraced(const PlanProblem& p) const;

  const EtGreedyOptions& options() const { return options_; }

 private:
  EtGreedyTrace placeAll(const PlanProblem& p) const;  ///< p.tensors only
  EtGreedyOptions options_;
};

/// ExecuTorch's extra arena padding for `method`: 64 bytes when one of its
/// delegates is XNNPACK (backend id containing "xnnpack", any case), else 0.
uint64_t etGreedyExtraPadding(const Method& method);

}  // namespace lstudio
