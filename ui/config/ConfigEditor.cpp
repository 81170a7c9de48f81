#include "ui/config/ConfigEditor.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QSignalBlocker>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>

#include "engine/support/AtomicFile.h"
#include "engine/lowering/ConfigPython.h"

namespace lstudio::ui {

/// One undoable change: the whole config before and after (small, and undo then never drifts).
class ConfigEditCommand : public QUndoCommand {
 public:
  ConfigEditCommand(ConfigEditor* editor, ExecutorchBackendConfig before, ExecutorchBackendConfig after, const QString& text)
      : QUndoCommand(text), editor_(editor), before_(std::move(before)), after_(std::move(after)) {}
  void redo() override { editor_->apply(after_); }
  void undo() override { editor_->apply(before_); }

 private:
  ConfigEditor* editor_;
  ExecutorchBackendConfig before_, after_;
};

namespace {

using Change = std::function<bool(ExecutorchBackendConfig&, QString*)>;

/// "config field 'segment_alignment'" -> "segment_alignment".
QString fieldOf(const Error& e) {
  QString what = QString::fromStdString(e.what);
  int a = what.indexOf('\''), b = what.lastIndexOf('\'');
  return a >= 0 && b > a ? what.mid(a + 1, b - a - 1) : QString();
}

QString shortMessage(const Error& e) {
  QString m = "expected " + QString::fromStdString(e.expected);
  if (!e.found.empty()) m += ", found " + QString::fromStdString(e.found);
  return m;
}

bool parseUnsigned(const QString& text, uint64_t* out, QString* why) {
  bool ok = false;
  qulonglong v = text.trimmed().toULongLong(&ok);
  if (!ok) {
    *why = QString("expected a positive integer, found \"%1\"").arg(text.trimmed());
    return false;
  }
  *out = v;
  return true;
}

QStringList splitOps(const QString& text) {
  QStringList out;
  for (const QString& part : text.split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) out << part;
  return out;
}

bool sameConfig(const ExecutorchBackendConfig& a, const ExecutorchBackendConfig& b) {
  return configToJson(a) == configToJson(b);
}

// What each field does, in the studio's words (after exir/capture/_config.py and the passes).
const char* tipFor(const QString& f) {
  static const QHash<QString, const char*> tips = {
      {"edge_compile_config._check_ir_validity",
       "to_edge checks that every operator left after the decompositions is core ATen (EXIRATenDialectVerifier). "
       "Off: the check is skipped and any operator is lowered as it is."},
      {"edge_compile_config._skip_dim_order",
       "Keep memory_format operators (clone, _to_copy, empty) instead of their dim-order forms: MemoryFormatOpsPass "
       "and LegalizePortableDimOrderPass do not run."},
      {"edge_compile_config._core_aten_ops_exception_list",
       "Non-core ATen operators the ATen dialect check lets through (they are still decomposed where a decomposition "
       "exists), comma separated (\"aten::linear\")."},
      {"edge_compile_config.preserve_ops",
       "ATen operators kept whole: not decomposed, and let through the check, comma separated (\"aten::linear\"). "
       "Views cannot be preserved. The runtime needs a kernel for each."},
      {"memory_planning_pass.algorithms",
       "Planning algorithms to run. Each one lays out the planned tensors in the arena; the smallest plan wins. "
       "et-greedy is ExecuTorch's greedy; best-fit and naive are the studio's."},
      {"memory_planning_pass.alloc_graph_input",
       "Give the method's inputs space in the planned arena. Off: the caller provides input memory at run time."},
      {"memory_planning_pass.alloc_graph_output",
       "Give the method's outputs space in the planned arena. Off: the caller provides output memory at run time."},
      {"memory_planning_pass.alloc_mutable_buffers",
       "Plan mutable buffers (KV caches, running statistics) into the arena. Off: they are left for the runtime to place."},
      {"memory_planning_pass.share_mutable_buffers",
       "Let methods of one program share the memory of mutable buffers with the same name (needs alloc_mutable_buffers)."},
      {"memory_planning_pass.alignment",
       "Byte alignment of every planned tensor's offset in the arena. Must be a power of two."},
      {"to_out_var_pass.ignore_to_out_var_failure",
       "When an operator has no out variant, keep the functional call instead of failing the lowering."},
      {"dynamic_memory_planning_mode",
       "How tensors with symbolic sizes are planned: upper_bound uses the largest size the shape constraints allow; "
       "hint uses the example size (ExecuTorch's SYMBOLIC mode)."},
      {"emit_stacktrace", "Store each instruction's Python stack trace in the program (bigger file, better runtime errors)."},
      {"extract_delegate_segments",
       "Move delegate blobs out of the flatbuffer into separate segments after it, so the runtime can free them."},
      {"segment_alignment", "Alignment in bytes of each segment's start in the .pte file. Must be a power of two."},
      {"constant_tensor_alignment",
       "Minimum alignment of constant tensor data in the program. Empty: the schema's default. Must be a power of two."},
      {"delegate_alignment",
       "Minimum alignment of delegate data in the program. Empty: the schema's default. Must be a power of two."},
      {"sym_shape_eval_pass",
       "How symbolic shapes become concrete sizes before planning: upper_bound (ConstraintBasedSymShapeEvalPass) takes "
       "the largest value the constraints allow; hint (HintBasedSymShapeEvalPass) takes the example value."},
      {"remove_view_copy",
       "Turn view_copy operations into views that share their input's memory; static views vanish from the program."},
      {"external_constants",
       "Store constant tensors outside the .pte. On without rules: every constant (except lifted tensor constants) goes "
       "to _default_external_constant.ptd. With rules (constant table): the first matching rule picks the file."},
      {"external_mutable_weights",
       "Store the trainable weights of a training program (parameters that receive a gradient) in a separate .ptd file."},
      {"emit_mutable_buffer_names",
       "Write the fully qualified names of mutable buffers into the program, so the runtime can find them by name."},
      {"do_quant_fusion_and_const_prop",
       "Fuse quantize/dequantize patterns into quantized operators and fold constant computations before lowering."},
      {"run_reinplace_pass",
       "Experimental: rewrite functional operators to in-place ones when the input is not used afterwards."},
      {"reinplace_extra_ops",
       "Extra operators the reinplace pass may make in-place, comma separated (\"aten::index_put\")."},
      {"passes",
       "passes=[InitializedMutableBufferPass(patterns)]: mutable buffers whose names contain one of these patterns "
       "(comma separated, e.g. \"cache_pos\") keep their initial values in the program's mutable data segment; "
       "others start uninitialized. ExecuTorch takes any pass objects here; the studio runs this one."},
      {"enable_non_cpu_memory_planning",
       "Plan tensors a delegate places on another device in their own arenas. The studio plans CPU programs only, "
       "where on and off give the same plan."},
      {"propagate_device_config.skip_h2d_for_method_inputs",
       "Inputs a device delegate reads stay where the caller put them: the runtime copies them to the device "
       "only when this is off (pair with alloc_graph_input off). The studio plans CPU programs only, where it "
       "changes nothing. Checked: every method; partly checked: per method, as the JSON gives."},
      {"propagate_device_config.skip_d2h_for_method_outputs",
       "Outputs a device delegate writes stay on the device: the runtime copies them back only when this is off "
       "(pair with alloc_graph_output off). The studio plans CPU programs only, where it changes nothing."},
      {"partitioner",
       "to_edge_transform_and_lower(partitioner=[XnnpackPartitioner()]): the operators XNNPACK takes are tagged by "
       "partition (a band on their boxes; a node left out says why in its tooltip and the Inspector), then to_backend "
       "makes each partition one delegate call (Run runs its lowered module). Export waits for XNNPACK's payload, "
       "which the studio does not compile yet."},
      {"partitioner.config_precisions",
       "XnnpackPartitioner(config_precisions=...): which precisions its configs take, comma separated; empty: all."},
      {"partitioner.per_op_mode", "One partition per matched operator (and what it takes with it), none merged."},
      {"partitioner.force_non_static_weights_for_f32_linear",
       "Float linear, addmm and mm take weights and biases that are not constants (computed or inputs)."},
      {"partitioner.enable_bf16", "bfloat16 tensors are taken as well as float32 and float16."},
      {"studio_memory_aware_order",
       "Beyond ExecuTorch, which has no such field: before memory planning, reorder operators that do not depend on "
       "each other to lower the peak of live bytes (MemoryAwareOrderPass), and let elementwise results take the bytes "
       "of an argument that dies there. The Memory Plan shows the bound this reaches beside the bound as ordered. "
       "Copy as Python writes it as a comment."},
  };
  return tips.value(f, "");
}

}  // namespace

ConfigEditor::ConfigEditor(QWidget* parent) : QWidget(parent) {
  undo_ = new QUndoStack(this);
  undoAction_ = undo_->createUndoAction(this, tr("Undo"));
  redoAction_ = undo_->createRedoAction(this, tr("Redo"));
  // Window-wide keys: the main window also lists these actions in its Edit menu, which keeps
  // them live while the Config dock is hidden behind the Inspector. A text field being edited
  // still takes Ctrl+Z for its own text first.
  undoAction_->setShortcut(QKeySequence::Undo);
  redoAction_->setShortcut(QKeySequence::Redo);
  addAction(undoAction_);
  addAction(redoAction_);
  buildUi();
  refresh();
}

/// The form being filled while the editor is built: rows go into the current
/// group's box; every row is a field under ExecuTorch's name.
class ConfigEditor::Form {
 public:
  Form(ConfigEditor* editor, QWidget* body, QVBoxLayout* layout) : editor_(editor), body_(body), layout_(layout) {}

