#include "core/trace/kernel_summary.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

namespace attnscope {
namespace {

using ConfigKey = std::tuple<std::string_view, EventSource, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                             int32_t, int32_t, int32_t>;

ConfigKey keyOf(const TraceEvent& e) {
  const KernelInfo& k = e.kernel;
  return {e.name,     e.source,     k.grid[0],  k.grid[1],     k.grid[2],      k.block[0],
          k.block[1], k.block[2],   k.registers, k.static_smem, k.dynamic_smem};
}

}  // namespace

std::vector<KernelStats> summarizeKernels(const std::vector<TraceEvent>& events) {
  std::map<ConfigKey, KernelStats> groups;
  for (const TraceEvent& e : events) {
    if (e.kind != EventKind::kernel) continue;
    const int64_t d = std::max<int64_t>(0, e.end_ns - e.start_ns);
    auto [it, fresh] = groups.try_emplace(keyOf(e));
    KernelStats& s = it->second;
    if (fresh) {
      s.name = e.name;
      s.source = e.source;
      s.config = e.kernel;
      s.min_ns = s.max_ns = d;
    }
    ++s.count;
    s.total_ns += d;
    s.min_ns = std::min(s.min_ns, d);
    s.max_ns = std::max(s.max_ns, d);
  }
  std::vector<KernelStats> out;
  out.reserve(groups.size());
  for (auto& [key, s] : groups) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.name < b.name;
  });
  return out;
}

nlohmann::json toJson(const std::vector<KernelStats>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const KernelStats& s : kernels) {
    const KernelInfo& k = s.config;
    out.push_back({{"name", s.name},
                   {"source", std::string(toString(s.source))},
                   {"count", s.count},
                   {"total_ns", s.total_ns},
                   {"mean_ns", s.meanNs()},
                   {"min_ns", s.min_ns},
                   {"max_ns", s.max_ns},
                   {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                   {"block", {k.block[0], k.block[1], k.block[2]}},
                   {"registers", k.registers},
                   {"static_smem", k.static_smem},
                   {"dynamic_smem", k.dynamic_smem}});
  }
  return out;
}

}  // namespace attnscope
