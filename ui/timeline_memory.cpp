// The memory half of the Timeline (timeline_view.h): what a load computes off the GUI thread (the
// curve, a tensor-parallel run's curve per rank, the bands), and the curves, bands and snapshot
// drawn from it.

#include <algorithm>
#include <cmath>
#include <set>

#include <QTableWidget>
#include <QLabel>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/chart_context.h"
#include "ui/plot_style.h"
#include "ui/timeline_view.h"

namespace attnscope::ui {

namespace {

// Another rank's curve beside the banded rank's blue one: apart from it and from each other, a
// little lighter on a dark background.
QColor rankColor(size_t index, bool dark) {
  static const QColor colors[] = {QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f), QColor(0xe1, 0x57, 0x59),
                                  QColor(0xb0, 0x7a, 0xa1), QColor(0x9c, 0x75, 0x5f), QColor(0x76, 0xb7, 0xb2),
                                  QColor(0xed, 0xc9, 0x48)};
  const QColor c = colors[index % std::size(colors)];
  return dark ? c.lighter(120) : c;
}

}  // namespace

TimelineView::LoadedTrace TimelineView::analyse(std::vector<TraceEvent> events) {
  LoadedTrace out;
  MemoryFilter filter = memoryFilterFor(events);
  // A tensor-parallel run allocates on every rank (TraceEvent::device): a curve per rank, and the
  // rank with the largest peak (the run's measured peak) the one whose bands and snapshot are drawn.
  std::set<uint32_t> devices;
  for (const TraceEvent& e : events)
    if ((e.kind == EventKind::alloc || e.kind == EventKind::free) && filter.matches(e)) devices.insert(e.device);
  if (devices.size() > 1) {
    size_t top = 0;
    for (uint32_t d : devices) {
      MemoryFilter mine = filter;
      mine.device = d;
      MemoryTimeline timeline(events, mine);
      if (out.ranks.empty() || timeline.peakBytes() > out.ranks[top].timeline.peakBytes()) top = out.ranks.size();
      out.ranks.push_back({d, std::move(timeline)});
    }
    filter.device = out.ranks[top].device;
    out.timeline = out.ranks[top].timeline;
  } else {
    out.timeline = MemoryTimeline(events, filter);
  }
  out.bands = ui::bufferBands(events, filter);  // the free function, not the getter
  out.events = std::move(events);
  return out;
}

MemoryFilter TimelineView::memoryFilterFor(const std::vector<TraceEvent>& events) {
  // One source only: the allocator and CUPTI each record every cudaMalloc, and summing both
  // would double the curve. The allocator sees every backend's memory; CUPTI-only traces
  // (a process we did not allocate for) fall back to CUPTI's device memory.
  const bool has_allocator = std::any_of(events.begin(), events.end(), [](const TraceEvent& e) {
    return e.source == EventSource::allocator && (e.kind == EventKind::alloc || e.kind == EventKind::free);
  });
  return has_allocator ? MemoryFilter{EventSource::allocator, std::nullopt, std::nullopt}
                       : MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt};
}

MemoryTimeline TimelineView::memoryTimelineOf(const std::vector<TraceEvent>& events) {
  return MemoryTimeline(events, memoryFilterFor(events));
}

