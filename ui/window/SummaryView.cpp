#include "ui/window/SummaryView.h"

#include <QFileInfo>
#include <QObject>
#include <QTreeWidget>

#include "engine/support/FormatUtil.h"
#include "ui/support/StdString.h"

namespace lstudio::ui {
namespace {

QTreeWidgetItem* add(QTreeWidgetItem* parent, const QString& key, const QString& value = {}) {
  auto* it = new QTreeWidgetItem(parent, {key, value});
  return it;
}

QString fileName(const LoadedProgram& p) { return QFileInfo(q(p.path)).fileName(); }

QString operatorName(const OperatorCount& op) { return q(op.name + (op.overload.empty() ? "" : "." + op.overload)); }

// The file's size; a sample is built in memory: it has no file and no file size yet.
QString programSize(const ProgramSummary& s) {
  const bool inMemory = s.file.rfind("sample:", 0) == 0 && s.facts.fileSize == 0;
  uint64_t weights = 0;
  for (const auto& m : s.methods) weights += m.weightBytes;
  return inMemory ? QObject::tr("%1 of weights, not saved").arg(q(formatBytes(weights))) : q(formatBytes(s.facts.fileSize));
}

// A .ptd opened on its own: its entries, each with the shape it stores when it says.
void fillDataFile(QTreeWidget* tree, const LoadedProgram& p) {
  const DataFile& d = *p.dataFile;
  auto* file = new QTreeWidgetItem(tree, {QObject::tr("Data file"), fileName(p)});
  add(file, QObject::tr("Size"), q(formatBytes(d.file->size())));
  add(file, QObject::tr("Format"), d.legacy ? QObject::tr("FlatTensor (first generation)") : QObject::tr("FlatTensor"));
  auto* entries = add(file, QObject::tr("Entries"), QString::number(d.entries.size()));
  for (const auto& e : d.entries) {
    QString what = q(formatBytes(e.data.size));
    if (e.layout) {
      TensorSpec t;
      t.dtype = e.layout->dtype;
      t.sizes = e.layout->sizes;
      what = q(t.shapeString()) + ", " + what;
    }
    add(entries, q(e.key), what);
  }
  file->setExpanded(true);
  entries->setExpanded(true);
}

// The file's own facts: the container of a .pte, the data files beside it.
QTreeWidgetItem* addFileFacts(QTreeWidget* tree, const LoadedProgram& p) {
  const ProgramSummary& s = p.summary;
  auto* file = new QTreeWidgetItem(tree, {QObject::tr("File"), fileName(p)});
  add(file, QObject::tr("Size"), programSize(s));
  if (s.format == SourceFormat::Pte) {
    add(file, QObject::tr("Identifier"), q(s.facts.identifier));
    add(file, QObject::tr("Header"), q(headerName(s.facts.header)));
    add(file, QObject::tr("Segments"), QString::number(s.segments));
    add(file, QObject::tr("Named data"), QObject::tr("%1 (%2)").arg(s.namedData).arg(q(formatBytes(s.namedDataBytes))));
  }
  for (const auto& d : s.dataFiles) add(file, QObject::tr("Data file"), q(d));
  if (!s.unresolvedExternal.empty())
    add(file, QObject::tr("Unresolved external tensors"), QString::number(s.unresolvedExternal.size()));
  file->setExpanded(true);
  return file;
}

// One program of a .pt2: its graph's size, operators, signature and edge dialect check.
void addExportedProgram(QTreeWidget* tree, const MethodSummary& m) {
  auto* mi = new QTreeWidgetItem(tree, {QObject::tr("Program"), q(m.name)});
  add(mi, QObject::tr("Nodes"), QString::number(m.nodes));
  add(mi, QObject::tr("Weights"), q(formatBytes(m.weightBytes)));
  add(mi, QObject::tr("Module depth"), QString::number(m.moduleDepth));
  auto* ops = add(mi, QObject::tr("Operators"), QString::number(m.operators.size()));
  for (const auto& op : m.operators) add(ops, operatorName(op), QObject::tr("%n call(s)", nullptr, int(op.count)));
  auto* ins = add(mi, QObject::tr("Signature inputs"), QString::number(m.signatureInputs.size()));
  for (const auto& e : m.signatureInputs)
    add(ins, q(e.kind + " " + e.name), q(e.type + (e.target.empty() ? "" : "  " + e.target)));
  auto* outs = add(mi, QObject::tr("Signature outputs"), QString::number(m.signatureOutputs.size()));
  for (const auto& e : m.signatureOutputs) add(outs, q(e.kind + " " + e.name), q(e.type));
  auto* edge = add(mi, QObject::tr("Edge dialect check"),
                   m.diagnostics.empty() ? QObject::tr("ok") : QObject::tr("%n problem(s)", nullptr, int(m.diagnostics.size())));
  for (const auto& d : m.diagnostics) add(edge, QString(), q(d))->setToolTip(1, q(d));
  edge->setExpanded(true);
  mi->setExpanded(true);
  ops->setExpanded(true);
  ins->setExpanded(true);
}

// One method of a .pte: its execution plan's tables, delegates, constants and memory plan.
void addPteMethod(QTreeWidget* tree, const MethodSummary& m) {
  auto* mi = new QTreeWidgetItem(tree, {QObject::tr("Method"), q(m.name)});
  add(mi, QObject::tr("Instructions"), QString::number(m.instructions));
  add(mi, QObject::tr("Values"), QString::number(m.values));
  auto* ins = add(mi, QObject::tr("Inputs"), QString::number(m.inputs.size()));
  for (const auto& io : m.inputs) add(ins, QString("[%1]").arg(io.value), q(io.description));
  auto* outs = add(mi, QObject::tr("Outputs"), QString::number(m.outputs.size()));
  for (const auto& io : m.outputs) add(outs, QString("[%1]").arg(io.value), q(io.description));
  auto* ops = add(mi, QObject::tr("Operators"), QString::number(m.operators.size()));
  for (const auto& op : m.operators) add(ops, operatorName(op), QObject::tr("%n call(s)", nullptr, int(op.count)));
  auto* dels = add(mi, QObject::tr("Delegates"), QString::number(m.delegates.size()));
  for (const auto& d : m.delegates) add(dels, q(d.id), q(formatBytes(d.bytes) + ", " + d.location));
  add(mi, QObject::tr("Constants"), QObject::tr("%1 (%2)").arg(m.constants.count).arg(q(formatBytes(m.constants.bytes))));
  auto* mem = add(mi, QObject::tr("Memory plan"),
                  m.plan.overlapFree() ? QObject::tr("no overlaps") : QObject::tr("%1 overlaps").arg(m.plan.overlapCount));
  for (const auto& a : m.plan.arenas)
    add(mem, QObject::tr("mem_id %1").arg(a.memId),
        QObject::tr("arena %1, lower bound %2, ratio %3")
            .arg(q(formatBytes(a.size)), q(formatBytes(a.lowerBound)))
            .arg(a.lowerBound ? QString::number(a.ratio(), 'f', 3) : QStringLiteral("n/a")));
  mi->setExpanded(true);
  ops->setExpanded(true);
  mem->setExpanded(true);
}

}  // namespace

QString summaryStatusLine(const LoadedProgram& p) {
  if (p.dataFile)
    return QObject::tr("%1: %n tensor(s)", nullptr, int(p.dataFile->entries.size())).arg(fileName(p));
  const ProgramSummary& s = p.summary;
  return QObject::tr("%1: %2, %3")
      .arg(fileName(p),
           s.format == SourceFormat::Pte ? QObject::tr("%n method(s)", nullptr, int(s.methods.size()))
                                         : QObject::tr("%n program(s)", nullptr, int(s.methods.size())),
           programSize(s));
}

void fillSummaryTree(QTreeWidget* tree, const LoadedProgram& p) {
  tree->clear();
  if (p.dataFile) return fillDataFile(tree, p);
  const ProgramSummary& s = p.summary;
  QTreeWidgetItem* file = addFileFacts(tree, p);
  if (s.format != SourceFormat::Pte) {
    add(file, QObject::tr("Container"), q(s.exportFacts.container));
    add(file, QObject::tr("Schema version"), q(s.exportFacts.schemaVersion));
    add(file, QObject::tr("torch"), q(s.exportFacts.torchVersion));
    for (const auto& m : s.methods) addExportedProgram(tree, m);
    return;
  }
  for (const auto& m : s.methods) addPteMethod(tree, m);
}

}  // namespace lstudio::ui
