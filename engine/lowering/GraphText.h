// The graph of a method as text, one line per node: results, operator,
// arguments and tensor specs. Used by `lowering-cli lower --print-after-*`,
// golden files of pass tests, and change fingerprints.
#pragma once

#include <cstdint>
#include <string>

#include "engine/ir/Ir.h"

namespace lstudio {

std::string graphText(const Method& m);
/// One node as graphText prints it, without indentation or newline.
std::string nodeLine(const Method& m, size_t node);
/// FNV-1a of graphText over all methods plus the arena sizes: equal programs, equal prints.
uint64_t programFingerprint(const Program& p);

}  // namespace lstudio
