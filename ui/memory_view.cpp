#include "ui/memory_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "ui/byte_axis_ticker.h"
#include "ui/chart_context.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

MemoryView::MemoryView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  log_box_ = new QCheckBox(tr("Log axes"), this);
  log_box_->setChecked(true);
  predicted_box_ = new QCheckBox(tr("Show predicted (dashed)"), this);
  predicted_box_->setChecked(true);
  bar->addWidget(log_box_);
  bar->addWidget(predicted_box_);
  // The wheel zooms and a drag pans; this shows every point again.
  auto* reset = new QPushButton(tr("Reset zoom"), this);
  reset->setObjectName("memoryResetZoom");
  connect(reset, &QPushButton::clicked, this, [this] { rebuild(); });
  bar->addWidget(reset);
  bar->addStretch();
  layout->addLayout(bar);
  auto* plots = new QHBoxLayout;
  const struct {
    XField x;
    const char* name;
    QString title, label;
  } charts[] = {
      {XField::heads, "memoryHeadsPlot", tr("Peak memory vs number of heads"), tr("number of heads")},
      {XField::seq, "memorySeqPlot", tr("Peak memory vs sequence length"), tr("sequence length")},
      {XField::layers, "memoryLayersPlot", tr("Peak memory vs layers"), tr("layers in the stack")},
      {XField::tp, "memoryTpPlot", tr("Peak memory vs tensor-parallel ranks"), tr("tensor-parallel ranks (the largest rank's peak)")},
  };
  for (const auto& c : charts) {
    Chart& chart = charts_[static_cast<size_t>(c.x)];
    chart.x = c.x;
    chart.plot = makePlot(this);
    chart.plot->setObjectName(c.name);
    setupAxes(chart.plot, c.title, c.label);
    plots->addWidget(chart.plot);
    // Layers and tp appear only where they vary (rebuild).
    chart.plot->setVisible(c.x == XField::heads || c.x == XField::seq);
    installHover(chart.plot, [&chart](QCPGraph* g, int i) { return chart.painter.tooltip(g, i); },
                 [this](qint64 id) { Q_EMIT runPicked(id); });
  }
  shown_ = {headsPlot(), seqPlot()};
  layout->addLayout(plots, 1);
  connect(log_box_, &QCheckBox::toggled, this, [this] { rebuild(); });
  connect(predicted_box_, &QCheckBox::toggled, this, [this] { rebuild(); });
  applyTheme();
}

void MemoryView::setupAxes(QCustomPlot* plot, const QString& title, const QString& x_label) {
  initPlotLayout(plot, title);
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(tr("peak memory"));
  plot->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create(true));
  plot->legend->setVisible(true);
  plot->legend->setFont(QFont(font().family(), 8));
}

void MemoryView::setLogScale(bool log) { log_box_->setChecked(log); }
bool MemoryView::logScale() const { return log_box_->isChecked(); }

void MemoryView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  rebuild();
}

void MemoryView::fillPlot(Chart& chart) {
  QCustomPlot* plot = chart.plot;
  SeriesPlot& sp = chart.painter;
  std::vector<PlotSeries>& series = chart.series;
  const XField x = chart.x;
  sp.clear(plot);
  series = buildSeries(sweeps_, x);
  for (const auto& s : series) sp.add(plot, s, Metric::memory, predicted_box_->isChecked());
  if (!series.empty()) sp.addKey(plot, predicted_box_->isChecked());
  plot->clearItems();
  if (series.empty()) {  // the first start: say what to do instead of showing empty axes
    QCPItemText* hint =
        addPlotNote(plot,
                    sweeps_.empty() ? tr("No sweep shown yet.\nSet the workload (left), tick the backends, list heads and "
                                         "seq in the Sweep dock, then press \u25b6 Run (Ctrl+R).\nSaved sweeps are in the "
                                         "Runs dock.")
                                    : tr("No finished point yet."),
                    QFont(font().family(), 10));
    hint->setColor(palette().color(QPalette::PlaceholderText));
  }
  setPlotContext(plot, QString::fromStdString(chartContext(sweeps_)));
  const bool log = log_box_->isChecked();
  auto ticker = plot->yAxis->ticker().dynamicCast<ByteAxisTicker>();
  if (ticker) ticker->setLog(log);
  plot->yAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  plot->xAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  plot->xAxis->setTicker(sweptValueTicker(distinctValues(sweeps_, x), log));
  std::vector<double> xs;
  for (int64_t v : distinctValues(sweeps_, x)) xs.push_back(static_cast<double>(v));
  setSweptRange(plot, xs, log);
  // Leave room above and below the points (a factor on log axes, a fraction on linear ones).
  bool found = false;
  QCPRange yr = plot->yAxis->range();
  for (int g = 0; g < plot->graphCount(); ++g) {
    bool ok = false;
    const QCPRange r = plot->graph(g)->getValueRange(ok, QCP::sdBoth);
    if (!ok) continue;
    yr = found ? QCPRange(qMin(yr.lower, r.lower), qMax(yr.upper, r.upper)) : r;
    found = true;
  }
  if (!found) yr = QCPRange(1024, 1024 * 1024);
  if (log) {
    plot->yAxis->setRange(qMax(yr.lower, 1.0) / 1.6, qMax(yr.upper, 2.0) * 1.6);
  } else {
    const double dy = qMax(yr.size() * 0.08, yr.upper * 0.08);
    plot->yAxis->setRange(qMin(0.0, yr.lower), qMax(yr.upper + dy, 1.0));
  }
  plot->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryView::rebuild() {
  // Layers and tp get a chart where the runs differ in them; then heads or seq with one value
  // (a stack swept at fixed heads) would be a column of dots and gives way. Otherwise heads and
  // seq always, even while empty (the first start's note is in them).
  const bool stacked = distinctValues(sweeps_, XField::layers).size() > 1;
  const bool split = distinctValues(sweeps_, XField::tp).size() > 1;
  shown_.clear();
  for (Chart& chart : charts_) {
    const bool show = chart.x == XField::layers ? stacked
                      : chart.x == XField::tp   ? split
                      : !(stacked || split) || distinctValues(sweeps_, chart.x).size() > 1;
    chart.plot->setVisible(show);
    if (!show) {
      chart.painter.clear(chart.plot);
      chart.series.clear();
      continue;
    }
    shown_.push_back(chart.plot);
    fillPlot(chart);
  }
}

}  // namespace attnscope::ui
