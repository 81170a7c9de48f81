// The config editor (a dock): every field of EdgeCompileConfig (to_edge) and
// ExecutorchBackendConfig under
// ExecuTorch's name, with a tooltip saying what it does. An edit is checked
// with validate() first: an invalid value shows its error next to the field
// and changes nothing; a valid one becomes an undoable step and is announced.
#pragma once

#include <QHash>
#include <QWidget>
#include <functional>

#include "engine/lowering/BackendConfig.h"

class QAction;
class QLabel;
class QUndoStack;
class QVBoxLayout;

namespace lstudio::ui {

class ConfigEditor : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigEditor(QWidget* parent = nullptr);

  /// Shows `c` without announcing it and starts a fresh undo history.
  void setConfig(const ExecutorchBackendConfig& c);
  /// The last valid config (an invalid value being typed is not part of it).
  ExecutorchBackendConfig config() const { return config_; }

  QAction* undoAction() const { return undoAction_; }
  QAction* redoAction() const { return redoAction_; }

  /// A change made elsewhere (the constant table's tagging rules): an
  /// undoable edit like the editor's own; announced by configChanged.
  void edit(const ExecutorchBackendConfig& c, const QString& what);
  /// Loading is an undoable edit; on failure `error` names file and field.
  bool loadFile(const QString& path, QString* error);
  bool saveFile(const QString& path, QString* error);
  /// What "Copy as Python" copies: configToPython(config()).
  QString pythonText() const;

  /// The error shown next to a field ("segment_alignment"), empty when none (tests).
  QString fieldError(const QString& field) const;
  /// The editor widget of a field, by ExecuTorch's name (tests, screenshots).
  QWidget* fieldEditor(const QString& field) const;

 signals:
  /// Only valid configs, after each edit, undo or redo.
  void configChanged(const lstudio::ExecutorchBackendConfig& c);

 private:
  friend class ConfigEditCommand;
  struct Field {
    QWidget* editor = nullptr;
    QLabel* error = nullptr;
    std::function<void(const ExecutorchBackendConfig&)> show;  // config -> widget
  };

  class Form;
  void buildUi();
  void buildToolBar(QVBoxLayout* outer);
  // One function per group of fields, in the order they are shown.
  void addEdgeFields(Form& form);
  void addPartitionerFields(Form& form);
  void addPlanningFields(Form& form);
  void addAlgorithmsField(Form& form);
  void addOutVarFields(Form& form);
  void addShapeFields(Form& form);
  void addLayoutFields(Form& form);
  void addConstantFields(Form& form);
  void addOptionalPassFields(Form& form);
  void addStudioFields(Form& form);
  void alignLabels(Form& form);
  /// Applies `change` to a copy of the config; commits it when valid, else shows why at the field.
  void propose(const QString& field, const std::function<bool(ExecutorchBackendConfig&, QString*)>& change);
  /// Checks without committing (live feedback while typing).
  void check(const QString& field, const std::function<bool(ExecutorchBackendConfig&, QString*)>& change);
  void apply(const ExecutorchBackendConfig& c);  // from the undo stack: show and announce
  void refresh();
  void showError(const QString& field, const QString& message);
  void clearErrors();
  void chooseAndLoad();
  void chooseAndSave();
  void copyPython();
  void setStatus(const QString& text, bool error);

  ExecutorchBackendConfig config_;
  QUndoStack* undo_ = nullptr;
  QAction* undoAction_ = nullptr;
  QAction* redoAction_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* rulesNote_ = nullptr;
  QHash<QString, Field> fields_;
  QStringList order_;  // fields in the order they are shown
  bool refreshing_ = false;
};

}  // namespace lstudio::ui