  QWidget* body() const { return body_; }
  QFormLayout* form() const { return form_; }
  const QFont& mono() const { return mono_; }

  /// Starts a group box; the rows after it go into it.
  void group(const QString& title) {
    auto* box = new QGroupBox(title, body_);
    form_ = new QFormLayout(box);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form_->setLabelAlignment(Qt::AlignLeft);
    // In a narrow dock a field that does not fit beside its name goes under it, never off-screen.
    form_->setRowWrapPolicy(QFormLayout::WrapLongRows);
    layout_->addWidget(box);
  }

  /// Adds a row: ExecuTorch's (short) name, the editor, and an error line under both.
  /// `wide`: the editor gets a row of its own under the name (lists of operators need the width).
  void addRow(const QString& key, QWidget* editor, std::function<void(const ExecutorchBackendConfig&)> show,
              bool wide = false) {
    QString shortName = key.section('.', -1);
    auto* label = new QLabel(shortName, body_);
    label->setFont(mono_);
    label->setToolTip(QString("<b>%1</b><br>%2").arg(key, tipFor(key)));
    editor->setToolTip(label->toolTip());
    editor->setObjectName(key);
    auto* error = new QLabel(body_);
    error->setObjectName(key + ".error");
    error->setWordWrap(true);
    error->setStyleSheet("color: #c62828;");
    error->hide();
    if (wide) {
      label->setProperty("wideRow", true);  // not part of the label column alignLabels lines up
      form_->addRow(label);
      form_->addRow(editor);
    } else {
      form_->addRow(label, editor);
    }
    // The whole width of the group, not the field's column: a message wraps instead of being cut.
    form_->addRow(error);
    editor_->fields_.insert(key, Field{editor, error, std::move(show)});
    editor_->order_ << key;
  }

