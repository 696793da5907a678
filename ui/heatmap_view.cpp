#include "ui/heatmap_view.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/byte_axis_ticker.h"
#include "ui/chart_context.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"
#include "ui/series_builder.h"

namespace attnscope::ui {

namespace {

// Viridis stops: dark to bright yellow, never white, so the largest cell never looks like the
// background (light or dark palette) and the colours stay ordered in greyscale print.
QCPColorGradient memoryGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(0x44, 0x01, 0x54));
  g.setColorStopAt(0.25, QColor(0x3b, 0x52, 0x8b));
  g.setColorStopAt(0.5, QColor(0x21, 0x91, 0x8c));
  g.setColorStopAt(0.75, QColor(0x5e, 0xc9, 0x62));
  g.setColorStopAt(1.0, QColor(0xfd, 0xe7, 0x25));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setNanHandling(QCPColorGradient::nhTransparent);
  g.setLevelCount(256);
  return g;
}

QCPRange paddedRange(double lo, double hi) {
  if (!(lo > 0) || !(hi > 0)) return QCPRange(1, 2);
  if (lo == hi) return QCPRange(lo / 2, hi * 2);
  return QCPRange(lo, hi);
}

}  // namespace

HeatmapView::HeatmapView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  shared_ = new QCheckBox(tr("One colour scale for every map"), this);
  shared_->setObjectName("heatmapSharedScale");
  shared_->setChecked(true);
  bar->addWidget(shared_);
  auto* legend = new QLabel(tr("peak memory: measured where the run was ok; failed cells name their status "
                               "and show the prediction (~)"),
                            this);
  legend->setWordWrap(true);  // never what sets the window's width
  bar->addWidget(legend, 1);
  bar->addStretch();
  layout->addLayout(bar);
  grid_host_ = new QWidget(this);
  grid_ = new QGridLayout(grid_host_);
  grid_->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(grid_host_, 1);
  connect(shared_, &QCheckBox::toggled, this, [this] { rebuild(); });
  setSweeps({});
}

QList<QCustomPlot*> HeatmapView::plots() const {
  QList<QCustomPlot*> out;
  for (const Map& m : maps_) out << m.plot;
  return out;
}

int HeatmapView::exportColumns() const {
  const int n = static_cast<int>(maps_.size());
  return n <= 3 ? std::max(n, 1) : n == 4 ? 2 : 3;
}

void HeatmapView::setSharedScale(bool shared) { shared_->setChecked(shared); }

const HeatmapView::Map* HeatmapView::findMap(const std::string& backend, size_t sweep, const std::string& variant) const {
  for (const Map& m : maps_)
    if (m.backend == backend && m.sweep == sweep && (variant.empty() || m.variant == variant)) return &m;
  return nullptr;
}

QCPColorMap* HeatmapView::colorMap(const std::string& backend, size_t sweep, const std::string& variant) const {
  const Map* m = findMap(backend, sweep, variant);
  return m ? m->map : nullptr;
}

QCustomPlot* HeatmapView::mapPlot(const std::string& backend, size_t sweep, const std::string& variant) const {
  const Map* m = findMap(backend, sweep, variant);
  return m ? m->plot : nullptr;
}

HeatmapView::Map HeatmapView::makeMap(size_t sweep, const std::string& backend, const std::string& variant) {
  Map m;
  m.sweep = sweep;
  m.backend = backend;
  m.variant = variant;
  m.plot = makePlot(grid_host_);
  m.plot->setObjectName(QStringLiteral("heatmap:") + QString::fromStdString(backend));
  m.plot->setInteractions({});
  initPlotLayout(m.plot, QString::fromStdString(backend), false);
  m.plot->xAxis->setLabel(tr("number of heads"));
  m.plot->yAxis->setLabel(tr("sequence length"));
  m.map = new QCPColorMap(m.plot->xAxis, m.plot->yAxis);
  m.scale = new QCPColorScale(m.plot);
  plotBody(m.plot)->addElement(0, 1, m.scale);
  plotBody(m.plot)->setColumnStretchFactor(1, 0.001);
  m.scale->setType(QCPAxis::atRight);
  m.scale->setDataScaleType(QCPAxis::stLogarithmic);
  m.scale->axis()->setTicker(QSharedPointer<ByteAxisTicker>::create(true));
  m.scale->axis()->setLabel(tr("peak memory"));
  m.map->setColorScale(m.scale);
  m.map->setGradient(memoryGradient());
  m.map->setInterpolate(false);
  auto* group = new QCPMarginGroup(m.plot);
  m.plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  m.scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  m.plot->setMouseTracking(true);
  QCustomPlot* plot = m.plot;
  connect(plot, &QCustomPlot::mouseMove, this, [this, plot](QMouseEvent* e) {
    for (const Map& map : maps_) {
      if (map.plot != plot) continue;
      const QString t = cellText(map, plot->xAxis->pixelToCoord(e->position().x()),
                                 plot->yAxis->pixelToCoord(e->position().y()));
      if (t.isEmpty()) QToolTip::hideText();
      else QToolTip::showText(e->globalPosition().toPoint(), t, plot);
    }
  });
  // A click on a cell picks its run for Breakdown and Timeline.
  connect(plot, &QCustomPlot::mousePress, this, [this, plot](QMouseEvent* e) { press_ = e->position().toPoint(); Q_UNUSED(plot); });
  connect(plot, &QCustomPlot::mouseRelease, this, [this, plot](QMouseEvent* e) {
    if ((e->position().toPoint() - press_).manhattanLength() > 4 || e->button() != Qt::LeftButton) return;
    if (const RunResult* r = cellRun(plot, e->position())) Q_EMIT runPicked(r->id);
  });
  applyPlotTheme(m.plot, palette());
  return m;
}

