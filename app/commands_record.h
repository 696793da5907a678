#pragma once
// What the other commands use of `record`'s: showing a recording (`show REC<n>`) and a recorded
// call as the base of a sweep (`sweep --from REC<n>:ROW`).

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "app/cli_args.h"
#include "core/result/recording.h"
#include "core/spec/workload_spec.h"
#include "core/torch_dispatch/torch_target.h"

namespace attnscope::cli {

// `show REC<n> [--torch V] [--gpu G] [--cudnn V] [--json]`.
int showRecording(const Args& args, int64_t id);
// The table of a recording's calls, sorted by memory, with what each call's verdict says; with a
// target, what changes there.
void printRecording(const Recording& r, const std::optional<torch_dispatch::TorchTarget>& target, std::ostream& out);
// The target of --torch, --gpu and --cudnn, each defaulting to the recorded one; nullopt when
// none is given. Throws UsageError naming the option and the allowed values.
std::optional<torch_dispatch::TorchTarget> retarget(const Args& args, const Recording& r);
// REC<n>:ROW's call as a workload. Throws UsageError naming --from.
WorkloadSpec specOfRecordedCall(const std::string& db, const std::string& ref);

}  // namespace attnscope::cli
