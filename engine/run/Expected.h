// A run's outputs against the values the user expects: what the eager model returned, saved
// as one .npy per output. The studio's interpreter follows ExecuTorch's portable kernels, so
// the gap is the lowering's and the kernels' together, per output in |difference| and ULPs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/run/Interpreter.h"

namespace lstudio::run {

struct ExpectedDifference {
  double maxAbs = 0;  ///< the largest |got - expected| over the elements
  /// The largest distance in units in the last place of the output's dtype (float32,
  /// float64, float16, bfloat16; for integers and bool, the |difference|).
  double maxUlp = 0;
  /// Why the two cannot be compared (another shape, a tensor against a number); empty when
  /// they were compared.
  std::string mismatch;
};

/// `got` (an output of a run) against `expected` (read from a .npy): shapes must be equal;
/// the expected values are taken at the output's dtype (numpy's float64 against a float32
/// output is compared after rounding to float32, as the eager model's output was). NaN
/// matches NaN; NaN against a number, or infinities of other signs, are infinitely apart.
ExpectedDifference differenceFromExpected(const HostValue& got, const HostValue& expected);

/// Where a run's gap from the expected outputs comes from, told by an earlier snapshot of the
/// same program (the program as exported, nearest to the eager model): when that snapshot's
/// outputs are within the tolerance of the expected ones, lowering made the gap, and the first
/// node past the tolerance against the snapshot is where; else the gap was there before
/// lowering (the export, the inputs, or a kernel both runs share).
struct GapOrigin {
  /// The reference's largest |difference| from the expected outputs (infinity when one of
  /// them cannot be compared or the counts differ).
  double referenceMaxAbs = 0;
  bool fromLowering = false;  ///< the reference is within the tolerance
  std::optional<NodeDifference> firstNode;  ///< with fromLowering: the run's first node past it
};

/// `run` and `reference` traced (RunOptions::trace), `expected` one value per output.
GapOrigin originOfGap(const RunResult& run, const RunResult& reference, const std::vector<HostValue>& expected,
                      double tolerance);

}  // namespace lstudio::run
