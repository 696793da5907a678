#include "ui/run_chooser.h"

#include <QSignalBlocker>

namespace attnscope::ui {

qlonglong fillRunChooser(QComboBox* box, const SweepSnapshots& sweeps, bool ok_only) {
  const qlonglong keep = box->currentData().toLongLong();
  QSignalBlocker block(box);
  box->clear();
  for (const auto& s : sweeps)
    for (const RunResult& r : s->runs) {
      if (ok_only && r.status != RunStatus::ok) continue;
      std::string label = r.backend + "  " + summary(r.spec);
      if (!ok_only) label += "  [" + statusText(r) + "]";
      box->addItem(QString::fromStdString(label), QVariant::fromValue<qlonglong>(r.id));
    }
  const int i = box->findData(QVariant::fromValue<qlonglong>(keep));
  box->setCurrentIndex(i >= 0 ? i : box->count() - 1);
  return keep;
}

void selectRunIn(QComboBox* box, qint64 run_id) {
  const int i = box->findData(QVariant::fromValue<qlonglong>(run_id));
  if (i >= 0) box->setCurrentIndex(i);
}

}  // namespace attnscope::ui
