// The engine speaks std::string; the widgets QString.
#pragma once

#include <QString>
#include <string>

namespace lstudio::ui {

inline QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace lstudio::ui
