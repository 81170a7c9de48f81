#include "ui/size/SizeView.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QStackedWidget>
#include <QToolTip>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/support/FormatUtil.h"
#include "ui/support/Background.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

QString human(uint64_t bytes) { return q(formatBytes(bytes)); }

QString shareText(uint64_t part, uint64_t whole) {
  if (whole == 0) return QStringLiteral("0%");
  const double s = 100.0 * double(part) / double(whole);
  return s > 0 && s < 0.1 ? QStringLiteral("<0.1%") : QString::number(s, 'f', 1) + '%';
}

QString signedHuman(int64_t d) {
  return (d > 0 ? "+" : d < 0 ? "−" : "±") + human(uint64_t(d < 0 ? -d : d));
}

/// What a part holds, in words that name no offset.
QString partDescription(const std::string& part) {
  auto starts = [&](const char* prefix) { return part.rfind(prefix, 0) == 0; };
  if (starts("constants (constant segment)"))
    return QObject::tr("constant tensors in the .pte's constant segment, read in place by the program");
  if (starts("constants (constant_buffer"))
    return QObject::tr("constant tensors inside the program flatbuffer (the older constant_buffer)");
  if (starts("tensors")) return QObject::tr("tensors of this .ptd, found by name (the constants' fully qualified names)");
  if (starts("named blobs")) return QObject::tr("named data of this .ptd with no tensor layout (a backend's blobs)");
  if (starts("mutable")) return QObject::tr("initial values of mutable buffers (state such as caches)");
  if (starts("XNNPACK constant data"))
    return QObject::tr("weights inside an XNNPACK payload, by the payload operator that reads them");
  if (starts("XNNPACK graphs")) return QObject::tr("XNNPACK graphs: each payload's nodes and values");
  if (starts("XNNPACK headers")) return QObject::tr("each XNNPACK payload's header and the padding inside it");
  if (starts("delegate payloads")) return QObject::tr("a backend's compiled payloads, framed where their format is known");
  if (starts("named data"))
    return QObject::tr("weights the delegates read by key (named data), by the backend and operator reading them");
  if (starts("program flatbuffer"))
    return QObject::tr("the program itself: each method's values, instructions, operators, plan, and the tables");
  if (starts("flatbuffer")) return QObject::tr("the .ptd's table of entries: names, layouts and where each lies");
  if (starts("header")) return QObject::tr("the file's header");
  if (starts("padding")) return QObject::tr("bytes between parts: the alignment of segments and tensors");
  if (starts("bundled")) return QObject::tr("the bundled program's wrapper: test inputs and expected outputs");
  if (starts("segments")) return QObject::tr("segment bytes no table of the file names");
  return {};
}

/// "forward delegate 1 (XnnpackBackend)", "forward delegate 1: node 3 XNNFullyConnected (key)".
bool delegateOf(const QString& item, QString* method, int* index) {
  static const QRegularExpression re(QStringLiteral("^(\\S+) delegate (\\d+)\\b"));
  const auto m = re.match(item);
  if (!m.hasMatch()) return false;
  *method = m.captured(1);
  *index = m.captured(2).toInt();
  return true;
}

/// Where the labels of a part's items may start: after the prefix all of them
/// share up to a ": " or a "." ("forward delegate 1: " of the payload's
/// operators, "layers.0." of one layer's weights), or at the "%" of "forward %12".
size_t sharedPrefix(const std::vector<SizeItem>& items) {
  if (items.size() < 2) return 0;
  size_t n = items[0].name.size();
  for (const SizeItem& i : items) {
    size_t k = 0;
    while (k < n && k < i.name.size() && i.name[k] == items[0].name[k]) ++k;
    n = k;
  }
  const std::string& s = items[0].name;
  for (size_t k = n; k > 0; --k) {
    if (s[k - 1] == '.' || (k >= 2 && s[k - 2] == ':' && s[k - 1] == ' ')) return k;
    if (k < s.size() && s[k] == '%' && s[k - 1] == ' ') return k;
  }
  return 0;
}

