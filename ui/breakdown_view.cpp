#include "ui/breakdown_view.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/byte_axis_ticker.h"
#include "ui/chart_context.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"
#include "ui/run_chooser.h"

namespace attnscope::ui {

BreakdownView::BreakdownView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  run_ = new QComboBox(this);
  run_->setObjectName("breakdownRun");
  // At most ~48 characters wide (the full description in its tooltip and the popup): a long run
  // description must not widen the window.
  run_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  run_->setMinimumContentsLength(48);
  bar->addWidget(new QLabel(tr("Run:"), this));
  bar->addWidget(run_);
  bar->addStretch();
  layout->addLayout(bar);
  // Memory above, phases below; the splitter lets either take the height.
  auto* split = new QSplitter(Qt::Vertical, this);
  auto* memory = new QWidget(split);
  auto* row = new QHBoxLayout(memory);
  row->setContentsMargins(0, 0, 0, 0);
  plot_ = makePlot(memory);
  plot_->setObjectName("breakdownPlot");
  plot_->setInteractions({});
  initPlotLayout(plot_, tr("Memory breakdown"));
  plot_->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create(false));
  plot_->yAxis->setLabel(tr("bytes"));
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  auto ticks = QSharedPointer<QCPAxisTickerText>::create();
  ticks->addTick(1, tr("predicted\n(plan)"));
  ticks->addTick(2, tr("measured\n(allocator)"));
  plot_->xAxis->setTicker(ticks);
  plot_->xAxis->setRange(0.3, 2.7);
  row->addWidget(plot_, 3);
  buffers_ = new QLabel(memory);
  buffers_->setObjectName("breakdownBuffers");
  buffers_->setTextFormat(Qt::RichText);
  buffers_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  // Not wrapped: a layer's step names (inputs..qkv_proj_backward) are wide, and a wrapped label
  // would cut the table's last column off; the scroll area scrolls sideways instead.
  buffers_->setWordWrap(false);
  // Scrolled: a training run's plan lists dozens of buffers, more than the half height holds.
  auto* buffers_area = new QScrollArea(memory);
  buffers_area->setWidgetResizable(true);
  buffers_area->setFrameShape(QFrame::NoFrame);
  buffers_area->setWidget(buffers_);
  row->addWidget(buffers_area, 2);
  split->addWidget(memory);

  auto* phases = new QWidget(split);
  auto* phase_row = new QHBoxLayout(phases);
  phase_row->setContentsMargins(0, 0, 0, 0);
  phase_plot_ = makePlot(phases);
  phase_plot_->setObjectName("breakdownPhasePlot");
  phase_plot_->setInteractions({});
  initPlotLayout(phase_plot_, tr("Time share per phase"));
  phase_plot_->yAxis->setLabel(tr("time share (%)"));
  phase_plot_->yAxis->setRange(0, 100);
  phase_plot_->legend->setVisible(true);
  phase_plot_->legend->setFont(QFont(font().family(), 8));
  phase_plot_->xAxis->setTickLabelFont(QFont(font().family(), 7));
  auto* plot_box = new QVBoxLayout;
  auto* scale_row = new QHBoxLayout;
  scale_box_ = new QComboBox(phases);
  scale_box_->setObjectName("breakdownPhaseScale");
  scale_box_->addItem(tr("share of the run (%)"), static_cast<int>(PhaseScale::share));
  scale_box_->addItem(tr("time per pass"), static_cast<int>(PhaseScale::time));
  scale_box_->setToolTip(tr("What each bar stacks: the top-level phases' shares of the run, or their time per "
                            "traced pass (a phase's mean), to compare points of different cost"));
  scale_row->addWidget(new QLabel(tr("Bars:"), phases));
  scale_row->addWidget(scale_box_);
  scale_row->addStretch();
  plot_box->addLayout(scale_row);
  plot_box->addWidget(phase_plot_, 1);
  phase_row->addLayout(plot_box, 1);
  auto* table_box = new QVBoxLayout;
  phase_title_ = new QLabel(phases);
  phase_title_->setObjectName("breakdownPhaseTitle");
  phase_title_->setWordWrap(true);
  table_box->addWidget(phase_title_);
  phase_table_ = new QTableWidget(0, static_cast<int>(phaseHeaders().size()), phases);
  phase_table_->setObjectName("breakdownPhases");
  phase_table_->setHorizontalHeaderLabels(phaseHeaders());
  phase_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  phase_table_->verticalHeader()->setVisible(false);
  phase_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_box->addWidget(phase_table_, 1);
  phase_row->addLayout(table_box, 1);
  split->addWidget(phases);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);
  connect(&phases_, &PhaseSummaries::ready, this, [this] { rebuildPhases(); });
  // A click on a point's bar picks that run here and in the other per-run views.
  connect(phase_plot_, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable*, int index, QMouseEvent*) {
    if (index < 0 || static_cast<size_t>(index) >= bar_runs_.size()) return;
    selectRunIn(run_, bar_runs_[static_cast<size_t>(index)]);
    Q_EMIT runPicked(bar_runs_[static_cast<size_t>(index)]);
  });
  connect(scale_box_, &QComboBox::currentIndexChanged, this,
          [this] { setPhaseScale(static_cast<PhaseScale>(scale_box_->currentData().toInt())); });
  // The hover says what a segment is, in time and share (the axis shows only one of them).
  phase_plot_->setMouseTracking(true);
  connect(phase_plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
    auto* bars = qobject_cast<QCPBars*>(phase_plot_->plottableAt(event->position(), true));
    if (!bars) {
      QToolTip::hideText();
      return;
    }
    const double key = phase_plot_->xAxis->pixelToCoord(event->position().x());
    const long index = std::lround(key);
    if (index < 0 || static_cast<size_t>(index) >= bar_runs_.size()) return;
    QToolTip::showText(event->globalPosition().toPoint(),
                       phaseTip(static_cast<size_t>(index), bars->property("phaseKey").toString()), phase_plot_);
  });
  // Labels thinned to the bars' width before every replot (a resize changes it).
  connect(phase_plot_, &QCustomPlot::beforeReplot, this, [this] { updateLabelStride(); });
  connect(run_, &QComboBox::currentIndexChanged, this, [this] {
    requestPhases();
    rebuild();
  });
  connect(run_, &QComboBox::activated, this, [this] { Q_EMIT runPicked(run_->currentData().toLongLong()); });
  applyTheme();
}

