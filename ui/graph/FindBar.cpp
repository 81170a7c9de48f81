#include "ui/graph/FindBar.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QToolButton>

namespace lstudio::ui {

FindBar::FindBar(QWidget* parent) : QWidget(parent) {
  setObjectName("findBar");
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(6, 3, 6, 3);
  field_ = new QLineEdit;
  field_->setObjectName("findField");
  field_->setPlaceholderText(tr("Find node: name, operator or module path"));
  field_->setClearButtonEnabled(true);
  field_->installEventFilter(this);
  count_ = new QLabel;
  count_->setObjectName("findCount");
  count_->setMinimumWidth(count_->fontMetrics().horizontalAdvance("00000 of 00000"));
  auto button = [this](const QString& text, const QString& tip) {
    auto* b = new QToolButton;
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    return b;
  };
  previous_ = button(QStringLiteral("\u25b2"), tr("Previous match (Shift+F3, Shift+Enter)"));
  next_ = button(QStringLiteral("\u25bc"), tr("Next match (F3, Enter)"));
  close_ = button(QStringLiteral("\u2715"), tr("Close (Esc)"));
  row->addWidget(new QLabel(tr("Find:")));
  row->addWidget(field_, 1);
  row->addWidget(count_);
  row->addWidget(previous_);
  row->addWidget(next_);
  row->addWidget(close_);
  connect(field_, &QLineEdit::textEdited, this, &FindBar::textEdited);
  connect(previous_, &QToolButton::clicked, this, &FindBar::previous);
  connect(next_, &QToolButton::clicked, this, &FindBar::next);
  connect(close_, &QToolButton::clicked, this, [this] {
    hide();
    emit closed();
  });
  hide();
}

void FindBar::open() {
  show();
  field_->setFocus(Qt::ShortcutFocusReason);
  field_->selectAll();
}

QString FindBar::text() const { return field_->text(); }
void FindBar::setText(const QString& text) {
  if (field_->text() != text) field_->setText(text);
}

void FindBar::setCount(int current, int total) {
  if (field_->text().isEmpty()) count_->clear();
  else if (total == 0) count_->setText(tr("no match"));
  else if (current > 0) count_->setText(tr("%1 of %2").arg(current).arg(total));
  else count_->setText(total == 1 ? tr("1 match") : tr("%1 matches").arg(total));
  // A search that finds nothing shows it in the field too.
  field_->setStyleSheet(total == 0 && !field_->text().isEmpty() ? "QLineEdit { background: #fde0dc; }" : QString());
}

QString FindBar::countText() const { return count_->text(); }

bool FindBar::eventFilter(QObject* watched, QEvent* event) {
  if (watched != field_) return QWidget::eventFilter(watched, event);
  // Esc belongs to the bar while typing (the window's Esc cancels a load).
  if (event->type() == QEvent::ShortcutOverride && static_cast<QKeyEvent*>(event)->key() == Qt::Key_Escape) {
    event->accept();
    return true;
  }
  if (event->type() != QEvent::KeyPress) return false;
  auto* key = static_cast<QKeyEvent*>(event);
  if (key->key() == Qt::Key_Escape) {
    hide();
    emit closed();
    return true;
  }
  if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
    key->modifiers() & Qt::ShiftModifier ? emit previous() : emit next();
    return true;
  }
  return false;
}

}  // namespace lstudio::ui
