#include "kernels/torch/worker_reply.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/base/utf8_text.h"
#include "kernels/torch/worker_process.h"

namespace attnscope::torch {
namespace {

// A value as quoted in a message: short, and never throwing on what it holds.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 60) + "..." : s;
}

}  // namespace

std::string workerText(std::string_view bytes, size_t max_bytes) {
  // Only what can be kept is converted: a 300 MB message costs no 300 MB copy.
  std::string text = validUtf8(bytes.substr(0, max_bytes + 1));
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
  text.resize(cut);
  return text + "... [cut: " + std::to_string(bytes.size()) + " bytes in all]";
}

WorkerReply::WorkerReply(nlohmann::json j, std::string what, std::function<void()> broken)
    : line_(std::make_shared<const nlohmann::json>(std::move(j))),
      j_(line_.get()),
      what_(std::move(what)),
      broken_(std::move(broken)) {}

WorkerReply WorkerReply::item(const nlohmann::json& j, const std::string& what) const {
  return WorkerReply(line_, &j, what_ + ", " + what, broken_);
}

void WorkerReply::fail(const std::string& field, const std::string& problem) const {
  if (broken_) broken_();
  throw WorkerFailure("torch worker protocol error: " + what_ + ": field '" + field + "' " + problem + "; killed it");
}

const nlohmann::json* WorkerReply::find(const char* key) const {
  if (!j_->is_object()) fail(key, "belongs to " + shown(*j_) + ", which is not a JSON object");
  auto it = j_->find(key);
  return it == j_->end() || it->is_null() ? nullptr : &*it;
}

bool WorkerReply::has(const char* key) const { return find(key) != nullptr; }

std::string WorkerReply::text(const char* key, const std::string& fallback, size_t max_bytes) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, "is " + shown(*v) + ", not a string");
  return workerText(v->get_ref<const std::string&>(), max_bytes);
}

std::vector<std::string> WorkerReply::texts(const char* key, size_t max_items) const {
  const nlohmann::json* v = find(key);
  std::vector<std::string> out;
  if (!v) return out;
  if (!v->is_array()) fail(key, "is " + shown(*v) + ", not a list of strings");
  for (const auto& e : *v) {
    if (!e.is_string()) fail(key, "holds " + shown(e) + ", not a string");
    if (out.size() == max_items) {
      out.push_back("... and " + std::to_string(v->size() - max_items) + " more left out");
      break;
    }
    out.push_back(workerText(e.get_ref<const std::string&>()));
  }
  return out;
}

bool WorkerReply::flag(const char* key, bool fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, "is " + shown(*v) + ", not true or false");
  return v->get<bool>();
}

int64_t WorkerReply::integer(const char* key, int64_t lo, int64_t hi, int64_t fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  bool ok = false;
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    value = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    ok = true;
    value = v->get<int64_t>();
  }
  if (!ok || value < lo || value > hi)
    fail(key, "is " + shown(*v) + ", not an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return value;
}

double WorkerReply::number(const char* key, double lo, double hi) const {
  const nlohmann::json* v = find(key);
  if (!v) fail(key, "is missing");
  const double d = v->is_number() ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
  if (!(std::isfinite(d) && d > lo && d <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "a number greater than %g and at most %g", lo, hi);
    fail(key, "is " + shown(*v) + ", not " + range);
  }
  return d;
}

const nlohmann::json& WorkerReply::array(const char* key, size_t max_items) const {
  static const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json* v = find(key);
  if (!v) return empty;
  if (!v->is_array()) fail(key, "is " + shown(*v) + ", not a list");
  if (v->size() > max_items)
    fail(key, "holds " + std::to_string(v->size()) + " items, more than the " + std::to_string(max_items) + " allowed");
  return *v;
}

}  // namespace attnscope::torch
