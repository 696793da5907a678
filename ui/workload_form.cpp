#include "ui/workload_form.h"

#include <map>

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

#include "core/spec/spec_fields.h"

namespace attnscope::ui {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

// A count field that, while the Sweep dock sweeps it, reads "swept: 1, 2, 4, 8" (the list, not the
// base value the form keeps); greyed like any disabled field.
class SweptSpinBox : public QSpinBox {
 public:
  using QSpinBox::QSpinBox;
  void setSweptText(const QString& text) {
    if (text == swept_) return;
    swept_ = text;
    setPrefix(prefix());  // makes the box show its text again
    lineEdit()->setText(textFromValue(value()));
    lineEdit()->setCursorPosition(0);  // its start, if it is wider than the box
  }

 protected:
  QString textFromValue(int value) const override {
    return swept_.isEmpty() ? QSpinBox::textFromValue(value) : swept_;
  }

 private:
  QString swept_;
};

// One widget of the kind the table names, with its allowed values and the CLI help as tooltip.
QWidget* makeWidget(const SpecField& f, QWidget* parent) {
  QWidget* w = nullptr;
  switch (f.widget) {
    case FieldWidget::count: {
      auto* s = new SweptSpinBox(parent);
      s->setRange(0, 1 << 30);  // 0 and other invalid values stay typeable and are explained
      s->setAccelerated(true);
      if (!f.zero_text.empty()) s->setSpecialValueText(qs(f.zero_text));
      w = s;
      break;
    }
    case FieldWidget::choice:
    case FieldWidget::open_choice: {
      auto* c = new QComboBox(parent);
      c->setEditable(f.widget == FieldWidget::open_choice);
      // A choice's zero_text is a first item standing for the empty text, the default
      // ("same as dtype" for mask_dtype); its item data is that empty text.
      if (f.widget == FieldWidget::choice && !f.zero_text.empty()) c->addItem(qs(f.zero_text), QString(""));
      for (std::string_view v : f.choices) c->addItem(qs(v), qs(v));
      w = c;
      break;
    }
    case FieldWidget::number_text: {
      auto* e = new QLineEdit(parent);
      // The help's "(default ...)" part fits the box ("default 1/sqrt(head_dim)"); the whole
      // help line is the tooltip.
      const QString help = qs(f.help);
      const qsizetype at = help.indexOf(QLatin1String("(default "));
      e->setPlaceholderText(at >= 0 && help.endsWith(')') ? help.mid(at + 1, help.size() - at - 2) : help);
      w = e;
      break;
    }
  }
  w->setObjectName(qs(f.name));
  w->setToolTip(qs(f.help));
  return w;
}

void setWidgetText(QWidget* w, const QString& text) {
  if (auto* s = qobject_cast<QSpinBox*>(w)) {
    bool ok = false;
    const int v = text.toInt(&ok);
    if (ok) s->setValue(v);
  } else if (auto* c = qobject_cast<QComboBox*>(w)) {
    // A fixed choice is found by its text as the parser reads it (the item data), so the empty
    // text selects the zero_text item.
    const int at = c->isEditable() ? -1 : c->findData(text);
    if (at >= 0) c->setCurrentIndex(at);
    else c->setCurrentText(text);
  } else if (auto* e = qobject_cast<QLineEdit*>(w)) {
    e->setText(text);
  }
}

}  // namespace

WorkloadForm::WorkloadForm(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout;
  form_ = form;
  form->setVerticalSpacing(3);  // twenty rows: compact enough to fit a laptop screen unscrolled
  fixed_head_dim_ = new QRadioButton(tr("fixed head_dim"), this);
  fixed_width_ = new QRadioButton(tr("fixed model width"), this);
  fixed_head_dim_->setObjectName("fixedHeadDim");
  fixed_width_->setObjectName("fixedWidth");
  fixed_head_dim_->setChecked(true);
  fixed_width_->setToolTip(tr("head_dim = width / heads, the way the classic report sweeps heads"));
  auto* group = new QButtonGroup(this);
  group->addButton(fixed_head_dim_);
  group->addButton(fixed_width_);
  auto* dim_mode = new QHBoxLayout;
  dim_mode->addWidget(fixed_head_dim_);
  dim_mode->addWidget(fixed_width_);

  const WorkloadSpec defaults;
  for (const SpecField& f : specFields()) {
    QWidget* w = makeWidget(f, this);
    widgets_[std::string(f.name)] = w;
    setWidgetText(w, qs(f.format(defaults)));
    if (f.name == "head_dim") form->addRow(dim_mode);  // the toggle picks head_dim or width
    form->addRow(qs(f.label), w);
    if (auto* s = qobject_cast<QSpinBox*>(w)) connect(s, &QSpinBox::valueChanged, this, &WorkloadForm::onEdited);
    else if (auto* c = qobject_cast<QComboBox*>(w)) connect(c, &QComboBox::currentTextChanged, this, &WorkloadForm::onEdited);
    else if (auto* e = qobject_cast<QLineEdit*>(w)) connect(e, &QLineEdit::textChanged, this, &WorkloadForm::onEdited);
  }
  heads_ = qobject_cast<QSpinBox*>(widgetFor("heads"));
  head_dim_ = qobject_cast<QSpinBox*>(widgetFor("head_dim"));
  width_ = qobject_cast<QSpinBox*>(widgetFor("width"));
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
  connect(fixed_width_, &QRadioButton::toggled, this, &WorkloadForm::onEdited);
  onEdited();
}

