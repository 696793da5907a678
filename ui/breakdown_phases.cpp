// The phase half of the Breakdown view (breakdown_view.h): the picked run's phase table and a
// stacked bar of time shares per point. Every number comes from core's summarizePhases through
// PhaseSummaries; this file only lays them out.

#include <algorithm>
#include <cmath>
#include <map>
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

// "cpu.flash\nH8 L512\ntrain ckpt attention": backend, heads and seq, and pass / checkpoint / kind when the
// bars differ in them, a line each. Many bars are narrow: then one rotated line, the backend
// without its "cpu." ("reference H8 L512 ckpt").
QString pointLabel(const RunResult& r, bool kind, bool pass, bool checkpoint, bool compact) {
  QString backend = QString::fromStdString(r.backend);
  if (compact && backend.startsWith(QLatin1String("cpu."))) backend = backend.mid(4);
  QString shape = QStringLiteral("H%1 L%2").arg(r.spec.heads).arg(r.spec.seq_q);
  // A stack's depth and the ranks as the CLI's brief has them ("x4", "tp2").
  if (r.spec.layers != 1) shape += QStringLiteral(" x%1").arg(r.spec.layers);
  if (r.spec.tp != 1) shape += QStringLiteral(" tp%1").arg(r.spec.tp);
  QStringList parts{backend, shape};
  QStringList extra;
  if (kind) extra << QString::fromUtf8(toString(r.spec.kind).data());
  if (pass) extra << QString::fromUtf8(toString(r.spec.pass).data());
  if (checkpoint)
    extra << (r.spec.checkpoint == Checkpoint::none ? QObject::tr("no ckpt")
                                                    : QObject::tr("ckpt %1").arg(QString::fromUtf8(toString(r.spec.checkpoint).data())));
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

QStringList BreakdownView::shownLayerLabels() const {
  QStringList out;
  for (const LayerLabel& l : layer_labels_)
    if (l.item->visible()) out << l.item->text();
  return out;
}

void BreakdownView::updateLabelStride() {
  // A layer's name where its band is tall and its bar wide enough to hold it.
  {
    const QFontMetrics metrics(QFont(font().family(), 7, QFont::Bold));
    const double width = phase_plot_->axisRect()->width();
    const double per_bar = width > 0 ? width / phase_plot_->xAxis->range().size() * 0.7 : 0;
    for (const LayerLabel& l : layer_labels_) {
      const double tall = std::abs(phase_plot_->yAxis->coordToPixel(l.lo) - phase_plot_->yAxis->coordToPixel(l.hi));
      l.item->setVisible(tall >= metrics.height() && per_bar >= metrics.horizontalAdvance(l.item->text()) + 2);
    }
  }
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

QString BreakdownView::phaseTip(size_t bar, const QString& key) const {
  if (bar >= bar_titles_.size() || bar >= bar_segments_.size()) return {};
  QString tip = bar_titles_[bar];
  const std::vector<PhaseSegment>& segments = bar_segments_[bar];
  for (const PhaseSegment& s : segments) {
    if (QString::fromStdString(s.key()) != key) continue;
    const QString what = s.phase == kCommSegment        ? tr("communication")
                         : s.phase == kLayerOtherSegment ? tr("outside its phases")
                                                         : QString::fromStdString(s.phase);
    tip += tr("\n%1: %2 per pass (mean of %3), %4 in all, %5 % of the run; peak %6 inside it")
               .arg(s.group.empty() ? what : QString::fromStdString(s.group) + " " + what)
               .arg(QString::fromStdString(formatDuration(static_cast<double>(s.meanNs()) * 1e-9)))
               .arg(s.count)
               .arg(QString::fromStdString(formatDuration(static_cast<double>(s.total_ns) * 1e-9)))
               .arg(100.0 * s.share, 0, 'f', 1)
               .arg(QString::fromStdString(formatBytes(s.peak_bytes)));
    if (!s.group.empty()) {
      // The layer's own share: every segment of it.
      double share = 0;
      for (const PhaseSegment& o : segments)
        if (o.group == s.group) share += o.share;
      tip += tr("\n%1 in all: %2 % of the run").arg(QString::fromStdString(s.group)).arg(100.0 * share, 0, 'f', 1);
    }
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

  // The bars: one per finished point (a tensor-parallel point: one per rank), its segments
  // stacked by share (phaseSegments: the top-level phases, a stack's per layer).
  phase_plot_->clearPlottables();
  phase_plot_->clearItems();
  layer_labels_.clear();
  size_t total = 0;
  const std::vector<const RunResult*> runs = barRuns(sweeps_, kMaxPhaseBars, total);
  struct Bar {
    const RunResult* run;
    int rank;  // -1: the run has one
  };
  std::vector<Bar> bars;
  bar_segments_.clear();
  std::set<std::string> kinds, passes, checkpoints;
  for (const RunResult* run : runs) {
    if (bars.size() >= kMaxPhaseBars) break;  // ranks take bars too
    kinds.insert(std::string(toString(run->spec.kind)));
    passes.insert(std::string(toString(run->spec.pass)));
    checkpoints.insert(std::string(toString(run->spec.checkpoint)));
    const std::vector<RankPhases>* ranks = phases_.findRanks(run->id);
    if (!ranks || ranks->size() <= 1) {
      bars.push_back({run, -1});
      bar_segments_.push_back(ranks && !ranks->empty() ? phaseSegments(ranks->front().phases)
                                                       : std::vector<PhaseSegment>{});  // empty: loading
      continue;
    }
    for (const RankPhases& rank : *ranks) {
      if (bars.size() >= kMaxPhaseBars) break;
      bars.push_back({run, static_cast<int>(rank.device)});
      bar_segments_.push_back(phaseSegments(rank.phases));
    }
  }
  bar_runs_.clear();
  for (const Bar& b : bars) bar_runs_.push_back(b.run->id);
  // The stack's columns: every segment key in the order it first appears; a phase keeps its colour
  // in every layer and every bar (colours follow the phase's first appearance).
  const std::vector<std::string> keys = segmentColumns(bar_segments_);
  std::map<std::string, size_t> column;
  for (size_t k = 0; k < keys.size(); ++k) column[keys[k]] = k;
  std::vector<std::string> phase_names;
  std::map<std::string, size_t> phase_index;
  for (const auto& segments : bar_segments_)
    for (const PhaseSegment& seg : segments)
      if (seg.phase != kCommSegment && seg.phase != kLayerOtherSegment &&
          phase_index.emplace(seg.phase, phase_names.size()).second)
        phase_names.push_back(seg.phase);
  std::vector<std::vector<const PhaseSegment*>> cells(bars.size(), std::vector<const PhaseSegment*>(keys.size(), nullptr));
  for (size_t i = 0; i < bars.size(); ++i)
    for (const PhaseSegment& seg : bar_segments_[i]) cells[i][column.at(seg.key())] = &seg;
  const bool compact = bars.size() > 8;
  bar_labels_.clear();
  bar_titles_.clear();
  for (const Bar& bar : bars) {
    const bool k = kinds.size() > 1, p = passes.size() > 1, c = checkpoints.size() > 1;
    QString label = pointLabel(*bar.run, k, p, c, compact);
    QString title = tr("R%1 %2").arg(bar.run->id).arg(pointLabel(*bar.run, k, p, c, false).replace('\n', ' '));
    if (bar.rank >= 0) {
      label += (compact ? QStringLiteral(" r%1") : QStringLiteral("\nrank %1")).arg(bar.rank);
      title += tr(", rank %1").arg(bar.rank);
    }
    bar_labels_.push_back(label);
    bar_titles_.push_back(title);
  }
  label_stride_ = 0;  // labels set by updateLabelStride, before every replot
  phase_plot_->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  phase_plot_->xAxis->setTickLabelRotation(compact ? 90 : 0);
  phase_plot_->xAxis->setRange(-0.6, std::max<double>(1.0, static_cast<double>(bars.size())) - 0.4);
  // Time per pass: each segment's mean, in the unit the tallest bar reads best in.
  double tallest_ns = 0;
  for (const auto& segments : bar_segments_) {
    double sum = 0;
    for (const PhaseSegment& seg : segments) sum += static_cast<double>(seg.meanNs());
    tallest_ns = std::max(tallest_ns, sum);
  }
  const TimeUnit unit = timeUnitFor(tallest_ns);
  auto value = [&](const PhaseSegment* seg) {
    return !seg                         ? 0.0
           : scale_ == PhaseScale::share ? 100.0 * seg->share
                                         : static_cast<double>(seg->meanNs()) / unit.ns;
  };
  QCPBars* below = nullptr;
  std::set<std::string> in_legend;
  bool layered = false;
  for (size_t k = 0; k < keys.size(); ++k) {
    const PhaseSegment* first = nullptr;
    for (size_t i = 0; i < bars.size() && !first; ++i) first = cells[i][k];
    auto* bars_k = new QCPBars(phase_plot_->xAxis, phase_plot_->yAxis);
    const std::string& phase = first->phase;
    bars_k->setName(phase == kCommSegment ? tr("communication") : QString::fromStdString(phase));
    bars_k->setProperty("phaseKey", QString::fromStdString(keys[k]));
    bars_k->setProperty("stackLayer", QString::fromStdString(first->group));
    layered = layered || !first->group.empty();
    QColor color = phase == kCommSegment        ? QColor(0x2b, 0x2b, 0x2b)
                   : phase == kLayerOtherSegment ? QColor(0xd4, 0xd4, 0xd4)
                                                 : phaseColor(phase_index.at(phase));
    // Every other layer a lighter shade: the layers read as bands up the bar.
    if (!first->group.empty() && std::stoi(first->group.substr(1)) % 2 == 0) color = color.lighter(122);
    if (phase == kCommSegment) {
      // Communication hatched, apart from every compute phase's flat colour.
      bars_k->setBrush(QBrush(color, Qt::BDiagPattern));
      bars_k->setPen(QPen(color, 0.8));
    } else {
      bars_k->setBrush(color);
      bars_k->setPen(QPen(color.darker(140), 0.5));
    }
    bars_k->setWidth(0.7);
    for (size_t i = 0; i < bars.size(); ++i) bars_k->addData(static_cast<double>(i), value(cells[i][k]));
    // One legend entry per phase, not per layer.
    if (!in_legend.insert(phase).second) bars_k->removeFromLegend();
    if (below) bars_k->moveAbove(below);
    below = bars_k;
  }
  // Each layer named on its band of the bar, where the band has room (updateLabelStride).
  for (size_t i = 0; i < bars.size(); ++i) {
    double at = 0;
    std::map<std::string, std::pair<double, double>> spans;  // layer -> lowest, highest value
    for (size_t k = 0; k < keys.size(); ++k) {
      const double v = value(cells[i][k]);
      if (cells[i][k] && !cells[i][k]->group.empty()) {
        auto [it, fresh] = spans.try_emplace(cells[i][k]->group, at, at + v);
        if (!fresh) it->second = {std::min(it->second.first, at), std::max(it->second.second, at + v)};
      }
      at += v;
    }
    for (const auto& [layer, span] : spans) {
      // A gap in the window's colour where one layer's band meets the next.
      if (span.first > 0) {
        auto* gap = new QCPItemLine(phase_plot_);
        gap->start->setCoords(static_cast<double>(i) - 0.35, span.first);
        gap->end->setCoords(static_cast<double>(i) + 0.35, span.first);
        gap->setPen(QPen(palette().color(QPalette::Base), 1.5));
        gap->setClipToAxisRect(true);
      }
      auto* text = new QCPItemText(phase_plot_);
      text->position->setCoords(static_cast<double>(i), (span.first + span.second) / 2);
      text->setText(QString::fromStdString(layer));
      text->setFont(QFont(font().family(), 7, QFont::Bold));
      text->setColor(QColor(0x10, 0x10, 0x10));
      text->setPadding(QMargins(1, 0, 1, 0));
      text->setBrush(QColor(255, 255, 255, 170));
      text->setClipToAxisRect(true);
      layer_labels_.push_back({text, span.first, span.second});
    }
  }
  const double top = scale_ == PhaseScale::share ? 100.0 : std::max(tallest_ns / unit.ns, 1e-9);
  setPlotTitle(phase_plot_, (scale_ == PhaseScale::share ? tr("Time share per phase") : tr("Time per phase")) +
                                (layered ? tr(", per layer") : QString()));
  phase_plot_->yAxis->setLabel(scale_ == PhaseScale::share ? tr("time share (%)")
                                                           : tr("time per pass (%1), phase means").arg(unit.name));
  // The picked run's bar is marked above it (its table is the one beside).
  for (size_t i = 0; i < bars.size(); ++i) {
    if (!r || bars[i].run->id != r->id) continue;
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
  if (layered) context += tr(" \u00b7 a stack's layers bottom (L1) to top, every other one lighter");
  if (phases_.loading()) context += tr(" \u00b7 loading phases...");
  setPlotContext(phase_plot_, context);
  phase_plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::ui
