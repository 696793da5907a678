#include "ui/dispatch_view.h"

#include <cmath>
#include <limits>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

using namespace torch_dispatch;

namespace {

// Kernel -> map value and colour; the map's gradient has one level per kernel.
constexpr SdpaKernel kKernels[] = {SdpaKernel::flash, SdpaKernel::efficient, SdpaKernel::cudnn, SdpaKernel::math};
QColor indexColor(int index) {  // 4: torch raises
  return kernelColor(index >= 0 && index < 4 ? std::optional(kKernels[index]) : std::nullopt);
}
int kernelIndex(const std::optional<SdpaKernel>& k) {
  if (!k) return 4;
  for (int i = 0; i < 4; ++i)
    if (kKernels[i] == *k) return i;
  return 4;
}

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

namespace {
SweepSpec exampleGrid() {
  SweepSpec s;
  s.axes = {{"heads", {"1", "2", "4", "8", "16", "32"}}, {"seq", {"512", "1024", "2048", "4096"}}};
  return s;
}
}  // namespace

DispatchView::DispatchView(QWidget* parent)
    : ChartView(parent), source_(exampleGrid(), tr("an example grid (set up a sweep to see yours)")) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  torch_ = new QComboBox(this);
  torch_->setObjectName("dispatchTorch");
  for (const auto& v : coveredTorchVersions()) torch_->addItem(q(v.text()));
  torch_->setCurrentText(q(kNewestTorch.text()));
  gpu_ = new QComboBox(this);
  gpu_->setObjectName("dispatchGpu");
  gpu_->setEditable(true);  // any smXY or GPU name
  gpu_->setToolTip(tr("A GPU name or compute capability (sm50 .. sm121), or cpu"));
  for (const char* g : {"A100", "V100", "T4", "A10", "L4", "RTX 4090", "H100", "H200", "B200", "RTX 5090", "cpu"}) gpu_->addItem(g);
  x_ = new QComboBox(this);
  x_->setObjectName("dispatchX");
  y_ = new QComboBox(this);
  y_->setObjectName("dispatchY");
  bar->addWidget(new QLabel(tr("torch"), this));
  bar->addWidget(torch_);
  bar->addWidget(new QLabel(tr("GPU"), this));
  bar->addWidget(gpu_);
  bar->addWidget(new QLabel(tr("x"), this));
  bar->addWidget(x_);
  bar->addWidget(new QLabel(tr("y"), this));
  bar->addWidget(y_);
  bar->addStretch();
  layout->addLayout(bar);
  status_ = new QLabel(this);
  status_->setObjectName("dispatchStatus");
  status_->setWordWrap(true);
  layout->addWidget(status_);

  plot_ = makePlot(this);
  plot_->setObjectName("dispatchPlot");
  plot_->setInteractions({});
  // Titled and keyed inside the plot, so an exported chart or the report's page says what it is.
  initPlotLayout(plot_, tr("Which kernel torch's SDPA picks"));
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  for (int i = 0; i < 5; ++i) {
    QCPGraph* key = plot_->addGraph();
    key->setName(i < 4 ? QString::fromUtf8(toString(kKernels[i]).data()) : tr("raises"));
    key->setLineStyle(QCPGraph::lsNone);
    key->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, indexColor(i).darker(130), indexColor(i), 10));
    key->setProperty("kind", "key");
  }
  map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  QCPColorGradient g;
  g.clearColorStops();
  for (int i = 0; i < 5; ++i) g.setColorStopAt(i / 4.0, indexColor(i));
  g.setLevelCount(5);
  g.setNanHandling(QCPColorGradient::nhTransparent);
  map_->setGradient(g);
  map_->setDataRange(QCPRange(0, 4));
  map_->setInterpolate(false);
  layout->addWidget(plot_, 1);


  for (QComboBox* b : {torch_, x_, y_}) connect(b, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(gpu_, &QComboBox::currentTextChanged, this, [this] { rebuild(); });
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const QString t = cellText(plot_->xAxis->pixelToCoord(e->position().x()), plot_->yAxis->pixelToCoord(e->position().y()));
    if (t.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), t, plot_);
  });
  sourceChanged();
}

