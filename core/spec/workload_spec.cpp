#include "core/spec/workload_spec.h"

#include "core/spec/spec_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace attnscope {
namespace {

bool mulOverflows(int64_t a, int64_t b, int64_t& out) { return __builtin_mul_overflow(a, b, &out); }

// Elements of a product of dimensions, saturating at kMaxTensorElements + 1 (never overflowing).
int64_t elementsOf(std::initializer_list<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || mulOverflows(n, d, n) || n > kMaxTensorElements) return kMaxTensorElements + 1;
  return n;
}

// The tensors whose size a spec decides: Q/O, K/V, the [B,H,Lq,Lkv] scores some backends
// materialise, and for a layer its largest weight w_qkv ((H + 2 Hkv) D x E, E = H D).
struct SizedTensor {
  const char* name;
  int64_t (*elements)(const WorkloadSpec&);
  // The fields that size it; the largest of them is blamed (a field may size it twice: seq
  // with seq_kv "same as seq" gives Lq x Lq scores; a fixed width gives w_qkv ~ 3 E^2).
  std::vector<const char*> (*fields)(const WorkloadSpec&);
};

const std::vector<SizedTensor>& sizedTensors() {
  static const std::vector<SizedTensor> t = {
      // With a fixed width, H x D is the width whatever the heads: heads do not size Q/O.
      {"Q/O", [](const WorkloadSpec& s) { return elementsOf({s.batch, s.heads, s.seq_q, s.headDim()}); },
       [](const WorkloadSpec& s) {
         if (s.width > 0) return std::vector<const char*>{"batch", "seq", "width"};
         return std::vector<const char*>{"batch", "heads", "seq", "head_dim"};
       }},
      {"K/V", [](const WorkloadSpec& s) { return elementsOf({s.batch, s.kvHeads(), s.seqKv(), s.headDim()}); },
       [](const WorkloadSpec& s) {
         const char* seq_kv = s.seq_kv > 0 ? "seq_kv" : "seq";
         if (s.width > 0 && s.kv_heads > 0) return std::vector<const char*>{"batch", "kv_heads", seq_kv, "width"};
         if (s.width > 0) return std::vector<const char*>{"batch", seq_kv, "width"};
         return std::vector<const char*>{"batch", s.kv_heads > 0 ? "kv_heads" : "heads", seq_kv, "head_dim"};
       }},
      {"scores", [](const WorkloadSpec& s) { return elementsOf({s.batch, s.heads, s.seq_q, s.seqKv()}); },
       [](const WorkloadSpec& s) {
         return std::vector<const char*>{"batch", "heads", "seq", s.seq_kv > 0 ? "seq_kv" : "seq"};
       }},
      {"w_qkv",
       [](const WorkloadSpec& s) {
         if (s.kind != WorkloadKind::layer) return int64_t{0};
         return elementsOf({s.heads + 2 * s.kvHeads(), s.headDim(), s.heads, s.headDim()});
       },
       [](const WorkloadSpec& s) {
         // E = width is fixed: heads only split it (width >= heads), so the width is blamed.
         if (s.width > 0) return std::vector<const char*>{"width", "heads"};
         return std::vector<const char*>{"heads", "head_dim"};
       }},
  };
  return t;
}

int64_t* memberOf(WorkloadSpec& s, std::string_view field) {
  if (field == "batch") return &s.batch;
  if (field == "heads") return &s.heads;
  if (field == "kv_heads") return &s.kv_heads;
  if (field == "seq") return &s.seq_q;
  if (field == "seq_kv") return &s.seq_kv;
  if (field == "head_dim") return &s.head_dim;
  if (field == "width") return &s.width;
  return nullptr;
}

// The largest value of `field` (the others as given) that keeps the tensor within the limit, by
// exact search: sizes grow with every field, and a field may size the tensor more than once.
// A width is searched in multiples of the heads (the only widths that are valid).
int64_t largestFitting(const WorkloadSpec& spec, const SizedTensor& t, std::string_view field) {
  WorkloadSpec s = spec;
  int64_t* member = memberOf(s, field);
  const int64_t step = field == "width" && s.heads > 0 ? s.heads : 1;
  // fits(lo * step) holds (or lo = 0), fits(hi * step) does not; + 1 only below INT64_MAX, whose
  // value does not fit anyway (a fuzzed --batch 9223372036854775807 overflowed here).
  int64_t lo = 0, hi = *member / step;
  if (hi < std::numeric_limits<int64_t>::max()) ++hi;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    *member = mid * step;
    (t.elements(s) <= kMaxTensorElements ? lo : hi) = mid;
  }
  return lo * step;
}

