#include "core/result/recording.h"

#include <cmath>
#include <stdexcept>

namespace attnscope {

std::string Recording::exitText() const {
  std::string text = exit_status ? "exited with status " + std::to_string(*exit_status)
                                 : "killed by signal " + std::to_string(exit_signal);
  return interrupted ? "interrupted (" + text + ")" : text;
}

int Recording::exitCode() const { return exit_status ? *exit_status : 128 + exit_signal; }

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw std::invalid_argument("recorded call: " + field + " " + why);
}

const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& where, size_t max = 4096) {
  const nlohmann::json* v = member(j, key);
  if (!v) return {};
  if (!v->is_string()) bad(where + key, "must be a string");
  std::string s = v->get<std::string>();
  if (s.size() > max) s.resize(max);
  return s;
}

bool flag(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json* v = member(j, key);
  if (!v) return false;
  if (!v->is_boolean()) bad(where + key, "must be true or false");
  return v->get<bool>();
}

double real(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json* v = member(j, key);
  if (!v) return 0;
  if (!v->is_number()) bad(where + key, "must be a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < 0) bad(where + key, "must be a finite number >= 0");
  return x;
}

int64_t count(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json* v = member(j, key);
  if (!v) return 0;
  if (!v->is_number_integer() || v->get<int64_t>() < 0) bad(where + key, "must be an integer >= 0");
  return v->get<int64_t>();
}

std::vector<int64_t> dims(const nlohmann::json& j, const char* key, const std::string& where, bool signed_ok = false) {
  const nlohmann::json* v = member(j, key);
  if (!v) return {};
  if (!v->is_array() || v->size() > 8) bad(where + key, "must be a list of at most 8 integers");
  std::vector<int64_t> out;
  for (const auto& x : *v) {
    if (!x.is_number_integer() || (!signed_ok && x.get<int64_t>() < 0)) bad(where + key, "must hold integers >= 0");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

std::vector<std::string> texts(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json* v = member(j, key);
  if (!v) return {};
  if (!v->is_array()) bad(where + key, "must be a list of strings");
  std::vector<std::string> out;
  for (const auto& x : *v) {
    if (!x.is_string()) bad(where + key, "must be a list of strings");
    if (out.size() < 64) out.push_back(x.get<std::string>().substr(0, 1024));
  }
  return out;
}

RecordedTensor tensorOf(const nlohmann::json& j, const char* key) {
  const std::string where = std::string(key) + ".";
  const nlohmann::json* t = member(j, key);
  if (!t || !t->is_object()) bad(key, "must be an object (shape, stride, dtype, device)");
  RecordedTensor out;
  out.shape = dims(*t, "shape", where);
  out.stride = dims(*t, "stride", where, true);
  out.offset = count(*t, "offset", where);
  out.dtype = text(*t, "dtype", where, 64);
  out.device = text(*t, "device", where, 64);
  out.contiguous = member(*t, "contiguous") ? flag(*t, "contiguous", where) : true;
  return out;
}

RecordedStats statsOf(const nlohmann::json& j, const std::string& where) {
  RecordedStats s;
  s.count = count(j, "count", where);
  s.time_total_s = real(j, "time_total_s", where);
  s.time_min_s = real(j, "time_min_s", where);
  s.time_max_s = real(j, "time_max_s", where);
  s.memory_measured = count(j, "memory_measured", where);
  s.bytes_min = count(j, "bytes_min", where);
  s.bytes_max = count(j, "bytes_max", where);
  return s;
}

}  // namespace

RecordedCall recordedCallFromJson(const nlohmann::json& j, int64_t row) {
  if (!j.is_object()) bad("", "must be an object");
  RecordedCall c;
  c.row = row;
  c.op = text(j, "op", "", 128);
  c.site = text(j, "site", "");
  c.module = text(j, "module", "");
  c.q = tensorOf(j, "q");
  c.k = tensorOf(j, "k");
  c.v = tensorOf(j, "v");
  if (const nlohmann::json* m = member(j, "mask")) {
    if (!m->is_object()) bad("mask", "must be an object");
    c.mask.kind = text(*m, "kind", "mask.", 16);
    if (c.mask.kind.empty()) c.mask.kind = "none";
    if (c.mask.kind != "none" && c.mask.kind != "bool" && c.mask.kind != "float")
      bad("mask.kind", "must be none, bool or float (got '" + c.mask.kind + "')");
    c.mask.shape = dims(*m, "shape", "mask.");
    c.mask.stride = dims(*m, "stride", "mask.", true);
    c.mask.broadcast = flag(*m, "broadcast", "mask.");
    c.mask.materialised = flag(*m, "materialised", "mask.");
  }
  c.is_causal = flag(j, "is_causal", "");
  c.dropout_p = real(j, "dropout_p", "");
  if (const nlohmann::json* s = member(j, "scale")) {
    if (!s->is_number() || !std::isfinite(s->get<double>())) bad("scale", "must be a number or null");
    c.scale = s->get<double>();
  }
  c.enable_gqa = flag(j, "enable_gqa", "");
  c.requires_grad = flag(j, "requires_grad", "");
  c.fused_choice = text(j, "fused_choice", "", 64);
  c.ran = text(j, "ran", "", 128);
  c.aten_ops = texts(j, "aten_ops", "");
  c.notes = texts(j, "notes", "");
  c.raised = text(j, "raised", "");
  c.memory_method = text(j, "memory_method", "", 32);
  c.forward = statsOf(j, "");
  if (const nlohmann::json* b = member(j, "backward")) {
    if (!b->is_object()) bad("backward", "must be an object or null");
    c.backward = statsOf(*b, "backward.");
  }
  c.raw = j;
  return c;
}

nlohmann::json recorderTorchFacts(const nlohmann::json& j) {
  nlohmann::json t = nlohmann::json::object();
  for (const char* key : {"python", "executable", "torch", "torch_cuda", "torch_cudnn", "cuda_available", "cuda_devices", "threads"})
    if (auto it = j.find(key); it != j.end()) t[key] = *it;
  return t;
}

Recording recordingFromRecorderJson(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("the recording is not a JSON object");
  Recording r;
  r.torch = recorderTorchFacts(j);
  r.calls_seen = count(j, "calls_seen", "");
  r.calls_dropped = count(j, "calls_dropped", "");
  r.overhead_s = real(j, "overhead_s", "");
  r.complete = flag(j, "complete", "");
  r.interrupted = flag(j, "interrupted", "") || flag(j, "terminated", "");
  r.note = text(j, "error", "");
  const nlohmann::json* calls = member(j, "calls");
  if (calls && !calls->is_array()) throw std::invalid_argument("the recording's calls are not a list");
  if (calls && calls->size() > kMaxRecordedCalls)
    throw std::invalid_argument("the recording holds " + std::to_string(calls->size()) + " call signatures (at most " +
                                std::to_string(kMaxRecordedCalls) + ")");
  if (calls)
    for (const auto& c : *calls) r.calls.push_back(recordedCallFromJson(c, static_cast<int64_t>(r.calls.size()) + 1));
  return r;
}

}  // namespace attnscope
