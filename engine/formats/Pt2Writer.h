// Writes a program as a torch.export PT2 archive (the layout torch >= 2.9
// writes): models/<name>.json in the current serde schema, raw weight
// records described by data/weights/<name>_weights_config.json. The output
// is deterministic (sorted JSON keys, zero timestamps), so writing an
// imported archive again gives the same bytes.
#pragma once

#include <string>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

/// Writes method 0 of `program` (a graph program: .pt2 import or a sample)
/// to `path`, atomically. Weights are streamed from where they live.
Status writePt2(const Program& program, const std::string& path);

/// The serialized ExportedProgram JSON of one method (what models/<name>.json holds).
std::string exportedProgramJson(const Program& program, const Method& m);

}  // namespace lstudio
