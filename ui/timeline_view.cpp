#include "ui/timeline_view.h"
#include "ui/chart_math.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QPointer>
#include <QPushButton>
#include <QThreadPool>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QRubberBand>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QWheelEvent>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/byte_axis_ticker.h"
#include "ui/chart_context.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"
#include "ui/run_chooser.h"

namespace attnscope::ui {

TimelineView::TimelineView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  run_ = new QComboBox(this);
  run_->setObjectName("timelineRun");
  // At most ~48 characters wide (the full description in its tooltip and the popup): a long run
  // description must not widen the window.
  run_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  run_->setMinimumContentsLength(48);
  info_ = new QLabel(this);
  info_->setWordWrap(true);  // a long status must not widen the window
  bar->addWidget(new QLabel(tr("Run:"), this));
  bar->addWidget(run_);
  bar->addWidget(info_, 1);
  // Wheel zoom and drag pan have no visible way back: this is it.
  bands_box_ = new QCheckBox(tr("Buffers"), this);
  bands_box_->setObjectName("timelineBuffers");
  bands_box_->setChecked(true);
  bands_box_->setToolTip(tr("Each allocation as a band from its allocation to its free, stacked on what was live, "
                            "named by the backend's buffer (the plan's names)"));
  connect(bands_box_, &QCheckBox::toggled, this, [this] {
    drawBands();
    refreshVisible();  // the bands' names, for the range shown
  });
  bar->addWidget(bands_box_);
  auto* reset = new QPushButton(tr("Reset zoom"), this);
  reset->setObjectName("timelineResetZoom");
  reset->setToolTip(tr("Show the whole run again (the wheel or W/S zoom at the cursor, drag or A/D pans, "
                       "a right- or Shift-drag zooms to the range it covers)"));
  connect(reset, &QPushButton::clicked, this, [this] { setTimeRange(0, t_end_); });
  bar->addWidget(reset);
  layout->addLayout(bar);
  plot_ = makePlot(this);
  plot_->setObjectName("timelinePlot");
  plot_->plotLayout()->clear();
  lane_rect_ = new QCPAxisRect(plot_);
  memory_rect_ = new QCPAxisRect(plot_);
  // Title and context rows as every chart has them (plot_layout.h): which run this is.
  const QString family = font().family();
  plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, tr("Timeline"), QFont(family, 11, QFont::Bold)));
  auto* context = new QCPTextElement(plot_, QStringLiteral(" "), QFont(family, 8));
  context->setMargins(QMargins(4, 0, 4, 4));
  plot_->plotLayout()->addElement(1, 0, context);
  plot_->plotLayout()->addElement(2, 0, lane_rect_);
  plot_->plotLayout()->addElement(3, 0, memory_rect_);
  plot_->plotLayout()->setRowSpacing(0);
  plot_->plotLayout()->setRowStretchFactor(0, 0.001);
  plot_->plotLayout()->setRowStretchFactor(1, 0.001);
  plot_->plotLayout()->setRowStretchFactor(2, 1.2);
  auto* margins = new QCPMarginGroup(plot_);
  lane_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
  memory_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
  for (QCPAxisRect* r : {lane_rect_, memory_rect_}) {
    r->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<TimeAxisTicker>::create());
    r->setRangeDrag(Qt::Horizontal);
    r->setRangeZoom(Qt::Horizontal);
  }
  lane_rect_->axis(QCPAxis::atLeft)->grid()->setVisible(false);
  memory_rect_->axis(QCPAxis::atLeft)->setTicker(QSharedPointer<ByteAxisTicker>::create(false));
  memory_rect_->axis(QCPAxis::atLeft)->setLabel(tr("live memory"));
  memory_rect_->axis(QCPAxis::atBottom)->setLabel(tr("time since the run's first event"));
  memory_graph_ = plot_->addGraph(memory_rect_->axis(QCPAxis::atBottom), memory_rect_->axis(QCPAxis::atLeft));
  memory_graph_->setLineStyle(QCPGraph::lsStepLeft);
  memory_graph_->setPen(QPen(QColor(0x4e, 0x79, 0xa7), 1.5));
  memory_graph_->setBrush(QColor(0x4e, 0x79, 0xa7, 60));
  memory_graph_->setAdaptiveSampling(false);  // already at pixel resolution, maxima kept
  // A tensor-parallel run's curves named by rank, in one row along the top of the memory rect
  // (the axis leaves room above the peak for it).
  // The plot's legend from here on (QCustomPlot adopts the first one placed): only the rank
  // curves go into it, not every lane's graph.
  plot_->setAutoAddPlottableToLegend(false);
  // Other ranks' curves over the bands (items on "main", drawn after the graphs there).
  plot_->addLayer(QStringLiteral("rankCurves"), plot_->layer(QStringLiteral("main")), QCustomPlot::limAbove);
  memory_legend_ = new QCPLegend;
  memory_rect_->insetLayout()->addElement(memory_legend_, Qt::AlignTop | Qt::AlignLeft);
  memory_legend_->setLayer(QStringLiteral("legend"));
  memory_legend_->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  memory_legend_->setFont(QFont(family, 8));
  memory_legend_->setVisible(false);
  // Under the plot, the memory snapshot: what is live at the cursor's time.
  auto* split = new QSplitter(Qt::Vertical, this);
  split->setObjectName("timelineSplit");
  split->setChildrenCollapsible(false);
  split->addWidget(plot_);
  auto* panel = new QWidget(split);
  auto* panel_layout = new QVBoxLayout(panel);
  panel_layout->setContentsMargins(0, 2, 0, 0);
  auto* panel_bar = new QHBoxLayout;
  snapshot_title_ = new QLabel(panel);
  snapshot_title_->setObjectName("timelineSnapshotTitle");
  snapshot_title_->setWordWrap(true);
  auto* to_peak = new QPushButton(tr("Go to peak"), panel);
  to_peak->setObjectName("timelineGoToPeak");
  to_peak->setToolTip(tr("Put the cursor on the peak: the table lists its top contributors"));
  connect(to_peak, &QPushButton::clicked, this, [this] {
    const double peak = static_cast<double>(timeline_.peakNs() - t0_);
    showSnapshot(peak);
    const QCPRange r = lane_rect_->axis(QCPAxis::atBottom)->range();
    if (peak < r.lower || peak > r.upper) setTimeRange(peak - r.size() / 2, peak + r.size() / 2);
  });
  panel_bar->addWidget(snapshot_title_, 1);
  panel_bar->addWidget(to_peak);
  panel_layout->addLayout(panel_bar);
  snapshot_ = new QTableWidget(0, 5, panel);
  snapshot_->setObjectName("timelineSnapshot");
  snapshot_->setHorizontalHeaderLabels({tr("Buffer"), tr("Size"), tr("Share"), tr("Allocated"), tr("Freed")});
  snapshot_->verticalHeader()->setVisible(false);
  snapshot_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  snapshot_->setSelectionBehavior(QAbstractItemView::SelectRows);
  snapshot_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  for (int c = 1; c < 5; ++c) snapshot_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  panel_layout->addWidget(snapshot_, 1);
  split->addWidget(panel);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);
  for (QCPItemStraightLine** line : {&cursor_memory_, &cursor_lanes_}) {
    QCPAxisRect* rect = line == &cursor_memory_ ? memory_rect_ : lane_rect_;
    *line = new QCPItemStraightLine(plot_);
    (*line)->setClipAxisRect(rect);
    (*line)->point1->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    (*line)->point2->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    (*line)->setPen(QPen(QColor(0xd6, 0x27, 0x28), 1, Qt::DashLine));
    (*line)->setVisible(false);
  }
  // Our own wheel zoom (anchored at the cursor), rubber band and keys: the event filter.
  for (QCPAxisRect* r : {lane_rect_, memory_rect_}) r->setRangeZoom(Qt::Orientations());
  plot_->installEventFilter(this);
  plot_->setFocusPolicy(Qt::StrongFocus);
  rubber_ = new QRubberBand(QRubberBand::Rectangle, plot_);

  // What is drawn is at pixel resolution: when the lanes' width changes (the first layout, a
  // resize), it is recomputed at once, between this frame's layout and its drawing, so names
  // placed for the old width never overprint on the frame drawn (a queued recompute left that
  // frame stale). The recompute's own queued replot finds the width unchanged and stops.
  connect(plot_, &QCustomPlot::afterLayout, this, [this] {
    if (lane_rect_->width() == laid_out_width_) return;
    laid_out_width_ = lane_rect_->width();
    refreshVisible();
  });
  // Zoom and pan in sync: either x-axis drives the other, then the visible data is recomputed.
  auto sync = [this](QCPAxis* other) {
    return [this, other](const QCPRange& r) {
      if (syncing_) return;
      syncing_ = true;
      other->setRange(r);
      refreshVisible();
      syncing_ = false;
    };
  };
  connect(lane_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          sync(memory_rect_->axis(QCPAxis::atBottom)));
  connect(memory_rect_->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          sync(lane_rect_->axis(QCPAxis::atBottom)));
  connect(run_, &QComboBox::currentIndexChanged, this, [this] { loadRun(); });
  connect(run_, &QComboBox::activated, this, [this] { Q_EMIT runPicked(run_->currentData().toLongLong()); });
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const QString t = hoverText(e);
    if (t.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), t, plot_);
  });
  applyTheme();
}

