#pragma once
// Shared pieces of the store tests: a temporary folder, file bytes, and runs whose every field
// differs from its default so that a field the store forgets shows up as a mismatch.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/backend/memory_plan.h"
#include "core/result/run_result.h"
#include "core/store/store.h"
#include "core/spec/sweep_spec.h"
#include "tests/support/temp_dir.h"

namespace attnscope::test {


inline std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

inline void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A realistic event stream: per step an alloc, a few kernels and a free, with growing times.
inline TraceEvent sampleEvent(int64_t run, int64_t i) {
  TraceEvent e;
  int64_t t = 1'000'000 + i * 1500 + run;
  switch (i % 4) {
    case 0:
      e.kind = EventKind::alloc;
      e.source = EventSource::allocator;
      e.memory = MemoryKind::device;
      e.name = "scores";
      e.bytes = 4096 * (i % 97 + 1);
      break;
    case 1:
    case 2:
      e.kind = EventKind::kernel;
      e.source = EventSource::cupti;
      e.memory = MemoryKind::device;
      e.name = i % 8 == 1 ? "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4>, true>(Params)"
                          : "softmax_warp_forward";
      e.kernel.grid[0] = static_cast<int32_t>(i % 1000 + 1);
      e.kernel.grid[1] = 8;
      e.kernel.grid[2] = 1;
      e.kernel.block[0] = 128;
      e.kernel.block[1] = 1;
      e.kernel.block[2] = 1;
      e.kernel.registers = 255;
      e.kernel.static_smem = 49152;
      e.kernel.dynamic_smem = -1;  // odd on purpose: the sign must survive
      break;
    default:
      e.kind = EventKind::free;
      e.source = EventSource::allocator;
      e.memory = MemoryKind::device;
      e.name = "scores";
      e.bytes = 4096 * ((i - 3) % 97 + 1);
      break;
  }
  e.start_ns = t;
  e.end_ns = e.kind == EventKind::kernel ? t + 1200 : t;
  e.stream = static_cast<uint32_t>(7 + i % 3);
  e.device = 0xFFFFFFFFu - static_cast<uint32_t>(i % 2);
  e.address = 0xFFFF'8000'0000'0000ull + static_cast<uint64_t>(i / 4) * 4096;
  e.correlation = static_cast<uint64_t>(i) * 3 + 0x8000'0000'0000'0001ull;
  return e;
}

inline RunResult sampleRun(int64_t index, int64_t event_count) {
  RunResult r;
  r.spec.batch = 2;
  r.spec.heads = 8;
  r.spec.kv_heads = 2;
  r.spec.seq_q = 97;
  r.spec.seq_kv = 130;
  r.spec.head_dim = 59;
  r.spec.width = 0;
  r.spec.dtype = DType::bf16;
  r.spec.mask = MaskSpec{MaskKind::dense, 0, 1.0 / 3.0};
  r.spec.mask_layout = MaskLayout::per_head;
  r.spec.scale = 0.1234567890123;
  r.spec.seed = 0xFFFF'FFFF'FFFF'FF00ull + static_cast<uint64_t>(index % 200);
  r.backend = "cpu.flash";
  r.device = "cpu: 2 threads \xc3\xa9";  // non-ASCII on purpose
  r.status = RunStatus::oom;
  r.message = "point " + std::to_string(index);
  r.timing = Timing{2, 5, 0.25, 0.125, 0.5, {0.5, 0.25, 0.125, 1.0 / 7.0, 0.3}};
  r.flops = 1.5e12 + static_cast<double>(index);
  r.memory = MemoryFigures{1 << 20, (1 << 20) + 17, -1, 4096, 123456789012};
  r.plan.addStep("inputs");
  r.plan.addStep("scores");
  r.plan.add("q", 1000, 0, 1, BufferRole::input);
  r.plan.add("scores", 5000, 1, 1, BufferRole::workspace);
  r.accuracy = Accuracy{true, 1.0 / 1024.0, 2.5e-7, 97, 194, 0.01};
  r.trace.capture_note = "CUPTI unavailable: no driver";
  r.trace.dropped_records = 3;
  for (int64_t i = 0; i < event_count; ++i) r.trace.events.push_back(sampleEvent(index, i));
  r.started_unix_ms = 1'700'000'000'000 + index;
  r.wall_s = 1.75;
  return r;
}

inline SweepSpec sampleSweep(const std::string& name) {
  SweepSpec s;
  s.name = name;
  s.axes = {{"heads", {"8", "16"}}, {"seq", {"1024", "4096"}}};
  s.backends = {"cpu.reference", "cpu.flash"};
  s.reps = 5;
  return s;
}

inline void expectSameDouble(double a, double b, const char* what) {
  if (std::isnan(a)) EXPECT_TRUE(std::isnan(b)) << what;
  else EXPECT_EQ(a, b) << what;
}

inline void expectSameEvent(const TraceEvent& a, const TraceEvent& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.memory, b.memory);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.address, b.address);
  EXPECT_EQ(a.correlation, b.correlation);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(a.kernel.grid[d], b.kernel.grid[d]);
    EXPECT_EQ(a.kernel.block[d], b.kernel.block[d]);
  }
  EXPECT_EQ(a.kernel.registers, b.kernel.registers);
  EXPECT_EQ(a.kernel.static_smem, b.kernel.static_smem);
  EXPECT_EQ(a.kernel.dynamic_smem, b.kernel.dynamic_smem);
}

