// The Summary tab's content: what the opened file is, as a tree of facts
// (beside it the window shows the text report `lowering-cli inspect` prints)
// and as the one line the status bar gives it.
#pragma once

#include <QString>

#include "ui/run/ProgramLoader.h"

class QTreeWidget;

namespace lstudio::ui {

/// "model.pte: 2 method(s), 1.2 MiB": the status bar's line for a freshly opened file.
QString summaryStatusLine(const LoadedProgram& p);
/// Replaces the tree's items with the file's facts, its programs or methods, and their parts.
void fillSummaryTree(QTreeWidget* tree, const LoadedProgram& p);

}  // namespace lstudio::ui
