#include "ui/sweep_panel.h"

#include <set>

#include <algorithm>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/base/format.h"
#include "core/spec/spec_fields.h"

namespace attnscope::ui {

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout;
  name_ = new QLineEdit(this);
  name_->setObjectName("sweepName");
  name_->setPlaceholderText(tr("named after the time when empty"));
  name_->setMaxLength(static_cast<int>(kMaxSweepNameBytes));
  heads_ = new QLineEdit("1, 2, 4, 8", this);
  heads_->setObjectName("sweepHeads");
  seq_ = new QLineEdit("128, 256, 512", this);
  seq_->setObjectName("sweepSeq");
  other_ = new QLineEdit(this);
  other_->setObjectName("sweepOther");
  other_->setPlaceholderText(tr("e.g. dtype=fp32,fp16; mask=none,causal"));
  other_->setToolTip(tr("More axes as field=v1,v2 separated by ';'. Fields: %1")
                         .arg(QString::fromStdString([] {
                           std::string s;
                           for (const auto& f : specFieldNames()) s += (s.empty() ? "" : ", ") + f;
                           return s;
                         }())));
  warmup_ = new QSpinBox(this);
  warmup_->setRange(0, 100);
  warmup_->setValue(1);
  reps_ = new QSpinBox(this);
  reps_->setObjectName("sweepReps");
  reps_->setRange(1, 1000);
  reps_->setValue(3);
  budget_mib_ = new QDoubleSpinBox(this);
  budget_mib_->setObjectName("sweepBudget");
  budget_mib_->setRange(0, 1e9);
  budget_mib_->setDecimals(1);
  budget_mib_->setSuffix(" MiB");
  budget_mib_->setSpecialValueText(tr("no budget"));
  budget_mib_->setToolTip(tr("Points predicted above the budget are skipped (stored as skipped)"));
  check_ = new QComboBox(this);
  check_->setObjectName("sweepCheck");
  for (auto m : {CheckMode::automatic, CheckMode::full, CheckMode::sampled, CheckMode::off})
    check_->addItem(QString::fromUtf8(toString(m).data(), static_cast<int>(toString(m).size())), static_cast<int>(m));
  check_->setToolTip(tr("The accuracy check against the float64 reference: auto checks every row where that costs about "
                        "as much as the run, else the rows that matter and a sample; off stores the runs as not checked"));
  form->addRow(tr("name"), name_);
  form->addRow(tr("heads"), heads_);
  form->addRow(tr("seq"), seq_);
  form->addRow(tr("other axes"), other_);
  form->addRow(tr("warm-up"), warmup_);
  form->addRow(tr("repetitions"), reps_);
  form->addRow(tr("memory budget"), budget_mib_);
  form->addRow(tr("accuracy check"), check_);
  summary_ = new QLabel(this);
  summary_->setObjectName("sweepSummary");
  summary_->setWordWrap(true);
  message_ = new QLabel(this);
  message_->setObjectName("sweepMessage");
  message_->setWordWrap(true);
  message_->setStyleSheet("color: #c0392b;");
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(summary_);
  layout->addWidget(message_);
  layout->addStretch();
  for (QLineEdit* e : {name_, heads_, seq_, other_}) connect(e, &QLineEdit::textChanged, this, &SweepPanel::changed);
  connect(warmup_, &QSpinBox::valueChanged, this, &SweepPanel::changed);
  connect(reps_, &QSpinBox::valueChanged, this, &SweepPanel::changed);
  connect(budget_mib_, &QDoubleSpinBox::valueChanged, this, &SweepPanel::changed);
  connect(check_, &QComboBox::currentIndexChanged, this, &SweepPanel::changed);
}

