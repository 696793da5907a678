#include "ui/explained_recording.h"

#include <algorithm>

#include "core/base/format.h"

namespace attnscope::ui {

using namespace torch_dispatch;

ExplainedRecording explainRecording(std::shared_ptr<const Recording> recording, const std::optional<TorchTarget>& target) {
  ExplainedRecording out;
  out.recorded = recordedTarget(*recording, &out.recorded_problem);
  out.target = target;
  for (const RecordedCall& c : recording->calls) {
    ExplainedCall e;
    e.call = &c;
    if (out.recorded) e.recorded = explainRecordedCall(c, *out.recorded, true);
    else e.recorded.workload = recordedWorkload(c, kNewestTorch);  // what `sweep --from` falls back to
    if (target) e.target = explainRecordedCall(c, *target, false);
    out.calls.push_back(std::move(e));
  }
  // Where the program's attention memory goes, as `show REC` sorts it.
  std::stable_sort(out.calls.begin(), out.calls.end(), [](const ExplainedCall& a, const ExplainedCall& b) {
    return a.call->forward.bytes_max > b.call->forward.bytes_max;
  });
  out.recording = std::move(recording);
  return out;
}

}  // namespace attnscope::ui