void HeatmapView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  variants_.clear();
  // Backend by backend, each with its variants in the order the sweep ran them.
  using Key = std::tuple<size_t, std::string, std::string>;
  std::vector<Key> wanted;
  for (size_t s = 0; s < sweeps_.size(); ++s) {
    variants_.push_back(mapVariants(*sweeps_[s]));
    std::vector<std::string> backends;
    for (const auto& r : sweeps_[s]->runs)
      if (std::find(backends.begin(), backends.end(), r.backend) == backends.end()) backends.push_back(r.backend);
    for (const auto& b : backends)
      for (size_t i = 0; i < sweeps_[s]->runs.size(); ++i) {
        if (sweeps_[s]->runs[i].backend != b) continue;
        Key k{s, b, variants_[s][i]};
        if (std::find(wanted.begin(), wanted.end(), k) == wanted.end()) wanted.push_back(std::move(k));
      }
  }
  if (wanted.empty()) wanted.emplace_back(0, std::string(), std::string());  // one empty map saying what to do
  bool same = wanted.size() == maps_.size();
  for (size_t i = 0; same && i < wanted.size(); ++i)
    same = Key{maps_[i].sweep, maps_[i].backend, maps_[i].variant} == wanted[i];
  if (!same) {
    for (Map& m : maps_) delete m.plot;
    maps_.clear();
    const int columns = wanted.size() <= 3 ? static_cast<int>(wanted.size()) : wanted.size() == 4 ? 2 : 3;
    for (size_t i = 0; i < wanted.size(); ++i) {
      maps_.push_back(makeMap(std::get<0>(wanted[i]), std::get<1>(wanted[i]), std::get<2>(wanted[i])));
      grid_->addWidget(maps_.back().plot, static_cast<int>(i) / columns, static_cast<int>(i) % columns);
    }
  }
  rebuild();
}

void HeatmapView::fill(Map& m) {
  m.heads.clear();
  m.seqs.clear();
  m.cells.clear();
  m.map->data()->clear();
  m.plot->clearItems();
  const SweepSnapshotPtr snap = m.sweep < sweeps_.size() ? sweeps_[m.sweep] : nullptr;
  QString title = QString::fromStdString(m.backend.empty() ? std::string("Heatmap") : m.backend);
  if (!m.variant.empty()) title += QStringLiteral(" \u00b7 ") + QString::fromStdString(m.variant);
  if (snap && sweeps_.size() > 1) title = QStringLiteral("S%1: ").arg(snap->info.id) + title;
  setPlotTitle(m.plot, title);
  setPlotContext(m.plot, QString::fromStdString(chartContext(snap ? SweepSnapshots{snap} : SweepSnapshots{})));
  if (snap) {
    m.heads = distinctValues({snap}, XField::heads);
    m.seqs = distinctValues({snap}, XField::seq);
  }
  const int nx = static_cast<int>(m.heads.size()), ny = static_cast<int>(m.seqs.size());
  if (nx > 0 && ny > 0) {
    m.map->data()->setSize(nx, ny);
    m.map->data()->setRange(QCPRange(0, nx - 1), QCPRange(0, ny - 1));
    m.cells.assign(m.heads.size() * m.seqs.size(), nullptr);
    for (int x = 0; x < nx; ++x)
      for (int y = 0; y < ny; ++y) m.map->data()->setCell(x, y, std::numeric_limits<double>::quiet_NaN());
    for (size_t i = 0; i < snap->runs.size(); ++i) {
      const RunResult& r = snap->runs[i];
      if (r.backend != m.backend || variants_[m.sweep][i] != m.variant) continue;
      const int x = static_cast<int>(std::lower_bound(m.heads.begin(), m.heads.end(), r.spec.heads) - m.heads.begin());
      const int y = static_cast<int>(std::lower_bound(m.seqs.begin(), m.seqs.end(), r.spec.seq_q) - m.seqs.begin());
      const RunResult*& cell = m.cells[static_cast<size_t>(x) * m.seqs.size() + static_cast<size_t>(y)];
      // Only a repeated point (the same spec run twice in one sweep) shares a cell: the later wins.
      cell = &r;
      m.map->data()->setCell(x, y, r.status == RunStatus::ok && r.memory.measured_peak > 0
                                       ? double(r.memory.measured_peak)
                                       : std::numeric_limits<double>::quiet_NaN());
    }
  }
  auto ticks = [](const std::vector<int64_t>& v) {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t i = 0; i < v.size(); ++i) t->addTick(static_cast<double>(i), QString::number(v[i]));
    return t;
  };
  m.plot->xAxis->setTicker(ticks(m.heads));
  m.plot->yAxis->setTicker(ticks(m.seqs));
  m.plot->xAxis->setRange(-0.5, std::max<double>(0.5, nx - 0.5));
  m.plot->yAxis->setRange(-0.5, std::max<double>(0.5, ny - 0.5));
}

