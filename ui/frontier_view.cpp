#include "ui/frontier_view.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QRegularExpression>
#include <QThreadPool>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "core/torch_dispatch/torch_target.h"
#include "kernels/builtin_session.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

using namespace torch_dispatch;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QString commas(int64_t v) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(v)); }

}  // namespace

FrontierView::FrontierView(QWidget* parent)
    : ChartView(parent), source_(SweepSpec{}, tr("the default workload (set up a sweep to see yours)")) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  budget_ = new QComboBox(this);
  budget_->setObjectName("frontierBudget");
  budget_->setEditable(true);
  budget_->setToolTip(tr("A GPU's name (its memory less 512 MiB for the CUDA context and 2 % for the allocator) or a "
                         "size: 16GiB, 1.5e10"));
  for (const char* b : {"V100", "T4", "A10", "L4", "RTX 4090", "A100-40GB", "A100", "H100", "H200", "B200", "8GiB", "16GiB"})
    budget_->addItem(b);
  budget_->setCurrentText("V100");
  torch_ = new QComboBox(this);
  torch_->setObjectName("frontierTorch");
  for (const auto& v : coveredTorchVersions()) torch_->addItem(q(v.text()));
  torch_->setCurrentText(q(kNewestTorch.text()));
  gpu_ = new QComboBox(this);
  gpu_->setObjectName("frontierGpu");
  gpu_->setEditable(true);
  gpu_->setToolTip(tr("The GPU torch's lines are predicted for: a name or smXY, cpu, or 'budget' for the budget's GPU"));
  for (const char* g : {"budget", "V100", "T4", "A100", "L4", "H100", "B200", "cpu"}) gpu_->addItem(g);
  vary_ = new QComboBox(this);
  vary_->setObjectName("frontierVary");
  vary_->addItems({"seq", "batch"});
  pass_ = new QComboBox(this);
  pass_->setObjectName("frontierPass");
  pass_->addItems({"forward", "train"});
  bar->addWidget(new QLabel(tr("budget"), this));
  bar->addWidget(budget_);
  bar->addWidget(new QLabel(tr("torch"), this));
  bar->addWidget(torch_);
  bar->addWidget(new QLabel(tr("GPU"), this));
  bar->addWidget(gpu_);
  bar->addWidget(new QLabel(tr("longest"), this));
  bar->addWidget(vary_);
  bar->addWidget(new QLabel(tr("pass"), this));
  bar->addWidget(pass_);
  bar->addStretch();
  layout->addLayout(bar);
  status_ = new QLabel(this);
  status_->setObjectName("frontierStatus");
  status_->setWordWrap(true);
  layout->addWidget(status_);
  plot_ = makePlot(this);
  plot_->setObjectName("frontierPlot");
  initPlotLayout(plot_, tr("How far it goes in the budget"));
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->xAxis->setScaleType(QCPAxis::stLogarithmic);
  plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  auto ylog = QSharedPointer<QCPAxisTickerLog>::create();
  plot_->yAxis->setTicker(ylog);
  plot_->yAxis->setNumberFormat("gb");
  plot_->xAxis->setLabel(tr("number of heads"));
  layout->addWidget(plot_, 1);
  installHover(plot_, [this](QCPGraph* g, int i) {
    const QVariant row = g->property("row");
    if (!row.isValid() || i < 0 || i >= g->dataCount()) return QString();
    return pointText(row.toULongLong(), std::llround(g->data()->at(i)->key));
  });
  for (QComboBox* b : {torch_, vary_, pass_}) connect(b, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  for (QComboBox* b : {budget_, gpu_}) connect(b, &QComboBox::currentTextChanged, this, [this] { rebuild(); });
  rebuild();
}

void FrontierView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  if (source_.setShown(sweeps_)) rebuild();
}

void FrontierView::setPlannedSweep(const SweepSpec& sweep) {
  if (source_.setPlanned(sweep)) rebuild();
}

