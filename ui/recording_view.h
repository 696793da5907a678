#pragma once
// The Recording tab: one recording (`attnscope record`) as `attnscope show REC` shows it. On top
// what ran and how it ended; the calls table (recorded_calls_model.h) sorted by measured memory;
// a target chooser (a torch release and a GPU, each "as recorded" by default) that adds what each
// call would do there, as `show REC --torch V --gpu G` does; and for the selected call its full
// verdict (every kernel in torch's order with its first failing rule and torch's message, as the
// Dispatch view words them), the predicted buffers, the notes and the cheaper changes. "Sweep
// this call" hands the call as a workload to the Workload form, as `sweep --from REC:ROW` does.
// Without a selected call the pane shows the recording's overview (its stderr when it failed).
//
// Reading the recording and explaining its calls run on a pool thread when background loading
// is on (the window), the result of a superseded load or target dropped (ui/job_tracker.h);
// otherwise on the calling thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <QWidget>

#include "ui/explained_recording.h"
#include "ui/job_tracker.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;
class QTextBrowser;

namespace attnscope::ui {

class RecordedCallsModel;

class RecordingView : public QWidget {
  Q_OBJECT
 public:
  using RecordingLoader = std::function<std::optional<Recording>(int64_t id)>;

  explicit RecordingView(QWidget* parent = nullptr);
  QString title() const { return tr("Recording"); }

  // Where recordings come from (the window's opens its own read connection). With background
  // loading on it is called on a pool thread and must not touch GUI-thread state. A new source
  // (another database) shows nothing until showRecording: ids are per database.
  void setRecordingSource(RecordingLoader source);
  void setBackgroundLoading(bool on) { background_ = on; }
  // Reads and shows this recording (0: none).
  void showRecording(int64_t id);
  int64_t recordingId() const { return id_; }
  // A load or an explanation is on its way.
  bool loading() const { return shown_job_ != jobs_.current(); }

  // The target the boxes choose besides the recorded one; nullopt when both say "as recorded"
  // (or nothing is loaded).
  std::optional<torch_dispatch::TorchTarget> target() const;
  // The call in the table's current row; nullptr for none.
  const ExplainedCall* currentCall() const;
  // Makes the call of this recorded row (REC<n>:ROW) the current one; false when there is none.
  bool selectCall(int64_t row);

  // For tests and the screenshot tool.
  QComboBox* torchBox() const { return torch_; }
  QComboBox* gpuBox() const { return gpu_; }
  QTableView* callsView() const { return calls_; }
  RecordedCallsModel* callsModel() const { return model_; }
  QLabel* header() const { return header_; }
  QTextBrowser* detail() const { return detail_; }
  QPushButton* sweepButton() const { return sweep_; }

 Q_SIGNALS:
  // "Sweep this call": the call as a workload, and its reference ("REC3:2").
  void sweepRequested(const WorkloadSpec& spec, const QString& ref);

 private:
  struct Result {
    std::shared_ptr<const ExplainedRecording> explained;  // nullptr: error says why
    QString error;
  };
  void load();
  void choicesChanged();
  void start(std::function<Result()> work);
  void showResult(Result result);
  void showHeader();
  void showDetail();
  QString overviewHtml() const;
  QString callHtml(const ExplainedCall& e) const;

  RecordingLoader source_;
  bool background_ = false;
  int64_t id_ = 0;
  std::shared_ptr<const Recording> loaded_;  // the recording shown, for explaining it again
  QString error_;                            // why nothing is shown
  int64_t keep_row_ = 0;                     // the call to select again once explained for another target
  JobTracker jobs_;       // the latest load or explanation counts; older results are dropped
  quint64 shown_job_ = 0;  // the job whose result is shown

  QLabel* header_;
  QComboBox *torch_, *gpu_;
  QPushButton* sweep_;
  RecordedCallsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* calls_;
  QTextBrowser* detail_;
};

}  // namespace attnscope::ui