/// `text` broken into at most `maxLines` lines of `width`: at spaces where
/// it can, inside a word where it must; the last line elided.
QStringList wrapLabel(const QString& text, const QFontMetrics& fm, int width, int maxLines) {
  QStringList lines;
  QString rest = text;
  while (!rest.isEmpty() && lines.size() < maxLines) {
    if (lines.size() + 1 == maxLines || fm.horizontalAdvance(rest) <= width) {
      lines << fm.elidedText(rest, Qt::ElideRight, width);
      break;
    }
    int fit = 1;  // the most characters that fit, then back to a space if there is one
    while (fit < rest.size() && fm.horizontalAdvance(rest.left(fit + 1)) <= width) ++fit;
    // Break after a separator of the name's own ("layers.0." | "feed_forward"), else where it must.
    int cut = fit;
    for (int i = fit - 1; i > 0; --i)
      if (QStringLiteral(" ._/:").contains(rest[i])) {
        cut = rest[i] == ' ' ? i : i + 1;
        break;
      }
    lines << rest.left(cut);
    rest = rest.mid(cut).trimmed();
  }
  return lines;
}

/// A row of the comparison: sorts numerically by the raw bytes (the change by its size).
class DiffItem : public QTreeWidgetItem {
 public:
  using QTreeWidgetItem::QTreeWidgetItem;
  void set(const QString& name, uint64_t a, uint64_t b) {
    const int64_t d = int64_t(b) - int64_t(a);
    setText(SizeView::DiffName, name);
    setToolTip(SizeView::DiffName, name);
    setText(SizeView::DiffThis, human(a));
    setText(SizeView::DiffOther, human(b));
    setText(SizeView::DiffChange, signedHuman(d));
    setData(SizeView::DiffThis, SizeView::BytesRole, QVariant::fromValue<qulonglong>(a));
    setData(SizeView::DiffOther, SizeView::BytesRole, QVariant::fromValue<qulonglong>(b));
    setData(SizeView::DiffChange, SizeView::BytesRole, QVariant::fromValue<qlonglong>(d));
    for (int c = SizeView::DiffThis; c < SizeView::DiffColumnCount; ++c) {
      setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
      setToolTip(c, QObject::tr("%1 bytes").arg(c == SizeView::DiffChange ? qlonglong(d) : qlonglong(c == SizeView::DiffThis ? a : b)));
    }
    if (d != 0) setForeground(SizeView::DiffChange, d > 0 ? QColor(0xB0, 0x30, 0x20) : QColor(0x1E, 0x7A, 0x32));
  }
  bool operator<(const QTreeWidgetItem& other) const override {
    const int c = treeWidget() ? treeWidget()->sortColumn() : 0;
    if (c == SizeView::DiffName) return text(c).toLower() < other.text(c).toLower();
    if (c == SizeView::DiffChange)
      return std::llabs(data(c, SizeView::BytesRole).toLongLong()) < std::llabs(other.data(c, SizeView::BytesRole).toLongLong());
    return data(c, SizeView::BytesRole).toULongLong() < other.data(c, SizeView::BytesRole).toULongLong();
  }
};

}  // namespace