QString WorkloadForm::textOf(const std::string& field) const {
  QWidget* w = widgetFor(field);
  if (auto* s = qobject_cast<QSpinBox*>(w)) return QString::number(s->value());
  if (auto* c = qobject_cast<QComboBox*>(w)) {
    if (!c->isEditable() && c->currentData().isValid()) return c->currentData().toString();
    return c->currentText().trimmed();
  }
  if (auto* e = qobject_cast<QLineEdit*>(w)) return e->text().trimmed();
  return {};
}

WorkloadSpec WorkloadForm::spec() const {
  // Every field through core's parser, in table order (head_dim, which un-fixes the width, before
  // width); a bad value leaves the default and shows in errors().
  WorkloadSpec s;
  for (const SpecField& f : specFields()) {
    if (f.name == "width" && !fixed_width_->isChecked()) continue;
    setField(s, f.name, textOf(std::string(f.name)).toStdString());
  }
  return s;
}

std::vector<SpecError> WorkloadForm::errors() const {
  std::vector<SpecError> errs;
  for (const SpecField& f : specFields()) {
    WorkloadSpec probe;
    if (auto e = setField(probe, f.name, textOf(std::string(f.name)).toStdString())) errs.push_back(*e);
  }
  if (fixed_width_->isChecked() && width_->value() == 0)
    errs.push_back({"width", "0", "width must be >= 1 when the model width is fixed (got 0)"});
  for (auto& e : validate(spec())) errs.push_back(std::move(e));
  std::erase_if(errs, [this](const SpecError& e) {
    const SpecField* f = findSpecField(e.field);
    return std::find(swept_.begin(), swept_.end(), f ? std::string(f->name) : e.field) != swept_.end();
  });
  return errs;
}

void WorkloadForm::setSwept(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> names;  // the Sweep dock may name a field by an alias ("kv-heads")
  std::map<std::string, QString> lists;
  for (const auto& a : axes) {
    const SpecField* f = findSpecField(a.field);
    names.push_back(f ? std::string(f->name) : a.field);
    QStringList values;
    for (const auto& v : a.values) values << qs(v);
    lists[names.back()] = tr("swept: %1").arg(values.join(", "));
  }
  // What width / heads or heads x head_dim makes of a swept heads: the derived field says so.
  if (lists.count("heads")) {
    const bool fixed_width = fixed_width_->isChecked();
    lists[fixed_width ? "head_dim" : "width"] =
        fixed_width ? tr("width \u00f7 heads") : tr("heads \u00d7 head_dim");
  }
  if (names == swept_ && lists == swept_lists_) return;
  swept_ = std::move(names);
  swept_lists_ = lists;
  for (const SpecField& f : specFields()) {
    QWidget* w = widgetFor(std::string(f.name));
    auto list = lists.find(std::string(f.name));
    if (auto* spin = dynamic_cast<SweptSpinBox*>(w)) spin->setSweptText(list == lists.end() ? QString() : list->second);
    if (f.name == "head_dim" || f.name == "width") continue;  // their toggle decides
    const bool swept = std::find(swept_.begin(), swept_.end(), f.name) != swept_.end();
    w->setEnabled(!swept);
    w->setToolTip(swept ? tr("swept: the list in the Sweep dock gives the values") : qs(f.help));
  }
  showLayerFields();
  if (!loading_) showErrors(errors());
}

void WorkloadForm::showLayerFields() {
  // A stack's depth and tensor parallelism mean something only for kind layer: their rows are
  // shown then (and whenever they are swept or set, so nothing set is hidden), which keeps an
  // attention workload's form within a laptop screen's height.
  const bool layer = textOf("kind") == QLatin1String("layer");
  const WorkloadSpec defaults;
  for (const char* name : {"layers", "tp", "tp_comm"}) {
    const SpecField* f = findSpecField(name);
    QWidget* w = widgetFor(name);
    if (!f || !w) continue;
    const bool swept = std::find(swept_.begin(), swept_.end(), f->name) != swept_.end();
    const bool set = textOf(name) != qs(f->format(defaults));
    form_->setRowVisible(w, layer || swept || set);
  }
}

void WorkloadForm::setSpec(const WorkloadSpec& s) {
  loading_ = true;
  for (const SpecField& f : specFields()) {
    if (f.name == "width" && s.width == 0) continue;  // keeps the last fixed width for the toggle
    setWidgetText(widgetFor(std::string(f.name)), qs(f.format(s)));
  }
  (s.width > 0 ? fixed_width_ : fixed_head_dim_)->setChecked(true);
  loading_ = false;
  onEdited();
}

bool WorkloadForm::setFieldText(const QString& field, const QString& text) {
  const SpecField* f = findSpecField(field.toStdString());
  if (!f) return false;
  QWidget* w = widgetFor(std::string(f->name));
  if (qobject_cast<QSpinBox*>(w)) {
    bool ok = false;
    text.toInt(&ok);
    if (!ok) return false;
    if (f->name == "width") fixed_width_->setChecked(true);
    if (f->name == "head_dim") fixed_head_dim_->setChecked(true);
  }
  setWidgetText(w, text);
  return true;
}

QWidget* WorkloadForm::widgetFor(const std::string& field) const {
  const SpecField* f = findSpecField(field);
  if (!f) return nullptr;
  auto it = widgets_.find(std::string(f->name));
  return it == widgets_.end() ? nullptr : it->second;
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
  showLayerFields();
  if (loading_) return;
  showErrors(errors());
  Q_EMIT specChanged();
}

void WorkloadForm::showErrors(const std::vector<SpecError>& errs) {
  for (const SpecField& f : specFields()) {
    QWidget* w = widgetFor(std::string(f.name));
    w->setStyleSheet({});
    const bool swept = std::find(swept_.begin(), swept_.end(), f.name) != swept_.end();
    if (!swept) w->setToolTip(qs(f.help));
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
