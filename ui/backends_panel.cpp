#include "ui/backends_panel.h"

#include <QLabel>
#include <QListView>
#include <QVBoxLayout>

#include "ui/backend_list_model.h"

namespace attnscope::ui {

BackendsPanel::BackendsPanel(BackendListModel* model, const QStringList& notes, QWidget* parent)
    : QWidget(parent), model_(model) {
  view_ = new QListView(this);
  view_->setObjectName("backendsView");
  view_->setModel(model_);
  view_->setIconSize(QSize(28, 14));
  detail_ = new QLabel(this);
  detail_->setObjectName("backendDetail");
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(view_, 1);
  layout->addWidget(detail_);
  if (!notes.isEmpty()) {
    auto* note = new QLabel(notes.join('\n'), this);
    note->setWordWrap(true);
    note->setStyleSheet("color: palette(mid);");
    layout->addWidget(note);
  }
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, &BackendsPanel::updateDetail);
  connect(model_, &QAbstractItemModel::dataChanged, this, &BackendsPanel::updateDetail);
  updateDetail();
}

void BackendsPanel::updateDetail() {
  QModelIndex i = view_->currentIndex();
  QStringList lines;
  if (i.isValid()) {
    lines << "<b>" + i.data(Qt::DisplayRole).toString() + "</b>: " + i.data(BackendListModel::DetailRole).toString().toHtmlEscaped();
  } else {
    // No current row: summarise the backends that cannot run the spec.
    for (int r = 0; r < model_->rowCount(); ++r) {
      const QModelIndex idx = model_->index(r);
      if (idx.data(BackendListModel::StateRole).toInt() != BackendListModel::Supported)
        lines << "<b>" + idx.data().toString() + "</b>: " + idx.data(BackendListModel::DetailRole).toString().toHtmlEscaped();
    }
    if (lines.isEmpty()) lines << tr("Every backend can run this spec.");
  }
  detail_->setText(lines.join("<br>"));
}

}  // namespace attnscope::ui
