#pragma once
// The calls of one explained recording as the Recording view's table: the columns of
// `attnscope show REC` in its wording (site, module, count, q, k/v, dtype, mask, torch ran,
// predicted, measured, predicted memory, on target, change, time, backward, cheapest fix), the
// rows as explainRecording sorted them. The CLI's row column is the vertical header here, so a
// call's row stays in sight when the table is scrolled sideways. A prediction that differs from what torch ran
// reads "flash (WRONG)" in red; the kernel cells are tinted with the Dispatch view's kernel
// colours. EditRole gives the sort keys (bytes, seconds and counts as numbers).

#include <memory>

#include <QAbstractTableModel>

#include "ui/explained_recording.h"

namespace attnscope::ui {

class RecordedCallsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // On target and change follow the memory columns, not the times as in `show REC`: they are what
  // a chosen target is for, and the table is wider than the tab.
  enum Column { SiteColumn, ModuleColumn, CountColumn, QShapeColumn, KvShapeColumn, DtypeColumn,
                MaskColumn, RanColumn, PredictedColumn, MeasuredColumn, PredictedBytesColumn, TargetColumn,
                ChangeColumn, TimeColumn, BackwardColumn, FixColumn, ColumnCount };
  enum Role { CallRowRole = Qt::UserRole + 1 };  // the call's row in the recording (REC3:<row>)

  explicit RecordedCallsModel(QObject* parent = nullptr);
  // nullptr: no recording.
  void setRecording(std::shared_ptr<const ExplainedRecording> recording);
  const ExplainedRecording* recording() const { return recording_.get(); }
  const ExplainedCall* call(int row) const;

  // Columns that would say nothing, which the view hides as `show REC` leaves them out: k/v when
  // every call's k is shaped as its q, backward when no call had one, on target and change
  // without a target.
  bool columnSaysNothing(int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QVariant text(const ExplainedCall& e, int column) const;
  QVariant sortKey(const ExplainedCall& e, int column) const;
  std::shared_ptr<const ExplainedRecording> recording_;
};

}  // namespace attnscope::ui
