#pragma once
// Device-side trace capture through the CUPTI Activity API. No CUPTI types in this header: the
// app includes it (under ATTNSCOPE_HAVE_CUPTI) without seeing CUPTI.
//
// Use: call CuptiCapture::start() once at start-up, before the first CUDA call of the process
// (before registerBuiltinBackends, whose CUDA probe initialises the runtime), and pass the result
// as RunOptions::capture. CUPTI must be set up before the CUDA context exists, or it misses the
// context's records.
//
// What is traced: CONCURRENT_KERNEL (never KERNEL, which serialises kernels), MEMCPY, MEMSET,
// MEMORY2 (every device allocation and free, cuBLAS/cuDNN internals included), MEMORY_POOL, and
// MARKER (NVTX ranges, when NVTX is routed to CUPTI). CUPTI's worker thread hands full buffers to
// a callback that converts records into plain TraceEvents at once (strings copied), so no CUPTI
// memory outlives the callback. endRun() flushes (cuptiActivityFlushAll, forced) and returns the
// run's events and the number of records CUPTI dropped.
//
// Phases: the run's phase ranges are the host timestamps RunContext records (beginPhase/endPhase);
// the capture puts CUPTI times on that same clock instead of emitting NVTX ranges, so phases exist
// identically on CPU and GPU runs and need no NVTX injection. NVTX ranges from libraries still
// appear as "cupti" phase events when present.
//
// Clock: CUPTI timestamps are on CUPTI's clock (cuptiGetTimestamp). At start and at every
// beginRun the capture samples the pair (nowNs, cuptiGetTimestamp) a few times, keeps the sample
// with the narrowest host bracket, and adds the offset to every record, so device events sit on
// the steady-clock base of core/base/clock.h within a microsecond or so; re-sampling per run bounds
// drift.
//
// When CUPTI cannot start (no driver, another profiler already subscribed, insufficient
// permissions) active() is false and note() says "CUPTI unavailable: <reason>"; the engine then
// stores the note with each run and the allocator's figures stand alone.
//
// The devices' kernels must be finished before endRun: the backends synchronise in run(), and the
// capture makes no CUDA call of its own (it must not create a context for a CPU-only run).

#include <memory>
#include <string>
#include <vector>

#include "core/trace/trace_capture.h"

namespace attnscope {

class CuptiCapture final : public TraceCapture {
 public:
  // The process-wide capture; the first call enables CUPTI, later calls return the same object.
  // Never destroyed (CUPTI's thread may call back during exit).
  static CuptiCapture& start();

  bool active() const override;
  std::string note() const override;
  void beginRun() override;
  Trace endRun() override;

  // The activity kinds enabled, e.g. {"CONCURRENT_KERNEL", "MEMCPY", ...}; empty when inactive.
  std::vector<std::string> enabledKinds() const;
  // Every CUPTI call that failed so far, "call text: CUPTI_ERROR_..." (most recent last).
  std::vector<std::string> errors() const;

  ~CuptiCapture() override;
  CuptiCapture(const CuptiCapture&) = delete;
  CuptiCapture& operator=(const CuptiCapture&) = delete;

  struct State;  // defined in cupti_capture.cpp; public so CUPTI's C callbacks can reach it

 private:
  CuptiCapture();
  std::unique_ptr<State> s_;
};

}  // namespace attnscope
