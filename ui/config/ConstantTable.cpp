#include "ui/config/ConstantTable.h"

#include <QAbstractTableModel>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QIcon>
#include <QPixmap>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QRegularExpression>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "engine/support/FormatUtil.h"
#include "engine/ir/ScalarType.h"

namespace lstudio::ui {

namespace {

const QString kInsidePte = QStringLiteral("inside .pte");
const QString kNewFile = QStringLiteral("new file…");

QString fileOfTag(const std::string& tag) { return tag.empty() ? QString() : QString::fromStdString(tag) + ".ptd"; }
QString destinationText(const QString& file) { return file.isEmpty() ? kInsidePte : file; }
/// What the user typed or picked -> a file name ("weights" -> "weights.ptd"; "inside .pte" -> "").
QString normalizedFile(QString text) {
  text = text.trimmed();
  if (text.isEmpty() || text == kInsidePte || text == kNewFile) return {};
  if (!text.endsWith(".ptd")) text += ".ptd";
  return text;
}

QString shapeText(const std::vector<int64_t>& sizes) {
  QStringList dims;
  for (int64_t d : sizes) dims << QString::number(d);
  return "[" + dims.join(", ") + "]";
}

/// A steady colour per .ptd file, so a file's rows and its total are easy to match up. Files
/// take clearly distinct colours in the order they first appear in the session (a hue from
/// the name's hash gave two files nearly the same purple); grey is "inside the .pte".
QColor fileColor(const QString& file) {
  if (file.isEmpty()) return QColor(0x9e, 0x9e, 0x9e);
  static const QColor kDistinct[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
                                     QColor(0xe1, 0x57, 0x59), QColor(0xb0, 0x7a, 0xa1), QColor(0x76, 0xb7, 0xb2),
                                     QColor(0xed, 0xc9, 0x48), QColor(0x9c, 0x75, 0x5f), QColor(0xff, 0x9d, 0xa7)};
  static QHash<QString, int> order;  // the GUI thread's, for the session
  auto it = order.constFind(file);
  if (it == order.constEnd()) it = order.insert(file, int(order.size()));
  return kDistinct[*it % int(std::size(kDistinct))];
}

QIcon fileIcon(const QString& file) {
  static QHash<QString, QIcon> cache;
  auto it = cache.find(file);
  if (it != cache.end()) return *it;
  QPixmap pm(10, 10);
  pm.fill(fileColor(file));
  return *cache.insert(file, QIcon(pm));
}

bool perRowRule(const ConstantTagRule& r, const std::string& name) {
  return r.namePattern == name && r.modulePrefix.empty() && r.op.empty() && r.minBytes == 0;
}

}  // namespace

/// The constants of one method; only the destinations change when the config does.
class ConstantModel : public QAbstractTableModel {
 public:
  using QAbstractTableModel::QAbstractTableModel;
  std::vector<ConstantEntry> entries;
  std::function<void(int row, const QString& file)> choose;

