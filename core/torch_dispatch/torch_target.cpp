#include "core/torch_dispatch/torch_target.h"

#include <thread>

#include <fstream>
#include <sstream>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <utility>

namespace attnscope::torch_dispatch {

namespace {

// A number as versions write it: digits, no sign, no leading zero ("0" itself is fine).
std::optional<int> parseInt(std::string_view s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits "a.b.c" into 1 to n integer parts; nullopt when a part is not a number.
std::optional<std::vector<int>> dottedInts(std::string_view s, size_t n) {
  std::vector<int> out;
  for (;;) {
    const size_t dot = s.find('.');
    auto part = parseInt(s.substr(0, dot));
    if (!part || out.size() == n) return std::nullopt;
    out.push_back(*part);
    if (dot == std::string_view::npos) return out;
    s.remove_prefix(dot + 1);
  }
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Consumes `tag` followed by digits at the front of s ("rc1", ".dev2025"); false if absent.
bool taggedNumber(std::string_view& s, std::string_view tag) {
  if (!s.starts_with(tag)) return false;
  size_t n = tag.size();
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == tag.size()) return false;
  s.remove_prefix(n);
  return true;
}

// What may follow the release in a torch version (PEP 440 as torch uses it): a pre-release
// (a0, b1, rc2), .postN, .devN, then +local (cu121, git1234abc, rocm6.2, cpu.cxx11.abi).
bool versionSuffix(std::string_view s) {
  bool pre = false;
  for (std::string_view tag : {"rc", "a", "b"})
    if (!pre) pre = taggedNumber(s, tag);
  taggedNumber(s, ".post");
  taggedNumber(s, ".dev");
  if (s.empty()) return true;
  if (s[0] != '+') return false;
  s.remove_prefix(1);
  for (;;) {
    const size_t end = s.find('.');
    const std::string_view label = s.substr(0, end);
    if (label.empty() || !std::all_of(label.begin(), label.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
      return false;
    if (end == std::string_view::npos) return true;
    s.remove_prefix(end + 1);
  }
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string normalised(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string TorchVersion::text() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<TorchVersion> parseTorchVersion(std::string_view text) {
  // The release is up to three dotted numbers; a fourth dotted part (".dev2025") is the suffix's.
  size_t end = 0;
  for (int part = 0; part < 3; ++part) {
    size_t digits = end;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == end) return std::nullopt;
    end = digits;
    if (part == 2 || end + 1 >= text.size() || text[end] != '.' || text[end + 1] < '0' || text[end + 1] > '9') break;
    ++end;
  }
  auto parts = dottedInts(text.substr(0, end), 3);
  if (!parts || parts->size() < 2 || !versionSuffix(text.substr(end))) return std::nullopt;
  TorchVersion v{(*parts)[0], (*parts)[1], parts->size() > 2 ? (*parts)[2] : 0};
  if (v.major != 2 || v.minor > 15 || v.patch > 9) return std::nullopt;
  return v;
}

const std::vector<TorchVersion>& coveredTorchVersions() {
  static const std::vector<TorchVersion> versions = [] {
    std::vector<TorchVersion> v;
    for (int minor = 0; minor <= 15; ++minor) {
      v.push_back({2, minor, 0});
      if (minor == 5) v.push_back({2, 5, 1});
    }
    return v;
  }();
  return versions;
}

std::string CudnnVersion::text() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<CudnnVersion> parseCudnnVersion(std::string_view text) {
  if (text.find('.') == std::string_view::npos) {
    // torch.backends.cudnn.version(): cuDNN 7 and 8 encode major*1000 + minor*100 + patch,
    // cuDNN 9 major*10000 + minor*100 + patch.
    auto n = parseInt(text);
    if (!n) return std::nullopt;
    if (*n >= 90000 && *n < 210000) return CudnnVersion{*n / 10000, (*n / 100) % 100, *n % 100};
    if (*n >= 7000 && *n < 9000) return CudnnVersion{*n / 1000, (*n / 100) % 10, *n % 100};
    return std::nullopt;
  }
  auto parts = dottedInts(text, 3);
  if (!parts || parts->size() < 2) return std::nullopt;
  const CudnnVersion v{(*parts)[0], (*parts)[1], parts->size() > 2 ? (*parts)[2] : 0};
  // What the integer encodings can hold: cuDNN 7 and 8 have one digit for the minor version.
  if (v.major < 7 || v.major > 20 || v.minor > (v.major < 9 ? 9 : 99) || v.patch > 99) return std::nullopt;
  return v;
}

std::string ComputeCapability::text() const { return "sm" + std::to_string(number()); }

const std::vector<GpuModel>& knownGpus() {
  static const std::vector<GpuModel> gpus = {
      {"M60", {5, 2}},       {"GTX 980", {5, 2}},     {"Jetson Nano", {5, 3}},  {"P100", {6, 0}},
      {"GTX 1080", {6, 1}},  {"P40", {6, 1}},         {"P4", {6, 1}},           {"V100", {7, 0}},
      {"Titan V", {7, 0}},   {"Jetson Xavier", {7, 2}}, {"T4", {7, 5}},         {"RTX 2080", {7, 5}},
      {"RTX 2080 Ti", {7, 5}}, {"Quadro RTX 6000", {7, 5}}, {"A100", {8, 0}},   {"A30", {8, 0}},
      {"A800", {8, 0}},      {"A10", {8, 6}},         {"A10G", {8, 6}},         {"A40", {8, 6}},          {"RTX A6000", {8, 6}},
      {"RTX 3090", {8, 6}},  {"RTX 3080", {8, 6}},    {"Jetson Orin", {8, 7}},  {"L4", {8, 9}},
      {"L40", {8, 9}},       {"L40S", {8, 9}},        {"RTX 4090", {8, 9}},     {"RTX 4080", {8, 9}},
      {"RTX 6000 Ada", {8, 9}}, {"H100", {9, 0}},     {"H200", {9, 0}},         {"H800", {9, 0}},
      {"H20", {9, 0}},       {"GH200", {9, 0}},       {"B100", {10, 0}},        {"B200", {10, 0}},
      {"GB200", {10, 0}},    {"B300", {10, 3}},       {"GB300", {10, 3}},       {"Jetson Thor", {11, 0}},
      {"RTX 5090", {12, 0}}, {"RTX 5080", {12, 0}},   {"RTX PRO 6000", {12, 0}}, {"DGX Spark", {12, 1}},
      {"GB10", {12, 1}},
  };
  return gpus;
}

const std::vector<ComputeCapability>& knownCapabilities() {
  static const std::vector<ComputeCapability> caps = {
      {5, 0}, {5, 2}, {5, 3}, {6, 0}, {6, 1}, {6, 2}, {7, 0}, {7, 2}, {7, 5}, {8, 0}, {8, 6},
      {8, 7}, {8, 9}, {9, 0}, {10, 0}, {10, 1}, {10, 3}, {11, 0}, {12, 0}, {12, 1}};
  return caps;
}

std::string gpuChoices() {
  std::string s;
  for (const auto& c : knownCapabilities()) s += c.text() + ", ";
  s += "a GPU name (";
  const char* names[] = {"P100", "V100", "T4", "A100", "A10", "L4", "RTX 4090", "H100", "H200", "B200", "RTX 5090"};
  for (size_t i = 0; i < std::size(names); ++i) s += std::string(i ? ", " : "") + names[i];
  return s + ", ...), detected, or cpu";
}

std::optional<ParsedGpu> parseGpu(std::string_view text) {
  auto known = [](int number) -> std::optional<ParsedGpu> {
    for (const auto& c : knownCapabilities())
      if (c.number() == number) return ParsedGpu{c, ""};
    return std::nullopt;
  };
  const std::string low = lowered(text);
  // "sm80", "sm_80", "sm90a", "sm100f": an arch suffix does not change the dispatch.
  if (low.starts_with("sm")) {
    std::string_view digits = std::string_view(low).substr(low.starts_with("sm_") ? 3 : 2);
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
    if (allDigits(digits))
      if (auto v = parseInt(digits)) return known(*v);
  }
  if (allDigits(low))
    if (auto v = parseInt(low)) return known(*v);  // "80"
  if (low.find('.') != std::string::npos) {  // "8.0", as torch reports a capability
    auto parts = dottedInts(low, 2);
    if (parts && parts->size() == 2 && (*parts)[1] < 10) return known((*parts)[0] * 10 + (*parts)[1]);
    return std::nullopt;
  }
  // A name: words of letters and digits between single separators, as device names are written
  // ("NVIDIA A100-SXM4-80GB", "Orin (nvgpu)"); nothing around it.
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (low.empty() || !alnum(low.front()) || !(alnum(low.back()) || low.back() == ')') ||
      low.find("  ") != std::string::npos ||
      !std::all_of(low.begin(), low.end(), [&](char c) { return alnum(c) || (c != '\0' && std::strchr(" -_()", c)); }))
    return std::nullopt;
  std::vector<std::string> words;
  std::string word;
  for (char c : low + " ") {
    if (alnum(c)) word += c;
    else if (!word.empty()) words.push_back(std::exchange(word, {}));
  }
  // The longest known name that is one or more whole consecutive words ("H200" is not "H20",
  // "sm-60" is not the M60).
  const GpuModel* best = nullptr;
  size_t best_len = 0;
  for (size_t first = 0; first < words.size(); ++first) {
    std::string joined;
    for (size_t last = first; last < words.size(); ++last) {
      joined += words[last];
      for (const auto& g : knownGpus())
        if (normalised(g.name) == joined && joined.size() > best_len) {
          best = &g;
          best_len = joined.size();
        }
    }
  }
  if (!best) return std::nullopt;
  return ParsedGpu{best->capability, std::string(best->name)};
}

std::string_view toString(TorchDevice d) { return d == TorchDevice::cpu ? "cpu" : "cuda"; }

WheelFacts pypiWheel(const TorchVersion& v) {
  switch (v.minor) {
    case 0: return {11, 7, {8, 5, 0}, true, true};
    case 1:
    case 2:
    case 3: return {12, 1, {8, 9, 2}, true, true};
    case 4: return {12, 1, {9, 1, 0}, true, true};
    case 5:
    case 6: return {12, 4, {9, 1, 0}, true, true};
    case 7: return {12, 6, {9, 5, 1}, true, true};
    case 8:
    case 9:
    case 10: return {12, 8, {9, 10, 2}, true, true};
    case 11: return {13, 0, {9, 19, 0}, false, true};
    case 12: return {13, 0, {9, 20, 0}, false, true};
    case 13: return {13, 0, {9, 20, 0}, false, false};  // between 2.12 and 2.14; not in the reference
    case 14: return {13, 0, {9, 24, 0}, false, true};
    default: return {13, 2, {9, 26, 0}, false, true};
  }
}

CpuAmx localCpuAmx() {
  CpuAmx a;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (!line.starts_with("flags")) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w == "amx_bf16") a.bf16 = true;
      if (w == "amx_fp16") a.fp16 = true;
    }
    break;
  }
  return a;
}

void applyLocalCpu(TorchTarget& t) {
  const CpuAmx amx = localCpuAmx();
  t.cpu_amx_bf16 = amx.bf16;
  t.cpu_amx_fp16 = amx.fp16;
}

std::string TorchTarget::describe() const {
  std::string s = "torch " + version.text() + ", ";
  if (device == TorchDevice::cpu) {
    s += "CPU (" + std::to_string(cpu_threads) + " threads";
    if (cpu_amx_bf16 || cpu_amx_fp16)
      s += std::string(", AMX ") + (cpu_amx_bf16 ? "bf16" : "") + (cpu_amx_bf16 && cpu_amx_fp16 ? "+" : "") + (cpu_amx_fp16 ? "fp16" : "");
    return s + ")";
  }
  s += "CUDA " + capability.text();
  if (!gpu_name.empty()) s += " (" + gpu_name + ")";
  return s + ", built with CUDA " + std::to_string(cuda_major) + ", cuDNN " + cudnn.text();
}

TorchTarget defaultTorchTarget(const TorchVersion& v, TorchDevice device, ComputeCapability cc) {
  TorchTarget t;
  t.version = v;
  t.device = device;
  t.capability = cc;
  const WheelFacts w = pypiWheel(v);
  t.cuda_major = w.cuda_major;
  t.cudnn = w.cudnn;
  return t;
}

std::optional<TorchTarget> targetForGpu(const TorchVersion& v, std::string_view gpu) {
  if (gpu == "cpu") {
    TorchTarget t = defaultTorchTarget(v, TorchDevice::cpu);
    t.cpu_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    applyLocalCpu(t);
    return t;
  }
  auto parsed = parseGpu(gpu);
  if (!parsed) return std::nullopt;
  TorchTarget t = defaultTorchTarget(v, TorchDevice::cuda, parsed->capability);
  t.gpu_name = parsed->name;
  return t;
}

}  // namespace attnscope::torch_dispatch
