#pragma once
// Background work tagged with a job id, so that the result of superseded work is dropped instead
// of racing the current one (after hotspot's JobTracker, src/jobtracker.h). The sweep worker's
// signals, the Timeline's trace loads and the Breakdown's phase summaries all go through one.

#include <QtGlobal>

namespace attnscope::ui {

class JobTracker {
 public:
  // Starts a job; every earlier one is superseded from now on. Hand the id to the work.
  quint64 startJob() { return ++current_; }
  // Whether a result tagged `job` still counts.
  bool isCurrent(quint64 job) const { return job == current_; }
  // Supersedes whatever is on its way without starting anything (a cancel, another database).
  void invalidate() { ++current_; }
  quint64 current() const { return current_; }

 private:
  quint64 current_ = 0;
};

}  // namespace attnscope::ui
