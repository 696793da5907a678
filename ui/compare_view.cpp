#include "ui/compare_view.h"

#include <QHBoxLayout>

#include <QComboBox>

#include <algorithm>
#include <set>

#include <QScrollBar>
#include <qcustomplot.h>

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "ui/chart_context.h"
#include "ui/compare_model.h"
#include "ui/plot_layout.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

CompareView::CompareView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  auto* top = new QHBoxLayout;
  top->addWidget(hint_, 1);
  top->addWidget(new QLabel(tr("baseline (A):"), this));
  baseline_ = new QComboBox(this);
  baseline_->setObjectName("compareBaseline");
  baseline_->setToolTip(tr("Every ratio is B / A against this sweep"));
  top->addWidget(baseline_);
  layout->addLayout(top);
  connect(baseline_, &QComboBox::currentIndexChanged, this, [this] { setSweeps(shown_); });
  model_ = new CompareModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(CompareModel::RawRole);
  table_ = new QTableView(this);
  table_->setObjectName("compareTable");
  table_->setModel(proxy);
  table_->setSortingEnabled(true);
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);
  // The Point column in a view of its own that scrolls vertically with the table but never
  // sideways, so a row stays readable however many sweeps' columns there are.
  point_table_ = new QTableView(this);
  point_table_->setObjectName("comparePointTable");
  point_table_->setModel(proxy);
  point_table_->setSelectionModel(table_->selectionModel());
  point_table_->setSortingEnabled(true);
  point_table_->verticalHeader()->hide();
  point_table_->setAlternatingRowColors(true);
  point_table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  point_table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);  // same height as the table's
  point_table_->horizontalHeader()->setStretchLastSection(true);
  table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  connect(table_->verticalScrollBar(), &QScrollBar::valueChanged, point_table_->verticalScrollBar(), &QScrollBar::setValue);
  connect(point_table_->verticalScrollBar(), &QScrollBar::valueChanged, table_->verticalScrollBar(), &QScrollBar::setValue);
  proxy->sort(0, Qt::AscendingOrder);
  auto* tables = new QSplitter(Qt::Horizontal, this);
  tables->addWidget(point_table_);
  tables->addWidget(table_);
  tables->setStretchFactor(1, 1);
  ratio_plot_ = makePlot(this);
  ratio_plot_->setObjectName("compareRatioPlot");
  initPlotLayout(ratio_plot_, tr("B / A per point"));
  ratio_plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  ratio_plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  ratio_plot_->yAxis->setLabel(tr("ratio to the baseline (log)"));
  ratio_plot_->legend->setVisible(true);
  ratio_plot_->legend->setFont(QFont(font().family(), 8));
  env_model_ = new QStandardItemModel(this);
  env_table_ = new QTableView(this);
  env_table_->setObjectName("environmentTable");
  env_table_->setModel(env_model_);
  env_table_->horizontalHeader()->setStretchLastSection(true);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(ratio_plot_);
  split->addWidget(tables);
  split->addWidget(env_table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 1);
  layout->addWidget(split, 1);
  setSweeps({});
}

void CompareView::setSweeps(const SweepSnapshots& shown) {
  // The baseline (A) the user chose leads; the others follow in their order.
  {
    const QSignalBlocker block(baseline_);
    const qint64 keep = baseline_->currentData().toLongLong();
    baseline_->clear();
    for (const auto& s : shown)
      baseline_->addItem(QStringLiteral("S%1 %2").arg(s->info.id).arg(QString::fromStdString(s->info.name)),
                         QVariant::fromValue<qlonglong>(s->info.id));
    const int at = baseline_->findData(QVariant::fromValue<qlonglong>(keep));
    baseline_->setCurrentIndex(at >= 0 ? at : 0);
    baseline_->setEnabled(shown.size() >= 2);
  }
  shown_ = shown;
  SweepSnapshots sweeps = shown;
  const qint64 base = baseline_->currentData().toLongLong();
  std::stable_partition(sweeps.begin(), sweeps.end(), [base](const SweepSnapshotPtr& s) { return s->info.id == base; });
  sweeps_ = sweeps;
  hint_->setText(sweeps.size() < 2
                     ? tr("Select two or more sweeps in the Runs dock and press Compare: the Memory, Time and "
                          "Heatmap tabs overlay them, and this tab lists the differences per point.")
                     : tr("Ratios B/A and differences B \u2212 A against the baseline, paired on the backend and the swept fields "
                          "(red: 10% or more memory or time, green: 10% or less). Environments below."));
  model_->setSweeps(sweeps);
  for (int c = 0; c < model_->columnCount(); ++c) {
    point_table_->setColumnHidden(c, c != 0);
    table_->setColumnHidden(c, c == 0);
  }
  table_->resizeColumnsToContents();
  point_table_->resizeColumnToContents(0);
  point_table_->setMinimumWidth(std::min(point_table_->columnWidth(0) + 8, 260));
  ratio_plot_->setVisible(sweeps.size() >= 2);
  rebuildRatioPlot();
  env_model_->clear();
  std::vector<nlohmann::json> envs;
  std::vector<std::string> keys;
  std::set<std::string> seen;
  QStringList headers;
  for (const auto& s : sweeps) {
    envs.push_back(toJson(s->environment));
    // The torch a sweep's torch runs saw is stored with the runs (core's torchEnvironment, the
    // table `attnscope compare` prints): rows of its own under the machine's.
    for (const auto& [k, v] : torchEnvironment(s->runs)) envs.back()["torch run: " + k] = v;
    headers << QString::fromStdString(s->info.name);
    for (const auto& [k, v] : envs.back().items())
      if (seen.insert(k).second) keys.push_back(k);
  }
  env_model_->setColumnCount(static_cast<int>(sweeps.size()));
  env_model_->setHorizontalHeaderLabels(headers);
  for (const auto& k : keys) {
    QList<QStandardItem*> row;
    std::set<std::string> values;
    for (const auto& e : envs) {
      const std::string v = e.contains(k) ? (e[k].is_string() ? e[k].get<std::string>() : e[k].dump()) : "";
      values.insert(v);
      row << new QStandardItem(QString::fromStdString(v));
    }
    if (values.size() > 1)  // fields that differ stand out
      for (auto* item : row) item->setBackground(QColor(0xed, 0xc9, 0x48, 90));
    env_model_->appendRow(row);
    env_model_->setVerticalHeaderItem(env_model_->rowCount() - 1, new QStandardItem(QString::fromStdString(k)));
  }
}

}  // namespace attnscope::ui

