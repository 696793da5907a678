#pragma once
// SIGINT and SIGTERM while an output's temporary file exists (an export, a report, a --dump):
// the signal only sets a flag, the writer sees it at its next step and unwinds, which removes the
// temporary; when the last such output is gone the signal is raised again under the disposition
// it had before, so the process still ends as the user asked (or a run's own Ctrl-C handler
// gets it). Outside outputs nothing changes: the signals keep whatever disposition they had, and
// one that was ignored (a background job's SIGINT) stays ignored.

#include <stdexcept>
#include <string>

namespace attnscope {

// Thrown by a writer that stopped for a signal; its temporary file is removed while it unwinds.
class OutputInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Held by every output with a temporary file. The first one installs the handler, the last one
// restores the previous handlers and then re-raises a signal that arrived meanwhile. A second
// signal of the same kind ends the process at once (a writer stuck in one long step).
class OutputInterruptScope {
 public:
  OutputInterruptScope();
  ~OutputInterruptScope();
  OutputInterruptScope(const OutputInterruptScope&) = delete;
  OutputInterruptScope& operator=(const OutputInterruptScope&) = delete;
};

// The signal that arrived while an output was in progress, or 0.
int outputInterruptSignal();
// Throws OutputInterrupted ("interrupted (SIGTERM); PATH was not written") when a signal arrived.
void throwIfOutputInterrupted(const std::string& path);

}  // namespace attnscope
