// The config editor and the constant tagging table: every field edited
// through the widget and validated, undo/redo, JSON round trip, the
// "Copy as Python" text, and tagging rows, rules, totals, sort and filter.
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "engine/samples/SampleZoo.h"
#include "engine/lowering/ConfigPython.h"
#include "engine/lowering/ConstantTagging.h"
#include "tests/TestSupport.h"
#include "ui/config/ConfigEditor.h"
#include "ui/config/ConstantTable.h"

using namespace lstudio;
using lstudio::ui::ConfigEditor;
using lstudio::ui::ConstantTable;

namespace {

std::shared_ptr<const Program> llama(int layers = 0) {
  auto p = buildSample("llama", {.layers = layers});
  if (!p) qFatal("%s", p.error().message().c_str());
  return std::make_shared<const Program>(std::move(p.value()));
}

/// Types `text` into a line edit as a user would and presses Return.
void typeInto(QLineEdit* edit, const QString& text) {
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
  QTest::keyClick(edit, Qt::Key_Return);
}

QString json(const ExecutorchBackendConfig& c) { return QString::fromStdString(configToJson(c)); }

/// Counts emissions and keeps the last config (no metatype needed).
struct Recorder {
  int count = 0;
  ExecutorchBackendConfig last;
  template <class W>
  void watch(W* w) {
    QObject::connect(w, &W::configChanged, w, [this](const ExecutorchBackendConfig& c) { ++count, last = c; });
  }
};

/// Saves a screenshot into LSTUDIO_SCREENSHOT_DIR, else into a temporary folder: either way it
/// is written and read back whole.
void saveShot(QWidget* w, const QString& name) {
  static QTemporaryDir scratch;
  QString dir = qEnvironmentVariable("LSTUDIO_SCREENSHOT_DIR");
  if (dir.isEmpty()) dir = scratch.path();
  const QString path = dir + "/configui-" + name + ".png";
  QVERIFY(w->grab().save(path));
  QCOMPARE(QImage(path).size(), w->grab().size());
}

}  // namespace

class TestConfigUi : public QObject {
  Q_OBJECT
 private slots:
  void everyCheckBoxField() {
    ConfigEditor e;
    Recorder r;
    r.watch(&e);
    // Each boolean field: flipping the box flips exactly that field and announces it.
    struct Flag { const char* key; bool (*get)(const ExecutorchBackendConfig&); };
    const Flag flags[] = {
        {"edge_compile_config._check_ir_validity", [](const ExecutorchBackendConfig& c) { return c.edgeCompile.checkIrValidity; }},
        {"edge_compile_config._skip_dim_order", [](const ExecutorchBackendConfig& c) { return c.edgeCompile.skipDimOrder; }},
        {"memory_planning_pass.alloc_graph_input", [](const ExecutorchBackendConfig& c) { return c.memoryPlanning.allocGraphInput; }},
        {"memory_planning_pass.alloc_graph_output", [](const ExecutorchBackendConfig& c) { return c.memoryPlanning.allocGraphOutput; }},
        {"memory_planning_pass.share_mutable_buffers", [](const ExecutorchBackendConfig& c) { return c.memoryPlanning.shareMutableBuffers; }},
        {"memory_planning_pass.alloc_mutable_buffers", [](const ExecutorchBackendConfig& c) { return c.memoryPlanning.allocMutableBuffers; }},
        {"to_out_var_pass.ignore_to_out_var_failure", [](const ExecutorchBackendConfig& c) { return c.ignoreToOutVarFailure; }},
        {"remove_view_copy", [](const ExecutorchBackendConfig& c) { return c.removeViewCopy; }},
        {"emit_stacktrace", [](const ExecutorchBackendConfig& c) { return c.emitStacktrace; }},
        {"extract_delegate_segments", [](const ExecutorchBackendConfig& c) { return c.extractDelegateSegments; }},
        {"emit_mutable_buffer_names", [](const ExecutorchBackendConfig& c) { return c.emitMutableBufferNames; }},
        {"external_constants", [](const ExecutorchBackendConfig& c) { return c.externalConstants; }},
        {"external_mutable_weights", [](const ExecutorchBackendConfig& c) { return c.externalMutableWeights; }},
        {"do_quant_fusion_and_const_prop", [](const ExecutorchBackendConfig& c) { return c.doQuantFusionAndConstProp; }},
        {"run_reinplace_pass", [](const ExecutorchBackendConfig& c) { return c.runReinplacePass; }},
        {"studio_memory_aware_order", [](const ExecutorchBackendConfig& c) { return c.studioMemoryAwareOrder; }},
        {"enable_non_cpu_memory_planning", [](const ExecutorchBackendConfig& c) { return c.enableNonCpuMemoryPlanning; }},
    };
    int expected = 0;
    for (const Flag& f : flags) {
      auto* box = qobject_cast<QCheckBox*>(e.fieldEditor(f.key));
      QVERIFY2(box, f.key);
      QVERIFY2(!box->toolTip().isEmpty(), f.key);
      bool before = f.get(e.config());
      QCOMPARE(box->isChecked(), before);
      ExecutorchBackendConfig old = e.config();
      box->click();
      ++expected;
      QCOMPARE(r.count, expected);
      QCOMPARE(f.get(e.config()), !before);
      QCOMPARE(f.get(r.last), !before);
      // Nothing else moved.
      ExecutorchBackendConfig back = e.config();
      box->setChecked(before);
      ++expected;
      QCOMPARE(json(e.config()), json(old));
      e.undoAction()->trigger();
      ++expected;
      QCOMPARE(json(e.config()), json(back));
      e.undoAction()->trigger();
      ++expected;
      QCOMPARE(json(e.config()), json(old));
    }
    QCOMPARE(r.count, expected);
    // Sharing mutable buffers needs them planned: the pair is checked together.
    qobject_cast<QCheckBox*>(e.fieldEditor("memory_planning_pass.share_mutable_buffers"))->click();
    QCOMPARE(r.count, ++expected);
    qobject_cast<QCheckBox*>(e.fieldEditor("memory_planning_pass.alloc_mutable_buffers"))->click();
    QCOMPARE(r.count, expected);
    QVERIFY(e.config().memoryPlanning.allocMutableBuffers);
    QVERIFY(e.fieldError("memory_planning_pass.share_mutable_buffers").contains("alloc_mutable_buffers is false"));
  }

