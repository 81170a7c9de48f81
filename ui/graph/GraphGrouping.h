// Arranges a graph model's boxes into groups (modules, repeated blocks, execution chunks) and
// hosts weights, inputs, removed views and write-backs beside the nodes that use them.
#pragma once

#include "ui/graph/GraphModel.h"

namespace lstudio::ui {

void arrangeGroups(GraphModel& g, const Method& m);

}  // namespace lstudio::ui
