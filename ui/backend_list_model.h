#pragma once
// Every registered backend, checkable, with an availability mark: green (can run the current
// spec), amber (available but cannot run this spec), red (unavailable on this machine). The
// reasons come from Backend::support() and are re-evaluated when the spec changes.

#include <string>
#include <vector>

#include <QAbstractListModel>

#include "core/backend/backend_registry.h"

namespace attnscope::ui {

class BackendListModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Role { StateRole = Qt::UserRole + 1, DetailRole, IdRole };
  enum State { Supported = 0, Unsupported = 1, Unavailable = 2 };

  explicit BackendListModel(const BackendRegistry& registry, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

  void setSpec(const WorkloadSpec& spec);
  std::vector<std::string> checkedIds() const;
  void setCheckedIds(const std::vector<std::string>& ids);
  std::vector<Backend*> checkedBackends() const;

 Q_SIGNALS:
  void checkedChanged();

 private:
  struct Row {
    Backend* backend;
    bool checked;
    State state;
    QString detail;
  };
  const BackendRegistry& registry_;
  std::vector<Row> rows_;
};

}  // namespace attnscope::ui
