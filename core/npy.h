#pragma once
// NumPy .npy files (format version 1.0/2.0, little-endian, C order) for `run --dump DIR` and
// `run --inputs DIR`. Tensors are [B, H, L, D]; fp32 is stored as float32, fp16 as float16, and
// bf16 as float32 holding the exact bf16 values (NumPy has no bfloat16). Masks are bool [.., Lq, Lkv].

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/host_inputs.h"
#include "core/workload_spec.h"

namespace attnscope {

struct AttentionGradients;  // core/backend.h
struct LayerGradients;      // core/backend.h

// The shapes of a layer's tensors (core/host_inputs.h): x, y, G and dx [B,L,E]; w_qkv
// [(H + 2 Hkv) D, E]; b_qkv [(H + 2 Hkv) D]; w_o [E, H D]; b_o [E].
struct LayerShapes {
  explicit LayerShapes(const WorkloadSpec& s)
      : x{s.batch, s.seq_q, layerWidth(s)}, w_qkv{layerQkvRows(s), layerWidth(s)}, b_qkv{layerQkvRows(s)},
        w_o{layerWidth(s), s.heads * s.headDim()}, b_o{layerWidth(s)} {}
  std::vector<int64_t> x, w_qkv, b_qkv, w_o, b_o;
};

struct NpyArray {
  std::string descr;  // "<f4", "<f2", "|b1"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// A refused .npy file: the message names the file and what was expected.
struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a header says, checked against the file's size before anything is allocated.
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  int64_t item_size = 0;
  int64_t data_offset = 0;  // bytes before the data
  int64_t data_bytes = 0;   // product(shape) * item_size, overflow-checked
};

inline constexpr int64_t kNpyMaxHeaderBytes = 65536;  // NumPy itself writes a few hundred
inline constexpr size_t kNpyMaxRank = 32;            // NumPy's own limit

// Parses the start of a .npy file whose total size is file_size: magic, version, header length
// (at most kNpyMaxHeaderBytes), the header dict (descr <f4, <f2, |b1 or |u1; C order; shape of
// non-negative integers), and requires the data to fill the rest of the file exactly (no
// truncation, no trailing bytes). Needs only the first data_offset bytes in `prefix`; throws
// NpyError naming `name` when it cannot decide with what `prefix` holds. Entry point for fuzzers.
NpyHeader parseNpyHeader(std::string_view prefix, int64_t file_size, const std::string& name);
// A whole .npy file held in memory (fuzzers, tests). Throws NpyError.
NpyArray parseNpy(std::string_view bytes, const std::string& name);

// Throws std::runtime_error naming the file on any I/O or format problem. readNpy refuses
// anything but a regular file (a FIFO or a device must not block or stream forever), and checks
// the header against the file size before allocating.
void writeNpy(const std::string& path, const NpyArray& a);
// `check`, when given, sees the header before the data is read (and may throw to refuse it).
NpyArray readNpy(const std::string& path, const std::function<void(const NpyHeader&)>& check = {});

// Writes q.npy, k.npy, v.npy, out.npy (and mask.npy for dense masks) into dir (created); for a
// train pass also g.npy, and dq.npy, dk.npy, dv.npy when `gradients` holds them. kind = layer:
// x.npy w_qkv.npy b_qkv.npy w_o.npy b_o.npy, out.npy holding y [B,L,E], and for train g.npy and
// dx.npy dw_qkv.npy db_qkv.npy dw_o.npy db_o.npy from `layerGradients`.
void dumpRun(const std::string& dir, const WorkloadSpec& spec, const HostInputs& inputs,
             const std::vector<float>& output, const AttentionGradients* gradients = nullptr,
             const LayerGradients* layerGradients = nullptr);
// Reads q.npy, k.npy, v.npy (and mask.npy for dense masks; g.npy for a train pass) from dir
// (kind = layer: x.npy w_qkv.npy b_qkv.npy w_o.npy b_o.npy instead of q, k, v), checking each file's shape
// and dtype against the spec, and that every value is finite (a NaN or Inf input would make the
// reference itself meaningless). Throws std::invalid_argument with the file, expected and found.
HostInputs loadInputs(const std::string& dir, const WorkloadSpec& spec);

}  // namespace attnscope
