#include "ui/run_chooser.h"

#include <QAbstractItemView>
#include <QSignalBlocker>

#include "core/base/format.h"

namespace attnscope::ui {

qlonglong fillRunChooser(QComboBox* box, const SweepSnapshots& sweeps, bool ok_only) {
  const qlonglong keep = box->currentData().toLongLong();
  QSignalBlocker block(box);
  box->clear();
  for (const auto& s : sweeps)
    for (const RunResult& r : s->runs) {
      if (ok_only && r.status != RunStatus::ok) continue;
      std::string label = concat("R", std::to_string(r.id), "  ", r.backend, "  ", summary(r.spec));
      if (!ok_only) label += "  [" + statusText(r) + "]";
      box->addItem(QString::fromStdString(label), QVariant::fromValue<qlonglong>(r.id));
      box->setItemData(box->count() - 1, QString::fromStdString(label), Qt::ToolTipRole);
    }
  const int i = box->findData(QVariant::fromValue<qlonglong>(keep));
  box->setCurrentIndex(i >= 0 ? i : box->count() - 1);
  // The box is narrower than its longest entry (it must not widen the window); the list is not.
  if (box->view()) box->view()->setMinimumWidth(box->view()->sizeHintForColumn(0) + 24);
  box->setToolTip(box->currentText());
  return keep;
}

void selectRunIn(QComboBox* box, qint64 run_id) {
  const int i = box->findData(QVariant::fromValue<qlonglong>(run_id));
  if (i >= 0) box->setCurrentIndex(i);
  box->setToolTip(box->currentText());
}

}  // namespace attnscope::ui
