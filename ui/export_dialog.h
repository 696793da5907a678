#pragma once
// Asks where and how to export the current chart: file, format (PNG/SVG/PDF), its printed size
// (inches, mm or pixels at the DPI, with presets for a journal column, a page width and a slide)
// and the DPI. The pixels follow from size and DPI, so a 300 DPI figure is as large on paper as a
// 96 DPI one, only sharper; PDF pages are the size in points.

#include <vector>

#include <QDialog>
#include <QSize>
#include <QSizeF>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace attnscope::ui {

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  struct Preset {
    const char* name;
    double width_in, height_in;  // 0: the chart as on screen
  };
  static const std::vector<Preset>& presets();

  // screen: the chart's size on screen in pixels (the "As on screen" preset, at 96 per inch).
  ExportDialog(const QString& suggested_file, QSizeF inches, QSize screen, QWidget* parent = nullptr);
  QString file() const;
  QString format() const;
  QSizeF inches() const;
  // The pixels exportPlots takes (exportPixels of inches, format and DPI).
  QSize size() const;
  int dpi() const;
  void setDpi(int dpi);
  QString unit() const;  // "in", "mm" or "px"
  void setUnit(const QString& unit);
  void setInches(QSizeF inches);
  void choosePreset(int index);
  // The view's charts by title: "All (side by side)" first, then each alone (a journal column
  // takes one). chart(): -1 for all, else the index into the titles.
  void setCharts(const QStringList& titles);
  int chart() const;
  // What will be written: "PNG 1050 x 780 px, 3.50 x 2.60 in at 300 DPI".
  QString summary() const;

 private:
  double perInch() const;  // units of unit() per inch
  void showInches(QSizeF inches);
  void updateSummary();

  QLineEdit* file_;
  QComboBox *format_, *preset_, *unit_, *chart_;
  QDoubleSpinBox *width_, *height_;
  QSpinBox* dpi_;
  QLabel* summary_;
  QSize screen_;
  QString shown_unit_ = "in";
};

}  // namespace attnscope::ui
