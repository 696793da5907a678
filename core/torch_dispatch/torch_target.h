#pragma once
// Where a PyTorch SDPA call would run: torch version, device, GPU compute capability, the
// cuDNN and CUDA versions of the build, and the environment switches that change the dispatch.
// Everything the explainer needs, without torch or a GPU. Facts per release (which CUDA and
// cuDNN the PyPI wheel bundles, which GPU has which capability) come from
// shared/reference/torch-sdpa.md §0 and public spec sheets.

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::torch_dispatch {

struct TorchVersion {
  int major = 2;
  int minor = 15;
  int patch = 0;
  auto operator<=>(const TorchVersion&) const = default;
  bool operator==(const TorchVersion&) const = default;
  std::string text() const;  // "2.5.1"
};
// A torch version as torch.__version__ writes it, or as a user types one: "2.5", "2.5.1",
// "2.5.1+cu124", "2.6.0a0+git1234abc", "2.4.0rc1", "2.15.0.dev20250101+cpu" -> the release.
// nullopt for anything else: a release outside 2.0 .. 2.15, a patch past 2.Y.9 (torch's patch
// releases are single digits, the highest so far .2), a leading zero ("2.05"), a pre-release
// without its number ("2.5a"), blanks or other characters ("2.5\n").
std::optional<TorchVersion> parseTorchVersion(std::string_view text);
inline constexpr std::string_view kTorchVersionRange = "2.0 to 2.15";
inline constexpr std::string_view kTorchVersionChoices =
    "2.0 to 2.15 as 2.Y or 2.Y.Z with Z up to 9 (e.g. 2.5, 2.5.1, or torch.__version__ such as 2.5.1+cu121), or installed";
inline constexpr TorchVersion kNewestTorch{2, 15, 0};
// One version per minor release (x.y.0; 2.5.1 added because its dispatch differs from 2.5.0).
const std::vector<TorchVersion>& coveredTorchVersions();

struct CudnnVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  auto operator<=>(const CudnnVersion&) const = default;
  bool operator==(const CudnnVersion&) const = default;
  std::string text() const;  // "9.10.2"
};
// "9.10.2", "9.1", or torch.backends.cudnn.version()'s integer ("91002", "8902"). nullopt for
// anything else, pip's four-part package version ("9.10.2.21": give 9.10.2) included: the fourth
// part is a build number that neither torch nor the explainer knows.
std::optional<CudnnVersion> parseCudnnVersion(std::string_view text);
inline constexpr std::string_view kCudnnVersionChoices =
    "a cuDNN version X.Y.Z or X.Y (7 <= X <= 20, Y and Z up to 99, e.g. 8.9.2, 9.10.2) or torch's integer form "
    "(8902, 91002); for pip's package version 9.10.2.21 give 9.10.2";

struct ComputeCapability {
  int major = 8;
  int minor = 0;
  auto operator<=>(const ComputeCapability&) const = default;
  bool operator==(const ComputeCapability&) const = default;
  int number() const { return major * 10 + minor; }  // 80, 121
  std::string text() const;                         // "sm80"
};

struct GpuModel {
  std::string_view name;  // "A100", "RTX 4090"
  ComputeCapability capability;
};
const std::vector<GpuModel>& knownGpus();
// Compute capabilities this explainer accepts (sm50 ... sm121).
const std::vector<ComputeCapability>& knownCapabilities();
std::string gpuChoices();  // "sm50, sm52, ..., or a GPU name: V100, A100, ..."

struct ParsedGpu {
  ComputeCapability capability;
  std::string name;  // the model's name when given by name (or a device name that matched one)
};
// A compute capability "sm80", "sm_80", "sm90a", "8.0", "80", or a GPU's name, alone or inside a
// device name as torch and nvidia-smi print it: "A100", "rtx4090", "RTX 4090", "NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-80GB". A name matches whole words of the text (words split at blanks,
// '-' and '_'; "RTX 4090" also as "rtx4090"). nullopt for an unknown capability or name, and for
// text with blanks around it or characters a device name does not have ("sm+80", " A100").
std::optional<ParsedGpu> parseGpu(std::string_view text);

enum class TorchDevice { cpu, cuda };
std::string_view toString(TorchDevice d);

// What `pip install torch==X` brings on Linux x86-64 (reference §0).
struct WheelFacts {
  int cuda_major = 12;
  int cuda_minor = 8;
  CudnnVersion cudnn;
  bool has_sm70 = true;  // CUDA 13 wheels (2.11+) dropped Volta
  bool documented = true;  // false: the reference has no row for this release (2.13)
};
WheelFacts pypiWheel(const TorchVersion& v);

struct TorchTarget {
  TorchVersion version = kNewestTorch;
  TorchDevice device = TorchDevice::cuda;
  ComputeCapability capability{8, 0};  // cuda only
  std::string gpu_name;                // "A100" when the GPU was given by name; informative
  CudnnVersion cudnn{9, 26, 0};        // runtime cuDNN (torch.backends.cudnn.version())
  int cuda_major = 13;                 // CUDA major version torch was built with

  // Switches that change the dispatch or the memory (defaults are torch's defaults).
  bool env_cudnn_sdpa_enabled = false;        // TORCH_CUDNN_SDPA_ENABLED=1 (2.3, 2.4)
  bool env_cudnn_sdpa_preferred = true;       // TORCH_CUDNN_SDPA_PREFERRED (2.9; false opts out)
  bool env_cudnn_sdpa_deprioritized = false;  // TORCH_CUDNN_SDPA_DEPRIORITIZED=1 (2.10+)
  bool allow_fp16_bf16_reduction_math = false;  // torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp
  bool deterministic = false;                   // torch.use_deterministic_algorithms(True)
  bool requires_grad = false;                   // inputs require grad (training)
  int cpu_threads = 1;                          // torch.get_num_threads(), for CPU flash buffers
  // The CPU's AMX tiles (cpublas::could_pack): with them the CPU flash forward packs K and V for
  // bf16 (AMX-BF16) or fp16 (AMX-FP16) on large enough calls (2.7+), which adds buffers.
  bool cpu_amx_bf16 = false;
  bool cpu_amx_fp16 = false;

  bool operator==(const TorchTarget&) const = default;
  std::string describe() const;  // "torch 2.15.0, CUDA sm80 (A100), CUDA 13, cuDNN 9.26.0"
};

struct CpuAmx {
  bool bf16 = false;
  bool fp16 = false;
};
// This machine's AMX, from the flags amx_bf16 and amx_fp16 of /proc/cpuinfo (none elsewhere).
CpuAmx localCpuAmx();
// Sets t's CPU facts that the explainer reads (AMX) to this machine's: for targets that describe
// torch running here (the worker, `explain` on the CPU, the Dispatch view's "cpu").
void applyLocalCpu(TorchTarget& t);

// A target with the PyPI wheel's CUDA and cuDNN versions for that release.
TorchTarget defaultTorchTarget(const TorchVersion& v, TorchDevice device, ComputeCapability cc = {8, 0});
// The wheel's target for a GPU as a user writes it (parseGpu: "V100", "sm80", a device name) or
// "cpu" (this machine's threads and AMX); nullopt for an unknown GPU.
std::optional<TorchTarget> targetForGpu(const TorchVersion& v, std::string_view gpu);

}  // namespace attnscope::torch_dispatch
