#include "ui/graph/Inspector.h"

#include <QFileInfo>
#include <QUrl>

#include <map>

#include "engine/inspect/DelegateReport.h"
#include "engine/ir/OpRegistry.h"
#include "engine/lowering/GraphText.h"
#include "engine/support/FormatUtil.h"

namespace lstudio::ui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

QString valueLink(const Method& m, ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= m.values.size()) return QStringLiteral("<i>none</i>");
  const Value& val = m.values[v];
  switch (val.kind()) {
    case ValueKind::None: return QStringLiteral("None");
    case ValueKind::Int: return val.symbolic ? q(val.name) : QString::number(std::get<int64_t>(val.payload));
    case ValueKind::Bool: return std::get<bool>(val.payload) ? "True" : "False";
    case ValueKind::Double: return QString::number(std::get<double>(val.payload));
    case ValueKind::String: return "\"" + q(std::get<std::string>(val.payload)) + "\"";
    case ValueKind::IntList: {
      QStringList items;
      for (ValueId x : std::get<IntList>(val.payload).items) items << valueLink(m, x);
      return "[" + items.join(", ") + "]";
    }
    case ValueKind::TensorList:
    case ValueKind::OptionalTensorList: {
      const auto& items = val.kind() == ValueKind::TensorList ? std::get<TensorList>(val.payload).items
                                                              : std::get<OptionalTensorList>(val.payload).items;
      QStringList out;
      for (ValueId x : items) out << valueLink(m, x);
      return "[" + out.join(", ") + "]";
    }
    default: break;
  }
  QString name = val.name.empty() ? QString("value %1").arg(v) : q(val.name);
  return QString("<a href=\"value:%1\">%%2</a>").arg(v).arg(name);
}

QString where(const TensorSpec& t, const MemoryPlanReport* plan, ValueId v) {
  QString s;
  switch (t.storage()) {
    case TensorStorage::RunTime: s = "supplied at run time"; break;
    case TensorStorage::Planned: s = "planned"; break;
    case TensorStorage::Constant: s = "constant in the program"; break;
    case TensorStorage::External:
      s = "external, in " + (t.constantTag.empty() ? QString("a .ptd file") : q(t.constantTag) + ".ptd");
      break;
    case TensorStorage::Mutable: s = "planned, with an initial value"; break;
  }
  if (t.slot) {
    s += QString(" — mem_id %1, offset %2").arg(t.slot->memId).arg(t.slot->offset);
    if (!t.device.isCpu()) s += QString(", on %1").arg(QString::fromStdString(t.device.name()));
    if (plan)
      for (const PlannedTensor& p : plan->tensors)
        if (p.value == v) {
          s += QString(", lifetime steps %1–%2").arg(p.first).arg(p.last);
          break;
        }
  }
  if (!t.slot && !t.device.isCpu()) s += QString(" — on %1").arg(QString::fromStdString(t.device.name()));
  if (t.viewOf != kNoValue) s += QString(" (a view sharing its base's bytes)");
  return s;
}

QString specRows(const Method& m, ValueId v, const MemoryPlanReport* plan) {
  const TensorSpec& t = m.values[v].tensor();
  QString rows;
  auto row = [&](const QString& k, const QString& val) { rows += "<tr><td class=k>" + k + "</td><td>" + val + "</td></tr>"; };
  row("type", q(t.shapeString()));
  if (!t.symbols.empty()) {
    QStringList dims;
    for (size_t i = 0; i < t.sizes.size(); ++i)
      dims << (i < t.symbols.size() && !t.symbols[i].empty() ? q(t.symbols[i]) + "≤" + QString::number(t.sizes[i])
                                                             : QString::number(t.sizes[i]));
    row("sizes", "[" + dims.join(", ") + "]");
  }
  if (!t.dimOrder.empty()) {
    QStringList d;
    for (auto x : t.dimOrder) d << QString::number(x);
    row("dim order", "(" + d.join(", ") + ")");
  }
  row("dynamism", t.dynamism == ShapeDynamism::Static ? "static" : t.dynamism == ShapeDynamism::DynamicBound ? "dynamic, bounded" : "dynamic, unbounded");
  if (auto n = t.nbytes()) row("bytes", q(formatBytes(*n)));
  row("storage", where(t, plan, v));
  if (!t.fqn.empty()) row("name", q(t.fqn));
  return rows;
}

