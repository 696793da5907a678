#include "ui/memory_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "ui/byte_axis_ticker.h"
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
  bar->addWidget(new QLabel(tr("markers at the predicted peak: \u2715 oom  \u25b3 unsupported  "
                               "\u25a1 skipped  \u25c7 error  \u2606 cancelled"),
                            this));
  bar->addStretch();
  layout->addLayout(bar);
  auto* plots = new QHBoxLayout;
  heads_plot_ = makePlot(this);
  seq_plot_ = makePlot(this);
  heads_plot_->setObjectName("memoryHeadsPlot");
  seq_plot_->setObjectName("memorySeqPlot");
  setupAxes(heads_plot_, tr("Peak memory vs number of heads"), tr("number of heads"));
  setupAxes(seq_plot_, tr("Peak memory vs sequence length"), tr("sequence length"));
  plots->addWidget(heads_plot_);
  plots->addWidget(seq_plot_);
  layout->addLayout(plots, 1);
  installHover(heads_plot_, [this](QCPGraph* g, int i) { return heads_series_plot_.tooltip(g, i); });
  installHover(seq_plot_, [this](QCPGraph* g, int i) { return seq_series_plot_.tooltip(g, i); });
  connect(log_box_, &QCheckBox::toggled, this, [this] { rebuild(); });
  connect(predicted_box_, &QCheckBox::toggled, this, [this] { rebuild(); });
  applyTheme();
}

void MemoryView::setupAxes(QCustomPlot* plot, const QString& title, const QString& x_label) {
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(font().family(), 11, QFont::Bold)));
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(tr("peak memory"));
  plot->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create(true));
  plot->legend->setVisible(true);
  plot->legend->setFont(QFont(font().family(), 8));
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
}

void MemoryView::setLogScale(bool log) { log_box_->setChecked(log); }
bool MemoryView::logScale() const { return log_box_->isChecked(); }

void MemoryView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  rebuild();
}

void MemoryView::fillPlot(QCustomPlot* plot, SeriesPlot& sp, std::vector<PlotSeries>& series, XField x) {
  sp.clear(plot);
  series = buildSeries(sweeps_, x);
  for (const auto& s : series) sp.add(plot, s, Metric::memory, predicted_box_->isChecked());
  const bool log = log_box_->isChecked();
  auto ticker = plot->yAxis->ticker().dynamicCast<ByteAxisTicker>();
  if (ticker) ticker->setLog(log);
  plot->yAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  plot->xAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (log) {
    auto t = QSharedPointer<QCPAxisTickerLog>::create();
    t->setLogBase(2);
    plot->xAxis->setTicker(t);
  } else {
    plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  }
  plot->rescaleAxes();
  // Leave room around the points (a factor on log axes, a fraction on linear ones).
  QCPRange xr = plot->xAxis->range(), yr = plot->yAxis->range();
  if (log) {
    plot->xAxis->setRange(qMax(xr.lower, 0.5) / 1.3, qMax(xr.upper, 1.0) * 1.3);
    plot->yAxis->setRange(qMax(yr.lower, 1.0) / 1.6, qMax(yr.upper, 2.0) * 1.6);
  } else {
    const double dx = qMax(xr.size() * 0.05, 0.5), dy = qMax(yr.size() * 0.08, 1.0);
    plot->xAxis->setRange(xr.lower - dx, xr.upper + dx);
    plot->yAxis->setRange(qMin(0.0, yr.lower), yr.upper + dy);
  }
  plot->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryView::rebuild() {
  fillPlot(heads_plot_, heads_series_plot_, heads_series_, XField::heads);
  fillPlot(seq_plot_, seq_series_plot_, seq_series_, XField::seq);
}

}  // namespace attnscope::ui
