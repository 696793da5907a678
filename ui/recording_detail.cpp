// RecordingView's detail pane: the selected call's verdicts, predicted buffers, notes and cheaper
// changes (the words of `attnscope explain` and `show REC`), or the recording's overview.

#include <QDateTime>

#include "core/base/format.h"
#include "ui/plot_style.h"
#include "ui/chart_math.h"
#include "ui/recorded_calls_model.h"
#include "ui/recording_view.h"

namespace attnscope::ui {

using namespace torch_dispatch;

namespace {

QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }
QString bytes(int64_t b) { return QString::fromStdString(formatBytes(b)); }

// A square in the kernel's Dispatch colour before its name.
QString kernelName(const std::string& kernel) {
  return QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;<b>%2</b>").arg(kernelColor(kernel).name(), esc(kernel));
}

QString timeText(const RecordedStats& s) {
  if (s.count <= 0) return QStringLiteral("-");
  return QObject::tr("mean %1 (%2 .. %3) over %4 call%5")
      .arg(QString::fromStdString(durationText(s.meanTime())), QString::fromStdString(durationText(s.time_min_s)),
           QString::fromStdString(durationText(s.time_max_s)))
      .arg(s.count)
      .arg(s.count == 1 ? "" : "s");
}

// Every kernel in the order torch tries them, each with its first failing rule and torch's
// message; the winner's buffers; the cheaper changes.
QString verdictHtml(const QString& title, const CallVerdict& v) {
  QString h = QStringLiteral("<h4>%1</h4>").arg(title.toHtmlEscaped());
  if (!v.x) {
    const std::string why = v.workload.problem.empty() ? "the recorded torch has no rules in this build" : v.workload.problem;
    return h + QObject::tr("<p>Not explained: %1</p>").arg(esc(why));
  }
  const SdpaExplanation& x = *v.x;
  QStringList order;
  for (SdpaKernel k : x.order.kernels) order << esc(std::string(toString(k)));
  h += QStringLiteral("<p><b>%1</b><br>").arg(esc(x.headline())) +
       QObject::tr("torch tries %1 (%2)").arg(order.join(", "), esc(x.order.reason)) + "</p>";
  h += QStringLiteral("<table cellspacing=\"0\" cellpadding=\"3\">");
  for (size_t i = 0; i < x.verdicts.size(); ++i) {
    const KernelVerdict& k = x.verdicts[i];
    QString state = k.chosen   ? QObject::tr("&#10003; would run (chosen)")
                    : k.usable ? QObject::tr("would run (not reached)")
                               : QObject::tr("&#10007; rejected by %1").arg(esc(k.rule_id));
    if (!k.via.empty()) state += QObject::tr(" [via %1]").arg(esc(k.via));
    QString text = kernelName(std::string(toString(k.kernel))) + "&nbsp;&nbsp;" + state;
    if (!k.usable) text += QStringLiteral("<br>%1<br>torch: &quot;%2&quot;").arg(esc(k.rule), esc(k.torch_message));
    h += QStringLiteral("<tr><td valign=\"top\">%1.</td><td>%2</td></tr>").arg(i + 1).arg(text);
  }
  h += QStringLiteral("</table>");
  if (!x.chosen) return h + QObject::tr("<p>torch would raise: %1</p>").arg(esc(x.error));
  if (!x.error.empty()) h += QObject::tr("<p>but it would fail: %1</p>").arg(esc(x.error));
  const MemoryPlan& plan = x.memory.plan;
  if (plan.known && !plan.buffers.empty()) {
    const int peak = plan.peakStep();
    h += QObject::tr("<p>predicted peak %1 = inputs %2 + %3 allocated by the call, at step &quot;%4&quot;</p>")
             .arg(bytes(x.peakBytes()), bytes(x.memory.input_bytes), bytes(x.extraBytes()), esc(plan.stepName(peak)));
    h += QObject::tr("<table cellspacing=\"0\" cellpadding=\"3\"><tr><th align=\"left\">buffer</th><th align=\"right\">bytes</th>"
                     "<th align=\"left\">live</th><th align=\"left\">at peak</th></tr>");
    for (const PlannedBuffer& b : plan.buffers) {
      const bool live = b.first_step <= peak && peak <= b.last_step;
      h += QStringLiteral("<tr><td>%1</td><td align=\"right\">%2</td><td>%3</td><td>%4</td></tr>")
               .arg(esc(b.name), bytes(b.bytes), esc(plan.lifetime(b)), live ? QObject::tr("yes") : QStringLiteral("-"));
    }
    h += QStringLiteral("</table>");
  }
  if (!x.suggestions.empty()) {
    h += QObject::tr("<p>cheaper with:</p><table cellspacing=\"0\" cellpadding=\"3\"><tr><th align=\"right\">peak</th>"
                     "<th align=\"left\">kernel</th><th align=\"left\">change</th></tr>");
    for (const SdpaSuggestion& s : x.suggestions)
      h += QStringLiteral("<tr><td align=\"right\">%1</td><td>%2</td><td>%3</td></tr>")
               .arg(bytes(s.peak_bytes), kernelName(std::string(toString(s.kernel))), esc(s.change));
    h += QStringLiteral("</table>");
  }
  return h;
}

}  // namespace

