#pragma once
// Runs a sweep on a worker thread: its own BackendRegistry and its own Store connection (a
// SQLite connection is used from one thread only), each finished point saved in the result
// callback. Results cross to the GUI as value copies through queued signals, tagged with the
// job id so the window can drop signals of a superseded job.

#include <atomic>
#include <memory>

#include <QMetaType>
#include <QObject>
#include <QString>

#include "core/result/run_result.h"
#include "core/engine/sweep_runner.h"
#include "core/spec/sweep_spec.h"

namespace attnscope::ui {

class SweepWorker : public QObject {
  Q_OBJECT
 public:
  explicit SweepWorker(QObject* parent = nullptr);
  ~SweepWorker() override;

  // Runs in the worker's thread (call through QMetaObject::invokeMethod).
  void run(quint64 job, const QString& db_path, const attnscope::SweepSpec& spec);

  // Thread-safe: stops the sweep within the point in flight.
  void cancel() { cancel_.store(true); }
  void resetCancel() { cancel_.store(false); }

 Q_SIGNALS:
  void sweepStarted(quint64 job, qint64 sweep_id, const QString& name);
  void progressed(quint64 job, const attnscope::SweepProgress& progress);
  void pointFinished(quint64 job, qint64 sweep_id, const attnscope::RunResult& run);
  // state: finished, cancelled or failed (error says why).
  void finished(quint64 job, qint64 sweep_id, const QString& state, const QString& error);

 private:
  std::atomic<bool> cancel_{false};
  std::unique_ptr<BackendRegistry> registry_;  // created in the worker thread
};

void registerUiMetaTypes();

}  // namespace attnscope::ui

Q_DECLARE_METATYPE(attnscope::SweepSpec)
Q_DECLARE_METATYPE(attnscope::SweepProgress)
Q_DECLARE_METATYPE(attnscope::RunResult)
