#pragma once
// The store's sweeps as a tree: top-level rows are sweeps (id, name, state, points, created,
// tags, notes), their children the sweep's runs (id, backend, status, measured peak, median,
// spec). A sweep's runs are read from the store only through fetchMore (a view expanding the
// sweep) or fetchAll (a filter about to look into every sweep), each signalled as an insertion:
// rowCount, index and data never touch the store, so painting never waits on SQL. Until then
// hasChildren answers from the sweep's stored run count. A running sweep's runs arrive through
// addRun() as insertions. Name, tags and notes of a sweep are editable and written straight to
// the store. What other processes change (the CLI's sweeps and deletes) arrives as a listing made
// on a pool thread (updateSweeps). The store connection is the GUI thread's.

#include <string>
#include <unordered_map>
#include <vector>

#include <QAbstractItemModel>
#include <QString>

#include "core/store/store.h"

namespace attnscope::ui {

class SweepTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  // Sweeps fill Id, Name, State, Points, Created, Tags, Notes; runs fill Id, Name (the point
  // and the backend, "H8 L512 cpu.flash", with the backend's chart colour, so a narrow column
  // elides the backend and the colour still tells it), State (the run's status), Peak
  // (measured), Median, Notes (the run's message) and Spec.
  enum Column { IdColumn, NameColumn, StateColumn, PointsColumn, PeakColumn, MedianColumn,
                CreatedColumn, TagsColumn, NotesColumn, SpecColumn, ColumnCount };
  enum Role {
    SweepIdRole = Qt::UserRole + 1,  // on a run: the sweep it belongs to
    RunIdRole,                       // 0 on a sweep
    FilterRole,                      // column 0: every searchable text of the row in one string
  };

  explicit SweepTreeModel(QObject* parent = nullptr);

  // The store may be null (no database open). Reloads.
  void setStore(Store* store);
  void reload();
  // Reads one sweep's row from the store again (state, counts), adding it (with the runs it
  // has so far) when new.
  void refreshSweep(int64_t sweep_id);
  // A finished run of a sweep (from the worker, already stored): appended as a child unless
  // the sweep's runs, when read, already held it.
  void addRun(int64_t sweep_id, const RunResult& run);
  // The sweeps as a listing of the store found them (another connection's sweeps()): sweeps no
  // longer listed are removed, new ones added (their runs read when expanded), the others' rows
  // updated in place, so expansion and selection stay. A sweep whose runs were read and whose
  // stored count differs reads them again: runs were added or deleted elsewhere.
  void updateSweeps(std::vector<SweepInfo> listed);
  // Counts the changes this model made to the store, or read from it, itself (a delete, an edit,
  // a sweep's row read again): a listing started before the count moved may be older than the
  // rows, and is not applied.
  quint64 localChanges() const { return local_changes_; }

  // The listed sweeps in `state` ("submitted": those a cluster runs), in row order.
  std::vector<int64_t> sweepIdsInState(const std::string& state) const;

  QModelIndex sweepIndex(int64_t sweep_id, int column = 0) const;
  // Reads the sweep's runs first when not read yet (see fetchMore).
  QModelIndex runIndex(int64_t sweep_id, int64_t run_id, int column = 0);
  // Reads the runs of every sweep not read yet (a filter over run names needs them).
  void fetchAll();
  // Delete from the store and remove the rows. Return false when any delete failed.
  bool deleteSweeps(const std::vector<int64_t>& ids);
  bool deleteRuns(const std::vector<int64_t>& ids);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  bool hasChildren(const QModelIndex& parent = {}) const override;
  bool canFetchMore(const QModelIndex& parent) const override;
  void fetchMore(const QModelIndex& parent) override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 Q_SIGNALS:
  void storeError(const QString& message);

 private:
  // What the tree shows of a run; the plan and the trace stay in the store.
  struct RunRow {
    int64_t id = 0;
    std::string backend, spec, status, message;
    QString point;  // "H8 L512"
    bool ok = false;
    bool every_row = false;  // ok, and the check held every row
    int64_t measured_peak = -1, predicted_peak = -1;
    double median_s = 0;
  };
  struct SweepNode {
    SweepInfo info;
    std::vector<RunRow> runs;  // valid once read
    bool read = false;
  };
  static RunRow rowOf(const RunResult& r);
  // A run's index carries its sweep id as internal id; a sweep's carries 0.
  int sweepRow(int64_t sweep_id) const;
  const SweepNode* nodeOf(const QModelIndex& index) const;
  void reindex();
  // Reads the runs of the sweep in `row` unless read, signalling them as inserted rows.
  void fetchRow(int row);
  std::vector<RunRow> readRuns(int64_t sweep_id, bool* ok = nullptr);  // ok: false when the read failed
  void countsChanged(int row);
  // Brings a read sweep's runs to what the store holds now: rows of runs gone are removed, new
  // runs appended.
  void rereadRuns(int row);
  QVariant sweepData(const SweepNode& s, int column, int role) const;
  QVariant runData(const RunRow& r, int column, int role) const;

  Store* store_ = nullptr;
  std::vector<SweepNode> sweeps_;
  std::unordered_map<int64_t, int> rows_;  // sweep id -> row
  quint64 local_changes_ = 0;
  // True from a begin*() to its end*(): listeners (views, proxies, a model tester) may react to
  // rowsAboutToBeInserted or modelReset by asking for more, and a fetch then would insert rows
  // inside another change; canFetchMore says no until the change is complete.
  bool changing_ = false;
  struct ChangeInFlight {
    explicit ChangeInFlight(bool& flag) : flag_(flag), was_(flag) { flag_ = true; }
    ~ChangeInFlight() { flag_ = was_; }
    ChangeInFlight(const ChangeInFlight&) = delete;
    ChangeInFlight& operator=(const ChangeInFlight&) = delete;
    bool& flag_;
    bool was_;
  };
};

}  // namespace attnscope::ui
