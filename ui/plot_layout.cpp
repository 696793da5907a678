#include "ui/plot_layout.h"

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>

#include "ui/plot_style.h"

namespace attnscope::ui {

namespace {

// Linear ticks at whole numbers only: 1-2-5 steps of at least 1 (never 2.5 heads).
class IntegerAxisTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    const double s = QCPAxisTicker::getTickStep(range);
    if (s <= 1) return 1;
    const double mag = std::pow(10.0, std::floor(std::log10(s)));
    const double m = s / mag;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
  }
  int getSubTickCount(double step) override { return step <= 1 ? 0 : step <= 2 ? 1 : 4; }
};

QCPTextElement* textAt(QCustomPlot* plot, int row) {
  return plot->plotLayout()->rowCount() > row ? qobject_cast<QCPTextElement*>(plot->plotLayout()->element(row, 0))
                                              : nullptr;
}

}  // namespace

void initPlotLayout(QCustomPlot* plot, const QString& title, bool with_legend) {
  QCPLayoutGrid* top = plot->plotLayout();
  QCPAxisRect* rect = plot->axisRect();
  top->take(rect);
  top->simplify();
  const QString family = plot->font().family();
  auto* title_text = new QCPTextElement(plot, title, QFont(family, 11, QFont::Bold));
  auto* context = new QCPTextElement(plot, QString(" "), QFont(family, 8));
  context->setMargins(QMargins(4, 0, 4, 4));
  auto* body = new QCPLayoutGrid;
  top->addElement(0, 0, title_text);
  top->addElement(1, 0, context);
  top->addElement(2, 0, body);
  top->setRowSpacing(0);
  top->setRowStretchFactor(0, 0.001);
  top->setRowStretchFactor(1, 0.001);
  body->addElement(0, 0, rect);
  if (plot->legend && with_legend) {
    // Beside the axis rect, at the top of its own column: a spacer below keeps the entries
    // together instead of spreading them over the plot's height.
    rect->insetLayout()->take(plot->legend);
    rect->insetLayout()->simplify();
    auto* column = new QCPLayoutGrid;
    body->addElement(0, 1, column);
    column->addElement(0, 0, plot->legend);
    // A plain element as the spacer: an empty grid's maximum height is 0, which would hand all
    // the height to the legend and spread its entries.
    column->addElement(1, 0, new QCPLayoutElement(plot));
    column->setRowStretchFactor(0, 0.001);
    column->setRowStretchFactor(1, 1);
    column->setMargins(QMargins(0, 8, 4, 0));
    body->setColumnStretchFactor(1, 0.001);
    plot->legend->setLayer("legend");
    plot->legend->setFillOrder(QCPLegend::foRowsFirst);
    wrapLegend(plot);
  }
}

QCPLayoutGrid* plotBody(QCustomPlot* plot) {
  return qobject_cast<QCPLayoutGrid*>(plot->plotLayout()->element(2, 0));
}

QCPTextElement* plotTitle(QCustomPlot* plot) { return textAt(plot, 0); }
QCPTextElement* plotContext(QCustomPlot* plot) { return textAt(plot, 1); }

void setPlotTitle(QCustomPlot* plot, const QString& title) {
  if (auto* t = plotTitle(plot)) t->setText(title);
}

void setPlotContext(QCustomPlot* plot, const QString& context) {
  // Wrapped at its " · " separators into lines of about 60 characters: a text element cannot
  // wrap to its width itself, and one long line would be clipped on a narrow chart.
  const QString sep = QStringLiteral(" \u00b7 ");
  QString text, line;
  for (const QString& part : context.split(sep)) {
    if (!line.isEmpty() && line.size() + sep.size() + part.size() > 60) {
      text += line + '\n';
      line.clear();
    }
    line += (line.isEmpty() ? QString() : sep) + part;
  }
  text += line;
  if (auto* t = plotContext(plot)) t->setText(text.isEmpty() ? QStringLiteral(" ") : text);
}

void wrapLegend(QCustomPlot* plot, int max_rows) {
  if (!plot->legend) return;
  plot->legend->setWrap(max_rows);
  plot->legend->setFillOrder(QCPLegend::foRowsFirst, true);
}

int failedMarkerShape(RunStatus s) {
  switch (s) {
    case RunStatus::oom: return QCPScatterStyle::ssCross;
    case RunStatus::unsupported: return QCPScatterStyle::ssTriangle;
    case RunStatus::skipped: return QCPScatterStyle::ssSquare;
    case RunStatus::cancelled: return QCPScatterStyle::ssStar;
    case RunStatus::wrong: return QCPScatterStyle::ssCrossCircle;  // ran, but failed its accuracy check
    default: return QCPScatterStyle::ssDiamond;  // error, and any failed status added later
  }
}

void addStyleKey(QCustomPlot* plot, bool measured, bool predicted, const std::set<RunStatus>& failed) {
  const QColor grey(0x80, 0x80, 0x80);
  auto key = [&](const QString& name, const QPen& pen, const QCPScatterStyle& marker, bool line) {
    QCPGraph* g = plot->addGraph();
    g->setName(name);
    g->setPen(pen);
    g->setScatterStyle(marker);
    g->setLineStyle(line ? QCPGraph::lsLine : QCPGraph::lsNone);
    g->setProperty("kind", "key");
    g->setSelectable(QCP::stNone);
  };
  if (measured) key(QObject::tr("measured"), QPen(grey, 2), QCPScatterStyle(QCPScatterStyle::ssDisc, 6), true);
  if (predicted) {
    const QColor shade = predictedShade(grey, isDarkPalette(plot->palette()));
    key(QObject::tr("predicted"), QPen(shade, 1.5, Qt::DashLine),
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(shade, 1.5), QBrush(Qt::NoBrush), 10), true);
  }
  for (RunStatus s : failed) {
    const auto name = toString(s);
    key(QObject::tr("%1 (at its prediction)").arg(QString::fromUtf8(name.data(), static_cast<int>(name.size()))),
        QPen(grey, 2),
        QCPScatterStyle(static_cast<QCPScatterStyle::ScatterShape>(failedMarkerShape(s)), QPen(grey, 2),
                        QBrush(Qt::NoBrush), 10),
        false);
  }
  wrapLegend(plot);
}

QSharedPointer<QCPAxisTicker> sweptValueTicker(const std::vector<int64_t>& values, bool log) {
  if (!values.empty() && values.size() <= 12) {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (int64_t v : values) t->addTick(static_cast<double>(v), QString::number(v));
    return t;
  }
  if (log) {
    auto t = QSharedPointer<QCPAxisTickerLog>::create();
    t->setLogBase(2);
    return t;
  }
  return QSharedPointer<IntegerAxisTicker>::create();
}

void setSweptRange(QCustomPlot* plot, const std::vector<double>& values, bool log) {
  if (values.empty()) {
    plot->xAxis->setRange(log ? 1 : 0, 16);
    return;
  }
  const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *lo_it, hi = *hi_it;
  if (log) {
    plot->xAxis->setRange(std::max(lo, 1e-9) / 1.3, std::max(hi, 1e-9) * 1.3);
  } else if (hi > lo) {
    const double pad = (hi - lo) * 0.05;
    plot->xAxis->setRange(lo - pad, hi + pad);
  } else {
    const double pad = std::max(1.0, std::abs(lo) * 0.1);
    plot->xAxis->setRange(lo - pad, hi + pad);
  }
}

}  // namespace attnscope::ui
