#include "ui/export_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

namespace attnscope::ui {

ExportDialog::ExportDialog(const QString& suggested, QSize size, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Export chart"));
  file_ = new QLineEdit(suggested, this);
  auto* browse = new QPushButton(tr("Browse..."), this);
  format_ = new QComboBox(this);
  format_->addItems({"png", "svg", "pdf"});
  format_->setCurrentText(QFileInfo(suggested).suffix().toLower());
  width_ = new QSpinBox(this);
  height_ = new QSpinBox(this);
  dpi_ = new QSpinBox(this);
  width_->setRange(100, 20000);
  height_->setRange(100, 20000);
  dpi_->setRange(24, 2400);
  width_->setValue(size.width());
  height_->setValue(size.height());
  dpi_->setValue(96);
  width_->setSuffix(" px");
  height_->setSuffix(" px");
  dpi_->setToolTip(tr("PNG only: the chart is laid out for this resolution (fonts, margins and lines scale "
                      "together) and the DPI is written into the file"));
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(file_, 1);
  file_row->addWidget(browse);
  auto* form = new QFormLayout(this);
  form->addRow(tr("File"), file_row);
  form->addRow(tr("Format"), format_);
  form->addRow(tr("Width"), width_);
  form->addRow(tr("Height"), height_);
  form->addRow(tr("DPI"), dpi_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Export chart"), file_->text(),
                                                   tr("Images (*.png *.svg *.pdf)"));
    if (!f.isEmpty()) file_->setText(f);
  });
  connect(file_, &QLineEdit::textChanged, this, [this](const QString& f) {
    const QString suffix = QFileInfo(f).suffix().toLower();
    if (suffix == "png" || suffix == "svg" || suffix == "pdf") format_->setCurrentText(suffix);
  });
  connect(format_, &QComboBox::currentTextChanged, this, [this](const QString& fmt) {
    dpi_->setEnabled(fmt == "png");
    QFileInfo info(file_->text());
    if (info.suffix().toLower() != fmt) file_->setText(info.path() + "/" + info.completeBaseName() + "." + fmt);
  });
}

QString ExportDialog::file() const { return file_->text(); }
QString ExportDialog::format() const { return format_->currentText(); }
QSize ExportDialog::size() const { return {width_->value(), height_->value()}; }
int ExportDialog::dpi() const { return dpi_->value(); }
void ExportDialog::setDpi(int dpi) { dpi_->setValue(dpi); }

}  // namespace attnscope::ui