void TimelineView::drawBands() {
  for (QCPAbstractItem* item : band_items_) plot_->removeItem(item);
  band_items_.clear();
  for (QCPAbstractItem* item : band_label_items_) plot_->removeItem(item);
  band_label_items_.clear();  // named again for the visible range (labelBands)
  bands_.clear();
  const bool on = bands_box_->isChecked() && !events_.empty();
  // With the bands on, the curve is their outline; without, a filled area.
  memory_graph_->setBrush(on ? QBrush(Qt::NoBrush) : QBrush(QColor(0x4e, 0x79, 0xa7, 60)));
  if (!on) return;
  bands_ = all_bands_;
  QCPAxis* x = memory_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = memory_rect_->axis(QCPAxis::atLeft);
  for (const BufferBand& b : bands_) {
    const QColor color = colors_(b.name);  // as in Breakdown
    // One rectangle per stretch at one height: the band steps down when a block below it is freed.
    const std::vector<BandPiece> pieces = piecesOf(b);
    for (const BandPiece& piece : pieces) {
      auto* rect = new QCPItemRect(plot_);
      rect->setClipAxisRect(memory_rect_);
      rect->topLeft->setAxes(x, y);
      rect->bottomRight->setAxes(x, y);
      rect->topLeft->setCoords(static_cast<double>(piece.start_ns - t0_), static_cast<double>(piece.base + b.bytes));
      rect->bottomRight->setCoords(static_cast<double>(piece.end_ns - t0_), static_cast<double>(piece.base));
      rect->setBrush(color);
      rect->setPen(QPen(color.darker(140)));
      band_items_.push_back(rect);
    }
  }
}

void TimelineView::labelBands(const TimeToPixel& map) {
  for (QCPAbstractItem* item : band_label_items_) plot_->removeItem(item);
  band_label_items_.clear();
  // Each band named on its widest visible stretch, elided to that stretch's width and only where
  // the stretch is a line tall: a name never runs over its neighbours' (the slices' rule).
  constexpr int kMaxBandLabels = 120;
  constexpr double kMinLabelPx = 28;
  const QFont label_font(font().family(), 8);
  const QFontMetrics metrics(label_font);
  QCPAxis* x = memory_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = memory_rect_->axis(QCPAxis::atLeft);
  struct Candidate {
    double px;
    size_t band;
    BandPiece piece;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < bands_.size(); ++i) {
    const BufferBand& b = bands_[i];
    const double tall = std::abs(y->coordToPixel(0) - y->coordToPixel(static_cast<double>(b.bytes)));
    if (tall < metrics.height()) continue;
    Candidate best{0, i, {}};
    for (const BandPiece& piece : piecesOf(b)) {
      const double lo = std::max(static_cast<double>(piece.start_ns - t0_), map.t0);
      const double hi = std::min(static_cast<double>(piece.end_ns - t0_), map.t1);
      const double px = (hi - lo) / map.nsPerPixel();
      if (px > best.px) best = {px, i, {static_cast<int64_t>(lo), static_cast<int64_t>(hi), piece.base}};
    }
    if (best.px >= kMinLabelPx) candidates.push_back(best);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.px > b.px; });
  if (candidates.size() > kMaxBandLabels) candidates.resize(kMaxBandLabels);
  for (const Candidate& c : candidates) {
    const BufferBand& b = bands_[c.band];
    const QString full = QString::fromStdString(b.name) + "  " + QString::fromStdString(formatBytes(b.bytes));
    const QString text = metrics.elidedText(full, Qt::ElideRight, static_cast<int>(c.px) - 6);
    if (text.size() < 3) continue;
    auto* label = new QCPItemText(plot_);
    label->setClipAxisRect(memory_rect_);
    label->position->setAxes(x, y);
    label->position->setCoords(static_cast<double>(c.piece.start_ns), static_cast<double>(c.piece.base) + b.bytes / 2.0);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->setPadding(QMargins(3, 0, 0, 0));
    label->setText(text);
    label->setFont(label_font);
    label->setColor(QColor(0x20, 0x20, 0x20));
    band_label_items_.push_back(label);
  }
}

