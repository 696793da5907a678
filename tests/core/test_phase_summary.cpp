// The per-phase breakdown from a trace: occurrences grouped by name, nested phases named by their
// path and left out of the top-level total, peak memory inside a phase including what was live
// when it began.
#include <gtest/gtest.h>

#include "core/trace/phase_summary.h"

using namespace attnscope;

namespace {
TraceEvent phase(const char* name, int64_t start, int64_t end) {
  TraceEvent e;
  e.kind = EventKind::phase;
  e.source = EventSource::host;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}
TraceEvent mem(EventKind kind, int64_t t, uint64_t address, int64_t bytes) {
  TraceEvent e;
  e.kind = kind;
  e.source = EventSource::allocator;
  e.start_ns = e.end_ns = t;
  e.address = address;
  e.bytes = bytes;
  e.name = "buffer";
  return e;
}
}  // namespace

TEST(PhaseSummary, GroupsNestsAndPeaks) {
  std::vector<TraceEvent> ev{
      mem(EventKind::alloc, 0, 1, 100),  // inputs: live throughout
      phase("inputs", 0, 10),
      // pass 1
      phase("scores", 10, 30), mem(EventKind::alloc, 12, 2, 1000),
      phase("softmax", 30, 40), mem(EventKind::free, 35, 2, 1000),
      phase("recompute", 40, 80), phase("scores", 40, 60), mem(EventKind::alloc, 41, 3, 50), mem(EventKind::free, 59, 3, 50),
      phase("backward", 80, 100),
      // pass 2: scores takes longer
      phase("scores", 100, 140),
  };
  const auto rows = summarizePhases(ev);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].name, "inputs");
  EXPECT_EQ(rows[1].name, "scores");
  EXPECT_EQ(rows[1].count, 2);
  EXPECT_EQ(rows[1].total_ns, 60);
  EXPECT_EQ(rows[1].meanNs(), 30);
  EXPECT_EQ(rows[1].peak_bytes, 1100);  // the 100 carried in count
  EXPECT_EQ(rows[2].name, "softmax");
  EXPECT_EQ(rows[2].peak_bytes, 1100);
  EXPECT_EQ(rows[3].name, "recompute");
  EXPECT_EQ(rows[3].depth, 0);
  EXPECT_EQ(rows[4].name, "recompute/scores");
  EXPECT_EQ(rows[4].depth, 1);
  EXPECT_EQ(rows[4].peak_bytes, 150);
  EXPECT_EQ(rows[5].name, "backward");
  // Top level: 10 + 60 + 10 + 40 + 20 = 140; the nested 20 ns are inside recompute's 40.
  double top = 0;
  for (const auto& r : rows)
    if (r.depth == 0) top += r.share;
  EXPECT_NEAR(top, 1.0, 1e-12);
  EXPECT_NEAR(rows[1].share, 60.0 / 140.0, 1e-12);
  EXPECT_NEAR(rows[4].share, 20.0 / 140.0, 1e-12);
}

TEST(PhaseSummary, EmptyTraceHasNoRows) { EXPECT_TRUE(summarizePhases({}).empty()); }

TEST(PhaseSummary, MatrixUnitesTopLevelNamesInFirstSeenOrder) {
  // A materialising run and a fused one: columns are the union, a run lacking a phase has none.
  const auto reference = summarizePhases({phase("inputs", 0, 10), phase("scores", 10, 30), phase("softmax", 30, 40),
                                          phase("recompute", 40, 80), phase("scores", 40, 60)});
  const auto flash = summarizePhases({phase("inputs", 0, 5), phase("attention", 5, 25)});
  const PhaseMatrix m = phaseMatrix({reference, flash});
  ASSERT_EQ(m.names, (std::vector<std::string>{"inputs", "scores", "softmax", "recompute", "attention"}));
  ASSERT_EQ(m.cells.size(), 2u);
  ASSERT_TRUE(m.cells[0][1].has_value());
  EXPECT_EQ(m.cells[0][1]->total_ns, 20);  // the nested recompute/scores is not a column of its own
  EXPECT_FALSE(m.cells[0][4].has_value());
  EXPECT_FALSE(m.cells[1][1].has_value());
  ASSERT_TRUE(m.cells[1][4].has_value());
  EXPECT_NEAR(m.cells[1][4]->share, 0.8, 1e-12);
  EXPECT_TRUE(phaseMatrix({}).names.empty());
}

