#pragma once
// What the SDPA dispatch explainer (core/torch_dispatch) predicts for a torch backend on the torch
// the worker reported: the kernel torch would pick, with the first rule that rejects the ones
// before it, and that kernel's memory as named buffers (inputs included, like our measured peak).

#include <optional>
#include <string>

#include "core/backend/memory_plan.h"
#include "core/torch_dispatch/torch_target.h"
#include "core/spec/workload_spec.h"
#include "kernels/torch/torch_worker.h"

namespace attnscope::torch {

// What the worker's hello says, in the explainer's terms: the one translation, used by the torch
// backends' predictions and by `explain --torch installed` / `--gpu detected` alike.
//
// The torch release, or nullopt with the reason (a release the explainer has no rules for).
std::optional<torch_dispatch::TorchVersion> installedVersion(const TorchHello& hello, std::string* why);
// The first CUDA device torch sees, or nullopt with the reason (none, or an unknown capability).
std::optional<torch_dispatch::ParsedGpu> detectedGpu(const TorchHello& hello, std::string* why);
// The CUDA and cuDNN versions this torch was built with and loads, where it reports them.
void applyInstalledBuild(const TorchHello& hello, torch_dispatch::TorchTarget& target);
// The explainer's target for the installed torch on its CPU or its first GPU, or nullopt with the
// reason in `why`.
std::optional<torch_dispatch::TorchTarget> targetFor(const TorchHello& hello, bool cuda, std::string* why);

struct TorchPrediction {
  MemoryPlan plan;   // MemoryPlan::unknown(reason) when the explainer has no answer
  std::string hint;  // "torch would pick flash" / "torch would refuse flash: <torch's message>"
};
// kernel: "auto" (torch's choice) or the forced one.
TorchPrediction predictTorch(const WorkloadSpec& spec, const TorchHello& hello, bool cuda, const std::string& kernel);

// One rank's memory for kind = layer on the CPU (tp = 1: the whole layer in one
// process), as measured on torch 2.15's CPU profiler: x, the rank's weights of every layer (its
// rows of w_qkv and b_qkv, its columns of w_o; with tp_comm gather the whole w_o), b_o, the mask
// tensor; then per layer the fused projection's output qkv [B, L, (H + 2 Hkv) D / tp] (q, k, v
// are views of it), the SDPA call of the rank's heads as the explainer predicts it (its own q, k,
// v left out) with its output kept to the layer's end, a merged copy of that output where it is
// [B, H, L, D] (math), with gather the all-gathered heads [B, H, L, D] and their merged copy, and
// y [B, L, E], which is the next layer's input and lives until that layer returns. The threads of
// a rank are the worker's divided by tp. Pass train through the flash kernel, without
// checkpointing and with tp_comm allreduce, is the forward's saved tensors of every layer, then
// layer by layer from the last the backward's buffers (predictTorchLayerTrain). Anything else
// (the math kernel's backward, checkpointing, gather's backward, GPUs, a per-head mask split over
// ranks) is MemoryPlan::unknown with the reason.
MemoryPlan predictTorchLayer(const WorkloadSpec& spec, const TorchHello& hello, bool cuda, const std::string& kernel);

}  // namespace attnscope::torch