  void resetTo(std::vector<ConstantEntry> fresh) {
    beginResetModel();
    entries = std::move(fresh);
    endResetModel();
  }
  /// Same constants, new destinations: keeps selection, scroll position and sort.
  void updateDestinations(std::vector<ConstantEntry> fresh) {
    entries = std::move(fresh);
    if (!entries.empty()) emit dataChanged(index(0, ConstantTable::Destination), index(rowCount() - 1, ConstantTable::Destination));
  }

  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(entries.size()); }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : ConstantTable::ColumnCount; }

  QVariant headerData(int section, Qt::Orientation o, int role) const override {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* names[] = {"Name", "Module", "Shape", "DType", "Bytes", "First op", "Destination", "Note"};
    return section >= 0 && section < ConstantTable::ColumnCount ? QString(names[section]) : QVariant();
  }

  static QString note(const ConstantEntry& e) {
    if (e.lifted) return "lifted tensor constant: stays in the .pte";
    if (!e.pinnedReason.empty()) return QString::fromStdString(e.pinnedReason);
    if (e.mutableWeight) return "mutable weight (receives a gradient)";
    return {};
  }
  static bool fixed(const ConstantEntry& e) { return e.lifted || !e.pinnedReason.empty(); }

  QVariant data(const QModelIndex& index, int role) const override {
    if (!index.isValid() || index.row() >= int(entries.size())) return {};
    const ConstantEntry& e = entries[index.row()];
    if (role == ConstantTable::ValueIdRole) return int(e.value);
    if (role == Qt::TextAlignmentRole && index.column() == ConstantTable::Bytes)
      return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole) {
      if (index.column() == ConstantTable::Bytes) return QString("%1 bytes").arg(e.bytes);
      QString n = note(e);
      return n.isEmpty() ? QString::fromStdString(e.name) : QString::fromStdString(e.name) + "\n" + n;
    }
    if (role == Qt::DecorationRole && index.column() == ConstantTable::Destination) return fileIcon(fileOfTag(e.destination));
    if (role == ConstantTable::SortRole && index.column() == ConstantTable::Bytes) return QVariant::fromValue<qulonglong>(e.bytes);
    if (role != Qt::DisplayRole && role != Qt::EditRole && role != ConstantTable::SortRole) return {};
    switch (index.column()) {
      case ConstantTable::Name: return QString::fromStdString(e.name);
      case ConstantTable::Module: return QString::fromStdString(e.module);
      case ConstantTable::Shape: return shapeText(e.sizes);
      case ConstantTable::DType: return QString::fromLatin1(scalarTypeName(e.dtype).data(), qsizetype(scalarTypeName(e.dtype).size()));
      case ConstantTable::Bytes: return QString::fromStdString(formatBytes(e.bytes));
      case ConstantTable::FirstOp: return QString::fromStdString(e.op);
      case ConstantTable::Destination: return destinationText(fileOfTag(e.destination));
      case ConstantTable::Note: return note(e);
    }
    return {};
  }

  Qt::ItemFlags flags(const QModelIndex& index) const override {
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == ConstantTable::Destination && !fixed(entries[index.row()]))
      f |= Qt::ItemIsEditable;
    return f;
  }

  bool setData(const QModelIndex& index, const QVariant& value, int role) override {
    if (role != Qt::EditRole || index.column() != ConstantTable::Destination || !choose) return false;
    choose(index.row(), normalizedFile(value.toString()));
    return true;
  }
};

/// A combo of the files in use, "inside .pte" and "new file…" (which turns it into a text field).
class DestinationDelegate : public QStyledItemDelegate {
 public:
  DestinationDelegate(ConstantTable* table, QObject* parent) : QStyledItemDelegate(parent), table_(table) {}

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
    auto* combo = new QComboBox(parent);
    combo->addItem(kInsidePte);
    combo->addItems(table_->knownFiles());
    combo->addItem(kNewFile);
    // Open the list at once: choosing a file is then one more click.
    QTimer::singleShot(0, combo, [combo] { combo->showPopup(); });
    connect(combo, &QComboBox::activated, combo, [this, combo](int i) {
      if (combo->itemText(i) == kNewFile) {
        combo->setEditable(true);
        combo->clearEditText();
        combo->lineEdit()->setPlaceholderText("name.ptd");
        combo->lineEdit()->setFocus();
        connect(combo->lineEdit(), &QLineEdit::returnPressed, combo, [this, combo] {
          auto* self = const_cast<DestinationDelegate*>(this);
          emit self->commitData(combo);
          emit self->closeEditor(combo);
        });
        return;
      }
      auto* self = const_cast<DestinationDelegate*>(this);
      emit self->commitData(combo);
      emit self->closeEditor(combo);
    });
    return combo;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* combo = static_cast<QComboBox*>(editor);
    int i = combo->findText(index.data(Qt::EditRole).toString());
    combo->setCurrentIndex(i >= 0 ? i : 0);
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    auto* combo = static_cast<QComboBox*>(editor);
    if (!combo->isEditable() && combo->currentText() == kNewFile) return;
    QString file = normalizedFile(combo->currentText());
    if (combo->isEditable() && file.isEmpty()) return;  // "new file…" left empty: no change
    model->setData(index, destinationText(file), Qt::EditRole);
  }

 private:
  ConstantTable* table_;
};

