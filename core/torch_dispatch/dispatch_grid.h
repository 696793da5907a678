#pragma once
// The explainer over a grid: for two fields of a sweep (heads x seq, or any two), which SDPA kernel
// torch would pick at each point, its predicted peak, and why the kernels before it were refused.
// What the GUI's Dispatch view colours; plain data so it is tested without Qt.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/sweep_spec.h"
#include "core/torch_dispatch/sdpa_explain.h"

namespace attnscope::torch_dispatch {

struct DispatchCell {
  std::string x_value, y_value;
  std::string invalid;                 // the spec error when this combination is not a valid spec
  std::optional<SdpaKernel> kernel;    // nullopt: invalid, or torch would raise (see headline)
  int64_t peak_bytes = 0;
  int64_t extra_bytes = 0;
  std::string summary;                 // the spec, e.g. "B1 H16/16 L4096x4096 D4 fp16 dense/broadcast"
  std::string headline;                // "torch would pick math (efficient: head_dim ...)"
  std::vector<std::string> rejections; // "efficient: <rule> — <torch's message>" for kernels before the winner
};

struct DispatchGrid {
  std::string x_field, y_field;
  std::vector<std::string> xs, ys;  // values as written in the sweep
  std::vector<DispatchCell> cells;  // x-major: cells[x * ys.size() + y]
  bool truncated = false;           // the grid had more than max_cells points; the last values were dropped
  const DispatchCell& at(size_t x, size_t y) const { return cells[x * ys.size() + y]; }
};

// Not a field of the spec: the torch release as an axis (coveredTorchVersions()), each cell
// explained for that release with its PyPI wheel's CUDA and cuDNN on the target's device and GPU.
inline constexpr const char* kTorchAxis = "torch";

// The fields a sweep varies (its axes), then heads and seq if not among them, then kTorchAxis.
std::vector<std::string> gridFields(const SweepSpec& sweep);
// A field's value in a spec as the command line writes it ("16", "fp16", "dense:0.5").
std::string fieldText(const WorkloadSpec& spec, const std::string& field);

// Every other swept field takes its first value. max_cells caps the work (it runs on the GUI thread).
DispatchGrid dispatchGrid(const SweepSpec& sweep, const std::string& x_field, const std::string& y_field,
                          const TorchTarget& target, size_t max_cells = 1024);

}  // namespace attnscope::torch_dispatch
