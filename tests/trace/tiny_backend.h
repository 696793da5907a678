#pragma once
// A small backend for trace tests: computes with the float64 reference, allocates through a
// tracking allocator of a chosen memory kind (host, or "device" memory that is really malloc, so
// the device path of the engine runs without a GPU), and records one phase per pass.

#include <cstdlib>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/reference.h"

namespace attnscope::testing {

class FakeDeviceAllocator final : public TrackingAllocator {
 public:
  FakeDeviceAllocator() : TrackingAllocator(MemoryKind::device, 0) {}
  ~FakeDeviceAllocator() override = default;

 protected:
  void* rawAllocate(int64_t bytes) override { return std::malloc(static_cast<size_t>(bytes)); }
  void rawFree(void* p) override { std::free(p); }
  std::string where() const override { return "fake device"; }
};

class TinyBackend : public Backend {
 public:
  explicit TinyBackend(MemoryKind kind = MemoryKind::host) : kind_(kind) {}
  std::string id() const override { return kind_ == MemoryKind::host ? "test.tiny" : "test.tiny_device"; }
  std::string device() const override { return kind_ == MemoryKind::host ? "cpu" : "cuda:0"; }
  std::string description() const override { return "float64 reference (trace tests)"; }
  Availability availability() const override { return {}; }
  Support support(const WorkloadSpec&) const override { return {}; }
  MemoryPlan plan(const WorkloadSpec& s) const override {
    MemoryPlan p;
    int st = p.addStep("all");
    p.add("io", s.ioBytes(), st, st, BufferRole::input);
    return p;
  }
  int64_t memoryAvailable() const override { return -1; }
  std::unique_ptr<TrackingAllocator> makeAllocator() const override {
    if (kind_ == MemoryKind::host) return std::make_unique<HostAllocator>();
    return std::make_unique<FakeDeviceAllocator>();
  }
  std::unique_ptr<Execution> prepare(const WorkloadSpec& s, const HostInputs& in, RunContext& ctx) override {
    struct Exec : Execution {
      WorkloadSpec s;
      const HostInputs* in = nullptr;
      RunContext* ctx = nullptr;
      Buffer<uint8_t> io;
      std::vector<float> o;
      double run() override {
        PhaseScope phase(*ctx, "compute");
        Buffer<float> scratch(ctx->allocator(), 1024, "scratch");
        std::vector<int64_t> rows(static_cast<size_t>(s.batch * s.heads * s.seq_q));
        for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
        std::vector<double> out;
        referenceRows(s, *in, rows, out);
        o.assign(out.begin(), out.end());
        return 1e-3;
      }
      void output(std::vector<float>& out) override { out = o; }
    };
    auto e = std::make_unique<Exec>();
    e->s = s;
    e->in = &in;
    e->ctx = &ctx;
    e->io = Buffer<uint8_t>(ctx.allocator(), s.ioBytes(), "io");
    return e;
  }

 private:
  MemoryKind kind_;
};

inline WorkloadSpec tinySpec() {
  WorkloadSpec s;
  s.heads = 2;
  s.seq_q = 16;
  s.head_dim = 8;
  return s;
}

}  // namespace attnscope::testing