ConstantTable::ConstantTable(QWidget* parent) : QWidget(parent) {
  model_ = new ConstantModel(this);
  model_->choose = [this](int row, const QString& file) { chooseDestination(row, file); };
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(SortRole);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setSortCaseSensitivity(Qt::CaseInsensitive);
  buildUi();
}

ConstantTable::~ConstantTable() = default;

void ConstantTable::buildUi() {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  // A bottom dock is short and wide: the constants get its whole height on the
  // left, the rules and the totals share the column beside them.
  auto* across = new QSplitter(Qt::Horizontal, this);
  across->setChildrenCollapsible(false);
  outer->addWidget(across);
  buildConstantsPane(across);
  auto* side = new QSplitter(Qt::Vertical, across);
  side->setChildrenCollapsible(false);
  buildRulesPane(side);
  buildTotals(side);
  side->setStretchFactor(0, 2);
  side->setStretchFactor(1, 1);
  across->setStretchFactor(0, 2);
  across->setStretchFactor(1, 1);
}

/// The constants: a filter with the count of rows it leaves, over the table.
void ConstantTable::buildConstantsPane(QWidget* parent) {
  auto* top = new QWidget(parent);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  auto* filterRow = new QHBoxLayout;
  filter_ = new QLineEdit(top);
  filter_->setPlaceholderText(tr("Filter by name, module, op or destination"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& t) {
    proxy_->setFilterFixedString(t);
    showTotals();
  });
  count_ = new QLabel(top);
  filterRow->addWidget(filter_, 1);
  filterRow->addWidget(count_);
  topLayout->addLayout(filterRow);
  buildConstantsView(top);
  topLayout->addWidget(view_, 1);
}

void ConstantTable::buildConstantsView(QWidget* parent) {
  view_ = new QTableView(parent);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(-1, Qt::AscendingOrder);  // value order until the user sorts
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                         QAbstractItemView::EditKeyPressed);
  view_->setAlternatingRowColors(true);
  view_->setWordWrap(false);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 8);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  view_->setItemDelegateForColumn(Destination, new DestinationDelegate(this, view_));
  view_->setColumnWidth(Name, 240);
  view_->setColumnWidth(Module, 140);
  view_->setColumnWidth(Shape, 100);
  view_->setColumnWidth(DType, 70);
  view_->setColumnWidth(Bytes, 80);
  view_->setColumnWidth(FirstOp, 150);
  view_->setColumnWidth(Destination, 160);
  // Where each constant goes is what is edited here: beside its size, in view in a 700 px
  // table; the module (mostly the name's prefix) and the first op after it.
  const int shown[] = {Name, Shape, DType, Bytes, Destination, Module, FirstOp};
  for (int visual = 0; visual < int(std::size(shown)); ++visual)
    view_->horizontalHeader()->moveSection(view_->horizontalHeader()->visualIndex(shown[visual]), visual);
  // Room for a few rows however small the dock, so the table never shrinks to its header.
  view_->setMinimumHeight(view_->horizontalHeader()->sizeHint().height() + 4 * view_->verticalHeader()->defaultSectionSize());
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (current.isValid() && !quietSelection_) emit constantSelected(current.data(ValueIdRole).toInt());
  });
}

bool ConstantTable::selectConstant(int valueId) {
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const QModelIndex index = proxy_->index(row, Name);
    if (index.data(ValueIdRole).toInt() != valueId) continue;
    quietSelection_ = true;
    view_->setCurrentIndex(index);
    quietSelection_ = false;
    view_->scrollTo(index);
    return true;
  }
  return false;
}

