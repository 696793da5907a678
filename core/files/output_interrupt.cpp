#include "core/files/output_interrupt.h"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace attnscope {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};
constexpr int kSignalCount = 2;

// The handler touches only these: a lock-free atomic and dispositions saved before it was installed.
std::atomic<int> g_pending{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");
struct sigaction g_previous[kSignalCount];
bool g_installed[kSignalCount] = {};

std::mutex g_mutex;
int g_scopes = 0;  // under g_mutex

int indexOf(int sig) { return sig == SIGINT ? 0 : 1; }

extern "C" void onOutputSignal(int sig) {
  int none = 0;
  if (g_pending.compare_exchange_strong(none, sig)) return;
  // A second signal: the writer has not reached its next step; end as the signal would have.
  // sigaction and raise are async-signal-safe; the signal is delivered when this handler returns.
  ::sigaction(sig, &g_previous[indexOf(sig)], nullptr);
  ::raise(sig);
}

bool ignored(const struct sigaction& sa) { return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN; }

}  // namespace

OutputInterruptScope::OutputInterruptScope() {
  std::lock_guard lock(g_mutex);
  if (g_scopes++ > 0) return;
  g_pending = 0;
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction old {};
    ::sigaction(kSignals[i], nullptr, &old);
    g_installed[i] = !ignored(old);
    if (!g_installed[i]) continue;
    g_previous[i] = old;
    struct sigaction sa {};
    sa.sa_handler = onOutputSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // other threads (SQLite, Qt) keep their calls uninterrupted
    ::sigaction(kSignals[i], &sa, nullptr);
  }
}

OutputInterruptScope::~OutputInterruptScope() {
  int sig = 0;
  {
    std::lock_guard lock(g_mutex);
    if (--g_scopes > 0) return;
    for (int i = 0; i < kSignalCount; ++i)
      if (g_installed[i]) ::sigaction(kSignals[i], &g_previous[i], nullptr);
    sig = g_pending.exchange(0);
  }
  // The temporaries are gone by now (every output removes its own before its scope ends).
  if (sig != 0) ::raise(sig);
}

int outputInterruptSignal() { return g_pending.load(); }

void throwIfOutputInterrupted(const std::string& path) {
  const int sig = g_pending.load();
  if (sig == 0) return;
  throw OutputInterrupted(std::string("interrupted (") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + "); " + path +
                          " was not written");
}

}  // namespace attnscope