// Every field but id (compared by the caller) and, unless with_events, the events.
inline void expectSameRun(const RunResult& a, const RunResult& b, bool with_events) {
  EXPECT_EQ(a.spec, b.spec);
  EXPECT_EQ(a.spec.scale.has_value(), b.spec.scale.has_value());
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.timing.warmup, b.timing.warmup);
  EXPECT_EQ(a.timing.reps, b.timing.reps);
  expectSameDouble(a.timing.median_s, b.timing.median_s, "median_s");
  expectSameDouble(a.timing.min_s, b.timing.min_s, "min_s");
  expectSameDouble(a.timing.max_s, b.timing.max_s, "max_s");
  ASSERT_EQ(a.timing.samples_s.size(), b.timing.samples_s.size());
  for (size_t i = 0; i < a.timing.samples_s.size(); ++i)
    expectSameDouble(a.timing.samples_s[i], b.timing.samples_s[i], "samples_s");
  expectSameDouble(a.flops, b.flops, "flops");
  EXPECT_EQ(a.memory.predicted_peak, b.memory.predicted_peak);
  EXPECT_EQ(a.memory.measured_peak, b.memory.measured_peak);
  EXPECT_EQ(a.memory.cupti_peak, b.memory.cupti_peak);
  EXPECT_EQ(a.memory.io_bytes, b.memory.io_bytes);
  EXPECT_EQ(a.memory.available, b.memory.available);
  EXPECT_EQ(a.plan.steps, b.plan.steps);
  ASSERT_EQ(a.plan.buffers.size(), b.plan.buffers.size());
  for (size_t i = 0; i < a.plan.buffers.size(); ++i) {
    EXPECT_EQ(a.plan.buffers[i].name, b.plan.buffers[i].name);
    EXPECT_EQ(a.plan.buffers[i].bytes, b.plan.buffers[i].bytes);
    EXPECT_EQ(a.plan.buffers[i].first_step, b.plan.buffers[i].first_step);
    EXPECT_EQ(a.plan.buffers[i].last_step, b.plan.buffers[i].last_step);
    EXPECT_EQ(a.plan.buffers[i].role, b.plan.buffers[i].role);
  }
  EXPECT_EQ(a.accuracy.checked, b.accuracy.checked);
  expectSameDouble(a.accuracy.max_abs_error, b.accuracy.max_abs_error, "max_abs_error");
  expectSameDouble(a.accuracy.rel_l2_error, b.accuracy.rel_l2_error, "rel_l2_error");
  EXPECT_EQ(a.accuracy.rows_checked, b.accuracy.rows_checked);
  EXPECT_EQ(a.accuracy.rows_total, b.accuracy.rows_total);
  expectSameDouble(a.accuracy.tolerance, b.accuracy.tolerance, "tolerance");
  EXPECT_EQ(a.trace.capture_note, b.trace.capture_note);
  EXPECT_EQ(a.trace.dropped_records, b.trace.dropped_records);
  EXPECT_EQ(a.started_unix_ms, b.started_unix_ms);
  expectSameDouble(a.wall_s, b.wall_s, "wall_s");
  if (with_events) {
    ASSERT_EQ(a.trace.events.size(), b.trace.events.size());
    for (size_t i = 0; i < a.trace.events.size(); ++i) {
      SCOPED_TRACE("event " + std::to_string(i));
      expectSameEvent(a.trace.events[i], b.trace.events[i]);
    }
  }
}

}  // namespace attnscope::test
