#include "ui/export_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>

#include "ui/chart_export.h"

namespace attnscope::ui {

const std::vector<ExportDialog::Preset>& ExportDialog::presets() {
  // Column and page widths of the common journal templates (IEEE, ACM, Springer: 3.5 and 7.16 in).
  static const std::vector<Preset> p{{"As on screen", 0, 0},
                                     {"Journal column (3.5 x 2.6 in)", 3.5, 2.6},
                                     {"Journal page width (7.2 x 3.2 in)", 7.2, 3.2},
                                     {"Slide 16:9 (13.33 x 7.5 in)", 13.333, 7.5},
                                     {"Custom", -1, -1}};
  return p;
}

ExportDialog::ExportDialog(const QString& suggested, QSizeF inches, QSize screen, QWidget* parent)
    : QDialog(parent), screen_(screen) {
  setWindowTitle(tr("Export chart"));
  file_ = new QLineEdit(suggested, this);
  auto* browse = new QPushButton(tr("Browse..."), this);
  format_ = new QComboBox(this);
  format_->addItems({"png", "svg", "pdf"});
  format_->setCurrentText(QFileInfo(suggested).suffix().toLower());
  preset_ = new QComboBox(this);
  preset_->setObjectName("exportPreset");
  for (const Preset& p : presets()) preset_->addItem(tr(p.name));
  unit_ = new QComboBox(this);
  unit_->setObjectName("exportUnit");
  unit_->addItems({"in", "mm", "px"});
  unit_->setToolTip(tr("px: pixels of the PNG at its DPI; SVG and PDF are sized in inches or mm"));
  width_ = new QDoubleSpinBox(this);
  height_ = new QDoubleSpinBox(this);
  width_->setObjectName("exportWidth");
  height_->setObjectName("exportHeight");
  dpi_ = new QSpinBox(this);
  dpi_->setRange(24, 2400);
  dpi_->setValue(96);
  dpi_->setToolTip(tr("PNG: pixels per inch (the chart keeps its printed size, fonts keep their point size). "
                      "SVG and PDF are vector: the DPI only converts px sizes"));
  chart_ = new QComboBox(this);
  chart_->setObjectName("exportChart");
  chart_->addItem(tr("All"), -1);
  summary_ = new QLabel(this);
  summary_->setObjectName("exportSummary");
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(file_, 1);
  file_row->addWidget(browse);
  auto* size_row = new QHBoxLayout;
  size_row->addWidget(width_, 1);
  size_row->addWidget(new QLabel(QStringLiteral("\u00d7"), this));
  size_row->addWidget(height_, 1);
  size_row->addWidget(unit_);
  auto* form = new QFormLayout(this);
  form->addRow(tr("File"), file_row);
  form->addRow(tr("Format"), format_);
  form->addRow(tr("Chart"), chart_);
  form->addRow(tr("Size"), preset_);
  form->addRow(tr("Width \u00d7 height"), size_row);
  form->addRow(tr("DPI"), dpi_);
  form->addRow(QString(), summary_);
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
    QFileInfo info(file_->text());
    if (info.suffix().toLower() != fmt) file_->setText(info.path() + "/" + info.completeBaseName() + "." + fmt);
    updateSummary();
  });
  connect(preset_, &QComboBox::activated, this, [this](int i) { choosePreset(i); });
  connect(unit_, &QComboBox::currentTextChanged, this, [this] {
    // The same size in the new unit.
    const double old_per_inch = shown_unit_ == "mm" ? 25.4 : shown_unit_ == "px" ? dpi_->value() : 1.0;
    const QSizeF in(width_->value() / old_per_inch, height_->value() / old_per_inch);
    shown_unit_ = unit_->currentText();
    showInches(in);
  });
  connect(dpi_, &QSpinBox::valueChanged, this, [this](int) {
    if (shown_unit_ == "px") preset_->setCurrentIndex(static_cast<int>(presets().size()) - 1);  // px fixed: size changes
    updateSummary();
  });
  for (QDoubleSpinBox* box : {width_, height_})
    connect(box, &QDoubleSpinBox::valueChanged, this, [this] {
      preset_->setCurrentIndex(static_cast<int>(presets().size()) - 1);  // typed: custom
      updateSummary();
    });
  setInches(inches);
}