// Every tensor must stay within kMaxTensorElements, so byte counts and sums of a few tensors
// never overflow int64. The largest field sizing an oversized tensor is blamed, with the most it
// may be given the others.
void checkSizes(const WorkloadSpec& s, std::vector<SpecError>& errs) {
  for (const SizedTensor& t : sizedTensors()) {
    if (t.elements(s) <= kMaxTensorElements) continue;
    const std::vector<const char*> fields = t.fields(s);
    WorkloadSpec probe = s;
    const char* worst = fields[0];
    for (const char* f : fields)
      if (*memberOf(probe, f) > *memberOf(probe, worst)) worst = f;
    std::string given;
    std::vector<std::string_view> listed{worst};
    for (const char* f : fields) {
      if (std::find(listed.begin(), listed.end(), f) != listed.end()) continue;
      listed.push_back(f);
      given += std::string(given.empty() ? "" : ", ") + f + " " + std::to_string(*memberOf(probe, f));
    }
    const int64_t value = *memberOf(probe, worst), most = largestFitting(s, t, worst);
    std::string message = std::string(worst) + " " + std::to_string(value) + " makes the " + t.name +
                          " tensor larger than " + std::to_string(kMaxTensorElements) + " elements; ";
    if (most >= 1)
      message += (given.empty() ? std::string("it") : "with " + given + " it") + " can be at most " + std::to_string(most);
    else
      message += "the other fields (" + given + ") are too large for any " + worst;
    errs.push_back({worst, std::to_string(value), message});
    return;  // one size complaint is enough: the others follow from the same field
  }
}

}  // namespace

std::string_view toString(MaskKind k) {
  switch (k) {
    case MaskKind::none: return "none";
    case MaskKind::causal: return "causal";
    case MaskKind::window: return "window";
    case MaskKind::block: return "block";
    case MaskKind::dense: return "dense";
    case MaskKind::additive: return "additive";
  }
  return "?";
}

std::string_view toString(MaskLayout l) { return l == MaskLayout::broadcast ? "broadcast" : "per_head"; }

std::string toString(const MaskSpec& m) {
  switch (m.kind) {
    case MaskKind::window:
    case MaskKind::block: return std::string(toString(m.kind)) + ":" + std::to_string(m.width);
    case MaskKind::dense:
    case MaskKind::additive: {
      const std::string name(toString(m.kind));
      return m.keep_prob == 1.0 ? name : name + ":" + shortestText(m.keep_prob);
    }
    default: return std::string(toString(m.kind));
  }
}

double WorkloadSpec::effectiveScale() const {
  if (scale) return *scale;
  int64_t d = headDim();
  return d > 0 ? 1.0 / std::sqrt(static_cast<double>(d)) : 1.0;
}

int64_t WorkloadSpec::maskElements() const {
  if (!maskIsTensor(mask)) return 0;
  return mask_layout == MaskLayout::per_head ? batch * heads * seq_q * seqKv() : seq_q * seqKv();
}

int64_t WorkloadSpec::maskBytes() const {
  return maskElements() * (mask.kind == MaskKind::additive ? bytesPerElement(maskDType()) : 1);
}

int64_t WorkloadSpec::ioBytes() const {
  int64_t e = bytesPerElement(dtype);
  return 2 * qElements() * e + 2 * kvElements() * e + maskBytes();
}