  /// A flag of the config; `flag` ([](auto& c) -> auto& {...}) picks it, const or not.
  template <class Flag>
  void flagBox(const QString& key, Flag flag) {
    auto* box = new QCheckBox(body_);
    addRow(key, box, [box, flag](const ExecutorchBackendConfig& c) { box->setChecked(flag(c)); });
    ConfigEditor* ed = editor_;
    QObject::connect(box, &QCheckBox::toggled, ed, [ed, key, flag](bool on) {
      ed->propose(key, [flag, on](ExecutorchBackendConfig& c, QString*) { return flag(c) = on, true; });
    });
  }

  void checkBox(const QString& key, bool ExecutorchBackendConfig::*member) {
    flagBox(key, [member](auto& c) -> auto& { return c.*member; });
  }

  /// A flag of propagate_device_config, for every method. Per-method values (a
  /// dict, from JSON) show as a partly checked box; checking it sets every method.
  void deviceBox(const QString& key, PerMethodFlag PropagateDeviceConfig::*member) {
    auto* box = new QCheckBox(body_);
    addRow(key, box, [box, member](const ExecutorchBackendConfig& c) {
      const PerMethodFlag& f = c.propagateDevice.*member;
      QSignalBlocker quiet(box);
      box->setTristate(!f.byMethod.empty());
      box->setCheckState(!f.byMethod.empty() ? Qt::PartiallyChecked : f.all ? Qt::Checked : Qt::Unchecked);
    });
    ConfigEditor* ed = editor_;
    QObject::connect(box, &QCheckBox::clicked, ed, [ed, key, member, box](bool on) {
      box->setTristate(false);
      ed->propose(key, [member, on](ExecutorchBackendConfig& c, QString*) {
        c.propagateDevice.*member = PerMethodFlag{on, {}};
        return true;
      });
    });
  }

  void edgeBox(const QString& key, bool EdgeCompileConfig::*member) {
    flagBox(key, [member](auto& c) -> auto& { return c.edgeCompile.*member; });
  }

