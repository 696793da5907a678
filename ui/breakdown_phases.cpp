// The phase half of the Breakdown view (breakdown_view.h): the picked run's phase table and a
// stacked bar of time shares per point. Every number comes from core's summarizePhases through
// PhaseSummaries; this file only lays them out.

#include <algorithm>
#include <cmath>
#include <set>

#include <QComboBox>
#include <QFontMetrics>
#include <QLabel>
#include <QTableWidget>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/breakdown_view.h"
#include "ui/chart_context.h"
#include "ui/plot_layout.h"
#include "ui/run_chooser.h"

namespace attnscope::ui {

namespace {

// A qualitative palette (Tableau 10): neighbouring segments stay apart, and a phase keeps its
// colour in every bar because colours follow the order of first appearance.
QColor phaseColor(size_t index) {
  static const QColor colors[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                  QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48),
                                  QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f),
                                  QColor(0xba, 0xb0, 0xac)};
  const QColor c = colors[index % std::size(colors)];
  return index < std::size(colors) ? c : c.darker(130);  // a second round in darker shades
}

// The finished runs that get a bar, in sweep order.
std::vector<const RunResult*> barRuns(const SweepSnapshots& sweeps, size_t limit, size_t& total) {
  std::vector<const RunResult*> out;
  total = 0;
  for (const auto& s : sweeps) {
    if (!s) continue;
    for (const RunResult& r : s->runs) {
      if (r.status != RunStatus::ok) continue;
      ++total;
      if (out.size() < limit) out.push_back(&r);
    }
  }
  return out;
}

// "cpu.flash\nH8 L512\ntrain ckpt": backend, heads and seq, and pass / checkpoint / kind when the
// bars differ in them, a line each. Many bars are narrow: then one rotated line, the backend
// without its "cpu." ("reference H8 L512 ckpt").
QString pointLabel(const RunResult& r, bool kind, bool pass, bool checkpoint, bool compact) {
  QString backend = QString::fromStdString(r.backend);
  if (compact && backend.startsWith(QLatin1String("cpu."))) backend = backend.mid(4);
  QStringList parts{backend, QStringLiteral("H%1 L%2").arg(r.spec.heads).arg(r.spec.seq_q)};
  QStringList extra;
  if (kind) extra << QString::fromUtf8(toString(r.spec.kind).data());
  if (pass) extra << QString::fromUtf8(toString(r.spec.pass).data());
  if (checkpoint) extra << (r.spec.checkpoint == Checkpoint::none ? QObject::tr("no ckpt") : QObject::tr("ckpt"));
  if (!extra.isEmpty()) parts << extra.join(' ');
  return parts.join(compact ? QChar(' ') : QChar('\n'));
}

struct TimeUnit {
  double ns;     // nanoseconds in one unit
  QString name;  // "ms"
};

// The unit a time axis up to `ns` reads best in (1.5 ms rather than 1500 µs).
TimeUnit timeUnitFor(double ns) {
  if (ns >= 2e9) return {1e9, QStringLiteral("s")};
  if (ns >= 2e6) return {1e6, QStringLiteral("ms")};
  if (ns >= 2e3) return {1e3, QStringLiteral("\u00b5s")};
  return {1, QStringLiteral("ns")};
}

}  // namespace

void BreakdownView::setPhaseScale(PhaseScale scale) {
  if (scale == scale_) return;
  scale_ = scale;
  const int index = scale_box_->findData(static_cast<int>(scale));
  if (index >= 0 && scale_box_->currentIndex() != index) scale_box_->setCurrentIndex(index);
  rebuildPhases();
}