void TimelineView::showRankCurves(std::vector<RankTimeline> ranks) {
  for (RankCurve& r : rank_curves_)
    if (r.graph != memory_graph_) plot_->removeGraph(r.graph);
  rank_curves_.clear();
  memory_legend_->clearItems();
  memory_legend_->setVisible(!ranks.empty());
  memory_graph_->setName(tr("live memory"));
  if (ranks.empty()) return;
  // The banded rank: the one whose timeline is the view's (the largest peak).
  banded_rank_ = ranks.front().device;
  for (const RankTimeline& r : ranks)
    if (r.timeline.peakBytes() == timeline_.peakBytes() && r.timeline.peakNs() == timeline_.peakNs()) {
      banded_rank_ = r.device;
      break;
    }
  const bool dark = isDarkPalette(palette());
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankCurve curve;
    curve.device = ranks[i].device;
    for (const MemoryPoint& p : ranks[i].timeline.curve()) curve.curve.push_back({p.t_ns - t0_, p.bytes});
    if (curve.device == banded_rank_) {
      curve.graph = memory_graph_;
    } else {
      curve.graph = plot_->addGraph(memory_rect_->axis(QCPAxis::atBottom), memory_rect_->axis(QCPAxis::atLeft));
      curve.graph->setLineStyle(QCPGraph::lsStepLeft);
      curve.graph->setAdaptiveSampling(false);  // at pixel resolution already, maxima kept
      curve.graph->setPen(QPen(rankColor(i, dark), 2));
      curve.graph->setLayer(QStringLiteral("rankCurves"));
    }
    curve.graph->setName(tr("rank %1").arg(curve.device));
    rank_curves_.push_back(std::move(curve));
  }
  // The banded rank's curve keeps the run's colour (the outline of its bands); the legend in rank
  // order, one row along the top of the memory rect.
  for (const RankCurve& r : rank_curves_) r.graph->addToLegend(memory_legend_);
  memory_legend_->setTextColor(palette().color(QPalette::WindowText));
  QColor bg = palette().color(QPalette::Base);
  bg.setAlpha(200);
  memory_legend_->setBrush(bg);
}

QList<QCPGraph*> TimelineView::memoryCurves() const {
  if (rank_curves_.empty()) return {memory_graph_};
  QList<QCPGraph*> out;
  for (const RankCurve& r : rank_curves_) out << r.graph;
  return out;
}

void TimelineView::setEvents(std::vector<TraceEvent> events) { showTrace(analyse(std::move(events))); }

void TimelineView::showTrace(LoadedTrace loaded) {
  events_ = std::move(loaded.events);
  timeline_ = std::move(loaded.timeline);
  all_bands_ = std::move(loaded.bands);
  {
    // Colours as Breakdown gives them: the run's plan first, in its order, then what else the
    // trace allocated (a torch run's ops), in allocation order.
    std::vector<std::string> names;
    if (const RunResult* run = findRun(sweeps_, run_->currentData().toLongLong()))
      for (const PlannedBuffer& b : run->plan.buffers) names.push_back(b.name);
    for (const BufferBand& b : all_bands_) names.push_back(b.name);
    colors_ = BufferPalette(names);
  }
  t0_ = 0;
  int64_t t1 = 1;
  if (!events_.empty()) {
    t0_ = events_.front().start_ns;
    t1 = events_.front().end_ns;
    for (const TraceEvent& e : events_) {
      t0_ = std::min(t0_, e.start_ns);
      t1 = std::max({t1, e.end_ns, e.start_ns});
    }
  }
  t_end_ = std::max<double>(1.0, static_cast<double>(t1 - t0_));
  curve_.clear();
  curve_.reserve(timeline_.curve().size());
  for (const MemoryPoint& p : timeline_.curve()) curve_.push_back({p.t_ns - t0_, p.bytes});
  showRankCurves(std::move(loaded.ranks));
  rebuildLanes();
  drawBands();
  // Room above the peak; with ranks, for their legend's row too.
  memory_rect_->axis(QCPAxis::atLeft)->setRange(
      0, std::max<double>(1.0, static_cast<double>(timeline_.peakBytes())) * (rank_curves_.empty() ? 1.15 : 1.3));
  const QString peak_where = rank_curves_.empty() ? QString() : tr(" on rank %1").arg(banded_rank_);
  info_->setText(events_.empty() ? tr("no trace events for this run")
                                 : tr("%1 events; peak %2%3 at %4 (%5)")
                                       .arg(events_.size())
                                       .arg(QString::fromStdString(formatBytes(timeline_.peakBytes())), peak_where,
                                            QString::fromStdString(formatTimeTick(static_cast<double>(timeline_.peakNs() - t0_))),
                                            timeline_.peakPhase().empty() ? tr("no phase") : QString::fromStdString(timeline_.peakPhase())));
  setTimeRange(0, t_end_);
  showSnapshot(events_.empty() ? 0.0 : static_cast<double>(timeline_.peakNs() - t0_));
}