/// Draws the blocks, answers tooltips and turns clicks into SizeView::selectBlock.
class SizeCanvas : public QWidget {
 public:
  explicit SizeCanvas(SizeView* view) : QWidget(view), view_(view) {
    setMouseTracking(true);
    setMinimumSize(200, 120);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  }
  const std::vector<TreemapBlock>& blocks() const {
    if (laidOutFor_ != size()) {  // the layout follows the widget's size, made when first asked
      laidOutFor_ = size();
      const QRectF area = QRectF(rect()).adjusted(0, 0, -1, -1);
      const int only = view_->shownFile();
      if (only < 0) {
        blocks_ = layoutTreemap(view_->files_, area, headerHeight());
      } else {  // one file of several: its blocks keep their index into files_
        blocks_ = layoutTreemap({view_->files_[only]}, area, headerHeight());
        for (TreemapBlock& b : blocks_) b.file = only;
      }
    }
    return blocks_;
  }
  void invalidate() {
    laidOutFor_ = QSize();
    prefixes_.clear();
    update();
  }
  double headerHeight() const { return fontMetrics().height() + 6; }

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* e) override {
    if (e->button() == Qt::LeftButton) view_->selectBlock(view_->blockAt(e->position()));
  }
  void mouseDoubleClickEvent(QMouseEvent* e) override {
    // With several files: into the file double-clicked, and out again.
    const int k = view_->blockAt(e->position());
    if (e->button() != Qt::LeftButton || k < 0 || view_->files_.size() < 2) return;
    view_->showFile(view_->shownFile() >= 0 ? -1 : blocks()[k].file);
  }
  bool event(QEvent* e) override {
    if (e->type() == QEvent::ToolTip) {
      auto* h = static_cast<QHelpEvent*>(e);
      const int k = view_->blockAt(h->pos());
      if (k >= 0) QToolTip::showText(h->globalPos(), view_->blockSummary(blocks()[k]), this);
      else QToolTip::hideText();
      return true;
    }
    return QWidget::event(e);
  }

 private:
  QColor kindColor(const TreemapBlock& b) const {
    if (b.level == TreemapBlock::Level::File) return QColor(0xE4, 0xE4, 0xE4);
    return sizeKindColor(sizeKindOf(view_->files_[b.file].parts[b.part].name));
  }
  void drawHeader(QPainter& p, const TreemapBlock& b) const;
  void drawLeafLabel(QPainter& p, const TreemapBlock& b) const;

  /// Where an item's label starts: after what every item of its part shares.
  size_t labelFrom(const TreemapBlock& b) const {
    auto [it, added] = prefixes_.try_emplace({b.file, b.part}, 0);
    if (added) it->second = sharedPrefix(view_->files_[b.file].parts[b.part].items);
    return it->second;
  }

  SizeView* view_;
  mutable std::map<std::pair<int, int>, size_t> prefixes_;
  mutable std::vector<TreemapBlock> blocks_;
  mutable QSize laidOutFor_;
};

void SizeCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const auto& bs = blocks();
  for (const TreemapBlock& b : bs) {
    const QColor kind = kindColor(b);
    const bool leaf = b.inner.isEmpty();
    // Neighbouring items told apart by shade; a group's own colour shows only in its header band.
    p.fillRect(b.rect, b.level == TreemapBlock::Level::Item ? kind.lighter(100 + 7 * (b.item % 3)) : leaf ? kind : kind.darker(112));
    if (leaf) {
      p.setPen(kind.darker(140));
      p.drawRect(b.rect);
      drawLeafLabel(p, b);
    } else if (b.hasHeader()) {
      drawHeader(p, b);
    }
  }
  // Group outlines over their children, so each part reads as one block.
  for (const TreemapBlock& b : bs) {
    if (b.level == TreemapBlock::Level::Item) continue;
    p.setPen(QPen(b.level == TreemapBlock::Level::File ? QColor(0x55, 0x55, 0x55) : QColor(Qt::white), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(b.rect);
  }
  if (view_->selected_ >= 0 && view_->selected_ < int(bs.size())) {
    p.setPen(QPen(QColor(0x0D, 0x47, 0xA1), 3));
    p.setBrush(QColor(0x0D, 0x47, 0xA1, 40));
    p.drawRect(bs[view_->selected_].rect.adjusted(1.5, 1.5, -1.5, -1.5));
  }
}

void SizeCanvas::drawHeader(QPainter& p, const TreemapBlock& b) const {
  // "constants (constant segment)  9.4 KiB · 79.9%": the size never elided, the name where it must be.
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  const QFontMetrics fm(bold);
  const uint64_t whole = b.level == TreemapBlock::Level::File ? 0 : view_->files_[b.file].total();
  QString size = human(b.bytes);
  if (whole) size += " · " + shareText(b.bytes, whole);
  const QRectF band(b.rect.left() + 5, b.rect.top(), b.rect.width() - 10, b.inner.top() - b.rect.top());
  const int sizeWidth = fm.horizontalAdvance(size) + 12;
  const QString name = fm.elidedText(view_->blockName(b), Qt::ElideRight, int(band.width()) - sizeWidth);
  p.setPen(QColor(0x20, 0x20, 0x20));
  if (!name.isEmpty()) p.drawText(band, Qt::AlignLeft | Qt::AlignVCenter, name);
  if (band.width() > sizeWidth) p.drawText(band, Qt::AlignRight | Qt::AlignVCenter, size);
  p.setFont(font());
}

void SizeCanvas::drawLeafLabel(QPainter& p, const TreemapBlock& b) const {
  // The name over its size and share, wrapped on as many lines as the block
  // holds; what does not fit the tooltip and the details tell.
  const QFontMetrics fm = fontMetrics();
  const QRectF r = b.rect.adjusted(4, 2, -4, -2);
  const int lineHeight = fm.height();
  const int lines = int(r.height()) / lineHeight;
  if (r.width() < 30 || lines < 1) return;
  QString name = view_->blockName(b);
  if (b.level == TreemapBlock::Level::Item) name = name.mid(int(std::min<size_t>(labelFrom(b), size_t(name.size()) - 1)));
  const QStringList nameLines = wrapLabel(name, fm, int(r.width()), lines > 2 ? std::min(lines - 1, 3) : 1);
  p.setPen(QColor(0x20, 0x20, 0x20));
  double y = r.top();
  for (const QString& line : nameLines) {
    p.drawText(QRectF(r.left(), y, r.width(), lineHeight), Qt::AlignLeft | Qt::AlignVCenter, line);
    y += lineHeight;
  }
  if (y + lineHeight > r.bottom() + 1) return;
  // Size and share; the size alone where both do not fit.
  QString size = human(b.bytes) + " · " + shareText(b.bytes, view_->files_[b.file].total());
  if (fm.horizontalAdvance(size) > r.width()) size = human(b.bytes);
  if (fm.horizontalAdvance(size) > r.width()) return;
  p.setPen(QColor(0x44, 0x44, 0x44));
  p.drawText(QRectF(r.left(), y, r.width(), lineHeight), Qt::AlignLeft | Qt::AlignVCenter, size);
}

SizeView::SizeView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  layout->setSpacing(4);
  buildTop();
  stack_ = new QStackedWidget;
  why_ = new QLabel;
  why_->setObjectName("sizeMessage");
  why_->setWordWrap(true);
  why_->setAlignment(Qt::AlignCenter);
  why_->setMargin(24);
  stack_->addWidget(why_);
  split_ = new QSplitter(Qt::Vertical);
  auto* mapPane = new QWidget;
  auto* mapLayout = new QVBoxLayout(mapPane);
  mapLayout->setContentsMargins(0, 0, 0, 0);
  mapLayout->setSpacing(2);
  canvas_ = new SizeCanvas(this);
  canvas_->setObjectName("sizeCanvas");
  mapLayout->addWidget(canvas_, 1);
  details_ = new QLabel;
  details_->setObjectName("sizeDetails");
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Room for three lines always, so the treemap keeps its size whatever is selected.
  details_->setMinimumHeight(3 * details_->fontMetrics().lineSpacing() + 2);
  details_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  mapLayout->addWidget(details_);
  split_->addWidget(mapPane);
  buildComparePane();
  split_->addWidget(comparePane_);
  split_->setStretchFactor(0, 3);
  split_->setStretchFactor(1, 2);
  stack_->addWidget(split_);
  layout->addWidget(stack_, 1);
  setFiles({}, tr("Open a .pte (with its .ptd files) to see where its bytes go."));
}

