// The CSV export (`attnscope export --format csv` and the GUI's export): every row has as many
// cells as the header, and each named cell holds that run's value, checked for runs whose
// fields all differ (seq_q vs seq_kv, backend vs device, min vs max) so that two swapped columns
// cannot go unnoticed. Runs also go through a real store first, as the export reads them.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/export/results_export.h"
#include "core/store/store.h"
#include "tests/support/temp_dir.h"

namespace attnscope {
namespace {

// RFC 4180: quoted cells may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false, inCell = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"' && !inCell) {
      quoted = inCell = true;
    } else if (c == ',') {
      rows.back().push_back(cell);
      cell.clear();
      inCell = false;
    } else if (c == '\n') {
      rows.back().push_back(cell);
      cell.clear();
      inCell = false;
      rows.emplace_back();
    } else {
      cell += c;
      inCell = true;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote";
  if (rows.back().empty() && cell.empty()) rows.pop_back();
  return rows;
}

RunResult distinctRun(int i) {
  RunResult r;
  r.spec.batch = 2 + i;
  r.spec.heads = 12;
  r.spec.kv_heads = 3;
  r.spec.seq_q = 100 + i;
  r.spec.seq_kv = 300 + i;
  r.spec.head_dim = 40;
  r.spec.dtype = i % 2 ? DType::bf16 : DType::fp16;
  r.spec.mask = *parseMask(i % 2 ? "window:17" : "dense:0.25").mask;
  r.spec.mask_layout = MaskLayout::per_head;
  r.spec.seed = 9;
  r.backend = "cpu.flash";
  r.device = "host CPU (test " + std::to_string(i) + ")";
  r.status = RunStatus::ok;
  r.message = i % 2 ? "a note, with \"quotes\"\nand a second line" : "plain";
  r.timing = {1, 5, 0.25 + i, 0.125 + i, 0.5 + i, {0.125 + i, 0.25 + i, 0.5 + i}};
  r.flops = 1e9 * (i + 1);
  r.memory.predicted_peak = 1000 + i;
  r.memory.measured_peak = 2000 + i;
  r.memory.cupti_peak = 3000 + i;
  r.memory.io_bytes = 700 + i;
  r.accuracy = {true, 1e-3 * (i + 1), 2e-4 * (i + 1), 10, 20, 4e-3};
  r.started_unix_ms = 1'700'000'000'000 + i;
  return r;
}

void expectCells(const std::vector<std::string>& header, const std::vector<std::string>& row, const RunResult& r) {
  ASSERT_EQ(row.size(), header.size()) << "cells in the row of run " << r.id;
  std::map<std::string, std::string> cell;
  for (size_t c = 0; c < header.size(); ++c) cell[header[c]] = row[c];
  EXPECT_EQ(cell.at("run_id"), std::to_string(r.id));
  EXPECT_EQ(cell.at("backend"), r.backend);
  EXPECT_EQ(cell.at("device"), r.device);
  EXPECT_EQ(cell.at("status"), "ok");
  EXPECT_EQ(cell.at("batch"), std::to_string(r.spec.batch));
  EXPECT_EQ(cell.at("heads"), "12");
  EXPECT_EQ(cell.at("kv_heads"), "3");
  EXPECT_EQ(cell.at("seq_q"), std::to_string(r.spec.seq_q));
  EXPECT_EQ(cell.at("seq_kv"), std::to_string(r.spec.seq_kv));
  EXPECT_EQ(cell.at("head_dim"), "40");
  EXPECT_EQ(cell.at("dtype"), std::string(toString(r.spec.dtype)));
  EXPECT_EQ(cell.at("mask"), toString(r.spec.mask));
  EXPECT_EQ(cell.at("mask_layout"), "per_head");
  EXPECT_DOUBLE_EQ(std::stod(cell.at("median_s")), r.timing.median_s);
  EXPECT_DOUBLE_EQ(std::stod(cell.at("min_s")), r.timing.min_s);
  EXPECT_DOUBLE_EQ(std::stod(cell.at("max_s")), r.timing.max_s);
  EXPECT_NEAR(std::stod(cell.at("flops_per_s")), r.flops / r.timing.median_s, r.flops / r.timing.median_s * 1e-8);
  EXPECT_EQ(cell.at("predicted_peak_bytes"), std::to_string(r.memory.predicted_peak));
  EXPECT_EQ(cell.at("measured_peak_bytes"), std::to_string(r.memory.measured_peak));
  EXPECT_EQ(cell.at("cupti_peak_bytes"), std::to_string(r.memory.cupti_peak));
  EXPECT_EQ(cell.at("io_bytes"), std::to_string(r.memory.io_bytes));
  EXPECT_EQ(cell.at("overhead_bytes"), std::to_string(r.memory.measured_peak - r.memory.io_bytes));
  EXPECT_DOUBLE_EQ(std::stod(cell.at("max_abs_error")), r.accuracy.max_abs_error);
  EXPECT_DOUBLE_EQ(std::stod(cell.at("rel_l2_error")), r.accuracy.rel_l2_error);
  EXPECT_EQ(cell.at("accuracy_passed"), "true");
  EXPECT_EQ(cell.at("message"), r.message);
}

TEST(CsvCells, EveryNamedCellHoldsItsRunsValue) {
  std::vector<RunResult> runs{distinctRun(0), distinctRun(1)};
  runs[0].id = 41;
  runs[1].id = 42;
  const auto rows = parseCsv(runsToCsv(runs));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], csvColumns());
  for (size_t i = 0; i < runs.size(); ++i) expectCells(rows[0], rows[i + 1], runs[i]);
}