void TimelineView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  const qlonglong keep = fillRunChooser(run_, sweeps_, true);
  if (run_->currentData().toLongLong() != keep || keep == 0) loadRun();
}

void TimelineView::selectRun(qint64 run_id) { selectRunIn(run_, run_id); }

void TimelineView::loadRun() {
  const qlonglong id = run_->currentData().toLongLong();
  const RunResult* run = findRun(sweeps_, id);
  warmup_ = 0;
  reps_ = -1;
  for (const auto& sweep : sweeps_)
    for (const RunResult& r : sweep->runs)
      if (r.id == id) {
        warmup_ = sweep->spec.warmup;
        reps_ = sweep->spec.reps;
      }
  setPlotTitle(plot_, run ? tr("Timeline of R%1").arg(id) : tr("Timeline"));
  setPlotContext(plot_, run ? QString::fromStdString(runInWords(*run)).replace(", ", " \u00b7 ")
                            : tr("pick a run that finished ok (Run: above, or a run in the Runs dock)"));
  const quint64 job = loads_.startJob();
  if (!background_ || id <= 0 || !source_) shown_job_ = job;
  if (id <= 0 || !source_) {
    setEvents({});
    return;
  }
  if (!background_) {
    std::vector<TraceEvent> events;
    try {
      events = source_(id);
    } catch (const std::exception& e) {
      info_->setText(tr("cannot load the trace: %1").arg(QString::fromStdString(e.what())));
    }
    showTrace(analyse(std::move(events)));
    return;
  }
  info_->setText(tr("loading the trace of R%1...").arg(id));
  QPointer<TimelineView> self(this);
  QThreadPool::globalInstance()->start([self, source = source_, id, job] {
    auto loaded = std::make_shared<LoadedTrace>();
    QString error;
    try {
      *loaded = analyse(source(id));
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    // Back on the GUI thread, where the view can only be deleted between events: a view gone
    // or a newer pick drops the result.
    QMetaObject::invokeMethod(qApp, [self, job, loaded, error] {
      if (!self || !self->loads_.isCurrent(job)) return;
      self->shown_job_ = job;
      self->showTrace(std::move(*loaded));
      if (!error.isEmpty()) self->info_->setText(tr("cannot load the trace: %1").arg(error));
    }, Qt::QueuedConnection);
  });
}

void TimelineView::zoomAt(double anchor, double factor) {
  const QCPRange r = lane_rect_->axis(QCPAxis::atBottom)->range();
  auto [lo, hi] = zoomRange(r.lower, r.upper, anchor, factor);
  const double margin = 0.05 * t_end_;
  constexpr double kMinSpan = 10;  // ns
  if (hi - lo < kMinSpan) std::tie(lo, hi) = zoomRange(r.lower, r.upper, anchor, kMinSpan / std::max(r.size(), 1e-9));
  if (hi - lo > t_end_ + 2 * margin) {
    lo = -margin;
    hi = t_end_ + margin;
  }
  // Kept within the run; shifting keeps the span, so the anchor moves only at the run's edges.
  if (lo < -margin) {
    hi += -margin - lo;
    lo = -margin;
  }
  if (hi > t_end_ + margin) {
    lo -= hi - (t_end_ + margin);
    hi = t_end_ + margin;
  }
  setTimeRange(lo, hi);
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  if (watched != plot_) return ChartView::eventFilter(watched, event);
  auto in_rects = [this](QPointF p) {
    return lane_rect_->rect().contains(p.toPoint()) || memory_rect_->rect().contains(p.toPoint());
  };
  QCPAxis* x = lane_rect_->axis(QCPAxis::atBottom);
  switch (event->type()) {
    case QEvent::Wheel: {
      auto* w = static_cast<QWheelEvent*>(event);
      if (!in_rects(w->position())) return false;
      const double steps = w->angleDelta().y() / 120.0;
      if (steps == 0) return true;
      zoomAt(x->pixelToCoord(w->position().x()), std::pow(0.85, steps));
      return true;
    }
    case QEvent::KeyPress: {
      auto* k = static_cast<QKeyEvent*>(event);
      if (k->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)) return false;
      const QPoint cursor = plot_->mapFromGlobal(QCursor::pos());
      const QCPRange r = x->range();
      const double anchor = in_rects(cursor) ? x->pixelToCoord(cursor.x()) : r.center();
      switch (k->key()) {
        case Qt::Key_W: zoomAt(anchor, 0.8); return true;
        case Qt::Key_S: zoomAt(anchor, 1.25); return true;
        case Qt::Key_A:
        case Qt::Key_D: {
          const double shift = (k->key() == Qt::Key_A ? -0.2 : 0.2) * r.size();
          const double margin = 0.05 * t_end_;
          const double lo = std::clamp(r.lower + shift, -margin, std::max(-margin, t_end_ + margin - r.size()));
          setTimeRange(lo, lo + r.size());
          return true;
        }
        default: return false;
      }
    }
    case QEvent::MouseButtonPress: {
      auto* m = static_cast<QMouseEvent*>(event);
      if (!in_rects(m->position())) return false;
      const bool band = m->button() == Qt::RightButton ||
                        (m->button() == Qt::LeftButton && (m->modifiers() & Qt::ShiftModifier));
      if (band) {
        rubber_from_ = m->position().toPoint();
        rubber_->setGeometry(QRect(rubber_from_.x(), lane_rect_->top(), 0, memory_rect_->bottom() - lane_rect_->top()));
        rubber_->show();
        return true;
      }
      if (m->button() == Qt::LeftButton) press_at_ = m->position().toPoint();
      return false;
    }
    case QEvent::MouseMove: {
      if (!rubber_->isVisible()) return false;
      auto* m = static_cast<QMouseEvent*>(event);
      const int x0 = std::min(rubber_from_.x(), m->position().toPoint().x());
      const int x1 = std::max(rubber_from_.x(), m->position().toPoint().x());
      rubber_->setGeometry(QRect(x0, lane_rect_->top(), x1 - x0, memory_rect_->bottom() - lane_rect_->top()));
      return true;
    }
    case QEvent::MouseButtonRelease: {
      auto* m = static_cast<QMouseEvent*>(event);
      if (rubber_->isVisible()) {
        rubber_->hide();
        const double a = x->pixelToCoord(rubber_from_.x()), b = x->pixelToCoord(m->position().x());
        if (std::abs(m->position().x() - rubber_from_.x()) >= 4) {
          const double mid = (a + b) / 2, half = std::max(std::abs(b - a) / 2, 5.0);  // 10 ns at least
          setTimeRange(mid - half, mid + half);
        }
        return true;
      }
      // A click (not a drag) on the memory rect puts the snapshot there.
      if (m->button() == Qt::LeftButton && memory_rect_->rect().contains(m->position().toPoint()) &&
          (m->position().toPoint() - press_at_).manhattanLength() < 4)
        showSnapshot(std::clamp(memory_rect_->axis(QCPAxis::atBottom)->pixelToCoord(m->position().x()), 0.0, t_end_));
      return false;
    }
    default: return false;
  }
}

