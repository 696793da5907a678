#include "core/torch_dispatch/sdpa_memory.h"

#include <algorithm>
#include <climits>
#include <tuple>

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
  int stepCount() const { return plan_.stepCount(); }
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
// (2.2-2.5), C where(mask, 0, -inf) (2.6+; measured on 2.6.0). A and B hold a transient bool
// logical_not.
char maskVariant(const TorchVersion& v) { return v < V(2) ? 'A' : v < V(6) ? 'B' : 'C'; }

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
    return conv;
  }

  bool training() const { return t.requires_grad; }
  // The end of the forward when training: buffers the forward made and autograd does not keep
  // die here; the rest live into the backward until it frees them.
  void endForward(const std::vector<size_t>& dying) {
    for (size_t i : dying) p.free(i);
    m.forward_steps = p.stepCount();
    p.step("backward: grad_output (made by the caller)");
    p.alloc("grad_output " + dt(call.dtype) + " [B,H,L,Dv]", z.B * z.Hq * z.L * z.Dv * z.e, BufferRole::input);
  }

  // The math composite (_scaled_dot_product_attention_math) and, when training, autograd's
  // backward of its ops. Every sequence is the profiler's allocation trace on the CPU, measured
  // per release (scripts/measure_torch_release.sh).
  void math(bool has_mask, int64_t mask_numel) {
    const auto& v = t.version;
    const bool half = call.dtype != DType::fp32;
    const bool upcast = v >= V(5) && half && !t.allow_fp16_bf16_reduction_math;
    const DType cdt = upcast ? DType::fp32 : call.dtype;
    const int64_t ec = bytesPerElement(cdt);
    const bool gqa = call.enable_gqa && z.Hkv != z.Hq;
    std::vector<size_t> dying;  // made by the forward, not saved for the backward
    // A bool mask becomes q's dtype; a float mask is added as it is, in its own dtype.
    if (has_mask && !call.hasFloatMask()) dying.push_back(convertMask(mask_numel, z.e, call.dtype, "bool mask"));
    const DType mdt = call.hasFloatMask() ? call.mask_dtype : call.dtype;
    size_t q32 = SIZE_MAX, k32 = SIZE_MAX, v32 = SIZE_MAX;
    if (upcast) {
      p.step("fp32 copies of q, k, v");
      q32 = p.alloc("q fp32 copy", z.B * z.Hq * z.L * z.D * 4, BufferRole::workspace);
      k32 = p.alloc("k fp32 copy", z.B * z.Hkv * z.S * z.D * 4, BufferRole::workspace);
      v32 = p.alloc("v fp32 copy", z.B * z.Hkv * z.S * z.Dv * 4, BufferRole::workspace);
      dying.insert(dying.end(), {q32, k32});
    }
    p.step("q·√scale");
    const size_t qs = p.alloc("q·√scale " + dt(cdt), z.B * z.Hq * z.L * z.D * ec, BufferRole::workspace);
    if (call.isCausal()) {
      p.step("is_causal: ones(L,S).tril()");
      p.transient("ones(L,S) bool", z.L * z.S);
      size_t tril = p.alloc("tril(L,S) bool", z.L * z.S, BufferRole::workspace);
      dying.push_back(convertMask(z.L * z.S, ec, cdt, "causal mask"));
      p.free(tril);
    }
    int64_t hk = z.Hkv;
    size_t vsaved = upcast ? v32 : SIZE_MAX;  // the v that attn·v saves, when it is a copy
    if (gqa) {
      p.step("enable_gqa: repeat_interleave k, v to H heads");
      dying.push_back(p.alloc("k repeated " + dt(cdt), z.B * z.Hq * z.S * z.D * ec, BufferRole::workspace));
      vsaved = p.alloc("v repeated " + dt(cdt), z.B * z.Hq * z.S * z.Dv * ec, BufferRole::workspace);
      if (upcast) dying.push_back(v32);
      hk = z.Hq;
    }
    p.step("scores = q·kᵀ");
    const int64_t kbytes = z.B * hk * z.S * z.D * ec;
    // Autograd keeps the scaled k for the backward of q·kᵀ; without grad it is a temporary.
    const size_t ks = training() ? p.alloc("k·√scale " + dt(cdt) + " (saved for the backward)", kbytes, BufferRole::workspace)
                                 : p.transient("k·√scale " + dt(cdt), kbytes);
    const size_t scores = p.alloc("scores " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
    if (cuda()) p.alloc("cuBLAS workspace", cublasWorkspaceBytes(t), BufferRole::library);
    if (has_mask && cdt == DType::fp32 && mdt != DType::fp32) {
      p.step("scores += mask");
      p.transient("mask copy fp32 (add_ into fp32 scores)", mask_numel * 4);
    } else if (has_mask && cdt != DType::fp32 && mdt == DType::fp32) {
      // An fp32 mask into half scores (2.4: no upcast yet): add_ computes in fp32 through a copy
      // of the scores and an fp32 result, then casts back (measured on 2.4.1).
      p.step("scores += fp32 mask");
      p.transient("scores copy fp32 (add_ with an fp32 mask)", z.N() * 4);
      p.transient("add_ result fp32", z.N() * 4);
    }
    p.step("softmax");
    size_t attn = SIZE_MAX;  // the attention weights attn·v reads (and autograd saves)
    if (v < V(5)) {
      attn = p.alloc("softmax " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.free(scores);
    } else if (v < V(6)) {
      const size_t sm = p.alloc("softmax " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.transient("_safe_softmax eq(-inf) bool [B,H,L,S]", z.N());
      p.transient("_safe_softmax all-masked rows bool [B,H,L,1]", z.B * z.Hq * z.L);
      attn = p.alloc("_safe_softmax where() output " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.free(scores);
      p.free(sm);
    } else {
      // 2.6 onwards (measured on 2.6.0: 2.6 already has 2.7's isneginf and where_out).
      attn = p.alloc("softmax " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
      p.transient("_safe_softmax isneginf bool [B,H,L,S]", z.N());
      p.transient("_safe_softmax all-masked rows bool [B,H,L,1]", z.B * z.Hq * z.L);
      p.free(scores);
    }
    p.step("output = attn·v");
    if (upcast) dying.push_back(p.alloc("attn weights cast to " + dt(call.dtype), z.N() * z.e, BufferRole::workspace));
    const size_t out = p.alloc(upcast ? "output fp32" : "output", z.B * z.Hq * z.L * z.Dv * ec,
                               upcast ? BufferRole::workspace : BufferRole::output);
    if (upcast) {
      p.alloc("output " + dt(call.dtype), z.B * z.Hq * z.L * z.Dv * z.e, BufferRole::output);
      dying.push_back(out);
    }
    if (cuda()) m.notes.push_back("cuBLAS workspace (" + std::to_string(cublasWorkspaceBytes(t)) + " B) counted as allocated by this call's first GEMM; it is 0 after a warm-up on the same stream");
    if (half && !upcast && t.device == TorchDevice::cpu)
      m.notes.push_back("oneDNN's scratchpad inside each " + dt(call.dtype) + " GEMM on the CPU (a few to tens of KiB, freed inside the GEMM) is not counted");
    if (!training()) return;

    // The backward, in autograd's order (measured: the same sequence 2.0 to 2.15, with the fp32
    // copies of 2.5+ for fp16/bf16).
    endForward(dying);
    p.step("grad_v = attnᵀ·grad_out");
    const size_t g32 = upcast ? p.alloc("grad_output fp32 copy", z.B * z.Hq * z.L * z.Dv * 4, BufferRole::workspace) : SIZE_MAX;
    size_t gv = p.alloc("grad_v " + dt(cdt) + (gqa ? " [B,H,S,Dv]" : ""), z.B * hk * z.S * z.Dv * ec, BufferRole::workspace);
    p.step("grad_attn = grad_out·vᵀ");
    const size_t ga = p.alloc("grad_attn " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
    p.free(g32);
    p.free(vsaved);
    p.step("softmax backward");
    const size_t gs = p.alloc("grad_scores " + dt(cdt) + " [B,H,L,S]", z.N() * ec, BufferRole::workspace);
    p.free(ga);
    p.free(attn);
    p.step("grads of q·√scale and k·√scale");
    const size_t gks = p.alloc("grad of k·√scale " + dt(cdt), kbytes, BufferRole::workspace);
    const size_t gqs = p.alloc("grad of q·√scale " + dt(cdt), z.B * z.Hq * z.L * z.D * ec, BufferRole::workspace);
    p.free(gs);
    p.free(ks);
    p.free(qs);
    p.step("grad_k = ·√scale");
    size_t gk = p.alloc("grad_k " + dt(cdt), kbytes, BufferRole::workspace);
    p.free(gks);
    if (gqa) {
      p.step("repeat_interleave backward: sum grad_k, grad_v over each group of heads");
      const size_t gk2 = p.alloc("grad_k " + dt(cdt) + " [B,Hkv,S,D]", z.B * z.Hkv * z.S * z.D * ec, BufferRole::workspace);
      p.free(gk);
      gk = gk2;
      const size_t gv2 = p.alloc("grad_v " + dt(cdt) + " [B,Hkv,S,Dv]", z.B * z.Hkv * z.S * z.Dv * ec, BufferRole::workspace);
      p.free(gv);
      gv = gv2;
    } else if (!upcast && z.S > 1 && z.D > 1) {
      p.step("k.grad: AccumulateGrad copies the transposed grad_k");
      p.alloc("k.grad " + dt(call.dtype), z.B * z.Hkv * z.S * z.D * z.e, BufferRole::output);
      p.free(gk);
    }
    p.step("grad_q = ·√scale");
    const size_t gq = p.alloc("grad_q " + dt(cdt), z.B * z.Hq * z.L * z.D * ec, BufferRole::workspace);
    p.free(gqs);
    if (upcast) {
      p.step("gradients back to " + dt(call.dtype));
      p.alloc("v.grad " + dt(call.dtype), z.B * z.Hkv * z.S * z.Dv * z.e, BufferRole::output);
      p.free(gv);
      const size_t kg = p.alloc("grad_k " + dt(call.dtype), z.B * z.Hkv * z.S * z.D * z.e, gqa ? BufferRole::output : BufferRole::workspace);
      p.free(gk);
      if (!gqa && z.S > 1 && z.D > 1) {
        p.step("k.grad: AccumulateGrad copies the transposed grad_k");
        p.alloc("k.grad " + dt(call.dtype), z.B * z.Hkv * z.S * z.D * z.e, BufferRole::output);
        p.free(kg);
      }
      p.step("q.grad to " + dt(call.dtype));
      p.alloc("q.grad " + dt(call.dtype), z.B * z.Hq * z.L * z.D * z.e, BufferRole::output);
      p.free(gq);
    }
  }

  void cpuFlash(bool has_mask, int64_t mask_numel) {
    std::vector<size_t> dying;
    // The kernel keeps the converted mask for its backward.
    const size_t conv = has_mask && !call.hasFloatMask() ? convertMask(mask_numel, z.e, call.dtype, "bool mask") : SIZE_MAX;
    p.step("flash kernel (CPU)");
    const int64_t T = std::max(1, t.cpu_threads);
    const int64_t qsplit = cpuFlashQSplit(z.L), kvs = cpuFlashKvSplit(z.S);
    p.alloc("output " + dt(call.dtype) + " [B,L,H,Dv]", z.B * z.L * z.Hq * z.Dv * z.e, BufferRole::output);
    const size_t lse = p.alloc("logsumexp fp32 [B,L,H]", z.B * z.L * z.Hq * 4, BufferRole::workspace);
    const size_t scalars =
        t.version < V(3) ? p.alloc("cum_seq_q, cum_seq_k, philox seed and offset: 4 int64 scalars (2.1-2.2)", 32, BufferRole::workspace)
                         : SIZE_MAX;
    p.transient("per-thread buffer fp32 T·(qS·kvS + 2·qS + qS·D), T=" + std::to_string(T) + " qS=" + std::to_string(qsplit) +
                    " kvS=" + std::to_string(kvs),
                T * (qsplit * kvs + 2 * qsplit + qsplit * z.D) * 4);
    // The pack path (2.7+; cpublas::could_pack: AMX-BF16 for bf16, AMX-FP16 for fp16): K and V
    // reordered into VNNI blocks, the head dim and the kv split padded to even sizes.
    const bool amx = call.dtype == DType::bf16 ? t.cpu_amx_bf16 : call.dtype == DType::fp16 && t.cpu_amx_fp16;
    bool pack = false;
    if (amx && t.version >= V(7)) {
      const int64_t thresh = call.dtype == DType::bf16 ? 64 : 16;
      pack = z.S >= thresh && z.L >= thresh;
      if (pack) {
        const int64_t q_slices = (z.L + qsplit - 1) / qsplit;
        const double pack_size = double(z.B) * z.Hkv * z.S * z.D;
        const double qs_per_thread = double((z.B * z.Hq * q_slices + T - 1) / T);
        const double gemm = qs_per_thread * qsplit * (call.isCausal() ? std::min(z.L, z.S) : z.S) * z.D;
        pack = gemm / pack_size >= (call.dtype == DType::bf16 ? 4 : 1);
      }
    }
    const int64_t ed = pack && z.D % 2 ? z.D + 1 : z.D;
    const int64_t ekvs = pack && kvs % 2 ? kvs + 1 : kvs;
    if (call.dtype != DType::fp32)
      p.transient("per-thread buffer " + dt(call.dtype) + " T·qS·kvS", T * qsplit * ekvs * z.e);
    // 2.3's kernel reads the mask in fp32 for bf16/fp16 inputs: a copy, forward and backward
    // (measured on 2.3.1; 2.4 reads it in its own type).
    const bool mask_fp32_copy = has_mask && call.dtype != DType::fp32 && t.version >= V(3) && t.version < V(4);
    if (mask_fp32_copy) p.transient("mask copy fp32 (2.3)", mask_numel * 4);
    if (pack) {
      const int64_t tail = (z.S - 1) % kvs + 1;
      const int64_t kv_pad = (z.S - 1) / kvs * ekvs + (tail % 2 ? tail + 1 : tail);
      p.transient("K packed for AMX " + dt(call.dtype) + " [B,Hkv,D',S]", z.B * z.Hkv * ed * z.S * z.e);
      p.transient("V packed for AMX " + dt(call.dtype) + " [B,Hkv,S',Dv]", z.B * z.Hkv * kv_pad * z.Dv * z.e);
      if (z.D % 2) p.transient("q padded to an even head dim, per thread", T * qsplit * ed * z.e);
      p.transient("transpose buffer, per thread", T * kvs * z.D * z.e);
      m.notes.push_back("CPU flash packs K and V for AMX (this target's CPU has AMX " + dt(call.dtype) + "; measured on 2.7-2.15)");
    }
    if (!training()) return;

    endForward(dying);
    p.step("flash backward (CPU)");
    const size_t gq = p.alloc("grad_q " + dt(call.dtype) + " [B,L,H,D]", z.B * z.L * z.Hq * z.D * z.e, BufferRole::workspace);
    const size_t gk = p.alloc("grad_k " + dt(call.dtype) + " [B,S,Hkv,D]", z.B * z.S * z.Hkv * z.D * z.e, BufferRole::workspace);
    const size_t gv = p.alloc("grad_v " + dt(call.dtype) + " [B,S,Hkv,Dv]", z.B * z.S * z.Hkv * z.Dv * z.e, BufferRole::workspace);
    // grad_output transposed to [B,L,H,Dv] and made contiguous: a copy unless heads or the
    // sequence is 1 (then the transpose is already contiguous; measured on 2.9.1).
    if (t.version >= V(5) && z.Hq > 1 && z.L > 1)
      p.transient("grad_output copy " + dt(call.dtype) + " [B,L,H,Dv] (2.5+)", z.B * z.L * z.Hq * z.Dv * z.e);
    p.transient("per-thread buffer fp32 T·2·qS·kvS (attn, grad_attn)", T * 2 * qsplit * kvs * 4);
    if (call.dtype != DType::fp32) p.transient("per-thread buffer " + dt(call.dtype) + " T·2·qS·kvS", T * 2 * qsplit * kvs * z.e);
    p.transient("dsum fp32 [qS] (the calling thread's; other threads' are not seen by the profiler)", qsplit * 4);
    if (mask_fp32_copy) p.transient("mask copy fp32 (2.3)", mask_numel * 4);
    p.free(lse);
    p.free(conv);
    p.free(scalars);  // released with the saved tensors, before AccumulateGrad (measured on 2.1.2)
    // AccumulateGrad copies each gradient from the kernel's [B,L,H,D] layout to the input's
    // (where heads and sequence are both > 1; otherwise the two layouts are the same memory).
    for (auto [g, name, bytes, h, l] : {std::tuple{gq, "q.grad", z.B * z.L * z.Hq * z.D * z.e, z.Hq, z.L},
                                        std::tuple{gk, "k.grad", z.B * z.S * z.Hkv * z.D * z.e, z.Hkv, z.S},
                                        std::tuple{gv, "v.grad", z.B * z.S * z.Hkv * z.Dv * z.e, z.Hkv, z.S}}) {
      if (h == 1 || l == 1) continue;
      p.step(std::string(name) + ": AccumulateGrad copies to the input's layout");
      p.alloc(std::string(name) + " " + dt(call.dtype), bytes, BufferRole::output);
      p.free(g);
    }
    m.notes.push_back("library scratch inside the CPU flash backward's GEMMs (oneDNN/cpublas, freed inside the kernel) is not counted");
  }

  void efficient(bool has_mask, int64_t mask_numel, const std::vector<int64_t>& mask_shape) {
    const auto& v = t.version;
    if (has_mask) {
      if (!call.hasFloatMask()) convertMask(mask_numel, z.e, call.dtype, "bool mask");
      const int64_t me = call.hasFloatMask() ? bytesPerElement(call.mask_dtype) : z.e;
      const int64_t S = mask_shape.back();
      if (v < V(2)) {
        if (S % 16 != 0) {
          p.step("pad expanded mask [B,H,L,S] to a multiple of 16 columns (2.1)");
          p.alloc("padded mask [B,H,L,S16]", z.B * z.Hq * z.L * roundUp(S, 16) * me, BufferRole::workspace);
          m.notes.push_back("2.1's mask padding (expand, then pad to 16) is reconstructed from PR #114173's diff, not the release tree; 2.1.2 may already pad only the unexpanded mask");
        }
      } else if (S % 8 != 0) {
        p.step("pad mask to a multiple of 8 columns");
        p.alloc("padded mask", mask_numel / S * (S + 8 - S % 8) * me, BufferRole::workspace);
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
    if (has_mask && !call.hasFloatMask()) convertMask(mask_numel, z.e, call.dtype, "bool mask");
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
  size_t lower_right_mask = SIZE_MAX;
  int64_t mask_numel = call.maskNumel();
  std::vector<int64_t> mask_shape = call.mask_shape;
  if (has_mask) {
    p.alloc(call.hasFloatMask() ? "attn_mask " + dt(call.mask_dtype) + " (input, additive)" : "attn_mask bool (input)",
            call.maskBytes(), BufferRole::mask);
    m.input_bytes += call.maskBytes();
  }
  if (materialised) {
    p.step("causal_lower_right materialises a bool [Lq,Lkv] mask");
    p.transient("ones(Lq,Lkv) bool", z.L * z.S);
    lower_right_mask = p.alloc("causal_lower_right mask bool [Lq,Lkv]", z.L * z.S, BufferRole::workspace);
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
  // Training: the materialised mask is the bias's own temporary; autograd does not keep it (the
  // kernel keeps what it converted), so it dies with the forward (measured on 2.3.1 and 2.9.1).
  if (lower_right_mask < m.plan.buffers.size() && m.hasBackward())
    m.plan.buffers[lower_right_mask].last_step = std::min(m.plan.buffers[lower_right_mask].last_step, m.forward_steps - 1);
  return m;
}

int64_t SdpaMemory::forwardPeakBytes() const {
  if (!hasBackward()) return plan.peakBytes();
  int64_t peak = 0;
  for (int s = 0; s < forward_steps; ++s) peak = std::max(peak, plan.bytesAt(s));
  return peak;
}

int64_t SdpaMemory::keptBytes() const {
  if (!hasBackward()) return 0;
  int64_t kept = 0;
  for (const auto& b : plan.buffers)
    if (b.first_step < forward_steps && b.last_step >= forward_steps) kept += b.bytes;
  return kept - input_bytes;
}

int64_t SdpaMemory::backwardExtraBytes() const {
  if (!hasBackward()) return 0;
  int64_t peak = 0;
  for (int s = forward_steps + 1; s < plan.stepCount(); ++s) peak = std::max(peak, plan.bytesAt(s));
  return std::max<int64_t>(0, peak - plan.bytesAt(forward_steps));
}

}  // namespace attnscope::torch_dispatch
