// The find bar over the graph (Ctrl+F): a field, "3 of 17", previous and
// next, close. It only asks; the window searches the shown method and tells
// it where the selection is among the matches.
#pragma once

#include <QWidget>

class QLabel;
class QLineEdit;
class QToolButton;

namespace lstudio::ui {

class FindBar : public QWidget {
  Q_OBJECT
 public:
  explicit FindBar(QWidget* parent = nullptr);

  /// Shows the bar with its text selected, ready for typing.
  void open();
  QString text() const;
  void setText(const QString& text);
  /// `current` is 1-based, 0 when the selection is not a match; `total` 0 says "no match".
  void setCount(int current, int total);
  QString countText() const;
  QLineEdit* field() const { return field_; }

 signals:
  void textEdited(const QString& text);
  void next();
  void previous();
  void closed();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QLineEdit* field_ = nullptr;
  QLabel* count_ = nullptr;
  QToolButton *previous_ = nullptr, *next_ = nullptr, *close_ = nullptr;
};

}  // namespace lstudio::ui