TEST(CsvCells, RunsReadBackFromAStoreExportTheirOwnValues) {
  const test::TempDir tmp;
  const std::filesystem::path& dir = tmp.path();
  {
    Store store((dir / "runs.sqlite").string());
    SweepSpec sw;
    sw.base = distinctRun(0).spec;
    sw.backends = {"cpu.flash"};
    const int64_t sweep = store.createSweep(sw, store.saveEnvironment(Environment{}));
    std::vector<RunResult> saved;
    for (int i = 0; i < 3; ++i) {
      RunResult r = distinctRun(i);
      r.id = store.saveRun(sweep, r);
      saved.push_back(r);
    }
    const std::vector<RunResult> read = store.runs(sweep);
    ASSERT_EQ(read.size(), saved.size());
    const auto rows = parseCsv(runsToCsv(read));
    ASSERT_EQ(rows.size(), saved.size() + 1);
    for (size_t i = 0; i < saved.size(); ++i) expectCells(rows[0], rows[i + 1], saved[i]);
  }
}

TEST(CsvCells, RowsOfEveryStatusHaveAsManyCellsAsTheHeader) {
  RunResult r = distinctRun(1);
  std::vector<RunResult> runs;
  for (const char* status : {"ok", "unsupported", "oom", "error", "cancelled", "skipped"}) {
    r.status = *parseRunStatus(status);
    r.accuracy.checked = r.status == RunStatus::ok;
    runs.push_back(r);
  }
  const auto rows = parseCsv(runsToCsv(runs));
  ASSERT_EQ(rows.size(), runs.size() + 1);
  const size_t status = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), "status") - rows[0].begin());
  ASSERT_LT(status, rows[0].size());
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), rows[0].size()) << "row " << i;
    EXPECT_EQ(rows[i][status], std::string(toString(runs[i - 1].status)));
  }
}

}  // namespace
}  // namespace attnscope

namespace attnscope {
namespace {

// The width column is the model width heads x head_dim also where head_dim was given: a layer's
// embedding width E (it read 0 for `run --kind layer --head-dim 32`).
TEST(CsvCells, WidthIsTheModelWidthWhereHeadDimWasGiven) {
  RunResult r;
  r.backend = "cpu.flash";
  ASSERT_FALSE(setField(r.spec, "kind", "layer"));
  ASSERT_FALSE(setField(r.spec, "heads", "4"));
  ASSERT_FALSE(setField(r.spec, "head_dim", "32"));
  const auto rows = parseCsv(runsToCsv({r}));
  const size_t width = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), "width") - rows[0].begin());
  ASSERT_LT(width, rows[0].size());
  EXPECT_EQ(rows[1][width], "128");
  ASSERT_FALSE(setField(r.spec, "width", "256"));
  EXPECT_EQ(parseCsv(runsToCsv({r}))[1][width], "256");
}

}  // namespace
}  // namespace attnscope