const char* kStyle =
    "<style>td{padding:1px 6px;vertical-align:top} td.k{color:#666;white-space:nowrap} h3{margin:4px 0}"
    " .op{font-family:monospace} .sub{color:#666}</style>";

QString argumentRow(const Method& m, ValueId v, const QString& name) {
  QString type;
  if (v >= 0 && static_cast<size_t>(v) < m.values.size())
    if (auto* t = m.values[v].tensorIf()) type = "<span class=sub>" + q(t->shapeString()) + "</span>";
  return "<tr><td class=k>" + name + "</td><td>" + valueLink(m, v) + " " + type + "</td></tr>";
}

/// The payload's own nodes, at most `limit` of them.
QString payloadNodes(const DelegateReport& r, const xnnpack::Graph& g, size_t limit) {
  QString h = "<table>";
  for (size_t i = 0; i < g.nodes.size() && i < limit; ++i) {
    const auto& n = g.nodes[i];
    QStringList ins, outs;
    for (uint32_t id : n.inputs) ins << "%" + QString::number(id);
    for (uint32_t id : n.outputs) outs << "%" + QString::number(id);
    h += "<tr><td class=k>" + QString::number(i) + "</td><td class=op>" + q(n.type) + "(" + ins.join(", ") + ") → " +
         outs.join(", ") + "</td><td class=sub>handle " + QString::number(n.debugHandle) +
         QString::fromStdString(originText(r, n.debugHandle).empty() ? "" : " ← " + originText(r, n.debugHandle))
             .toHtmlEscaped() +
         "</td></tr>";
  }
  h += "</table>";
  if (g.nodes.size() > limit) h += QString("<p class=sub>… %1 more (lowering-cli delegates --full)</p>").arg(g.nodes.size() - limit);
  return h;
}

/// A delegate call: backend, compile specs, inputs and outputs apart, and
/// what its payload holds where the studio can read it.
QString delegateDetails(const Program& p, const Method& m, int index) {
  DelegateReport r = reportDelegate(p, m, size_t(index));
  QString h = "<table>";
  auto row = [&](const QString& k, const QString& v) { h += "<tr><td class=k>" + k + "</td><td>" + v + "</td></tr>"; };
  const Delegate& d = m.delegates[static_cast<size_t>(index)];
  // A call the studio's to_backend made: its lowered module, and the payload its XNNPACK
  // preprocess compiled (or why there is none).
  const bool studioLowered = d.original && d.original->exportFacts.container == "to_backend's lowered module";
  const bool notCompiled = studioLowered && d.blob.empty();
  row("backend", "<b>" + q(r.backend) + "</b>");
  if (notCompiled)
    row("payload", "not compiled (export refuses it): " +
                       q(d.payloadError.empty() ? std::string("the studio has no preprocess for this backend") : d.payloadError));
  else
    row("payload", q(formatBytes(r.blobBytes)) + ", " + q(r.location) + " — " + q(r.format));
  for (const auto& s : r.compileSpecs) row("spec " + q(s.key), q(s.value));
  if (r.compileSpecs.empty()) row("compile specs", "none");
  // What a run does at this call: the program the backend was given, where the ETRecord kept it.
  size_t originalOps = d.original && !d.original->methods.empty() ? d.original->methods.front().nodes.size() : 0;
  row("when run", studioLowered ? QString("its lowered module (%1 nodes) runs in its place").arg(originalOps)
                  : d.original ? QString("its program before delegation (%1 nodes, from the ETRecord) runs in its place")
                                   .arg(originalOps)
                  : d.originalError.empty() ? QString("stops the run: the ETRecord written with it keeps the program "
                                                      "before delegation (open it, or put it beside the .pte as "
                                                      "NAME.etrecord)")
                                            : "stops the run: its program before delegation cannot be read (" +
                                                  q(d.originalError) + ")");
  h += "</table><b>Inputs</b><table>";
  for (size_t i = 0; i < r.inputs.size(); ++i) h += argumentRow(m, r.inputs[i], QString("#%1").arg(i));
  h += "</table><b>Outputs</b><table>";
  for (size_t i = 0; i < r.outputs.size(); ++i) h += argumentRow(m, r.outputs[i], QString("#%1").arg(i));
  h += "</table>";
  if (!r.decodeError.empty() && !notCompiled) h += "<p><b>Payload cannot be read:</b> " + q(r.decodeError) + "</p>";
  if (!r.layout.facts.empty()) {
    h += "<b>" + q(r.layout.format) + "</b><table>";
    for (const auto& [k, v] : r.layout.facts) h += "<tr><td class=k>" + q(k) + "</td><td>" + q(v) + "</td></tr>";
    h += "</table>";
  }
  if (!r.xnnpack) return h;
  const auto& g = *r.xnnpack;
  std::map<std::string, int> byType;
  for (const auto& n : g.nodes) ++byType[n.type];
  QStringList types;
  for (const auto& [t, c] : byType) types << QString("%1× %2").arg(c).arg(q(t));
  int quantized = 0;
  for (const auto& v : g.values) quantized += v.quant.kind != xnnpack::Quantization::Kind::None;
  h += QString("<b>XNNPACK graph</b><p>%1 nodes: %2<br>%3 values (%4 quantized); constants %5</p>")
           .arg(g.nodes.size()).arg(types.join(", ")).arg(g.values.size()).arg(quantized)
           .arg(q(formatBytes(g.constantBytes())));
  if (!r.namedData.empty()) {
    h += "<b>Named data it reads</b><table>";
    for (const auto& u : r.namedData)
      h += "<tr><td class=op style=\"white-space:nowrap\">" + q(u.key.size() > 20 ? u.key.substr(0, 16) + "…" : u.key) +
           "</td><td style=\"white-space:nowrap\">" + q(formatBytes(u.bytes)) + "</td><td class=sub>" + q(u.location) +
           "</td></tr>";
    h += "</table>";
  }
  for (const auto& pr : g.problems) h += "<p><b>Problem:</b> " + q(pr) + "</p>";
  return h + payloadNodes(r, g, 40);
}

}  // namespace

