// Writes files so that a reader never sees half of one and a failure leaves
// the previous file untouched: temporary file in the same folder, fsync,
// rename into place.
#pragma once

#include <string>
#include <string_view>

#include "engine/support/Error.h"

namespace lstudio {

Status writeFileAtomically(const std::string& path, std::string_view data);

/// The temporary name pattern beside `path` (for mkstemp): "PATH.tmp-XXXXXX".
std::string temporaryNameFor(const std::string& path);

/// Removes temporaries of `path` (PATH.tmp-XXXXXX) that a killed earlier
/// write left behind. Another process writing the same path at the same
/// moment would lose its temporary and fail cleanly; its target is untouched.
void removeStaleTemporaries(const std::string& path);

/// fsync of a folder, so that renames into it survive a power cut. Best effort.
void syncFolder(const std::string& dir);

/// Test hook (tests/tst_faults.cpp): when the environment variable
/// LSTUDIO_FAULT_AFTER_BYTES=N is set, the export writer kills its own process
/// with SIGKILL once N bytes of the export are written, as a crash would.
/// Returns N, or UINT64_MAX when unset.
uint64_t faultAfterBytes();

}  // namespace lstudio
