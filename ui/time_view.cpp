#include "ui/time_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <qcustomplot.h>

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
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(font().family(), 11, QFont::Bold)));
    plot->yAxis->setLabel(label);
    plot->legend->setVisible(true);
    plot->legend->setFont(QFont(font().family(), 8));
    row->addWidget(plot);
  }
  // Latency grows to the right: its top-left corner is the emptiest place for the legend.
  latency_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  latency_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  latency_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  layout->addLayout(row, 1);
  installHover(latency_, [this](QCPGraph* g, int i) { return latency_series_plot_.tooltip(g, i); });
  installHover(throughput_, [this](QCPGraph* g, int i) { return throughput_series_plot_.tooltip(g, i); });
  connect(axis_, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  applyTheme();
}

void TimeView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  rebuild();
}

void TimeView::rebuild() {
  const auto x = static_cast<XField>(axis_->currentData().toInt());
  series_ = buildSeries(sweeps_, x);
  latency_series_plot_.clear(latency_);
  throughput_series_plot_.clear(throughput_);
  for (const auto& s : series_) {
    latency_series_plot_.add(latency_, s, Metric::latency, false);
    throughput_series_plot_.add(throughput_, s, Metric::tflops, false);
  }
  for (QCustomPlot* p : {latency_, throughput_}) {
    p->xAxis->setLabel(axis_->currentText());
    p->xAxis->setScaleType(QCPAxis::stLogarithmic);
    auto t = QSharedPointer<QCPAxisTickerLog>::create();
    t->setLogBase(2);
    p->xAxis->setTicker(t);
    p->rescaleAxes();
    const QCPRange xr = p->xAxis->range();
    p->xAxis->setRange(std::max(xr.lower, 0.5) / 1.3, std::max(xr.upper, 1.0) * 1.3);
  }
  const QCPRange lr = latency_->yAxis->range();
  latency_->yAxis->setRange(std::max(lr.lower, 1e-6) / 1.5, std::max(lr.upper, 1e-5) * 1.5);
  const QCPRange tr_ = throughput_->yAxis->range();
  throughput_->yAxis->setRange(0, std::max(tr_.upper, 1e-6) * 1.1);
  latency_->replot(QCustomPlot::rpQueuedReplot);
  throughput_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::ui