QString nodeDetails(const Method& m, int index, const MemoryPlanReport* plan, const Program* program,
                    const QString& values) {
  if (index < 0 || static_cast<size_t>(index) >= m.nodes.size()) return {};
  const Node& n = m.nodes[index];
  QString op = n.kind == NodeKind::Kernel && n.op >= 0 ? q(m.operators[n.op].fullName()) : nodeKindName(n.kind);
  QString h = kStyle;
  h += "<h3>" + (n.name.empty() ? QString("node %1").arg(index) : q(n.name)) + "</h3>";
  h += "<p class=op>" + op + "</p>";
  if (n.kind == NodeKind::Kernel && n.op >= 0) {
    const OperatorRef& o = m.operators[n.op];
    if (const OpSchema* s = OpRegistry::builtin().find(o.name, o.overload)) h += "<p class=sub>" + q(s->toString()) + "</p>";
  }
  h += QString("<p class=sub>step %1 of %2 in method <b>%3</b></p>").arg(index).arg(m.nodes.size()).arg(q(m.name));
  // The partitioner's verdict (to_edge_transform_and_lower with a partitioner).
  if (!n.meta.delegationTag.empty())
    h += "<p><b>XNNPACK</b> takes it: partition " + q(n.meta.delegationTag) + "</p>";
  else if (!n.meta.notDelegatedBecause.empty())
    h += "<p><b>Not delegated</b>: " + q(n.meta.notDelegatedBecause) + "</p>";
  if (n.kind == NodeKind::Delegate && program && n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size())
    return h + delegateDetails(*program, m, n.delegate) + values;
  h += "<b>Arguments</b><table>";
  const OpSchema* schema = n.kind == NodeKind::Kernel && n.op >= 0
                               ? OpRegistry::builtin().find(m.operators[n.op].name, m.operators[n.op].overload)
                               : nullptr;
  for (size_t i = 0; i < n.args.size(); ++i) {
    ValueId v = n.args[i];
    bool isOut = std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end();
    bool named = i < n.argNames.size() && !n.argNames[i].empty();
    // An out variant's arguments end with the outs repeated as its returns.
    QString name = named ? q(n.argNames[i]) : isOut ? QString("returns") : QString("#%1").arg(i);
    QString type;
    if (v >= 0 && static_cast<size_t>(v) < m.values.size())
      if (auto* t = m.values[v].tensorIf()) type = "<span class=sub>" + q(t->shapeString()) + "</span>";
    // A dtype argument is stored as c10's number: named, as torch prints it.
    if (schema && i < schema->arguments.size() && schema->arguments[i].type.base == SchemaType::Base::ScalarType &&
        v >= 0 && static_cast<size_t>(v) < m.values.size())
      if (const auto* code = std::get_if<int64_t>(&m.values[v].payload); code && !m.values[v].symbolic)
        type = "<span class=sub>" + q(std::string(scalarTypeName(static_cast<ScalarType>(*code)))) + "</span>";
    h += "<tr><td class=k>" + name + (isOut && named ? " (out)" : "") + "</td><td>" + valueLink(m, v) + " " + type + "</td></tr>";
  }
  h += "</table>";
  for (ValueId v : n.outputs) {
    if (v < 0 || static_cast<size_t>(v) >= m.values.size()) continue;
    if (m.values[v].isTensor()) {
      h += "<b>Result " + valueLink(m, v) + "</b><table>" + specRows(m, v, plan) + "</table>";
    } else if (m.values[v].symbolic) {  // a size the method computes when it runs (sym_size.int, a prim op)
      h += "<b>Result " + valueLink(m, v) + "</b><table><tr><td class=k>type</td><td>" +
           QString(valueKindName(m.values[v].kind())) + ", computed when the method runs</td></tr>";
      // sym_size.int(x, d): which symbol of which tensor it reads.
      if (n.args.size() == 2 && n.op >= 0 && m.operators[n.op].name == "aten::sym_size")
        if (const TensorSpec* t = m.values[n.args[0]].tensorIf())
          if (const auto* d = std::get_if<int64_t>(&m.values[n.args[1]].payload);
              d && *d >= 0 && static_cast<size_t>(*d) < t->symbols.size())
            h += "<tr><td class=k>equals</td><td>" + q(t->symbols[*d]) + ", dimension " + QString::number(*d) + " of " +
                 valueLink(m, n.args[0]) + "</td></tr>";
      h += "</table>";
    }
  }
  // Control flow: each graph it runs is a graph of its own, its inputs the operands above.
  for (size_t b = 0; isControlFlow(n.kind) && b < n.subgraphs.size(); ++b) {
    const int32_t g = n.subgraphs[b];
    if (g < 0 || static_cast<size_t>(g) >= m.subgraphs.size()) continue;
    const Method& branch = m.subgraphs[static_cast<size_t>(g)];
    const char* role = n.kind == NodeKind::Map    ? "For each slice of xs along dimension 0:"
                       : n.kind == NodeKind::Scan ? "For each slice of xs, from the carries (init first):"
                       : b == 0                   ? "When pred is true:"
                                                  : "Otherwise:";
    h += QString("<b>%1 %2</b>").arg(role, q(branch.name).toHtmlEscaped());
    h += "<pre>" + q(graphText(branch)).toHtmlEscaped() + "</pre>";
  }
  h += values;
  if (!n.meta.moduleStack.empty()) {
    h += "<b>Module</b><table>";
    for (const ModuleFrame& f : n.meta.moduleStack)
      h += "<tr><td>" + (f.path.empty() ? QString("(root)") : q(f.path)) + "</td><td class=sub>" + q(f.type) + "</td></tr>";
    h += "</table>";
  }
  if (n.meta.debugHandle) h += QString("<p class=sub>debug handle %1</p>").arg(*n.meta.debugHandle);
  if (!n.meta.stackTrace.empty()) {
    h += "<b>Stack trace</b><pre>";
    for (const StackFrame& f : n.meta.stackTrace) {
      h += q(f.file) + ":" + QString::number(f.line) + " in " + q(f.function) + "\n";
      if (!f.context.empty()) h += "    " + q(f.context) + "\n";
    }
    h += "</pre>";
  }
  return h;
}