  /// A list of operators typed comma separated; `member` ([](auto& c) -> auto& {...}) picks the list in the config.
  template <class Member>
  void operatorList(const QString& key, Member member) {
    numberEdit(
        key,
        [member](ExecutorchBackendConfig& c, const QString& t, QString*) {
          std::vector<std::string>& ops = member(c);
          ops.clear();
          for (const QString& op : splitOps(t)) ops.push_back(op.toStdString());
          return true;
        },
        [member](const ExecutorchBackendConfig& c) {
          QStringList ops;
          for (const auto& op : member(c)) ops << QString::fromStdString(op);
          return ops.join(", ");
        },
        QObject::tr("None"), /*wide=*/true);
  }

  void planningBox(const QString& key, bool MemoryPlanningConfig::*member) {
    flagBox(key, [member](auto& c) -> auto& { return c.memoryPlanning.*member; });
  }

  /// A number typed in a line edit: checked while typing, committed on Return or focus out.
  void numberEdit(const QString& key, std::function<bool(ExecutorchBackendConfig&, const QString&, QString*)> set,
                  std::function<QString(const ExecutorchBackendConfig&)> get, const QString& placeholder,
                  bool wide = false) {
    auto* edit = new QLineEdit(body_);
    edit->setPlaceholderText(placeholder);
    addRow(
        key, edit, [edit, get](const ExecutorchBackendConfig& c) {
          if (edit->text() != get(c)) edit->setText(get(c));
        },
        wide);
    auto change = [edit, set](ExecutorchBackendConfig& c, QString* why) { return set(c, edit->text(), why); };
    ConfigEditor* ed = editor_;
    QObject::connect(edit, &QLineEdit::textEdited, ed, [ed, key, change] { ed->check(key, change); });
    QObject::connect(edit, &QLineEdit::editingFinished, ed, [ed, key, change] { ed->propose(key, change); });
  }

  void modeCombo(const QString& key, std::string ExecutorchBackendConfig::*member) {
    auto* combo = new QComboBox(body_);
    combo->addItems({"upper_bound", "hint"});
    addRow(key, combo, [combo, member](const ExecutorchBackendConfig& c) {
      combo->setCurrentText(QString::fromStdString(c.*member));
    });
    ConfigEditor* ed = editor_;
    QObject::connect(combo, &QComboBox::currentTextChanged, ed, [ed, key, member](const QString& t) {
      ed->propose(key, [member, t](ExecutorchBackendConfig& c, QString*) { return c.*member = t.toStdString(), true; });
    });
  }