void SizeView::buildTop() {
  // The file and the compare button on one row, the legend under them with the room it needs.
  auto* row = new QHBoxLayout;
  row->setSpacing(10);
  title_ = new QLabel;
  title_->setObjectName("sizeTitle");
  title_->setWordWrap(true);
  row->addWidget(title_, 1);
  // A .pte beside a .ptd of weights is a sliver when both are drawn to scale: each can be shown alone.
  fileChoice_ = new QComboBox;
  fileChoice_->setObjectName("sizeFileChoice");
  fileChoice_->setToolTip(tr("Show every file to scale, or one file alone"));
  connect(fileChoice_, &QComboBox::currentIndexChanged, this, [this] {
    selected_ = -1;
    details_->setText(hint());
    canvas_->invalidate();
  });
  row->addWidget(fileChoice_, 0, Qt::AlignTop);
  compareButton_ = new QPushButton(tr("Compare sizes with…"));
  compareButton_->setObjectName("compareSizes");
  compareButton_->setToolTip(tr("Another .pte or .ptd beside this one: the change per part and per item"));
  connect(compareButton_, &QPushButton::clicked, this, &SizeView::compareRequested);
  row->addWidget(compareButton_, 0, Qt::AlignTop);
  static_cast<QVBoxLayout*>(layout())->addLayout(row);
  legend_ = new QLabel;
  legend_->setObjectName("sizeLegend");
  legend_->setWordWrap(true);
  layout()->addWidget(legend_);
}

void SizeView::buildComparePane() {
  comparePane_ = new QWidget;
  auto* l = new QVBoxLayout(comparePane_);
  l->setContentsMargins(0, 2, 0, 0);
  l->setSpacing(2);
  auto* row = new QHBoxLayout;
  compareTitle_ = new QLabel;
  compareTitle_->setObjectName("compareMessage");
  compareTitle_->setWordWrap(true);
  compareTitle_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  row->addWidget(compareTitle_, 1);
  auto* close = new QPushButton(tr("Close"));
  close->setToolTip(tr("Close the comparison"));
  connect(close, &QPushButton::clicked, this, [this] {
    ++compareJob_;  // a comparison still loading is dropped
    compareBusy_ = false;
    comparePane_->hide();
  });
  row->addWidget(close, 0, Qt::AlignTop);
  l->addLayout(row);
  diffTable_ = new QTreeWidget;
  diffTable_->setObjectName("sizeDiff");
  diffTable_->setColumnCount(DiffColumnCount);
  diffTable_->setHeaderLabels({tr("Part, then the items that changed"), tr("This file"), tr("Other"), tr("Change")});
  diffTable_->headerItem()->setToolTip(DiffChange, tr("Other minus this file; sorts by the size of the change"));
  diffTable_->setUniformRowHeights(true);
  diffTable_->setAlternatingRowColors(true);
  diffTable_->setSortingEnabled(true);
  diffTable_->header()->setStretchLastSection(false);
  diffTable_->header()->setSectionResizeMode(DiffName, QHeaderView::Stretch);
  for (int c = DiffThis; c < DiffColumnCount; ++c) diffTable_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  l->addWidget(diffTable_, 1);
  comparePane_->hide();
}

void SizeView::setFiles(std::vector<SizeBreakdown> files, const QString& why) {
  files_ = std::move(files);
  selected_ = -1;
  ++compareJob_;  // a comparison is with the file shown: a new file ends it
  compareBusy_ = false;
  comparePane_->hide();
  diffTable_->clear();
  {
    QSignalBlocker block(fileChoice_);
    fileChoice_->clear();
    if (files_.size() > 1) {
      fileChoice_->addItem(tr("All files, to scale"));
      for (const SizeBreakdown& f : files_) fileChoice_->addItem(QFileInfo(q(f.file)).fileName());
    }
    fileChoice_->setVisible(files_.size() > 1);
  }
  canvas_->invalidate();
  compareButton_->setEnabled(!files_.empty());
  if (files_.empty()) {
    why_->setText(why);
    title_->clear();
    stack_->setCurrentWidget(why_);
    showLegend();
    return;
  }
  QStringList names;
  uint64_t all = 0;
  for (const SizeBreakdown& f : files_) {
    names << tr("<b>%1</b> %2").arg(QFileInfo(q(f.file)).fileName().toHtmlEscaped(), human(f.fileBytes));
    all += f.total();
  }
  title_->setText(files_.size() == 1 ? tr("%1: every byte in one block, sized by bytes").arg(names.first())
                                     : tr("%1 = %2: every byte of each file in one block").arg(names.join(" + "), human(all)));
  details_->setText(hint());
  stack_->setCurrentWidget(split_);
  showLegend();
}

