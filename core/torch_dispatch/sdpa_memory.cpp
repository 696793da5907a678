#include "core/torch_dispatch/sdpa_memory.h"

#include <algorithm>
#include <climits>

namespace attnscope::torch_dispatch {

namespace {

constexpr TorchVersion V(int minor, int patch = 0) { return {2, minor, patch}; }

// Steps and buffers in allocation order; a buffer lives from the step it is allocated in until
// the step it is freed in (inclusive), or to the end.
class PlanBuilder {
 public:
  void step(std::string name) { plan_.addStep(std::move(name)); }
  size_t alloc(std::string name, int64_t bytes, BufferRole role) {
    if (bytes <= 0) return SIZE_MAX;
    plan_.add(std::move(name), bytes, current(), INT_MAX, role);
    return plan_.buffers.size() - 1;
  }
  void free(size_t index) {
    if (index < plan_.buffers.size()) plan_.buffers[index].last_step = current();
  }
  size_t transient(std::string name, int64_t bytes, BufferRole role = BufferRole::workspace) {
    size_t i = alloc(std::move(name), bytes, role);
    free(i);
    return i;
  }
  MemoryPlan finish() {
    for (auto& b : plan_.buffers) b.last_step = std::min(b.last_step, plan_.stepCount() - 1);
    return std::move(plan_);
  }

 private:
  int current() const { return plan_.stepCount() - 1; }
  MemoryPlan plan_;
};

std::string dt(DType d) { return std::string(toString(d)); }

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Mask conversion variants (§4.1): A zeros_like + masked_fill_ (2.0-2.1), B where(logical_not)
// (2.2-2.6), C where(mask, 0, -inf) (2.7+). A and B hold a transient bool logical_not.
char maskVariant(const TorchVersion& v) { return v < V(2) ? 'A' : v < V(7) ? 'B' : 'C'; }

struct Sizes {
  int64_t B, Hq, Hkv, L, S, D, Dv, e;
  int64_t N() const { return B * Hq * L * S; }
};

}  // namespace

int64_t cpuFlashQSplit(int64_t seq_q) {
  const int64_t s = seq_q >= 768 ? 256 : seq_q >= 192 ? 64 : 32;
  return std::min(s, seq_q);
}
int64_t cpuFlashKvSplit(int64_t seq_kv) { return std::min<int64_t>(512, seq_kv); }

int64_t cublasWorkspaceBytes(const TorchTarget& t) {
  // CUBLAS_WORKSPACE_CONFIG default ":4096:2:16:8" = 4096 KiB·2 + 16 KiB·8; 32 MiB on sm90 (and on
  // sm10x/sm12x in newer CublasHandlePool.cpp).
  const int major = t.capability.major;
  if (major == 9 || major == 10 || major == 12) return 33554432;
  return 4096 * 1024 * 2 + 16 * 1024 * 8;
}

namespace {

// The steps each kernel adds after the inputs.
struct Builder {
  PlanBuilder& p;
  SdpaMemory& m;
  const SdpaCall& call;
  const TorchTarget& t;
  Sizes z;

  bool cuda() const { return t.device == TorchDevice::cuda; }

  // convert_boolean_attn_mask (§4.1): the converted mask keeps the mask's shape, in q's dtype.
  size_t convertMask(int64_t numel, int64_t elem, DType to, const std::string& what) {
    const char variant = maskVariant(t.version);
    p.step("convert " + what + " to " + dt(to) + " (variant " + std::string(1, variant) + ")");
    size_t conv = p.alloc("converted mask " + dt(to), numel * elem, BufferRole::workspace);
    if (variant != 'C') p.transient("logical_not(mask) bool", numel);
    if (t.version.minor == 6)
      m.notes.push_back("torch 2.6's bool-mask conversion was not measured: assumed like 2.5.1 (variant B, a transient bool copy; 2.7+ has none)");
    return conv;
  }

