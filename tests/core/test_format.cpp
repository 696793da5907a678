// The formats people type: byte sizes (--budget) and printed sizes (export --size).
#include <gtest/gtest.h>

#include "core/base/format.h"

using namespace attnscope;

TEST(Format, PrintSizesInEveryUnit) {
  auto in = [](const char* text, int dpi = 96) { return parsePrintSize(text, dpi); };
  ASSERT_TRUE(in("7x3.5in"));
  EXPECT_DOUBLE_EQ(in("7x3.5in")->width_in, 7.0);
  EXPECT_DOUBLE_EQ(in("7x3.5in")->height_in, 3.5);
  EXPECT_NEAR(in("183x90mm")->width_in, 7.2047, 1e-4);
  EXPECT_NEAR(in("12x6cm")->height_in, 2.3622, 1e-4);
  EXPECT_DOUBLE_EQ(in("504x252pt")->width_in, 7.0);
  EXPECT_DOUBLE_EQ(in("1500x600px", 300)->width_in, 5.0);  // px are the PNG's pixels at its DPI
  EXPECT_DOUBLE_EQ(in("1500x600px", 150)->width_in, 10.0);
  for (const char* bad : {"", "7x3.5", "7x3.5inch", "x3in", "7xin", "0x3in", "-7x3in", " 7x3in", "7 x 3in", "7x3in ",
                          "300x100in", "nanxnanin", "7y3in"})
    EXPECT_FALSE(in(bad)) << bad;
  EXPECT_FALSE(parsePrintSize("700x300px", 0));
}

TEST(Format, ByteSizes) {
  EXPECT_EQ(parseByteSize("8GiB"), 8.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(parseByteSize("16GB"), 16e9);
  EXPECT_EQ(parseByteSize("512"), 512.0);
  EXPECT_FALSE(parseByteSize(" 8GiB"));
  EXPECT_FALSE(parseByteSize("8 GiB"));
  EXPECT_FALSE(parseByteSize("-1"));
}
