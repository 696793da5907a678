// Fuzzes the .npy reader (core/inputs/npy) on files as `run --inputs DIR` reads them. The first byte
// picks a small spec (dtype, mask, sizes); the rest is the file, which is q.npy, k.npy, v.npy and
// mask.npy at once (links to one file), so any header that survives reaches the shape, dtype,
// bf16 and mask checks. A hostile header must be refused before it decides an allocation.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/inputs/npy.h"
#include "core/inputs/run_files.h"
#include "fuzz/fuzz_support.h"

using namespace attnscope;

namespace {

const std::string& inputsDir() {
  static const std::string dir = [] {
    const auto& s = fuzz::scratch();
    for (const char* name : {"q.npy", "k.npy", "v.npy", "mask.npy"})
      std::filesystem::create_symlink(s.file("data.npy"), s.file(name));
    return s.path().string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string dir = inputsDir();
  const std::string file = fuzz::scratch().file("data.npy");
  fuzz::writeFile(file, data + 1, size - 1);

  try {
    // The in-memory parser the reader is built on: same bytes, same verdict, no file.
    const NpyArray m = parseNpy({reinterpret_cast<const char*>(data + 1), size - 1}, "fuzz.npy");
    if (m.data.size() > size) abort();
  } catch (const NpyError&) {
  }
  try {
    const NpyArray a = readNpy(file);
    // Whatever the header claims, the data read must be what the file really holds.
    if (a.data.size() > size) abort();
  } catch (const std::runtime_error&) {
  }

  // Sizes where q, k, v and the broadcast mask have one shape: [1, 1, L, L].
  const uint8_t pick = data[0];
  WorkloadSpec spec;
  spec.batch = 1;
  spec.heads = 1;
  spec.seq_q = 1 + (pick & 3);
  spec.head_dim = spec.seq_q;
  spec.dtype = (pick >> 2) % 3 == 0 ? DType::fp32 : (pick >> 2) % 3 == 1 ? DType::fp16 : DType::bf16;
  if (pick & 0x40) spec.mask.kind = MaskKind::dense;
  try {
    const HostInputs in = loadInputs(dir, spec);
    if (in.q.elements() != spec.qElements()) abort();
    if (spec.mask.kind == MaskKind::dense && static_cast<int64_t>(in.mask.size()) != spec.maskBytes()) abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
