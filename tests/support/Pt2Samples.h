// Small synthetic torch.export archives for tests and benchmarks, kept out
// of the Qt Test sources (moc cannot read raw string literals).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "tests/support/ZipWriter.h"

namespace lstudio::test {

/// y = add(mul(x, w), b, alpha=2) with parameter w, buffer b and a dynamic x (s0 in [2, 16]),
/// in the current serde style; `extraNode` is appended to the node list as JSON.
std::string programJson(const std::string& xSize = "4", const std::string& extraNode = "");
/// Little-endian float32 bytes.
std::string floats(std::initializer_list<float> v);
/// The weights config of programJson's archive; `wElems` elements announced for w.
std::string weightsConfig(int wElems = 4);
/// torch.cond(x.sum() > 0, lambda x, w: x * w, lambda x, w: x.cos() * 2.0, (x, w)) on x: float32[4] and
/// parameter w (weights config: weightsConfig(), w only), as torch.export serializes it:
/// the branches as graphs of their own inside the cond node's arguments.
std::string condProgramJson();
/// torch's map over the 3 rows of x [3, 4]: sin(row) * w + y, y [4] an operand.
std::string mapProgramJson();
/// torch's scan over the 3 rows of xs [3, 4] from h [4]: next h = x * w + h, y = sin(next h).
std::string scanProgramJson();

/// The records of a PT2 archive (root folder "m/") holding programJson-like JSON and weight w.
std::vector<ZipRecord> archiveRecords(const std::string& json, const std::string& config, const std::string& w);

}  // namespace lstudio::test
