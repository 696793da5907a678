#pragma once
// A recorded call explained: the recorder saw what torch ran and what the call cost; the
// explainer (core/torch_dispatch) says what it predicts for the same call, for the torch and
// device it was recorded on or for another release and GPU (`show REC --torch 2.1 --gpu V100`).
// Where the prediction differs from what torch ran, that is a defect in our rules, said plainly.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result/recording.h"
#include "core/spec/workload_spec.h"
#include "core/torch_dispatch/sdpa_explain.h"

namespace attnscope {

// The call as a workload and as SDPA's arguments, or why it cannot be one (a float64 tensor, a
// q of 5 dimensions, an op other than SDPA). `notes` say what was approximated.
struct RecordedWorkload {
  std::optional<WorkloadSpec> spec;
  torch_dispatch::SdpaCall call;
  std::string problem;
  std::vector<std::string> notes;
};
RecordedWorkload recordedWorkload(const RecordedCall& c, const torch_dispatch::TorchVersion& version);

// Where the recording ran, as the explainer's target (torch from the recorder's facts, CUDA and
// the first device's capability when the calls ran on a GPU). nullopt with `problem` set when
// the recorded torch is not one the explainer has rules for.
std::optional<torch_dispatch::TorchTarget> recordedTarget(const Recording& r, std::string* problem);

struct CallVerdict {
  RecordedWorkload workload;
  std::optional<torch_dispatch::SdpaExplanation> x;  // nullopt: workload.problem says why
  std::string predicted;        // the explainer's kernel: flash, efficient, cudnn, math; "raises"; "" unknown
  std::string first_rejection;  // "flash: <rule> (<torch's message>)" for the fastest rejected kernel
  int64_t predicted_bytes = -1; // what the call adds at its peak (-1: unknown)
  // Only for the recorded environment: torch ran another kernel than predicted.
  bool mismatch = false;
  std::optional<torch_dispatch::SdpaSuggestion> cheapest;
};
CallVerdict explainRecordedCall(const RecordedCall& c, const torch_dispatch::TorchTarget& target, bool recorded_env);

// The kernel name of a recorded `ran` ("flash", "efficient", "cudnn", "math") or the op's name.
std::string ranKernel(const RecordedCall& c);

// The target `show REC --torch V --gpu G --cudnn C` explains for: what is not given stays as
// recorded (torch, device, capability, threads); a GPU brings its capability and the release's
// PyPI CUDA and cuDNN. `gpu` is "cpu" or a name parseGpu knows. nullopt when none is given, or the
// GPU is unknown.
std::optional<torch_dispatch::TorchTarget> retargetRecording(const Recording& recording,
                                                             const std::optional<torch_dispatch::TorchVersion>& torch,
                                                             const std::optional<std::string>& gpu,
                                                             const std::optional<torch_dispatch::CudnnVersion>& cudnn = std::nullopt);
// The "change" column: "flash -> math: +70.6 MiB" when the target picks another kernel than the
// recorded environment, "" when it picks the same one or nothing is known.
std::string kernelChange(const CallVerdict& recorded, const CallVerdict& target);
// The "on target" cell: "math 70.6 MiB", "?" when unknown.
std::string onTargetText(const CallVerdict& target);
// The mask cell: "none", "is_causal", "bool [1,1,1024,1024] broadcast".
std::string recordedMaskText(const RecordedCall& call);

// `record --json` and `show REC --json`: {id, name, program, exit_status, ..., calls: [...]} with
// per call at least site, module, count, q_shape, k_shape, v_shape, dtype, mask, is_causal,
// torch_ran, predicted_kernel, measured_bytes, predicted_bytes, time_s, suggestions. With a
// `target` (another torch/GPU), each call also has target_kernel, target_bytes and change.
nlohmann::json recordingJson(const Recording& r, const std::optional<torch_dispatch::TorchTarget>& target);

}  // namespace attnscope
