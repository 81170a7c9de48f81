#include "ui/config/ExportDialog.h"

#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <set>

#include "engine/support/FormatUtil.h"
#include "engine/lowering/ConstantTagging.h"
#include "ui/support/Background.h"

namespace lstudio::ui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

ExportDialog::ExportDialog(std::shared_ptr<const Program> program, ExecutorchBackendConfig config,
                           const QString& suggestedPath, QWidget* parent)
    : QDialog(parent), program_(std::move(program)), config_(std::move(config)) {
  setWindowTitle(tr("Export ExecuTorch program"));
  setMinimumWidth(620);
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  pte_ = new QLineEdit(suggestedPath);
  auto* browse = new QPushButton(tr("Browse…"));
  auto* pteRow = new QHBoxLayout;
  pteRow->addWidget(pte_, 1);
  pteRow->addWidget(browse);
  form->addRow(tr("Program (.pte):"), pteRow);
  ptdDir_ = new QLineEdit;
  ptdDir_->setPlaceholderText(tr("beside the .pte"));
  auto* browseDir = new QPushButton(tr("Browse…"));
  auto* ptdRow = new QHBoxLayout;
  ptdRow->addWidget(ptdDir_, 1);
  ptdRow->addWidget(browseDir);
  form->addRow(tr("Data files (.ptd) folder:"), ptdRow);
  layout->addLayout(form);

  // What will be written: the .ptd files the tagging sends constants to.
  std::map<std::string, std::pair<size_t, uint64_t>> perFile;
  if (program_)
    for (const Method& m : program_->methods)
      for (const Value& v : m.values)
        if (auto* t = v.tensorIf(); t && t->external) {
          auto& [n, bytes] = perFile[t->constantTag.empty() ? kDefaultExternalTag : t->constantTag];
          ++n;
          bytes += t->nbytes().value_or(0);
        }
  QString what = perFile.empty() ? tr("All constants stay inside the .pte.") : tr("Data files:");
  for (const auto& [tag, nb] : perFile)
    what += tr("<br>&nbsp;&nbsp;<b>%1.ptd</b>: %2 tensors, %3").arg(q(tag).toHtmlEscaped()).arg(nb.first).arg(q(formatBytes(nb.second)));
  what += tr("<br>Segment alignment %1, constant tensor alignment %2.")
              .arg(config_.segmentAlignment)
              .arg(config_.constantTensorAlignment ? QString::number(*config_.constantTensorAlignment) : tr("default"));
  what_ = new QLabel(what);
  what_->setWordWrap(true);
  layout->addWidget(what_);

  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setTextVisible(true);
  progress_->hide();
  layout->addWidget(progress_);
  result_ = new QPlainTextEdit;
  result_->setReadOnly(true);
  result_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  result_->setPlaceholderText(tr("What was written appears here."));
  result_->setMinimumHeight(140);
  layout->addWidget(result_, 1);

  auto* buttons = new QHBoxLayout;
  openFolder_ = new QPushButton(tr("Open Folder"));
  openFolder_->setEnabled(false);
  buttons->addWidget(openFolder_);
  buttons->addStretch(1);
  cancelButton_ = new QPushButton(tr("Close"));
  exportButton_ = new QPushButton(tr("Export"));
  exportButton_->setDefault(true);
  buttons->addWidget(cancelButton_);
  buttons->addWidget(exportButton_);
  layout->addLayout(buttons);

  connect(browse, &QPushButton::clicked, this, [this] {
    QString p = QFileDialog::getSaveFileName(this, tr("Export program"), pte_->text(), tr("ExecuTorch program (*.pte)"));
    if (!p.isEmpty()) pte_->setText(p.endsWith(".pte") ? p : p + ".pte");
  });
  connect(browseDir, &QPushButton::clicked, this, [this] {
    QString d = QFileDialog::getExistingDirectory(this, tr("Folder of the .ptd files"), QFileInfo(pte_->text()).absolutePath());
    if (!d.isEmpty()) ptdDir_->setText(d);
  });
  connect(exportButton_, &QPushButton::clicked, this, [this] { startExport(); });
  connect(cancelButton_, &QPushButton::clicked, this, [this] {
    if (running()) cancelExport();
    else reject();
  });
  connect(openFolder_, &QPushButton::clicked, this,
          [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(pte_->text()).absolutePath())); });
  connect(&watcher_, &QFutureWatcher<Result<ExportOutcome>>::finished, this, &ExportDialog::finished);
}