void TimelineView::rebuildLanes() {
  for (Lane& l : lanes_) {
    plot_->removeGraph(l.graph);
    plot_->removeGraph(l.base);
  }
  lanes_.clear();
  passes_ = passRanges(events_, warmup_, reps_);
  for (LaneLayout& layout : layoutLanes(events_, passes_, t0_)) {
    Lane lane;
    switch (layout.kind) {
      case LaneLayout::Kind::passes: lane.name = tr("passes"); break;
      case LaneLayout::Kind::layers: lane.name = tr("layers"); break;
      case LaneLayout::Kind::phase: lane.name = tr("phase %1").arg(QString::fromStdString(layout.phase)); break;
      case LaneLayout::Kind::cuda_stream: lane.name = tr("cuda:%1 stream %2").arg(layout.device).arg(layout.stream); break;
      case LaneLayout::Kind::cpu_thread: lane.name = tr("cpu thread %1").arg(layout.stream); break;
    }
    // A stream's nested events, one row per depth: the inner rows say which depth they hold.
    if (layout.depth > 0)
      lane.name = layout.depth == kMaxOpDepth - 1 ? tr("  \u21b3 depth %1+").arg(layout.depth)
                                                  : tr("  \u21b3 depth %1").arg(layout.depth);
    // A rank's own lanes say whose they are ("rank 1 · attention").
    if (layout.ranked)
      lane.name = tr("rank %1 \u00b7 %2")
                      .arg(layout.device)
                      .arg(layout.kind == LaneLayout::Kind::layers ? tr("layers") : QString::fromStdString(layout.phase));
    lane.ops = layout.kind == LaneLayout::Kind::cpu_thread || layout.kind == LaneLayout::Kind::cuda_stream;
    lane.passes = layout.kind == LaneLayout::Kind::passes;
    lane.layers = layout.kind == LaneLayout::Kind::layers;
    lane.named = lane.layers || layout.ranked;  // many names in one lane: each on its slices
    lane.comm = layout.comm;
    lane.intervals = std::move(layout.intervals);
    lane.event_index = std::move(layout.items);
    lanes_.push_back(std::move(lane));
  }
  for (QCPAbstractItem* item : pass_items_) plot_->removeItem(item);
  pass_items_.clear();
  auto ticks = QSharedPointer<QCPAxisTickerText>::create();
  const int n = static_cast<int>(lanes_.size());
  for (int k = 0; k < n; ++k) {
    Lane& lane = lanes_[static_cast<size_t>(k)];
    const double base = n - 1 - k;  // top lane first
    ticks->addTick(base + 0.4, lane.name);
    lane.base = plot_->addGraph(lane_rect_->axis(QCPAxis::atBottom), lane_rect_->axis(QCPAxis::atLeft));
    lane.base->setPen(Qt::NoPen);
    lane.base->setData({-1e18, 1e18}, {base, base});
    lane.graph = plot_->addGraph(lane_rect_->axis(QCPAxis::atBottom), lane_rect_->axis(QCPAxis::atLeft));
    lane.graph->setLineStyle(QCPGraph::lsStepLeft);
    lane.graph->setAdaptiveSampling(false);
    const bool is_phase = !lane.passes && events_[lane.event_index.front()].kind == EventKind::phase;
    // Passes blue-grey, a stack's layers teal, phases mauve, communication red (it stands out
    // between the compute phases it interrupts), kernels and ops orange.
    const QColor c = lane.passes   ? QColor(0x9c, 0xb8, 0xd6)
                     : lane.layers ? QColor(0x76, 0xb7, 0xb2)
                     : lane.comm   ? QColor(0xd6, 0x27, 0x28)
                     : is_phase    ? QColor(0xb0, 0x7a, 0xa1)
                                   : QColor(0xf2, 0x8e, 0x2b);
    if (lane.passes) {
      // Each pass named in its bar (clipped to it when zoomed out too far to fit), coloured by
      // what it is: warm-up grey, timed repetitions blue, the profiled call (whose allocations are
      // the memory curve, for torch) green.
      for (size_t i = 0; i < lane.intervals.size(); ++i) {
        const PassRange& pass = passes_[lane.event_index[i]];
        if (pass.kind != PassRange::Kind::rep) {
          auto* bar = new QCPItemRect(plot_);
          bar->setClipAxisRect(lane_rect_);
          bar->topLeft->setAxes(lane_rect_->axis(QCPAxis::atBottom), lane_rect_->axis(QCPAxis::atLeft));
          bar->bottomRight->setAxes(lane_rect_->axis(QCPAxis::atBottom), lane_rect_->axis(QCPAxis::atLeft));
          bar->topLeft->setCoords(lane.intervals[i].start, base + 0.8);
          bar->bottomRight->setCoords(lane.intervals[i].end, base);
          const QColor fill = pass.kind == PassRange::Kind::warmup ? QColor(0xc8, 0xc8, 0xc8) : QColor(0x8c, 0xd1, 0x7d);
          bar->setBrush(fill);
          bar->setPen(QPen(fill.darker(130)));
          pass_items_.push_back(bar);
        }
      }
      for (size_t i = 0; i < lane.intervals.size(); ++i) {
        auto* label = new QCPItemText(plot_);
        label->setClipAxisRect(lane_rect_);
        label->position->setAxes(lane_rect_->axis(QCPAxis::atBottom), lane_rect_->axis(QCPAxis::atLeft));
        label->position->setCoords((lane.intervals[i].start + lane.intervals[i].end) / 2, base + 0.4);
        label->setText(QString::fromStdString(passes_[lane.event_index[i]].label));
        label->setFont(QFont(font().family(), 8));
        label->setColor(QColor(0x20, 0x20, 0x20));
        pass_items_.push_back(label);
      }
    }
    lane.graph->setPen(QPen(c.darker(130), 1));
    lane.graph->setBrush(c);
    lane.graph->setChannelFillGraph(lane.base);
  }
  lane_rect_->axis(QCPAxis::atLeft)->setTicker(ticks);
  lane_rect_->axis(QCPAxis::atLeft)->setRange(-0.2, std::max(1, n) + 0.0);
}