FrontierView::Setup FrontierView::setup() const {
  Setup s;
  FrontierQuery& fq = s.query;
  fq.spec = source_.spec().base;
  fq.spec.pass = pass_->currentText() == "train" ? Pass::train : Pass::forward;
  fq.vary = vary_->currentText() == "batch" ? FrontierAxis::batch : FrontierAxis::seq;
  fq.other = FrontierAxis::heads;
  // The sweep's own head counts when it sweeps them, else 1 .. 64.
  for (const auto& [field, values] : source_.spec().axes)
    if (field == "heads" && values.size() >= 2) {
      fq.others.clear();
      for (const auto& v : values)
        if (const long long n = std::atoll(v.c_str()); n >= 1 && n <= frontierCap(FrontierAxis::heads)) fq.others.push_back(n);
      std::sort(fq.others.begin(), fq.others.end());
    }
  const std::string budget = budget_->currentText().trimmed().toStdString();
  std::optional<GpuBudget> gpu_budget = gpuBudget(budget);
  if (gpu_budget) {
    fq.budget = gpu_budget->budget();
    s.budget_text = q(gpu_budget->describe());
  } else if (auto bytes = parseByteSize(budget); bytes && *bytes >= 1 && *bytes < 9.2e18) {
    fq.budget = static_cast<int64_t>(*bytes);
    s.budget_text = q(formatBytes(fq.budget));
  } else {
    s.problem = tr("Budget '%1' is neither a size (16GiB, 1.5e10) nor a GPU whose memory is known (%2)")
                    .arg(budget_->currentText(), q(knownGpuMemories()));
    return s;
  }
  std::string gpu = gpu_->currentText().trimmed().toStdString();
  if (gpu == "budget") gpu = gpu_budget ? gpu_budget->gpu : "A100";
  const auto version = parseTorchVersion(torch_->currentText().toStdString());
  const auto target = targetForGpu(*version, gpu);
  if (!target) {
    s.problem = tr("Unknown GPU '%1' (allowed: %2)").arg(gpu_->currentText(), q(gpuChoices()));
    return s;
  }
  const TorchTarget& t = *target;
  BackendRegistry& registry = builtinSession().registry();
  for (std::string_view id : kFrontierBackends)
    if (Backend* b = registry.find(id)) s.lines.push_back(backendFrontierLine(*b));
  for (const auto& k : torchFrontierKernels(t.device)) s.lines.push_back(torchFrontierLine(torchFrontierName(t, k), t, k));
  if (auto errors = validate(withAxis(withAxis(fq.spec, fq.other, fq.others.front()), fq.vary, 1)); !errors.empty())
    s.problem = tr("The workload is not valid: %1").arg(q(describe(errors)));
  return s;
}

void FrontierView::rebuild() {
  Setup s = setup();
  budget_->setStyleSheet(s.problem.startsWith(tr("Budget")) ? "QComboBox { border: 1px solid #d03a3a; }" : "");
  gpu_->setStyleSheet(s.problem.startsWith(tr("Unknown GPU")) ? "QComboBox { border: 1px solid #d03a3a; }" : "");
  if (!s.problem.isEmpty()) {
    jobs_.invalidate();
    computing_ = false;
    rows_.clear();
    query_ = s.query;
    plot_->clearGraphs();
    status_->setText(s.problem);
    plot_->replot(QCustomPlot::rpQueuedReplot);
    Q_EMIT computed();
    return;
  }
  const quint64 job = jobs_.startJob();
  computing_ = true;
  status_->setText(tr("Searching the frontier of %1 in %2...").arg(source_.name(), s.budget_text));
  QPointer<FrontierView> self(this);
  auto setup = std::make_shared<Setup>(std::move(s));
  QThreadPool::globalInstance()->start([self, job, setup] {
    auto rows = std::make_shared<std::vector<FrontierRow>>(computeFrontier(setup->query, setup->lines));
    QMetaObject::invokeMethod(qApp, [self, job, setup, rows] {
      if (!self || !self->jobs_.isCurrent(job)) return;  // gone, or the controls changed meanwhile
      self->showRows(*setup, std::move(*rows));
    }, Qt::QueuedConnection);
  });
}

void FrontierView::finishPending() {
  if (!computing_) return;
  Setup s = setup();
  if (!s.problem.isEmpty()) return;
  jobs_.invalidate();
  showRows(s, computeFrontier(s.query, s.lines));
}

