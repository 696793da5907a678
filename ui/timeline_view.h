#pragma once
// One run over time: kernels, copies and phases by stream in lanes at the top, the live-memory
// curve (core's MemoryTimeline) under it, x-axes in sync for zoom and pan. A tensor-parallel run
// (its events on several devices, one per rank) gets a curve per rank and each rank's phases in
// lanes of their own, communication ("comm") in a colour of its own. What is drawn is
// recomputed for the visible range at pixel resolution: kernel lanes merge to at most one
// rectangle per pixel and the curve goes through core's max-keeping downsampler, so a million
// events stay responsive and the drawn curve still shows the true peak.

#include <cstdint>
#include <functional>
#include <vector>

#include "core/trace/memory_timeline.h"
#include "core/trace/trace_event.h"
#include "ui/buffer_bands.h"
#include "ui/plot_style.h"
#include "ui/timeline_lanes.h"
#include "ui/chart_math.h"
#include "ui/chart_view.h"
#include "ui/job_tracker.h"

class QCheckBox;
class QComboBox;
class QCPAbstractItem;
class QCPItemStraightLine;
class QLabel;
class QRubberBand;
class QTableWidget;
class QCPAxisRect;
class QCPGraph;
class QCPLegend;
class QCPRange;

namespace attnscope::ui {

class TimelineView : public ChartView {
  Q_OBJECT
 public:
  using EventLoader = std::function<std::vector<TraceEvent>(int64_t run_id)>;

  // A stack's layers and a rank's phases are drawn apart (each 2 px short) up to this many slices
  // a lane; more merge per pixel.
  static constexpr size_t kMaxSeparateSlices = 4096;

