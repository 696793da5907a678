// Fuzzes the workload spec and sweep spec parsers: JSON as the store keeps it, single fields as
// the command line gives them, and mask text. Bad input must come back as an error value or a
// std::exception; a valid spec must survive its own JSON round trip unchanged (the store relies
// on that to show a run's spec as it was run).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/spec/sweep_spec.h"
#include "core/spec/workload_spec.h"
#include "fuzz/fuzz_support.h"

using namespace attnscope;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_spec: %s\n", what.c_str());
  abort();
}

void checkRoundTrip(const WorkloadSpec& s) {
  if (!validate(s).empty()) return;
  (void)summary(s);
  const nlohmann::json j = toJson(s);
  const WorkloadSpec back = workloadSpecFromJson(nlohmann::json::parse(j.dump()));
  if (!(back == s)) fail("spec changed in a JSON round trip: " + j.dump() + " -> " + toJson(back).dump());
}

void fuzzWorkloadJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return;
  WorkloadSpec s;
  try {
    s = workloadSpecFromJson(j);
  } catch (const std::exception&) {
    return;
  }
  checkRoundTrip(s);
}

void fuzzSweepJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return;
  SweepSpec sw;
  try {
    sw = sweepSpecFromJson(j);
  } catch (const std::exception&) {
    return;
  }
  // Expanding is bounded by the product of the axis lengths; keep each input cheap.
  size_t points = 1;
  for (const auto& a : sw.axes) {
    if (a.values.empty() || points > 4096 / a.values.size()) return;
    points *= a.values.size();
  }
  std::vector<SpecError> errors;
  for (const WorkloadSpec& p : sw.expand(&errors)) checkRoundTrip(p);
  (void)sw.pointCount();
  const SweepSpec back = sweepSpecFromJson(nlohmann::json::parse(toJson(sw).dump()));
  if (validate(sw.base).empty() && toJson(back) != toJson(sw)) fail("sweep spec changed in a JSON round trip");
}

void fuzzFields(std::string_view text) {
  // One "field=value" per line, applied in order as the command line would.
  WorkloadSpec s;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) {
      if (auto e = setField(s, line.substr(0, eq), line.substr(eq + 1)); e && e->message.empty())
        fail("a field error without a message");
    }
    start = end + 1;
  }
  (void)describe(validate(s));
  checkRoundTrip(s);
}

void fuzzMask(std::string_view text) {
  const ParsedMask m = parseMask(text);
  if (m.mask.has_value() == m.error.has_value()) fail("parseMask must give a mask or an error");
  if (m.mask) {
    const ParsedMask again = parseMask(toString(*m.mask));
    if (!again.mask || !(*again.mask == *m.mask)) fail("mask '" + toString(*m.mask) + "' does not parse back to itself");
  }
  (void)parseMaskLayout(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: fuzzWorkloadJson(text); break;
    case 1: fuzzSweepJson(text); break;
    case 2: fuzzFields(text); break;
    default: fuzzMask(text); break;
  }
  return 0;
}
