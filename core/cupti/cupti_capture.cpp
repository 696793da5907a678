#include "core/cupti/cupti_capture.h"

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "core/base/clock.h"
#include "core/cupti/cupti_adapter.h"

namespace attnscope {

struct CuptiCapture::State {
  mutable std::mutex mu;
  bool active = false;
  std::string note;
  std::vector<std::string> enabled;
  std::vector<std::string> errors;
  CuptiActivityAdapter adapter;   // guarded by mu
  std::vector<TraceEvent> pending;  // guarded by mu: events since beginRun
  int64_t dropped = 0;            // guarded by mu
  std::string walk_error;         // guarded by mu: a buffer that could not be walked to its end
  int64_t untimed_at_begin = 0;   // guarded by mu: adapter.untimed() when the run began
  size_t errors_at_begin = 0;     // guarded by mu: errors.size() when the run began

  // Records the call text and CUPTI's result string for any failure (the CUPTI_CALL macro).
  bool check(CUptiResult r, const char* call) {
    if (r == CUPTI_SUCCESS) return true;
    std::lock_guard lock(mu);
    errors.push_back(std::string(call) + ": " + resultString(r));
    return false;
  }
  static std::string resultString(CUptiResult r) {
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(static_cast<int>(r));
    return s;
  }
  std::string lastError() const {
    std::lock_guard lock(mu);
    return errors.empty() ? std::string() : errors.back();
  }
};

#define CUPTI_CALL(state, call) (state).check((call), #call)

namespace {

constexpr size_t kBufferBytes = 8u << 20;  // 8 MiB: about 38,000 kernel records per buffer

// CUPTI's callbacks are plain C functions; the capture is a never-destroyed singleton.
std::atomic<CuptiCapture::State*> g_state{nullptr};

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // Declining (nullptr) makes CUPTI drop records, which it counts; that is the right response to
  // an allocation failure here.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  CuptiCapture::State* s = g_state.load();
  if (s && buffer && valid > 0) {
    std::vector<TraceEvent> events;
    std::lock_guard lock(s->mu);
    auto walk = s->adapter.appendBuffer(buffer, valid, events);
    if (walk.status != CUPTI_SUCCESS)
      s->walk_error = "cuptiActivityGetNextRecord stopped after " + std::to_string(walk.records) +
                      " records: " + CuptiCapture::State::resultString(walk.status);
    s->pending.insert(s->pending.end(), std::make_move_iterator(events.begin()), std::make_move_iterator(events.end()));
  }
  if (s) {
    size_t dropped = 0;
    if (CUPTI_CALL(*s, cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped)) && dropped > 0) {
      std::lock_guard lock(s->mu);
      s->dropped += static_cast<int64_t>(dropped);
    }
  }
  std::free(buffer);
}

// nowNs() - cuptiGetTimestamp(), from the sample with the narrowest host bracket.
bool sampleOffset(CuptiCapture::State& s, int64_t& offset) {
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 7; ++i) {
    uint64_t cupti_ns = 0;
    const int64_t before = nowNs();
    if (!CUPTI_CALL(s, cuptiGetTimestamp(&cupti_ns))) return false;
    const int64_t after = nowNs();
    if (after - before < best_width) {
      best_width = after - before;
      offset = before + (after - before) / 2 - static_cast<int64_t>(cupti_ns);
    }
  }
  return true;
}

std::string friendlyReason(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "another profiler (Nsight, a framework profiler) is already subscribed to CUPTI";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "insufficient privileges for GPU performance counters (see NVreg_RestrictProfilingToAdminUsers)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED: return "tracing is not supported on this virtual GPU";
    default: return {};
  }
}

struct KindToEnable {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};

}  // namespace

CuptiCapture& CuptiCapture::start() {
  static CuptiCapture* capture = new CuptiCapture();
  return *capture;
}