void FrontierView::showRows(const Setup& s, std::vector<FrontierRow> rows) {
  computing_ = false;
  query_ = s.query;
  rows_ = std::move(rows);
  plot_->clearGraphs();
  const int64_t cap = frontierCap(query_.vary);
  int64_t lo = cap, hi = 1;
  for (size_t r = 0; r < rows_.size(); ++r) {
    const std::string& name = rows_[r].line;
    QCPGraph* g = plot_->addGraph();
    g->setName(q(name));
    g->setProperty("row", static_cast<qulonglong>(r));
    const bool torch = name.rfind("torch", 0) == 0;
    const bool picks = torch && name.find("(picks)") != std::string::npos;
    QColor color = torch ? kernelColor(std::string_view(name).substr(name.rfind(' ') + 1)) : backendColor(name);
    QPen pen(picks ? palette().color(QPalette::WindowText) : color, picks ? 2.6 : 1.6);
    if (torch && !picks) pen.setStyle(Qt::DashLine);
    g->setPen(pen);
    g->setScatterStyle(QCPScatterStyle(picks ? QCPScatterStyle::ssDisc : QCPScatterStyle::ssCircle, pen.color(),
                                       picks ? pen.color() : palette().color(QPalette::Base), picks ? 7 : 5));
    for (const auto& p : rows_[r].points) {
      if (p.max <= 0) continue;
      g->addData(static_cast<double>(p.other), static_cast<double>(p.max));
      lo = std::min(lo, p.max);
      hi = std::max(hi, p.max);
    }
    if (g->dataCount() == 0) g->removeFromLegend();
  }
  std::vector<int64_t> xs = query_.others;
  plot_->xAxis->setTicker(sweptValueTicker(xs, true));
  const double x0 = static_cast<double>(xs.front()), x1 = static_cast<double>(xs.back());
  plot_->xAxis->setRange(x0 / 1.3, x1 * 1.3);
  plot_->yAxis->setRange(std::max(1.0, lo / 2.0), hi * 2.0);
  plot_->yAxis->setLabel(query_.vary == FrontierAxis::seq ? tr("longest seq that fits") : tr("largest batch that fits"));
  wrapLegend(plot_);
  // The workload at the first head count, the searched axis left out ("B1 H1/1 D64 fp16 dense").
  WorkloadSpec shown = withAxis(query_.spec, query_.other, query_.others.front());
  QString what = q(summary(shown));
  if (query_.vary == FrontierAxis::seq) what.remove(QRegularExpression(" L\\d+x\\d+"));
  else what.remove(QRegularExpression("^B\\d+ "));
  if (query_.spec.width > 0) what += tr(", width %1 (head_dim = %1 / heads)").arg(query_.spec.width);
  setPlotContext(plot_, tr("%1 \u00b7 %2 \u00b7 budget %3").arg(source_.name(), what, s.budget_text));
  status_->setText(tr("The longest %1 whose predicted peak fits %2, per head count: exact search over the predictions, "
                      "nothing runs (attnscope frontier --verify checks them). Hover a point for the buffer that decides it.")
                       .arg(q(std::string(toString(query_.vary))), s.budget_text));
  plot_->replot(QCustomPlot::rpQueuedReplot);
  Q_EMIT computed();
}

QString FrontierView::pointText(size_t row, int64_t other) const {
  if (row >= rows_.size()) return {};
  for (const auto& p : rows_[row].points) {
    if (p.other != other) continue;
    const QString vary = q(std::string(toString(query_.vary)));
    QString s = tr("<b>%1</b><br>heads %2: ").arg(q(rows_[row].line).toHtmlEscaped()).arg(other);
    if (p.max <= 0) return s + q(p.why).toHtmlEscaped();
    s += tr("%1 up to %2%3").arg(vary, p.unbounded ? ">= " : "", commas(p.max));
    if (!p.kernel_at_max.empty()) s += tr(" (%1)").arg(q(p.kernel_at_max));
    s += tr("<br>predicted peak there: %1").arg(q(formatBytes(p.peak_at_max)));
    if (p.max_aligned > 0) s += tr("<br>a multiple of 16 fits up to %1 (an unaligned %2 pads its mask)").arg(commas(p.max_aligned), vary);
    if (!p.unbounded && p.next > 0) {
      s += tr("<br>%1 %2 needs %3").arg(vary, commas(p.next), p.next_peak >= 0 ? q(formatBytes(p.next_peak)) : tr("a kernel that cannot run"));
      if (!p.deciding.empty()) s += tr("; deciding buffer: %1").arg(q(p.deciding).toHtmlEscaped());
    }
    return s;
  }
  return {};
}

}  // namespace attnscope::ui