QString RecordingView::callHtml(const ExplainedCall& e) const {
  const ExplainedRecording& er = *model_->recording();
  const RecordedCall& c = *e.call;
  const CallVerdict& v = e.recorded;
  QString h = QStringLiteral("<h3>%1:%2 &nbsp; %3 &nbsp; %4</h3>")
                  .arg(esc(er.recording->idText()))
                  .arg(c.row)
                  .arg(esc(c.site), c.module.empty() ? tr("(outside any nn.Module)") : esc(c.module));
  QString shapes = tr("q %1, k %2, v %3, %4 on %5, mask %6")
                       .arg(esc(shapeText(c.q.shape)), esc(shapeText(c.k.shape)), esc(shapeText(c.v.shape)), esc(c.q.dtype),
                            esc(c.q.device), esc(recordedMaskText(c)));
  if (c.dropout_p > 0) shapes += tr(", dropout_p %1").arg(c.dropout_p);
  if (c.scale) shapes += tr(", scale %1").arg(*c.scale);
  if (c.enable_gqa) shapes += tr(", enable_gqa");
  if (c.requires_grad) shapes += tr(", requires_grad");
  h += "<p>" + shapes;
  if (v.x) h += "<br><code>" + esc(v.x->call.pythonCall()) + "</code>";
  if (v.workload.spec) h += "<br>" + tr("as a workload: %1").arg(esc(summary(*v.workload.spec)));
  h += "</p><p>";
  const std::string ran = ranKernel(c);
  h += tr("torch ran %1").arg(ran.empty() ? QStringLiteral("?") : kernelName(ran));
  if (!c.fused_choice.empty()) h += tr(" (torch._fused_sdp_choice: %1)").arg(esc(c.fused_choice));
  if (!v.predicted.empty()) h += tr("; the explainer predicts %1").arg(kernelName(v.predicted));
  h += "<br>" + tr("measured: %1").arg(c.forward.memory_measured > 0
                                           ? tr("%1 at most, %2 at least, in %3 of %4 calls (%5)")
                                                 .arg(bytes(c.forward.bytes_max), bytes(c.forward.bytes_min))
                                                 .arg(c.forward.memory_measured)
                                                 .arg(c.forward.count)
                                                 .arg(esc(c.memory_method))
                                           : tr("not measured"));
  h += "<br>" + tr("time: %1").arg(timeText(c.forward));
  if (c.backward) h += "<br>" + tr("backward: %1").arg(timeText(*c.backward));
  h += "</p>";
  if (v.mismatch)
    h += QStringLiteral("<p style=\"color:#d03a3a\"><b>%1</b></p>")
             .arg(tr("WRONG: torch ran %1 but the explainer predicts %2: a defect in AttnScope's rules for this torch "
                     "(please report it)")
                      .arg(esc(ran), esc(v.predicted)));
  if (!c.raised.empty()) h += QStringLiteral("<p style=\"color:#d03a3a\">%1</p>").arg(tr("the call raised %1").arg(esc(c.raised)));

  if (er.recorded) h += verdictHtml(tr("As recorded: %1").arg(QString::fromStdString(er.recorded->describe())), v);
  else h += tr("<h4>As recorded</h4><p>Not explained: %1</p>").arg(esc(er.recorded_problem));
  if (e.target) {
    QString title = tr("On target: %1").arg(QString::fromStdString(er.target->describe()));
    const std::string change = kernelChange(v, *e.target);
    if (!change.empty()) title += " \u2014 " + QString::fromStdString(change);
    h += verdictHtml(title, *e.target);
  }

  // The recorder's, the mapping's and the explainer's notes, each once (an explanation repeats its
  // memory's notes, and the target's repeat the recorded ones).
  QStringList notes;
  auto note = [&notes](const std::string& n) {
    if (!notes.contains(esc(n))) notes << esc(n);
  };
  for (const auto& n : v.workload.notes) note(n);
  for (const auto& n : c.notes) note(n);
  for (const CallVerdict* verdict : {&v, e.target ? &*e.target : nullptr}) {
    if (!verdict || !verdict->x) continue;
    for (const auto& n : verdict->x->notes) note(n);
    for (const auto& n : verdict->x->memory.notes) note(n);
  }
  if (!notes.isEmpty()) h += tr("<h4>Notes</h4>") + "<ul><li>" + notes.join("</li><li>") + "</li></ul>";
  return h;
}

QString RecordingView::overviewHtml() const {
  const ExplainedRecording* er = model_->recording();
  if (!er) return {};
  const Recording& r = *er->recording;
  QString h = tr("<p>Select a call above for its verdict (each kernel torch tries and why it was refused), the "
                 "predicted buffers, the notes and the cheaper changes.</p>");
  QStringList program;
  for (const auto& a : r.program) program << esc(a);
  auto time = [](int64_t ms) { return QDateTime::fromMSecsSinceEpoch(ms).toString("yyyy-MM-dd HH:mm:ss"); };
  h += "<p>" + tr("program: <code>%1</code> in %2").arg(program.join(' '), esc(r.cwd)) + "<br>" +
       tr("ran %1 to %2: %3").arg(time(r.started_unix_ms), time(r.ended_unix_ms), esc(r.exitText())) + "<br>" +
       tr("torch %1, Python %2").arg(esc(r.torch.value("torch", std::string("?"))), esc(r.torch.value("python", std::string("?")))) +
       "</p>";
  if (r.calls.empty())
    h += tr("<p>No attention calls seen. Not seen by the recorder: attention inside a torch.compile'd region, a "
            "library such as flash_attn or xformers called directly, or a program that never reached its model.</p>");
  else
    h += tr("<p>measured: what the call allocated at its peak above what was allocated when it began (%1); "
            "predicted: the explainer's figure for the same.</p>")
             .arg(r.calls.front().memory_method == "cuda_peak" ? tr("torch.cuda.max_memory_allocated")
                                                                : tr("torch.profiler's memory events, first calls of each row"));
  if (!r.stderr_tail.empty() && (!r.exit_status || *r.exit_status != 0))
    h += tr("<p>The program's last words on stderr:</p>") + "<pre>" + esc(r.stderr_tail) + "</pre>";
  return h;
}

}  // namespace attnscope::ui
