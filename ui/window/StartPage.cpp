#include "ui/window/StartPage.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QVBoxLayout>

#include "engine/samples/SampleZoo.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

// Below this width the shortcuts go under the rest instead of beside it.
constexpr int kTwoColumns = 900;

QLabel* heading(const QString& text, QWidget* parent) {
  auto* l = new QLabel("<b>" + text.toHtmlEscaped() + "</b>", parent);
  l->setWordWrap(true);
  l->setContentsMargins(0, 14, 0, 2);
  return l;
}

/// A label whose links the page handles itself (sample:NAME, recent:INDEX).
QLabel* linkLabel(const QString& html, QWidget* parent) {
  auto* l = new QLabel(html, parent);
  l->setTextFormat(Qt::RichText);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
  return l;
}

QString sampleLink(const std::string& spec) {
  const QString s = q(spec).toHtmlEscaped();
  return QString("<a href=\"sample:%1\">%1</a>").arg(s);
}

}  // namespace

StartPage::StartPage(QWidget* parent) : QWidget(parent) {
  setObjectName("startPage");
  // A scroll area: the page stays whole in a small centre (1366×768 with every dock open).
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* body = new QWidget(scroll);
  scroll->setWidget(body);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(scroll);

  main_ = new QWidget(body);
  auto* left = new QVBoxLayout(main_);
  left->setContentsMargins(0, 0, 0, 0);
  auto* title = new QLabel(tr("<h2>Lowering Studio</h2><p>Open a torch.export <code>.pt2</code> or an ExecuTorch "
                              "<code>.pte</code> to run <code>to_executorch</code> one pass at a time, see the "
                              "graph and the memory plan after each pass, and export the result. "
                              "A file dropped on the window opens too.</p>"),
                           main_);
  title->setWordWrap(true);
  open_ = new QPushButton(tr("Open a Program…"), main_);
  open_->setObjectName("startOpen");
  open_->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Fixed);
  recent_ = linkLabel({}, main_);
  recent_->setObjectName("startRecent");
  left->addWidget(title);
  left->addWidget(open_);
  left->addWidget(heading(tr("Open a sample (built in memory, no file needed)"), main_));
  left->addWidget(buildSamples(main_));
  left->addWidget(heading(tr("Recent files"), main_));
  left->addWidget(recent_);
  left->addStretch(1);

  keys_ = new QWidget(body);
  auto* right = new QVBoxLayout(keys_);
  right->setContentsMargins(0, 0, 0, 0);
  shortcuts_ = new QLabel(keys_);
  shortcuts_->setObjectName("startShortcuts");
  shortcuts_->setTextFormat(Qt::RichText);
  right->addWidget(heading(tr("Keyboard shortcuts"), keys_));
  right->addWidget(shortcuts_);
  right->addStretch(1);

  grid_ = new QGridLayout(body);
  grid_->setContentsMargins(24, 8, 24, 16);
  grid_->setHorizontalSpacing(32);
  arrange();

  connect(open_, &QPushButton::clicked, this, &StartPage::openRequested);
  connect(recent_, &QLabel::linkActivated, this, &StartPage::activate);
  setRecentFiles({});
}

QWidget* StartPage::buildSamples(QWidget* parent) {
  // A label per cell: one rich-text table in a wrapping QLabel loses its last rows.
  samples_ = new QWidget(parent);
  samples_->setObjectName("startSamples");
  auto* grid = new QGridLayout(samples_);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setHorizontalSpacing(16);
  grid->setColumnStretch(1, 1);
  int row = 0;
  for (const SampleInfo& info : sampleList()) {
    // The line says what it shows; the command-line options stay in the tooltip.
    const QString full = q(info.description);
    QString what = full.section(" (--", 0, 0).toHtmlEscaped();
    for (const std::string& spec : info.variants) what += tr(" — also %1").arg(sampleLink(spec));
    auto* name = linkLabel(sampleLink(info.name), samples_);
    name->setWordWrap(false);
    auto* line = linkLabel(what, samples_);
    line->setToolTip(full);
    for (QLabel* l : {name, line}) connect(l, &QLabel::linkActivated, this, &StartPage::activate);
    grid->addWidget(name, row, 0, Qt::AlignTop);
    grid->addWidget(line, row++, 1, Qt::AlignTop);
  }
  return samples_;
}

void StartPage::arrange() {
  wide_ = width() >= kTwoColumns;
  grid_->removeWidget(main_);
  grid_->removeWidget(keys_);
  grid_->addWidget(main_, 0, 0);
  grid_->addWidget(keys_, wide_ ? 0 : 1, wide_ ? 1 : 0);
  grid_->setColumnStretch(0, 1);
}

void StartPage::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  if ((width() >= kTwoColumns) != wide_) arrange();
}

void StartPage::setRecentFiles(const QStringList& files) {
  recentFiles_ = files;
  if (files.isEmpty()) {
    recent_->setText(tr("<i>None yet: the files you open are listed here.</i>"));
    return;
  }
  // The file name to click, its folder beside it in grey; by index, so no path needs quoting in a link.
  QString s;
  for (int i = 0; i < files.size() && i < 8; ++i) {
    const QFileInfo f(files[i]);
    s += QString("<a href=\"recent:%1\">%2</a> <span style='color:gray'>%3</span><br>")
             .arg(i)
             .arg(f.fileName().toHtmlEscaped(), QDir::toNativeSeparators(f.absolutePath()).toHtmlEscaped());
  }
  recent_->setText(s);
}

void StartPage::setShortcuts(const QList<QAction*>& actions) {
  QString s = "<table cellspacing=3>";
  for (QAction* a : actions) {
    if (!a || a->shortcut().isEmpty()) continue;
    s += QString("<tr><td><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>")
             .arg(a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped(),
                  a->text().remove('&').remove(QChar(0x2026)).toHtmlEscaped());
  }
  shortcuts_->setText(s + "</table>");
}

void StartPage::activate(const QString& link) {
  if (link.startsWith("sample:")) {
    emit sampleRequested(link.mid(7));
  } else if (link.startsWith("recent:")) {
    const int i = link.mid(7).toInt();
    if (i >= 0 && i < recentFiles_.size()) emit recentRequested(recentFiles_[i]);
  }
}

}  // namespace lstudio::ui
