#include "ui/heatmap_view.h"

#include <cmath>
#include <limits>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/format.h"
#include "ui/byte_axis_ticker.h"
#include "ui/plot_style.h"
#include "ui/series_builder.h"

namespace attnscope::ui {

HeatmapView::HeatmapView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  backend_ = new QComboBox(this);
  backend_->setObjectName("heatmapBackend");
  bar->addWidget(new QLabel(tr("Backend:"), this));
  bar->addWidget(backend_);
  bar->addWidget(new QLabel(tr("peak memory (measured; predicted where the run failed is left empty)"), this));
  bar->addStretch();
  layout->addLayout(bar);
  plot_ = makePlot(this);
  plot_->setObjectName("heatmapPlot");
  plot_->setInteractions({});
  plot_->xAxis->setLabel(tr("number of heads"));
  plot_->yAxis->setLabel(tr("sequence length"));
  map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  scale_ = new QCPColorScale(plot_);
  plot_->plotLayout()->addElement(0, 1, scale_);
  scale_->setType(QCPAxis::atRight);
  scale_->setDataScaleType(QCPAxis::stLogarithmic);
  scale_->axis()->setTicker(QSharedPointer<ByteAxisTicker>::create(true));
  scale_->axis()->setLabel(tr("peak memory"));
  map_->setColorScale(scale_);
  QCPColorGradient g(QCPColorGradient::gpThermal);
  g.setNanHandling(QCPColorGradient::nhTransparent);
  map_->setGradient(g);
  map_->setInterpolate(false);
  auto* group = new QCPMarginGroup(plot_);
  plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  layout->addWidget(plot_, 1);
  connect(backend_, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const QString t = cellText(plot_->xAxis->pixelToCoord(e->position().x()), plot_->yAxis->pixelToCoord(e->position().y()));
    if (t.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), t, plot_);
  });
  applyTheme();
}

void HeatmapView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  const QString keep = backend_->currentText();
  QSignalBlocker block(backend_);
  backend_->clear();
  for (size_t s = 0; s < sweeps_.size(); ++s) {
    QStringList seen;
    for (const auto& r : sweeps_[s]->runs) {
      const QString b = QString::fromStdString(r.backend);
      if (seen.contains(b)) continue;
      seen << b;
      backend_->addItem(sweeps_.size() > 1 ? QString::fromStdString(sweeps_[s]->info.name) + ": " + b : b,
                        QVariantList{static_cast<qulonglong>(s), b});
    }
  }
  const int i = backend_->findText(keep);
  backend_->setCurrentIndex(i >= 0 ? i : 0);
  rebuild();
}

void HeatmapView::rebuild() {
  heads_.clear();
  seqs_.clear();
  cells_.clear();
  map_->data()->clear();
  const QVariantList key = backend_->currentData().toList();
  if (key.size() == 2 && key[0].toULongLong() < sweeps_.size()) {
    const auto& snap = sweeps_[key[0].toULongLong()];
    const std::string backend = key[1].toString().toStdString();
    heads_ = distinctValues({snap}, XField::heads);
    seqs_ = distinctValues({snap}, XField::seq);
    const int nx = static_cast<int>(heads_.size()), ny = static_cast<int>(seqs_.size());
    map_->data()->setSize(nx, ny);
    map_->data()->setRange(QCPRange(0, nx - 1), QCPRange(0, ny - 1));
    cells_.assign(heads_.size() * seqs_.size(), nullptr);
    for (int x = 0; x < nx; ++x)
      for (int y = 0; y < ny; ++y) map_->data()->setCell(x, y, std::numeric_limits<double>::quiet_NaN());
    for (const RunResult& r : snap->runs) {
      if (r.backend != backend) continue;
      const int x = static_cast<int>(std::lower_bound(heads_.begin(), heads_.end(), r.spec.heads) - heads_.begin());
      const int y = static_cast<int>(std::lower_bound(seqs_.begin(), seqs_.end(), r.spec.seq_q) - seqs_.begin());
      cells_[static_cast<size_t>(x) * seqs_.size() + static_cast<size_t>(y)] = &r;
      // With other varying fields several runs share a cell; the largest peak wins.
      if (r.status == RunStatus::ok && r.memory.measured_peak > 0) {
        const double old = map_->data()->cell(x, y);
        map_->data()->setCell(x, y, std::isnan(old) ? double(r.memory.measured_peak) : std::max(old, double(r.memory.measured_peak)));
      }
    }
  }
  auto ticks = [](const std::vector<int64_t>& v) {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t i = 0; i < v.size(); ++i) t->addTick(static_cast<double>(i), QString::number(v[i]));
    return t;
  };
  plot_->xAxis->setTicker(ticks(heads_));
  plot_->yAxis->setTicker(ticks(seqs_));
  plot_->xAxis->setRange(-0.5, std::max<double>(0.5, static_cast<double>(heads_.size()) - 0.5));
  plot_->yAxis->setRange(-0.5, std::max<double>(0.5, static_cast<double>(seqs_.size()) - 0.5));
  map_->rescaleDataRange(true);
  QCPRange r = map_->dataRange();
  if (r.lower <= 0 || r.lower == r.upper) map_->setDataRange(QCPRange(std::max(1.0, r.lower / 2), std::max(2.0, r.upper * 2)));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString HeatmapView::cellText(double xc, double yc) const {
  const int x = static_cast<int>(std::lround(xc)), y = static_cast<int>(std::lround(yc));
  if (x < 0 || y < 0 || x >= static_cast<int>(heads_.size()) || y >= static_cast<int>(seqs_.size())) return {};
  const RunResult* r = cells_[static_cast<size_t>(x) * seqs_.size() + static_cast<size_t>(y)];
  if (!r) return tr("heads %1, seq %2: no run").arg(heads_[static_cast<size_t>(x)]).arg(seqs_[static_cast<size_t>(y)]);
  return tr("<b>%1</b><br>%2<br>status: %3<br>measured: %4<br>predicted: %5")
      .arg(QString::fromStdString(r->backend), QString::fromStdString(summary(r->spec)),
           QString::fromUtf8(toString(r->status).data(), toString(r->status).size()),
           r->status == RunStatus::ok ? QString::fromStdString(formatBytes(r->memory.measured_peak)) : QStringLiteral("-"),
           QString::fromStdString(formatBytes(r->memory.predicted_peak)));
}

}  // namespace attnscope::ui