void SizeView::showLegend() {
  // Only the kinds this file has, in a fixed order, so a colour always means the same.
  std::set<SizeKind> present;
  for (const SizeBreakdown& f : files_)
    for (const SizePart& p : f.parts) present.insert(sizeKindOf(p.name));
  QStringList chips;
  for (SizeKind k : present)
    chips << QStringLiteral("<span style=\"background:%1\">&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;%2")
                 .arg(sizeKindColor(k).name(), sizeKindName(k).replace(' ', "&nbsp;"));
  legend_->setText(chips.join(QStringLiteral(" &nbsp; ")));
  legend_->setVisible(!chips.isEmpty());
}

int SizeView::shownFile() const { return fileChoice_->currentIndex() > 0 ? fileChoice_->currentIndex() - 1 : -1; }

void SizeView::showFile(int file) {
  if (files_.size() > 1) fileChoice_->setCurrentIndex(file >= 0 && file < int(files_.size()) ? file + 1 : 0);
}

QString SizeView::hint() const {
  QString h = tr("Click a block for what it is; a constant or a delegate is selected in the graph and the "
                 "Constants table too. Small blocks tell their name on hover.");
  if (files_.size() > 1) h += tr(" Double-click a file to show it alone, again for all.");
  return h;
}

const std::vector<TreemapBlock>& SizeView::blocks() const { return canvas_->blocks(); }

QWidget* SizeView::canvas() const { return canvas_; }

int SizeView::blockAt(const QPointF& p) const {
  const auto& bs = blocks();
  for (int k = int(bs.size()) - 1; k >= 0; --k)  // children come after their parents
    if (bs[k].rect.contains(p)) return k;
  return -1;
}

const SizeItem* SizeView::itemOf(const TreemapBlock& b) const {
  if (b.level != TreemapBlock::Level::Item) return nullptr;
  const auto& items = files_[b.file].parts[b.part].items;
  return b.item < int(items.size()) ? &items[b.item] : nullptr;
}

QString SizeView::blockName(const TreemapBlock& b) const {
  const SizeBreakdown& f = files_[b.file];
  if (b.level == TreemapBlock::Level::File) return QFileInfo(q(f.file)).fileName();
  if (b.level == TreemapBlock::Level::Part) return q(f.parts[b.part].name);
  const SizeItem* item = itemOf(b);
  return item ? q(item->name) : tr("(not itemised)");
}

QString SizeView::blockSummary(const TreemapBlock& b) const {
  const SizeBreakdown& f = files_[b.file];
  const QString file = QFileInfo(q(f.file)).fileName().toHtmlEscaped();
  QString s = tr("<b>%1</b> — %2 (%3 bytes)").arg(blockName(b).toHtmlEscaped(), human(b.bytes)).arg(b.bytes);
  if (b.level == TreemapBlock::Level::File) {
    uint64_t all = 0;
    for (const SizeBreakdown& x : files_) all += x.total();
    return s + tr(", %1 of the files shown").arg(shareText(b.bytes, all));
  }
  s += tr(", %1 of %2").arg(shareText(b.bytes, f.total()), file);
  const std::string& part = f.parts[b.part].name;
  const QString what = partDescription(part);
  if (b.level == TreemapBlock::Level::Part) return what.isEmpty() ? s : s + "<br>" + what.toHtmlEscaped();
  s += tr("<br>in <i>%1</i>").arg(q(part).toHtmlEscaped());
  if (!what.isEmpty()) s += ": " + what.toHtmlEscaped();
  return s;
}

