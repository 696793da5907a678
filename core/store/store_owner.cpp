#include "core/store/store_owner.h"

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <sstream>

namespace attnscope {
namespace {

std::string firstLine(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// 0 when the process does not exist (or /proc is not there).
int64_t startTicks(int64_t pid) {
  std::string stat = firstLine("/proc/" + std::to_string(pid) + "/stat");
  // The command name (field 2) is in parentheses and may itself contain spaces and ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    // A zombie (killed, not yet reaped by its parent) or a dead task has ended all the same.
    if (i == 3 && (field == "Z" || field == "X" || field == "x")) return 0;
    if (i == 22) return std::stoll(field);
  }
  return 0;
}

}  // namespace

ProcessIdentity thisProcess() {
  static std::mutex mutex;
  static ProcessIdentity cached;
  std::lock_guard lock(mutex);
  if (cached.pid != getpid()) {
    ProcessIdentity p;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) p.host = host;
    p.boot_id = firstLine("/proc/sys/kernel/random/boot_id");
    p.pid = getpid();
    p.start_ticks = startTicks(p.pid);
    cached = p;
  }
  return cached;
}

OwnerState ownerState(const ProcessIdentity& owner) {
  const ProcessIdentity self = thisProcess();
  if (owner.host != self.host || self.boot_id.empty() || owner.pid <= 0) return OwnerState::unknown;
  if (owner.boot_id != self.boot_id) return OwnerState::gone;
  if (owner.pid == self.pid && owner.start_ticks == self.start_ticks) return OwnerState::alive;
  int64_t ticks = startTicks(owner.pid);
  return ticks != 0 && ticks == owner.start_ticks ? OwnerState::alive : OwnerState::gone;
}

}  // namespace attnscope