ExportDialog::~ExportDialog() {
  cancel_->store(true);
  watcher_.waitForFinished();
}

void ExportDialog::setDestination(const QString& ptePath, const QString& ptdDir) {
  pte_->setText(ptePath);
  ptdDir_->setText(ptdDir);
}

QStringList ExportDialog::filesThatWouldBeReplaced() const {
  QStringList out;
  if (QFileInfo::exists(pte_->text())) out << pte_->text();
  std::set<std::string> tags;
  if (program_)
    for (const Method& m : program_->methods)
      for (const Value& v : m.values)
        if (auto* t = v.tensorIf(); t && t->external) tags.insert(t->constantTag.empty() ? kDefaultExternalTag : t->constantTag);
  QString dir = ptdDir_->text().isEmpty() ? QFileInfo(pte_->text()).absolutePath() : ptdDir_->text();
  for (const auto& t : tags)
    if (QFileInfo::exists(dir + "/" + q(t) + ".ptd")) out << dir + "/" + q(t) + ".ptd";
  return out;
}

bool ExportDialog::startExport() {
  if (running() || !program_) return false;
  QString path = pte_->text().trimmed();
  if (path.isEmpty()) {
    result_->setPlainText(tr("Choose where the .pte goes."));
    return false;
  }
  if (askOverwrite_) {
    QStringList replaced = filesThatWouldBeReplaced();
    if (!replaced.isEmpty() &&
        QMessageBox::question(this, tr("Replace files?"), tr("These files exist and will be replaced:\n%1").arg(replaced.join("\n")),
                              QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) != QMessageBox::Yes)
      return false;
  }
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  progress_->setValue(0);
  progress_->show();
  exportButton_->setEnabled(false);
  openFolder_->setEnabled(false);
  cancelButton_->setText(tr("Cancel"));
  result_->setPlainText(tr("Exporting…"));
  auto program = program_;
  auto config = config_;
  auto cancel = cancel_;
  std::string out = path.toStdString(), dir = ptdDir_->text().trimmed().toStdString();
  QPointer<QProgressBar> bar = progress_;
  watcher_.setFuture(QtConcurrent::run(inBackground([program, config, out, dir, cancel, bar] {
    int last = -1;
    return exportToFiles(*program, config, out, dir, [&](uint64_t done, uint64_t total) {
      int permille = total ? static_cast<int>(done * 1000 / total) : 1000;
      if (permille != last && bar) {  // at most 1000 updates, queued to the GUI thread
        last = permille;
        QMetaObject::invokeMethod(bar, [bar, permille] { if (bar) bar->setValue(permille); }, Qt::QueuedConnection);
      }
      return !cancel->load();
    });
  })));
  return true;
}

void ExportDialog::cancelExport() { cancel_->store(true); }

void ExportDialog::finished() {
  Result<ExportOutcome> r = watcher_.result();
  exportButton_->setEnabled(true);
  cancelButton_->setText(tr("Close"));
  if (!r) {
    bool cancelled = cancel_->load();
    QString msg = cancelled ? tr("Export cancelled; existing files were left as they were.") : q(r.error().message());
    result_->setPlainText(msg);
    progress_->hide();
    emit exportFinished(false, msg);
    return;
  }
  progress_->setValue(1000);
  QString text = q(exportSummary(r.value()));
  for (const auto& n : r->notes) text += "note: " + q(n) + "\n";
  result_->setPlainText(text);
  openFolder_->setEnabled(true);
  emit exportFinished(true, text);
}

QString ExportDialog::resultText() const { return result_->toPlainText(); }

}  // namespace lstudio::ui