 private:
  ConfigEditor* editor_;
  QWidget* body_;
  QVBoxLayout* layout_;
  QFormLayout* form_ = nullptr;
  QFont mono_ = QFontDatabase::systemFont(QFontDatabase::FixedFont);
};

namespace {

using NumberSetter = std::function<bool(ExecutorchBackendConfig&, const QString&, QString*)>;
using NumberGetter = std::function<QString(const ExecutorchBackendConfig&)>;

NumberSetter alignment(uint64_t ExecutorchBackendConfig::*member) {
  return [member](ExecutorchBackendConfig& c, const QString& t, QString* why) { return parseUnsigned(t, &(c.*member), why); };
}

// An alignment that may be unset: empty or "None" leaves it to the schema.
NumberSetter optionalAlignment(std::optional<uint64_t> ExecutorchBackendConfig::*member) {
  return [member](ExecutorchBackendConfig& c, const QString& t, QString* why) {
    if (t.trimmed().isEmpty() || t.trimmed() == "None") return (c.*member).reset(), true;
    uint64_t v = 0;
    if (!parseUnsigned(t, &v, why)) return false;
    c.*member = v;
    return true;
  };
}

NumberGetter optionalText(std::optional<uint64_t> ExecutorchBackendConfig::*member) {
  return [member](const ExecutorchBackendConfig& c) { return c.*member ? QString::number(*(c.*member)) : QString(); };
}

}  // namespace

void ConfigEditor::buildUi() {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->setSpacing(0);
  buildToolBar(outer);

  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setContentsMargins(8, 4, 8, 4);
  status_->hide();
  outer->addWidget(status_);

  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  // The form fits the dock's width (rows wrap); only the height scrolls.
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* body = new QWidget(scroll);
  auto* bodyLayout = new QVBoxLayout(body);
  scroll->setWidget(body);
  outer->addWidget(scroll, 1);

  Form form(this, body, bodyLayout);
  addEdgeFields(form);
  addPartitionerFields(form);
  addPlanningFields(form);
  addOutVarFields(form);
  addShapeFields(form);
  addLayoutFields(form);
  addConstantFields(form);
  addOptionalPassFields(form);
  addStudioFields(form);
  bodyLayout->addStretch();
  alignLabels(form);
}

void ConfigEditor::buildToolBar(QVBoxLayout* outer) {
  auto* bar = new QToolBar(this);
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  // Fixed labels (the undo stack's own actions grow to "Undo Change memory_planning_pass
  // .alignment" and pushed Load, Save and Copy as Python into an overflow menu); what they
  // undo or redo is in their tooltips.
  auto button = [&](const QString& text, QAction* stackAction) {
    QAction* a = bar->addAction(text, stackAction, &QAction::trigger);
    auto sync = [a, stackAction] {
      a->setEnabled(stackAction->isEnabled());
      a->setToolTip(stackAction->text() + " (" + stackAction->shortcut().toString(QKeySequence::NativeText) + ")");
    };
    connect(stackAction, &QAction::changed, a, sync);
    sync();
  };
  button(tr("Undo"), undoAction_);
  button(tr("Redo"), redoAction_);
  bar->addSeparator();
  bar->addAction(tr("Load…"), this, &ConfigEditor::chooseAndLoad)->setToolTip(tr("Load a config from a JSON file"));
  bar->addAction(tr("Save…"), this, &ConfigEditor::chooseAndSave)->setToolTip(tr("Save the config as JSON"));
  bar->addSeparator();
  bar->addAction(tr("Copy as Python"), this, &ConfigEditor::copyPython)
      ->setToolTip(tr("Copy the equivalent ExecutorchBackendConfig(...) call to the clipboard"));
  outer->addWidget(bar);
}

void ConfigEditor::addPlanningFields(Form& form) {
  form.group("memory_planning_pass");
  // A config file may give one pass per method (a dict): the fields below are then
  // not used, and the group says so rather than edit a pass no method runs.
  auto* perMethod = new QLabel(form.body());
  perMethod->setObjectName("memory_planning_pass.per_method");
  perMethod->setWordWrap(true);
  perMethod->hide();
  form.form()->addRow(perMethod);
  auto* perMethodError = new QLabel(form.body());
  perMethodError->hide();
  form.form()->addRow(perMethodError);
  fields_.insert("memory_planning_pass.per_method",
                 Field{perMethod, perMethodError, [perMethod](const ExecutorchBackendConfig& c) {
                         QStringList methods;
                         for (const auto& [name, mp] : c.memoryPlanningPerMethod) methods << QString::fromStdString(name);
                         perMethod->setText(tr("Set per method in the config file (%1); a method not listed gets "
                                               "MemoryPlanningPass()'s defaults. Edit the file to change them.")
                                                .arg(methods.join(", ")));
                         perMethod->setVisible(!methods.isEmpty());
                         if (auto* box = perMethod->parentWidget())
                           for (QWidget* w : box->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly))
                             if (w != perMethod) w->setEnabled(methods.isEmpty());
                       }});
  order_ << "memory_planning_pass.per_method";
  addAlgorithmsField(form);
  form.planningBox("memory_planning_pass.alloc_graph_input", &MemoryPlanningConfig::allocGraphInput);
  form.planningBox("memory_planning_pass.alloc_graph_output", &MemoryPlanningConfig::allocGraphOutput);
  form.planningBox("memory_planning_pass.alloc_mutable_buffers", &MemoryPlanningConfig::allocMutableBuffers);
  form.planningBox("memory_planning_pass.share_mutable_buffers", &MemoryPlanningConfig::shareMutableBuffers);
  form.numberEdit(
      "memory_planning_pass.alignment",
      [](ExecutorchBackendConfig& c, const QString& t, QString* why) { return parseUnsigned(t, &c.memoryPlanning.alignment, why); },
      [](const ExecutorchBackendConfig& c) { return QString::number(c.memoryPlanning.alignment); }, "16");
  // A top-level field, beside the planner it steers (PropagateDevicePass hands it over).
  form.group(tr("Devices"));
  form.checkBox("enable_non_cpu_memory_planning", &ExecutorchBackendConfig::enableNonCpuMemoryPlanning);
  form.deviceBox("propagate_device_config.skip_h2d_for_method_inputs", &PropagateDeviceConfig::skipH2dForMethodInputs);
  form.deviceBox("propagate_device_config.skip_d2h_for_method_outputs", &PropagateDeviceConfig::skipD2hForMethodOutputs);
}

