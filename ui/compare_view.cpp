#include "ui/compare_view.h"

#include <set>

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "ui/compare_model.h"

namespace attnscope::ui {

CompareView::CompareView(QWidget* parent) : ChartView(parent) {
  auto* layout = new QVBoxLayout(this);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  layout->addWidget(hint_);
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
  env_model_ = new QStandardItemModel(this);
  env_table_ = new QTableView(this);
  env_table_->setObjectName("environmentTable");
  env_table_->setModel(env_model_);
  env_table_->horizontalHeader()->setStretchLastSection(true);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(env_table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  setSweeps({});
}

void CompareView::setSweeps(const SweepSnapshots& sweeps) {
  sweeps_ = sweeps;
  hint_->setText(sweeps.size() < 2
                     ? tr("Select two or more sweeps in the Runs dock and press Compare: the Memory, Time and "
                          "Heatmap tabs overlay them, and this tab lists the differences per point.")
                     : tr("Differences relative to the first sweep (red: more memory or time by 10% or more, "
                          "green: less). Environments below."));
  model_->setSweeps(sweeps);
  table_->resizeColumnsToContents();
  env_model_->clear();
  std::vector<nlohmann::json> envs;
  std::vector<std::string> keys;
  std::set<std::string> seen;
  QStringList headers;
  for (const auto& s : sweeps) {
    envs.push_back(toJson(s->environment));
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