/// The rules: a title with the buttons that add, remove and move rules,
/// the rules table, and where a rule that does not parse is reported.
void ConstantTable::buildRulesPane(QWidget* parent) {
  auto* middle = new QWidget(parent);
  auto* midLayout = new QVBoxLayout(middle);
  midLayout->setContentsMargins(0, 0, 0, 0);
  midLayout->addLayout(buildRuleBar(middle));
  buildRulesView(middle);
  midLayout->addWidget(rules_, 1);
  rulesError_ = new QLabel(middle);
  rulesError_->setStyleSheet("color: #c62828;");
  rulesError_->hide();
  midLayout->addWidget(rulesError_);
}

QHBoxLayout* ConstantTable::buildRuleBar(QWidget* parent) {
  auto* ruleBar = new QHBoxLayout;
  auto* title = new QLabel(tr("<b>Tagging rules</b> (first match decides)"), parent);
  title->setToolTip(tr("Each constant goes where the first rule that matches it says; a choice made in a row becomes a rule at the top"));
  ruleBar->addWidget(title, 1);
  auto* add = new QToolButton(parent);
  add->setText(tr("Add rule"));
  add->setPopupMode(QToolButton::InstantPopup);
  auto* presets = new QMenu(add);
  presets->addAction(tr("Weights ≥ 1 MiB → weights.ptd"), this,
                     [this] { addRule({.namePattern = "*.weight", .minBytes = 1 << 20, .file = "weights.ptd"}); });
  presets->addAction(tr("Embeddings → embeddings.ptd"), this,
                     [this] { addRule({.op = "aten::embedding", .file = "embeddings.ptd"}); });
  presets->addAction(tr("Everything else → model.ptd"), this, [this] { addRule({.namePattern = "*", .file = "model.ptd"}); });
  presets->addSeparator();
  presets->addAction(tr("New rule…"), this, &ConstantTable::addDraftRule)
      ->setToolTip(tr("An empty row to fill in: it applies once it has a pattern, a module, an op or a size"));
  add->setMenu(presets);
  add->setToolTip(tr("Add a rule at the end of the list"));
  auto* remove = new QToolButton(parent);
  remove->setText(tr("Remove"));
  connect(remove, &QToolButton::clicked, this, &ConstantTable::removeRule);
  auto* up = new QToolButton(parent);
  up->setText(tr("Up"));
  connect(up, &QToolButton::clicked, this, [this] { moveRule(-1); });
  auto* down = new QToolButton(parent);
  down->setText(tr("Down"));
  connect(down, &QToolButton::clicked, this, [this] { moveRule(+1); });
  for (QWidget* w : {static_cast<QWidget*>(add), static_cast<QWidget*>(remove), static_cast<QWidget*>(up),
                     static_cast<QWidget*>(down)})
    ruleBar->addWidget(w);
  return ruleBar;
}

void ConstantTable::buildRulesView(QWidget* parent) {
  rules_ = new QTableWidget(0, RuleColumnCount, parent);
  rules_->setHorizontalHeaderLabels({tr("Name pattern"), tr("Module prefix"), tr("Op"), tr("Min bytes"), tr("File")});
  rules_->horizontalHeaderItem(RuleName)->setToolTip(tr("Glob on the fully qualified name: * any run, ? one character; empty = any"));
  rules_->horizontalHeaderItem(RuleModule)->setToolTip(tr("Module path prefix (\"layers.0\"); empty = any"));
  rules_->horizontalHeaderItem(RuleOp)->setToolTip(tr("Operator of the first node that reads it (\"aten::embedding\"); empty = any"));
  rules_->horizontalHeaderItem(RuleMinBytes)->setToolTip(tr("Only constants at least this large (\"1 MiB\", \"4096\")"));
  rules_->horizontalHeaderItem(RuleFile)->setToolTip(tr("Destination .ptd file, or inside .pte"));
  rules_->verticalHeader()->setDefaultSectionSize(rules_->fontMetrics().height() + 8);
  rules_->horizontalHeader()->setStretchLastSection(true);
  rules_->setSelectionBehavior(QAbstractItemView::SelectRows);
  rules_->setSelectionMode(QAbstractItemView::SingleSelection);
  rules_->setItemDelegateForColumn(RuleFile, new DestinationDelegate(this, rules_));
  // Narrow enough to fit the column beside the constants at 1366 px; File stretches.
  rules_->setColumnWidth(RuleName, 130);
  rules_->setColumnWidth(RuleModule, 110);
  rules_->setColumnWidth(RuleOp, 120);
  rules_->setColumnWidth(RuleMinBytes, 75);
  connect(rules_, &QTableWidget::itemChanged, this, [this] {
    if (!showingRules_) rulesEdited();
  });
}

