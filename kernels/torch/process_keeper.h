#pragma once
// Starts a child that cannot outlive AttnScope, whatever it starts in turn. POSIX (Linux) only.
//
// posix_spawn alone leaves the child running when AttnScope is SIGKILLed or dies of SIGTERM, and
// PR_SET_PDEATHSIG covers neither a wrapper's own children (it is not inherited) nor a child
// started by a thread that ends before it (it fires on the thread's exit, not the process's). So
// a keeper starts the child: a small program of ours (keeper/attnscope_torch_keeper.cpp, shipped
// beside attnscope) that spawns the child as the leader of a new process group and then only
// waits, either for the child to end (the keeper then ends the same way, so waitpid on the keeper
// reports the child's own exit status or signal), or for a pipe only AttnScope holds to close
// (AttnScope is gone, however it died): it then SIGKILLs the child's whole group. The keeper stays
// in our process group and ignores the terminal's signals, so a Ctrl-C reaches AttnScope (which
// cancels) and never the keeper or the child.
//
// The keeper is an executable of its own, not a fork of us: a forked copy would keep every page
// AttnScope had mapped at that moment (a sweep's inputs, the window's data) alive for as long as
// the worker lives, and hold duplicates of our database descriptors.

#include <csignal>
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

// argv[0] is the executable's path. Throws std::runtime_error with the reason when the keeper is
// not installed, the pipes cannot be made or the executable cannot be started.
KeptChild startKept(const std::vector<std::string>& argv);

// Between AttnScope and the keeper (keeper/attnscope_torch_keeper.cpp): the keeper gets the
// child's stdin, stdout and stderr as 0, 1 and 2, the lifeline's read end as kKeeperLifelineFd,
// and writes one KeeperReport to kKeeperReportFd once the child started (or did not).
inline constexpr int kKeeperLifelineFd = 3;
inline constexpr int kKeeperReportFd = 4;
struct KeeperReport {
  pid_t child = -1;
  int error = 0;  // errno of the failed spawn
};
// What the keeper ignores: a terminal's signals (it shares our process group) and a polite kill.
// It ends by the child's end, the lifeline or SIGKILL only. AttnScope starts it with these
// blocked, so none can arrive before it ignores them.
inline constexpr int kKeeperIgnored[] = {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGTERM, SIGPIPE};

}  // namespace attnscope::torch