void DispatchView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  const bool changed = source_.setShown(sweeps_);
  // Sweeps with torch runs: predict for the release and device they ran on (the installed torch),
  // once per set of shown sweeps (when their first torch run arrives), so a choice the user makes
  // afterwards stays.
  std::vector<int64_t> ids;
  for (const auto& snap : sweeps_) ids.push_back(snap->info.id);
  if (ids != torch_defaults_for_)
    for (const auto& snap : sweeps_)
      for (const RunResult& r : snap->runs) {
        auto version = r.facts.find("torch");
        if (version == r.facts.end() || r.backend.find(".auto") == std::string::npos) continue;
        const auto v = parseTorchVersion(version->second);
        if (!v) continue;
        const QString text = q(v->text());
        if (torch_->findText(text) < 0) torch_->addItem(text);
        const QSignalBlocker bt(torch_), bg(gpu_);
        torch_->setCurrentText(text);
        auto cap = r.facts.find("torch.capability");
        gpu_->setCurrentText(r.backend.rfind("torch.cpu", 0) == 0 || cap == r.facts.end() ? QStringLiteral("cpu")
                                                                                            : q(cap->second));
        torch_defaults_for_ = ids;
        return sourceChanged();
      }
  // No torch run (yet): the device the sweep's backends ran on, so a CPU sweep is not predicted
  // for an A100.
  if (ids != torch_defaults_for_ && !sweeps_.empty() && !sweeps_.front()->spec.backends.empty()) {
    const SweepSnapshot& first = *sweeps_.front();
    bool cpu = true;
    for (const auto& b : first.spec.backends) cpu = cpu && (b.rfind("cpu.", 0) == 0 || b.rfind("torch.cpu.", 0) == 0);
    const QSignalBlocker bg(gpu_);
    if (cpu) gpu_->setCurrentText(QStringLiteral("cpu"));
    else if (!first.environment.gpus.empty()) gpu_->setCurrentText(q(first.environment.gpus.front().name));
    bool torch = false;
    for (const auto& b : first.spec.backends) torch = torch || b.rfind("torch.", 0) == 0;
    if (!torch) torch_defaults_for_ = ids;  // else its torch runs, when they come, set the release too
    if (changed) return sourceChanged();
    return rebuild();
  }
  if (changed) sourceChanged();
  else rebuild();  // new runs: what torch ran may have changed
}

std::map<std::string, DispatchView::Ran> DispatchView::ranAt(const TorchTarget& t) const {
  std::map<std::string, Ran> out;
  const std::string prefix = t.device == TorchDevice::cpu ? "torch.cpu." : "torch.cuda.";
  for (const auto& snap : sweeps_)
    for (const RunResult& r : snap->runs) {
      auto ran = r.facts.find("torch.ran");
      if (ran == r.facts.end() || r.backend.rfind(prefix, 0) != 0 || r.backend.find(".auto") == std::string::npos) continue;
      out[summary(r.spec)] = {ran->second, r.id};
    }
  return out;
}

QString DispatchView::ranIn(size_t x, size_t y) const {
  if (x >= grid_.xs.size() || y >= grid_.ys.size()) return {};
  auto it = ran_.find(grid_.at(x, y).summary);
  return it == ran_.end() ? QString() : q(it->second.kernel);
}

void DispatchView::setPlannedSweep(const SweepSpec& sweep) {
  if (source_.setPlanned(sweep)) sourceChanged();
}

void DispatchView::sourceChanged() {
  const QString keep_x = x_->currentText(), keep_y = y_->currentText();
  QSignalBlocker bx(x_), by(y_);
  x_->clear();
  y_->clear();
  for (const auto& f : gridFields(source_.spec())) {
    x_->addItem(q(f));
    y_->addItem(q(f));
  }
  x_->setCurrentText(x_->findText(keep_x) >= 0 ? keep_x : QStringLiteral("heads"));
  y_->setCurrentText(y_->findText(keep_y) >= 0 ? keep_y : QStringLiteral("seq"));
  rebuild();
}

std::optional<TorchTarget> DispatchView::target() const {
  const auto version = parseTorchVersion(torch_->currentText().toStdString());
  if (!version) return std::nullopt;
  return targetForGpu(*version, gpu_->currentText().trimmed().toStdString());
}

