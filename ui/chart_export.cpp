#include "ui/chart_export.h"

#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QScreen>
#include <QImage>
#include <QImageWriter>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QTextStream>
#include <qcustomplot.h>

#include <nlohmann/json.hpp>

#include "core/files/output_file.h"
#include "core/export/results_export.h"
#include "ui/plot_layout.h"

namespace attnscope::ui {

void paintPlots(QCPPainter& painter, const QRectF& rect, const QList<QCustomPlot*>& plots, int columns) {
  columns = qMax(1, qMin(columns, static_cast<int>(plots.size())));
  const int rows = (static_cast<int>(plots.size()) + columns - 1) / columns;
  const int w = static_cast<int>(rect.width() / columns), h = static_cast<int>(rect.height() / rows);
  for (int i = 0; i < plots.size(); ++i) {
    painter.save();
    painter.translate(rect.left() + (i % columns) * w, rect.top() + (i / columns) * h);
    fitChart(plots[i], QSize(w, h));  // the export's own size may want the legend elsewhere, smaller titles
    plots[i]->toPainter(&painter, w, h);
    painter.restore();
    plots[i]->replot(QCustomPlot::rpQueuedReplot);  // and the widget its own again
  }
}

int layoutDpi() {
  // What QFont uses for a QFontMetrics made without a device (qt_defaultDpiY in Qt's sources).
  const QScreen* screen = QGuiApplication::primaryScreen();
  if (!screen || QCoreApplication::testAttribute(Qt::AA_Use96Dpi)) return 96;
  return qMax(1, qRound(screen->logicalDotsPerInchY()));
}

QSize exportPixels(QSizeF inches, const QString& format, int dpi) {
  const double per_inch = format.toLower() == "png" ? dpi : layoutDpi();
  return {qMax(1, qRound(inches.width() * per_inch)), qMax(1, qRound(inches.height() * per_inch))};
}

bool renderPlots(QPaintDevice* device, QSize size, int dpi, const QList<QCustomPlot*>& plots, int columns) {
  Q_ASSERT(device->logicalDpiY() == layoutDpi());
  const double scale = static_cast<double>(dpi) / layoutDpi();
  QCPPainter painter;
  if (!painter.begin(device)) return false;
  painter.setMode(QCPPainter::pmNoCaching);
  painter.scale(scale, scale);
  paintPlots(painter, QRectF(0, 0, size.width() / scale, size.height() / scale), plots, columns);
  painter.end();
  return true;
}

namespace {

// Draws into `file` (the temporary one exportPlots renames into place).
QString renderFile(const QList<QCustomPlot*>& plots, int columns, const QString& format, const QString& file, QSize size,
                   int dpi) {
  if (format == "png") {
    // Painted at the layout's DPI; the requested DPI is only written into the file afterwards.
    QImage image(size, QImage::Format_ARGB32);
    image.fill(Qt::white);
    const int layout_dpi = layoutDpi();
    image.setDotsPerMeterX(qRound(layout_dpi / 0.0254));
    image.setDotsPerMeterY(qRound(layout_dpi / 0.0254));
    if (!renderPlots(&image, size, dpi, plots, columns)) return QObject::tr("cannot paint %1").arg(file);
    image.setDotsPerMeterX(qRound(dpi / 0.0254));
    image.setDotsPerMeterY(qRound(dpi / 0.0254));
    QImageWriter writer(file, "png");
    if (!writer.write(image)) return QObject::tr("cannot write %1: %2").arg(file, writer.errorString());
    return {};
  }
  if (format == "svg") {
    QSvgGenerator gen;
    gen.setFileName(file);
    gen.setSize(size);
    gen.setResolution(layoutDpi());  // the file's width and height in mm: size / layoutDpi inches
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle("AttnScope chart");
    QCPPainter painter;
    if (!painter.begin(&gen)) return QObject::tr("cannot write %1").arg(file);
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    paintPlots(painter, QRectF(0, 0, size.width(), size.height()), plots, columns);
    painter.end();
    return QFileInfo(file).size() > 0 ? QString() : QObject::tr("cannot write %1").arg(file);
  }
  if (format == "pdf") {
    QPdfWriter writer(file);
    const int layout_dpi = layoutDpi();
    writer.setResolution(layout_dpi);
    // layout_dpi px per inch on a page measured in points (72 per inch): the page is size px.
    const double points_per_px = 72.0 / layout_dpi;
    writer.setPageSize(QPageSize(QSizeF(size.width() * points_per_px, size.height() * points_per_px), QPageSize::Point));
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    writer.setCreator("AttnScope");
    QCPPainter painter;
    if (!painter.begin(&writer)) return QObject::tr("cannot write %1").arg(file);
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    const QRect page = writer.pageLayout().paintRectPixels(writer.resolution());
    paintPlots(painter, QRectF(0, 0, page.width(), page.height()), plots, columns);
    painter.end();
    return {};
  }
  return QObject::tr("unknown format '%1' (allowed: png, svg, pdf)").arg(format);
}

}  // namespace

QString exportPlots(const QList<QCustomPlot*>& plots, int columns, const QString& format_in,
                    const QString& file, QSize size, int dpi, OutputRule rule) {
  if (plots.isEmpty()) return QObject::tr("nothing to export");
  if (size.width() < 16 || size.height() < 16) return QObject::tr("size too small: %1x%2").arg(size.width()).arg(size.height());
  if (dpi < 24 || dpi > 2400) return QObject::tr("dpi out of range (24..2400): %1").arg(dpi);
  const QString format = (format_in.isEmpty() ? QFileInfo(file).suffix() : format_in).toLower();
  if (format != "png" && format != "svg" && format != "pdf")
    return QObject::tr("unknown format '%1' (allowed: png, svg, pdf)").arg(format);
  // Drawn under a temporary name in the same folder and renamed when complete: a failed export
  // never leaves half a file, nor destroys the file it was to replace.
  try {
    AtomicOutput out(file.toStdString(), rule);
    const QString temp = QString::fromStdString(out.tempPath());
    QString error = renderFile(plots, columns, format, temp, size, dpi);
    if (!error.isEmpty()) return error.replace(temp, file);
    out.commit();
    return {};
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

QString exportText(const QString& file, const std::string& text) {
  try {
    writeOutputFile(file.toStdString(), text, OutputRule::text);
    return {};
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

QString exportCsv(const SweepSnapshots& sweeps, const QString& file) {
  // Core's columns; a leading sweep_id column keeps several sweeps apart in one file.
  std::string text = "sweep_id";
  for (const auto& c : csvColumns()) {
    text += ',';
    text += csvEscape(c);
  }
  text += "\n";
  for (const auto& s : sweeps) {
    if (!s) continue;
    for (const RunResult& r : s->runs) {
      text += std::to_string(s->info.id);
      for (const auto& f : csvRow(r)) {
        text += ',';
        text += csvEscape(f);
      }
      text += "\n";
    }
  }
  return exportText(file, text);
}

QString exportJson(const SweepSnapshots& sweeps, const QString& file) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& s : sweeps)
    if (s) all.push_back(sweepToJson(s->info, s->environment, s->runs));
  return exportText(file, (sweeps.size() == 1 ? all[0] : nlohmann::json{{"sweeps", all}}).dump(2) + "\n");
}

}  // namespace attnscope::ui
