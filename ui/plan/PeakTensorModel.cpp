#include "ui/plan/PeakTensorModel.h"

#include "engine/support/FormatUtil.h"

namespace lstudio::ui {

void PeakTensorModel::setLane(std::shared_ptr<const PlanLayout> layout, int lane) {
  beginResetModel();
  layout_ = std::move(layout);
  lane_ = lane;
  if (layout_ && (lane_ < 0 || lane_ >= static_cast<int>(layout_->lanes.size()))) layout_.reset();
  rows_.clear();
  if (layout_)
    for (int32_t st : layout_->lanes[static_cast<size_t>(lane_)].peakStorages)
      if (layout_->report.storages[static_cast<size_t>(st)].size > 0) rows_.push_back(st);
  endResetModel();
}

int PeakTensorModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !layout_) return 0;
  return static_cast<int>(rows_.size());
}

int PeakTensorModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

int PeakTensorModel::rowOfRect(int32_t rect) const {
  if (!layout_ || rect < 0 || static_cast<size_t>(rect) >= layout_->rects.size()) return -1;
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i] == layout_->rects[static_cast<size_t>(rect)].storage) return static_cast<int>(i);
  return -1;
}

QVariant PeakTensorModel::data(const QModelIndex& index, int role) const {
  if (!layout_ || !index.isValid() || index.row() >= rowCount()) return {};
  const int32_t st = rows_[static_cast<size_t>(index.row())];
  const Storage& s = layout_->report.storages[static_cast<size_t>(st)];
  const int32_t rect = layout_->rectOfStorage(st);
  if (role == RectRole) return rect;
  if (rect < 0) return {};
  const PlanRect& r = layout_->rects[static_cast<size_t>(rect)];
  const Method& m = layout_->method();
  if (role == RawRole) {
    switch (index.column()) {
      case Bytes: return QVariant::fromValue<qulonglong>(s.size);
      case Offset: return QVariant::fromValue<qulonglong>(s.offset);
      case Lifetime: return s.first;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole && (index.column() == Bytes || index.column() == Offset))
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Name: {
      const std::string& n = m.values[static_cast<size_t>(r.value)].name;
      QString name = n.empty() ? QStringLiteral("value %1").arg(r.value) : QString::fromStdString(n);
      if (s.tensors.size() > 1) name += tr(" (+%1 sharing)").arg(s.tensors.size() - 1);
      return name;
    }
    case Bytes:
      return role == Qt::ToolTipRole ? QVariant(QStringLiteral("%1 bytes").arg(s.size))
                                     : QVariant(QString::fromStdString(formatBytes(s.size)));
    case Offset: return QString::number(s.offset);
    case Lifetime: return QStringLiteral("%1 \u2013 %2").arg(s.first).arg(s.last);
    case Op: return QString::fromStdString(layout_->opKeys[static_cast<size_t>(r.opKey)]);
  }
  return {};
}

QVariant PeakTensorModel::headerData(int section, Qt::Orientation orientation, int role) const {
  // A first click on Bytes shows the largest first; on the others, A to Z and step 0 first.
  if (orientation == Qt::Horizontal && role == Qt::InitialSortOrderRole)
    return section == Bytes ? Qt::DescendingOrder : Qt::AscendingOrder;
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Tensor");
    case Bytes: return tr("Bytes");
    case Offset: return tr("Offset");
    case Lifetime: return tr("Lifetime");
    case Op: return tr("Producing op");
  }
  return {};
}

int naturalCompare(const QString& a, const QString& b) {
  qsizetype i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].isDigit() && b[j].isDigit()) {
      // Digit runs by value: skip leading zeros, then the longer run is larger.
      qsizetype i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;
      while (j0 < b.size() && b[j0] == '0') ++j0;
      qsizetype i1 = i0, j1 = j0;
      while (i1 < a.size() && a[i1].isDigit()) ++i1;
      while (j1 < b.size() && b[j1].isDigit()) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0 ? -1 : 1;
      if (int c = QStringView(a).mid(i0, i1 - i0).compare(QStringView(b).mid(j0, j1 - j0))) return c;
      i = i1;
      j = j1;
      continue;
    }
    const QChar x = a[i].toCaseFolded(), y = b[j].toCaseFolded();
    if (x != y) return x < y ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size() || j < b.size()) return i < a.size() ? 1 : -1;
  return a.compare(b);  // equal but for case or leading zeros: still an order
}

bool PeakTensorSortModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(PeakTensorModel::RawRole), b = right.data(PeakTensorModel::RawRole);
  int order = 0;
  if (a.isValid() && b.isValid()) {
    const qulonglong x = a.toULongLong(), y = b.toULongLong();
    order = x < y ? -1 : x > y ? 1 : 0;
  } else {
    order = naturalCompare(left.data().toString(), right.data().toString());
  }
  if (order != 0) return order < 0;
  // Equal: by name, layer 0 first even when the column sorts descending.
  const QString l = left.siblingAtColumn(PeakTensorModel::Name).data().toString();
  const QString r = right.siblingAtColumn(PeakTensorModel::Name).data().toString();
  const int byName = naturalCompare(l, r);
  return sortOrder() == Qt::AscendingOrder ? byName < 0 : byName > 0;
}

}  // namespace lstudio::ui