QCPGraph* TimelineView::laneGraph(int lane) const {
  return lane >= 0 && lane < laneCount() ? lanes_[static_cast<size_t>(lane)].graph : nullptr;
}

void TimelineView::setTimeRange(double lo, double hi) {
  lane_rect_->axis(QCPAxis::atBottom)->setRange(lo, hi);  // syncs the memory axis and refreshes
  refreshVisible();
}

void TimelineView::refreshVisible() {
  const QCPRange r = lane_rect_->axis(QCPAxis::atBottom)->range();
  const int width = std::max(50, lane_rect_->width() > 0 ? lane_rect_->width() : this->width());
  const TimeToPixel map{r.lower, r.upper, 0, static_cast<double>(width)};
  const int n = laneCount();
  for (int k = 0; k < n; ++k) {
    Lane& lane = lanes_[static_cast<size_t>(k)];
    const double base = n - 1 - k, top = base + 0.8;
    QVector<double> keys{r.lower - 1}, values{base};
    if (lane.passes || (lane.named && lane.intervals.size() <= kMaxSeparateSlices)) {
      // Passes (and a stack's layers, a rank's phases) are few and follow each other closely:
      // drawn one by one, each ending 2 px early (never more than 2 % of it), so consecutive ones
      // read as separate bars.
      for (const Interval& iv : lane.intervals) {
        if (iv.end < r.lower || iv.start > r.upper) continue;
        const double px = map.nsPerPixel();
        const double trim = std::min(2 * px, 0.02 * (iv.end - iv.start));
        const double end = iv.end - iv.start > 4 * px ? iv.end - trim : std::max(iv.end, iv.start + px);
        keys << iv.start << end;
        values << top << base;
      }
      lane.graph->setData(keys, values, true);
      continue;
    }
    for (const Interval& iv : mergeForPixels(lane.intervals, map, 1.0)) {
      keys << iv.start << std::max(iv.end, iv.start + map.nsPerPixel());  // at least one pixel wide
      values << top << base;
    }
    lane.graph->setData(keys, values, true);
  }
  labelSlices(map);
  labelBands(map);
  drawCurve(memory_graph_, curve_, r, width);
  for (const RankCurve& rank : rank_curves_)
    if (rank.graph != memory_graph_) drawCurve(rank.graph, rank.curve, r, width);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::drawCurve(QCPGraph* graph, const std::vector<MemoryPoint>& curve, const QCPRange& r, int width) {
  // The curve of the visible range (plus the level carried in), downsampled keeping extremes.
  auto first = std::lower_bound(curve.begin(), curve.end(), r.lower,
                                [](const MemoryPoint& p, double t) { return static_cast<double>(p.t_ns) < t; });
  if (first != curve.begin()) --first;
  auto last = std::upper_bound(first, curve.end(), r.upper,
                               [](double t, const MemoryPoint& p) { return t < static_cast<double>(p.t_ns); });
  if (last != curve.end()) ++last;
  const std::vector<MemoryPoint> visible(first, last);
  QVector<double> keys, values;
  for (const MemoryPoint& p : downsampleCurve(visible, static_cast<size_t>(width))) {
    keys << static_cast<double>(p.t_ns);
    values << static_cast<double>(p.bytes);
  }
  graph->setData(keys, values, true);
}

void TimelineView::labelSlices(const TimeToPixel& map) {
  for (QCPAbstractItem* item : slice_items_) plot_->removeItem(item);
  slice_items_.clear();
  // Names on the kernels and ops wide enough to hold a few letters (Perfetto's slices), elided to
  // their width; at most kMaxSliceLabels, the widest visible first.
  constexpr int kMaxSliceLabels = 200;
  constexpr double kMinLabelPx = 28;
  const QFont label_font(font().family(), 7);
  const QFontMetrics metrics(label_font);
  struct Candidate {
    double px;
    int lane;
    size_t at;
  };
  std::vector<Candidate> candidates;
  const int n = laneCount();
  for (int k = 0; k < n; ++k) {
    const Lane& lane = lanes_[static_cast<size_t>(k)];
    if (!lane.ops && !lane.named) continue;
    for (size_t i = 0; i < lane.intervals.size(); ++i) {
      const Interval& iv = lane.intervals[i];
      if (iv.end < map.t0 || iv.start > map.t1) continue;
      const double px = (std::min(iv.end, map.t1) - std::max(iv.start, map.t0)) / map.nsPerPixel();
      if (px >= kMinLabelPx) candidates.push_back({px, k, i});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.px > b.px; });
  if (candidates.size() > kMaxSliceLabels) candidates.resize(kMaxSliceLabels);
  QCPAxis* x = lane_rect_->axis(QCPAxis::atBottom);
  QCPAxis* y = lane_rect_->axis(QCPAxis::atLeft);
  for (const Candidate& c : candidates) {
    const Lane& lane = lanes_[static_cast<size_t>(c.lane)];
    const Interval& iv = lane.intervals[c.at];
    std::string name = events_[lane.event_index[c.at]].name;
    if (name.rfind("aten::", 0) == 0) name = name.substr(6);
    const QString whole = QString::fromStdString(name);
    const QString text = metrics.elidedText(whole, Qt::ElideRight, static_cast<int>(c.px) - 6);
    if (text.size() < 3 && text != whole) continue;  // "L1" whole, not "b…"
    auto* label = new QCPItemText(plot_);
    label->setClipAxisRect(lane_rect_);
    label->position->setAxes(x, y);
    label->position->setCoords(std::max(iv.start, map.t0), n - 1 - c.lane + 0.4);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->setPadding(QMargins(3, 0, 0, 0));
    label->setText(text);
    label->setFont(label_font);
    label->setColor(QColor(0x20, 0x20, 0x20));
    slice_items_.push_back(label);
  }
}

QStringList TimelineView::sliceLabels() const {
  QStringList out;
  for (QCPAbstractItem* item : slice_items_)
    if (auto* text = qobject_cast<QCPItemText*>(item)) out << text->text();
  return out;
}

QStringList TimelineView::bandLabels() const {
  QStringList out;
  for (QCPAbstractItem* item : band_label_items_)
    if (auto* text = qobject_cast<QCPItemText*>(item)) out << text->text();
  return out;
}

QString TimelineView::hoverText(QMouseEvent* e) const {
  const QPointF pos = e->position();
  if (memory_rect_->rect().contains(pos.toPoint())) {
    const double t = memory_rect_->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
    const double bytes = memory_rect_->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
    for (const BufferBand& b : bands_) {
      if (t < static_cast<double>(b.start_ns - t0_) || t > static_cast<double>(b.end_ns - t0_)) continue;
      const double base = static_cast<double>(baseAt(b, static_cast<int64_t>(t) + t0_));
      if (bytes >= base && bytes <= base + static_cast<double>(b.bytes))
        return tr("<b>%1</b><br>%2, allocated at %3, %4")
            .arg(QString::fromStdString(b.name).toHtmlEscaped(), QString::fromStdString(formatBytes(b.bytes)),
                 QString::fromStdString(formatTimeTick(static_cast<double>(b.start_ns - t0_))),
                 b.freed ? tr("freed at %1").arg(QString::fromStdString(formatTimeTick(static_cast<double>(b.end_ns - t0_))))
                         : tr("never freed"));
    }
    auto level = [t](const std::vector<MemoryPoint>& curve) -> int64_t {
      auto it = std::upper_bound(curve.begin(), curve.end(), t,
                                 [](double v, const MemoryPoint& p) { return v < static_cast<double>(p.t_ns); });
      return it == curve.begin() ? -1 : std::prev(it)->bytes;
    };
    if (!rank_curves_.empty()) {
      // Every rank's level at t.
      QString text = QString::fromStdString(formatTimeTick(t)) + ":";
      for (const RankCurve& r : rank_curves_)
        text += tr("<br>rank %1: %2 live").arg(r.device).arg(QString::fromStdString(formatBytes(std::max<int64_t>(0, level(r.curve)))));
      return text;
    }
    const int64_t live = level(curve_);
    if (live < 0) return {};
    return tr("%1: %2 live").arg(QString::fromStdString(formatTimeTick(t)), QString::fromStdString(formatBytes(live)));
  }
  if (!lane_rect_->rect().contains(pos.toPoint())) return {};
  const double t = lane_rect_->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
  const double y = lane_rect_->axis(QCPAxis::atLeft)->pixelToCoord(pos.y());
  const int n = laneCount();
  const int k = n - 1 - static_cast<int>(std::floor(y));
  if (k < 0 || k >= n) return {};
  const Lane& lane = lanes_[static_cast<size_t>(k)];
  const double slack = 3 * TimeToPixel{lane_rect_->axis(QCPAxis::atBottom)->range().lower,
                                       lane_rect_->axis(QCPAxis::atBottom)->range().upper, 0,
                                       static_cast<double>(std::max(1, lane_rect_->width()))}.nsPerPixel();
  auto it = std::upper_bound(lane.intervals.begin(), lane.intervals.end(), t + slack,
                             [](double v, const Interval& iv) { return v < iv.start; });
  // Scan back over the few intervals that start before t (kernels on one stream rarely overlap).
  for (int steps = 0; it != lane.intervals.begin() && steps < 64; ++steps) {
    --it;
    if (it->end + slack < t) continue;
    const size_t at = lane.event_index[static_cast<size_t>(it - lane.intervals.begin())];
    if (lane.passes) {
      const PassRange& pass = passes_[at];
      const QString what = pass.kind == PassRange::Kind::warmup ? tr("a warm-up pass, not timed")
                           : pass.kind == PassRange::Kind::rep  ? tr("a timed repetition")
                                                                : tr("the profiled call: its allocations are the memory curve");
      return tr("<b>%1</b> (%2)<br>start %3, duration %4")
          .arg(QString::fromStdString(pass.label), what, QString::fromStdString(formatTimeTick(it->start)),
               QString::fromStdString(durationText((it->end - it->start) * 1e-9)));
    }
    const TraceEvent& ev = events_[at];
    QString text = tr("<b>%1</b> (%2)<br>start %3, duration %4")
                       .arg(QString::fromStdString(ev.name).toHtmlEscaped(),
                            QString::fromUtf8(toString(ev.kind).data(), toString(ev.kind).size()),
                            QString::fromStdString(formatTimeTick(it->start)),
                            QString::fromStdString(durationText((it->end - it->start) * 1e-9)));
    if (ev.kind == EventKind::kernel && ev.kernel.grid[0] > 0)
      text += tr("<br>grid %1x%2x%3, block %4x%5x%6<br>registers %7, shared memory %8 + %9 B")
                  .arg(ev.kernel.grid[0]).arg(ev.kernel.grid[1]).arg(ev.kernel.grid[2])
                  .arg(ev.kernel.block[0]).arg(ev.kernel.block[1]).arg(ev.kernel.block[2])
                  .arg(ev.kernel.registers).arg(ev.kernel.static_smem).arg(ev.kernel.dynamic_smem);
    if (ev.bytes > 0) text += tr("<br>%1").arg(QString::fromStdString(formatBytes(ev.bytes)));
    return text;
  }
  return {};
}

}  // namespace attnscope::ui
