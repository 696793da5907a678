// The phase half of the Breakdown view (breakdown_view.h): the picked run's phase table and a
// stacked bar of time shares per point. Every number comes from core's summarizePhases through
// PhaseSummaries; this file only lays them out.

#include <set>

#include <QLabel>
#include <QTableWidget>
#include <qcustomplot.h>

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

}  // namespace

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
  // The same columns as `attnscope show S --phases` (core/trace/phase_summary.h).
  const PhaseMatrix matrix = phaseMatrix(summaries);
  const std::vector<std::string>& names = matrix.names;
  auto ticks = QSharedPointer<QCPAxisTickerText>::create();
  const bool compact = runs.size() > 8;
  for (size_t i = 0; i < runs.size(); ++i)
    ticks->addTick(static_cast<double>(i),
                   pointLabel(*runs[i], kinds.size() > 1, passes.size() > 1, checkpoints.size() > 1, compact));
  phase_plot_->xAxis->setTicker(ticks);
  phase_plot_->xAxis->setTickLabelRotation(compact ? 90 : 0);
  phase_plot_->xAxis->setRange(-0.6, std::max<double>(1.0, static_cast<double>(runs.size())) - 0.4);
  QCPBars* below = nullptr;
  for (size_t k = 0; k < names.size(); ++k) {
    auto* bars = new QCPBars(phase_plot_->xAxis, phase_plot_->yAxis);
    bars->setName(QString::fromStdString(names[k]));
    bars->setBrush(phaseColor(k));
    bars->setPen(QPen(phaseColor(k).darker(140), 0.5));
    bars->setWidth(0.7);
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto& cell = matrix.cells[i][k];
      bars->addData(static_cast<double>(i), cell ? 100.0 * cell->share : 0.0);
    }
    if (below) bars->moveAbove(below);
    below = bars;
  }
  // The picked run's bar is marked above it (its table is the one beside).
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!r || runs[i]->id != r->id) continue;
    auto* mark = new QCPItemText(phase_plot_);
    mark->position->setCoords(static_cast<double>(i), 100);
    mark->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    mark->setText(QStringLiteral("\u25bc"));
    mark->setColor(palette().color(QPalette::WindowText));
  }
  phase_plot_->yAxis->setRange(0, 108);  // room for the mark
  wrapLegend(phase_plot_);
  QString context = QString::fromStdString(chartContext(sweeps_));
  if (runs.size() < total) context += tr(" \u00b7 the first %1 of %2 points").arg(runs.size()).arg(total);
  if (phases_.loading()) context += tr(" \u00b7 loading phases...");
  setPlotContext(phase_plot_, context);
  phase_plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::ui
