#include "ui/sweep_worker.h"

#include "core/engine/recorded_sweep.h"
#include "core/store/store.h"
#include "kernels/builtin_session.h"

namespace attnscope::ui {

void registerUiMetaTypes() {
  qRegisterMetaType<attnscope::SweepSpec>();
  qRegisterMetaType<attnscope::SweepProgress>();
  qRegisterMetaType<attnscope::RunResult>();
}

SweepWorker::SweepWorker(QObject* parent) : QObject(parent) { registerUiMetaTypes(); }
SweepWorker::~SweepWorker() = default;

void SweepWorker::run(quint64 job, const QString& db_path, const SweepSpec& spec) {
  // This thread may wait for the backends' availability checks (the GUI thread never does).
  const auto may_wait = builtinBackendSettings().waitForChecksOnThisThread();
  int64_t sweep_id = 0;
  try {
    // The worker's own backends (see Session::newRegistry) and the process's trace capture,
    // so a GUI sweep records kernels and the CUPTI peak exactly as `attnscope sweep` does.
    if (!registry_) registry_ = builtinSession().newRegistry();
    Store store(db_path.toStdString(), StoreMode::create);
    RecordedSweep recorded(store, spec);
    sweep_id = recorded.id();
    RecordedSweepCallbacks cb;
    cb.started = [&](int64_t id, const SweepSpec& s) { Q_EMIT sweepStarted(job, id, QString::fromStdString(s.name)); };
    cb.progress = [&](const SweepProgress& p) { Q_EMIT progressed(job, p); };
    cb.saved = [&](const RunResult& r) {
      RunResult copy = r;
      copy.trace.events.clear();  // the trace stays in the store; the charts load it on demand
      copy.trace.events.shrink_to_fit();
      Q_EMIT pointFinished(job, sweep_id, copy);
    };
    SweepRunner runner(*registry_);
    builtinSession().prepare(runner);
    const RecordedSweepResult& result = recorded.run(runner, cb, &cancel_);
    Q_EMIT finished(job, sweep_id, QString::fromStdString(result.state), QString::fromStdString(result.error));
  } catch (const std::exception& e) {
    // The store refused to open or to create the sweep, or the spec was invalid: nothing ran.
    Q_EMIT finished(job, sweep_id, QStringLiteral("failed"), QString::fromStdString(e.what()));
  }
}

}  // namespace attnscope::ui
