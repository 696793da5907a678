#pragma once
// The store's sweeps as a table: id, name, created, state, runs, tags, notes. Name, tags and
// notes are editable and written straight to the store (GUI-thread connection).

#include <vector>

#include <QAbstractTableModel>

#include "core/store.h"

namespace attnscope::ui {

class SweepListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { IdColumn, NameColumn, CreatedColumn, StateColumn, RunsColumn, TagsColumn, NotesColumn, ColumnCount };
  enum Role { SweepIdRole = Qt::UserRole + 1 };

  explicit SweepListModel(QObject* parent = nullptr);

  // The store may be null (no database open). Reloads.
  void setStore(Store* store);
  void reload();
  int64_t sweepId(int row) const;
  int rowOf(int64_t sweep_id) const;
  // Deletes sweeps (and their runs) from the store and reloads. Returns false on a store error.
  bool deleteSweeps(const std::vector<int64_t>& ids);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 Q_SIGNALS:
  void storeError(const QString& message);

 private:
  Store* store_ = nullptr;
  std::vector<SweepInfo> sweeps_;
};

}  // namespace attnscope::ui
