#pragma once
// The store's recordings (`attnscope record`) for the Runs dock, one row each: id (REC<n>), name,
// exit, calls seen, created, program; the columns of `attnscope runs`' recordings table. The rows
// come from a listing made on a pool thread (setRecordings, without their calls): data() never
// touches the store. The name is editable and written straight to the store, as a sweep's is;
// delete removes from the store and the rows. The store connection is the GUI thread's.

#include <unordered_map>
#include <vector>

#include <QAbstractTableModel>

#include "core/store/store.h"

namespace attnscope::ui {

class RecordingListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { IdColumn, NameColumn, ExitColumn, CallsColumn, CreatedColumn, ProgramColumn, ColumnCount };
  enum Role {
    RecordingIdRole = Qt::UserRole + 1,
    FilterRole,  // column 0: every searchable text of the row in one string
  };

  explicit RecordingListModel(QObject* parent = nullptr);

  // The store may be null (no database open). Empties the list: the window lists a new database
  // in the background.
  void setStore(Store* store);
  // The recordings as a listing found them: rows no longer listed are removed, new ones added,
  // the others updated in place (so the selection stays).
  void setRecordings(std::vector<Recording> listed);
  bool deleteRecordings(const std::vector<int64_t>& ids);
  // Counts the changes made through this model (a delete, a rename): a listing started before the
  // count moved may still hold what was changed, and is not applied.
  quint64 localChanges() const { return local_changes_; }

  QModelIndex recordingIndex(int64_t id, int column = 0) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 Q_SIGNALS:
  void storeError(const QString& message);

 private:
  void reindex();
  int rowOf(int64_t id) const;

  Store* store_ = nullptr;
  std::vector<Recording> rows_;              // without their calls
  std::unordered_map<int64_t, int> index_;  // recording id -> row
  quint64 local_changes_ = 0;
};

}  // namespace attnscope::ui