void SweepPanel::update(const WorkloadSpec& base, const std::vector<Backend*>& backends, bool workload_invalid) {
  SweepSpec s;
  s.name = name_->text().trimmed().toStdString();
  s.base = base;
  s.warmup = warmup_->value();
  s.reps = reps_->value();
  s.memory_budget = budget_mib_->value() > 0 ? static_cast<int64_t>(budget_mib_->value() * 1024 * 1024) : -1;
  s.check = static_cast<CheckMode>(check_->currentData().toInt());
  for (Backend* b : backends) s.backends.push_back(b->id());
  QStringList problems;
  std::vector<SpecError> list_errors;
  // An empty heads or seq list means "not swept"; otherwise the grammar is the command line's.
  for (auto [field, edit] : {std::pair{"heads", heads_}, std::pair{"seq", seq_}}) {
    const std::string text = edit->text().trimmed().toStdString();
    if (text.empty()) continue;
    std::string problem;
    std::vector<std::string> values = splitAxisList(text, &problem);
    if (values.empty()) list_errors.push_back({field, text, std::string(field) + ": " + problem});
    else s.axes.push_back({field, std::move(values)});
  }
  std::vector<SpecError> other_errors;
  for (SweepAxis& axis : parseAxisAssignments(other_->text().toStdString(), &other_errors)) s.axes.push_back(std::move(axis));
  for (const auto& e : list_errors) problems << QString::fromStdString(e.message);
  for (const auto& e : other_errors) problems << tr("other axes: %1").arg(QString::fromStdString(e.message));
  if (backends.empty()) problems << tr("select at least one backend");

  std::vector<SpecError> errors;
  const std::vector<WorkloadSpec> points = s.expand(&errors);
  for (const auto& e : errors) problems << QString::fromStdString(e.message);
  // The list a problem comes from is highlighted, like an invalid field in the Workload form.
  auto bad = [&](const std::string& field) {
    return std::any_of(errors.begin(), errors.end(), [&](const SpecError& e) { return e.field == field; });
  };
  const QString highlight = QStringLiteral("background-color: #f8d0d0; color: #600;");
  auto bad_list = [&](const std::string& field) {
    return std::any_of(list_errors.begin(), list_errors.end(), [&](const SpecError& e) { return e.field == field; });
  };
  heads_->setStyleSheet(bad("heads") || bad_list("heads") ? highlight : QString());
  seq_->setStyleSheet(bad("seq") || bad("seq_q") || bad_list("seq") ? highlight : QString());
  // The other-axes list is pink only for a field it sweeps: an error in a field of the form
  // (head_dim 1000, kv_heads 3 for 8 heads) is the form's, highlighted there.
  std::set<std::string> other_fields;
  for (const SweepAxis& a : s.axes)
    if (a.field != "heads" && a.field != "seq") {
      const SpecField* f = findSpecField(a.field);
      other_fields.insert(f ? std::string(f->name) : a.field);
    }
  const bool other_bad = std::any_of(errors.begin(), errors.end(), [&](const SpecError& e) {
    const SpecField* f = findSpecField(e.field);
    return other_fields.count(f ? std::string(f->name) : e.field) > 0;
  }) || !other_errors.empty();
  other_->setStyleSheet(other_bad ? highlight : QString());

  const auto name_problem = sweepNameProblem(s.name);
  if (name_problem) problems << tr("name: the name %1").arg(QString::fromStdString(*name_problem));
  name_->setStyleSheet(name_problem ? highlight : QString());
  const bool invalid = !errors.empty() || !list_errors.empty() || !other_errors.empty() || name_problem;

  largest_peak_ = -1;
  QString largest;
  if (!invalid && !workload_invalid)
    for (const WorkloadSpec& p : points)
      for (Backend* b : backends) {
        try {
          const int64_t peak = b->plan(p).peakBytes();
          if (peak > largest_peak_) {
            largest_peak_ = peak;
            largest = QString::fromStdString(b->id() + " " + summary(p));
          }
        } catch (const std::exception&) {
          // A backend that cannot plan a point says so when it runs; the summary skips it.
        }
      }
  sweep_ = std::move(s);
  problems.removeDuplicates();  // one message per problem, not one per point it spoils
  problem_ = problems.join('\n');
  QString text = workload_invalid ? tr("no points: fix the highlighted Workload field")
                 : invalid        ? tr("invalid sweep: fix the highlighted list")
                                  : tr("%n point(s)", "", static_cast<int>(sweep_.pointCount()));
  if (largest_peak_ >= 0)
    text += tr("; largest predicted peak %1 (%2)").arg(QString::fromStdString(formatBytes(largest_peak_)), largest);
  if (sweep_.memory_budget > 0 && largest_peak_ > sweep_.memory_budget)
    text += tr("; points above the budget of %1 will be skipped")
                .arg(QString::fromStdString(formatBytes(sweep_.memory_budget)));
  summary_->setText(text);
  message_->setText(problem_);
}

namespace {

// The field table's name for an axis's field, whichever alias or option name it was given by.
std::string canonicalField(const std::string& field) {
  const SpecField* f = findSpecField(field);
  return f ? std::string(f->name) : field;
}

}  // namespace

std::vector<std::string> SweepPanel::sweptFields() const {
  std::vector<std::string> out;
  for (const auto& a : sweep_.axes) out.push_back(canonicalField(a.field));
  return out;
}

void SweepPanel::setSweep(const SweepSpec& s) {
  name_->setText(QString::fromStdString(s.name));
  heads_->clear();
  seq_->clear();
  QStringList others;
  for (const auto& a : s.axes) {
    QStringList vals;
    for (const auto& v : a.values) vals << QString::fromStdString(v);
    const std::string field = canonicalField(a.field);
    if (field == "heads") heads_->setText(vals.join(", "));
    else if (field == "seq") seq_->setText(vals.join(", "));
    else others << QString::fromStdString(a.field) + "=" + vals.join(",");
  }
  other_->setText(others.join("; "));
  warmup_->setValue(s.warmup);
  reps_->setValue(s.reps);
  budget_mib_->setValue(s.memory_budget > 0 ? static_cast<double>(s.memory_budget) / (1024.0 * 1024.0) : 0);
  check_->setCurrentIndex(std::max(0, check_->findData(static_cast<int>(s.check))));
}

void SweepPanel::setAxisText(const QString& field, const QString& values) {
  if (field == "heads") heads_->setText(values);
  else if (field == "seq") seq_->setText(values);
  else if (field == "other") other_->setText(values);
  else if (field == "name") name_->setText(values);
}

}  // namespace attnscope::ui