  // A config with memory_planning_pass per method: the group says so, names the
  // methods, and its fields (which no method would use) are disabled.
  void perMethodPlanningIsShownNotEdited() {
    ConfigEditor e;
    auto* note = qobject_cast<QLabel*>(e.fieldEditor("memory_planning_pass.per_method"));
    QVERIFY(note);
    QVERIFY(note->isHidden());
    auto c = configFromJson(R"({"memory_planning_pass": {"decode": {"share_mutable_buffers": true}, "prefill": {}}})");
    QVERIFY(c.ok());
    e.setConfig(c.value());
    QVERIFY(!note->isHidden());
    QVERIFY2(note->text().contains("decode, prefill"), qPrintable(note->text()));
    QVERIFY(!e.fieldEditor("memory_planning_pass.alloc_graph_output")->isEnabled());
    QVERIFY(!e.fieldEditor("memory_planning_pass.alignment")->isEnabled());
    e.setConfig(ExecutorchBackendConfig{});
    QVERIFY(note->isHidden());
    QVERIFY(e.fieldEditor("memory_planning_pass.alloc_graph_output")->isEnabled());
  }

  void numbersModesAndLists() {
    ConfigEditor e;
    Recorder r;
    r.watch(&e);
    auto* seg = qobject_cast<QLineEdit*>(e.fieldEditor("segment_alignment"));
    QVERIFY(seg);
    QCOMPARE(seg->text(), QString("128"));
    // Invalid while typing and on Return: the error sits at the field, nothing is announced.
    typeInto(seg, "100");
    QVERIFY(e.fieldError("segment_alignment").contains("power of two"));
    QVERIFY(e.fieldError("segment_alignment").contains("100"));
    QCOMPARE(r.count, 0);
    QCOMPARE(e.config().segmentAlignment, uint64_t(128));
    typeInto(seg, "abc");
    QVERIFY(e.fieldError("segment_alignment").contains("positive integer"));
    QCOMPARE(r.count, 0);
    typeInto(seg, "4096");
    QVERIFY(e.fieldError("segment_alignment").isEmpty());
    QCOMPARE(r.count, 1);
    QCOMPARE(r.last.segmentAlignment, uint64_t(4096));

    auto* mpAlign = qobject_cast<QLineEdit*>(e.fieldEditor("memory_planning_pass.alignment"));
    typeInto(mpAlign, "24");
    QVERIFY(e.fieldError("memory_planning_pass.alignment").contains("power of two"));
    typeInto(mpAlign, "64");
    QCOMPARE(e.config().memoryPlanning.alignment, uint64_t(64));
    QCOMPARE(r.count, 2);

    // Optional alignments: a number, or empty for None.
    for (auto [key, member] : {std::pair{"constant_tensor_alignment", &ExecutorchBackendConfig::constantTensorAlignment},
                               std::pair{"delegate_alignment", &ExecutorchBackendConfig::delegateAlignment}}) {
      auto* edit = qobject_cast<QLineEdit*>(e.fieldEditor(key));
      int before = r.count;
      typeInto(edit, "12");
      QVERIFY(!e.fieldError(key).isEmpty());
      QCOMPARE(r.count, before);
      typeInto(edit, "32");
      QCOMPARE(e.config().*member, std::optional<uint64_t>(32));
      typeInto(edit, "");
      QCOMPARE(e.config().*member, std::optional<uint64_t>());
      QCOMPARE(r.count, before + 2);
    }

    for (auto [key, member] : {std::pair{"dynamic_memory_planning_mode", &ExecutorchBackendConfig::dynamicMemoryPlanningMode},
                               std::pair{"sym_shape_eval_pass", &ExecutorchBackendConfig::symShapeEval}}) {
      auto* combo = qobject_cast<QComboBox*>(e.fieldEditor(key));
      QVERIFY(combo);
      combo->setCurrentText("hint");
      QCOMPARE(e.config().*member, std::string("hint"));
    }

    // Algorithms: turning all off is invalid; the remaining list keeps its order.
    auto* greedy = e.findChild<QCheckBox*>("algorithm.et-greedy");
    auto* bestFit = e.findChild<QCheckBox*>("algorithm.best-fit");
    auto* naive = e.findChild<QCheckBox*>("algorithm.naive");
    QVERIFY(greedy && bestFit && naive);
    naive->click();
    QCOMPARE(e.config().memoryPlanning.algorithms, (std::vector<std::string>{"et-greedy", "best-fit", "naive"}));
    naive->click();
    greedy->click();
    QCOMPARE(e.config().memoryPlanning.algorithms, (std::vector<std::string>{"best-fit"}));
    int before = r.count;
    bestFit->click();
    QVERIFY(e.fieldError("memory_planning_pass.algorithms").contains("at least one"));
    QCOMPARE(r.count, before);
    QCOMPARE(e.config().memoryPlanning.algorithms, (std::vector<std::string>{"best-fit"}));

    auto* ops = qobject_cast<QLineEdit*>(e.fieldEditor("reinplace_extra_ops"));
    typeInto(ops, "aten::index_put, aten::scatter.src");
    QCOMPARE(e.config().reinplaceExtraOps, (std::vector<std::string>{"aten::index_put", "aten::scatter.src"}));
    // passes=[InitializedMutableBufferPass(patterns)]: the patterns, comma separated.
    auto* passes = qobject_cast<QLineEdit*>(e.fieldEditor("passes"));
    QVERIFY(passes && !passes->toolTip().isEmpty());
    typeInto(passes, "cache_pos, k_cache");
    QCOMPARE(e.config().initializedMutableBuffers, (std::vector<std::string>{"cache_pos", "k_cache"}));
    QVERIFY(e.pythonText().contains("InitializedMutableBufferPass([\"cache_pos\", \"k_cache\"])"));

    // EdgeCompileConfig's operator lists: a view cannot be preserved, and says so at the field.
    auto* preserve = qobject_cast<QLineEdit*>(e.fieldEditor("edge_compile_config.preserve_ops"));
    QVERIFY(preserve);
    typeInto(preserve, "aten::linear, aten::layer_norm");
    QCOMPARE(e.config().edgeCompile.preserveOps, (std::vector<std::string>{"aten::linear", "aten::layer_norm"}));
    typeInto(preserve, "aten::view");
    QVERIFY(e.fieldError("edge_compile_config.preserve_ops").contains("no view"));
    QCOMPARE(e.config().edgeCompile.preserveOps, (std::vector<std::string>{"aten::linear", "aten::layer_norm"}));
    auto* exceptions = qobject_cast<QLineEdit*>(e.fieldEditor("edge_compile_config._core_aten_ops_exception_list"));
    QVERIFY(exceptions);
    typeInto(exceptions, "aten::cosine_similarity");
    QCOMPARE(e.config().edgeCompile.coreAtenOpsExceptionList, std::vector<std::string>{"aten::cosine_similarity"});
  }