ParsedMask parseMask(std::string_view text) {
  auto bad = [&](std::string why) {
    return ParsedMask{std::nullopt, SpecError{"mask", std::string(text), std::move(why)}};
  };
  std::string_view name = text, arg;
  bool hasArg = false;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    arg = text.substr(colon + 1);
    hasArg = true;
  }
  MaskSpec m;
  if (name == "none" || name == "causal") {
    if (hasArg) return bad("mask '" + std::string(name) + "' takes no argument (allowed: " + std::string(kMaskChoices) + ")");
    m.kind = name == "none" ? MaskKind::none : MaskKind::causal;
    return {m, std::nullopt};
  }
  if (name == "window" || name == "block") {
    m.kind = name == "window" ? MaskKind::window : MaskKind::block;
    int64_t w = 0;
    if (!hasArg || !parseSpecInt(arg, w))
      return bad("mask '" + std::string(name) + "' needs an integer width, e.g. " + std::string(name) + ":128");
    if (w < 1) return bad("mask " + std::string(name) + " width must be >= 1 (got " + std::string(arg) + ")");
    m.width = w;
    return {m, std::nullopt};
  }
  // "float" is what torch calls it (a float attn_mask); it is read as additive and written so.
  if (name == "dense" || name == "additive" || name == "float") {
    m.kind = name == "dense" ? MaskKind::dense : MaskKind::additive;
    const std::string kind(toString(m.kind));
    if (hasArg) {
      double p = 0;
      if (!parseSpecDouble(arg, p))
        return bad(kind + " mask keep-probability must be a number in (0, 1], e.g. " + kind + ":0.5");
      if (!(p > 0.0 && p <= 1.0))
        return bad(kind + " mask keep-probability must be in (0, 1] (got " + std::string(arg) + ")");
      m.keep_prob = p;
    }
    return {m, std::nullopt};
  }
  return bad("unknown mask '" + std::string(text) + "' (allowed: " + std::string(kMaskChoices) + ")");
}

std::optional<MaskLayout> parseMaskLayout(std::string_view text) {
  if (text == "broadcast") return MaskLayout::broadcast;
  if (text == "per_head" || text == "per-head") return MaskLayout::per_head;
  return std::nullopt;
}

