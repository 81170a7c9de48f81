// The Size view (a tab beside the graph): where the bytes of the open .pte
// (and the .ptd files opened with it) go, as a squarified treemap of the
// engine's size breakdown — every byte of each file in one block, parts as
// labelled groups of their items, coloured by kind. Clicking a constant or a
// delegate's block asks the window to select it in the other views; "Compare
// sizes with…" reads another file on a worker and lists the differences per
// part and item.
#pragma once

#include <QWidget>
#include <vector>

#include "engine/inspect/SizeBreakdown.h"
#include "ui/run/ProgramLoader.h"
#include "ui/size/SizeTreemap.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSplitter;
class QStackedWidget;
class QTreeWidget;

namespace lstudio::ui {

class SizeCanvas;

class SizeView : public QWidget {
  Q_OBJECT
 public:
  /// Columns of diffTable().
  enum DiffColumn { DiffName, DiffThis, DiffOther, DiffChange, DiffColumnCount };
  /// diffTable() data: the raw byte counts (DiffThis, DiffOther) and the signed change (DiffChange).
  static constexpr int BytesRole = Qt::UserRole + 1;

  explicit SizeView(QWidget* parent = nullptr);

  /// Shows `files` (the .pte or lone .ptd first); with none, `why` instead of a treemap.
  void setFiles(std::vector<SizeBreakdown> files, const QString& why = {});
  const std::vector<SizeBreakdown>& files() const { return files_; }
  /// With several files: shows only file `file` (index into files()), or all to scale (-1).
  void showFile(int file);
  int shownFile() const;
  /// The blocks as laid out for the canvas's current size (canvas coordinates).
  const std::vector<TreemapBlock>& blocks() const;
  QWidget* canvas() const;
  /// Block index under `p` (canvas coordinates), the innermost; -1 for none.
  int blockAt(const QPointF& p) const;
  /// What a click does: selects block `index`, shows its details and, for a
  /// constant or a delegate, emits constantActivated / delegateActivated.
  void selectBlock(int index);
  int selectedBlock() const { return selected_; }
  /// "net.linear.bias", "constants (constant segment)", "(not itemised)", "xor.ptd".
  QString blockName(const TreemapBlock& b) const;
  /// Name, bytes, share of its file and what it is, as one line of rich text.
  QString blockSummary(const TreemapBlock& b) const;
  QLabel* detailsLabel() const { return details_; }

  /// Reads `path` on a worker and shows the difference from the first file here.
  void compareWith(const QString& path);
  bool compareBusy() const { return compareBusy_; }
  /// Per part (top level) and changed item (children): bytes here, there and the change.
  QTreeWidget* diffTable() const { return diffTable_; }
  /// Whom the comparison is with, or why it could not be made.
  QLabel* compareMessage() const { return compareTitle_; }
  QPushButton* compareButton() const { return compareButton_; }

 signals:
  /// A constant tensor's block was clicked: its name in the breakdown (fqn, or "method %value").
  void constantActivated(const QString& name);
  /// A delegate payload's block (or one of its operators' data) was clicked.
  void delegateActivated(const QString& method, int delegate);
  /// The "Compare sizes with…" button: the window asks for the file.
  void compareRequested();
  void compareFinished(bool ok, const QString& message);

 private:
  friend class SizeCanvas;
  void buildTop();
  void buildComparePane();
  void showLegend();
  void showComparison(const LoadedSizes& other);
  /// What the details line says while nothing is selected.
  QString hint() const;
  /// The SizeItem, or null for a file, a part, or the part's "not itemised" rest.
  const SizeItem* itemOf(const TreemapBlock& b) const;

  std::vector<SizeBreakdown> files_;
  int selected_ = -1;
  int compareJob_ = 0;
  bool compareBusy_ = false;
  QLabel* title_ = nullptr;
  QLabel* legend_ = nullptr;
  QComboBox* fileChoice_ = nullptr;
  QPushButton* compareButton_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* why_ = nullptr;
  QSplitter* split_ = nullptr;
  SizeCanvas* canvas_ = nullptr;
  QLabel* details_ = nullptr;
  QWidget* comparePane_ = nullptr;
  QLabel* compareTitle_ = nullptr;
  QTreeWidget* diffTable_ = nullptr;
};

}  // namespace lstudio::ui