  void undoRedo() {
    ConfigEditor e;
    Recorder r;
    r.watch(&e);
    QVERIFY(!e.undoAction()->isEnabled());
    typeInto(qobject_cast<QLineEdit*>(e.fieldEditor("segment_alignment")), "4096");
    qobject_cast<QCheckBox*>(e.fieldEditor("external_constants"))->click();
    QCOMPARE(r.count, 2);
    e.undoAction()->trigger();
    QCOMPARE(r.count, 3);
    QVERIFY(!r.last.externalConstants);
    QCOMPARE(r.last.segmentAlignment, uint64_t(4096));
    QVERIFY(!qobject_cast<QCheckBox*>(e.fieldEditor("external_constants"))->isChecked());
    e.undoAction()->trigger();
    QCOMPARE(e.config().segmentAlignment, uint64_t(128));
    QCOMPARE(qobject_cast<QLineEdit*>(e.fieldEditor("segment_alignment"))->text(), QString("128"));
    QVERIFY(!e.undoAction()->isEnabled());
    e.redoAction()->trigger();
    e.redoAction()->trigger();
    QCOMPARE(r.count, 6);
    QCOMPARE(e.config().segmentAlignment, uint64_t(4096));
    QVERIFY(e.config().externalConstants);
    // setConfig shows a config silently and forgets the history.
    ExecutorchBackendConfig other;
    other.emitStacktrace = true;
    e.setConfig(other);
    QCOMPARE(r.count, 6);
    QVERIFY(qobject_cast<QCheckBox*>(e.fieldEditor("emit_stacktrace"))->isChecked());
    QVERIFY(!e.undoAction()->isEnabled());
  }

