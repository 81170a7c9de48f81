#include "ui/window/HelpPages.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace lstudio::ui {
namespace {

QDialog* pageDialog(QWidget* parent, const QString& title, const char* name, QWidget* content, QSize size) {
  auto* d = new QDialog(parent);
  d->setObjectName(name);
  d->setWindowTitle(title);
  d->setAttribute(Qt::WA_DeleteOnClose);
  auto* layout = new QVBoxLayout(d);
  layout->addWidget(content, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, d);
  QObject::connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::close);
  layout->addWidget(buttons);
  d->resize(size);
  return d;
}

/// "&Open…" -> "Open".
QString plain(const QAction* a) { return a->text().remove('&').remove(QChar(0x2026)).trimmed(); }

void addMenu(const QMenu* menu, const QString& where, QList<QPair<QString, QString>>& rows) {
  for (QAction* a : menu->actions()) {
    if (a->menu()) addMenu(a->menu(), where + " › " + plain(a), rows);
    else if (!a->isSeparator() && !a->shortcut().isEmpty())
      rows.append({where + " › " + plain(a), a->shortcut().toString(QKeySequence::NativeText)});
  }
}

// The page's text: what each mark means, in the words and colours the views use
// (GraphItems' palette, PlanCanvas' lines).
const char* kReadingGuide = QT_TRANSLATE_NOOP("HelpPages", R"(
<h3>The graph</h3>
<p>One box per operator call, data flowing down. A box reads the <b>operator</b> (<code>addmm.out</code>)
over the <b>dtype and shape</b> of what it writes (<code>float32[4, 256]</code>). Colours tell the kind:
<span style="background:#E3EEFB">&nbsp;compute&nbsp;</span>
<span style="background:#E2F3F0">&nbsp;view&nbsp;</span>
<span style="background:#FDF0DC">&nbsp;memory (copies, allocations, cache updates)&nbsp;</span>
<span style="background:#ECE6F8">&nbsp;delegate&nbsp;</span>
<span style="background:#E6F4E4">&nbsp;input&nbsp;</span>
<span style="background:#EEF1F4">&nbsp;parameter or buffer&nbsp;</span>
<span style="background:#F6F6F6">&nbsp;constant&nbsp;</span>
and the dark box is the method's outputs. A <b>dashed</b> box is a view that shares its base's
bytes (no instruction makes it). The weights, buffers and constants an operator reads are lines inside its
box (name, dtype and shape); click a line to inspect that constant.</p>
<p>After a pass, what it changed is marked: a <b style="color:#2E9D3A">green ring and +</b> for a node it
added, an <b style="color:#E67E00">orange ring and ~</b> for one it modified; a folded group with a change
inside is marked the same way (its tooltip names what changed in it). The Text view lists the nodes the
pass removed.</p>
<p><b>Compare</b> (Ctrl+D) puts the snapshot before the pass on the left, each pane titled with the pass and
step it shows; the left pane rings in <b style="color:#D32F2F">red with −</b> the nodes the pass removed.
Panning, zooming and opening or folding a group in one pane does the same in the other, and the groups
stay open from pass to pass. The <b>Changes</b> dock lists the nodes added, modified and removed, by
operator; click one to select and centre it in both panes.</p>
<p><b>Groups</b> are the modules of <code>nn_module_stack</code> (and delegates); a <code>.pte</code>, which
has none, is grouped by the names of the constants its operators read (the reader of
<code>layers.3.attention.wq.weight</code> goes to <code>layers.3.attention</code>). Identical sibling groups
fold into one box (<code>layers.0-31</code>, <code>×32</code>) that opens into them. Big graphs start folded:
double-click a group (or select it and press Return) to open it; Shift+Return folds the group of the
selected node. Click a node to see it in the Inspector; the selection is shared with the memory plan and the text.</p>
<h3>The memory plan</h3>
<p>One <b>arena</b> (<code>mem_id</code>) at a time. Across: the program's steps (instructions). Up: the byte
offset in the arena. Each <b>rectangle</b> is a planned tensor, from the step that writes it to the last that
reads it; two tensors may share bytes only where their lifetimes do not overlap, and that is what the planner
exploits. Colours follow the producing op or the module (the legend names them; its "+N more" lists the rest).</p>
<p>Below, <b>live bytes</b> per step: the <span style="color:#C82828">red line</span> is the arena's size, the
<span style="color:#288C3C">green dashed line</span> the <b>lower bound</b> no plan can beat (the most bytes alive
at once), and the <span style="color:#E67800">orange dotted line</span> the <b>peak</b>. The table beside it lists
the tensors alive at the peak, largest first; click a header to sort, a row to select the tensor everywhere.</p>
<h3>The size view</h3>
<p>Where the bytes of the open <code>.pte</code> (and of the <code>.ptd</code> files opened with it) go: every byte
of each file is in one rectangle, and a rectangle's area is its share of the file. The parts are the blocks with a
bold band (name, size, share); inside them, their items: a constant, a delegate's payload, a table of the program.
Colours tell the kind of part:
<span style="background:#9CC2EA">&nbsp;program structure&nbsp;</span>
<span style="background:#F4CB7A">&nbsp;constants&nbsp;</span>
<span style="background:#EEA79B">&nbsp;mutable data&nbsp;</span>
<span style="background:#C2AEE8">&nbsp;delegate payloads&nbsp;</span>
<span style="background:#A5D9C5">&nbsp;delegate data (weights)&nbsp;</span>
<span style="background:#D9D9D9">&nbsp;padding&nbsp;</span>.
Small blocks carry no label: hover for it. With <code>.ptd</code> files, double-click a file to see it alone. Click a block for its name, bytes and share; a constant is selected in
the Constants table and the graph, a delegate's payload or weights select the call that runs it.
View › Compare Sizes With… reads another <code>.pte</code> or <code>.ptd</code> and lists the change per part and per
item (click a header to sort). A <code>.pt2</code> has no file layout yet: export it first.</p>
<h3>The passes</h3>
<p>The left panel lists <code>to_executorch</code>'s passes in ExecuTorch's order with their state and time.
F10 runs the next one, Shift+F10 goes back, F5 runs to the end; click a pass to see the program after it.
A config change (Config panel) runs the passes again and the log gives the arena sizes old → new.</p>
)");

}  // namespace

