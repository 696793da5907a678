// Found by fuzz/fuzz_spec: a dense mask's keep-probability was written with 6 significant digits,
// so a spec read back from the store (which keeps it as JSON) drew another mask than the run had.
// Every valid spec must come back from its JSON unchanged.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/spec/workload_spec.h"

namespace attnscope {
namespace {

TEST(SpecRoundTrip, KeepProbabilityAndScaleKeepEveryDigit) {
  for (const char* mask : {"dense:0.1234567", "dense:0.30000000000000004", "dense:1e-7", "window:123456789"}) {
    WorkloadSpec s;
    s.mask = *parseMask(mask).mask;
    s.scale = 0.1234567890123;
    ASSERT_TRUE(validate(s).empty()) << mask;
    const WorkloadSpec back = workloadSpecFromJson(nlohmann::json::parse(toJson(s).dump()));
    EXPECT_EQ(back, s) << mask << " -> " << toJson(back).dump();
    const ParsedMask again = parseMask(toString(s.mask));
    ASSERT_TRUE(again.mask) << toString(s.mask);
    EXPECT_EQ(*again.mask, s.mask) << mask;
  }
  // Display stays short where the value is short.
  EXPECT_EQ(toString(*parseMask("dense:0.5").mask), "dense:0.5");
  EXPECT_EQ(toString(*parseMask("dense").mask), "dense");
}

}  // namespace
}  // namespace attnscope
