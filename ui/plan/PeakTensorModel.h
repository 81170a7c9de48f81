// The "tensors alive at the peak" table: the storages alive at one arena's
// peak step, largest first (PlanLane::peakStorages keeps that order).
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <memory>

#include "ui/plan/PlanLayout.h"

namespace lstudio::ui {

class PeakTensorModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Bytes, Offset, Lifetime, Op, ColumnCount };
  /// Raw numbers (bytes, offset, first step) for sorting and tests.
  static constexpr int RawRole = Qt::UserRole + 1;
  /// Index into PlanLayout::rects of the row's tensor.
  static constexpr int RectRole = Qt::UserRole + 2;

  using QAbstractTableModel::QAbstractTableModel;
  void setLane(std::shared_ptr<const PlanLayout> layout, int lane);
  /// The row showing the storage of this rectangle, or -1.
  int rowOfRect(int32_t rect) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::shared_ptr<const PlanLayout> layout_;
  int lane_ = 0;
  /// The lane's peak storages that hold bytes: a 0-byte tensor is no part of the peak (it
  /// showed as "0 B" rows).
  std::vector<int32_t> rows_;
};

/// Compares text with its digit runs as numbers ("layers_2" < "layers_10"),
/// the rest case-insensitively: <0, 0 or >0. (QCollator's numeric mode needs
/// ICU, which not every Qt has.)
int naturalCompare(const QString& a, const QString& b);

/// The peak table's sorting: numbers by value (RawRole), text in natural
/// order (layers_2 before layers_10); ties by name, in natural order whichever
/// way the column sorts.
class PeakTensorSortModel : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;
};

}  // namespace lstudio::ui
