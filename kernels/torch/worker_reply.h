#pragma once
// What a torch worker says, checked and bounded on our side before anything of it is stored or
// printed. The worker is the user's Python running our script, but nothing stops another script,
// a wrapper or a broken install from answering in its place: a wrong type, an impossible value,
// bytes that are not UTF-8 or a flood of text must fail the point (or be cut, with a note) here,
// not surface later as a raw JSON exception, a run of -1 s or gigabytes in the store.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnscope::torch {

// One message, warning, path or name from the worker, at most this long once made valid UTF-8.
inline constexpr size_t kMaxTextBytes = 4096;
// Warnings kept from one reply (torch's are deduplicated by the worker; a few is normal).
inline constexpr size_t kMaxWarnings = 20;

// Bytes from the worker as stored and printed: valid UTF-8 (validUtf8), cut at a character
// boundary past max_bytes with a note saying how much was left out.
std::string workerText(std::string_view bytes, size_t max_bytes = kMaxTextBytes);

// Typed fields of one JSON line from the worker. A field of the wrong type or out of range
// calls `broken` (the worker is killed) and throws WorkerFailure naming the field and the value.
class WorkerReply {
 public:
  WorkerReply(nlohmann::json j, std::string what, std::function<void()> broken = {});

  bool has(const char* key) const;
  // Absent or null: `fallback`. Else a string, returned through workerText.
  std::string text(const char* key, const std::string& fallback = "", size_t max_bytes = kMaxTextBytes) const;
  // A list of strings (absent: empty); past max_items the rest is summed up in one last entry.
  std::vector<std::string> texts(const char* key, size_t max_items) const;
  bool flag(const char* key, bool fallback) const;
  // An integer in [lo, hi]; absent or null: `fallback`.
  int64_t integer(const char* key, int64_t lo, int64_t hi, int64_t fallback) const;
  // Required: a finite number in (lo, hi].
  double number(const char* key, double lo, double hi) const;
  // Absent or null: an empty array. Else an array of at most max_items.
  const nlohmann::json& array(const char* key, size_t max_items) const;
  // Another object of the same line (an event, a device) checked the same way.
  WorkerReply item(const nlohmann::json& j, const std::string& what) const;

  const nlohmann::json& json() const { return *j_; }
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const;

 private:
  WorkerReply(std::shared_ptr<const nlohmann::json> line, const nlohmann::json* j, std::string what,
              std::function<void()> broken)
      : line_(std::move(line)), j_(j), what_(std::move(what)), broken_(std::move(broken)) {}
  const nlohmann::json* find(const char* key) const;

  std::shared_ptr<const nlohmann::json> line_;  // the whole line; items point into it
  const nlohmann::json* j_;
  std::string what_;  // "answering 'run'": where the field was
  std::function<void()> broken_;
};

}  // namespace attnscope::torch
