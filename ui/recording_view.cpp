#include "ui/recording_view.h"
#include "ui/chart_math.h"

#include <algorithm>

#include <QComboBox>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QThreadPool>
#include <QVBoxLayout>

#include "core/base/format.h"
#include "ui/recorded_calls_model.h"

namespace attnscope::ui {

using namespace torch_dispatch;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

RecordingView::RecordingView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel(this);
  header_->setObjectName("recordingHeader");
  header_->setWordWrap(true);
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(header_);

  auto* bar = new QHBoxLayout;
  torch_ = new QComboBox(this);
  torch_->setObjectName("recordingTorch");
  torch_->setToolTip(tr("Explain every call for this torch release too (show REC --torch)"));
  torch_->addItem(tr("as recorded"));
  for (const auto& v : coveredTorchVersions()) torch_->addItem(qs(v.text()), qs(v.text()));
  gpu_ = new QComboBox(this);
  gpu_->setObjectName("recordingGpu");
  gpu_->setToolTip(tr("... and on this device (show REC --gpu): a GPU brings its compute capability and the "
                      "release's PyPI CUDA and cuDNN"));
  gpu_->addItem(tr("as recorded"));
  gpu_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  for (const GpuModel& g : knownGpus()) gpu_->addItem(qs(std::string(g.name)), qs(std::string(g.name)));
  sweep_ = new QPushButton(tr("Sweep this call"), this);
  sweep_->setObjectName("recordingSweep");
  bar->addWidget(new QLabel(tr("Explain also for torch"), this));
  bar->addWidget(torch_);
  bar->addWidget(new QLabel(tr("on"), this));
  bar->addWidget(gpu_);
  bar->addStretch();
  bar->addWidget(sweep_);
  layout->addLayout(bar);

  // The calls above, the selected call's verdict below; the splitter lets either take the height.
  auto* split = new QSplitter(Qt::Vertical, this);
  model_ = new RecordedCallsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::EditRole);
  calls_ = new QTableView(split);
  calls_->setObjectName("recordingCalls");
  calls_->setModel(proxy_);
  calls_->setSelectionBehavior(QAbstractItemView::SelectRows);
  calls_->setSelectionMode(QAbstractItemView::SingleSelection);
  calls_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  calls_->setAlternatingRowColors(true);
  calls_->setWordWrap(false);
  calls_->horizontalHeader()->setStretchLastSection(true);
  // Sizing a column reads this many rows, not every one of a recording with thousands.
  calls_->horizontalHeader()->setResizeContentsPrecision(200);
  calls_->setSortingEnabled(true);
  // Largest measured first, ties in recorded order: the order of `show REC`.
  calls_->sortByColumn(RecordedCallsModel::MeasuredColumn, Qt::DescendingOrder);
  detail_ = new QTextBrowser(split);
  detail_->setObjectName("recordingDetail");
  detail_->setOpenLinks(false);
  split->addWidget(calls_);
  split->addWidget(detail_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  for (QComboBox* b : {torch_, gpu_}) connect(b, &QComboBox::currentIndexChanged, this, &RecordingView::choicesChanged);
  connect(calls_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RecordingView::showDetail);
  connect(sweep_, &QPushButton::clicked, this, [this] {
    const ExplainedCall* e = currentCall();
    if (!e || !e->recorded.workload.spec || !loaded_) return;
    Q_EMIT sweepRequested(*e->recorded.workload.spec, QStringLiteral("REC%1:%2").arg(loaded_->id).arg(e->call->row));
  });
  showResult({});
}

void RecordingView::setRecordingSource(RecordingLoader source) {
  source_ = std::move(source);
  showRecording(0);
}

void RecordingView::showRecording(int64_t id) {
  id_ = id;
  keep_row_ = 0;
  load();
}

namespace {

std::optional<TorchVersion> torchChoice(const QComboBox* box) {
  const QString v = box->currentData().toString();
  return v.isEmpty() ? std::nullopt : parseTorchVersion(v.toStdString());
}

std::optional<std::string> gpuChoice(const QComboBox* box) {
  const QString g = box->currentData().toString();
  return g.isEmpty() ? std::nullopt : std::optional(g.toStdString());
}

}  // namespace

std::optional<TorchTarget> RecordingView::target() const {
  return loaded_ ? retargetRecording(*loaded_, torchChoice(torch_), gpuChoice(gpu_)) : std::nullopt;
}

void RecordingView::load() {
  loaded_.reset();
  if (id_ <= 0 || !source_) {
    shown_job_ = jobs_.startJob();
    showResult({});
    return;
  }
  start([source = source_, id = id_, torch = torchChoice(torch_), gpu = gpuChoice(gpu_)]() -> Result {
    try {
      std::optional<Recording> rec = source(id);
      if (!rec) return {nullptr, tr("REC%1 is not in the database (deleted?)").arg(id)};
      if (!rec->error.empty()) return {nullptr, qs(rec->error)};
      auto shared = std::make_shared<const Recording>(std::move(*rec));
      return {std::make_shared<const ExplainedRecording>(explainRecording(shared, retargetRecording(*shared, torch, gpu))), {}};
    } catch (const std::exception& e) {
      return {nullptr, tr("cannot read REC%1: %2").arg(id).arg(qs(e.what()))};
    }
  });
}

