// The constant tagging table (a dock): every constant of the current method
// with its size and where the config sends it (inside the .pte or which
// .ptd), sortable and filterable; a per-row destination choice and an
// ordered rules editor that both edit the config's external_constants
// rules, so the config stays the one source of truth; totals per file.
#pragma once

#include <QMap>
#include <QWidget>
#include <memory>

#include "engine/ir/Ir.h"
#include "engine/lowering/BackendConfig.h"
#include "engine/lowering/ConstantTagging.h"

class QAbstractItemModel;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTableWidget;
class QTreeWidget;

namespace lstudio::ui {

class ConstantModel;

class ConstantTable : public QWidget {
  Q_OBJECT
 public:
  enum Column { Name, Module, Shape, DType, Bytes, FirstOp, Destination, Note, ColumnCount };
  enum RulesColumn { RuleName, RuleModule, RuleOp, RuleMinBytes, RuleFile, RuleColumnCount };
  /// Data roles of model(): the raw value for sorting, the constant's value id.
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int ValueIdRole = Qt::UserRole + 1;

  explicit ConstantTable(QWidget* parent = nullptr);
  ~ConstantTable() override;

  void setProgram(std::shared_ptr<const Program> program, int methodIndex, const ExecutorchBackendConfig& c);
  /// Re-evaluates destinations and shows the rules; no signal.
  void setConfig(const ExecutorchBackendConfig& c);
  ExecutorchBackendConfig config() const { return config_; }
  /// The program and method whose constants are listed (-1 for none).
  const std::shared_ptr<const Program>& program() const { return program_; }
  int methodIndex() const { return method_; }

  /// The sorted and filtered rows as shown (tests).
  QAbstractItemModel* model() const;
  /// Bytes per destination file ("weights.ptd"); "" = inside the .pte.
  QMap<QString, quint64> bytesPerDestination() const;

  /// Sends one constant to `file` ("weights.ptd"; empty = inside the .pte) by
  /// an exact-name rule at the top of the rules; what the row's combo does.
  void chooseDestination(int sourceRow, const QString& file);
  /// Replaces the rules (what the rules editor does); empty turns external_constants off.
  void setRules(const std::vector<ConstantTagRule>& rules);
  /// Files the config or the program already uses, for the destination choices.
  QStringList knownFiles() const;

  /// Makes the constant with value id `valueId` the current row and scrolls to it,
  /// without emitting constantSelected (the caller selects it elsewhere); false when
  /// no row shown has it (another method, or filtered out).
  bool selectConstant(int valueId);

  QLineEdit* filterEdit() const { return filter_; }
  QTableView* view() const { return view_; }
  QTableWidget* rulesView() const { return rules_; }

  /// "1 MiB" / "1048576" / "512K" -> bytes (binary units); false when not a size.
  static bool parseSize(const QString& text, uint64_t* out);
  static QString sizeText(uint64_t bytes);

 signals:
  /// The user changed a row's destination or a rule.
  void configChanged(const lstudio::ExecutorchBackendConfig& c);
  void constantSelected(int valueId);

 private:
  void buildUi();
  void buildConstantsPane(QWidget* parent);
  void buildConstantsView(QWidget* parent);
  void buildRulesPane(QWidget* parent);
  QHBoxLayout* buildRuleBar(QWidget* parent);
  void buildRulesView(QWidget* parent);
  void buildTotals(QWidget* parent);
  void reevaluate(bool reset);
  void showRules();
  void showTotals();
  void rulesEdited();
  void addRule(const ConstantTagRule& r);
  /// Add rule > New rule…: an empty row to fill in, not a rule until it has a criterion.
  void addDraftRule();
  void removeRule();
  void moveRule(int delta);
  void commit(ExecutorchBackendConfig c);

  std::shared_ptr<const Program> program_;
  int method_ = -1;
  ExecutorchBackendConfig config_;
  ConstantModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* count_ = nullptr;
  QTableWidget* rules_ = nullptr;
  QLabel* rulesError_ = nullptr;
  QTreeWidget* totals_ = nullptr;
  bool showingRules_ = false;
  bool quietSelection_ = false;  ///< selectConstant is moving the current row
};

}  // namespace lstudio::ui
