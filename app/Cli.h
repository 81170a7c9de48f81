// The lowering-cli commands, callable in-process (tests) or from main().
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace lstudio::cli {

/// Exit codes, stable for scripts.
enum Exit : int { kOk = 0, kUsage = 2, kBadFile = 3, kPassFailed = 4, kRunFailed = 5, kNotAsExpected = 6 };

/// Runs `lowering-cli ARGS...` (args exclude the program name).
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace lstudio::cli
