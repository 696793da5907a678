#pragma once
// WorkloadSpec: one scaled-dot-product attention problem. Tensors are [B, H, L, D] row-major.
//
// Mask semantics (query i in [0, Lq), key j in [0, Lkv), off = Lkv - Lq):
//   none       every key
//   causal     j <= i + off (bottom-right aligned; the usual is_causal when Lq == Lkv)
//   window:W   causal and j > i + off - W (at most W keys ending at the query's position)
//   block:W    floor(i / W) == floor(j / W); needs Lq == Lkv
//   dense[:p]  an explicit boolean tensor, true = attend, drawn with keep-probability p from the
//              seed (default p = 1: all true); [1,1,Lq,Lkv] (broadcast) or [B,H,Lq,Lkv] (per_head)
//   additive[:p]  a float tensor added to the scaled scores (an ALiBi-like bias), in mask_dtype
//              (default: q's dtype), the layouts of dense; each element a bias in [-1, 1) drawn
//              from the seed, or -inf where it is dropped with keep-probability p (default 1:
//              nothing dropped). "float[:p]" is read as the same. Values: core/spec/mask.h.
// A query with no visible key (every key masked, or every bias -inf) outputs zeros.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/dtype.h"
#include "core/spec/workload_kind.h"

namespace attnscope {

enum class MaskKind { none, causal, window, block, dense, additive };
enum class MaskLayout { broadcast, per_head };

struct MaskSpec {
  MaskKind kind = MaskKind::none;
  int64_t width = 0;       // W for window and block
  double keep_prob = 1.0;  // dense and additive
  bool operator==(const MaskSpec&) const = default;
};

// "none", "causal", "window:128", "dense:0.5", "additive", "additive:0.5"
std::string toString(const MaskSpec& m);
std::string_view toString(MaskKind k);
std::string_view toString(MaskLayout l);
inline constexpr std::string_view kMaskChoices = "none, causal, window:W, block:W, dense[:p], additive[:p]";
inline constexpr std::string_view kMaskLayoutChoices = "broadcast, per_head";
// Whether the mask is a tensor the caller passes (dense: bool; additive: float), in mask_layout.
inline bool maskIsTensor(const MaskSpec& m) { return m.kind == MaskKind::dense || m.kind == MaskKind::additive; }
// mask_dtype as written: q (or empty) for q's dtype, or a dtype.
inline constexpr std::string_view kMaskDTypeChoices = "q (the same as dtype), fp32, fp16, bf16";

// A precise complaint about one field: names the field, the value and what is allowed.
struct SpecError {
  std::string field;
  std::string value;
  std::string message;  // full sentence, e.g. "heads must be >= 1 (got 0)"
};

struct WorkloadSpec {
  int64_t batch = 1;
  int64_t heads = 8;
  int64_t kv_heads = 0;   // 0: same as heads; else must divide heads (GQA/MQA)
  int64_t seq_q = 1024;
  int64_t seq_kv = 0;     // 0: same as seq_q
  int64_t head_dim = 64;  // ignored when width > 0
  int64_t width = 0;      // fixed model width: head_dim = width / heads
  DType dtype = DType::fp32;
  MaskSpec mask;
  MaskLayout mask_layout = MaskLayout::broadcast;
  // The additive mask's element type; nullopt: q's dtype. Only an additive mask has one, and torch
  // takes a float mask only in fp32 or in q's dtype (validate() says so).
  std::optional<DType> mask_dtype;
  std::optional<double> scale;  // default 1 / sqrt(head_dim)
  uint64_t seed = 0;
  // What is computed (core/spec/workload_kind.h); checkpoint matters only with pass = train.
  WorkloadKind kind = WorkloadKind::attention;
  Pass pass = Pass::forward;
  Checkpoint checkpoint = Checkpoint::none;
  // kind layer: a stack of `layers` identical layers, each with its own weights (layer 1's are the
  // single layer's, deeper ones from their own streams); `tp` tensor-parallel ranks split the
  // heads (torch backends only), exchanging the outputs by tp_comm.
  int64_t layers = 1;
  int64_t tp = 1;
  TpComm tp_comm = TpComm::allreduce;

  // Resolved values (after the 0 = "same as" defaults and the width rule).
  int64_t kvHeads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t seqKv() const { return seq_kv > 0 ? seq_kv : seq_q; }
  int64_t headDim() const { return width > 0 && heads > 0 ? width / heads : head_dim; }
  double effectiveScale() const;
  DType maskDType() const { return mask_dtype.value_or(dtype); }

  int64_t qElements() const { return batch * heads * seq_q * headDim(); }
  int64_t kvElements() const { return batch * kvHeads() * seqKv() * headDim(); }
  int64_t scoreElements() const { return batch * heads * seq_q * seqKv(); }
  // Elements of the mask tensor in its layout (0 unless dense or additive).
  int64_t maskElements() const;
  // Bytes of the mask tensor: dense 1 byte per element, additive maskDType()'s size; 0 otherwise.
  int64_t maskBytes() const;
  // Q + K + V + O + mask, the bytes any implementation must hold.
  int64_t ioBytes() const;

  bool operator==(const WorkloadSpec&) const = default;
};

// torch runs head_dim far beyond this on the CPU; 512 covers the models people run (and cpu.*
// computes it). Backends with compiled head_dim buckets refuse what they lack (cuda.flash: 256).
inline constexpr int64_t kMaxHeadDim = 512;
// The deepest stack a layer spec may ask for, and the most tensor-parallel ranks.
inline constexpr int64_t kMaxLayers = 128;
inline constexpr int64_t kMaxTp = 64;
// The most elements any one tensor of a spec may have (2^50, i.e. 4 PiB of fp32): far beyond any
// machine, and small enough that byte counts and sums of a few tensors never overflow int64.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 50;

// Every problem with the spec, in field order; empty when valid.
std::vector<SpecError> validate(const WorkloadSpec& spec);
std::string describe(const std::vector<SpecError>& errors);  // one line per error

// A one-line summary, e.g. "B1 H8/8 L1024x1024 D64 fp32 causal"; kind, pass and checkpoint are
// appended only when not the default ("... causal layer train checkpoint:attention").
std::string summary(const WorkloadSpec& spec);

// Parsing of single field values as written on the command line and in JSON. On failure they
// return a SpecError naming the field and the allowed values.
struct ParsedMask {
  std::optional<MaskSpec> mask;
  std::optional<SpecError> error;
};
ParsedMask parseMask(std::string_view text);
std::optional<MaskLayout> parseMaskLayout(std::string_view text);

// Sets one field by its name, alias or command-line name (the table in core/spec/spec_fields.h) from
// text. Returns the error when the name is unknown or the text does not parse.
std::optional<SpecError> setField(WorkloadSpec& spec, std::string_view field, std::string_view text);
const std::vector<std::string>& specFieldNames();  // the table's names, in its order

// A spec that cannot be read from JSON: what() is the whole sentence ("workload spec: unknown
// dtype 'fp64' (allowed: fp32, fp16, bf16)"), field() the field it blames (empty when the JSON is
// not an object at all).
class SpecParseError : public std::runtime_error {
 public:
  SpecParseError(std::string field, const std::string& message);
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Every field of the table under its name (core/spec/spec_fields.h).
nlohmann::json toJson(const WorkloadSpec& spec);
// Missing keys keep their defaults, so JSON written before a field existed still reads. Throws
// SpecParseError naming the field: an unknown key, a wrong JSON type, a value the field refuses.
WorkloadSpec workloadSpecFromJson(const nlohmann::json& j);

}  // namespace attnscope
