// What the centre shows while nothing is open: open a file, open a sample
// (one line each on what it shows), the recent files and the main shortcuts.
#pragma once

#include <QList>
#include <QStringList>
#include <QWidget>

class QAction;
class QGridLayout;
class QLabel;
class QPushButton;

namespace lstudio::ui {

class StartPage : public QWidget {
  Q_OBJECT
 public:
  explicit StartPage(QWidget* parent = nullptr);

  void setRecentFiles(const QStringList& files);
  /// The shortcuts worth knowing first, read from the actions themselves so
  /// the page cannot tell of keys the menus no longer have.
  void setShortcuts(const QList<QAction*>& actions);
  QPushButton* openButton() const { return open_; }
  /// The sample rows: a link per sample (sample:NAME) and its line on what it shows.
  QWidget* samples() const { return samples_; }
  QLabel* recent() const { return recent_; }
  QLabel* shortcuts() const { return shortcuts_; }

 signals:
  void openRequested();
  /// A sample spec as File > Open Sample takes it ("llama --attention static").
  void sampleRequested(const QString& spec);
  void recentRequested(const QString& path);

 private:
  void activate(const QString& link);
  QWidget* buildSamples(QWidget* parent);
  /// Shortcuts beside the rest when the centre is wide, under it when narrow.
  void arrange();
  void resizeEvent(QResizeEvent* e) override;

  QPushButton* open_ = nullptr;
  QWidget* samples_ = nullptr;
  QGridLayout* grid_ = nullptr;
  QWidget* main_ = nullptr;
  QWidget* keys_ = nullptr;
  bool wide_ = false;
  QLabel* recent_ = nullptr;
  QLabel* shortcuts_ = nullptr;
  QStringList recentFiles_;
};

}  // namespace lstudio::ui
