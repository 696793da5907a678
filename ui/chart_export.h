#pragma once
// Renders charts to files: PNG (size and DPI), SVG (QSvgGenerator) and PDF (QPdfWriter), all
// through QCustomPlot::toPainter so vector formats stay vector. Data goes to CSV and JSON.

#include <QList>
#include <QSize>
#include <QSizeF>
#include <QString>

#include <string>

#include "core/files/output_file.h"
#include "ui/sweep_snapshot.h"

class QCustomPlot;
class QCPPainter;
class QPaintDevice;

namespace attnscope::ui {

// Draws plots in a grid of `columns` into rect (logical units of the painter).
void paintPlots(QCPPainter& painter, const QRectF& rect, const QList<QCustomPlot*>& plots, int columns);

// The resolution QCustomPlot lays text out at: QFontMetrics without a device measure at the
// primary screen's logical DPI (96 offscreen). Every device an export paints on must have this
// logical DPI, or text is drawn larger than the room the layout made for it (clipped titles,
// "56 MiB" for a cut-off "256 MiB").
int layoutDpi();

// Lays the plots out by dpi: the chart is composed on a canvas of size * layoutDpi / dpi
// logical pixels and painted scaled by dpi / layoutDpi, so fonts, margins, legend icons, tick
// lengths and pens all grow together and nothing is clipped. device must have logical DPI
// layoutDpi() (the PNG export's image has, and so has the test's recording device); size is
// the device's size in pixels. Returns false when device cannot be painted on.
bool renderPlots(QPaintDevice* device, QSize size, int dpi, const QList<QCustomPlot*>& plots, int columns);

// The size exportPlots takes for a chart printed `inches` large: for PNG its pixels at dpi; for
// SVG and PDF the layout's pixels (layoutDpi() per inch), written as a page of inches x 72 points
// (PDF) or a width and height in mm (SVG). Fonts keep their point size on paper in every format.
QSize exportPixels(QSizeF inches, const QString& format, int dpi);

// format: "png", "svg" or "pdf" (empty: from the file suffix). size in pixels; dpi lays out
// PNG output for that resolution (96: 1 point = 1.33 px) and is written into the file, under a
// temporary name renamed when complete (core/files/output_file.h; `rule` says what may be at `file`:
// a named file by default, OutputRule::entry for the report's charts). Returns an error message,
// empty on success.
QString exportPlots(const QList<QCustomPlot*>& plots, int columns, const QString& format,
                    const QString& file, QSize size, int dpi = 96, OutputRule rule = OutputRule::file);

// Text exports through core's writeOutputFile (OutputRule::text), as the command line writes them.
// One row per run: sweep_id, then core's CSV columns.
QString exportCsv(const SweepSnapshots& sweeps, const QString& file);
// core's sweepToJson; several sweeps as {"sweeps": [...]}.
QString exportJson(const SweepSnapshots& sweeps, const QString& file);
// Any text (the Chrome trace) the same way.
QString exportText(const QString& file, const std::string& text);

}  // namespace attnscope::ui
