#pragma once
// A recording with every call explained, for the Recording view: what `attnscope show REC` prints
// (app/commands_record.cpp, printRecording), computed from the same core calls
// (core/record/recording_explain.h) and kept as plain values, so the view only formats them and
// the explaining can run on a pool thread (a recording may hold thousands of signatures, each
// explained once or twice with its suggestions).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/record/recording_explain.h"

namespace attnscope::ui {

struct ExplainedCall {
  const RecordedCall* call = nullptr;  // into ExplainedRecording::recording
  // For the recorded torch and device. Without a recorded target only `workload` is filled (the
  // call as a workload still sweeps) and `predicted` stays empty, the CLI's "?".
  CallVerdict recorded;
  std::optional<CallVerdict> target;  // for the chosen target, when there is one
};

struct ExplainedRecording {
  std::shared_ptr<const Recording> recording;
  std::optional<torch_dispatch::TorchTarget> recorded;  // nullopt: recorded_problem says why
  std::string recorded_problem;
  std::optional<torch_dispatch::TorchTarget> target;
  std::vector<ExplainedCall> calls;  // sorted by measured memory, the largest first (stable)
};

ExplainedRecording explainRecording(std::shared_ptr<const Recording> recording,
                                    const std::optional<torch_dispatch::TorchTarget>& target);

}  // namespace attnscope::ui