/// Bytes and constants per destination.
void ConstantTable::buildTotals(QWidget* parent) {
  totals_ = new QTreeWidget(parent);
  totals_->setRootIsDecorated(false);
  totals_->setHeaderLabels({tr("Destination"), tr("Constants"), tr("Bytes")});
  totals_->header()->setStretchLastSection(false);
  totals_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  totals_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  totals_->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
}

QAbstractItemModel* ConstantTable::model() const { return proxy_; }

void ConstantTable::setProgram(std::shared_ptr<const Program> program, int methodIndex, const ExecutorchBackendConfig& c) {
  program_ = std::move(program);
  method_ = program_ && methodIndex >= 0 && methodIndex < int(program_->methods.size()) ? methodIndex : -1;
  config_ = c;
  reevaluate(true);
  showRules();
}

void ConstantTable::setConfig(const ExecutorchBackendConfig& c) {
  config_ = c;
  reevaluate(false);
  showRules();
}

void ConstantTable::reevaluate(bool reset) {
  std::vector<ConstantEntry> fresh;
  if (method_ >= 0) fresh = listConstants(program_->methods[method_], config_);
  if (reset || fresh.size() != model_->entries.size()) model_->resetTo(std::move(fresh));
  else model_->updateDestinations(std::move(fresh));
  showTotals();
}

QMap<QString, quint64> ConstantTable::bytesPerDestination() const {
  QMap<QString, quint64> out;
  for (const ConstantEntry& e : model_->entries) out[fileOfTag(e.destination)] += e.bytes;
  return out;
}

QStringList ConstantTable::knownFiles() const {
  QStringList files;
  for (const ConstantEntry& e : model_->entries)
    if (!e.destination.empty()) files << fileOfTag(e.destination);
  for (const ConstantTagRule& r : config_.externalConstantRules)
    if (!r.file.empty()) files << fileOfTag(tagFromFileName(r.file));
  files.removeDuplicates();
  files.sort();
  return files;
}

void ConstantTable::showTotals() {
  struct Sum { int count = 0; quint64 bytes = 0; int mutableCount = 0; quint64 mutableBytes = 0; };
  QMap<QString, Sum> sums;
  for (const ConstantEntry& e : model_->entries) {
    Sum& s = sums[fileOfTag(e.destination)];
    ++s.count;
    s.bytes += e.bytes;
    if (e.mutableWeight) ++s.mutableCount, s.mutableBytes += e.bytes;
  }
  totals_->clear();
  int all = 0;
  for (auto it = sums.begin(); it != sums.end(); ++it) {
    auto* item = new QTreeWidgetItem(totals_, {destinationText(it.key()), QString::number(it->count),
                                               QString::fromStdString(formatBytes(it->bytes))});
    item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
    item->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
    item->setToolTip(2, QString("%1 bytes").arg(it->bytes));
    item->setIcon(0, fileIcon(it.key()));
    all += it->count;
    if (config_.externalMutableWeights && it->mutableCount > 0) {
      auto* m = new QTreeWidgetItem(totals_, {"    " + tr("of which mutable weights"), QString::number(it->mutableCount),
                                              QString::fromStdString(formatBytes(it->mutableBytes))});
      m->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
      m->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
      m->setForeground(0, totals_->palette().brush(QPalette::PlaceholderText));
    }
  }
  count_->setText(proxy_->rowCount() == all ? tr("%n constant(s)", "", all)
                                            : tr("%1 of %2 constants").arg(proxy_->rowCount()).arg(all));
}

