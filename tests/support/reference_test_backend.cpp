#include "reference_test_backend.h"

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/check/reference.h"

namespace attnscope::testing {

void* FakeDeviceAllocator::rawAllocate(int64_t bytes) { return std::malloc(static_cast<size_t>(bytes)); }
void FakeDeviceAllocator::rawFree(void* p) { std::free(p); }

std::string ReferenceTestBackend::id() const {
  return kind_ == MemoryKind::host ? "test.reference" : "test.reference_device";
}

Support ReferenceTestBackend::support(const WorkloadSpec& s) const {
  Support r;
  if (s.dtype == DType::bf16) r.reasons.push_back("bf16 not supported by the test backend");
  return r;
}

MemoryPlan ReferenceTestBackend::plan(const WorkloadSpec& s) const {
  MemoryPlan p;
  const int step = p.addStep("all");
  p.add("io", s.ioBytes(), step, step, BufferRole::input);
  return p;
}

std::unique_ptr<TrackingAllocator> ReferenceTestBackend::makeAllocator() const {
  if (kind_ == MemoryKind::host) return std::make_unique<HostAllocator>();
  return std::make_unique<FakeDeviceAllocator>();
}

std::unique_ptr<Execution> ReferenceTestBackend::prepare(const WorkloadSpec& s, const HostInputs& in, RunContext& ctx) {
  struct Exec : Execution {
    WorkloadSpec s;
    const HostInputs* in = nullptr;
    RunContext* ctx = nullptr;
    bool slow = false, scratch = false;
    Buffer<uint8_t> io;
    std::vector<float> o;
    double run() override {
      PhaseScope phase(*ctx, "compute");
      for (int i = 0; slow && i < 1000; ++i) {
        ctx->throwIfCancelled();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      Buffer<float> scratch_buffer;
      if (scratch) scratch_buffer = Buffer<float>(ctx->allocator(), 1024, "scratch");
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
  e->slow = slow;
  e->scratch = scratch_per_pass;
  e->io = Buffer<uint8_t>(ctx.allocator(), s.ioBytes(), "io");
  return e;
}

WorkloadSpec smallTestSpec() {
  WorkloadSpec s;
  s.heads = 2;
  s.seq_q = 16;
  s.head_dim = 8;
  return s;
}

}  // namespace attnscope::testing
