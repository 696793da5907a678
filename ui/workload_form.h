#pragma once
// The Workload dock: every WorkloadSpec field, a fixed-head_dim / fixed-model-width toggle, and
// live validation through core's validate(): invalid fields are highlighted with the message.
// The rows come from the field table (core/spec/spec_fields.h): label, widget kind, allowed values,
// tooltip (the CLI help) and parser are the table's, so a new field needs no code here. The rows
// of layers, tp and tp_comm show only for kind layer (or while swept or set off their default).

#include <map>
#include <string>
#include <vector>

#include <QWidget>

#include "core/spec/sweep_spec.h"
#include "core/spec/workload_spec.h"

class QFormLayout;
class QLabel;
class QRadioButton;
class QSpinBox;

namespace attnscope::ui {

class WorkloadForm : public QWidget {
  Q_OBJECT
 public:
  explicit WorkloadForm(QWidget* parent = nullptr);

  WorkloadSpec spec() const;
  // Parse errors of the text fields plus validate(spec()); empty when valid.
  std::vector<SpecError> errors() const;
  void setSpec(const WorkloadSpec& spec);

  // The Sweep dock's axes: their fields are greyed and read "swept: 1, 2, 4, 8" (the base value
  // stays in spec() and no longer counts as an error: each swept value is checked by the sweep);
  // with heads swept the derived head_dim (or width) reads "width ÷ heads".
  void setSwept(const std::vector<SweepAxis>& axes);

  // Sets one field from text as the command line writes it (tests, settings).
  bool setFieldText(const QString& field, const QString& text);
  // The widget of a field (by name or alias), for tests.
  QWidget* fieldWidget(const std::string& field) const { return widgetFor(field); }

 Q_SIGNALS:
  void specChanged();

 private:
  void onEdited();
  void showErrors(const std::vector<SpecError>& errors);
  void showLayerFields();
  QWidget* widgetFor(const std::string& field) const;  // by name or alias
  QString textOf(const std::string& field) const;      // the widget's value as setField reads it

  std::map<std::string, QWidget*> widgets_;  // by field name
  QFormLayout* form_ = nullptr;
  QSpinBox *heads_, *head_dim_, *width_;      // the fixed head_dim / model width rule uses these
  QRadioButton *fixed_head_dim_, *fixed_width_;
  QLabel* message_;
  bool loading_ = false;
  std::vector<std::string> swept_;
  std::map<std::string, QString> swept_lists_;
};

}  // namespace attnscope::ui