QString valueDetails(const Method& m, int v, const MemoryPlanReport* plan) {
  if (v < 0 || static_cast<size_t>(v) >= m.values.size()) return {};
  const Value& val = m.values[v];
  QString h = kStyle;
  h += "<h3>%" + (val.name.empty() ? QString("value %1").arg(v) : q(val.name)) + "</h3>";
  h += "<p class=sub>in method <b>" + q(m.name) + "</b></p>";
  for (const InputSpec& in : m.signature.inputs)
    if (in.value == v) {
      static const char* kinds[] = {"user input", "parameter", "buffer", "constant tensor", "custom object", "token"};
      h += "<p>" + QString(kinds[static_cast<int>(in.kind)]) + (in.target.empty() ? "" : " <b>" + q(in.target) + "</b>") + "</p>";
    }
  for (const OutputSpec& out : m.signature.outputs)
    if (out.value == v && out.kind == OutputSpec::Kind::BufferMutation) h += "<p>new value of buffer <b>" + q(out.target) + "</b></p>";
  if (val.isTensor()) h += "<table>" + specRows(m, v, plan) + "</table>";
  else h += "<p>" + QString(valueKindName(val.kind())) + " " + valueLink(m, v) + "</p>";
  QStringList readers, writers;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    bool writes = std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end();
    bool reads = !writes && std::find(n.args.begin(), n.args.end(), v) != n.args.end();
    if (!writes && !reads) continue;
    QString link = QString("<a href=\"node:%1\">%2</a>").arg(i).arg(n.name.empty() ? QString("node %1").arg(i) : q(n.name));
    (writes ? writers : readers) << link;
  }
  if (!writers.isEmpty()) h += "<p><b>Written by</b> " + writers.join(", ") + "</p>";
  if (!readers.isEmpty()) h += "<p><b>Read by</b> " + readers.mid(0, 50).join(", ") + (readers.size() > 50 ? " …" : "") + "</p>";
  return h;
}

