#pragma once
// Checks one backend's plan against what it really allocated: every planned buffer is allocated
// under the same name with exactly the planned size, and nothing is allocated that the plan does
// not name. Comparing only the planned and measured peaks misses a buffer planned short when
// another buffer of the same step makes the peak (fp16/bf16 conversions, for instance).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/engine/run_engine.h"
#include "tests/support/spec_builder.h"

namespace attnscope::plancheck {

inline WorkloadSpec spec(DType dtype, const char* mask, MaskLayout layout) {
  return test::specOf({.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 48, .seq_kv = 80, .head_dim = 32, .dtype = dtype,
                       .mask = mask, .layout = layout, .seed = 3});
}

inline const std::vector<std::pair<const char*, MaskLayout>>& masks() {
  static const std::vector<std::pair<const char*, MaskLayout>> m{{"none", MaskLayout::broadcast},
                                                                 {"causal", MaskLayout::broadcast},
                                                                 {"dense:0.5", MaskLayout::per_head},
                                                                 {"dense", MaskLayout::broadcast}};
  return m;
}

// The passes: forward, and train with and without checkpointing.
inline const std::vector<std::pair<Pass, Checkpoint>>& passes() {
  static const std::vector<std::pair<Pass, Checkpoint>> p{
      {Pass::forward, Checkpoint::none}, {Pass::train, Checkpoint::none}, {Pass::train, Checkpoint::attention}};
  return p;
}

// Runs one spec on the backend and checks its allocations against its plan; false when the
// backend does not support the spec (nothing checked).
inline bool expectPlanIsWhatIsAllocated(Backend& backend, const WorkloadSpec& s) {
  if (!backend.support(s).ok()) return false;
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.check = CheckMode::off;
  const RunResult r = runPoint(backend, s, opt);
  const std::string where = backend.id() + " " + summary(s) + " pass " + std::string(toString(s.pass)) +
                            " checkpoint " + std::string(toString(s.checkpoint));
  EXPECT_EQ(r.status, RunStatus::ok) << where << ": " << r.message;
  if (r.status != RunStatus::ok) return false;
  std::map<std::string, std::vector<int64_t>> allocated;
  for (const TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::alloc && e.source == EventSource::allocator) allocated[e.name].push_back(e.bytes);
  EXPECT_FALSE(r.plan.buffers.empty()) << where;
  for (const PlannedBuffer& b : r.plan.buffers) {
    auto it = allocated.find(b.name);
    if (it == allocated.end()) {
      ADD_FAILURE() << where << ": planned buffer '" << b.name << "' was never allocated";
      continue;
    }
    for (int64_t bytes : it->second)
      EXPECT_EQ(bytes, b.bytes) << where << ": buffer '" << b.name << "' planned at " << b.bytes
                                << " bytes, allocated at " << bytes;
  }
  for (const auto& [name, sizes] : allocated) {
    const bool planned = std::any_of(r.plan.buffers.begin(), r.plan.buffers.end(),
                                     [&](const PlannedBuffer& b) { return b.name == name; });
    EXPECT_TRUE(planned) << where << ": '" << name << "' (" << sizes.front() << " bytes) is not in the plan";
  }
  return true;
}

// Runs every dtype, mask and pass on the backend; returns how many points were supported and
// checked (a backend refuses what it does not compute, e.g. train on CUDA, and is skipped there).
inline int expectPlanIsWhatIsAllocated(Backend& backend) {
  int checked = 0;
  for (DType dtype : {DType::fp32, DType::fp16, DType::bf16})
    for (const auto& [mask, layout] : masks())
      for (const auto& [pass, checkpoint] : passes()) {
        WorkloadSpec s = spec(dtype, mask, layout);
        s.pass = pass;
        s.checkpoint = checkpoint;
        if (expectPlanIsWhatIsAllocated(backend, s)) ++checked;
      }
  return checked;
}

}  // namespace attnscope::plancheck
