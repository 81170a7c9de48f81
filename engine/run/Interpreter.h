// Runs a method of an ExecuTorch program in the studio: no Python, no ExecuTorch runtime.
// It executes the instructions of a program as ExecuTorch emits them (a .pte as stored,
// or the emitter's output for any config), with kernels written here after ExecuTorch's
// portable kernels (engine/run/Kernels.h). Planned tensors live in their arenas at their
// offsets, so a wrong plan shows up as wrong numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio::run {

/// A value outside a run, an output it produced or an input given to it: a tensor's dtype,
/// sizes and bytes (logical C order, whatever the dim order inside the run), or a scalar as
/// a number.
struct HostValue {
  ValueKind kind = ValueKind::None;
  ScalarType dtype = ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> bytes;
  double number = 0;
  uint64_t checksum = 0;  ///< FNV-1a-64 of `bytes`
};

struct RunOptions {
  std::string method;  ///< empty: "forward" when there is one, else the first method
  /// Called every few instructions with (done, total); returning false cancels the run.
  std::function<bool(uint64_t done, uint64_t total)> progress;
  /// Bytes of arenas and buffers the run may allocate, and the work its kernels may
  /// do in all (element operations; 0: no limit): past them the run fails instead of
  /// exhausting the machine.
  uint64_t memoryLimit = 0;
  uint64_t workLimit = 0;
  /// The method's inputs, in order; empty: the iota rule. A tensor input takes a tensor of
  /// its dtype and rank whose sizes fit its own (a dynamic dimension up to its bound); a
  /// scalar input takes a number.
  std::vector<HostValue> inputs;
  /// Keep every kernel instruction's results (RunResult::trace), for comparing runs.
  bool trace = false;
  /// Runs a delegate call without its backend: given the delegate (its `original` set) and
  /// the values the call reads, the values it returns, in order. Set by runThroughDelegates
  /// (engine/lowering/Executable.h), which lowers the original program for the interpreter.
  std::function<Result<std::vector<HostValue>>(const Delegate&, const std::vector<HostValue>&)> delegateRunner;
  /// At a delegate call the interpreter cannot run (its compiled blob, with no original
  /// program or no delegateRunner), stop and return what ran up to it (RunResult::stoppedAt
  /// says where; no outputs) instead of failing.
  bool stopAtDelegate = false;
};

/// What one kernel instruction (or delegate call run through its original program) wrote,
/// kept when RunOptions::trace is on.
struct TracedNode {
  size_t instruction = 0;
  std::string node;  ///< the graph node's name ("aten_add_tensor"), as passes keep it
  std::string op;    ///< "aten::add.out", or for a delegate call its backend ("XnnpackBackend")
  std::vector<HostValue> values;
};


struct RunResult {
  std::string method;
  std::vector<HostValue> outputs;
  uint64_t instructions = 0;  ///< instructions executed
  double seconds = 0;         ///< executing them (after the arenas and inputs are set up)
  /// With RunOptions::stopAtDelegate: where the run stopped ("instruction 3: a call into the
  /// XnnpackBackend delegate"); empty when it ran to the end.
  std::string stoppedAt;
  std::vector<TracedNode> trace;
};

/// The input rule `--inputs iota`: element i (flat, in memory order) of a floating tensor
/// is (i % 7) * 0.25 - 0.5, of an integer tensor i % 5, of a bool tensor i % 2; dynamic
/// dimensions at their upper bound; a non-tensor input keeps the value the program stores.
double iotaElement(ScalarType dtype, uint64_t i);

/// Runs one method on the given inputs, or iota ones. Fails (never crashes) naming the instruction, its
/// operator and node, when an operator has no kernel, a delegate is called, a plan puts
/// a tensor outside its arena, or a kernel refuses its arguments.
Result<RunResult> runProgram(const Program& program, const RunOptions& options = {});

/// Runs kernel calls of `m` outside a program run, as constant folding needs them: the nodes
/// numbered `nodes`, each an out variant as ToOutVarPass makes it, in that order. A tensor's
/// bytes are at `bytesOf(value)`, sized for its spec (nullptr for one no call touches). Fails
/// naming the node and operator when there is no kernel or a kernel refuses its arguments.
Status runKernelCalls(const Method& m, const std::vector<size_t>& nodes,
                      const std::function<uint8_t*(ValueId)>& bytesOf);

/// How far apart two values are: the largest |a - b| over their elements; 0 when equal
/// (NaN equals NaN), infinity for NaN against a number, another dtype or another shape.
double maxDifference(const HostValue& a, const HostValue& b);

struct NodeDifference {
  size_t instruction = 0;  ///< in the run compared
  std::string node, op;
  double difference = 0;  ///< maxDifference of the first value past the tolerance
};

/// The first node of `run` (in execution order) whose values differ by more than `tolerance`
/// from those of the node of the same name in `reference` (both traced); nodes the reference
/// has no namesake for are passed over. None when every matched node agrees.
std::optional<NodeDifference> firstDifferingNode(const RunResult& run, const RunResult& reference, double tolerance);

/// What the Inspector shows of a tensor's values: finite min / max / mean / standard
/// deviation, NaN and infinity counts, and a histogram of the finite values over [min, max].
struct ValueStats {
  uint64_t count = 0, nans = 0, infinities = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;  ///< over the finite values
  std::vector<uint64_t> histogram;
};
ValueStats valueStats(const HostValue& v, size_t bins = 16);

/// The first `count` elements of an output (in memory order) as numbers.
std::vector<double> leadingValues(const HostValue& o, size_t count);
/// The same as text: "[0.25, -0.5, ...]" ("..." when there are more); a scalar as itself.
std::string firstValues(const HostValue& o, size_t count);

}  // namespace lstudio::run