int64_t TimelineView::liveBytesAt(double t) const {
  auto it = std::upper_bound(curve_.begin(), curve_.end(), t,
                             [](double v, const MemoryPoint& p) { return v < static_cast<double>(p.t_ns); });
  if (it == curve_.begin()) return 0;
  --it;
  int64_t level = it->bytes;
  // The instant's own points (a block allocated and one freed at t): its highest level.
  for (auto at = it; static_cast<double>(at->t_ns) == t; --at) {
    level = std::max(level, at->bytes);
    if (at == curve_.begin()) break;
  }
  return level;
}

void TimelineView::showSnapshot(double t) {
  snapshot_t_ = t;
  snapshot_->setRowCount(0);
  for (QCPItemStraightLine* line : {cursor_memory_, cursor_lanes_}) {
    line->point1->setCoords(t, 0);
    line->point2->setCoords(t, 1);
    line->setVisible(!events_.empty());
  }
  if (events_.empty()) {
    snapshot_title_->setText(tr("Memory snapshot: no trace"));
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const int64_t at = static_cast<int64_t>(std::llround(t)) + t0_;
  const std::vector<size_t> live = liveAt(all_bands_, at);
  const int64_t total = liveBytesAt(t);
  int64_t listed = 0;
  auto add_row = [this](const QString& name, const QColor& color, int64_t bytes, int64_t total_bytes, const QString& from,
                        const QString& to) {
    const int row = snapshot_->rowCount();
    snapshot_->insertRow(row);
    auto* item = new QTableWidgetItem(name);
    if (color.isValid()) item->setData(Qt::DecorationRole, color);
    item->setToolTip(name);
    snapshot_->setItem(row, 0, item);
    auto* size = new QTableWidgetItem(QString::fromStdString(formatBytes(bytes)));
    size->setData(Qt::UserRole, static_cast<qlonglong>(bytes));
    size->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    snapshot_->setItem(row, 1, size);
    auto* share = new QTableWidgetItem(
        total_bytes > 0 ? QString::number(100.0 * static_cast<double>(bytes) / static_cast<double>(total_bytes), 'f', 1) + " %"
                        : QString());
    share->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    snapshot_->setItem(row, 2, share);
    snapshot_->setItem(row, 3, new QTableWidgetItem(from));
    snapshot_->setItem(row, 4, new QTableWidgetItem(to));
  };
  for (size_t i : live) {
    const BufferBand& b = all_bands_[i];
    listed += b.bytes;
    add_row(QString::fromStdString(b.name.empty() ? std::string("(unnamed)") : b.name), colors_(b.name), b.bytes,
            total, QString::fromStdString(formatTimeTick(static_cast<double>(b.start_ns - t0_))),
            b.freed ? QString::fromStdString(formatTimeTick(static_cast<double>(b.end_ns - t0_))) : tr("never"));
  }
  // The bands keep the largest blocks (bufferBands' cap): the rest of the curve's level is the
  // many small ones, one row, so the rows always add up to the curve.
  if (total > listed)
    add_row(tr("smaller blocks (not drawn as bands)"), QColor(), total - listed, total, QString(), QString());
  const bool at_peak = at == timeline_.peakNs();
  snapshot_title_->setText(tr("<b>Live at %1%2%3: %4</b> in %5 block(s), largest first. Click the memory curve for "
                              "another moment.")
                               .arg(QString::fromStdString(formatTimeTick(t)),
                                    rank_curves_.empty() ? QString() : tr(" on rank %1").arg(banded_rank_),
                                    at_peak ? tr(" (the peak)") : QString(), QString::fromStdString(formatBytes(total)))
                               .arg(live.size()));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}


}  // namespace attnscope::ui