std::vector<SpecError> validate(const WorkloadSpec& s) {
  std::vector<SpecError> errs;
  auto add = [&](std::string field, std::string value, std::string msg) {
    errs.push_back({std::move(field), std::move(value), std::move(msg)});
  };
  auto str = [](int64_t v) { return std::to_string(v); };
  if (s.batch < 1) add("batch", str(s.batch), "batch must be >= 1 (got " + str(s.batch) + ")");
  if (s.heads < 1) add("heads", str(s.heads), "heads must be >= 1 (got " + str(s.heads) + ")");
  if (s.kv_heads < 0)
    add("kv_heads", str(s.kv_heads), "kv_heads must be >= 1, or 0 for the same as heads (got " + str(s.kv_heads) + ")");
  else if (s.kv_heads > 0 && s.heads >= 1 && (s.kv_heads > s.heads || s.heads % s.kv_heads != 0))
    add("kv_heads", str(s.kv_heads),
        "kv_heads must divide heads (" + str(s.heads) + "), e.g. 1 (MQA) or a divisor for GQA (got " + str(s.kv_heads) + ")");
  if (s.seq_q < 1) add("seq", str(s.seq_q), "seq must be >= 1 (got " + str(s.seq_q) + ")");
  if (s.seq_kv < 0)
    add("seq_kv", str(s.seq_kv), "seq_kv must be >= 1, or 0 for the same as seq (got " + str(s.seq_kv) + ")");
  if (s.kind == WorkloadKind::layer && s.seq_kv > 0 && s.seq_q >= 1 && s.seq_kv != s.seq_q)
    add("seq_kv", str(s.seq_kv),
        "kind layer is self-attention: seq_kv must equal seq (" + str(s.seq_q) + ") or be 0 (got " + str(s.seq_kv) + ")");
  if (s.width < 0) add("width", str(s.width), "width must be >= 1, or 0 to use head_dim (got " + str(s.width) + ")");
  if (s.width > 0 && s.heads >= 1) {
    if (s.width % s.heads != 0)
      add("width", str(s.width),
          "width (" + str(s.width) + ") must be divisible by heads (" + str(s.heads) + ") so that head_dim = width / heads");
    else if (s.width / s.heads > kMaxHeadDim)
      add("width", str(s.width),
          "width / heads = " + str(s.width / s.heads) + " exceeds the largest head_dim, " + str(kMaxHeadDim));
  } else if (s.width == 0 && (s.head_dim < 1 || s.head_dim > kMaxHeadDim)) {
    add("head_dim", str(s.head_dim),
        "head_dim must be in 1.." + str(kMaxHeadDim) + " (got " + str(s.head_dim) + ")");
  }
  switch (s.mask.kind) {
    case MaskKind::window:
    case MaskKind::block:
      if (s.mask.width < 1)
        add("mask", toString(s.mask),
            std::string(toString(s.mask.kind)) + " width must be >= 1 (got " + str(s.mask.width) + ")");
      if (s.mask.kind == MaskKind::block && s.seq_q >= 1 && s.seqKv() != s.seq_q)
        add("mask", toString(s.mask),
            "block masks need seq == seq_kv (got seq " + str(s.seq_q) + ", seq_kv " + str(s.seqKv()) + ")");
      break;
    case MaskKind::dense:
    case MaskKind::additive:
      if (!(s.mask.keep_prob > 0.0 && s.mask.keep_prob <= 1.0))
        add("mask", toString(s.mask),
            std::string(toString(s.mask.kind)) + " mask keep-probability must be in (0, 1] (got " +
                shortestText(s.mask.keep_prob) + ")");
      break;
    default: break;
  }
  if (s.mask_dtype && s.mask.kind != MaskKind::additive) {
    add("mask_dtype", std::string(toString(*s.mask_dtype)),
        "mask_dtype " + std::string(toString(*s.mask_dtype)) + " is only for an additive mask (mask " +
            toString(s.mask) + " has no float tensor); leave mask_dtype empty or use --mask additive");
  } else if (s.mask_dtype && *s.mask_dtype != DType::fp32 && *s.mask_dtype != s.dtype) {
    // torch's SDPA refuses any other float mask ("Expected attn_mask dtype to be bool or float or
    // to match query dtype").
    add("mask_dtype", std::string(toString(*s.mask_dtype)),
        "mask_dtype " + std::string(toString(*s.mask_dtype)) + " does not fit dtype " + std::string(toString(s.dtype)) +
            ": a float mask is fp32 or q's dtype (allowed: q, fp32" +
            (s.dtype != DType::fp32 ? ", " + std::string(toString(s.dtype)) : std::string()) + ")");
  }
  if (s.scale && !(std::isfinite(*s.scale) && *s.scale > 0.0))
    add("scale", shortestText(*s.scale), "scale must be a finite number > 0 (got " + shortestText(*s.scale) + ")");
  if (s.checkpoint != Checkpoint::none && s.pass != Pass::train)
    add("checkpoint", std::string(toString(s.checkpoint)),
        "checkpoint " + std::string(toString(s.checkpoint)) + " needs pass train (a forward pass saves nothing for a "
        "backward); with pass " + std::string(toString(s.pass)) + " the only checkpoint is none (allowed with train: " +
            std::string(kCheckpointChoices) + ")");
  const bool layer = s.kind == WorkloadKind::layer;
  if (s.checkpoint == Checkpoint::layer && !layer)
    add("checkpoint", "layer",
        "checkpoint layer needs kind layer (it recomputes a whole layer); kind attention allows none, attention");
  if (s.layers < 1 || s.layers > kMaxLayers)
    add("layers", str(s.layers), "layers must be in 1.." + str(kMaxLayers) + " (got " + str(s.layers) + ")");
  else if (s.layers > 1 && !layer)
    add("layers", str(s.layers),
        "layers " + str(s.layers) + " needs kind layer (a stack of attention layers); kind attention is one call, "
        "layers 1");
  if (s.tp < 1 || s.tp > kMaxTp) {
    add("tp", str(s.tp), "tp must be in 1.." + str(kMaxTp) + " (got " + str(s.tp) + ")");
  } else if (s.tp > 1) {
    if (!layer)
      add("tp", str(s.tp), "tp " + str(s.tp) + " needs kind layer (tensor parallelism splits a layer's heads)");
    else if (s.heads >= 1 && s.heads % s.tp != 0)
      add("tp", str(s.tp), "tp (" + str(s.tp) + ") must divide heads (" + str(s.heads) + ")");
    else if (s.kv_heads >= 0 && s.heads >= 1 && s.kvHeads() % s.tp != 0)
      add("tp", str(s.tp),
          "tp (" + str(s.tp) + ") must divide kv_heads (" + str(s.kvHeads()) + "): each rank holds whole kv heads");
  }
  if (s.tp_comm != TpComm::allreduce && s.tp == 1)
    add("tp_comm", std::string(toString(s.tp_comm)),
        "tp_comm " + std::string(toString(s.tp_comm)) + " needs tp >= 2 (one rank communicates nothing; allowed with "
        "tp 1: allreduce)");
  if (errs.empty()) checkSizes(s, errs);
  return errs;
}