Inspector::Inspector(QWidget* parent) : QTextBrowser(parent) {
  setOpenLinks(false);
  setPlaceholderText(tr("Select a node or a value to see its details."));
  connect(this, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    const QString s = url.toString();
    if (s.startsWith("value:")) emit valueActivated(s.mid(6).toInt());
    else if (s.startsWith("node:")) emit nodeActivated(s.mid(5).toInt());
  });
}

const MemoryPlanReport* Inspector::planFor(const std::shared_ptr<const Program>& p, int method) {
  // The plan is cached for one method of one program; any other gets its own.
  if (p->methods[method].nonConstBufferSizes.size() <= 1) return nullptr;
  if (planProgram_ != p || planMethod_ != method || !plan_) {
    plan_ = std::make_unique<MemoryPlanReport>(analyzeMemoryPlan(p->methods[method]));
    planProgram_ = p;
    planMethod_ = method;
  }
  return plan_.get();
}

void Inspector::showNode(std::shared_ptr<const Program> p, int method, int node) {
  if (!p || method < 0 || static_cast<size_t>(method) >= p->methods.size()) return showNothing();
  const MemoryPlanReport* plan = planFor(p, method);
  program_ = p;
  method_ = method;
  QString values;
  if (run_ && node >= 0 && static_cast<size_t>(node) < p->methods[method].nodes.size())
    values = valuesDetails(*run_, p->methods[method].nodes[node].name, runApplies_);
  if (etdump_ && etdumpApplies_ && node >= 0 && static_cast<size_t>(node) < p->methods[method].nodes.size())
    values += etdumpDetails(*etdump_, p->methods[method].nodes[node].name);
  setHtml(nodeDetails(p->methods[method], node, plan, p.get(), values));
}

void Inspector::setRunValues(std::shared_ptr<const ProgramRunResult> run, bool applies) {
  run_ = std::move(run);
  runApplies_ = applies;
}

void Inspector::setEtdump(std::shared_ptr<const EtdumpResult> etdump, bool applies) {
  etdump_ = std::move(etdump);
  etdumpApplies_ = applies;
}

QString etdumpDetails(const EtdumpResult& e, const std::string& node) {
  QString h = "<b>ETDump</b>";
  const ProfiledInstruction* t = e.timing(node);
  if (!t) return h + "<p class=sub>The runtime recorded no call of this node.</p>";
  uint64_t median = medianOf(t->ticks), total = e.executeMedian();
  h += QString("<p class=sub>%1, instruction %2; times in the runtime's ticks (ns on Linux)</p>")
           .arg(QFileInfo(e.path).fileName().toHtmlEscaped())
           .arg(t->instruction);
  QStringList each;
  for (uint64_t x : t->ticks) each << QString::number(x);
  h += "<table>";
  h += QString("<tr><td class=k>median</td><td>%1 (%2% of Method::execute)</td></tr>")
           .arg(median)
           .arg(total ? 100.0 * static_cast<double>(median) / static_cast<double>(total) : 0.0, 0, 'f', 1);
  h += "<tr><td class=k>executions</td><td>" + each.join(", ") + "</td></tr>";
  for (const auto& inner : t->delegateEvents)
    h += QString("<tr><td class=k>%1</td><td>%2</td></tr>").arg(q(inner.name).toHtmlEscaped()).arg(medianOf(inner.ticks));
  if (const LoggedInstruction* l = e.logged(node)) {
    if (l->difference)
      h += QString("<tr><td class=k>logged values</td><td>largest |difference| from the interpreter "
                   "<span style='color:%1'>%2</span></td></tr>")
               .arg(*l->difference == 0 ? "#1b7f3b" : "#b00020")
               .arg(*l->difference == 0 ? QString("0 (equal)") : QString::number(*l->difference, 'g', 4));
    else
      h += "<tr><td class=k>logged values</td><td>not compared: " + q(l->notCompared).toHtmlEscaped() + "</td></tr>";
  }
  h += "</table>";
  return h;
}