void ConstantTable::showRules() {
  showingRules_ = true;
  const auto& rules = config_.externalConstantRules;
  rules_->setRowCount(int(rules.size()));
  for (int i = 0; i < int(rules.size()); ++i) {
    const ConstantTagRule& r = rules[i];
    QStringList cells = {QString::fromStdString(r.namePattern), QString::fromStdString(r.modulePrefix),
                         QString::fromStdString(r.op), r.minBytes ? sizeText(r.minBytes) : QString(),
                         destinationText(r.file.empty() ? QString() : fileOfTag(tagFromFileName(r.file)))};
    for (int col = 0; col < RuleColumnCount; ++col) {
      auto* item = rules_->item(i, col);
      if (!item) rules_->setItem(i, col, item = new QTableWidgetItem);
      item->setText(cells[col]);
    }
  }
  // Rules only act while external_constants is on; say so rather than hide them.
  rules_->setEnabled(true);
  rules_->setToolTip(!rules.empty() && !config_.externalConstants
                         ? tr("external_constants is off: these rules are kept but not applied")
                         : QString());
  showingRules_ = false;
}

void ConstantTable::commit(ExecutorchBackendConfig c) {
  config_ = std::move(c);
  reevaluate(false);
  showRules();
  emit configChanged(config_);
}

void ConstantTable::chooseDestination(int sourceRow, const QString& file) {
  if (sourceRow < 0 || sourceRow >= int(model_->entries.size())) return;
  const ConstantEntry& e = model_->entries[sourceRow];
  ExecutorchBackendConfig c = config_;
  auto& rules = c.externalConstantRules;
  // "Every constant external" has no rules; spell it as a last catch-all so one row's rule does not undo it.
  if (c.externalConstants && rules.empty()) rules.push_back({.file = std::string(kDefaultExternalTag) + ".ptd"});
  std::erase_if(rules, [&](const ConstantTagRule& r) { return perRowRule(r, e.name); });
  rules.insert(rules.begin(), ConstantTagRule{.namePattern = e.name, .file = file.toStdString()});
  c.externalConstants = true;
  commit(std::move(c));
}

void ConstantTable::setRules(const std::vector<ConstantTagRule>& rules) {
  ExecutorchBackendConfig c = config_;
  c.externalConstantRules = rules;
  c.externalConstants = !rules.empty();
  commit(std::move(c));
}

void ConstantTable::addRule(const ConstantTagRule& r) {
  auto rules = config_.externalConstantRules;
  if (config_.externalConstants && rules.empty()) rules.push_back({.file = std::string(kDefaultExternalTag) + ".ptd"});
  // Before a catch-all at the end, which would otherwise shadow the new rule.
  auto pos = rules.end();
  if (!rules.empty()) {
    const ConstantTagRule& last = rules.back();
    bool catchAll = (last.namePattern.empty() || last.namePattern == "*") && last.modulePrefix.empty() && last.op.empty() &&
                    last.minBytes == 0;
    if (catchAll) --pos;
  }
  int row = int(pos - rules.begin());
  rules.insert(pos, r);
  setRules(rules);
  rules_->selectRow(row);
}

