// The Help menu's pages: every keyboard shortcut, and how to read the graph
// and the memory plan. Both are non-modal, so the window stays usable beside them.
#pragma once

#include <QList>
#include <QPair>
#include <QString>

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

}  // namespace lstudio::ui