  explicit TimelineView(QWidget* parent = nullptr);
  QString title() const override { return tr("Timeline"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {plot_}; }
  void selectRun(qint64 run_id) override;

  // Where events come from. With background loading on, it is called on a pool thread and must
  // not touch GUI-thread state (the window's loader opens its own store connection).
  void setEventSource(EventLoader source) { source_ = std::move(source); }
  // Off (the default: the report and headless rendering need the run drawn at once) loads on the
  // calling thread. On (the window): the trace and its MemoryTimeline are built on a pool thread
  // and a result for a run that is no longer picked is dropped, as hotspot's job tracker does.
  void setBackgroundLoading(bool on) { background_ = on; }
  // A background load is on its way (the view shows "loading").
  bool loading() const { return shown_job_ != loads_.current(); }
  // Shows these events directly (tests, synthetic traces).
  void setEvents(std::vector<TraceEvent> events);
  // The one memory source the view draws: the allocator's, or CUPTI's device memory when a trace
  // has no allocator events (summing both would count each cudaMalloc twice).
  static MemoryFilter memoryFilterFor(const std::vector<TraceEvent>& events);
  static MemoryTimeline memoryTimelineOf(const std::vector<TraceEvent>& events);
  // The names drawn on the visible slices (labelSlices), for tests.
  QStringList sliceLabels() const;
  // The names written on the bands (elided to their stretch), for tests.
  QStringList bandLabels() const;
  // The per-buffer bands drawn under the curve (empty when "Buffers" is off).
  const std::vector<BufferBand>& bufferBands() const { return bands_; }
  // The colour the run's buffer `name` has in the bands and the snapshot.
  QColor bufferColorOf(const std::string& name) { return colors_(name); }

  QCustomPlot* plot() const { return plot_; }
  QComboBox* runBox() const { return run_; }
  // The curve of the run's memory; a tensor-parallel run's is its largest rank's (the one whose
  // bands and snapshot are drawn), beside a curve per rank.
  QCPGraph* memoryGraph() const { return memory_graph_; }
  // The memory curves drawn: one, or a tensor-parallel run's one per rank (by TraceEvent::device),
  // rank 0 first, each named "rank N" in the memory rect's legend.
  QList<QCPGraph*> memoryCurves() const;
  QCPLegend* memoryLegend() const { return memory_legend_; }
  // The rank whose bands and snapshot are drawn (a tensor-parallel run's largest peak), -1 for a
  // run on one device.
  int bandedRank() const { return rank_curves_.empty() ? -1 : static_cast<int>(banded_rank_); }
  const MemoryTimeline& memoryTimeline() const { return timeline_; }
  int laneCount() const { return static_cast<int>(lanes_.size()); }
  QCPGraph* laneGraph(int lane) const;
  QCPAxisRect* laneRect() const { return lane_rect_; }
  QCPAxisRect* memoryRect() const { return memory_rect_; }
  void setTimeRange(double lo_ns, double hi_ns);
  // Zooms the time axis by factor (< 1 zooms in) keeping anchor_ns where it is on screen, kept
  // within the run (a little margin either side) and never below 10 ns across: the wheel (at
  // the cursor), W/S (at the cursor, or the middle) and a rubber band go through here.
  void zoomAt(double anchor_ns, double factor);

  // The memory snapshot under the plot: what is live at t (ns since the run's first event), the
  // largest first, with the cursor line drawn there. A click on the memory curve picks t; "Go to
  // peak" (and every new trace) the peak, where the table lists the peak's top contributors.
  void showSnapshot(double t_ns);
  double snapshotTime() const { return snapshot_t_; }
  QTableWidget* snapshotTable() const { return snapshot_; }
  // Live bytes at t by the curve: the highest level at t when blocks come and go at that instant
  // (allocations first, the tie rule), else the level carried in.
  int64_t liveBytesAt(double t_ns) const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct Lane {
    QString name;
    std::vector<Interval> intervals;  // sorted by start, ns relative to t0_
    std::vector<size_t> event_index;  // parallel: index into events_ (into passes_ for the pass lane)
    bool passes = false;              // the lane of inferred passes (warm-up / rep / profiled call)
    bool ops = false;                 // kernels, copies or ops of one stream (named on their slices)
    bool layers = false;              // a stack's layers L1..LN
    bool named = false;               // phases of several names (layers, a rank's): named on their slices
    bool comm = false;                // communication phases (a colour of their own)
    QCPGraph* graph = nullptr;
    QCPGraph* base = nullptr;
  };
  void loadRun();
  // What a load computes off the GUI thread: the curve and the bands.
  struct RankTimeline {
    uint32_t device = 0;
    MemoryTimeline timeline;
  };
  struct LoadedTrace {
    std::vector<TraceEvent> events;
    MemoryTimeline timeline;          // of the rank with the largest peak when there are ranks
    std::vector<BufferBand> bands;    // of that rank
    std::vector<RankTimeline> ranks;  // a tensor-parallel run's, by device; empty otherwise
  };
  static LoadedTrace analyse(std::vector<TraceEvent> events);
  void showTrace(LoadedTrace loaded);
  void showRankCurves(std::vector<RankTimeline> ranks);
  void drawBands();
  void rebuildLanes();
  void refreshVisible();
  // graph: the visible range of curve at the lanes' pixel resolution.
  static void drawCurve(QCPGraph* graph, const std::vector<MemoryPoint>& curve, const QCPRange& r, int width);
  // Names the visible slices wide enough to hold them (slice_items_).
  void labelSlices(const TimeToPixel& map);
  QString hoverText(QMouseEvent* e) const;

  QComboBox* run_;
  QLabel* info_;
  QCustomPlot* plot_;
  QCPAxisRect *lane_rect_, *memory_rect_;
  QCPGraph* memory_graph_ = nullptr;
  EventLoader source_;
  std::vector<TraceEvent> events_;
  std::vector<Lane> lanes_;
  MemoryTimeline timeline_;
  std::vector<MemoryPoint> curve_;  // relative to t0_
  struct RankCurve {
    uint32_t device = 0;
    std::vector<MemoryPoint> curve;  // relative to t0_
    QCPGraph* graph = nullptr;       // memory_graph_ for banded_rank_
  };
  std::vector<RankCurve> rank_curves_;  // a tensor-parallel run's, by device; empty otherwise
  uint32_t banded_rank_ = 0;
  QCPLegend* memory_legend_ = nullptr;  // "rank 0", "rank 1" ... in the memory rect
  int64_t t0_ = 0;
  double t_end_ = 1;
  bool syncing_ = false;
  int laid_out_width_ = -1;  // the lanes' width the drawn data was last computed for
  bool background_ = false;
  QCheckBox* bands_box_ = nullptr;
  std::vector<PassRange> passes_;      // inferred from the phases (timeline_lanes.h)
  std::vector<QCPAbstractItem*> pass_items_;
  int warmup_ = 0;                     // warm-up passes of the run shown (its sweep's setting)
  int reps_ = -1;                      // its timed repetitions (-1: not known)
  std::vector<QCPAbstractItem*> slice_items_;  // names on the visible slices
  std::vector<BufferBand> all_bands_;  // computed with the trace
  std::vector<BufferBand> bands_;      // drawn: all_bands_ while "Buffers" is on
  BufferPalette colors_;               // the run's plan, then the bands, as Breakdown colours them
  std::vector<QCPAbstractItem*> band_items_;
  std::vector<QCPAbstractItem*> band_label_items_;  // the bands' names on the visible range
  // Names the bands on their widest visible stretch (band_label_items_).
  void labelBands(const TimeToPixel& map);
  QTableWidget* snapshot_ = nullptr;        // what is live at snapshot_t_
  QLabel* snapshot_title_ = nullptr;
  double snapshot_t_ = 0;
  QCPItemStraightLine* cursor_memory_ = nullptr;  // the snapshot's time, on both rects
  QCPItemStraightLine* cursor_lanes_ = nullptr;
  QRubberBand* rubber_ = nullptr;  // a right- or Shift-drag: the range to zoom to
  QPoint rubber_from_;
  QPoint press_at_;                // where a left press began (a click, not a drag, picks t)
  JobTracker loads_;        // the latest load counts; older results are dropped
  quint64 shown_job_ = 0;  // the load whose result is shown
};

}  // namespace attnscope::ui