QList<QPair<QString, QString>> menuShortcuts(const QMenuBar* bar) {
  QList<QPair<QString, QString>> rows;
  for (QAction* top : bar->actions())
    if (top->menu()) addMenu(top->menu(), plain(top), rows);
  return rows;
}

QList<QPair<QString, QString>> actionShortcuts(const QString& where, const QList<QAction*>& actions) {
  QList<QPair<QString, QString>> rows;
  for (QAction* a : actions)
    if (a && !a->shortcut().isEmpty()) rows.append({where + " › " + plain(a), a->shortcut().toString(QKeySequence::NativeText)});
  return rows;
}

QList<QPair<QString, QString>> canvasShortcuts() {
  // Handled in GraphView::keyPressEvent, GraphCanvas::wheelEvent, PlanCanvas and FindBar.
  return {
      {QObject::tr("Graph › open or close the selected group"), "Return"},
      {QObject::tr("Graph › fold the selected node's group"), "Shift+Return"},
      {QObject::tr("Graph › zoom"), QObject::tr("+ / −, wheel")},
      {QObject::tr("Graph › clear the selection"), "Esc"},
      {QObject::tr("Find bar › next / previous match"), "Enter / Shift+Enter"},
      {QObject::tr("Find bar › close"), "Esc"},
      {QObject::tr("Memory plan › zoom steps / bytes"), QObject::tr("+ / −, wheel / Ctrl+ the same")},
      {QObject::tr("Memory plan › pan"), QObject::tr("arrow keys")},
      {QObject::tr("Memory plan › fit the arena"), "F, Home or 0"},
      {QObject::tr("Loading › cancel"), "Esc"},
  };
}

QDialog* shortcutsDialog(QWidget* parent, const QList<QPair<QString, QString>>& rows) {
  auto* table = new QTableWidget(int(rows.size()), 2);
  table->setObjectName("shortcutsTable");
  table->setHorizontalHeaderLabels({QObject::tr("Keys"), QObject::tr("Action")});
  table->verticalHeader()->hide();
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setAlternatingRowColors(true);
  table->setWordWrap(false);
  for (int r = 0; r < rows.size(); ++r) {
    table->setItem(r, 0, new QTableWidgetItem(rows[r].second));
    table->setItem(r, 1, new QTableWidgetItem(rows[r].first));
  }
  table->resizeColumnsToContents();
  table->horizontalHeader()->setStretchLastSection(true);
  return pageDialog(parent, QObject::tr("Keyboard Shortcuts"), "shortcutsDialog", table, QSize(600, 640));
}

QDialog* readingGuideDialog(QWidget* parent) {
  auto* text = new QTextBrowser;
  text->setObjectName("readingGuide");
  text->setOpenExternalLinks(true);
  text->setHtml(QCoreApplication::translate("HelpPages", kReadingGuide));
  return pageDialog(parent, QObject::tr("How to Read the Graph and the Plan"), "readingGuideDialog", text, QSize(640, 600));
}

QStringList readmeSections() {
  return {"Install and start", "The studio", "The command line", "Fidelity and speed", "Layout"};
}

QString findReadme() {
  // The build tree has it two folders above the executable; a package may carry it in its docs.
  const QString app = QCoreApplication::applicationDirPath();
  for (const QString& rel : {"../README.md", "../../README.md", "../share/doc/lowering-studio/README.md"}) {
    const QFileInfo f(QDir(app).filePath(rel));
    if (f.isFile()) return f.canonicalFilePath();
  }
  return {};
}

QString readmeSection(const QString& readme, const QString& heading) {
  const QStringList lines = readme.split('\n');
  QStringList out;
  for (const QString& line : lines) {
    if (line.startsWith("## ")) {
      if (!out.isEmpty()) break;
      if (line.mid(3).startsWith(heading, Qt::CaseInsensitive)) out << line;
    } else if (!out.isEmpty()) {
      out << line;
    }
  }
  return out.join('\n');
}

QDialog* readmeDialog(QWidget* parent, const QString& path, const QString& heading) {
  auto* text = new QTextBrowser;
  text->setObjectName("readmeText");
  text->setOpenExternalLinks(true);
  QString section;
  if (QFile f(path); !path.isEmpty() && f.open(QIODevice::ReadOnly)) {
    section = readmeSection(QString::fromUtf8(f.readAll()), heading);
    // The screenshots it shows are paths relative to the README.
    text->setSearchPaths({QFileInfo(path).absolutePath()});
  }
  if (section.isEmpty())
    text->setHtml(QObject::tr("<p>The README (section \"%1\") was not found beside the program "
                              "(<code>../README.md</code>, <code>../../README.md</code> or "
                              "<code>../share/doc/lowering-studio/README.md</code> from its folder).</p>")
                      .arg(heading.toHtmlEscaped()));
  else
    text->setMarkdown(section);
  return pageDialog(parent, QObject::tr("README: %1").arg(heading), "readmeDialog", text, QSize(760, 640));
}

}  // namespace lstudio::ui
