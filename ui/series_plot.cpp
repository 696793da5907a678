#include "ui/series_plot.h"
#include "ui/chart_math.h"

#include <map>

#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

namespace {

double metricValue(const SeriesPoint& p, Metric m, bool predicted, double unit) {
  switch (m) {
    case Metric::memory:
      return static_cast<double>(predicted || p.status != RunStatus::ok ? p.predicted : p.measured);
    case Metric::latency: return p.median_s / unit;
    case Metric::throughput: return p.flops_per_s / unit;
  }
  return 0;
}

constexpr Qt::PenStyle kLineStyles[] = {Qt::SolidLine, Qt::DashDotLine, Qt::DotLine, Qt::DashDotDotLine};
constexpr QCPScatterStyle::ScatterShape kMarkers[] = {QCPScatterStyle::ssDisc, QCPScatterStyle::ssSquare,
                                                       QCPScatterStyle::ssTriangleInverted, QCPScatterStyle::ssDiamond};

}  // namespace

int seriesLineStyle(int index) { return kLineStyles[static_cast<size_t>(index) % std::size(kLineStyles)]; }
int seriesMarker(int index) { return kMarkers[static_cast<size_t>(index) % std::size(kMarkers)]; }

void SeriesPlot::clear(QCustomPlot* plot) {
  failed_.clear();
  line_keys_.clear();
  marker_keys_.clear();
  colours_.clear();
  for (int i = 0; i < plot->graphCount(); ++i) {
    points_.remove(plot->graph(i));
    labels_.remove(plot->graph(i));
  }
  plot->clearPlottables();  // graphs and the latency's error bars
}

void SeriesPlot::add(QCustomPlot* plot, const PlotSeries& s, Metric metric, bool with_predicted) {
  const QColor color = variantColor(s.backend, s.variant, s.variant_count, isDarkPalette(plot->palette()));
  const QString label = QString::fromStdString(s.label);
  auto make = [&](const QString& kind, const QString& name) {
    QCPGraph* g = plot->addGraph();
    g->setName(name);
    g->setProperty("backend", QString::fromStdString(s.backend));
    g->setProperty("kind", kind);
    labels_[g] = label;
    return g;
  };
  auto fill = [&](QCPGraph* g, const std::vector<const SeriesPoint*>& pts, bool predicted) {
    QVector<double> keys, values;
    QVariantList ids;
    for (const SeriesPoint* p : pts) {
      keys.push_back(p->x);
      values.push_back(metricValue(*p, metric, predicted, unit_));
      ids.push_back(QVariant::fromValue<qlonglong>(p->run ? p->run->id : 0));
    }
    g->setData(keys, values, true);
    g->setProperty("runIds", ids);
    points_[g] = pts;
  };

  std::vector<const SeriesPoint*> ok, predicted;
  // Memory marks every point that did not run at its prediction; time has nothing to show.
  std::map<RunStatus, std::vector<const SeriesPoint*>> failed;
  for (const SeriesPoint& p : s.points) {
    if (p.status == RunStatus::ok && (metric != Metric::memory || p.measured >= 0)) ok.push_back(&p);
    if (metric == Metric::memory && p.predicted >= 0) {
      predicted.push_back(&p);
      if (p.status != RunStatus::ok) {
        failed[p.status].push_back(&p);
        failed_.insert(p.status);
      }
    }
  }
  const auto line = static_cast<Qt::PenStyle>(seriesLineStyle(s.line));
  const auto marker = static_cast<QCPScatterStyle::ScatterShape>(seriesMarker(s.marker));
  QCPGraph* measured = make("measured", label);
  measured->setPen(QPen(color, 2, line));
  // A marker that encodes checkpoint is larger, and the predicted ring drawn over it where
  // prediction and measurement agree larger still, so that its shape shows whole inside the ring.
  const bool shaped = !s.marker_key.empty();
  measured->setScatterStyle(QCPScatterStyle(marker, color, color, shaped ? 8 : 6));
  if (!s.line_key.empty() || !s.marker_key.empty()) {
    // One legend entry per colour, drawn with what does not encode pass or checkpoint.
    measured->removeFromLegend();
    if (!s.line_key.empty()) line_keys_[s.line] = s.line_key;
    if (!s.marker_key.empty()) marker_keys_[s.marker] = s.marker_key;
    const QString colour_label = QString::fromStdString(s.colour_label);
    if (colours_.insert(s.backend + "|" + s.colour_label).second) {
      QCPGraph* entry = plot->addGraph();
      entry->setName(colour_label);
      entry->setProperty("kind", "colour");
      entry->setProperty("backend", QString::fromStdString(s.backend));
      entry->setSelectable(QCP::stNone);
      entry->setPen(QPen(color, 2, s.line_key.empty() ? line : Qt::SolidLine));
      entry->setScatterStyle(
          QCPScatterStyle(s.marker_key.empty() ? marker : QCPScatterStyle::ssDisc, color, color, 6));
    }
  }
  fill(measured, ok, false);
  if (metric == Metric::latency && !ok.empty()) {
    // The spread of the repetitions, not only their median: a bar from the fastest to the slowest.
    auto* spread = new QCPErrorBars(plot->xAxis, plot->yAxis);
    spread->setName(label + " (min-max)");
    spread->removeFromLegend();
    spread->setDataPlottable(measured);
    spread->setPen(QPen(color, 1.2));
    spread->setWhiskerWidth(6);
    spread->setProperty("kind", "spread");
    QVector<double> minus, plus;
    for (const SeriesPoint* p : ok) {
      const RunResult* r = p->run;
      const double median = r->timing.median_s, lo = r->timing.min_s > 0 ? r->timing.min_s : median,
                   hi = r->timing.max_s > 0 ? r->timing.max_s : median;
      minus.push_back(std::max(0.0, median - lo) / unit_);
      plus.push_back(std::max(0.0, hi - median) / unit_);
    }
    spread->setData(minus, plus);
  }

  if (with_predicted && metric == Metric::memory) {
    // Drawn above the measured line, in a deeper (on dark: paler) shade with open rings larger
    // than the measured dots: where prediction and measurement coincide both stay visible.
    QCPGraph* g = make("predicted", label + " (predicted)");
    const QColor shade = predictedShade(color, isDarkPalette(plot->palette()));
    g->setPen(QPen(shade, 1.5, Qt::DashLine));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(shade, 1.5), QBrush(Qt::NoBrush), shaped ? 14 : 10));
    fill(g, predicted, true);
    g->removeFromLegend();
  }
  for (const auto& [status, pts] : failed) {
    const QString st = QString::fromUtf8(toString(status).data(), toString(status).size());
    QCPGraph* g = make(st, label + " (" + st + ")");
    g->setLineStyle(QCPGraph::lsNone);
    // Larger than the predicted ring it sits on, so a star or cross is never hidden inside it.
    g->setScatterStyle(QCPScatterStyle(static_cast<QCPScatterStyle::ScatterShape>(failedMarkerShape(status)), QPen(color, 2.2), QBrush(Qt::NoBrush), shaped ? 17 : 14));
    fill(g, pts, true);
    g->removeFromLegend();
  }
}