void DispatchView::rebuild() {
  map_->data()->clear();
  plot_->clearItems();
  const auto t = target();
  if (!t) {
    grid_ = {};
    status_->setText(tr("Unknown GPU '%1' (allowed: %2)").arg(gpu_->currentText(), q(gpuChoices())));
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  // With the release as an axis the torch box has nothing to choose.
  torch_->setEnabled(x_->currentText() != kTorchAxis && y_->currentText() != kTorchAxis);
  grid_ = dispatchGrid(source_.spec(), x_->currentText().toStdString(), y_->currentText().toStdString(), *t);
  ran_ = ranAt(*t);
  const int nx = static_cast<int>(grid_.xs.size()), ny = static_cast<int>(grid_.ys.size());
  map_->data()->setSize(nx, ny);
  map_->data()->setRange(QCPRange(0, std::max(0, nx - 1)), QCPRange(0, std::max(0, ny - 1)));
  const bool labels = nx * ny <= 120;
  for (int x = 0; x < nx; ++x)
    for (int y = 0; y < ny; ++y) {
      const DispatchCell& c = grid_.at(static_cast<size_t>(x), static_cast<size_t>(y));
      const bool valid = c.invalid.empty();
      map_->data()->setCell(x, y, valid ? kernelIndex(c.kernel) : std::numeric_limits<double>::quiet_NaN());
      if (!labels || !valid) continue;
      auto* text = new QCPItemText(plot_);
      text->position->setCoords(x, y);
      QString label = c.kernel ? QString::fromUtf8(toString(*c.kernel).data()) + "\n" + q(formatBytes(c.peak_bytes)) : tr("raises");
      // Beside the prediction, what torch really ran there (a shown run of this point).
      if (auto ran = ran_.find(c.summary); ran != ran_.end()) {
        const bool same = c.kernel && ran->second.kernel == toString(*c.kernel);
        label += "\n" + tr("ran %1%2").arg(q(ran->second.kernel), same ? QStringLiteral(" \u2713") : QStringLiteral(" \u2717"));
      }
      text->setText(label);
      text->setColor(Qt::white);
      text->setClipToAxisRect(true);
    }
  auto ticks = [](const std::vector<std::string>& v) {
    auto tk = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t i = 0; i < v.size(); ++i) tk->addTick(static_cast<double>(i), q(v[i]));
    return tk;
  };
  plot_->xAxis->setTicker(ticks(grid_.xs));
  plot_->yAxis->setTicker(ticks(grid_.ys));
  plot_->xAxis->setLabel(x_->currentText());
  plot_->yAxis->setLabel(y_->currentText() == x_->currentText() ? QString() : y_->currentText());
  plot_->xAxis->setRange(-0.5, std::max(0.5, nx - 0.5));
  plot_->yAxis->setRange(-0.5, std::max(0.5, ny - 0.5));
  setPlotContext(plot_, tr("predicted for %1 \u00b7 %2").arg(source_.name(), q(t->describe())));
  status_->setText(tr("What torch's scaled_dot_product_attention would pick for %1 on %2 (predicted; hover a cell for "
                      "the rules).%3")
                       .arg(source_.name(), q(t->describe()),
                            grid_.truncated ? tr(" Only the first %1 x %2 values are shown.").arg(nx).arg(ny) : QString()));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString DispatchView::cellText(double xc, double yc) const {
  const long x = std::lround(xc), y = std::lround(yc);
  if (x < 0 || y < 0 || x >= static_cast<long>(grid_.xs.size()) || y >= static_cast<long>(grid_.ys.size())) return {};
  const DispatchCell& c = grid_.at(static_cast<size_t>(x), static_cast<size_t>(y));
  const QString where = q(grid_.x_field) + " " + q(c.x_value) + (c.y_value.empty() ? QString() : ", " + q(grid_.y_field) + " " + q(c.y_value));
  if (!c.invalid.empty()) return tr("%1: not a valid workload: %2").arg(where, q(c.invalid).toHtmlEscaped());
  QString s = tr("<b>%1</b><br>%2").arg(q(c.headline).toHtmlEscaped(), q(c.summary).toHtmlEscaped());
  if (c.kernel)
    s += tr("<br>predicted peak: %1 (%2 allocated by the call)").arg(q(formatBytes(c.peak_bytes)), q(formatBytes(c.extra_bytes)));
  for (const auto& r : c.rejections) s += "<br>&#10007; " + q(r).toHtmlEscaped();
  if (auto ran = ran_.find(c.summary); ran != ran_.end()) {
    const bool same = c.kernel && ran->second.kernel == toString(*c.kernel);
    s += tr("<br><b>torch ran %1</b> in R%2%3")
             .arg(q(ran->second.kernel).toHtmlEscaped())
             .arg(ran->second.run_id)
             .arg(same ? tr(", as predicted") : tr(": NOT what is predicted (a defect in AttnScope's rules)"));
  }
  return s;
}

}  // namespace attnscope::ui
