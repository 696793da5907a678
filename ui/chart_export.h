#pragma once
// Renders charts to files: PNG (size and DPI), SVG (QSvgGenerator) and PDF (QPdfWriter), all
// through QCustomPlot::toPainter so vector formats stay vector. Data goes to CSV and JSON.

#include <QList>
#include <QSize>
#include <QString>

#include "ui/sweep_snapshot.h"

class QCustomPlot;
class QCPPainter;

namespace attnscope::ui {

// Draws plots in a grid of `columns` into rect (logical units of the painter).
void paintPlots(QCPPainter& painter, const QRectF& rect, const QList<QCustomPlot*>& plots, int columns);

// format: "png", "svg" or "pdf" (empty: from the file suffix). size in pixels; dpi scales the
// text and lines of PNG output (96 = 1:1). Returns an error message, empty on success.
QString exportPlots(const QList<QCustomPlot*>& plots, int columns, const QString& format,
                    const QString& file, QSize size, int dpi = 96);

// One row per run: sweep_id, then core's CSV columns.
QString exportCsv(const SweepSnapshots& sweeps, const QString& file);
// core's sweepToJson; several sweeps as {"sweeps": [...]}.
QString exportJson(const SweepSnapshots& sweeps, const QString& file);

}  // namespace attnscope::ui
