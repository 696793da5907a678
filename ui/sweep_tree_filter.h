#pragma once
// The Runs dock's filter and sort over SweepTreeModel: a sweep stays when its own text or any
// of its runs matches; a matching sweep keeps all its runs, otherwise only the matching runs
// show. Matches the model's FilterRole (ids, names, states, tags, notes, backends, specs), not
// the counts, so "ok" finds runs with status ok rather than every "8/8 ok" sweep. Sorted by id,
// the runs of a sweep stay in the order they ran whichever way the sweeps go (newest first).

#include <QSortFilterProxyModel>

namespace attnscope::ui {

class SweepTreeFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit SweepTreeFilter(QObject* parent = nullptr);

 protected:
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;
};

}  // namespace attnscope::ui