void SeriesPlot::addKey(QCustomPlot* plot, bool with_predicted, bool measured) {
  const QColor grey(0x80, 0x80, 0x80);
  auto key = [&](const std::string& name, Qt::PenStyle pen, QCPScatterStyle::ScatterShape shape, bool line) {
    QCPGraph* g = plot->addGraph();
    g->setName(QString::fromStdString(name));
    g->setPen(QPen(grey, 2, pen));
    g->setScatterStyle(QCPScatterStyle(shape, grey, grey, 6));
    g->setLineStyle(line ? QCPGraph::lsLine : QCPGraph::lsNone);
    g->setProperty("kind", "key");
    g->setSelectable(QCP::stNone);
  };
  for (const auto& [i, name] : line_keys_)
    key(name, static_cast<Qt::PenStyle>(seriesLineStyle(i)), QCPScatterStyle::ssNone, true);
  for (const auto& [i, name] : marker_keys_)
    key(name, Qt::NoPen, static_cast<QCPScatterStyle::ScatterShape>(seriesMarker(i)), false);
  addStyleKey(plot, measured, with_predicted, failed_);
}

const SeriesPoint* SeriesPlot::point(QCPGraph* graph, int index) const {
  auto it = points_.find(graph);
  if (it == points_.end() || index < 0 || index >= static_cast<int>(it->size())) return nullptr;
  return (*it)[static_cast<size_t>(index)];
}

QString SeriesPlot::tooltip(QCPGraph* graph, int index) const {
  const SeriesPoint* p = point(graph, index);
  if (!p || !p->run) return {};
  const RunResult& r = *p->run;
  QString t = QStringLiteral("<b>R%1</b> %2<br>%3<br>status: <b>%4</b>")
                  .arg(r.id)
                  .arg(labels_.value(graph).toHtmlEscaped(), QString::fromStdString(summary(r.spec)),
                       QString::fromStdString(statusText(r)).toHtmlEscaped());
  if (auto ran = r.facts.find("torch.ran"); ran != r.facts.end())
    t += "<br>torch ran: <b>" + QString::fromStdString(ran->second).toHtmlEscaped() + "</b>";
  auto bytes = [](int64_t b) {
    return b < 0 ? QStringLiteral("-")
                 : QStringLiteral("%1 (%2 B)").arg(QString::fromStdString(formatBytes(b))).arg(b);
  };
  t += "<br>measured peak: " + bytes(r.status == RunStatus::ok ? r.memory.measured_peak : -1);
  t += "<br>predicted peak: " + bytes(r.memory.predicted_peak);
  // A tensor-parallel run's point is its largest rank's peak; each rank's own, as measured.
  for (const RankStats& rank : rankStats(r)) {
    t += QStringLiteral("<br>&nbsp;&nbsp;rank %1: peak %2").arg(rank.rank).arg(bytes(rank.peak_bytes));
    if (rank.seconds >= 0) t += ", " + QString::fromStdString(durationText(rank.seconds));
    if (rank.comm_share >= 0) t += QStringLiteral(", communication %1 %").arg(100.0 * rank.comm_share, 0, 'f', 1);
  }
  if (r.status == RunStatus::ok) {
    t += "<br>median: " + QString::fromStdString(durationText(r.timing.median_s));
    if (r.timing.reps > 1)
      t += QStringLiteral(" (min %1, max %2 of %3 repetitions)")
               .arg(QString::fromStdString(durationText(r.timing.min_s)), QString::fromStdString(durationText(r.timing.max_s)))
               .arg(r.timing.reps);
    t += "<br>throughput: " + QString::fromStdString(formatFlops(r.flopsPerSecond()));
  }
  if (!r.message.empty()) t += "<br>" + QString::fromStdString(r.message).toHtmlEscaped();
  t += "<br><i>" + QObject::tr("click: show R%1 in Breakdown and Timeline").arg(r.id) + "</i>";
  return t;
}

}  // namespace attnscope::ui