void RecordingView::choicesChanged() {
  if (!loaded_) {
    load();  // a load on its way read the boxes before they changed
    return;
  }
  const ExplainedCall* e = currentCall();
  keep_row_ = e ? e->call->row : 0;  // the same call stays selected, explained for the new target
  start([rec = loaded_, torch = torchChoice(torch_), gpu = gpuChoice(gpu_)]() -> Result {
    return {std::make_shared<const ExplainedRecording>(explainRecording(rec, retargetRecording(*rec, torch, gpu))), {}};
  });
}

void RecordingView::start(std::function<Result()> work) {
  const quint64 job = jobs_.startJob();
  if (!background_) {
    shown_job_ = job;
    showResult(work());
    return;
  }
  header_->setText(tr("REC%1: reading and explaining its calls...").arg(id_));
  QPointer<RecordingView> self(this);
  QThreadPool::globalInstance()->start([self, work = std::move(work), job] {
    auto result = std::make_shared<Result>(work());
    // Back on the GUI thread, where the view can only be deleted between events: a view gone, or
    // another recording or target chosen since, drops the result.
    QMetaObject::invokeMethod(qApp, [self, job, result] {
      if (!self || !self->jobs_.isCurrent(job)) return;
      self->shown_job_ = job;
      self->showResult(std::move(*result));
    }, Qt::QueuedConnection);
  });
}

void RecordingView::showResult(Result result) {
  const bool had_target = model_->recording() && model_->recording()->target;
  error_ = result.error;
  loaded_ = result.explained ? result.explained->recording : nullptr;
  model_->setRecording(std::move(result.explained));
  for (int c = 0; c < RecordedCallsModel::ColumnCount; ++c) calls_->setColumnHidden(c, model_->columnSaysNothing(c));
  calls_->resizeColumnsToContents();
  // A long site, module or mask is cut short (the tooltip has it whole), so the kernel and memory
  // columns fit in the tab.
  const int widest = calls_->fontMetrics().horizontalAdvance(QString(22, 'x'));
  for (int c : {RecordedCallsModel::SiteColumn, RecordedCallsModel::ModuleColumn, RecordedCallsModel::MaskColumn})
    calls_->setColumnWidth(c, std::min(calls_->columnWidth(c), widest));
  showHeader();
  if (keep_row_ <= 0 || !selectCall(keep_row_)) showDetail();
  keep_row_ = 0;
  // A target just chosen: its columns come into view (the table is wider than the tab).
  if (!had_target && model_->recording() && model_->recording()->target && proxy_->rowCount() > 0)
    calls_->scrollTo(proxy_->index(std::max(0, calls_->currentIndex().row()), RecordedCallsModel::ChangeColumn));
}

void RecordingView::showHeader() {
  const ExplainedRecording* e = model_->recording();
  if (!e) {
    header_->setText(!error_.isEmpty() ? error_
                     : id_ > 0         ? tr("REC%1: no recording source").arg(id_)
                                       : tr("Select a recording in the Runs dock (attnscope record -- SCRIPT.py makes one)."));
    return;
  }
  const Recording& r = *e->recording;
  QStringList program;
  for (const auto& a : r.program) program << qs(a);
  // The first lines of `show REC`.
  QStringList lines;
  lines << tr("%1 '%2': %3").arg(qs(r.idText()), qs(r.name), program.join(' '));
  QString counts = qs(r.exitText()) +
                   (r.complete ? QString() : tr(", the recorder's last write kept (the program was killed)")) +
                   (r.calls.size() == 1 ? tr(", 1 call signature") : tr(", %1 call signatures").arg(r.calls.size())) +
                   (r.calls_seen == 1 ? tr(", 1 call") : tr(", %1 calls").arg(r.calls_seen));
  if (r.calls_dropped > 0) counts += tr(" (%1 not kept: too many signatures)").arg(r.calls_dropped);
  lines << counts + tr(", recorder overhead %1").arg(qs(durationText(r.overhead_s)));
  lines << tr("recorded on %1").arg(e->recorded ? qs(e->recorded->describe()) : tr("? (%1)").arg(qs(e->recorded_problem)));
  if (e->target) lines << tr("explained for %1").arg(qs(e->target->describe()));
  if (!r.note.empty()) lines << tr("note: %1").arg(qs(r.note));
  header_->setText(lines.join('\n'));
}

const ExplainedCall* RecordingView::currentCall() const {
  const QModelIndexList rows = calls_->selectionModel()->selectedRows();
  return rows.size() == 1 ? model_->call(proxy_->mapToSource(rows.front()).row()) : nullptr;
}

bool RecordingView::selectCall(int64_t row) {
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex i = proxy_->index(r, 0);
    if (i.data(RecordedCallsModel::CallRowRole).toLongLong() != row) continue;
    calls_->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    calls_->scrollTo(proxy_->index(r, std::max(0, calls_->columnAt(0))));  // to the row, not back to the left
    return true;
  }
  return false;
}

void RecordingView::showDetail() {
  const ExplainedCall* e = currentCall();
  sweep_->setEnabled(e && e->recorded.workload.spec);
  sweep_->setToolTip(e && !e->recorded.workload.spec
                         ? tr("This call cannot be a workload: %1")
                               .arg(qs(e->recorded.workload.problem.empty() && !e->recorded.workload.notes.empty()
                                           ? e->recorded.workload.notes.back()
                                           : e->recorded.workload.problem))
                         : tr("Put the selected call into the Workload form, to sweep around it (sweep --from REC:ROW)"));
  detail_->setHtml(e ? callHtml(*e) : overviewHtml());
}

}  // namespace attnscope::ui
