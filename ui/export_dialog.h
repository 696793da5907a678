#pragma once
// Asks where and how to export the current chart: file, format (PNG/SVG/PDF), size and DPI.

#include <QDialog>
#include <QSize>

class QComboBox;
class QLineEdit;
class QSpinBox;

namespace attnscope::ui {

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  ExportDialog(const QString& suggested_file, QSize size, QWidget* parent = nullptr);
  QString file() const;
  QString format() const;
  QSize size() const;
  int dpi() const;
  void setDpi(int dpi);

 private:
  QLineEdit* file_;
  QComboBox* format_;
  QSpinBox *width_, *height_, *dpi_;
};

}  // namespace attnscope::ui
