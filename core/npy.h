#pragma once
// NumPy .npy files (format version 1.0/2.0, little-endian, C order) for `run --dump DIR` and
// `run --inputs DIR`. Tensors are [B, H, L, D]; fp32 is stored as float32, fp16 as float16, and
// bf16 as float32 holding the exact bf16 values (NumPy has no bfloat16). Masks are bool [.., Lq, Lkv].

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/host_inputs.h"
#include "core/workload_spec.h"

namespace attnscope {

struct NpyArray {
  std::string descr;  // "<f4", "<f2", "|b1"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// Throws std::runtime_error naming the file on any I/O or format problem, including a file
// shorter than its header promises.
void writeNpy(const std::string& path, const NpyArray& a);
NpyArray readNpy(const std::string& path);

// Writes q.npy, k.npy, v.npy, out.npy (and mask.npy for dense masks) into dir (created).
void dumpRun(const std::string& dir, const WorkloadSpec& spec, const HostInputs& inputs,
             const std::vector<float>& output);
// Reads q.npy, k.npy, v.npy (and mask.npy for dense masks) from dir, checking each file's shape
// and dtype against the spec. Throws std::invalid_argument with the file, expected and found.
HostInputs loadInputs(const std::string& dir, const WorkloadSpec& spec);

}  // namespace attnscope
