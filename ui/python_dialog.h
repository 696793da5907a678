#pragma once
// Settings > Python for torch backends: the interpreter (a path, or a name on PATH), a Browse
// button, and a check that runs it once (`import torch`) in the background and says what it
// found: "found torch 2.15.0 (CPU build) in /root/.venv/bin/python", or why not.

#include <QDialog>

class QLabel;
class QLineEdit;
class QProcess;

namespace attnscope::ui {

class PythonDialog : public QDialog {
  Q_OBJECT
 public:
  PythonDialog(const QString& current, QWidget* parent = nullptr);
  QString python() const;
  // Starts the check of the interpreter in the field (also on every edit, after a pause).
  void check();
  QString result() const;  // the last check's line; empty while it runs
  bool checking() const;

 Q_SIGNALS:
  void checked(bool found, const QString& line);

 private:
  QLineEdit* path_;
  QLabel* status_;
  QProcess* probe_ = nullptr;
  QString result_;
};

}  // namespace attnscope::ui
