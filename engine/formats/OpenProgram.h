// Opens any program file the studio understands, by content: an ExecuTorch
// program (.pte / .bpte) or a torch.export archive (.pt2, ETRecord).
#pragma once

#include <string>

#include "engine/support/Error.h"
#include "engine/ir/Ir.h"

namespace lstudio {

Result<Program> openProgramFile(const std::string& path);

}  // namespace lstudio
