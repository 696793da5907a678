// The run engine with a trace capture: device events merged, CUPTI peak computed from them (and
// only for device backends), dropped records and notes kept, inactive capture noted.
#include <gtest/gtest.h>

#include "core/base/clock.h"
#include "core/engine/run_engine.h"
#include "reference_test_backend.h"
#include "tests/trace/trace_builders.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {

class FakeCapture : public TraceCapture {
 public:
  bool is_active = true;
  int begins = 0, ends = 0;
  int64_t begin_ns = 0;
  bool active() const override { return is_active; }
  std::string note() const override { return is_active ? "" : "CUPTI unavailable: test says so"; }
  void beginRun() override {
    ++begins;
    begin_ns = nowNs();
  }
  Trace endRun() override {
    ++ends;
    Trace t;
    const int64_t b = begin_ns;
    // What CUPTI would see: our buffers plus a library workspace; one free of an earlier block.
    t.events = {alloc(b + 10, 0x7000, 4096, EventSource::cupti), alloc(b + 20, 0x8000, 1 << 20, EventSource::cupti),
                release(b + 30, 0x7000, 0, EventSource::cupti), release(b + 40, 0x8000, 0, EventSource::cupti),
                release(b + 5, 0x9999, 0, EventSource::cupti),
                activity(EventKind::kernel, "attn", b + 15, b + 25, 7)};
    t.dropped_records = 3;
    t.capture_note = "CUPTI dropped 3 activity records; device figures are incomplete";
    return t;
  }
};

}  // namespace

TEST(EngineCapture, DeviceRunGetsCuptiPeakAndEvents) {
  ReferenceTestBackend backend(MemoryKind::device);
  backend.scratch_per_pass = true;
  FakeCapture capture;
  RunOptions o;
  o.capture = &capture;
  o.reps = 2;
  RunResult r = runPoint(backend, smallTestSpec(), o);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(capture.begins, 1);
  EXPECT_EQ(capture.ends, 1);
  EXPECT_EQ(r.memory.cupti_peak, 4096 + (1 << 20));
  EXPECT_GT(r.memory.measured_peak, 0);
  EXPECT_EQ(r.trace.dropped_records, 3);
  EXPECT_NE(r.trace.capture_note.find("dropped 3"), std::string::npos);
  int cupti = 0, allocator = 0, phases = 0;
  for (const auto& e : r.trace.events) {
    cupti += e.source == EventSource::cupti;
    allocator += e.source == EventSource::allocator;
    phases += e.kind == EventKind::phase;
  }
  EXPECT_EQ(cupti, 6);
  EXPECT_EQ(allocator, 2 + 2 * 3);  // io, and scratch in each of the 3 passes: alloc and free
  EXPECT_EQ(phases, 3);  // one per pass: 1 warm-up + 2 reps
  for (size_t i = 1; i < r.trace.events.size(); ++i)
    EXPECT_LE(r.trace.events[i - 1].start_ns, r.trace.events[i].start_ns);
}

TEST(EngineCapture, HostRunHasNoCuptiPeak) {
  ReferenceTestBackend backend(MemoryKind::host);
  FakeCapture capture;
  RunOptions o;
  o.capture = &capture;
  RunResult r = runPoint(backend, smallTestSpec(), o);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(r.memory.cupti_peak, -1);
}

TEST(EngineCapture, InactiveCaptureIsNotedAndTheRunCompletes) {
  ReferenceTestBackend backend(MemoryKind::device);
  FakeCapture capture;
  capture.is_active = false;
  RunOptions o;
  o.capture = &capture;
  RunResult r = runPoint(backend, smallTestSpec(), o);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(capture.begins, 0);
  EXPECT_EQ(capture.ends, 0);
  EXPECT_EQ(r.memory.cupti_peak, -1);
  EXPECT_EQ(r.trace.capture_note, "CUPTI unavailable: test says so");
  EXPECT_GT(r.memory.measured_peak, 0);
}
