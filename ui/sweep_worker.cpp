#include "ui/sweep_worker.h"

#include <QDateTime>

#include "core/environment.h"
#include "core/store.h"
#include "kernels/builtin_session.h"
#include "kernels/torch/torch_probe.h"

namespace attnscope::ui {

void registerUiMetaTypes() {
  qRegisterMetaType<attnscope::SweepSpec>();
  qRegisterMetaType<attnscope::SweepProgress>();
  qRegisterMetaType<attnscope::RunResult>();
}

SweepWorker::SweepWorker(QObject* parent) : QObject(parent) { registerUiMetaTypes(); }
SweepWorker::~SweepWorker() = default;

void SweepWorker::run(quint64 job, const QString& db_path, const SweepSpec& spec_in) {
  // This thread may wait for the torch probe (the GUI thread never does).
  torch::TorchProbe::BlockingScope may_wait_for_torch;
  SweepSpec spec = spec_in;
  if (spec.name.empty())
    spec.name = "sweep " + QDateTime::currentDateTime().toString("yyyy-MM-dd hh:mm:ss").toStdString();
  int64_t sweep_id = 0;
  std::unique_ptr<Store> store_ptr;
  try {
    // The worker's own backends (see Session::newRegistry) and the process's trace capture,
    // so a GUI sweep records kernels and the CUPTI peak exactly as `attnscope sweep` does.
    if (!registry_) registry_ = builtinSession().newRegistry();
    store_ptr = std::make_unique<Store>(db_path.toStdString());
    Store& store = *store_ptr;
    const int64_t env_id = store.saveEnvironment(captureEnvironment());
    sweep_id = store.createSweep(spec, env_id);
    Q_EMIT sweepStarted(job, sweep_id, QString::fromStdString(spec.name));
    SweepCallbacks cb;
    cb.progress = [&](const SweepProgress& p) { Q_EMIT progressed(job, p); };
    cb.result = [&](RunResult& r) {
      r.id = store.saveRun(sweep_id, r);
      RunResult copy = r;
      copy.trace.events.clear();  // the trace stays in the store; the charts load it on demand
      copy.trace.events.shrink_to_fit();
      Q_EMIT pointFinished(job, sweep_id, copy);
    };
    SweepRunner runner(*registry_);
    builtinSession().prepare(runner);
    const auto results = runner.run(spec, cb, &cancel_);
    const bool cancelled = cancel_.load() || (!results.empty() && results.back().status == RunStatus::cancelled);
    const char* state = cancelled ? "cancelled" : "finished";
    store.setSweepState(sweep_id, state);
    Q_EMIT finished(job, sweep_id, QString::fromLatin1(state), {});
  } catch (const std::exception& e) {
    if (store_ptr && sweep_id > 0) {
      try {
        store_ptr->setSweepState(sweep_id, "failed");
      } catch (const std::exception&) {
        // The error below is what the user needs to see.
      }
    }
    Q_EMIT finished(job, sweep_id, QStringLiteral("failed"), QString::fromStdString(e.what()));
  }
}

}  // namespace attnscope::ui