void BreakdownView::updateLabelStride() {
  auto ticks = phase_plot_->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
  if (!ticks || bar_labels_.empty()) return;
  // The room a label needs across the axis: its line height when rotated, its widest line when not.
  const QFontMetrics metrics(phase_plot_->xAxis->tickLabelFont());
  double need = 0;
  if (phase_plot_->xAxis->tickLabelRotation() != 0) {
    need = metrics.height();
  } else {
    for (const QString& label : bar_labels_)
      for (const QString& line : label.split('\n')) need = std::max<double>(need, metrics.horizontalAdvance(line));
    need += metrics.averageCharWidth();  // a gap between neighbours
  }
  const double width = phase_plot_->axisRect()->width();
  const double per_bar = width > 0 ? width / (phase_plot_->xAxis->range().size()) : 0;
  const int stride = per_bar > 0 ? std::max(1, static_cast<int>(std::ceil(need / per_bar))) : 1;
  if (stride == label_stride_) return;
  label_stride_ = stride;
  ticks->clear();
  for (size_t i = 0; i < bar_labels_.size(); ++i)
    ticks->addTick(static_cast<double>(i), i % static_cast<size_t>(stride) == 0 ? bar_labels_[i] : QString());
  // This replot laid out with the old labels: one more with the new ones.
  phase_plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString BreakdownView::phaseTip(size_t bar, const QString& phase) const {
  if (bar >= bar_titles_.size() || bar >= bar_phases_.size()) return {};
  QString tip = bar_titles_[bar];
  for (const PhaseStats& p : bar_phases_[bar]) {
    if (p.depth != 0 || QString::fromStdString(p.name) != phase) continue;
    tip += tr("\n%1: %2 per pass (mean of %3), %4 in all, %5 % of the run; peak %6 inside it")
               .arg(phase)
               .arg(QString::fromStdString(formatDuration(static_cast<double>(p.meanNs()) * 1e-9)))
               .arg(p.count)
               .arg(QString::fromStdString(formatDuration(static_cast<double>(p.total_ns) * 1e-9)))
               .arg(100.0 * p.share, 0, 'f', 1)
               .arg(QString::fromStdString(formatBytes(p.peak_bytes)));
  }
  return tip;
}

void BreakdownView::requestPhases() {
  size_t total = 0;
  std::vector<int64_t> ids;
  for (const RunResult* r : barRuns(sweeps_, kMaxPhaseBars, total)) ids.push_back(r->id);
  if (const RunResult* r = current(); r && r->status == RunStatus::ok) ids.push_back(r->id);
  phases_.request(ids);
}

void BreakdownView::rebuildPhases() {
  // The table: the picked run's rows, as `attnscope show R --phases` prints them.
  const RunResult* r = current();
  const std::vector<PhaseStats>* rows = r ? phases_.find(r->id) : nullptr;
  phase_table_->setRowCount(0);
  if (!r) {
    phase_title_->setText(tr("Phases: no run picked"));
  } else if (r->status != RunStatus::ok) {
    phase_title_->setText(tr("Phases of R%1: none, the run did not finish ok").arg(r->id));
  } else if (!rows) {
    const QString error = phases_.error(r->id);
    phase_title_->setText(error.isEmpty() ? tr("Phases of R%1: loading the trace...").arg(r->id)
                                          : tr("Phases of R%1: cannot read the trace: %2").arg(r->id).arg(error));
  } else if (rows->empty()) {
    phase_title_->setText(tr("Phases of R%1: none recorded").arg(r->id));
  } else {
    phase_title_->setText(tr("<b>Phases of R%1</b> (%2): time over the traced passes, share of the top-level "
                             "phases, peak memory live inside the phase")
                              .arg(r->id)
                              .arg(QString::fromStdString(r->backend)));
    phase_table_->setRowCount(static_cast<int>(rows->size()));
    for (int i = 0; i < static_cast<int>(rows->size()); ++i) {
      const PhaseStats& p = (*rows)[static_cast<size_t>(i)];
      const QStringList cells = phaseCells(p);
      // The raw numbers ride along (tests, copy): count, total ns, mean ns, share, peak bytes.
      const QVariant raw[] = {QString::fromStdString(p.name), qlonglong(p.count), qlonglong(p.total_ns),
                              qlonglong(p.meanNs()), p.share, qlonglong(p.peak_bytes)};
      for (int c = 0; c < cells.size(); ++c) {
        auto* item = new QTableWidgetItem(cells[c]);
        item->setData(Qt::UserRole, raw[c]);
        if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        phase_table_->setItem(i, c, item);
      }
    }
  }

  // The bars: one per finished point, its top-level phases stacked by share.
  phase_plot_->clearPlottables();
  phase_plot_->clearItems();
  size_t total = 0;
  const std::vector<const RunResult*> runs = barRuns(sweeps_, kMaxPhaseBars, total);
  std::vector<std::vector<PhaseStats>> summaries;  // empty while a run's phases are loading
  std::set<std::string> kinds, passes, checkpoints;
  for (const RunResult* run : runs) {
    const std::vector<PhaseStats>* loaded = phases_.find(run->id);
    summaries.push_back(loaded ? *loaded : std::vector<PhaseStats>{});
    kinds.insert(std::string(toString(run->spec.kind)));
    passes.insert(std::string(toString(run->spec.pass)));
    checkpoints.insert(std::string(toString(run->spec.checkpoint)));
  }
  bar_runs_.clear();
  for (const RunResult* run : runs) bar_runs_.push_back(run->id);
  bar_phases_ = summaries;
  // The same columns as `attnscope show S --phases` (core/trace/phase_summary.h).
  const PhaseMatrix matrix = phaseMatrix(summaries);
  const std::vector<std::string>& names = matrix.names;
  const bool compact = runs.size() > 8;
  bar_labels_.clear();
  bar_titles_.clear();
  for (const RunResult* run : runs) {
    const bool k = kinds.size() > 1, p = passes.size() > 1, c = checkpoints.size() > 1;
    bar_labels_.push_back(pointLabel(*run, k, p, c, compact));
    bar_titles_.push_back(tr("R%1 %2").arg(run->id).arg(pointLabel(*run, k, p, c, false).replace('\n', ' ')));
  }
  label_stride_ = 0;  // labels set by updateLabelStride, before every replot
  phase_plot_->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  phase_plot_->xAxis->setTickLabelRotation(compact ? 90 : 0);
  phase_plot_->xAxis->setRange(-0.6, std::max<double>(1.0, static_cast<double>(runs.size())) - 0.4);
  // Time per pass: each top-level phase's mean, in the unit the tallest bar reads best in.
  double tallest_ns = 0;
  for (const auto& row : matrix.cells) {
    double sum = 0;
    for (const auto& cell : row)
      if (cell) sum += static_cast<double>(cell->meanNs());
    tallest_ns = std::max(tallest_ns, sum);
  }
  const TimeUnit unit = timeUnitFor(tallest_ns);
  QCPBars* below = nullptr;
  for (size_t k = 0; k < names.size(); ++k) {
    auto* bars = new QCPBars(phase_plot_->xAxis, phase_plot_->yAxis);
    bars->setName(QString::fromStdString(names[k]));
    bars->setBrush(phaseColor(k));
    bars->setPen(QPen(phaseColor(k).darker(140), 0.5));
    bars->setWidth(0.7);
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto& cell = matrix.cells[i][k];
      const double value = !cell                            ? 0.0
                           : scale_ == PhaseScale::share ? 100.0 * cell->share
                                                         : static_cast<double>(cell->meanNs()) / unit.ns;
      bars->addData(static_cast<double>(i), value);
    }
    if (below) bars->moveAbove(below);
    below = bars;
  }
  const double top = scale_ == PhaseScale::share ? 100.0 : std::max(tallest_ns / unit.ns, 1e-9);
  setPlotTitle(phase_plot_, scale_ == PhaseScale::share ? tr("Time share per phase") : tr("Time per phase"));
  phase_plot_->yAxis->setLabel(scale_ == PhaseScale::share ? tr("time share (%)")
                                                           : tr("time per pass (%1), phase means").arg(unit.name));
  // The picked run's bar is marked above it (its table is the one beside).
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!r || runs[i]->id != r->id) continue;
    auto* mark = new QCPItemText(phase_plot_);
    mark->position->setCoords(static_cast<double>(i), top);
    mark->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    mark->setText(QStringLiteral("\u25bc"));
    mark->setColor(palette().color(QPalette::WindowText));
  }
  phase_plot_->yAxis->setRange(0, top * 1.08);  // room for the mark
  updateLabelStride();
  wrapLegend(phase_plot_);
  QString context = QString::fromStdString(chartContext(sweeps_));
  if (runs.size() < total) context += tr(" \u00b7 the first %1 of %2 points").arg(runs.size()).arg(total);
  if (phases_.loading()) context += tr(" \u00b7 loading phases...");
  setPlotContext(phase_plot_, context);
  phase_plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::ui
