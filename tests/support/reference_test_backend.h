#pragma once
// The test backend the core, trace and CUPTI tests share: computes attention with the float64
// reference and allocates through a tracking allocator of a chosen memory kind (host, or
// "device" memory that is really malloc, so the engine's device path runs without a GPU), as a
// real backend would. One phase per pass ("compute"); optional knobs for the tests that need them.

#include <memory>
#include <string>

#include "core/backend/backend.h"

namespace attnscope::testing {

// A TrackingAllocator of device kind over malloc.
class FakeDeviceAllocator final : public TrackingAllocator {
 public:
  FakeDeviceAllocator() : TrackingAllocator(MemoryKind::device, 0) {}

 protected:
  void* rawAllocate(int64_t bytes) override;
  void rawFree(void* p) override;
  std::string where() const override { return "fake device"; }
};

class ReferenceTestBackend : public Backend {
 public:
  explicit ReferenceTestBackend(MemoryKind kind = MemoryKind::host) : kind_(kind) {}

  int64_t available = -1;         // what memoryAvailable() says; -1: unknown
  bool slow = false;              // each pass sleeps up to 5 s in small cancellable steps
  bool scratch_per_pass = false;  // each pass allocates and frees a 4 KiB "scratch" buffer

  // "test.reference" on the host, "test.reference_device" with the fake device memory.
  std::string id() const override;
  std::string device() const override { return kind_ == MemoryKind::host ? "cpu" : "cuda:0"; }
  std::string description() const override { return "float64 reference (tests)"; }
  Availability availability() const override { return {}; }
  // Refuses bf16 (a reason, so the engine's unsupported path has something to report).
  Support support(const WorkloadSpec& s) const override;
  // One input buffer of the spec's I/O bytes (scratch is not planned: it is the unplanned extra).
  MemoryPlan plan(const WorkloadSpec& s) const override;
  int64_t memoryAvailable() const override { return available; }
  std::unique_ptr<TrackingAllocator> makeAllocator() const override;
  std::unique_ptr<Execution> prepare(const WorkloadSpec& s, const HostInputs& in, RunContext& ctx) override;

 private:
  MemoryKind kind_;
};

// heads 2, seq 16, head_dim 8: small enough for every check to be instant.
WorkloadSpec smallTestSpec();

}  // namespace attnscope::testing
