#include "ui/workload_form.h"

#include <algorithm>

#include <QButtonGroup>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace attnscope::ui {

namespace {

QSpinBox* spin(QWidget* parent, const char* name, int min, int value, const QString& special = {}) {
  auto* s = new QSpinBox(parent);
  s->setObjectName(name);
  s->setRange(min, 1 << 30);
  s->setValue(value);
  s->setAccelerated(true);
  if (!special.isEmpty()) s->setSpecialValueText(special);
  return s;
}

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

}  // namespace

WorkloadForm::WorkloadForm(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout;
  batch_ = spin(this, "batch", 0, 1);
  heads_ = spin(this, "heads", 0, 8);
  kv_heads_ = spin(this, "kv_heads", 0, 0, tr("same as heads"));
  seq_ = spin(this, "seq", 0, 1024);
  seq_kv_ = spin(this, "seq_kv", 0, 0, tr("same as seq"));
  head_dim_ = spin(this, "head_dim", 0, 64);
  width_ = spin(this, "width", 0, 512);
  seed_ = spin(this, "seed", 0, 0);
  fixed_head_dim_ = new QRadioButton(tr("fixed head_dim"), this);
  fixed_width_ = new QRadioButton(tr("fixed model width"), this);
  fixed_head_dim_->setObjectName("fixedHeadDim");
  fixed_width_->setObjectName("fixedWidth");
  fixed_head_dim_->setChecked(true);
  fixed_width_->setToolTip(tr("head_dim = width / heads, the way the classic report sweeps heads"));
  auto* group = new QButtonGroup(this);
  group->addButton(fixed_head_dim_);
  group->addButton(fixed_width_);
  dtype_ = new QComboBox(this);
  dtype_->setObjectName("dtype");
  dtype_->addItems({"fp32", "fp16", "bf16"});
  mask_ = new QComboBox(this);
  mask_->setObjectName("mask");
  mask_->setEditable(true);
  mask_->addItems({"none", "causal", "window:256", "block:128", "dense", "dense:0.5"});
  mask_->setToolTip(tr("one of: %1").arg(qs(kMaskChoices)));
  mask_layout_ = new QComboBox(this);
  mask_layout_->setObjectName("mask_layout");
  mask_layout_->addItems({"broadcast", "per_head"});
  scale_ = new QLineEdit(this);
  scale_->setObjectName("scale");
  scale_->setPlaceholderText(tr("default: 1/sqrt(head_dim)"));

  auto* dim_mode = new QHBoxLayout;
  dim_mode->addWidget(fixed_head_dim_);
  dim_mode->addWidget(fixed_width_);
  form->addRow(tr("batch"), batch_);
  form->addRow(tr("heads"), heads_);
  form->addRow(tr("kv_heads"), kv_heads_);
  form->addRow(tr("seq"), seq_);
  form->addRow(tr("seq_kv"), seq_kv_);
  form->addRow(dim_mode);
  form->addRow(tr("head_dim"), head_dim_);
  form->addRow(tr("width"), width_);
  form->addRow(tr("dtype"), dtype_);
  form->addRow(tr("mask"), mask_);
  form->addRow(tr("mask layout"), mask_layout_);
  form->addRow(tr("scale"), scale_);
  form->addRow(tr("seed"), seed_);
  message_ = new QLabel(this);
  message_->setObjectName("workloadMessage");
  message_->setWordWrap(true);
  // Ignored width: the message wraps to the dock's width instead of widening the form past it.
  message_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::MinimumExpanding);
  message_->setStyleSheet("color: #c0392b;");
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(message_);
  layout->addStretch();

  for (QSpinBox* s : {batch_, heads_, kv_heads_, seq_, seq_kv_, head_dim_, width_, seed_})
    connect(s, &QSpinBox::valueChanged, this, &WorkloadForm::onEdited);
  for (QComboBox* c : {dtype_, mask_layout_}) connect(c, &QComboBox::currentIndexChanged, this, &WorkloadForm::onEdited);
  connect(mask_, &QComboBox::currentTextChanged, this, &WorkloadForm::onEdited);
  connect(scale_, &QLineEdit::textChanged, this, &WorkloadForm::onEdited);
  connect(fixed_width_, &QRadioButton::toggled, this, &WorkloadForm::onEdited);
  onEdited();
}

WorkloadSpec WorkloadForm::spec() const {
  WorkloadSpec s;
  s.batch = batch_->value();
  s.heads = heads_->value();
  s.kv_heads = kv_heads_->value();
  s.seq_q = seq_->value();
  s.seq_kv = seq_kv_->value();
  s.head_dim = head_dim_->value();
  s.width = fixed_width_->isChecked() ? width_->value() : 0;
  s.seed = static_cast<uint64_t>(seed_->value());
  // Text fields go through core's parsers; a bad value leaves the default and shows in errors().
  setField(s, "dtype", dtype_->currentText().toStdString());
  setField(s, "mask", mask_->currentText().trimmed().toStdString());
  setField(s, "mask_layout", mask_layout_->currentText().toStdString());
  setField(s, "scale", scale_->text().trimmed().toStdString());
  return s;
}

