#pragma once
// The .npy files of one run in a folder: what `run --dump DIR` writes and `run --inputs DIR` reads
// back, and what a torch worker is handed (kernels/torch/torch_files). One writer for all of them:
// every file goes through writeNpy, so under a temporary name renamed into place, and a name that
// is taken by a link, FIFO, device or folder is refused, never written through nor waited on.
// Tensors are [B, H, L, D]; layers' [B, L, E] and weights (core/inputs/npy.h LayerShapes).

#include <string>
#include <vector>

#include "core/inputs/host_inputs.h"
#include "core/inputs/npy.h"
#include "core/files/output_file.h"
#include "core/spec/workload_spec.h"

namespace attnscope {


// A tensor as NumPy holds it: fp32 as <f4, fp16 as <f2, bf16 as <f4 holding the exact bf16 values.
NpyArray npyOf(const HostTensor& t);
// The spec's mask as booleans, [1,1,Lq,Lkv] or, for the per-head layout of a mask that differs per
// head, [B,H,Lq,Lkv]: a dense mask's own bits, any other from the mask rules (core/spec/mask.h).
// An additive mask is its float tensor instead (npyOf of inputs.additive_mask: <f4, or <f2 for fp16).
NpyArray maskNpy(const WorkloadSpec& spec, const HostInputs& inputs);

// Writes q.npy k.npy v.npy (kind = layer: x.npy w_qkv.npy b_qkv.npy w_o.npy b_o.npy), g.npy for a
// train pass, and mask.npy (maskNpy) when `with_mask`.
void writeRunInputs(const std::string& dir, const WorkloadSpec& spec, const HostInputs& inputs, bool with_mask,
                    OutputUse use);

// Every file dumpRun may write for spec.
std::vector<std::string> dumpFileNames(const WorkloadSpec& spec);
// Before the run: throws OutputRefused naming the first of dumpFileNames(spec) in dir that may not
// be replaced (checkOutput with OutputRule::entry: a link, FIFO, device, folder or database).
void checkDumpEntries(const std::string& dir, const WorkloadSpec& spec, const std::string& db_path);

// Writes the run's inputs, out.npy (kind = layer: y [B,L,E]) and mask.npy for dense and additive masks into dir
// (created); for a train pass also g.npy, and dq.npy, dk.npy, dv.npy when `gradients` holds them
// (kind = layer: dx.npy dw_qkv.npy db_qkv.npy dw_o.npy db_o.npy from `layerGradients`). A stack's
// layers 2..N add their weights and weight gradients as L<n>.w_qkv.npy, L<n>.dw_qkv.npy, ...
void dumpRun(const std::string& dir, const WorkloadSpec& spec, const HostInputs& inputs,
             const std::vector<float>& output, const AttentionGradients* gradients = nullptr,
             const std::vector<LayerGradients>* layerGradients = nullptr);
// The file of layer `layer`'s (0-based) tensor `name` ("w_qkv.npy"): the name itself for layer 0,
// "L<layer + 1>.<name>" for deeper ones.
std::string layerFileName(int64_t layer, const std::string& name);
// Reads q.npy, k.npy, v.npy (and mask.npy for dense masks, bool, and additive masks, in mask_dtype
// with -inf allowed; g.npy for a train pass) from dir
// (kind = layer: x.npy w_qkv.npy b_qkv.npy w_o.npy b_o.npy instead of q, k, v, and a stack's deeper
// layers' L<n>.w_qkv.npy ...), checking each file's shape
// and dtype against the spec, and that every value is finite (a NaN or Inf input would make the
// reference itself meaningless). Throws std::invalid_argument with the file, expected and found.
HostInputs loadInputs(const std::string& dir, const WorkloadSpec& spec);

}  // namespace attnscope