  void loadSaveRoundTrip() {
    QTemporaryDir dir;
    ExecutorchBackendConfig c;
    c.segmentAlignment = 4096;
    c.memoryPlanning.alignment = 64;
    c.memoryPlanning.algorithms = {"best-fit"};
    c.constantTensorAlignment = 32;
    c.externalConstants = true;
    c.externalConstantRules = {{.namePattern = "*.weight", .minBytes = 1 << 20, .file = "weights.ptd"},
                               {.modulePrefix = "layers.0", .file = ""}};
    c.reinplaceExtraOps = {"aten::index_put"};
    ConfigEditor a;
    a.setConfig(c);
    QString path = dir.filePath("config.json"), error;
    QVERIFY2(a.saveFile(path, &error), qPrintable(error));

    ConfigEditor b;
    Recorder r;
    r.watch(&b);
    QVERIFY2(b.loadFile(path, &error), qPrintable(error));
    QCOMPARE(json(b.config()), json(c));
    QCOMPARE(r.count, 1);
    QCOMPARE(qobject_cast<QLineEdit*>(b.fieldEditor("segment_alignment"))->text(), QString("4096"));
    b.undoAction()->trigger();  // loading is an edit like any other
    QCOMPARE(json(b.config()), json(ExecutorchBackendConfig{}));

    // A bad file changes nothing and names the file and the field.
    QFile bad(dir.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{\"segment_alignment\": 3}");
    bad.close();
    QVERIFY(!b.loadFile(bad.fileName(), &error));
    QVERIFY(error.contains("bad.json"));
    QVERIFY(error.contains("segment_alignment"));
    QCOMPARE(json(b.config()), json(ExecutorchBackendConfig{}));
    QVERIFY(!b.loadFile(dir.filePath("missing.json"), &error));
    QVERIFY(!b.saveFile(dir.filePath("no/such/dir/c.json"), &error));
    QVERIFY(!error.isEmpty());
  }

  void pythonText() {
    QString why;
    QVERIFY2(test::matchesGolden("config-default.py", QByteArray::fromStdString(configToPython({})), &why), qPrintable(why));
    ExecutorchBackendConfig c;
    c.memoryPlanning.algorithms = {"et-greedy", "best-fit"};
    c.memoryPlanning.allocGraphInput = false;
    c.memoryPlanning.alignment = 64;
    c.ignoreToOutVarFailure = true;
    c.segmentAlignment = 4096;
    c.delegateAlignment = 256;
    c.symShapeEval = "hint";
    c.externalConstants = true;
    c.externalConstantRules = {{.namePattern = "tok_embeddings.weight", .file = ""},
                               {.namePattern = "*.weight", .minBytes = 1 << 20, .file = "weights.ptd"},
                               {.modulePrefix = "layers.0", .op = "aten::mm", .file = "dir/first \"layer\".ptd"}};
    c.reinplaceExtraOps = {"aten::index_put", "aten::scatter.src"};
    c.edgeCompile.skipDimOrder = true;
    c.edgeCompile.preserveOps = {"aten::linear", "aten::upsample_bilinear2d.vec"};
    QVERIFY2(test::matchesGolden("config-rules.py", QByteArray::fromStdString(configToPython(c)), &why), qPrintable(why));
    // true without rules is ExecuTorch's own boolean.
    ExecutorchBackendConfig all;
    all.externalConstants = true;
    QVERIFY(QString::fromStdString(configToPython(all)).contains("    external_constants=True,\n"));
    ConfigEditor e;
    e.setConfig(c);
    QCOMPARE(e.pythonText(), QString::fromStdString(configToPython(c)));
  }

  void tableRowsAreTheConstants() {
    auto p = llama();
    ExecutorchBackendConfig c;
    ConstantTable t;
    t.setProgram(p, 0, c);
    auto expected = listConstants(p->methods[0], c);
    QAbstractItemModel* m = t.model();
    QVERIFY(expected.size() > 10);
    QCOMPARE(m->rowCount(), int(expected.size()));
    for (int i = 0; i < m->rowCount(); ++i) {
      const ConstantEntry& e = expected[i];
      QCOMPARE(m->index(i, ConstantTable::Name).data(ConstantTable::ValueIdRole).toInt(),
               int(e.value));
      QCOMPARE(m->index(i, ConstantTable::Name).data().toString(), QString::fromStdString(e.name));
      QCOMPARE(m->index(i, ConstantTable::Module).data().toString(), QString::fromStdString(e.module));
      QCOMPARE(m->index(i, ConstantTable::Bytes).data(ConstantTable::SortRole).toULongLong(), e.bytes);
      QCOMPARE(m->index(i, ConstantTable::Destination).data().toString(), QString("inside .pte"));
    }
    auto totals = t.bytesPerDestination();
    quint64 sum = 0;
    for (const auto& e : expected) sum += e.bytes;
    QCOMPARE(totals.size(), 1);
    QCOMPARE(totals.value(""), sum);
    t.setProgram(p, 7, c);  // no such method: empty, not a crash
    QCOMPARE(m->rowCount(), 0);
  }

  void perRowChoiceAndRules() {
    auto p = std::make_shared<const Program>(std::move(buildSample("llama", {.dim = 512}).value()));
    ConstantTable t;
    Recorder r;
    r.watch(&t);
    t.setProgram(p, 0, {});
    auto expected = listConstants(p->methods[0], {});
    QAbstractItemModel* m = t.model();
    int row = -1;
    for (int i = 0; i < m->rowCount(); ++i)
      if (m->index(i, ConstantTable::Name).data().toString() == "layers.1.attention.wq.weight") row = i;
    QVERIFY(row >= 0);
    quint64 wqBytes = m->index(row, ConstantTable::Bytes).data(ConstantTable::SortRole).toULongLong();
    // The row's combo writes "weights.ptd" through the model, as the delegate does.
    QVERIFY(m->setData(m->index(row, ConstantTable::Destination), "weights.ptd", Qt::EditRole));
    QCOMPARE(r.count, 1);
    QVERIFY(r.last.externalConstants);
    QCOMPARE(r.last.externalConstantRules.size(), size_t(1));
    QCOMPARE(r.last.externalConstantRules[0].namePattern, std::string("layers.1.attention.wq.weight"));
    QCOMPARE(r.last.externalConstantRules[0].file, std::string("weights.ptd"));
    QCOMPARE(m->index(row, ConstantTable::Destination).data().toString(), QString("weights.ptd"));
    QCOMPARE(t.bytesPerDestination().value("weights.ptd"), wqBytes);
    // Choosing again replaces that row's rule instead of piling them up.
    QVERIFY(m->setData(m->index(row, ConstantTable::Destination), "other", Qt::EditRole));
    QCOMPARE(r.last.externalConstantRules.size(), size_t(1));
    QCOMPARE(m->index(row, ConstantTable::Destination).data().toString(), QString("other.ptd"));
    QVERIFY(!t.bytesPerDestination().contains("weights.ptd"));

    // "Weights over 1 MiB to weights.ptd": the preset of the Add rule menu, below the row rule.
    QToolButton* add = nullptr;
    for (auto* b : t.findChildren<QToolButton*>())
      if (b->text() == "Add rule") add = b;
    QVERIFY(add && add->menu());
    add->menu()->actions().at(0)->trigger();
    QCOMPARE(r.count, 3);
    QCOMPARE(r.last.externalConstantRules.size(), size_t(2));
    QCOMPARE(r.last.externalConstantRules[1].minBytes, uint64_t(1) << 20);
    QCOMPARE(t.rulesView()->rowCount(), 2);
    QCOMPARE(t.rulesView()->item(1, ConstantTable::RuleMinBytes)->text(), QString("1 MiB"));
    // Destinations and totals follow the rules, computed here independently.
    auto destinations = [&](uint64_t threshold) {
      QMap<QString, quint64> want;
      for (const ConstantEntry& e : expected) {
        QString dest;
        if (e.name == "layers.1.attention.wq.weight") dest = "other.ptd";
        else if (QString::fromStdString(e.name).endsWith(".weight") && e.bytes >= threshold) dest = "weights.ptd";
        want[dest] += e.bytes;
      }
      return want;
    };
    auto want = destinations(1 << 20);
    QCOMPARE(t.bytesPerDestination(), want);
    QVERIFY(want.contains("weights.ptd"));  // the sample has weights that large
    // Editing a cell of the rule: the threshold moves and so do the constants.
    t.rulesView()->item(1, ConstantTable::RuleMinBytes)->setText("64 KiB");
    QCOMPARE(r.count, 4);
    QCOMPARE(r.last.externalConstantRules[1].minBytes, uint64_t(64) << 10);
    QCOMPARE(t.bytesPerDestination(), destinations(64 << 10));
    // Not a size: error, config unchanged.
    t.rulesView()->item(1, ConstantTable::RuleMinBytes)->setText("lots");
    QCOMPARE(r.count, 4);
    QCOMPARE(t.config().externalConstantRules[1].minBytes, uint64_t(64) << 10);
    // Reorder: the general rule first now shadows the row rule.
    t.rulesView()->selectRow(1);
    for (auto* b : t.findChildren<QToolButton*>())
      if (b->text() == "Up") b->click();
    QCOMPARE(t.config().externalConstantRules[0].minBytes, uint64_t(64) << 10);
    QCOMPARE(m->index(row, ConstantTable::Destination).data().toString(), QString("weights.ptd"));
    // Removing every rule turns external_constants off: everything back inside.
    t.setRules({});
    QVERIFY(!r.last.externalConstants);
    QCOMPARE(t.bytesPerDestination().keys(), QStringList{""});
  }

  // Add rule > New rule… opens an empty row to fill in; it is no rule (and re-tags nothing)
  // until a criterion is set. ("Empty rule" put `* -> weights.ptd` in and moved every constant.)
  void newRuleIsADraftUntilFilledIn() {
    auto p = std::make_shared<const Program>(std::move(buildSample("llama", {.dim = 512}).value()));
    ConstantTable t;
    t.show();
    Recorder r;
    r.watch(&t);
    t.setProgram(p, 0, {});
    QToolButton* add = nullptr;
    for (auto* b : t.findChildren<QToolButton*>())
      if (b->text() == "Add rule") add = b;
    QVERIFY(add && add->menu());
    QAction* draft = nullptr;
    for (QAction* a : add->menu()->actions())
      if (a->text() == "New rule…") draft = a;
    QVERIFY(draft);
    draft->trigger();
    QCOMPARE(t.rulesView()->rowCount(), 1);
    QCOMPARE(r.count, 0);  // nothing applied
    QCOMPARE(t.bytesPerDestination().keys(), QStringList{""});
    t.rulesView()->item(0, ConstantTable::RuleFile)->setText("big.ptd");  // the file alone: still a draft
    QCOMPARE(r.count, 0);
    QCOMPARE(t.rulesView()->rowCount(), 1);
    t.rulesView()->item(0, ConstantTable::RuleName)->setText("*.wq.weight");  // a criterion: now a rule
    QCOMPARE(r.count, 1);
    QCOMPARE(r.last.externalConstantRules.size(), size_t(1));
    QCOMPARE(r.last.externalConstantRules[0].namePattern, std::string("*.wq.weight"));
    QCOMPARE(r.last.externalConstantRules[0].file, std::string("big.ptd"));
    QVERIFY(t.bytesPerDestination().contains("big.ptd"));
    QVERIFY(t.bytesPerDestination().contains(""));  // the others stay inside
    // Two destinations get clearly distinct colours (a hue hashed from the name gave two
    // files nearly the same purple): the swatches differ by more than a glance needs.
    t.setRules({{.namePattern = "*.wq.weight", .file = "weights.ptd"}, {.namePattern = "*.wk.weight", .file = "weights2.ptd"}});
    QAbstractItemModel* m = t.model();
    QColor first, second;
    for (int i = 0; i < m->rowCount(); ++i) {
      const QString dest = m->index(i, ConstantTable::Destination).data().toString();
      const QColor c = qvariant_cast<QIcon>(m->index(i, ConstantTable::Destination).data(Qt::DecorationRole))
                           .pixmap(8, 8).toImage().pixelColor(4, 4);
      if (dest == "weights.ptd") first = c;
      if (dest == "weights2.ptd") second = c;
    }
    QVERIFY(first.isValid() && second.isValid());
    const int distance = std::abs(first.red() - second.red()) + std::abs(first.green() - second.green()) +
                         std::abs(first.blue() - second.blue());
    QVERIFY2(distance > 120, qPrintable(first.name() + " vs " + second.name()));
  }

  void destinationComboInTheView() {
    auto p = llama();
    ConstantTable t;
    Recorder r;
    r.watch(&t);
    t.setProgram(p, 0, {});
    t.resize(900, 600);
    t.show();
    QModelIndex cell = t.model()->index(4, ConstantTable::Destination);
    QString name = t.model()->index(4, ConstantTable::Name).data().toString();
    // "new file…" turns the combo into a text field; Return commits the typed name.
    t.view()->edit(cell);
    auto* combo = t.view()->findChild<QComboBox*>();
    QVERIFY(combo);
    QCOMPARE(combo->itemText(0), QString("inside .pte"));
    int last = combo->count() - 1;
    QVERIFY(combo->itemText(last).startsWith("new file"));
    combo->setCurrentIndex(last);
    emit combo->activated(last);
    QVERIFY(combo->isEditable());
    QTest::keyClicks(combo->lineEdit(), "mine");
    QTest::keyClick(combo->lineEdit(), Qt::Key_Return);
    QCOMPARE(r.count, 1);
    QCOMPARE(r.last.externalConstantRules.at(0).namePattern, name.toStdString());
    QCOMPARE(r.last.externalConstantRules.at(0).file, std::string("mine.ptd"));
    QCOMPARE(t.model()->index(4, ConstantTable::Destination).data().toString(), QString("mine.ptd"));
    // Next time the file is offered; picking "inside .pte" brings the constant back.
    QTRY_VERIFY(!t.view()->findChild<QComboBox*>());
    t.view()->edit(t.model()->index(4, ConstantTable::Destination));
    combo = t.view()->findChild<QComboBox*>();
    QVERIFY(combo);
    QVERIFY(combo->findText("mine.ptd") > 0);
    combo->setCurrentIndex(0);
    emit combo->activated(0);
    QCOMPARE(r.count, 2);
    QCOMPARE(r.last.externalConstantRules.size(), size_t(1));
    QCOMPARE(r.last.externalConstantRules.at(0).file, std::string());
    QCOMPARE(t.bytesPerDestination().keys(), QStringList{""});
  }

  void defaultExternalStaysWithRowRule() {
    auto p = llama();
    ExecutorchBackendConfig all;
    all.externalConstants = true;  // every constant to _default_external_constant.ptd
    ConstantTable t;
    t.setProgram(p, 0, all);
    auto es = listConstants(p->methods[0], all);
    QCOMPARE(t.bytesPerDestination().size(), 1);
    QVERIFY(t.bytesPerDestination().contains("_default_external_constant.ptd"));
    t.chooseDestination(0, "");
    // Only the chosen constant came back; the rest stay in the default file.
    auto totals = t.bytesPerDestination();
    QCOMPARE(totals.value(""), es[0].bytes);
    QCOMPARE(t.config().externalConstantRules.back().file, std::string("_default_external_constant.ptd"));
  }

  void sortAndFilter() {
    auto p = llama();
    ConstantTable t;
    t.setProgram(p, 0, {});
    auto es = listConstants(p->methods[0], {});
    QAbstractItemModel* m = t.model();
    t.view()->sortByColumn(ConstantTable::Bytes, Qt::DescendingOrder);
    for (int i = 1; i < m->rowCount(); ++i)
      QVERIFY(m->index(i - 1, ConstantTable::Bytes).data(ConstantTable::SortRole).toULongLong() >=
              m->index(i, ConstantTable::Bytes).data(ConstantTable::SortRole).toULongLong());
    QCOMPARE(m->index(0, ConstantTable::Bytes).data(ConstantTable::SortRole).toULongLong(),
             std::max_element(es.begin(), es.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; })->bytes);
    t.view()->sortByColumn(ConstantTable::Name, Qt::AscendingOrder);
    for (int i = 1; i < m->rowCount(); ++i)
      QVERIFY(m->index(i - 1, ConstantTable::Name).data().toString().compare(m->index(i, ConstantTable::Name).data().toString(),
                                                                          Qt::CaseInsensitive) <= 0);
    QTest::keyClicks(t.filterEdit(), "attention.WQ");
    int want = 0;
    for (const auto& e : es) want += QString::fromStdString(e.name).contains("attention.wq", Qt::CaseInsensitive);
    QVERIFY(want >= 2);
    QCOMPARE(m->rowCount(), want);
    for (int i = 0; i < m->rowCount(); ++i) QVERIFY(m->index(i, ConstantTable::Name).data().toString().contains("attention.wq"));
    // Totals count every constant, not only the visible ones.
    quint64 sum = 0;
    for (const auto& e : es) sum += e.bytes;
    QCOMPARE(t.bytesPerDestination().value(""), sum);
    t.filterEdit()->clear();
    QCOMPARE(m->rowCount(), int(es.size()));
  }

