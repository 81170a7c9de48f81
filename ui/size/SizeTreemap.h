// The Size view's geometry and colours: a squarified treemap (Bruls,
// Huizing, van Wijk, "Squarified Treemaps", 2000) of a size breakdown,
// files holding their parts, parts holding their items. No widgets here:
// the layout is plain data the canvas draws and the tests measure.
#pragma once

#include <QColor>
#include <QRectF>
#include <QString>
#include <vector>

#include "engine/inspect/SizeBreakdown.h"

namespace lstudio::ui {

/// Rectangles that tile `area` exactly, one per weight (same order), each
/// with an area proportional to its weight; zero weights get an empty
/// rectangle. Rows are filled along the shorter side while the worst aspect
/// ratio of the row improves (the paper's `squarify`); the largest weights
/// go first whatever the input order.
std::vector<QRectF> squarify(const std::vector<double>& weights, const QRectF& area);

/// One rectangle of the treemap, naming what it shows by index into the breakdowns.
struct TreemapBlock {
  enum class Level { File, Part, Item };
  Level level = Level::Item;
  int file = -1;
  int part = -1;  ///< -1 for a file
  /// -1 for a file or part; items.size() for the part's bytes no item names ("not itemised").
  int item = -1;
  uint64_t bytes = 0;
  QRectF rect;
  /// Where the children lie: under the header band when there is room for one,
  /// else the whole block. Empty for a leaf.
  QRectF inner;
  bool hasHeader() const { return !inner.isEmpty() && inner.top() > rect.top(); }
};

/// The blocks of `files` in `area`, parents before their children (paint
/// order). Files are groups only when there are several; a part with items is
/// a group whose children tile its inner rectangle in proportion to their bytes.
std::vector<TreemapBlock> layoutTreemap(const std::vector<SizeBreakdown>& files, const QRectF& area,
                                        double headerHeight);

/// What a part of a breakdown is, for its colour and its legend entry.
enum class SizeKind { Structure, Constants, Mutable, DelegateGraph, DelegateData, Padding, Other };
SizeKind sizeKindOf(const std::string& partName);
QString sizeKindName(SizeKind k);
QColor sizeKindColor(SizeKind k);

}  // namespace lstudio::ui
