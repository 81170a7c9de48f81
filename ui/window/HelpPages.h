// The Help menu's pages: every keyboard shortcut, and how to read the graph
// and the memory plan. Both are non-modal, so the window stays usable beside them.
#pragma once

#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

class QAction;
class QDialog;
class QMenuBar;
class QWidget;

namespace lstudio::ui {

/// (where and what, keys) for every action with a shortcut in the menus, as
/// "Lowering › Next Pass" → "F10": read from the actions, so it cannot drift.
QList<QPair<QString, QString>> menuShortcuts(const QMenuBar* bar);
/// The same for actions outside the menus, under `where` ("Config" for its undo and redo).
QList<QPair<QString, QString>> actionShortcuts(const QString& where, const QList<QAction*>& actions);
/// (what it does, keys) for the keys no action carries: those the graph and plan canvases handle.
QList<QPair<QString, QString>> canvasShortcuts();
/// A dialog listing `rows` (what, keys), keys first.
QDialog* shortcutsDialog(QWidget* parent, const QList<QPair<QString, QString>>& rows);
/// "How to read the graph and the plan": one short page.
QDialog* readingGuideDialog(QWidget* parent);

/// The README's sections the Help menu opens, by the start of their "## " heading.
QStringList readmeSections();
/// The README beside the executable (build tree) or in the installed docs; empty when none.
QString findReadme();
/// The Markdown of the section of `readme` whose "## " heading starts with `heading`, heading included.
QString readmeSection(const QString& readme, const QString& heading);
/// That section of the README at `path` rendered in a page (offline: no browser needed),
/// with its images; a page saying where the README was looked for when `path` is empty.
QDialog* readmeDialog(QWidget* parent, const QString& path, const QString& heading);

}  // namespace lstudio::ui
