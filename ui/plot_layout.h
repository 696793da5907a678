#pragma once
// The layout every chart shares: a title, a context line under it (what was held fixed), the
// axis rect, and the legend in its own column right of the axis rect so it never covers data.
// Also the key that explains line styles and markers, and tickers at the swept values.

#include <set>
#include <vector>

#include <QSharedPointer>
#include <QSize>
#include <QString>

#include "core/result/run_result.h"

class QCustomPlot;
class QCPAxisTicker;
class QCPLayoutGrid;
class QCPTextElement;
class QCPItemText;
class QFont;
class QFontMetrics;

namespace attnscope::ui {

// Rebuilds plot's layout as: row 0 title, row 1 context line, row 2 a grid with the axis rect
// in column 0 and the legend in column 1 (without_legend: column 1 left free, the legend stays
// hidden inside the axis rect). Call once, right after making the plot.
void initPlotLayout(QCustomPlot* plot, const QString& title, bool with_legend = true);
void setPlotTitle(QCustomPlot* plot, const QString& title);
// The context line, wrapped at its " · " separators to the chart's width (fitTexts).
void setPlotContext(QCustomPlot* plot, const QString& context);
QCPTextElement* plotTitle(QCustomPlot* plot);
QCPTextElement* plotContext(QCustomPlot* plot);
// Row 2: the axis rect and what sits beside it (legend, colour scale).
QCPLayoutGrid* plotBody(QCustomPlot* plot);

// Legend entries after the series that explain the styles: "measured" solid with discs,
// "predicted" dashed (when shown), and one marker per failed status present, each "at its
// prediction". Graphs with no data and the property kind = "key".
void addStyleKey(QCustomPlot* plot, bool measured, bool predicted, const std::set<RunStatus>& failed);
// The marker a point with that (failed) status gets, the same in every chart.
int failedMarkerShape(RunStatus status);  // a QCPScatterStyle::ScatterShape
// A long legend wraps into more columns instead of running off the bottom.
void wrapLegend(QCustomPlot* plot, int max_rows = 14);

// The plot area's guaranteed share of a chart whatever its legend: at least half the chart's
// width and a third of its height, for up to kFitEntries legend entries of up to 60 characters
// on a chart of at least 380 x 360 px (tests/ui/test_chart_layout.cpp measures it).
inline constexpr double kMinPlotWidthShare = 0.5;
inline constexpr double kMinPlotHeightShare = 1.0 / 3.0;
inline constexpr int kFitEntries = 24;
enum class LegendPlace { right, below };
// Puts the legend where the plot keeps its share on a chart of `size` px: beside the plot in as
// many rows as fit the height, else below it in as many columns as fit the width, else the same
// in a smaller font. Entries are never cut. initPlotLayout's plots do this before every replot;
// exports call it for their own size.
LegendPlace fitLegend(QCustomPlot* plot, QSize size);
// Title and context for a chart `size` px wide: the context re-wrapped at its " · " separators to
// the width, the title (and a context part wider than the chart) in a smaller font where its own
// would not fit, down to 7 pt (6 for the context). Never cut.
void fitTexts(QCustomPlot* plot, QSize size);
// A note in the middle of an empty plot ("No sweep shown yet..."): re-broken between words to the
// axis rect's width by every fitChart, so it is never cut (its own line breaks start paragraphs).
QCPItemText* addPlotNote(QCustomPlot* plot, const QString& text, const QFont& font);
// `text` broken between words so that no line is wider than `width` px (a word wider than that
// stays whole on its own line); its line breaks kept.
QString wrapWords(const QString& text, const QFontMetrics& metrics, int width);
// All three, as every replot and export of an initPlotLayout plot does.
LegendPlace fitChart(QCustomPlot* plot, QSize size);
LegendPlace legendPlace(const QCustomPlot* plot);

// An x axis over swept integer values (heads, seq): ticks at the values themselves when there
// are few (never at 2.5 heads), otherwise integer steps (linear) or powers of two (log).
QSharedPointer<QCPAxisTicker> sweptValueTicker(const std::vector<int64_t>& values, bool log);
// The x range around those values: a factor on log axes, half a step on linear ones; a single
// value gets a small range around itself.
void setSweptRange(QCustomPlot* plot, const std::vector<double>& values, bool log);

}  // namespace attnscope::ui
