#include "ui_test_support.h"

#include <QCoreApplication>

#include "core/engine/recorded_sweep.h"
#include "core/store/store.h"
#include "kernels/builtin_backends.h"

namespace attnscope::ui::test {

void prepareEnvironment() {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static QTemporaryDir config;  // lives until exit
  qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
  QCoreApplication::setOrganizationName("AttnScopeTest");
  QCoreApplication::setApplicationName("AttnScopeTest");
}

SweepSpec tinySweep() {
  SweepSpec s;
  s.name = "tiny";
  s.base.head_dim = 8;
  s.axes = {{"heads", {"1", "2"}}, {"seq", {"16", "32"}}};
  s.backends = {"cpu.reference", "cpu.flash"};
  s.warmup = 0;
  s.reps = 1;
  return s;
}

int64_t runSweepInto(Store& store, const SweepSpec& spec) {
  static BackendRegistry registry = [] {
    BackendRegistry r;
    registerBuiltinBackends(r);
    return r;
  }();
  SweepRunner runner(registry);
  RecordedSweep recorded(store, spec);
  return recorded.run(runner, {}).sweep_id;
}

}  // namespace attnscope::ui::test