std::vector<SpecError> WorkloadForm::errors() const {
  std::vector<SpecError> errs;
  WorkloadSpec probe;
  if (auto e = setField(probe, "mask", mask_->currentText().trimmed().toStdString())) errs.push_back(*e);
  if (auto e = setField(probe, "scale", scale_->text().trimmed().toStdString())) errs.push_back(*e);
  if (fixed_width_->isChecked() && width_->value() == 0)
    errs.push_back({"width", "0", "width must be >= 1 when the model width is fixed (got 0)"});
  for (auto& e : validate(spec())) errs.push_back(std::move(e));
  std::erase_if(errs, [this](const SpecError& e) {
    return std::find(swept_.begin(), swept_.end(), e.field == "seq_q" ? "seq" : e.field) != swept_.end();
  });
  return errs;
}

void WorkloadForm::setSwept(const std::vector<std::string>& fields) {
  if (fields == swept_) return;
  swept_ = fields;
  for (const auto& name : specFieldNames()) {
    auto* spin = qobject_cast<QSpinBox*>(widgetFor(name));
    if (!spin || name == "head_dim" || name == "width") continue;  // their toggle decides
    const bool swept = std::find(swept_.begin(), swept_.end(), name) != swept_.end();
    spin->setEnabled(!swept);
    spin->setPrefix(swept ? tr("swept \u2192 ") : QString());
    spin->setToolTip(swept ? tr("swept: the list in the Sweep dock gives the values") : QString());
  }
  if (!loading_) showErrors(errors());
}

void WorkloadForm::setSpec(const WorkloadSpec& s) {
  loading_ = true;
  batch_->setValue(static_cast<int>(s.batch));
  heads_->setValue(static_cast<int>(s.heads));
  kv_heads_->setValue(static_cast<int>(s.kv_heads));
  seq_->setValue(static_cast<int>(s.seq_q));
  seq_kv_->setValue(static_cast<int>(s.seq_kv));
  head_dim_->setValue(static_cast<int>(s.head_dim));
  if (s.width > 0) width_->setValue(static_cast<int>(s.width));
  (s.width > 0 ? fixed_width_ : fixed_head_dim_)->setChecked(true);
  seed_->setValue(static_cast<int>(s.seed));
  dtype_->setCurrentText(qs(toString(s.dtype)));
  mask_->setCurrentText(QString::fromStdString(toString(s.mask)));
  mask_layout_->setCurrentText(qs(toString(s.mask_layout)));
  scale_->setText(s.scale ? QString::number(*s.scale, 'g', 10) : QString());
  loading_ = false;
  onEdited();
}

bool WorkloadForm::setFieldText(const QString& field, const QString& text) {
  const std::string f = field.toStdString();
  if (f == "mask") mask_->setCurrentText(text);
  else if (f == "scale") scale_->setText(text);
  else if (f == "dtype") dtype_->setCurrentText(text);
  else if (f == "mask_layout") mask_layout_->setCurrentText(text);
  else if (auto* s = qobject_cast<QSpinBox*>(widgetFor(f))) {
    if (f == "width") fixed_width_->setChecked(true);
    if (f == "head_dim") fixed_head_dim_->setChecked(true);
    bool ok = false;
    const int v = text.toInt(&ok);
    if (!ok) return false;
    s->setValue(v);
  } else {
    return false;
  }
  return true;
}

QWidget* WorkloadForm::widgetFor(const std::string& f) const {
  if (f == "batch") return batch_;
  if (f == "heads") return heads_;
  if (f == "kv_heads") return kv_heads_;
  if (f == "seq") return seq_;
  if (f == "seq_kv") return seq_kv_;
  if (f == "head_dim") return head_dim_;
  if (f == "width") return width_;
  if (f == "dtype") return dtype_;
  if (f == "mask") return mask_;
  if (f == "mask_layout") return mask_layout_;
  if (f == "scale") return scale_;
  if (f == "seed") return seed_;
  return nullptr;
}

void WorkloadForm::onEdited() {
  head_dim_->setEnabled(!fixed_width_->isChecked());
  width_->setEnabled(fixed_width_->isChecked());
  // The greyed field shows what the other two imply, so it is never stale: head_dim = width /
  // heads with the width fixed, width = heads x head_dim otherwise.
  if (fixed_width_->isChecked()) {
    const QSignalBlocker block(head_dim_);
    if (heads_->value() > 0) head_dim_->setValue(width_->value() / heads_->value());
  } else {
    const QSignalBlocker block(width_);
    width_->setValue(heads_->value() * head_dim_->value());
  }
  if (loading_) return;
  showErrors(errors());
  Q_EMIT specChanged();
}

void WorkloadForm::showErrors(const std::vector<SpecError>& errs) {
  for (const auto& name : specFieldNames())
    if (QWidget* w = widgetFor(name)) {
      w->setStyleSheet({});
      w->setToolTip({});
    }
  QStringList lines;
  for (const auto& e : errs) {
    lines << QString::fromStdString(e.message);
    if (QWidget* w = widgetFor(e.field)) {
      w->setStyleSheet("background-color: #f8d0d0; color: #600;");
      w->setToolTip(QString::fromStdString(e.message));
    }
  }
  message_->setText(lines.join('\n'));
}

}  // namespace attnscope::ui