namespace attnscope::ui {

QList<QCustomPlot*> CompareView::plots() const {
  if (sweeps_.size() < 2) return {};
  return {ratio_plot_};
}

void CompareView::rebuildRatioPlot() {
  ratio_plot_->clearGraphs();
  setPlotContext(ratio_plot_, QString::fromStdString(chartContext(sweeps_)));
  const SweepComparison& c = model_->comparison();
  // x: the distinct keys (without the backend) in point order; one series per backend and
  // metric for each sweep after the first.
  std::vector<std::string> keys;
  auto keyText = [](const ComparedPoint& p) {
    std::string k;
    for (const auto& v : p.key) {
      if (!k.empty()) k += ' ';
      k.append(v.field).append("=").append(v.text);
    }
    return k.empty() ? std::string("run") : k;
  };
  for (const auto& p : c.points)
    if (std::find(keys.begin(), keys.end(), keyText(p)) == keys.end()) keys.push_back(keyText(p));
  std::vector<std::string> backends;
  for (const auto& p : c.points)
    if (std::find(backends.begin(), backends.end(), p.backend) == backends.end()) backends.push_back(p.backend);
  double lo = 1, hi = 1;
  static const QCPScatterStyle::ScatterShape shapes[] = {QCPScatterStyle::ssDisc, QCPScatterStyle::ssSquare,
                                                         QCPScatterStyle::ssTriangle, QCPScatterStyle::ssDiamond};
  for (size_t other = 1; other < sweeps_.size(); ++other)
    for (const auto& backend : backends)
      for (int metric = 0; metric < 2; ++metric) {
        QVector<double> xs, ys;
        for (const auto& p : c.points) {
          if (p.backend != backend) continue;
          const auto r = metric == 0 ? peakRatio(p, 0, other) : timeRatio(p, 0, other);
          if (!r || !(*r > 0)) continue;
          xs << static_cast<double>(std::find(keys.begin(), keys.end(), keyText(p)) - keys.begin());
          ys << *r;
          lo = std::min(lo, *r);
          hi = std::max(hi, *r);
        }
        QCPGraph* g = ratio_plot_->addGraph();
        const QColor color = backendColor(backend);
        g->setPen(QPen(color, 2, metric == 0 ? Qt::SolidLine : Qt::DashLine));
        g->setScatterStyle(QCPScatterStyle(shapes[(other - 1) % 4], color, metric == 0 ? color : QColor(Qt::white), 7));
        g->setName(QString::fromStdString(backend) + (metric == 0 ? tr(" peak ") : tr(" time ")) +
                   QString::fromStdString(sweeps_[other]->info.name) + " / " +
                   QString::fromStdString(sweeps_[0]->info.name));
        g->setData(xs, ys);
        g->setLineStyle(QCPGraph::lsNone);  // the points are different workloads: nothing between them
      }
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t i = 0; i < keys.size(); ++i) ticker->addTick(static_cast<double>(i), QString::fromStdString(keys[i]));
  ratio_plot_->xAxis->setTicker(ticker);
  ratio_plot_->xAxis->setTickLabelRotation(keys.size() > 6 ? 30 : 0);
  ratio_plot_->xAxis->setRange(-0.5, std::max<double>(0.5, static_cast<double>(keys.size()) - 0.5));
  ratio_plot_->yAxis->setRange(lo / 1.5, hi * 1.5);
  // The line at 1: no change.
  QCPGraph* one = ratio_plot_->addGraph();
  one->setPen(QPen(QColor(0x80, 0x80, 0x80), 1, Qt::DotLine));
  one->setData(QVector<double>{-0.5, std::max<double>(0.5, static_cast<double>(keys.size()) - 0.5)}, QVector<double>{1, 1});
  one->setName(tr("1\u00d7: no change"));
  wrapLegend(ratio_plot_);
  ratio_plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::ui