void HeatmapView::rebuild() {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (Map& m : maps_) {
    fill(m);
    m.lo = std::numeric_limits<double>::infinity();
    m.hi = 0;
    for (const RunResult* r : m.cells)
      if (r && r->status == RunStatus::ok && r->memory.measured_peak > 0) {
        m.lo = std::min(m.lo, double(r->memory.measured_peak));
        m.hi = std::max(m.hi, double(r->memory.measured_peak));
      }
    lo = std::min(lo, m.lo);
    hi = std::max(hi, m.hi);
  }
  for (Map& m : maps_) {
    m.map->setDataRange(shared_->isChecked() ? paddedRange(lo, hi) : paddedRange(m.lo, m.hi));
    // Values in the cells, dark text on light colours and light text on dark ones.
    const QCPRange range = m.map->dataRange();
    QCPColorGradient gradient = m.map->gradient();
    QFont font(this->font().family(), 8);
    for (size_t x = 0; x < m.heads.size(); ++x)
      for (size_t y = 0; y < m.seqs.size(); ++y) {
        const RunResult* r = m.cells[x * m.seqs.size() + y];
        if (!r) continue;
        QString text;
        QColor color = palette().color(QPalette::WindowText);
        if (r->status == RunStatus::ok && r->memory.measured_peak > 0) {
          text = QString::fromStdString(formatBytes(r->memory.measured_peak));
          if (auto ran = r->facts.find("torch.ran"); ran != r->facts.end())
            text += "\n" + QString::fromStdString(ran->second);  // what torch ran, in the cell itself
          const QColor cell = QColor::fromRgb(gradient.color(double(r->memory.measured_peak), range, true));
          color = cell.lightness() > 140 ? QColor(0x10, 0x10, 0x10) : QColor(0xf5, 0xf5, 0xf5);
        } else {
          const auto st = toString(r->status);
          text = QString::fromUtf8(st.data(), static_cast<int>(st.size()));
          if (r->memory.predicted_peak >= 0) text += "\n~" + QString::fromStdString(formatBytes(r->memory.predicted_peak));
          color = QColor(0xd0, 0x3a, 0x3a);
        }
        auto* item = new QCPItemText(m.plot);
        item->position->setCoords(static_cast<double>(x), static_cast<double>(y));
        item->setText(text);
        item->setFont(font);
        item->setColor(color);
        item->setClipToAxisRect(true);
      }
    m.plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

const RunResult* HeatmapView::cellRun(const QCustomPlot* plot, QPointF pos) const {
  for (const Map& m : maps_) {
    if (m.plot != plot) continue;
    const int x = static_cast<int>(std::lround(plot->xAxis->pixelToCoord(pos.x())));
    const int y = static_cast<int>(std::lround(plot->yAxis->pixelToCoord(pos.y())));
    if (x < 0 || y < 0 || x >= static_cast<int>(m.heads.size()) || y >= static_cast<int>(m.seqs.size())) return nullptr;
    return m.cells[static_cast<size_t>(x) * m.seqs.size() + static_cast<size_t>(y)];
  }
  return nullptr;
}

QString HeatmapView::cellText(const Map& m, double xc, double yc) const {
  const int x = static_cast<int>(std::lround(xc)), y = static_cast<int>(std::lround(yc));
  if (x < 0 || y < 0 || x >= static_cast<int>(m.heads.size()) || y >= static_cast<int>(m.seqs.size())) return {};
  const RunResult* r = m.cells[static_cast<size_t>(x) * m.seqs.size() + static_cast<size_t>(y)];
  if (!r) return tr("heads %1, seq %2: no run").arg(m.heads[static_cast<size_t>(x)]).arg(m.seqs[static_cast<size_t>(y)]);
  QString ran;
  if (auto it = r->facts.find("torch.ran"); it != r->facts.end())
    ran = tr("<br>torch ran: <b>%1</b>").arg(QString::fromStdString(it->second).toHtmlEscaped());
  return tr("<b>R%1</b> %2<br>%3<br>status: %4<br>measured: %5<br>predicted: %6%7<br><i>click: show R%1 in Breakdown "
            "and Timeline</i>")
      .arg(r->id)
      .arg(QString::fromStdString(r->backend), QString::fromStdString(summary(r->spec)),
           QString::fromStdString(statusText(*r)).toHtmlEscaped(),
           r->status == RunStatus::ok ? QString::fromStdString(formatBytes(r->memory.measured_peak)) : QStringLiteral("-"),
           QString::fromStdString(formatBytes(r->memory.predicted_peak)), ran);
}

}  // namespace attnscope::ui