// A phase whose range equals another's (a layer's "attention" wrapping exactly one "sdpa", both
// stamped at the same nanoseconds) nests in the one that began first: one top-level row, the
// share of the total counted once.
TEST(PhaseSummary, EqualRangesNestInTheEarlierPhase) {
  const std::vector<TraceEvent> ev{phase("attention", 10, 50), phase("sdpa", 10, 50), phase("out_proj", 50, 60)};
  const auto rows = summarizePhases(ev);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "attention");
  EXPECT_EQ(rows[0].depth, 0);
  EXPECT_EQ(rows[1].name, "attention/sdpa");
  EXPECT_EQ(rows[1].depth, 1);
  EXPECT_EQ(rows[2].name, "out_proj");
  EXPECT_DOUBLE_EQ(rows[0].share, 0.8);  // 40 of the top level's 50 ns, not 40 of 90
  EXPECT_DOUBLE_EQ(rows[2].share, 0.2);
}

// A phase nests in the innermost one holding it: three levels name the path through the middle.
TEST(PhaseSummary, APhaseNestsInTheInnermostPhaseHoldingIt) {
  const std::vector<TraceEvent> ev{phase("layer", 0, 100), phase("attention", 10, 90), phase("scores", 20, 30)};
  const auto rows = summarizePhases(ev);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].name, "layer/attention");
  EXPECT_EQ(rows[2].name, "layer/attention/scores");
  EXPECT_EQ(rows[2].depth, 2);
}

// A stack's layer runs twice, its forward early and its backward late: the rows are in tree order,
// each layer's backward phases under it, not after the last layer's.
TEST(PhaseSummary, RowsAreInTreeOrder) {
  const std::vector<TraceEvent> ev{
      phase("L1", 0, 10),   phase("qkv_proj", 0, 5),          phase("L2", 10, 20),  phase("qkv_proj", 10, 15),
      phase("L2", 20, 30),  phase("out_proj_backward", 20, 25), phase("L1", 30, 40), phase("out_proj_backward", 30, 35)};
  std::vector<std::string> names;
  for (const PhaseStats& s : summarizePhases(ev)) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"L1", "L1/qkv_proj", "L1/out_proj_backward", "L2", "L2/qkv_proj",
                                             "L2/out_proj_backward"}));
}

// A tensor-parallel run's ranks record the same phases at the same time, each on its own device:
// each rank's nest among its own (rank 1's comm is not inside rank 0's out_proj), and a phase's
// peak is its rank's memory, not the ranks' sum.
TEST(PhaseSummary, EachDeviceNestsAmongItsOwn) {
  auto on = [](TraceEvent e, uint32_t device) {
    e.device = device;
    return e;
  };
  std::vector<TraceEvent> ev{
      on(phase("out_proj", 0, 50), 0), on(phase("comm", 50, 100), 0), on(mem(EventKind::alloc, 1, 1, 100), 0),
      on(phase("out_proj", 0, 20), 1), on(phase("comm", 20, 90), 1), on(mem(EventKind::alloc, 1, 1, 300), 1),
  };
  const auto rows = summarizePhases(ev);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "out_proj");
  EXPECT_EQ(rows[0].count, 2);
  EXPECT_EQ(rows[0].total_ns, 70);
  EXPECT_EQ(rows[0].peak_bytes, 300);
  EXPECT_EQ(rows[1].name, "comm");
  EXPECT_EQ(rows[1].depth, 0);
  EXPECT_EQ(rows[1].total_ns, 120);
  EXPECT_DOUBLE_EQ(rows[1].share, 120.0 / 190.0);
}
