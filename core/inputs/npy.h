#pragma once
// NumPy .npy files (format version 1.0/2.0, little-endian, C order): the format, read and written.
// A run's files in a folder (`run --dump DIR`, `run --inputs DIR`, the torch worker's) are
// core/inputs/run_files.h.

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/inputs/host_inputs.h"
#include "core/files/output_file.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// The shapes of a layer's tensors (core/inputs/host_inputs.h): x, y, G and dx [B,L,E]; w_qkv
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

// A shape as NumPy prints it: (2, 3), (4,), ().
std::string npyShapeText(const std::vector<int64_t>& shape);

// Throws std::runtime_error naming the file on any I/O or format problem. writeNpy goes through
// writeOutputFile with OutputRule::entry: a new file, or a regular file replaced, under a
// temporary name; a link, FIFO, device or folder at `path` is refused (OutputRefused). readNpy
// refuses anything but a regular file (a FIFO or a device must not block or stream forever), and
// checks the header against the file size before allocating.
void writeNpy(const std::string& path, const NpyArray& a, OutputUse use = OutputUse::kept);
// `check`, when given, sees the header before the data is read (and may throw to refuse it).
NpyArray readNpy(const std::string& path, const std::function<void(const NpyHeader&)>& check = {});

}  // namespace attnscope