double ExportDialog::perInch() const {
  return shown_unit_ == "mm" ? 25.4 : shown_unit_ == "px" ? static_cast<double>(dpi_->value()) : 1.0;
}

void ExportDialog::showInches(QSizeF in) {
  const QSignalBlocker bw(width_), bh(height_);
  const double f = perInch();
  const bool px = shown_unit_ == "px";
  for (QDoubleSpinBox* box : {width_, height_}) {
    box->setDecimals(px ? 0 : shown_unit_ == "mm" ? 1 : 2);
    box->setRange(0.5 * f, 100 * f);  // half an inch to 100 inches
    box->setSingleStep(px ? 10 : shown_unit_ == "mm" ? 1 : 0.1);
    box->setSuffix(" " + shown_unit_);
  }
  width_->setValue(in.width() * f);
  height_->setValue(in.height() * f);
  updateSummary();
}

void ExportDialog::setInches(QSizeF inches) {
  showInches(inches);
  // The preset that matches, else custom.
  int match = static_cast<int>(presets().size()) - 1;
  for (size_t i = 1; i + 1 < presets().size(); ++i)
    if (std::abs(presets()[i].width_in - inches.width()) < 0.01 && std::abs(presets()[i].height_in - inches.height()) < 0.01)
      match = static_cast<int>(i);
  preset_->setCurrentIndex(match);
}

void ExportDialog::choosePreset(int index) {
  if (index < 0 || index >= static_cast<int>(presets().size())) return;
  const Preset& p = presets()[static_cast<size_t>(index)];
  if (p.width_in < 0) return;  // custom: keep what is there
  const QSizeF in = p.width_in == 0 ? QSizeF(screen_.width() / 96.0, screen_.height() / 96.0)
                                    : QSizeF(p.width_in, p.height_in);
  showInches(in);
  preset_->setCurrentIndex(index);
}

void ExportDialog::setCharts(const QStringList& titles) {
  chart_->clear();
  chart_->addItem(titles.size() > 1 ? tr("All %1, side by side").arg(titles.size()) : tr("All"), -1);
  if (titles.size() > 1)
    for (int i = 0; i < titles.size(); ++i) chart_->addItem(titles[i], i);
  chart_->setEnabled(titles.size() > 1);
}

int ExportDialog::chart() const { return chart_->currentData().toInt(); }

QSizeF ExportDialog::inches() const { return {width_->value() / perInch(), height_->value() / perInch()}; }
QSize ExportDialog::size() const { return exportPixels(inches(), format(), dpi()); }
QString ExportDialog::file() const { return file_->text(); }
QString ExportDialog::format() const { return format_->currentText(); }
int ExportDialog::dpi() const { return dpi_->value(); }
QString ExportDialog::unit() const { return shown_unit_; }

void ExportDialog::setDpi(int dpi) {
  const QSizeF in = inches();
  const QSignalBlocker block(dpi_);
  dpi_->setValue(dpi);
  if (shown_unit_ == "px") showInches(in);  // the same printed size in the new pixels
  updateSummary();
}

void ExportDialog::setUnit(const QString& unit) {
  if (unit == "in" || unit == "mm" || unit == "px") unit_->setCurrentText(unit);
}

QString ExportDialog::summary() const {
  const QSizeF in = inches();
  const QString fmt = format();
  const QString printed = tr("%1 \u00d7 %2 in (%3 \u00d7 %4 mm)")
                              .arg(in.width(), 0, 'f', 2)
                              .arg(in.height(), 0, 'f', 2)
                              .arg(in.width() * 25.4, 0, 'f', 0)
                              .arg(in.height() * 25.4, 0, 'f', 0);
  if (fmt == "png") {
    const QSize px = size();
    return tr("PNG %1 \u00d7 %2 px: %3 at %4 DPI").arg(px.width()).arg(px.height()).arg(printed).arg(dpi());
  }
  if (fmt == "pdf")
    return tr("PDF page %1 \u00d7 %2 pt: %3, vector")
        .arg(qRound(in.width() * 72))
        .arg(qRound(in.height() * 72))
        .arg(printed);
  return tr("SVG %1, vector").arg(printed);
}

void ExportDialog::updateSummary() { summary_->setText(summary()); }

}  // namespace attnscope::ui