QString valuesDetails(const ProgramRunResult& r, const std::string& node, bool applies) {
  QString h = "<b>Values</b>";
  if (!r.ok) return h + "<p class=sub>The run failed: " + q(r.error.toStdString()) + "</p>";
  if (!applies)
    return h + "<p class=sub>The last run was of another snapshot: Lowering &gt; Run Program (Ctrl+R) runs this one.</p>";
  const run::TracedNode* t = r.node(node);
  if (!t) return h + "<p class=sub>This node wrote nothing the run kept (not a kernel call, or not run).</p>";
  h += QString("<p class=sub>method %1, %2, instruction %3</p>").arg(q(r.run.method), r.inputs.toHtmlEscaped()).arg(t->instruction);
  static const char* kBars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  for (size_t i = 0; i < t->values.size(); ++i) {
    const run::HostValue& v = t->values[i];
    run::ValueStats st = run::valueStats(v, 24);
    TensorSpec shape;
    shape.dtype = v.dtype;
    shape.sizes = v.sizes;
    h += "<table>";
    h += "<tr><td class=k>tensor</td><td>" + q(shape.shapeString()) + "</td></tr>";
    h += QString("<tr><td class=k>min / max</td><td>%1 / %2</td></tr>").arg(st.min, 0, 'g', 6).arg(st.max, 0, 'g', 6);
    h += QString("<tr><td class=k>mean / std</td><td>%1 / %2</td></tr>").arg(st.mean, 0, 'g', 6).arg(st.stddev, 0, 'g', 6);
    if (st.nans || st.infinities)
      h += QString("<tr><td class=k>NaN / Inf</td><td><span style='color:#b00020'>%1 / %2</span></td></tr>")
               .arg(st.nans).arg(st.infinities);
    uint64_t top = *std::max_element(st.histogram.begin(), st.histogram.end());
    QString bars;
    // One character per bin over [min, max]: empty bins blank, the fullest a full block.
    for (uint64_t c : st.histogram) bars += c && top ? QString::fromUtf8(kBars[(c * 7) / top]) : QString("&nbsp;");
    h += "<tr><td class=k>histogram</td><td><span style='font-family:monospace;background:#f3f5f7'>" + bars +
         "</span></td></tr>";
    h += "<tr><td class=k>first</td><td class=op>" + q(run::firstValues(v, 6)) + "</td></tr>";
    h += "</table>";
  }
  if (r.reference >= 0) {
    auto it = r.differences.find(node);
    if (it == r.differences.end()) {
      h += "<p class=sub>No node of this name in " + q(r.referenceNote.toStdString()) + ".</p>";
    } else {
      bool differs = it->second > r.tolerance;
      h += QString("<p>Against %1: largest |difference| <span style='color:%2'>%3</span></p>")
               .arg(q(r.referenceNote.toStdString()), differs ? "#b00020" : "#1b7f3b")
               .arg(it->second == 0 ? QString("0 (equal)") : QString::number(it->second, 'g', 4));
    }
  } else if (!r.referenceNote.isEmpty()) {
    h += "<p class=sub>No reference: " + q(r.referenceNote.toStdString()) + "</p>";
  }
  return h;
}

void Inspector::showValue(std::shared_ptr<const Program> p, int method, int value) {
  if (!p || method < 0 || static_cast<size_t>(method) >= p->methods.size()) return showNothing();
  const MemoryPlanReport* plan = planFor(p, method);
  program_ = p;
  method_ = method;
  setHtml(valueDetails(p->methods[method], value, plan));
}

void Inspector::showMessage(const QString& html) {
  program_.reset();
  method_ = -1;
  setHtml(kStyle + html);
}

void Inspector::showNothing() {
  program_.reset();
  method_ = -1;
  planProgram_.reset();  // an earlier program is not kept alive by its cached plan
  planMethod_ = -1;
  plan_.reset();
  clear();
}

}  // namespace lstudio::ui