void ConstantTable::addDraftRule() {
  // A row of the table only: an empty rule would match every constant ("Empty rule" once put
  // `* -> weights.ptd` on top and re-tagged them all). rulesEdited() takes it into the config
  // when one of its criteria is filled in.
  const int row = rules_->rowCount();
  showingRules_ = true;
  rules_->insertRow(row);
  for (int col = 0; col < RuleColumnCount; ++col) rules_->setItem(row, col, new QTableWidgetItem);
  rules_->item(row, RuleFile)->setText("weights.ptd");
  showingRules_ = false;
  rules_->setCurrentCell(row, RuleName);
  rules_->editItem(rules_->item(row, RuleName));
}

void ConstantTable::removeRule() {
  int row = rules_->currentRow();
  auto rules = config_.externalConstantRules;
  if (row < 0 || row >= int(rules.size())) return;
  rules.erase(rules.begin() + row);
  setRules(rules);
  if (!rules.empty()) rules_->selectRow(std::min(row, int(rules.size()) - 1));
}

void ConstantTable::moveRule(int delta) {
  int row = rules_->currentRow(), to = row + delta;
  auto rules = config_.externalConstantRules;
  if (row < 0 || to < 0 || to >= int(rules.size())) return;
  std::swap(rules[row], rules[to]);
  setRules(rules);
  rules_->selectRow(to);
}

void ConstantTable::rulesEdited() {
  std::vector<ConstantTagRule> rules;
  for (int i = 0; i < rules_->rowCount(); ++i) {
    auto text = [&](int col) { return rules_->item(i, col) ? rules_->item(i, col)->text().trimmed() : QString(); };
    ConstantTagRule r;
    r.namePattern = text(RuleName).toStdString();
    r.modulePrefix = text(RuleModule).toStdString();
    r.op = text(RuleOp).toStdString();
    if (!text(RuleMinBytes).isEmpty() && !parseSize(text(RuleMinBytes), &r.minBytes)) {
      rulesError_->setText(tr("Rule %1: min bytes \"%2\" is not a size (try 4096, 64 KiB or 1 MiB)").arg(i + 1).arg(text(RuleMinBytes)));
      rulesError_->show();
      return;
    }
    r.file = normalizedFile(text(RuleFile)).toStdString();
    // A row past the config's rules with no criterion yet is a draft (New rule…): not a rule.
    const bool draft = i >= int(config_.externalConstantRules.size()) && r.namePattern.empty() && r.modulePrefix.empty() &&
                       r.op.empty() && r.minBytes == 0;
    if (!draft) rules.push_back(std::move(r));
  }
  rulesError_->hide();
  // Only a draft row changed (its file, say): nothing to apply, and the row stays to be filled in.
  if (rules.size() < size_t(rules_->rowCount()) && rules == config_.externalConstantRules) return;
  setRules(rules);
}

bool ConstantTable::parseSize(const QString& text, uint64_t* out) {
  static const QRegularExpression re("^\\s*(\\d+(?:\\.\\d+)?)\\s*([kmg]?)(?:i?b)?\\s*$", QRegularExpression::CaseInsensitiveOption);
  auto m = re.match(text);
  if (!m.hasMatch()) return false;
  double v = m.captured(1).toDouble();
  QChar unit = m.captured(2).isEmpty() ? QChar() : m.captured(2).at(0).toLower();
  double scale = unit == 'k' ? 1024.0 : unit == 'm' ? 1024.0 * 1024 : unit == 'g' ? 1024.0 * 1024 * 1024 : 1.0;
  double bytes = v * scale;
  if (bytes > 1.8e19) return false;
  *out = uint64_t(bytes + 0.5);
  return true;
}

QString ConstantTable::sizeText(uint64_t bytes) {
  if (bytes && bytes % (1ull << 30) == 0) return QString("%1 GiB").arg(bytes >> 30);
  if (bytes && bytes % (1ull << 20) == 0) return QString("%1 MiB").arg(bytes >> 20);
  if (bytes && bytes % (1ull << 10) == 0) return QString("%1 KiB").arg(bytes >> 10);
  return QString::number(bytes);
}

}  // namespace lstudio::ui
