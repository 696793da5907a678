// CuptiCapture where CUPTI cannot trace (this machine: CUDA toolkit, no driver, no GPU): it says
// why, once, and a run through the engine with the capture still completes with the allocator's
// figures. On a GPU machine the same test checks the active path instead.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/cupti/cupti_capture.h"
#include "core/engine/run_engine.h"
#include "reference_test_backend.h"

using namespace attnscope;
using namespace attnscope::testing;

TEST(CuptiCapture, ReportsWhyItIsUnavailableOrWhatItTraces) {
  CuptiCapture& capture = CuptiCapture::start();
  EXPECT_EQ(&capture, &CuptiCapture::start());  // one per process
  const std::string note = capture.note();
  std::printf("CUPTI active=%d note=\"%s\"\n", capture.active(), note.c_str());
  if (capture.active()) {
    auto kinds = capture.enabledKinds();
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), "CONCURRENT_KERNEL"), kinds.end());
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), "MEMORY2"), kinds.end());
    EXPECT_EQ(std::find(kinds.begin(), kinds.end(), "KERNEL"), kinds.end());
    return;
  }
  EXPECT_EQ(note.rfind("CUPTI unavailable: ", 0), 0u) << note;
  EXPECT_GT(note.size(), std::string("CUPTI unavailable: ").size() + 10);
  // The failing call is named, with CUPTI's result string.
  auto errors = capture.errors();
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.front().find("cuptiActivity"), std::string::npos) << errors.front();
  EXPECT_NE(errors.front().find("CUPTI_ERROR_"), std::string::npos) << errors.front();
  EXPECT_TRUE(capture.enabledKinds().empty());
  // Without a driver the CUDA runtime's reason is part of the note.
  if (note.find("CUDA runtime") != std::string::npos) {
    EXPECT_NE(note.find("driver"), std::string::npos) << note;
  }
  Trace t = capture.endRun();
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.capture_note, note);
}

TEST(CuptiCapture, RunsCompleteWithTheCapture) {
  CuptiCapture& capture = CuptiCapture::start();
  for (MemoryKind kind : {MemoryKind::host, MemoryKind::device}) {
    ReferenceTestBackend backend(kind);
    RunOptions o;
    o.capture = &capture;
    o.reps = 2;
    RunResult r = runPoint(backend, smallTestSpec(), o);
    ASSERT_EQ(r.status, RunStatus::ok) << r.message;
    EXPECT_TRUE(r.accuracy.passed());
    EXPECT_GT(r.memory.measured_peak, 0);
    EXPECT_EQ(r.memory.cupti_peak, kind == MemoryKind::host || !capture.active() ? -1 : 0);
    if (!capture.active()) {
      EXPECT_EQ(r.trace.capture_note, capture.note());
      EXPECT_EQ(r.trace.dropped_records, 0);
    }
    for (const auto& e : r.trace.events) EXPECT_NE(e.source, EventSource::cupti);  // the fake device is malloc
  }
}