void BreakdownView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  fillRunChooser(run_, sweeps_, false);
  requestPhases();
  rebuild();
}

void BreakdownView::selectRun(qint64 run_id) { selectRunIn(run_, run_id); }

void BreakdownView::setEventSource(PhaseSummaries::EventLoader source) {
  phases_.setEventSource(std::move(source));
  requestPhases();
  rebuildPhases();
}

const RunResult* BreakdownView::current() const {
  const qlonglong id = run_->currentData().toLongLong();
  for (const auto& s : sweeps_)
    for (const RunResult& r : s->runs)
      if (r.id == id) return &r;
  return nullptr;
}

void BreakdownView::rebuild() {
  plot_->clearPlottables();
  const RunResult* r = current();
  setPlotTitle(plot_, r ? tr("Memory breakdown of R%1").arg(r->id) : tr("Memory breakdown"));
  setPlotContext(plot_, r ? QString::fromStdString(runInWords(*r)).replace(", ", " \u00b7 ")
                          : tr("no run yet: press Run (Ctrl+R), or pick a sweep in the Runs dock"));
  rebuildPhases();
  if (!r) {
    buffers_->clear();
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const MemoryPlan& plan = r->plan;
  const int peak_step = plan.stepCount() > 0 ? plan.peakStep() : -1;
  const QColor base = backendColor(r->backend);
  QCPBars* below = nullptr;
  QString table = tr("<b>%1</b><br>%2<br><br><table cellspacing=4><tr><th align=left>buffer</th><th>role</th>"
                     "<th align=right>bytes</th><th>steps</th></tr>")
                      .arg(QString::fromStdString(r->backend), QString::fromStdString(summary(r->spec)));
  // The largest live buffers get a segment and a legend entry each; the rest (a training layer
  // has thirty small ones) share one, so the legend leaves the bars their width.
  std::vector<size_t> live_index;
  for (size_t k = 0; k < plan.buffers.size(); ++k)
    if (plan.buffers[k].first_step <= peak_step && peak_step <= plan.buffers[k].last_step) live_index.push_back(k);
  std::stable_sort(live_index.begin(), live_index.end(),
                   [&](size_t a, size_t b) { return plan.buffers[a].bytes > plan.buffers[b].bytes; });
  std::vector<std::string> plan_names;
  for (const PlannedBuffer& b : plan.buffers) plan_names.push_back(b.name);
  BufferPalette colors(plan_names);  // as the Timeline colours this run
  std::vector<bool> own_segment(plan.buffers.size(), false);
  for (size_t k = 0; k < live_index.size() && k < kMaxSegments; ++k) own_segment[live_index[k]] = true;
  int rest_count = 0;
  int64_t rest_bytes = 0;
  for (size_t index = 0; index < plan.buffers.size(); ++index) {
    const PlannedBuffer& b = plan.buffers[index];
    const bool live = b.first_step <= peak_step && peak_step <= b.last_step;
    const QString steps = QString::fromStdString(plan.lifetime(b));
    table += QStringLiteral("<tr><td nowrap>%1%2</td><td>%3</td><td align=right nowrap>%4</td><td nowrap>%5</td></tr>")
                 .arg(QString::fromStdString(b.name), live ? QStringLiteral(" *") : QString(),
                      QString::fromUtf8(toString(b.role).data(), toString(b.role).size()),
                      QString::fromStdString(formatBytes(b.bytes)), steps);
    if (!live) continue;
    if (!own_segment[index]) {
      ++rest_count;
      rest_bytes += b.bytes;
      continue;
    }
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setName(QString::fromStdString(b.name) + " " + QString::fromStdString(formatBytes(b.bytes)));
    const QColor c = colors(b.name);  // as in the Timeline
    bars->setBrush(c);
    bars->setPen(QPen(c.darker(150)));
    bars->setWidth(0.6);
    bars->addData(1, static_cast<double>(b.bytes));
    if (below) bars->moveAbove(below);
    below = bars;
  }
  if (rest_count > 0) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setName(tr("%1 smaller buffers %2").arg(rest_count).arg(QString::fromStdString(formatBytes(rest_bytes))));
    bars->setBrush(QColor(0xc8, 0xc8, 0xc8));
    bars->setPen(QPen(QColor(0x90, 0x90, 0x90)));
    bars->setWidth(0.6);
    bars->addData(1, static_cast<double>(rest_bytes));
    if (below) bars->moveAbove(below);
  }
  table += "</table>";
  table += tr("<br>* live at the peak step '%1'<br>predicted peak %2, measured peak %3, gap %4")
               .arg(peak_step >= 0 ? QString::fromStdString(plan.stepName(peak_step)) : QStringLiteral("-"),
                    r->memory.predicted_peak >= 0 ? QString::fromStdString(formatBytes(r->memory.predicted_peak))
                                                  : tr("unknown (%1)").arg(QString::fromStdString(plan.unknown_reason)),
                    r->memory.measured_peak >= 0 ? QString::fromStdString(formatBytes(r->memory.measured_peak)) : QStringLiteral("-"),
                    r->memory.measured_peak >= 0 && r->memory.predicted_peak >= 0
                        ? QString::fromStdString(formatBytes(r->memory.measured_peak - r->memory.predicted_peak))
                        : QStringLiteral("-"));
  buffers_->setText(table);
  // The measured peak; a tensor-parallel run's per rank (its facts), the plan being one rank's.
  auto ticks = QSharedPointer<QCPAxisTickerText>::create();
  ticks->addTick(1, tr("predicted\n(plan)"));
  std::vector<std::pair<QString, int64_t>> measured_bars;
  for (const RankStats& rank : rankStats(*r))
    if (rank.peak_bytes >= 0) measured_bars.emplace_back(tr("rank %1\n(allocator)").arg(rank.rank), rank.peak_bytes);
  if (measured_bars.empty() && r->memory.measured_peak >= 0)
    measured_bars.emplace_back(tr("measured\n(allocator)"), r->memory.measured_peak);
  for (size_t i = 0; i < measured_bars.size(); ++i) {
    const auto& [name, bytes] = measured_bars[i];
    auto* measured = new QCPBars(plot_->xAxis, plot_->yAxis);
    measured->setName(tr("%1 peak %2").arg(measured_bars.size() > 1 ? QString(name).section('\n', 0, 0) : tr("measured"),
                                           QString::fromStdString(formatBytes(bytes))));
    measured->setBrush(base);
    measured->setPen(QPen(base.darker(150)));
    measured->setWidth(0.6);
    measured->addData(2.0 + static_cast<double>(i), static_cast<double>(bytes));
    ticks->addTick(2.0 + static_cast<double>(i), name);
  }
  if (measured_bars.empty()) ticks->addTick(2, tr("measured\n(allocator)"));  // none: the run did not finish
  plot_->xAxis->setTicker(ticks);
  plot_->xAxis->setRange(0.3, std::max<double>(2.0, 1.0 + static_cast<double>(measured_bars.size())) + 0.7);
  plot_->yAxis->setRange(0, std::max<double>({1.0, double(r->memory.measured_peak), double(r->memory.predicted_peak)}) * 1.1);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::ui