void SizeView::selectBlock(int index) {
  const auto& bs = blocks();
  selected_ = index >= 0 && index < int(bs.size()) ? index : -1;
  canvas_->update();
  if (selected_ < 0) return details_->setText(hint());
  const TreemapBlock& b = bs[selected_];
  details_->setText(blockSummary(b));
  const SizeItem* item = itemOf(b);
  if (!item) return;
  // A constant is selected by its name, a delegate's bytes by the call that runs it.
  const SizeKind kind = sizeKindOf(files_[b.file].parts[b.part].name);
  QString method;
  int delegate = -1;
  if (kind == SizeKind::Constants || kind == SizeKind::Mutable) emit constantActivated(q(item->name));
  else if ((kind == SizeKind::DelegateGraph || kind == SizeKind::DelegateData) && delegateOf(q(item->name), &method, &delegate))
    emit delegateActivated(method, delegate);
}

void SizeView::compareWith(const QString& path) {
  const int job = ++compareJob_;
  comparePane_->show();
  diffTable_->clear();
  if (files_.empty()) {
    showComparison({path.toStdString(), false, tr("there is no .pte or .ptd open to compare it with").toStdString(), {}});
    return;
  }
  compareBusy_ = true;
  compareTitle_->setText(tr("Reading %1…").arg(QFileInfo(path).fileName().toHtmlEscaped()));
  auto* watcher = new QFutureWatcher<LoadedSizes>(this);
  connect(watcher, &QFutureWatcher<LoadedSizes>::finished, this, [this, watcher, job] {
    watcher->deleteLater();
    if (job != compareJob_) return;  // another file, or closed, since
    compareBusy_ = false;
    showComparison(watcher->result());
  });
  const std::string p = path.toStdString();
  watcher->setFuture(QtConcurrent::run(inBackground([p] { return loadSizes(p); })));
}

void SizeView::showComparison(const LoadedSizes& other) {
  const QString otherName = QFileInfo(q(other.path)).fileName();
  if (!other.ok) {
    const QString message = tr("Cannot compare with %1: %2").arg(otherName, q(other.error));
    compareTitle_->setText("<span style=\"color:#B00020\">" + message.toHtmlEscaped() + "</span>");
    emit compareFinished(false, message);
    return;
  }
  const SizeBreakdown& a = files_.front();
  const QString thisName = QFileInfo(q(a.file)).fileName();
  compareTitle_->setText(tr("<b>%1</b> %2 → <b>%3</b> %4: %5")
                             .arg(thisName.toHtmlEscaped(), human(a.fileBytes), otherName.toHtmlEscaped(),
                                  human(other.sizes.fileBytes),
                                  signedHuman(int64_t(other.sizes.fileBytes) - int64_t(a.fileBytes))));
  diffTable_->headerItem()->setToolTip(DiffThis, thisName);
  diffTable_->headerItem()->setToolTip(DiffOther, otherName);
  diffTable_->setSortingEnabled(false);  // filled in the engine's order, largest change first
  const nlohmann::json diff = sizeDiffJson(a, other.sizes);
  for (const auto& part : diff["parts"]) {
    auto* row = new DiffItem(diffTable_);
    row->set(q(part["name"].get<std::string>()), part["a"].get<uint64_t>(), part["b"].get<uint64_t>());
    for (const auto& item : part["items"])
      (new DiffItem(row))->set(q(item["name"].get<std::string>()), item["a"].get<uint64_t>(), item["b"].get<uint64_t>());
    row->setExpanded(row->childCount() > 0 && row->childCount() <= 8);
  }
  diffTable_->setSortingEnabled(true);
  diffTable_->sortByColumn(DiffChange, Qt::DescendingOrder);
  emit compareFinished(true, {});
}

}  // namespace lstudio::ui
