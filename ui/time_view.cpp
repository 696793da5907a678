#include "ui/time_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "ui/chart_context.h"
#include "ui/chart_math.h"
#include "ui/plot_layout.h"

namespace attnscope::ui {

TimeView::TimeView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  axis_ = new QComboBox(this);
  axis_->addItem(tr("sequence length"), static_cast<int>(XField::seq));
  axis_->addItem(tr("number of heads"), static_cast<int>(XField::heads));
  bar->addWidget(new QLabel(tr("x axis:"), this));
  bar->addWidget(axis_);
  bar->addStretch();
  layout->addLayout(bar);
  auto* row = new QHBoxLayout;
  latency_ = makePlot(this);
  throughput_ = makePlot(this);
  latency_->setObjectName("latencyPlot");
  throughput_->setObjectName("throughputPlot");
  for (auto [plot, title, label] : {std::tuple{latency_, tr("Latency (median)"), tr("milliseconds")},
                                    std::tuple{throughput_, tr("Throughput"), tr("TFLOP/s")}}) {
    initPlotLayout(plot, title);
    plot->yAxis->setLabel(label);
    plot->legend->setVisible(true);
    plot->legend->setFont(QFont(font().family(), 8));
    row->addWidget(plot);
  }
  latency_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  latency_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  layout->addLayout(row, 1);
  installHover(latency_, [this](QCPGraph* g, int i) { return latency_series_plot_.tooltip(g, i); }, [this](qint64 id) { Q_EMIT runPicked(id); });
  installHover(throughput_, [this](QCPGraph* g, int i) { return throughput_series_plot_.tooltip(g, i); }, [this](qint64 id) { Q_EMIT runPicked(id); });
  connect(axis_, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  applyTheme();
}

void TimeView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  // Layers and tp are offered where the runs shown differ in them; the axis picked stays while
  // it is offered.
  const QSignalBlocker quiet(axis_);
  const int picked = axis_->currentData().toInt();
  const struct {
    XField x;
    QString name;
  } extra[] = {{XField::layers, tr("layers")}, {XField::tp, tr("tensor-parallel ranks (tp)")}};
  for (const auto& e : extra) {
    const int at = axis_->findData(static_cast<int>(e.x));
    const bool varies = distinctValues(sweeps_, e.x).size() > 1;
    if (varies && at < 0) axis_->addItem(e.name, static_cast<int>(e.x));
    if (!varies && at >= 0) axis_->removeItem(at);
  }
  const int keep = axis_->findData(picked);
  axis_->setCurrentIndex(keep >= 0 ? keep : 0);
  rebuild();
}

void TimeView::rebuild() {
  const auto x = static_cast<XField>(axis_->currentData().toInt());
  series_ = buildSeries(sweeps_, x);
  // Units from the largest value, so axes read 1..999 rather than 0.0025 TFLOP/s.
  double max_flops = 0, max_s = 0;
  for (const auto& s : series_)
    for (const auto& p : s.points) {
      max_flops = std::max(max_flops, p.flops_per_s);
      max_s = std::max(max_s, p.median_s);
    }
  const FlopsUnit unit = flopsUnitFor(max_flops);
  throughput_series_plot_.setUnit(unit.per_unit);
  throughput_->yAxis->setLabel(QString::fromStdString(unit.name));
  const bool ms = max_s >= 1e-3 || max_s == 0;
  latency_series_plot_.setUnit(ms ? 1e-3 : 1e-6);
  latency_->yAxis->setLabel(ms ? tr("milliseconds") : tr("microseconds"));
  latency_series_plot_.clear(latency_);
  throughput_series_plot_.clear(throughput_);
  for (const auto& s : series_) {
    latency_series_plot_.add(latency_, s, Metric::latency, false);
    throughput_series_plot_.add(throughput_, s, Metric::throughput, false);
  }
  latency_series_plot_.addKey(latency_, false, false);
  throughput_series_plot_.addKey(throughput_, false, false);
  const QString context = QString::fromStdString(chartContext(sweeps_));
  const auto values = distinctValues(sweeps_, x);
  std::vector<double> xs(values.begin(), values.end());
  for (QCustomPlot* p : {latency_, throughput_}) {
    setPlotContext(p, context);
    p->xAxis->setLabel(axis_->currentText());
    p->xAxis->setScaleType(QCPAxis::stLogarithmic);
    p->xAxis->setTicker(sweptValueTicker(values, true));
    setSweptRange(p, xs, true);
    bool ok = false;
    QCPRange yr;
    for (int g = 0; g < p->graphCount(); ++g) {
      bool has = false;
      const QCPRange r = p->graph(g)->getValueRange(has, QCP::sdBoth);
      if (!has) continue;
      yr = ok ? QCPRange(std::min(yr.lower, r.lower), std::max(yr.upper, r.upper)) : r;
      ok = true;
    }
    if (p == latency_) p->yAxis->setRange(ok ? yr.lower / 1.5 : 1e-3, ok ? yr.upper * 1.5 : 1);
    else p->yAxis->setRange(0, ok ? yr.upper * 1.15 : 1);
    p->replot(QCustomPlot::rpQueuedReplot);
  }
}

}  // namespace attnscope::ui
