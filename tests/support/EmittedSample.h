// A zoo sample lowered under the default config and emitted: a program as ExecuTorch's
// instructions, for tests and fuzz targets that run or link against one.
#pragma once

#include <string>

#include "engine/ir/Ir.h"
#include "engine/support/Error.h"

namespace lstudio {

/// Builds sample `name` (one layer), writes it as DIR/NAME.pt2, opens it, lowers it under the
/// default config and emits it.
Result<Program> emittedSample(const std::string& dir, const std::string& name);

}  // namespace lstudio
