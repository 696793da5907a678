// Every buffer a CPU backend plans is allocated under the same name with exactly the planned
// size, and nothing is allocated that the plan does not name, for every dtype and mask layout.
// Comparing only the planned and measured peaks misses a buffer that is planned short when
// another buffer of the same step makes the peak (fp16/bf16 conversions, for instance).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/backend_registry.h"
#include "core/run_engine.h"
#include "kernels/cpu/cpu_backends.h"

namespace attnscope {
namespace {

WorkloadSpec spec(DType dtype, const char* mask, MaskLayout layout) {
  WorkloadSpec s;
  s.batch = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.seq_q = 48;
  s.seq_kv = 80;
  s.head_dim = 24;
  s.dtype = dtype;
  s.mask = *parseMask(mask).mask;
  s.mask_layout = layout;
  s.seed = 3;
  return s;
}

// Allocation events of the run's tracking allocator, by name: every size allocated under it.
std::map<std::string, std::vector<int64_t>> allocationsByName(const RunResult& r) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::alloc && e.source == EventSource::allocator) out[e.name].push_back(e.bytes);
  return out;
}

TEST(PlanBuffers, EveryPlannedBufferIsAllocatedUnderItsNameWithItsSize) {
  BackendRegistry registry;
  registerCpuBackends(registry);
  int backends = 0;
  for (Backend* backend : registry.all()) {
    if (backend->id().rfind("cpu.", 0) != 0) continue;
    ++backends;
    for (DType dtype : {DType::fp32, DType::fp16, DType::bf16})
      for (auto [mask, layout] : {std::pair{"none", MaskLayout::broadcast}, std::pair{"causal", MaskLayout::broadcast},
                                  std::pair{"dense:0.5", MaskLayout::per_head}, std::pair{"dense", MaskLayout::broadcast}}) {
        const WorkloadSpec s = spec(dtype, mask, layout);
        RunOptions opt;
        opt.warmup = 0;
        opt.reps = 1;
        opt.check_accuracy = false;
        const RunResult r = runPoint(*backend, s, opt);
        const std::string where = backend->id() + " " + summary(s);
        ASSERT_EQ(r.status, RunStatus::ok) << where << ": " << r.message;
        const auto allocated = allocationsByName(r);
        ASSERT_FALSE(r.plan.buffers.empty()) << where;
        for (const PlannedBuffer& b : r.plan.buffers) {
          auto it = allocated.find(b.name);
          ASSERT_NE(it, allocated.end()) << where << ": planned buffer '" << b.name << "' was never allocated";
          for (int64_t bytes : it->second)
            EXPECT_EQ(bytes, b.bytes) << where << ": buffer '" << b.name << "' planned at " << b.bytes
                                      << " bytes, allocated at " << bytes;
        }
        for (const auto& [name, sizes] : allocated) {
          const bool planned = std::any_of(r.plan.buffers.begin(), r.plan.buffers.end(),
                                           [&](const PlannedBuffer& b) { return b.name == name; });
          EXPECT_TRUE(planned) << where << ": '" << name << "' (" << sizes.front() << " bytes) is not in the plan";
        }
      }
  }
  EXPECT_GE(backends, 2);
}

}  // namespace
}  // namespace attnscope
