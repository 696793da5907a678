#pragma once
// Which process owns a running sweep, and whether that process still exists. A sweep records its
// owner when it is created; a sweep still 'running' whose owner is gone (killed, crashed, the
// machine rebooted) is reported as 'interrupted', and a writing Store marks it so on open.

#include <cstdint>
#include <string>

namespace attnscope {

struct ProcessIdentity {
  std::string host;
  std::string boot_id;      // /proc/sys/kernel/random/boot_id: a reboot makes every old pid meaningless
  int64_t pid = 0;
  int64_t start_ticks = 0;  // field 22 of /proc/<pid>/stat: tells a reused pid from the owner
};

// This process (computed once per process: a forked child gets its own).
ProcessIdentity thisProcess();

enum class OwnerState { alive, gone, unknown };

// alive or gone when the owner ran on this machine (same host name and boot id, or same host and
// another boot: gone); unknown for another machine (a shared folder), which is never guessed.
OwnerState ownerState(const ProcessIdentity& owner);

}  // namespace attnscope
