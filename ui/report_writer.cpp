#include "ui/report_writer.h"

#include <memory>
#include <optional>

#include <QDateTime>
#include <QDir>
#include <QPdfWriter>
#include <qcustomplot.h>

#include <nlohmann/json.hpp>

#include "core/base/format.h"
#include "core/files/output_file.h"
#include "ui/chart_context.h"
#include "ui/chart_export.h"
#include "ui/breakdown_view.h"
#include "ui/chart_view.h"
#include "ui/memory_view.h"
#include "ui/phase_summaries.h"
#include "ui/results_table_model.h"
#include "ui/view_factory.h"

namespace attnscope::ui {

namespace {

QStringList specLines(const SweepSnapshot& s) {
  QStringList l;
  l << QObject::tr("Sweep %1: %2 (%3, %4 runs, %5)")
           .arg(s.info.id)
           .arg(QString::fromStdString(s.info.name), QString::fromStdString(s.info.state))
           .arg(s.runs.size())
           .arg(QString::fromStdString(okSummary(s.info)));
  l << QObject::tr("Created %1").arg(QDateTime::fromMSecsSinceEpoch(s.info.created_unix_ms).toString(Qt::ISODate));
  std::vector<std::string> axes;
  for (const auto& a : s.spec.axes) axes.push_back(a.field);
  l << QObject::tr("Fixed workload: %1").arg(QString::fromStdString(workloadInWords(s.spec.base, axes)));
  for (const auto& a : s.spec.axes) {
    QStringList v;
    for (const auto& x : a.values) v << QString::fromStdString(x);
    l << QObject::tr("Axis %1: %2").arg(QString::fromStdString(a.field), v.join(", "));
  }
  QStringList b;
  for (const auto& x : s.spec.backends) b << QString::fromStdString(x);
  l << QObject::tr("Backends: %1").arg(b.join(", "));
  l << QObject::tr("Warm-up %1, repetitions %2, memory budget %3")
           .arg(s.spec.warmup)
           .arg(s.spec.reps)
           .arg(s.spec.memory_budget > 0 ? QString::fromStdString(formatBytes(s.spec.memory_budget)) : QObject::tr("none"));
  if (!s.info.notes.empty()) l << QObject::tr("Notes: %1").arg(QString::fromStdString(s.info.notes));
  return l;
}

QStringList environmentLines(const Environment& e) {
  QStringList l;
  const nlohmann::json j = toJson(e);
  for (const auto& [k, v] : j.items()) {
    if (v.is_string() && v.get<std::string>().empty()) continue;
    if (k == "gpus" && v.is_array()) {
      for (const auto& g : v)
        l << QObject::tr("gpu %1: %2, sm_%3%4, %5 SMs, %6")
                 .arg(g.value("index", 0))
                 .arg(QString::fromStdString(g.value("name", std::string())))
                 .arg(g.value("cc_major", 0))
                 .arg(g.value("cc_minor", 0))
                 .arg(g.value("sm_count", 0))
                 .arg(QString::fromStdString(formatBytes(g.value("memory_total", int64_t{0}))));
      continue;
    }
    // Byte counts read as sizes, not as 11-digit numbers.
    const bool bytes = v.is_number_integer() && k.find("memory") != std::string::npos;
    l << QString::fromStdString(k) + ": " +
             QString::fromStdString(bytes ? formatBytes(v.get<int64_t>()) : v.is_string() ? v.get<std::string>() : v.dump());
  }
  return l;
}

// Non-empty when a signal asks the report to stop (core/files/output_interrupt.h): checked at every
// page, so the temporary PDF is removed within one page's drawing.
QString interruption(const QString& file) {
  try {
    throwIfOutputInterrupted(file.toStdString());
    return {};
  } catch (const OutputInterrupted& e) {
    return QString::fromStdString(e.what());
  }
}

// At most this many phase tables: a report of a big sweep stays a report.
constexpr size_t kPhaseTables = 8;

void drawPhaseTables(QPdfWriter& pdf, QCPPainter& p, const QRect& page, const SweepSnapshots& sweeps,
                     const TimelineView::EventLoader& events) {
  const std::vector<const RunResult*> runs = representativeRuns(sweeps, kPhaseTables);
  if (runs.empty() || !events) return;
  PhaseSummaries summaries;  // loads on this thread: the report is written off the GUI thread or headless
  summaries.setEventSource(events);
  std::vector<int64_t> ids;
  for (const RunResult* r : runs) ids.push_back(r->id);
  summaries.request(ids);
  const QFont title_font("Sans", 16, QFont::Bold), head("Sans", 9, QFont::Bold), mono("Monospace", 8);
  const double widths[] = {0.34, 0.08, 0.14, 0.14, 0.12, 0.18};  // phase, count, total, mean, share, peak
  const int row_h = 15;
  int y = page.height();  // forces a new page before the first table
  bool first_page = true;
  auto draw_row = [&](const QStringList& cells, bool bold) {
    QFont f = mono;
    f.setBold(bold);
    p.setFont(f);
    double x = 0;
    for (int c = 0; c < cells.size() && c < static_cast<int>(std::size(widths)); ++c) {
      const double w = widths[c] * page.width() * 0.7;
      p.drawText(QRectF(x, y, w - 4, row_h), (c == 0 ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter, cells[c]);
      x += w;
    }
    y += row_h;
  };
  for (const RunResult* r : runs) {
    const std::vector<PhaseStats>* rows = summaries.find(r->id);
    const int need = 24 + row_h * (2 + (rows ? static_cast<int>(rows->size()) : 1));
    if (y + need > page.height()) {
      if (outputInterruptSignal() != 0) return;
      pdf.newPage();
      p.setFont(title_font);
      p.drawText(QRect(0, 0, page.width(), 30), Qt::AlignLeft,
                 first_page ? QObject::tr("Phases") : QObject::tr("Phases (continued)"));
      first_page = false;
      y = 40;
    }
    p.setFont(head);
    p.drawText(QRect(0, y, page.width(), 20), Qt::AlignLeft | Qt::AlignVCenter,
               QString::fromStdString(runInWords(*r)) + QObject::tr(", peak %1").arg(QString::fromStdString(formatBytes(r->memory.measured_peak))));
    y += 22;
    if (!rows || rows->empty()) {
      p.setFont(mono);
      const QString error = summaries.error(r->id);
      p.drawText(QRect(0, y, page.width(), row_h), Qt::AlignLeft,
                 error.isEmpty() ? QObject::tr("no phases recorded") : QObject::tr("cannot read the trace: %1").arg(error));
      y += row_h + 12;
      continue;
    }
    draw_row(phaseHeaders(), true);
    p.drawLine(QLineF(0, y, page.width() * 0.7, y));
    for (const PhaseStats& ph : *rows) draw_row(phaseCells(ph), false);
    y += 12;
  }
}

}  // namespace

QString writeReport(const SweepSnapshots& sweeps, const QString& pdf_file, const QString& png_dir, OutputRule rule,
                    const TimelineView::EventLoader& events) {
  if (sweeps.empty() || !sweeps.front()) return QObject::tr("no sweep to report");
  // Fresh views at a fixed size: the report looks the same whatever the window looks like.
  std::vector<std::unique_ptr<ChartView>> views;
  views.emplace_back(new MemoryView);
  for (ChartView* v : makeExtraChartViews(nullptr)) views.emplace_back(v);
  const RunResult* largest = nullptr;
  for (const auto& snap : sweeps)
    for (const RunResult& r : snap->runs)
      if (r.status == RunStatus::ok && (!largest || r.memory.measured_peak > largest->memory.measured_peak)) largest = &r;
  for (auto& v : views) {
    v->resize(1400, 650);
    auto* timeline = qobject_cast<TimelineView*>(v.get());
    if (timeline) timeline->setEventSource(events);
    if (auto* breakdown = qobject_cast<BreakdownView*>(v.get())) breakdown->setEventSource(events);
    v->setSweeps(sweeps);
    // Breakdown and Timeline show the same run (their titles name it).
    if (largest) v->selectRun(largest->id);
    v->finishPending();  // the Frontier's search, done here rather than on a pool thread
  }
  const auto pngFile = [&](const ChartView& v) { return QDir(png_dir).filePath(v.title().toLower() + ".png"); };
  // Every name first: a report is refused whole, not after half its charts were replaced.
  for (auto& v : views)
    if (!png_dir.isEmpty() && !v->plots().isEmpty()) checkOutput(pngFile(*v).toStdString(), {}, rule);
  checkOutput(pdf_file.toStdString(), {}, rule);
  if (!png_dir.isEmpty()) {
    QDir().mkpath(png_dir);
    for (auto& v : views) {
      if (v->plots().isEmpty()) continue;
      const QString err = exportPlots(v->plots(), v->exportColumns(), "png", pngFile(*v), QSize(1600, 700), 96, rule);
      if (!err.isEmpty()) return err;
    }
  }

  // Drawn under a temporary name and renamed when complete (an old report stays whole until then).
  std::optional<AtomicOutput> pdf_out;
  try {
    pdf_out.emplace(pdf_file.toStdString(), rule);
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  QPdfWriter pdf(QString::fromStdString(pdf_out->tempPath()));
  pdf.setResolution(layoutDpi());  // see chart_export.h: text is laid out at this DPI
  pdf.setPageSize(QPageSize(QPageSize::A4));
  pdf.setPageOrientation(QPageLayout::Landscape);
  pdf.setPageMargins(QMarginsF(12, 12, 12, 12), QPageLayout::Millimeter);
  pdf.setTitle("AttnScope report");
  pdf.setCreator("AttnScope");
  QCPPainter p;
  if (!p.begin(&pdf)) return QObject::tr("cannot write %1").arg(pdf_file);
  p.setMode(QCPPainter::pmVectorized);
  p.setMode(QCPPainter::pmNoCaching);
  const QRect page = pdf.pageLayout().paintRectPixels(pdf.resolution()).translated(
      -pdf.pageLayout().paintRectPixels(pdf.resolution()).topLeft());
  QFont title_font("Sans", 16, QFont::Bold), body("Sans", 9), mono("Monospace", 8);

  // Page 1: what was measured and where, then the memory chart, the one the report is for.
  p.setFont(title_font);
  p.drawText(QRect(0, 0, page.width(), 30), Qt::AlignLeft, QObject::tr("AttnScope report"));
  int y = 40;
  // What the sweep shows, before what it is: the largest peak, the backends at the largest point,
  // the points that failed.
  {
    QFont bold = body;
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(0, y, page.width(), 16), Qt::AlignLeft, QObject::tr("What this sweep shows"));
    y += 18;
    p.setFont(body);
    for (const std::string& line : sweepFindings(sweeps)) {
      const QString text = QStringLiteral("\u2022 ") + QString::fromStdString(line);
      const QRect r = p.boundingRect(QRect(0, y, page.width(), page.height() - y), Qt::TextWordWrap, text);
      p.drawText(r, Qt::TextWordWrap, text);
      y = r.bottom() + 4;
    }
    y += 10;
  }
  p.setFont(body);
  const int half = page.width() / 2 - 10;
  int y_env = y;
  for (const auto& s : sweeps) {
    if (!s) continue;
    const QString text = specLines(*s).join('\n');
    const QRect r = p.boundingRect(QRect(0, y, half, page.height() - y), Qt::TextWordWrap, text);
    p.drawText(r, Qt::TextWordWrap, text);
    y = r.bottom() + 14;
    const QString env = QObject::tr("Environment of sweep %1\n").arg(s->info.id) + environmentLines(s->environment).join('\n');
    const QRect re = p.boundingRect(QRect(half + 20, y_env, half, page.height() - y_env), Qt::TextWordWrap, env);
    p.drawText(re, Qt::TextWordWrap, env);
    y_env = re.bottom() + 14;
  }
  const int chart_top = std::max(y, y_env) + 6;
  const bool memory_on_cover = page.height() - chart_top >= page.height() / 2;
  if (memory_on_cover)
    paintPlots(p, QRectF(0, chart_top, page.width(), page.height() - chart_top), views.front()->plots(),
               views.front()->exportColumns());

  // One page per chart (each chart's own title and context line say what it shows).
  for (auto& v : views) {
    if (v->plots().isEmpty() || (memory_on_cover && v == views.front())) continue;
    if (const QString why = interruption(pdf_file); !why.isEmpty()) return why;
    pdf.newPage();
    paintPlots(p, QRectF(0, 0, page.width(), page.height()), v->plots(), v->exportColumns());
  }

  // The phase tables of representative points (per backend, kind, pass and checkpoint the
  // largest finished one), as `attnscope show R --phases` prints them.
  drawPhaseTables(pdf, p, page, sweeps, events);

  // The results table, paginated.
  ResultsTableModel model;
  model.setSweeps(sweeps);
  const int cols[] = {ResultsTableModel::RunColumn,       ResultsTableModel::BackendColumn,
                      ResultsTableModel::SpecColumn,      ResultsTableModel::StatusColumn,
                      ResultsTableModel::PredictedColumn, ResultsTableModel::MeasuredColumn,
                      ResultsTableModel::MedianColumn,    ResultsTableModel::ThroughputColumn,
                      ResultsTableModel::ErrorColumn};
  const double widths[] = {0.06, 0.11, 0.27, 0.09, 0.10, 0.10, 0.09, 0.09, 0.09};
  const int row_h = 16;
  int row = 0;
  while (row < model.rowCount() || row == 0) {
    if (const QString why = interruption(pdf_file); !why.isEmpty()) return why;
    pdf.newPage();
    p.setFont(title_font);
    p.drawText(QRect(0, 0, page.width(), 30), Qt::AlignLeft, QObject::tr("Results"));
    p.setFont(mono);
    int ty = 40;
    auto draw_row = [&](auto text_of, bool header) {
      double x = 0;
      QFont f = mono;
      f.setBold(header);
      p.setFont(f);
      for (size_t c = 0; c < std::size(cols); ++c) {
        const double w = widths[c] * page.width();
        p.drawText(QRectF(x, ty, w - 4, row_h), Qt::AlignLeft | Qt::AlignVCenter, text_of(cols[c]));
        x += w;
      }
      ty += row_h;
    };
    draw_row([&](int c) { return model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString(); }, true);
    p.drawLine(QLineF(0, ty, page.width(), ty));
    for (; row < model.rowCount() && ty + row_h < page.height(); ++row)
      draw_row([&](int c) { return model.data(model.index(row, c), Qt::DisplayRole).toString(); }, false);
    if (model.rowCount() == 0) break;
  }
  if (!p.end()) return QObject::tr("cannot write %1").arg(pdf_file);
  try {
    pdf_out->commit();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace attnscope::ui