  void math(bool has_mask, int64_t mask_numel) {
    const auto& v = t.version;
    const bool half = call.dtype != DType::fp32;
    const bool upcast = v >= V(5) && half && !t.allow_fp16_bf16_reduction_math;
    const DType cdt = upcast ? DType::fp32 : call.dtype;
    const int64_t ec = bytesPerElement(cdt);
    if (has_mask) convertMask(mask_numel, z.e, call.dtype, "bool mask");
    if (upcast) {
      p.step("fp32 copies of q, k, v");
      p.alloc("q fp32 copy", z.B * z.Hq * z.L * z.D * 4, BufferRole::workspace);
      p.alloc("k fp32 copy", z.B * z.Hkv * z.S * z.D * 4, BufferRole::workspace);
      p.alloc("v fp32 copy", z.B * z.Hkv * z.S * z.Dv * 4, BufferRole::workspace);
    }
    p.step("q·√scale");
    p.alloc("q·√scale " + dt(cdt), z.B * z.Hq * z.L * z.D * ec, BufferRole::workspace);
    if (call.isCausal()) {
      p.step("is_causal: ones(L,S).tril()");
      p.transient("ones(L,S) bool", z.L * z.S);
      size_t tril = p.alloc("tril(L,S) bool", z.L * z.S, BufferRole::workspace);
      convertMask(z.L * z.S, ec, cdt, "causal mask");
      p.free(tril);
    }
    int64_t hk = z.Hkv;
    if (call.enable_gqa && z.Hkv != z.Hq) {
      p.step("enable_gqa: repeat_interleave k, v to H heads");
      p.alloc("k repeated " + dt(cdt), z.B * z.Hq * z.S * z.D * ec, BufferRole::workspace);
      p.alloc("v repeated " + dt(cdt), z.B * z.Hq * z.S * z.Dv * ec, BufferRole::workspace);
      hk = z.Hq;
    }
    p.step("scores = q·kᵀ");
    p.transient("k·√scale " + dt(cdt), z.B * hk * z.S * z.D * ec);
    const size_t scores = p.alloc("scores " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
    if (cuda()) p.alloc("cuBLAS workspace", cublasWorkspaceBytes(t), BufferRole::library);
    if (has_mask && ec != z.e) {
      p.step("scores += mask");
      p.transient("mask copy fp32 (add_ into fp32 scores)", mask_numel * 4);
    }
    p.step("softmax");
    if (v < V(5)) {
      p.alloc("softmax " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.free(scores);
    } else if (v < V(7)) {
      const size_t sm = p.alloc("softmax " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.transient("_safe_softmax eq(-inf) bool [B,H,L,S]", z.N());
      p.transient("_safe_softmax all-masked rows bool [B,H,L,1]", z.B * z.Hq * z.L);
      p.alloc("_safe_softmax where() output " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.free(scores);
      p.free(sm);
    } else {
      p.alloc("softmax " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.transient("_safe_softmax isneginf bool [B,H,L,S]", z.N());
      p.transient("_safe_softmax all-masked rows bool [B,H,L,1]", z.B * z.Hq * z.L);
      p.free(scores);
    }
    p.step("output = attn·v");
    if (upcast) p.alloc("attn weights cast to " + dt(call.dtype), z.N() * z.e, BufferRole::workspace);
    p.alloc(upcast ? "output fp32" : "output", z.B * z.Hq * z.L * z.Dv * ec, upcast ? BufferRole::workspace : BufferRole::output);
    if (upcast) p.alloc("output " + dt(call.dtype), z.B * z.Hq * z.L * z.Dv * z.e, BufferRole::output);
    if (cuda()) m.notes.push_back("cuBLAS workspace (" + std::to_string(cublasWorkspaceBytes(t)) + " B) counted as allocated by this call's first GEMM; it is 0 after a warm-up on the same stream");
    if (v >= V(6) && v < V(7))
      m.notes.push_back("torch 2.6 not measured: math memory assumed like 2.5.1 (13·N with _safe_softmax's extra where(); 2.7+ is 9·N)");
  }

  void cpuFlash(bool has_mask, int64_t mask_numel) {
    if (has_mask) convertMask(mask_numel, z.e, call.dtype, "bool mask");
    p.step("flash kernel (CPU)");
    const int64_t T = std::max(1, t.cpu_threads);
    const int64_t qs = cpuFlashQSplit(z.L), kvs = cpuFlashKvSplit(z.S);
    p.alloc("output " + dt(call.dtype) + " [B,L,H,Dv]", z.B * z.L * z.Hq * z.Dv * z.e, BufferRole::output);
    p.alloc("logsumexp fp32 [B,L,H]", z.B * z.L * z.Hq * 4, BufferRole::workspace);
    p.transient("per-thread buffer fp32 T·(qS·kvS + 2·qS + qS·D), T=" + std::to_string(T) + " qS=" + std::to_string(qs) +
                    " kvS=" + std::to_string(kvs),
                T * (qs * kvs + 2 * qs + qs * z.D) * 4);
    if (call.dtype != DType::fp32)
      p.transient("per-thread buffer " + dt(call.dtype) + " T·qS·kvS", T * qs * kvs * z.e);
    if (call.dtype == DType::fp16)
      m.notes.push_back("CPU flash fp16 on AMX-FP16 CPUs packs K/V with std::make_unique, outside the allocator (not counted, as the profiler does not see it)");
  }

  void efficient(bool has_mask, int64_t mask_numel, const std::vector<int64_t>& mask_shape) {
    const auto& v = t.version;
    if (has_mask) {
      convertMask(mask_numel, z.e, call.dtype, "bool mask");
      const int64_t S = mask_shape.back();
      if (v < V(2)) {
        if (S % 16 != 0) {
          p.step("pad expanded mask [B,H,L,S] to a multiple of 16 columns (2.1)");
          p.alloc("padded mask " + dt(call.dtype) + " [B,H,L,S16]", z.B * z.Hq * z.L * roundUp(S, 16) * z.e, BufferRole::workspace);
          m.notes.push_back("2.1's mask padding (expand, then pad to 16) is reconstructed from PR #114173's diff, not the release tree; 2.1.2 may already pad only the unexpanded mask");
        }
      } else if (S % 8 != 0) {
        p.step("pad mask to a multiple of 8 columns");
        p.alloc("padded mask " + dt(call.dtype), mask_numel / S * (S + 8 - S % 8) * z.e, BufferRole::workspace);
      }
    }
    p.step("efficient kernel");
    p.alloc("output " + dt(call.dtype) + " [B,L,H,Dv]", z.B * z.L * z.Hq * z.Dv * z.e, BufferRole::output);
    if (t.requires_grad) p.alloc("logsumexp fp32 [B,H,⌈L/32⌉·32]", z.B * z.Hq * roundUp(z.L, 32) * 4, BufferRole::workspace);
    if (call.dtype != DType::fp32 && z.Dv > 128) {
      p.transient("output accumulator fp32 [B,L,H,Dv]", z.B * z.L * z.Hq * z.Dv * 4);
      m.notes.push_back("efficient's fp32 output accumulator: the reference does not pin the head_dim threshold; assumed Dv > 128 (beyond the single-iteration tile)");
    }
  }

  void flash() {
    const auto& v = t.version;
    int64_t d = z.D, dv = z.Dv;
    if (v >= V(2) && (z.D % 8 != 0 || z.Dv % 8 != 0)) {
      d = roundUp(z.D, 8);
      dv = roundUp(z.Dv, 8);
      p.step("pad q, k, v head_dim to a multiple of 8");
      p.alloc("q padded to D=" + std::to_string(d), z.B * z.Hq * z.L * d * z.e, BufferRole::workspace);
      p.alloc("k padded", z.B * z.Hkv * z.S * d * z.e, BufferRole::workspace);
      p.alloc("v padded", z.B * z.Hkv * z.S * dv * z.e, BufferRole::workspace);
    }
    p.step("flash kernel");
    p.alloc("output " + dt(call.dtype) + " [B,L,H,Dv]", z.B * z.L * z.Hq * dv * z.e, BufferRole::output);
    p.alloc("softmax_lse fp32 [B,H,L]", z.B * z.Hq * z.L * 4, BufferRole::workspace);
    m.notes.push_back("flash's split-KV buffers (decode-like shapes with few blocks) are not modelled");
  }

  void cudnn(bool has_mask, int64_t mask_numel) {
    if (has_mask) convertMask(mask_numel, z.e, call.dtype, "bool mask");
    p.step("cudnn kernel");
    p.alloc("output " + dt(call.dtype) + " [B,H,L,Dv]", z.B * z.Hq * z.L * z.Dv * z.e, BufferRole::output);
    if (t.requires_grad) p.alloc("stats fp32 [B,H,L,1]", z.B * z.Hq * z.L * 4, BufferRole::workspace);
    m.notes.push_back("cuDNN's execution-plan workspace is not derivable from torch's source and is not counted (measure it)");
  }
};

}  // namespace

SdpaMemory sdpaMemory(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& t, LowerRightPath lower_right) {
  SdpaMemory m;
  PlanBuilder p;
  const Sizes z{call.batch, call.q_heads, call.kv_heads, call.seq_q, call.seq_kv, call.head_dim, call.head_dim_v,
                bytesPerElement(call.dtype)};

  // Inputs, allocated by the caller before the call.
  p.step("inputs");
  const int64_t q = z.B * z.Hq * z.L * z.D * z.e, k = z.B * z.Hkv * z.S * z.D * z.e, v = z.B * z.Hkv * z.S * z.Dv * z.e;
  const std::string rep = call.kv_repeated ? " (repeated to H heads)" : "";
  p.alloc("q " + dt(call.dtype), q, BufferRole::input);
  p.alloc("k " + dt(call.dtype) + rep, k, BufferRole::input);
  p.alloc("v " + dt(call.dtype) + rep, v, BufferRole::input);
  m.input_bytes = q + k + v;
  if (call.kv_repeated)
    m.notes.push_back("torch < 2.5 has no enable_gqa: K and V are repeated to " + std::to_string(z.Hq) +
                      " heads before the call (counted as inputs)");

  // A materialised causal_lower_right mask is made inside the call, not by the caller.
  const bool materialised = lower_right == LowerRightPath::materialised;
  bool has_mask = call.hasMaskTensor() && !materialised;
  int64_t mask_numel = call.maskNumel();
  std::vector<int64_t> mask_shape = call.mask_shape;
  if (has_mask) {
    p.alloc("attn_mask bool (input)", mask_numel, BufferRole::mask);
    m.input_bytes += mask_numel;
  }
  if (materialised) {
    p.step("causal_lower_right materialises a bool [Lq,Lkv] mask");
    p.transient("ones(Lq,Lkv) bool", z.L * z.S);
    p.alloc("causal_lower_right mask bool [Lq,Lkv]", z.L * z.S, BufferRole::workspace);
    has_mask = true;
    mask_numel = z.L * z.S;
    mask_shape = {z.L, z.S};
  }

  Builder b{p, m, call, t, z};
  switch (kernel) {
    case SdpaKernel::math: b.math(has_mask, mask_numel); break;
    case SdpaKernel::flash:
      if (t.device == TorchDevice::cpu) b.cpuFlash(has_mask, mask_numel);
      else b.flash();
      break;
    case SdpaKernel::efficient: b.efficient(has_mask, mask_numel, mask_shape); break;
    case SdpaKernel::cudnn: b.cudnn(has_mask, mask_numel); break;
  }
  m.plan = p.finish();
  return m;
}

}  // namespace attnscope::torch_dispatch
