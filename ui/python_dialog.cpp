#include "ui/python_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QStandardPaths>
#include <QTimer>

namespace attnscope::ui {

PythonDialog::PythonDialog(const QString& current, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Python for torch backends"));
  path_ = new QLineEdit(current, this);
  path_->setObjectName("pythonPath");
  path_->setPlaceholderText(tr("python3"));
  auto* browse = new QPushButton(tr("Browse..."), this);
  auto* check_button = new QPushButton(tr("Check"), this);
  status_ = new QLabel(this);
  status_->setObjectName("pythonStatus");
  status_->setWordWrap(true);
  auto* row = new QHBoxLayout;
  row->addWidget(path_, 1);
  row->addWidget(browse);
  row->addWidget(check_button);
  auto* form = new QFormLayout(this);
  form->addRow(new QLabel(tr("The Python with torch that runs the torch.* backends: a path, or a name on PATH "
                             "(empty: python3).\n--python and ATTNSCOPE_PYTHON take precedence over this setting."),
                          this));
  form->addRow(tr("Python"), row);
  form->addRow(QString(), status_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Python with torch"), path_->text());
    if (!f.isEmpty()) path_->setText(f);
  });
  connect(check_button, &QPushButton::clicked, this, &PythonDialog::check);
  auto* pause = new QTimer(this);
  pause->setSingleShot(true);
  pause->setInterval(600);
  connect(path_, &QLineEdit::textChanged, pause, qOverload<>(&QTimer::start));
  connect(pause, &QTimer::timeout, this, &PythonDialog::check);
  check();
}

QString PythonDialog::python() const { return path_->text().trimmed(); }
QString PythonDialog::result() const { return result_; }
bool PythonDialog::checking() const { return probe_ != nullptr; }

void PythonDialog::check() {
  if (probe_) {  // a check of an older text: its answer no longer matters
    probe_->disconnect(this);
    probe_->kill();
    probe_->deleteLater();
    probe_ = nullptr;
  }
  const QString name = python().isEmpty() ? QStringLiteral("python3") : python();
  const QString exe = name.contains('/') ? name : QStandardPaths::findExecutable(name);
  result_.clear();
  if (exe.isEmpty()) {
    result_ = tr("not found: '%1' is not on PATH").arg(name);
    status_->setText(result_);
    Q_EMIT checked(false, result_);
    return;
  }
  status_->setText(tr("checking %1 ...").arg(exe));
  probe_ = new QProcess(this);
  probe_->setProgram(exe);
  probe_->setArguments({"-c", "import torch; print(torch.__version__, torch.version.cuda or 'CPU build')"});
  probe_->setProcessChannelMode(QProcess::MergedChannels);
  QProcess* p = probe_;
  auto finish = [this, p](bool found, const QString& line) {
    if (probe_ != p) return;
    probe_ = nullptr;
    p->deleteLater();
    result_ = line;
    status_->setText(line);
    Q_EMIT checked(found, line);
  };
  connect(p, &QProcess::errorOccurred, this, [finish, exe](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) finish(false, tr("cannot run %1").arg(exe));
  });
  connect(p, &QProcess::finished, this, [finish, p, exe](int code, QProcess::ExitStatus) {
    const QString out = QString::fromLocal8Bit(p->readAll()).trimmed();
    if (code == 0) {
      const QStringList parts = out.split(' ');
      const QString cuda = parts.value(1) == "CPU" ? tr("CPU build") : tr("CUDA %1").arg(parts.value(1));
      finish(true, tr("found torch %1 (%2) in %3").arg(parts.value(0), cuda, exe));
    } else {
      const QString last = out.split('\n').last();
      finish(false, tr("no torch in %1: %2").arg(exe, last.isEmpty() ? tr("exit %1").arg(code) : last));
    }
  });
  p->start();
}

}  // namespace attnscope::ui
