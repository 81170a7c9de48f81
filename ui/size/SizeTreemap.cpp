#include "ui/size/SizeTreemap.h"

#include <algorithm>
#include <numeric>

#include <QObject>

namespace lstudio::ui {
namespace {

/// The worst aspect ratio in a row of total area `sum` (smallest `minA`,
/// largest `maxA`) laid along a side of length `side`: the paper's worst().
double worst(double sum, double minA, double maxA, double side) {
  const double s2 = sum * sum, w2 = side * side;
  return std::max(w2 * maxA / s2, s2 / (w2 * minA));
}

/// The rectangle a group's children fill: under a header band when the
/// group is tall and wide enough to label, else all of it.
QRectF innerOf(const QRectF& r, double header) {
  if (r.height() >= 2.5 * header && r.width() >= 3 * header) return r.adjusted(1, header, -1, -1);
  return r;
}

}  // namespace

std::vector<QRectF> squarify(const std::vector<double>& weights, const QRectF& area) {
  std::vector<QRectF> out(weights.size());
  std::vector<size_t> order;
  double total = 0;
  for (size_t i = 0; i < weights.size(); ++i)
    if (weights[i] > 0) {
      order.push_back(i);
      total += weights[i];
    }
  if (order.empty() || area.width() <= 0 || area.height() <= 0) return out;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  const double scale = area.width() * area.height() / total;
  auto areaOf = [&](size_t k) { return weights[order[k]] * scale; };
  QRectF free = area;
  for (size_t i = 0; i < order.size();) {
    // A row along the shorter side of what is left, grown while its worst aspect ratio improves.
    const bool wide = free.width() >= free.height();
    const double side = wide ? free.height() : free.width();
    double sum = areaOf(i), minA = sum, maxA = sum;
    size_t end = i + 1;
    for (; end < order.size(); ++end) {
      const double x = areaOf(end);
      if (worst(sum + x, std::min(minA, x), std::max(maxA, x), side) > worst(sum, minA, maxA, side)) break;
      sum += x;
      minA = std::min(minA, x);
      maxA = std::max(maxA, x);
    }
    // The last row takes all that is left and each row's last block runs to the
    // edge, so rounding never leaves a gap or an overlap.
    const double thick = end == order.size() ? (wide ? free.width() : free.height()) : sum / side;
    double at = wide ? free.top() : free.left();
    for (size_t k = i; k < end; ++k) {
      const double len = k + 1 == end ? (wide ? free.bottom() : free.right()) - at : areaOf(k) / thick;
      out[order[k]] = wide ? QRectF(free.left(), at, thick, len) : QRectF(at, free.top(), len, thick);
      at += len;
    }
    if (wide) free.setLeft(free.left() + thick);
    else free.setTop(free.top() + thick);
    i = end;
  }
  return out;
}

std::vector<TreemapBlock> layoutTreemap(const std::vector<SizeBreakdown>& files, const QRectF& area,
                                        double headerHeight) {
  std::vector<TreemapBlock> out;
  std::vector<double> fileWeights;
  for (const SizeBreakdown& f : files) fileWeights.push_back(double(f.total()));
  const std::vector<QRectF> fileRects = files.size() == 1 ? std::vector<QRectF>{area} : squarify(fileWeights, area);
  for (size_t f = 0; f < files.size(); ++f) {
    QRectF partArea = fileRects[f];
    if (partArea.isEmpty()) continue;
    if (files.size() > 1) {  // one file needs no box of its own: the view's title names it
      TreemapBlock b{TreemapBlock::Level::File, int(f), -1, -1, files[f].total(), fileRects[f], {}};
      b.inner = innerOf(b.rect, headerHeight);
      partArea = b.inner;
      out.push_back(b);
    }
    const auto& parts = files[f].parts;
    std::vector<double> partWeights;
    for (const SizePart& p : parts) partWeights.push_back(double(p.bytes));
    const std::vector<QRectF> partRects = squarify(partWeights, partArea);
    for (size_t p = 0; p < parts.size(); ++p) {
      if (partRects[p].isEmpty()) continue;
      // The items, and what of the part no item names (a payload's framing, say).
      std::vector<double> itemWeights;
      uint64_t itemised = 0;
      for (const SizeItem& i : parts[p].items) {
        itemWeights.push_back(double(i.bytes));
        itemised += i.bytes;
      }
      if (!itemWeights.empty() && itemised < parts[p].bytes) itemWeights.push_back(double(parts[p].bytes - itemised));
      TreemapBlock pb{TreemapBlock::Level::Part, int(f), int(p), -1, parts[p].bytes, partRects[p], {}};
      if (!itemWeights.empty()) pb.inner = innerOf(pb.rect, headerHeight);
      out.push_back(pb);
      if (itemWeights.empty()) continue;
      const std::vector<QRectF> itemRects = squarify(itemWeights, pb.inner);
      for (size_t i = 0; i < itemRects.size(); ++i)
        if (!itemRects[i].isEmpty())
          out.push_back({TreemapBlock::Level::Item, int(f), int(p), int(i), uint64_t(itemWeights[i]), itemRects[i], {}});
    }
  }
  return out;
}

SizeKind sizeKindOf(const std::string& part) {
  auto starts = [&](const char* prefix) { return part.rfind(prefix, 0) == 0; };
  if (starts("padding")) return SizeKind::Padding;
  if (starts("constants") || starts("tensors")) return SizeKind::Constants;
  if (starts("mutable")) return SizeKind::Mutable;
  if (starts("XNNPACK constant data") || starts("named data") || starts("named blobs")) return SizeKind::DelegateData;
  if (starts("XNNPACK") || starts("delegate payloads")) return SizeKind::DelegateGraph;
  if (starts("program flatbuffer") || starts("flatbuffer") || starts("header") || starts("bundled"))
    return SizeKind::Structure;
  return SizeKind::Other;
}

QString sizeKindName(SizeKind k) {
  switch (k) {
    case SizeKind::Structure: return QObject::tr("program structure");
    case SizeKind::Constants: return QObject::tr("constants");
    case SizeKind::Mutable: return QObject::tr("mutable data");
    case SizeKind::DelegateGraph: return QObject::tr("delegate payloads");
    case SizeKind::DelegateData: return QObject::tr("delegate data (weights)");
    case SizeKind::Padding: return QObject::tr("padding");
    case SizeKind::Other: return QObject::tr("other");
  }
  return {};
}

QColor sizeKindColor(SizeKind k) {
  // Light enough for dark labels; the delegate's purple is the graph's delegate hue.
  switch (k) {
    case SizeKind::Structure: return QColor(0x9C, 0xC2, 0xEA);
    case SizeKind::Constants: return QColor(0xF4, 0xCB, 0x7A);
    case SizeKind::Mutable: return QColor(0xEE, 0xA7, 0x9B);
    case SizeKind::DelegateGraph: return QColor(0xC2, 0xAE, 0xE8);
    case SizeKind::DelegateData: return QColor(0xA5, 0xD9, 0xC5);
    case SizeKind::Padding: return QColor(0xD9, 0xD9, 0xD9);
    case SizeKind::Other: return QColor(0xD4, 0xC4, 0xA8);
  }
  return Qt::lightGray;
}

}  // namespace lstudio::ui
