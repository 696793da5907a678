#pragma once
// Starts a child that cannot outlive AttnScope, whatever it starts in turn. POSIX (Linux) only.
//
// posix_spawn alone leaves the child running when AttnScope is SIGKILLed or dies of SIGTERM, and
// PR_SET_PDEATHSIG covers neither a wrapper's own children (it is not inherited) nor a child
// started by a thread that ends before it (it fires on the thread's exit, not the process's). So
// a keeper starts the child: a forked copy of us that spawns the child as the leader of a new
// process group and then only waits, either for the child to end (the keeper then ends the same
// way, so waitpid on the keeper reports the child's own exit status or signal), or for a pipe
// only AttnScope holds to close (AttnScope is gone, however it died): it then SIGKILLs the
// child's whole group. The keeper stays in our process group and ignores the terminal's signals,
// so a Ctrl-C reaches AttnScope (which cancels) and never the keeper or the child. Between fork
// and exit the keeper only makes async-signal-safe calls, so this is safe from a multi-threaded
// process.

#include <string>
#include <sys/types.h>
#include <vector>

namespace attnscope::torch {

struct KeptChild {
  pid_t keeper = -1;  // ours to reap; ends as the child ended
  pid_t child = -1;   // the child: the leader of the process group of everything it starts
  int in = -1;        // the child's stdin (we write)
  int out = -1;       // the child's stdout (we read)
  int err = -1;       // the child's stderr (we read)
  int lifeline = -1;  // closing it (or our death) makes the keeper kill the child's group
};

// argv[0] is the executable's path. Throws std::runtime_error with the system's reason when the
// pipes cannot be made, the keeper cannot fork or the executable cannot be started.
KeptChild startKept(const std::vector<std::string>& argv);

}  // namespace attnscope::torch