  void editorAndTableStayConsistent() {
    auto p = llama();
    ConfigEditor editor;
    ConstantTable table;
    table.setProgram(p, 0, editor.config());
    // Wired as the window wires them.
    connect(&editor, &ConfigEditor::configChanged, &table, &ConstantTable::setConfig);
    connect(&table, &ConstantTable::configChanged, &editor, &ConfigEditor::setConfig);
    qobject_cast<QCheckBox*>(editor.fieldEditor("external_constants"))->click();
    QCOMPARE(table.bytesPerDestination().keys(), QStringList{"_default_external_constant.ptd"});
    table.chooseDestination(2, "weights.ptd");
    QCOMPARE(json(editor.config()), json(table.config()));
    QVERIFY(qobject_cast<QCheckBox*>(editor.fieldEditor("external_constants"))->isChecked());
    QVERIFY(editor.pythonText().contains("constant_tag_fn(edge)"));
    typeInto(qobject_cast<QLineEdit*>(editor.fieldEditor("segment_alignment")), "4096");
    QCOMPARE(table.config().segmentAlignment, uint64_t(4096));
    QCOMPARE(table.config().externalConstantRules.size(), size_t(2));
  }

  void mutableWeights() {
    auto p = buildSample("training");
    QVERIFY2(p, p ? "" : p.error().message().c_str());
    auto prog = std::make_shared<const Program>(std::move(p.value()));
    ExecutorchBackendConfig c;
    c.externalMutableWeights = true;
    ConstantTable t;
    t.setProgram(prog, 0, c);
    quint64 mutableBytes = 0;
    int mutableRows = 0;
    for (const auto& e : listConstants(prog->methods[0], c))
      if (e.mutableWeight) mutableBytes += e.bytes, ++mutableRows;
    QVERIFY(mutableRows > 0);
    QCOMPARE(t.bytesPerDestination().value("_default_external_constant.ptd"), mutableBytes);
    int noted = 0;
    for (int i = 0; i < t.model()->rowCount(); ++i)
      noted += t.model()->index(i, ConstantTable::Note).data().toString().contains("mutable weight");
    QCOMPARE(noted, mutableRows);
  }

