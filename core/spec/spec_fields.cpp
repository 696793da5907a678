#include "core/spec/spec_fields.h"

#include <charconv>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/base/format.h"

namespace attnscope {

bool parseSpecInt(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parseSpecDouble(std::string_view s, double& out) {
  if (s.empty()) return false;
  std::string tmp(s);
  char* end = nullptr;
  out = std::strtod(tmp.c_str(), &end);
  return end == tmp.c_str() + tmp.size();
}

// Masks and scales are stored as this text: a keep-probability rounded to 6 digits would draw
// another mask when the run is read back.
std::string shortestText(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

namespace {

using Values = std::vector<StoreValue>;
using Problem = std::optional<std::string>;

std::optional<SpecError> intInto(std::string_view field, std::string_view text, int64_t& target) {
  int64_t x = 0;
  if (!parseSpecInt(text, x))
    return SpecError{std::string(field), std::string(text), std::string(field) + " must be an integer (got '" + std::string(text) + "')"};
  target = x;
  return std::nullopt;
}

int64_t intOf(const StoreValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  return 0;
}
double realOf(const StoreValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::numeric_limits<double>::quiet_NaN();
}
std::string textOf(const StoreValue& v) {
  if (auto* t = std::get_if<std::string>(&v)) return *t;
  return {};
}

std::string str(int64_t v) { return std::to_string(v); }


// Integer fields differ only in the member, their names and texts; a macro keeps each entry one
// readable block without repeating the five lambdas. The column was added by schema `since`; rows
// saved before read as `sql_default`.
#define ATTNSCOPE_INT_FIELD_FUNCTIONS(member, field, since, sql_default)                                    \
  .parse = [](WorkloadSpec& s, std::string_view t) { return intInto(field, t, s.member); },               \
  .format = [](const WorkloadSpec& s) { return str(s.member); },                                         \
  .json = [](const WorkloadSpec& s) { return nlohmann::json(s.member); },                                \
  .columns = {{field, "INTEGER NOT NULL", since, sql_default}},                                          \
  .store = [](const WorkloadSpec& s) { return Values{s.member}; },                                       \
  .load = [](WorkloadSpec& s, const Values& v) -> Problem {                                              \
    s.member = intOf(v[0]);                                                                               \
    return std::nullopt;                                                                                  \
  }

// kind, pass and checkpoint: a choice among an enum's names (core/spec/workload_kind.h), stored as
// text in a column added by schema `since`, which rows saved before read as `sql_default`.
#define ATTNSCOPE_ENUM_FIELD_FUNCTIONS(member, field, parser, choices, what, since, sql_default)          \
  .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {                        \
    auto v = parser(t);                                                                                   \
    if (!v)                                                                                               \
      return SpecError{field, std::string(t),                                                             \
                       "unknown " what " '" + std::string(t) + "' (allowed: " + std::string(choices) + ")"}; \
    s.member = *v;                                                                                        \
    return std::nullopt;                                                                                  \
  },                                                                                                      \
  .format = [](const WorkloadSpec& s) { return std::string(toString(s.member)); },                       \
  .json = [](const WorkloadSpec& s) { return nlohmann::json(toString(s.member)); },                      \
  .columns = {{field, "TEXT NOT NULL", since, sql_default}},                                             \
  .store = [](const WorkloadSpec& s) { return Values{std::string(toString(s.member))}; },                \
  .load = [](WorkloadSpec& s, const Values& v) -> Problem {                                              \
    auto parsed = parser(textOf(v[0]));                                                                   \
    if (!parsed) return "an unknown " what " '" + textOf(v[0]) + "'";                                     \
    s.member = *parsed;                                                                                   \
    return std::nullopt;                                                                                  \
  }

std::vector<SpecField> buildTable() {
  std::vector<SpecField> t;
  t.push_back({.name = "kind", .cli = "kind", .metavar = "K",
               .help = "attention (one SDPA call on q, k, v) or layer (QKV projection, attention, output projection "
                       "on x [B, L, E]) (default attention)",
               .label = "kind", .widget = FieldWidget::choice, .choices = {"attention", "layer"},
               .example = {"layer", "attention"}, .csv_column = "kind",
               ATTNSCOPE_ENUM_FIELD_FUNCTIONS(kind, "kind", parseWorkloadKind, kWorkloadKindChoices, "kind", 3, "'attention'"),
               .brief = [](const WorkloadSpec& s) { return s.kind != WorkloadKind::attention ? concat(" ", toString(s.kind)) : std::string(); },
               .words = [](const WorkloadSpec& s) { return s.kind != WorkloadKind::attention ? std::string(toString(s.kind)) : std::string(); }});
  t.push_back({.name = "pass", .cli = "pass", .metavar = "P",
               .help = "forward, or train: forward then the backward of sum(O * G), every gradient (default forward)",
               .label = "pass", .widget = FieldWidget::choice, .choices = {"forward", "train"},
               .example = {"train", "forward"}, .csv_column = "pass",
               ATTNSCOPE_ENUM_FIELD_FUNCTIONS(pass, "pass", parsePass, kPassChoices, "pass", 3, "'forward'"),
               .brief = [](const WorkloadSpec& s) { return s.pass != Pass::forward ? concat(" ", toString(s.pass)) : std::string(); },
               .words = [](const WorkloadSpec& s) { return s.pass != Pass::forward ? std::string(toString(s.pass)) : std::string(); }});
  t.push_back({.name = "checkpoint", .cli = "checkpoint", .metavar = "C",
               .help = "none, attention (the forward keeps only the attention's inputs and the backward recomputes "
                       "it) or layer (kind layer: each layer keeps only its input and the backward reruns its forward); "
                       "needs --pass train (default none)",
               .label = "checkpoint", .widget = FieldWidget::choice, .choices = {"none", "attention", "layer"},
               .example = {"attention", "none"}, .example_context = {{"pass", "train"}}, .csv_column = "checkpoint",
               ATTNSCOPE_ENUM_FIELD_FUNCTIONS(checkpoint, "checkpoint", parseCheckpoint, kCheckpointChoices,
                                              "checkpoint", 3, "'none'")});
  t.push_back({.name = "layers", .cli = "layers", .metavar = "N",
               .help = "kind layer: a stack of N layers, each with its own weights, x -> layer 1 -> ... -> layer N "
                       "(default 1)",
               .label = "layers", .example = {"2", "4"}, .example_context = {{"kind", "layer"}},
               .csv_column = "layers", ATTNSCOPE_INT_FIELD_FUNCTIONS(layers, "layers", 7, "1"),
               .brief = [](const WorkloadSpec& s) { return s.layers != 1 ? concat(" x", str(s.layers)) : std::string(); },
               .words = [](const WorkloadSpec& s) { return s.layers != 1 ? concat(str(s.layers), " layers") : std::string(); }});
  t.push_back({.name = "tp", .cli = "tp", .metavar = "N",
               .help = "kind layer, torch backends: N tensor-parallel ranks (torch.distributed: gloo on the CPU, NCCL "
                       "on GPUs), each holding heads / N heads; must divide heads and kv_heads (default 1)",
               .label = "tp ranks", .example = {"2", "4"}, .example_context = {{"kind", "layer"}},
               .csv_column = "tp", ATTNSCOPE_INT_FIELD_FUNCTIONS(tp, "tp", 7, "1"),
               .brief = [](const WorkloadSpec& s) { return s.tp != 1 ? concat(" tp", str(s.tp)) : std::string(); },
               .words = [](const WorkloadSpec& s) {
                 return s.tp != 1 ? concat(str(s.tp), " tensor-parallel ranks") : std::string();
               }});
  t.push_back({.name = "tp_comm", .aliases = {"tp-comm"}, .cli = "tp-comm", .metavar = "C",
               .help = "with --tp: allreduce (each rank's partial output projection summed, Megatron) or gather "
                       "(the heads' outputs all-gathered, the whole output projection on every rank) (default "
                       "allreduce)",
               .label = "tp comm", .widget = FieldWidget::choice, .choices = {"allreduce", "gather"},
               .example = {"gather", "allreduce"}, .example_context = {{"kind", "layer"}, {"tp", "2"}},
               .csv_column = "tp_comm",
               ATTNSCOPE_ENUM_FIELD_FUNCTIONS(tp_comm, "tp_comm", parseTpComm, kTpCommChoices, "tp_comm", 7,
                                              "'allreduce'"),
               .brief = [](const WorkloadSpec& s) {
                 return s.tp_comm != TpComm::allreduce ? concat(" ", toString(s.tp_comm)) : std::string();
               },
               .words = [](const WorkloadSpec& s) {
                 return s.tp_comm != TpComm::allreduce ? concat("tp_comm ", toString(s.tp_comm)) : std::string();
               }});
  t.push_back({.name = "batch", .cli = "batch", .metavar = "N", .help = "batch size (default 1)", .label = "batch",
               .example = {"2", "4"}, .csv_column = "batch", .table_header = "B",
               ATTNSCOPE_INT_FIELD_FUNCTIONS(batch, "batch", 1, ""),
               .brief = [](const WorkloadSpec& s) { return concat(" B", str(s.batch)); },
               .words = [](const WorkloadSpec& s) { return concat("batch ", str(s.batch)); }});
  t.push_back({.name = "heads", .cli = "heads", .metavar = "N", .help = "query heads (default 8)", .label = "heads",
               .example = {"4", "16"}, .csv_column = "heads", .table_header = "H",
               ATTNSCOPE_INT_FIELD_FUNCTIONS(heads, "heads", 1, ""),
               .brief = [](const WorkloadSpec& s) { return concat(" H", str(s.heads)); },
               .words = [](const WorkloadSpec& s) { return concat("heads ", str(s.heads)); }});
  t.push_back({.name = "kv_heads", .aliases = {"kv-heads"}, .cli = "kv-heads", .metavar = "N",
               .help = "key/value heads, dividing heads: GQA, 1 = MQA (default: heads)", .label = "kv_heads",
               .zero_text = "same as heads", .example = {"1", "2"}, .csv_column = "kv_heads", .table_header = "Hkv",
               ATTNSCOPE_INT_FIELD_FUNCTIONS(kv_heads, "kv_heads", 1, ""),
               .brief = [](const WorkloadSpec& s) { return concat("/", str(s.kvHeads())); }});
  // seq's member and store column are seq_q (beside seq_kv); its name is what people type.
  t.push_back({.name = "seq", .aliases = {"seq_q"}, .cli = "seq", .metavar = "N",
               .help = "query sequence length (default 1024)", .label = "seq", .example = {"128", "256"},
               .csv_column = "seq_q", .table_header = "Lq",
               .parse = [](WorkloadSpec& s, std::string_view t) { return intInto("seq", t, s.seq_q); },
               .format = [](const WorkloadSpec& s) { return str(s.seq_q); },
               .json = [](const WorkloadSpec& s) { return nlohmann::json(s.seq_q); },
               .columns = {{"seq_q", "INTEGER NOT NULL"}},
               .store = [](const WorkloadSpec& s) { return Values{s.seq_q}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 s.seq_q = intOf(v[0]);
                 return std::nullopt;
               },
               .brief = [](const WorkloadSpec& s) { return concat(" L", str(s.seq_q)); },
               .words = [](const WorkloadSpec& s) { return concat("seq ", str(s.seq_q)); }});
  t.push_back({.name = "seq_kv", .aliases = {"seq-kv"}, .cli = "seq-kv", .metavar = "N",
               .help = "key/value sequence length (default: seq)", .label = "seq_kv", .zero_text = "same as seq",
               .example = {"64", "512"}, .csv_column = "seq_kv", .table_header = "Lkv",
               ATTNSCOPE_INT_FIELD_FUNCTIONS(seq_kv, "seq_kv", 1, ""),
               .brief = [](const WorkloadSpec& s) { return concat("x", str(s.seqKv())); }});
  // Choosing head_dim un-fixes the model width, so a head_dim axis over a fixed-width base sweeps
  // head_dim. JSON reads head_dim before width (table order), so a stored pair is kept as stored.
  t.push_back({.name = "head_dim", .aliases = {"head-dim"}, .cli = "head-dim", .metavar = "N",
               .help = "head dimension 1..512 (default 64)", .label = "head_dim", .example = {"32", "128"},
               .csv_column = "head_dim", .table_header = "D",
               .parse = [](WorkloadSpec& s, std::string_view t) {
                 auto e = intInto("head_dim", t, s.head_dim);
                 if (!e) s.width = 0;
                 return e;
               },
               .format = [](const WorkloadSpec& s) { return str(s.head_dim); },
               .json = [](const WorkloadSpec& s) { return nlohmann::json(s.head_dim); },
               .columns = {{"head_dim", "INTEGER NOT NULL"}},
               .store = [](const WorkloadSpec& s) { return Values{s.head_dim}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 s.head_dim = intOf(v[0]);
                 return std::nullopt;
               },
               .brief = [](const WorkloadSpec& s) { return concat(" D", str(s.headDim())); },
               .words = [](const WorkloadSpec& s) { return concat("head_dim ", str(s.headDim())); }});
  t.push_back({.name = "width", .cli = "width", .metavar = "N",
               .help = "fixed model width: head_dim = width / heads (instead of --head-dim)", .label = "width",
               .example = {"256", "1024"}, .csv_column = "width",
               ATTNSCOPE_INT_FIELD_FUNCTIONS(width, "width", 1, ""),
               .brief = [](const WorkloadSpec&) { return std::string(); },  // D shows the head_dim it gives
               .words = [](const WorkloadSpec& s) {
                 return s.width > 0 ? concat("width ", str(s.width), " = heads x head_dim") : std::string();
               }});
  t.push_back({.name = "dtype", .cli = "dtype", .metavar = "T", .help = "fp32, fp16 or bf16 (default fp32)",
               .label = "dtype", .widget = FieldWidget::choice, .choices = {"fp32", "fp16", "bf16"},
               .example = {"fp16", "bf16"}, .csv_column = "dtype", .table_header = "dtype",
               .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {
                 auto d = parseDType(t);
                 if (!d)
                   return SpecError{"dtype", std::string(t),
                                    "unknown dtype '" + std::string(t) + "' (allowed: " + std::string(kDTypeChoices) + ")"};
                 s.dtype = *d;
                 return std::nullopt;
               },
               .format = [](const WorkloadSpec& s) { return std::string(toString(s.dtype)); },
               .json = [](const WorkloadSpec& s) { return nlohmann::json(toString(s.dtype)); },
               .columns = {{"dtype", "TEXT NOT NULL"}},
               .store = [](const WorkloadSpec& s) { return Values{std::string(toString(s.dtype))}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 auto d = parseDType(textOf(v[0]));
                 if (!d) return "an unknown dtype '" + textOf(v[0]) + "'";
                 s.dtype = *d;
                 return std::nullopt;
               },
               .brief = [](const WorkloadSpec& s) { return concat(" ", toString(s.dtype)); },
               .words = [](const WorkloadSpec& s) { return std::string(toString(s.dtype)); }});
  // The store keeps the mask's width and keep-probability in their own columns (the real exact).
  t.push_back({.name = "mask", .cli = "mask", .metavar = "M",
               .help = "none, causal, window:W, block:W, dense[:p], additive[:p] (a float bias; alias float[:p]) "
                       "(default none)",
               .label = "mask", .widget = FieldWidget::open_choice,
               .choices = {"none", "causal", "window:256", "block:128", "dense", "dense:0.5", "additive", "additive:0.5"},
               .example = {"causal", "window:16", "dense:0.3", "additive", "additive:0.5"}, .csv_column = "mask",
               .table_header = "mask",
               .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {
                 auto m = parseMask(t);
                 if (m.error) return m.error;
                 s.mask = *m.mask;
                 return std::nullopt;
               },
               .format = [](const WorkloadSpec& s) { return toString(s.mask); },
               .json = [](const WorkloadSpec& s) { return nlohmann::json(toString(s.mask)); },
               .columns = {{"mask", "TEXT NOT NULL"}, {"mask_width", "INTEGER NOT NULL"}, {"mask_keep_prob", "REAL"}},
               .store = [](const WorkloadSpec& s) { return Values{toString(s.mask), s.mask.width, s.mask.keep_prob}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 ParsedMask pm = parseMask(textOf(v[0]));
                 if (!pm.mask) return "an unknown mask '" + textOf(v[0]) + "'";
                 s.mask.kind = pm.mask->kind;
                 s.mask.width = intOf(v[1]);
                 s.mask.keep_prob = realOf(v[2]);
                 return std::nullopt;
               },
               // The layout belongs to a mask tensor (dense, additive) and is said with it.
               .brief = [](const WorkloadSpec& s) {
                 return maskIsTensor(s.mask) ? concat(" ", toString(s.mask), "/", toString(s.mask_layout))
                                             : concat(" ", toString(s.mask));
               },
               .words = [](const WorkloadSpec& s) {
                 return maskIsTensor(s.mask) ? concat("mask ", toString(s.mask), " (", toString(s.mask_layout), ")")
                                             : concat("mask ", toString(s.mask));
               }});
  t.push_back({.name = "mask_layout", .aliases = {"mask-layout"}, .cli = "mask-layout", .metavar = "L",
               .help = "dense or additive mask layout: broadcast [1,1,L,S] or per_head [B,H,L,S]", .label = "mask layout",
               .widget = FieldWidget::choice, .choices = {"broadcast", "per_head"}, .example = {"per_head", "broadcast"},
               .example_context = {{"mask", "dense"}},
               .csv_column = "mask_layout",
               .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {
                 auto l = parseMaskLayout(t);
                 if (!l)
                   return SpecError{"mask_layout", std::string(t),
                                    "unknown mask layout '" + std::string(t) + "' (allowed: " +
                                        std::string(kMaskLayoutChoices) + ")"};
                 s.mask_layout = *l;
                 return std::nullopt;
               },
               .format = [](const WorkloadSpec& s) { return std::string(toString(s.mask_layout)); },
               .json = [](const WorkloadSpec& s) { return nlohmann::json(toString(s.mask_layout)); },
               .columns = {{"mask_layout", "TEXT NOT NULL"}},
               .store = [](const WorkloadSpec& s) { return Values{std::string(toString(s.mask_layout))}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 auto l = parseMaskLayout(textOf(v[0]));
                 if (!l) return "an unknown mask layout '" + textOf(v[0]) + "'";
                 s.mask_layout = *l;
                 return std::nullopt;
               },
               .brief = [](const WorkloadSpec&) { return std::string(); },  // said with the mask
               .words = [](const WorkloadSpec&) { return std::string(); }});
  // The additive mask's element type. Empty (or "q") is q's dtype, which is what every spec without
  // the field means; the store column is new in schema 5, older rows read ''.
  t.push_back({.name = "mask_dtype", .aliases = {"mask-dtype"}, .cli = "mask-dtype", .metavar = "T",
               .help = "additive mask element type: q (the same as dtype), fp32, fp16 or bf16; torch takes fp32 or "
                       "q's dtype (default q)",
               .label = "mask dtype", .widget = FieldWidget::choice, .choices = {"fp32", "fp16", "bf16"},
               .zero_text = "same as dtype", .optional_value = true, .example = {"fp32", "fp16"},
               .example_context = {{"mask", "additive"}, {"dtype", "fp16"}}, .csv_column = "mask_dtype",
               .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {
                 if (t.empty() || t == "q") {
                   s.mask_dtype.reset();
                   return std::nullopt;
                 }
                 auto d = parseDType(t);
                 if (!d)
                   return SpecError{"mask_dtype", std::string(t),
                                    "unknown mask_dtype '" + std::string(t) + "' (allowed: " +
                                        std::string(kMaskDTypeChoices) + ")"};
                 s.mask_dtype = *d;
                 return std::nullopt;
               },
               .format = [](const WorkloadSpec& s) { return s.mask_dtype ? std::string(toString(*s.mask_dtype)) : std::string(); },
               .json = [](const WorkloadSpec& s) {
                 return s.mask_dtype ? nlohmann::json(toString(*s.mask_dtype)) : nlohmann::json(nullptr);
               },
               .columns = {{"mask_dtype", "TEXT NOT NULL", 5, "''"}},
               .store = [](const WorkloadSpec& s) {
                 return Values{s.mask_dtype ? std::string(toString(*s.mask_dtype)) : std::string()};
               },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 const std::string t = textOf(v[0]);
                 if (t.empty()) {
                   s.mask_dtype.reset();
                   return std::nullopt;
                 }
                 auto d = parseDType(t);
                 if (!d) return "an unknown mask_dtype '" + t + "'";
                 s.mask_dtype = *d;
                 return std::nullopt;
               },
               // Said with the mask ("additive/broadcast/fp32"); q's dtype is not said.
               .brief = [](const WorkloadSpec& s) {
                 return s.mask_dtype ? concat("/", toString(*s.mask_dtype)) : std::string();
               },
               .words = [](const WorkloadSpec& s) {
                 return s.mask_dtype ? concat("mask dtype ", toString(*s.mask_dtype)) : std::string();
               }});
  t.push_back({.name = "scale", .cli = "scale", .metavar = "X", .help = "softmax scale (default 1/sqrt(head_dim))",
               .label = "scale", .widget = FieldWidget::number_text, .optional_value = true,
               .example = {"0.125", "0.5"}, .csv_column = "scale",
               .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {
                 if (t.empty() || t == "default") {
                   s.scale.reset();
                   return std::nullopt;
                 }
                 double x = 0;
                 if (!parseSpecDouble(t, x))
                   return SpecError{"scale", std::string(t), "scale must be a number (got '" + std::string(t) + "')"};
                 s.scale = x;
                 return std::nullopt;
               },
               .format = [](const WorkloadSpec& s) { return s.scale ? shortestText(*s.scale) : std::string(); },
               .json = [](const WorkloadSpec& s) { return s.scale ? nlohmann::json(*s.scale) : nlohmann::json(nullptr); },
               .columns = {{"scale", "REAL"}},
               .store = [](const WorkloadSpec& s) { return s.scale ? Values{*s.scale} : Values{std::monostate{}}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 if (std::holds_alternative<std::monostate>(v[0])) s.scale.reset();
                 else s.scale = realOf(v[0]);
                 return std::nullopt;
               }});
  t.push_back({.name = "seed", .cli = "seed", .metavar = "S", .help = "seed for inputs and dense or additive masks (default 0)",
               .label = "seed", .example = {"1", "7"}, .csv_column = "seed",
               .parse = [](WorkloadSpec& s, std::string_view t) -> std::optional<SpecError> {
                 int64_t x = 0;
                 if (!parseSpecInt(t, x) || x < 0)
                   return SpecError{"seed", std::string(t), "seed must be a non-negative integer (got '" + std::string(t) + "')"};
                 s.seed = static_cast<uint64_t>(x);
                 return std::nullopt;
               },
               .format = [](const WorkloadSpec& s) { return std::to_string(s.seed); },
               .json = [](const WorkloadSpec& s) { return nlohmann::json(s.seed); },
               .columns = {{"seed", "INTEGER NOT NULL"}},
               .store = [](const WorkloadSpec& s) { return Values{static_cast<int64_t>(s.seed)}; },
               .load = [](WorkloadSpec& s, const Values& v) -> Problem {
                 s.seed = static_cast<uint64_t>(intOf(v[0]));
                 return std::nullopt;
               }});
  return t;
}

#undef ATTNSCOPE_INT_FIELD_FUNCTIONS
#undef ATTNSCOPE_ENUM_FIELD_FUNCTIONS

}  // namespace

WorkloadSpec resolvedSpec(const WorkloadSpec& s) {
  WorkloadSpec r = s;
  r.kv_heads = s.kvHeads();
  r.seq_kv = s.seqKv();
  r.head_dim = s.headDim();
  // The model width heads x head_dim also where head_dim was given (a layer's embedding width E;
  // for attention what the Workload form shows greyed).
  r.width = s.width > 0 ? s.width : s.heads * s.headDim();
  r.scale = s.effectiveScale();
  // The additive mask's type as used; other masks have none (a mask_dtype there is invalid).
  if (s.mask.kind == MaskKind::additive) r.mask_dtype = s.maskDType();
  return r;
}

std::string SpecField::cell(const WorkloadSpec& s) const { return format(resolvedSpec(s)); }

namespace {
bool isDefault(const SpecField& f, const WorkloadSpec& s) {
  static const WorkloadSpec defaults;
  return f.format(s) == f.format(defaults);
}
}  // namespace

std::string SpecField::briefText(const WorkloadSpec& s) const {
  if (brief) return brief(s);
  return isDefault(*this, s) ? std::string() : concat(" ", name, ":", format(s));
}

std::string SpecField::wordsText(const WorkloadSpec& s) const {
  if (words) return words(s);
  return isDefault(*this, s) ? std::string() : concat(name, " ", format(s));
}

const std::vector<SpecField>& specFields() {
  static const std::vector<SpecField> table = buildTable();
  return table;
}

const SpecField* findSpecField(std::string_view name) {
  for (const SpecField& f : specFields()) {
    if (f.name == name || f.cli == name) return &f;
    for (std::string_view a : f.aliases)
      if (a == name) return &f;
  }
  return nullptr;
}

}  // namespace attnscope