void ConfigEditor::addAlgorithmsField(Form& form) {
  // A check box per planning algorithm; the list keeps the order they were turned on in.
  auto* algos = new QWidget(form.body());
  auto* h = new QHBoxLayout(algos);
  h->setContentsMargins(0, 0, 0, 0);
  QList<QCheckBox*> boxes;
  for (const char* name : {"et-greedy", "best-fit", "naive"}) {
    auto* b = new QCheckBox(name, algos);
    b->setObjectName(QString("algorithm.") + name);
    h->addWidget(b);
    boxes << b;
    connect(b, &QCheckBox::toggled, this, [this, name](bool on) {
      propose("memory_planning_pass.algorithms", [name, on](ExecutorchBackendConfig& c, QString*) {
        auto& list = c.memoryPlanning.algorithms;
        std::erase(list, std::string(name));
        if (on) list.push_back(name);
        return true;
      });
    });
  }
  h->addStretch();
  form.addRow("memory_planning_pass.algorithms", algos, [boxes](const ExecutorchBackendConfig& c) {
    for (QCheckBox* b : boxes) {
      const auto& list = c.memoryPlanning.algorithms;
      b->setChecked(std::find(list.begin(), list.end(), b->text().toStdString()) != list.end());
    }
  });
}

void ConfigEditor::addOutVarFields(Form& form) {
  form.group("to_out_var_pass");
  form.checkBox("to_out_var_pass.ignore_to_out_var_failure", &ExecutorchBackendConfig::ignoreToOutVarFailure);
}

void ConfigEditor::addShapeFields(Form& form) {
  form.group(tr("Shapes and views"));
  form.modeCombo("dynamic_memory_planning_mode", &ExecutorchBackendConfig::dynamicMemoryPlanningMode);
  form.modeCombo("sym_shape_eval_pass", &ExecutorchBackendConfig::symShapeEval);
  form.checkBox("remove_view_copy", &ExecutorchBackendConfig::removeViewCopy);
}

void ConfigEditor::addLayoutFields(Form& form) {
  form.group(tr("Program layout"));
  form.checkBox("emit_stacktrace", &ExecutorchBackendConfig::emitStacktrace);
  form.checkBox("extract_delegate_segments", &ExecutorchBackendConfig::extractDelegateSegments);
  form.numberEdit("segment_alignment", alignment(&ExecutorchBackendConfig::segmentAlignment),
                  [](const ExecutorchBackendConfig& c) { return QString::number(c.segmentAlignment); }, "128");
  form.numberEdit("constant_tensor_alignment", optionalAlignment(&ExecutorchBackendConfig::constantTensorAlignment),
                  optionalText(&ExecutorchBackendConfig::constantTensorAlignment), tr("None (schema default)"));
  form.numberEdit("delegate_alignment", optionalAlignment(&ExecutorchBackendConfig::delegateAlignment),
                  optionalText(&ExecutorchBackendConfig::delegateAlignment), tr("None (schema default)"));
  form.checkBox("emit_mutable_buffer_names", &ExecutorchBackendConfig::emitMutableBufferNames);
}

void ConfigEditor::addConstantFields(Form& form) {
  form.group(tr("Constants"));
  form.checkBox("external_constants", &ExecutorchBackendConfig::externalConstants);
  // Under external_constants: whether the constant table's tagging rules decide the files.
  rulesNote_ = new QLabel(form.body());
  rulesNote_->setWordWrap(true);
  rulesNote_->setStyleSheet("color: palette(placeholder-text);");
  form.form()->addRow(QString(), rulesNote_);
  form.checkBox("external_mutable_weights", &ExecutorchBackendConfig::externalMutableWeights);
}

void ConfigEditor::addOptionalPassFields(Form& form) {
  form.group(tr("Optional passes"));
  form.checkBox("do_quant_fusion_and_const_prop", &ExecutorchBackendConfig::doQuantFusionAndConstProp);
  form.checkBox("run_reinplace_pass", &ExecutorchBackendConfig::runReinplacePass);
  form.operatorList("reinplace_extra_ops", [](auto& c) -> auto& { return c.reinplaceExtraOps; });
  // passes=[InitializedMutableBufferPass(patterns)]: the patterns, comma separated.
  form.operatorList("passes", [](auto& c) -> auto& { return c.initializedMutableBuffers; });
}

void ConfigEditor::addStudioFields(Form& form) {
  // Fields ExecuTorch does not have: the studio's own, kept apart and named so.
  form.group(tr("Beyond ExecuTorch (studio only)"));
  form.checkBox("studio_memory_aware_order", &ExecutorchBackendConfig::studioMemoryAwareOrder);
}