  void sizes() {
    uint64_t v = 0;
    QVERIFY(ConstantTable::parseSize("1 MiB", &v) && v == 1 << 20);
    QVERIFY(ConstantTable::parseSize("1MB", &v) && v == 1 << 20);
    QVERIFY(ConstantTable::parseSize("512k", &v) && v == 512 << 10);
    QVERIFY(ConstantTable::parseSize("4096", &v) && v == 4096);
    QVERIFY(ConstantTable::parseSize("1.5 KiB", &v) && v == 1536);
    QVERIFY(!ConstantTable::parseSize("-1", &v));
    QVERIFY(!ConstantTable::parseSize("1 TB", &v));
    QVERIFY(!ConstantTable::parseSize("", &v));
    QCOMPARE(ConstantTable::sizeText(1 << 20), QString("1 MiB"));
    QCOMPARE(ConstantTable::sizeText(1000), QString("1000"));
  }

  // The width the Config dock has at 1366x768 (tabbed with the inspector): every name and
  // field whole and on screen, and a validation message wrapped, not cut.
  void editorFitsANarrowDock() {
    ConfigEditor editor;
    editor.resize(340, 560);
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    QWidget* viewport = editor.findChild<QScrollArea*>()->viewport();
    auto whole = [viewport](QWidget* w) {
      const QRect r(w->mapTo(viewport, QPoint(0, 0)), w->size());
      const int need = w->sizeHint().width();  // a name or check box must be whole; a field at least its minimum
      const bool wide = qobject_cast<QLineEdit*>(w) ? w->width() >= w->minimumSizeHint().width() : w->width() >= need;
      return r.left() >= 0 && r.right() < viewport->width() && wide;
    };
    const QStringList fields = {"memory_planning_pass.algorithms", "memory_planning_pass.alignment",
                                "to_out_var_pass.ignore_to_out_var_failure", "dynamic_memory_planning_mode",
                                "sym_shape_eval_pass", "segment_alignment", "constant_tensor_alignment",
                                "reinplace_extra_ops"};
    for (const QString& f : fields) QVERIFY2(whole(editor.fieldEditor(f)), qPrintable(f));
    for (QCheckBox* b : editor.fieldEditor("memory_planning_pass.algorithms")->findChildren<QCheckBox*>())
      QVERIFY2(whole(b), qPrintable(b->text()));
    for (QLabel* l : editor.findChildren<QLabel*>())
      if (l->text() == "ignore_to_out_var_failure" || l->text() == "dynamic_memory_planning_mode") QVERIFY2(whole(l), qPrintable(l->text()));

    typeInto(qobject_cast<QLineEdit*>(editor.fieldEditor("segment_alignment")), "24");
    QVERIFY(editor.fieldError("segment_alignment").contains("power of two"));
    auto* error = editor.findChild<QLabel*>("segment_alignment.error");
    QVERIFY(error && error->isVisible());
    const QRect r(error->mapTo(viewport, QPoint(0, 0)), error->size());
    QVERIFY2(r.left() >= 0 && r.right() < viewport->width(), "the message runs off the dock");
    QVERIFY(error->height() >= error->heightForWidth(error->width()));  // every wrapped line shown
    saveShot(&editor, "narrow");
  }

  void screenshots() {
    auto p = std::make_shared<const Program>(std::move(buildSample("llama", {.layers = 4, .dim = 512}).value()));
    ConfigEditor editor;
    ExecutorchBackendConfig c;
    c.segmentAlignment = 4096;
    editor.setConfig(c);
    editor.resize(500, 860);
    editor.show();
    typeInto(qobject_cast<QLineEdit*>(editor.fieldEditor("memory_planning_pass.alignment")), "24");
    saveShot(&editor, "editor");
    ConstantTable table;
    table.setProgram(p, 0, c);
    table.resize(1100, 720);
    table.show();
    QToolButton* add = nullptr;
    for (auto* b : table.findChildren<QToolButton*>())
      if (b->text() == "Add rule") add = b;
    add->menu()->actions().at(0)->trigger();
    add->menu()->actions().at(1)->trigger();
    table.chooseDestination(3, "");
    table.view()->sortByColumn(ConstantTable::Bytes, Qt::DescendingOrder);
    saveShot(&table, "table");
  }
};

QTEST_MAIN(TestConfigUi)
#include "tst_configui.moc"