std::string describe(const std::vector<SpecError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += '\n';
    out += e.field + ": " + e.message;
  }
  return out;
}

std::string summary(const WorkloadSpec& s) {
  // Every field's piece in table order; defaults that say nothing (forward, attention, no scale)
  // are left out, so "B1 H8/8 L1024x1024 D64 fp32 none" is a forward attention call.
  std::string out;
  for (const SpecField& f : specFields()) out += f.briefText(s);
  return out.empty() ? out : out.substr(1);
}

const std::vector<std::string>& specFieldNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const SpecField& f : specFields()) out.emplace_back(f.name);
    return out;
  }();
  return names;
}

std::optional<SpecError> setField(WorkloadSpec& s, std::string_view field, std::string_view text) {
  const SpecField* f = findSpecField(field);
  const std::string name = f ? std::string(f->name) : std::string(field), v(text);
  // One rule for every field: values are taken as written, so whitespace anywhere is refused
  // (strtod would skip a leading space that from_chars refuses, and "dense: 0.5" vs " 8" differed).
  if (v.find_first_of(" \t\n\r\f\v") != std::string::npos)
    return SpecError{name, v, name + " must not contain whitespace (got '" + v + "')"};
  if (f) return f->parse(s, text);
  std::string all;
  for (const auto& n : specFieldNames()) all += (all.empty() ? "" : ", ") + n;
  return SpecError{name, v, "unknown spec field '" + name + "' (allowed: " + all + ")"};
}

SpecParseError::SpecParseError(std::string field, const std::string& message)
    : std::runtime_error("workload spec: " + message), field_(std::move(field)) {}

nlohmann::json toJson(const WorkloadSpec& s) {
  nlohmann::json j = nlohmann::json::object();
  for (const SpecField& f : specFields()) j[std::string(f.name)] = f.json(s);
  return j;
}

namespace {

// A JSON value as the text setField reads: numbers in full, strings as they are.
std::string jsonText(const SpecField& f, const nlohmann::json& v) {
  const std::string key(f.name);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return shortestText(v.get<double>());
  if (v.is_null()) {
    if (f.optional_value) return {};
    throw SpecParseError(key, "field '" + key + "' must not be null");
  }
  throw SpecParseError(key, "field '" + key + "' has the wrong JSON type");
}

}  // namespace

WorkloadSpec workloadSpecFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw SpecParseError("", "expected a JSON object");
  std::vector<const nlohmann::json*> given(specFields().size(), nullptr);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const SpecField* f = findSpecField(it.key());
    if (!f) {
      WorkloadSpec unused;
      throw SpecParseError(it.key(), setField(unused, it.key(), "")->message);
    }
    const auto& slot = given[static_cast<size_t>(f - specFields().data())];
    if (slot) throw SpecParseError(std::string(f->name), "field '" + std::string(f->name) + "' is given twice");
    given[static_cast<size_t>(f - specFields().data())] = &*it;
  }
  // Table order, not key order: head_dim is read before width, so a stored pair stays as stored.
  // A missing key keeps the default (files written before a field existed lack it).
  WorkloadSpec s;
  for (size_t i = 0; i < given.size(); ++i) {
    if (!given[i]) continue;
    const SpecField& f = specFields()[i];
    if (auto e = setField(s, f.name, jsonText(f, *given[i]))) throw SpecParseError(std::string(f.name), e->message);
  }
  return s;
}

}  // namespace attnscope
