#pragma once
// Helpers shared by the rule tables (sdpa_rules_cuda.cpp, sdpa_rules_cpu.cpp). Not a public API.

#include <string>
#include <vector>

#include "core/torch_dispatch/sdpa_rules.h"

namespace attnscope::torch_dispatch::detail {

constexpr TorchVersion V(int minor, int patch = 0) { return {2, minor, patch}; }
constexpr TorchVersion Vlast(int minor) { return {2, minor, 99}; }
constexpr VersionRange between(int first_minor, int last_minor) { return {V(first_minor), Vlast(last_minor)}; }
constexpr VersionRange from(int first_minor) { return {V(first_minor), Vlast(15)}; }

// torch's dtype names in messages ("Half", "float").
std::string torchDTypeName(DType d);
std::string smText(ComputeCapability cc);  // "8.0"
std::string sizesText(const SdpaCall& c, char which);  // 'q', 'k', 'v': "[1, 16, 1024, 4]"
bool kvHeadsDiffer(const SdpaCall& c);

std::vector<SdpaRule> cudaRules();
std::vector<SdpaRule> cpuRules();

}  // namespace attnscope::torch_dispatch::detail