CuptiCapture::CuptiCapture() : s_(std::make_unique<State>()) {
  State& s = *s_;
  g_state.store(&s);
  CUptiResult first_failure = CUPTI_SUCCESS;
  auto fail = [&](CUptiResult r, const std::string& what) {
    std::string why = friendlyReason(r);
    if (why.empty()) {
      // CUPTI's own code is often CUPTI_ERROR_UNKNOWN without a driver; the runtime says why.
      int devices = 0;
      cudaError_t e = cudaGetDeviceCount(&devices);
      why = what + " failed (" + State::resultString(r) + ")";
      if (e != cudaSuccess)
        why += "; CUDA runtime: " + std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
      else if (devices == 0)
        why += "; no CUDA device";
    }
    s.note = "CUPTI unavailable: " + why;
  };

  CUptiResult r = cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
  if (!s.check(r, "cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted)")) {
    fail(r, "cuptiActivityRegisterCallbacks");
    return;
  }
  // CONCURRENT_KERNEL, never KERNEL: KERNEL serialises every launch on the device.
  const KindToEnable kinds[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", false},
      {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", false},
      {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", true},
      {CUPTI_ACTIVITY_KIND_MEMORY_POOL, "MEMORY_POOL", false},
      {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", false},
  };
  std::vector<std::string> missing;
  for (const KindToEnable& k : kinds) {
    r = cuptiActivityEnable(k.kind);
    if (s.check(r, ("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_" + std::string(k.name) + ")").c_str())) {
      s.enabled.push_back(k.name);
    } else if (k.required) {
      first_failure = r;
      fail(r, "cuptiActivityEnable(" + std::string(k.name) + ")");
      break;
    } else {
      missing.push_back(std::string(k.name) + " (" + State::resultString(r) + ")");
    }
  }
  int64_t offset = 0;
  if (first_failure == CUPTI_SUCCESS && !sampleOffset(s, offset)) {
    first_failure = CUPTI_ERROR_UNKNOWN;
    s.note = "CUPTI unavailable: " + s.lastError();
  }
  if (first_failure != CUPTI_SUCCESS) {
    for (const KindToEnable& k : kinds)
      if (std::find(s.enabled.begin(), s.enabled.end(), k.name) != s.enabled.end())
        CUPTI_CALL(s, cuptiActivityDisable(k.kind));
    s.enabled.clear();
    return;
  }
  s.adapter.setHostOffsetNs(offset);
  s.active = true;
  s.errors_at_begin = s.errors.size();  // start-up failures are in the note already
  if (!missing.empty()) {
    s.note = "CUPTI partial: not traced:";
    for (const auto& m : missing) s.note += " " + m;
  }
}

CuptiCapture::~CuptiCapture() { g_state.store(nullptr); }

bool CuptiCapture::active() const { return s_->active; }

std::string CuptiCapture::note() const {
  std::lock_guard lock(s_->mu);
  return s_->note;
}

std::vector<std::string> CuptiCapture::enabledKinds() const {
  std::lock_guard lock(s_->mu);
  return s_->enabled;
}

std::vector<std::string> CuptiCapture::errors() const {
  std::lock_guard lock(s_->mu);
  return s_->errors;
}

void CuptiCapture::beginRun() {
  State& s = *s_;
  if (!s.active) return;
  // The run's errors: its own calls below, and CUPTI's thread's (bufferCompleted) during the run.
  {
    std::lock_guard lock(s.mu);
    s.errors_at_begin = s.errors.size();
  }
  // Whatever CUPTI still holds belongs to earlier work; flush it out and drop it.
  CUPTI_CALL(s, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  int64_t offset = 0;
  const bool resampled = sampleOffset(s, offset);
  size_t dropped = 0;
  CUPTI_CALL(s, cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  std::lock_guard lock(s.mu);
  if (resampled) s.adapter.setHostOffsetNs(offset);
  s.pending.clear();
  s.dropped = 0;
  s.walk_error.clear();
  s.untimed_at_begin = s.adapter.untimed();
}

Trace CuptiCapture::endRun() {
  State& s = *s_;
  Trace t;
  if (!s.active) {
    t.capture_note = note();
    return t;
  }
  CUPTI_CALL(s, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  size_t dropped = 0;
  CUPTI_CALL(s, cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  std::lock_guard lock(s.mu);
  t.events = std::exchange(s.pending, {});
  t.dropped_records = s.dropped + static_cast<int64_t>(dropped);
  s.dropped = 0;
  std::string note = s.note;  // "CUPTI partial: ..." when some kinds could not be enabled
  auto add = [&note](const std::string& part) { note += (note.empty() ? "" : "; ") + part; };
  if (t.dropped_records > 0)
    add("CUPTI dropped " + std::to_string(t.dropped_records) + " activity records; device figures are incomplete");
  // Records CUPTI could not time (e.g. kernels, for lack of device memory) are left out of the
  // events: the run's kernel list is then short, which must be said like a drop.
  const int64_t untimed = s.adapter.untimed() - s.untimed_at_begin;
  s.untimed_at_begin = s.adapter.untimed();
  if (untimed > 0)
    add("CUPTI gave " + std::to_string(untimed) + " activity records without timestamps; they are left out");
  if (!s.walk_error.empty()) add(s.walk_error);
  for (size_t i = std::min(s.errors_at_begin, s.errors.size()); i < s.errors.size(); ++i) add(s.errors[i]);
  s.errors_at_begin = s.errors.size();
  t.capture_note = std::move(note);
  return t;
}

}  // namespace attnscope