void ConfigEditor::addEdgeFields(Form& form) {
  form.group(tr("to_edge (EdgeCompileConfig)"));
  form.edgeBox("edge_compile_config._check_ir_validity", &EdgeCompileConfig::checkIrValidity);
  form.edgeBox("edge_compile_config._skip_dim_order", &EdgeCompileConfig::skipDimOrder);
  form.operatorList("edge_compile_config._core_aten_ops_exception_list",
                    [](auto& c) -> auto& { return c.edgeCompile.coreAtenOpsExceptionList; });
  form.operatorList("edge_compile_config.preserve_ops",
                    [](auto& c) -> auto& { return c.edgeCompile.preserveOps; });
}

void ConfigEditor::addPartitionerFields(Form& form) {
  // to_edge_transform_and_lower(partitioner=[XnnpackPartitioner(...)]): on, the options of the one partitioner.
  form.group(tr("Partitioner (to_edge_transform_and_lower)"));
  auto* on = new QCheckBox(tr("XnnpackPartitioner"), form.body());
  on->setObjectName("partitioner.xnnpack");
  form.addRow("partitioner", on, [on](const ExecutorchBackendConfig& c) {
    QSignalBlocker quiet(on);
    on->setChecked(!c.partitioners.empty());
  });
  connect(on, &QCheckBox::toggled, this, [this](bool checked) {
    propose("partitioner", [checked](ExecutorchBackendConfig& c, QString*) {
      if (checked && c.partitioners.empty()) c.partitioners.push_back(PartitionerSpec{});
      if (!checked) c.partitioners.clear();
      return true;
    });
  });
  // Its options act on the first partitioner (and turn it on).
  auto option = [&](const QString& key, bool PartitionerSpec::*member) {
    auto* box = new QCheckBox(form.body());
    form.addRow("partitioner." + key, box, [box, member](const ExecutorchBackendConfig& c) {
      QSignalBlocker quiet(box);
      box->setChecked(!c.partitioners.empty() && c.partitioners.front().*member);
    });
    connect(box, &QCheckBox::toggled, this, [this, key, member](bool checked) {
      propose("partitioner." + key, [member, checked](ExecutorchBackendConfig& c, QString*) {
        if (c.partitioners.empty()) c.partitioners.push_back(PartitionerSpec{});
        c.partitioners.front().*member = checked;
        return true;
      });
    });
  };
  form.numberEdit(
      "partitioner.config_precisions",
      [](ExecutorchBackendConfig& c, const QString& t, QString* why) {
        std::vector<std::string> list;
        for (const QString& x : splitOps(t)) {
          const QString p = x.trimmed().toUpper();
          if (p != "FP32" && p != "STATIC_QUANT" && p != "DYNAMIC_QUANT") {
            if (why) *why = tr("%1 is not FP32, STATIC_QUANT or DYNAMIC_QUANT").arg(x);
            return false;
          }
          list.push_back(p.toStdString());
        }
        if (c.partitioners.empty() && !list.empty()) c.partitioners.push_back(PartitionerSpec{});
        if (!c.partitioners.empty()) c.partitioners.front().configPrecisions = list;
        return true;
      },
      [](const ExecutorchBackendConfig& c) {
        QStringList xs;
        if (!c.partitioners.empty())
          for (const auto& p : c.partitioners.front().configPrecisions) xs << QString::fromStdString(p);
        return xs.join(", ");
      },
      tr("every precision (FP32, STATIC_QUANT, DYNAMIC_QUANT)"), /*wide=*/true);
  option("per_op_mode", &PartitionerSpec::perOpMode);
  option("force_non_static_weights_for_f32_linear", &PartitionerSpec::forceNonStaticWeightsForF32Linear);
  option("enable_bf16", &PartitionerSpec::enableBf16);
}

void ConfigEditor::alignLabels(Form& form) {
  // One label width across the groups, so the editors line up in a single column.
  int widest = 0;
  auto inColumn = [&](QLabel* label) { return label->font() == form.mono() && !label->property("wideRow").toBool(); };
  for (auto* label : form.body()->findChildren<QLabel*>())
    if (inColumn(label)) widest = std::max(widest, label->sizeHint().width());
  for (auto* label : form.body()->findChildren<QLabel*>())
    if (inColumn(label)) label->setMinimumWidth(widest);
}

void ConfigEditor::setConfig(const ExecutorchBackendConfig& c) {
  config_ = c;
  undo_->clear();
  clearErrors();
  refresh();
}

