#include "ui/Inspector.h"

#include <QUrl>

#include "engine/support/FormatUtil.h"
#include "engine/ir/OpRegistry.h"

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
    if (plan)
      for (const PlannedTensor& p : plan->tensors)
        if (p.value == v) {
          s += QString(", lifetime steps %1–%2").arg(p.first).arg(p.last);
          break;
        }
  }
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

}  // namespace

QString nodeDetails(const Method& m, int index, const MemoryPlanReport* plan) {
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
  if (n.kind == NodeKind::Delegate && n.delegate >= 0 && static_cast<size_t>(n.delegate) < m.delegates.size()) {
    const Delegate& d = m.delegates[n.delegate];
    h += "<p>backend " + q(d.backendId) + ", blob " + q(formatBytes(d.blob.size)) + "</p>";
  }
  h += QString("<p class=sub>step %1 of %2 in method <b>%3</b></p>").arg(index).arg(m.nodes.size()).arg(q(m.name));
  h += "<b>Arguments</b><table>";
  for (size_t i = 0; i < n.args.size(); ++i) {
    ValueId v = n.args[i];
    bool isOut = std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end();
    bool named = i < n.argNames.size() && !n.argNames[i].empty();
    // An out variant's arguments end with the outs repeated as its returns.
    QString name = named ? q(n.argNames[i]) : isOut ? QString("returns") : QString("#%1").arg(i);
    QString type;
    if (v >= 0 && static_cast<size_t>(v) < m.values.size())
      if (auto* t = m.values[v].tensorIf()) type = "<span class=sub>" + q(t->shapeString()) + "</span>";
    h += "<tr><td class=k>" + name + (isOut && named ? " (out)" : "") + "</td><td>" + valueLink(m, v) + " " + type + "</td></tr>";
  }
  h += "</table>";
  for (ValueId v : n.outputs) {
    if (v < 0 || static_cast<size_t>(v) >= m.values.size() || !m.values[v].isTensor()) continue;
    h += "<b>Result " + valueLink(m, v) + "</b><table>" + specRows(m, v, plan) + "</table>";
  }
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
  setHtml(nodeDetails(p->methods[method], node, plan));
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
