#pragma once
// The files one torch run exchanges with the worker: the exact inputs our backends use, written
// as .npy (core/inputs/npy), and the output read back the same way, so the float64 accuracy check
// applies unchanged. Masks the worker cannot express as is_causal become boolean tensors here,
// from the same mask rules every backend uses (core/spec/mask.h).

#include <string>
#include <vector>

#include "core/inputs/host_inputs.h"
#include "core/spec/workload_spec.h"

namespace attnscope::torch {

// How the spec's mask reaches torch: "none", "causal" (is_causal=True, or causal_lower_right
// when Lq != Lkv and torch has it) or "tensor" (mask.npy: a boolean tensor; for an additive mask
// a float one, <f4 or <f2, that the worker casts to mask_dtype).
std::string maskPassing(const WorkloadSpec& spec);
// The same, for people: the `backends` command and the README say it.
std::string maskPassingNote();

// A private temporary folder, removed with everything in it on destruction.
class RunFolder {
 public:
  RunFolder();
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes q.npy, k.npy, v.npy ([B,H,L,D]; bf16 as float32 holding the exact bf16 values) or, for
// kind = layer, x.npy, w_qkv.npy, b_qkv.npy, w_o.npy, b_o.npy (the layer contract's names and
// shapes); g.npy for pass = train (G of the loss sum(O * G): [B,H,Lq,D], a layer's [B,L,E]) and,
// for masks passed as tensors, mask.npy (bool, [1,1,Lq,Lkv] or [B,H,Lq,Lkv] per the spec's layout).
void writeTorchInputs(const RunFolder& dir, const WorkloadSpec& spec, const HostInputs& inputs);
// Reads the worker's out.npy (float32, [B,H,Lq,D]; kind = layer: y, [B,L,E]) and checks its shape.
std::vector<float> readTorchOutput(const std::string& path, const WorkloadSpec& spec);
// Reads a float32 .npy the worker wrote (dq.npy, dx.npy, ...) and checks its shape.
std::vector<float> readTorchTensor(const std::string& path, const std::vector<int64_t>& shape);
// The same as a tensor in `dtype` (the worker's values are already that dtype's, so exact).
HostTensor readTorchTensor(const std::string& path, const std::vector<int64_t>& shape, DType dtype);

// kind = layer, pass = train: layer `layer`'s (0-based) weight gradients from the profiled call,
// [L<n>.]dw_qkv.npy ... (core/inputs/run_files.h layerFileName), and its input's gradient: dx.npy
// for layer 0 (the profiled call's); a deeper layer's L<n>.dx.npy comes from the intermediates
// call, read when `with_dx`.
LayerGradients readTorchLayerGradients(const RunFolder& dir, const WorkloadSpec& spec, int64_t layer, bool with_dx);
// Layer `layer`'s stored stages, [L<n>.]mid_q.npy ... as the intermediates call wrote them (a
// deeper layer's input too, L<n>.mid_x.npy; pass train: d_o, dq, dk, dv).
LayerIntermediates readTorchLayerIntermediates(const RunFolder& dir, const WorkloadSpec& spec, int64_t layer);

}  // namespace attnscope::torch