void ConfigEditor::refresh() {
  refreshing_ = true;
  for (const QString& key : order_) {
    const Field& f = fields_[key];
    QSignalBlocker block(f.editor);
    for (QObject* child : f.editor->children()) child->blockSignals(true);
    f.show(config_);
    for (QObject* child : f.editor->children()) child->blockSignals(false);
  }
  size_t n = config_.externalConstantRules.size();
  if (n == 0)
    rulesNote_->setText(config_.externalConstants ? tr("No rules: every constant goes to _default_external_constant.ptd.")
                                                  : tr("Tagging rules are edited in the constant table."));
  else
    rulesNote_->setText(config_.externalConstants
                            ? tr("%n tagging rule(s) decide each constant's file (edit them in the constant table).", "", int(n))
                            : tr("%n tagging rule(s) kept but not applied while external_constants is off.", "", int(n)));
  refreshing_ = false;
}

void ConfigEditor::check(const QString& field, const Change& change) {
  ExecutorchBackendConfig candidate = config_;
  QString why;
  if (!change(candidate, &why)) return showError(field, why);
  if (auto s = candidate.validate(); !s) {
    QString at = fieldOf(s.error());
    return showError(fields_.contains(at) ? at : field, shortMessage(s.error()));
  }
  showError(field, {});
}

void ConfigEditor::propose(const QString& field, const Change& change) {
  if (refreshing_) return;
  ExecutorchBackendConfig candidate = config_;
  QString why;
  if (!change(candidate, &why)) return showError(field, why);
  if (auto s = candidate.validate(); !s) {
    QString at = fieldOf(s.error());
    return showError(fields_.contains(at) ? at : field, shortMessage(s.error()));
  }
  if (sameConfig(candidate, config_)) {  // editingFinished after Return and again on focus out
    showError(field, {});
    return;
  }
  undo_->push(new ConfigEditCommand(this, config_, candidate, tr("Change %1").arg(field)));
}

void ConfigEditor::edit(const ExecutorchBackendConfig& c, const QString& what) {
  if (sameConfig(c, config_)) return;
  undo_->push(new ConfigEditCommand(this, config_, c, what));
}

void ConfigEditor::apply(const ExecutorchBackendConfig& c) {
  config_ = c;
  clearErrors();
  refresh();
  emit configChanged(config_);
}

void ConfigEditor::showError(const QString& field, const QString& message) {
  auto it = fields_.find(field);
  if (it == fields_.end()) return;
  it->error->setText(message);
  it->error->setVisible(!message.isEmpty());
}

void ConfigEditor::clearErrors() {
  for (const Field& f : fields_) {
    f.error->clear();
    f.error->hide();
  }
}

QString ConfigEditor::fieldError(const QString& field) const {
  auto it = fields_.find(field);
  return it == fields_.end() || it->error->isHidden() ? QString() : it->error->text();
}

QWidget* ConfigEditor::fieldEditor(const QString& field) const {
  auto it = fields_.find(field);
  return it == fields_.end() ? nullptr : it->editor;
}

bool ConfigEditor::loadFile(const QString& path, QString* error) {
  auto c = loadConfigFile(path.toStdString());
  if (!c) {
    if (error) *error = QString::fromStdString(c.error().message());
    return false;
  }
  if (!sameConfig(c.value(), config_))
    undo_->push(new ConfigEditCommand(this, config_, c.value(), tr("Load %1").arg(QFileInfo(path).fileName())));
  return true;
}

bool ConfigEditor::saveFile(const QString& path, QString* error) {
  if (auto s = writeFileAtomically(path.toStdString(), configToJson(config_)); !s) {
    if (error) *error = QString::fromStdString(s.error().message());
    return false;
  }
  return true;
}

QString ConfigEditor::pythonText() const { return QString::fromStdString(configToPython(config_)); }

void ConfigEditor::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? "color: #c62828;" : "");
  status_->setVisible(!text.isEmpty());
}

void ConfigEditor::chooseAndLoad() {
  QString path = QFileDialog::getOpenFileName(this, tr("Load config"), {}, tr("Config (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QString error;
  if (loadFile(path, &error)) setStatus(tr("Loaded %1").arg(QFileInfo(path).fileName()), false);
  else setStatus(error, true);
}

void ConfigEditor::chooseAndSave() {
  QString path = QFileDialog::getSaveFileName(this, tr("Save config"), "config.json", tr("Config (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (saveFile(path, &error)) setStatus(tr("Saved %1").arg(QFileInfo(path).fileName()), false);
  else setStatus(error, true);
}

void ConfigEditor::copyPython() {
  QApplication::clipboard()->setText(pythonText());
  setStatus(tr("Copied the ExecutorchBackendConfig(...) call to the clipboard."), false);
}

}  // namespace lstudio::ui
