#include "ui/PeakTensorModel.h"

#include "engine/support/FormatUtil.h"

namespace lstudio::ui {

void PeakTensorModel::setLane(std::shared_ptr<const PlanLayout> layout, int lane) {
  beginResetModel();
  layout_ = std::move(layout);
  lane_ = lane;
  if (layout_ && (lane_ < 0 || lane_ >= static_cast<int>(layout_->lanes.size()))) layout_.reset();
  endResetModel();
}

int PeakTensorModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !layout_) return 0;
  return static_cast<int>(layout_->lanes[static_cast<size_t>(lane_)].peakStorages.size());
}

int PeakTensorModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

int PeakTensorModel::rowOfRect(int32_t rect) const {
  if (!layout_ || rect < 0 || static_cast<size_t>(rect) >= layout_->rects.size()) return -1;
  const auto& rows = layout_->lanes[static_cast<size_t>(lane_)].peakStorages;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] == layout_->rects[static_cast<size_t>(rect)].storage) return static_cast<int>(i);
  return -1;
}

QVariant PeakTensorModel::data(const QModelIndex& index, int role) const {
  if (!layout_ || !index.isValid() || index.row() >= rowCount()) return {};
  const int32_t st = layout_->lanes[static_cast<size_t>(lane_)].peakStorages[static_cast<size_t>(index.row())];
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

}  // namespace lstudio::ui
