// Writes files so that a reader never sees half of one and a failure leaves
// the previous file untouched: temporary file in the same folder, fsync,
// rename into place.
#pragma once

#include <string>
#include <string_view>

#include "engine/Error.h"

namespace lstudio {

Status writeFileAtomically(const std::string& path, std::string_view data);

}  // namespace lstudio
