// Walks the WorkloadSpec field table (core/spec/spec_fields.h) and checks that every field reaches
// every place that promises "every field": text (setField/format), JSON, the sweep grid, the CSV
// header and cells, the store's runs table, and the real binary's --help of backends, run, sweep
// and explain. A field added to the table is covered here without touching this file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/cli_process.h"
#include "core/export/results_export.h"
#include "core/spec/spec_fields.h"
#include "core/store/store.h"
#include "core/spec/sweep_spec.h"

namespace fs = std::filesystem;

namespace attnscope {
namespace {

// The defaults with the field's example context (e.g. pass train for checkpoint) applied.
WorkloadSpec base(const SpecField& f) {
  WorkloadSpec s;
  for (const auto& [name, value] : f.example_context) EXPECT_FALSE(setField(s, name, value)) << name << "=" << value;
  return s;
}

// base(f) with the field set to text; fails the test when refused.
WorkloadSpec with(const SpecField& f, std::string_view text) {
  WorkloadSpec s = base(f);
  auto e = setField(s, f.name, text);
  EXPECT_FALSE(e) << f.name << "=" << text << ": " << e->message;
  return s;
}

TEST(SpecFieldTable, NamesAreUniqueAndFindable) {
  std::set<std::string_view> names, clis, csv, headers;
  for (const SpecField& f : specFields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(clis.insert(f.cli).second) << f.cli;
    EXPECT_TRUE(csv.insert(f.csv_column).second) << f.csv_column;
    if (!f.table_header.empty()) {
      EXPECT_TRUE(headers.insert(f.table_header).second) << f.table_header;
    }
    EXPECT_FALSE(f.help.empty() || f.label.empty() || f.metavar.empty()) << f.name;
    EXPECT_EQ(findSpecField(f.name), &f);
    EXPECT_EQ(findSpecField(f.cli), &f);
    for (std::string_view a : f.aliases) EXPECT_EQ(findSpecField(a), &f) << a;
    ASSERT_TRUE(f.parse && f.format && f.json && f.store && f.load) << f.name;
    EXPECT_EQ(f.store(WorkloadSpec{}).size(), f.columns.size()) << f.name;
    ASSERT_FALSE(f.example.empty()) << f.name << " needs an example value";
    if (f.widget == FieldWidget::choice) {
      EXPECT_FALSE(f.choices.empty()) << f.name;
      for (std::string_view c : f.choices) with(f, c);
    }
  }
  EXPECT_EQ(specFieldNames().size(), specFields().size());
}

TEST(SpecFieldTable, EveryFieldRoundTripsThroughTextAndJson) {
  for (const SpecField& f : specFields()) {
    for (std::string_view v : f.example) {
      SCOPED_TRACE(std::string(f.name) + "=" + std::string(v));
      const WorkloadSpec s = with(f, v);
      ASSERT_TRUE(validate(s).empty()) << describe(validate(s));
      // Text: format reads back to the same spec.
      EXPECT_EQ(with(f, f.format(s)), s) << f.format(s);
      // JSON: the key is the field's name, and the whole spec comes back.
      const nlohmann::json j = toJson(s);
      ASSERT_TRUE(j.contains(std::string(f.name)));
      EXPECT_EQ(j.at(std::string(f.name)), f.json(s));
      EXPECT_EQ(workloadSpecFromJson(nlohmann::json::parse(j.dump())), s) << j.dump();
    }
    EXPECT_NE(with(f, f.example.front()), base(f)) << f.name << "'s first example is the default";
  }
  // toJson writes the table's fields and nothing else.
  EXPECT_EQ(toJson(WorkloadSpec{}).size(), specFields().size());
}

TEST(SpecFieldTable, EverySweepableFieldSweepsItsExamples) {
  for (const SpecField& f : specFields()) {
    if (!f.sweepable) continue;
    SweepSpec sw;
    sw.base = base(f);
    sw.backends = {"cpu.flash"};
    sw.axes.push_back({std::string(f.name), {f.example.begin(), f.example.end()}});
    std::vector<SpecError> errs;
    const auto points = sw.expand(&errs);
    EXPECT_TRUE(errs.empty()) << f.name << ": " << describe(errs);
    ASSERT_EQ(points.size(), f.example.size()) << f.name;
    for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(points[i], with(f, f.example[i])) << f.name;
    // The sweep's own JSON (stored with the sweep) keeps the axis and the base.
    const SweepSpec back = sweepSpecFromJson(nlohmann::json::parse(toJson(sw).dump()));
    EXPECT_EQ(back.axes.at(0).values, sw.axes.at(0).values);
  }
}

TEST(SpecFieldTable, EveryFieldHasItsCsvColumnAndCell) {
  const auto cols = csvColumns();
  for (const SpecField& f : specFields()) {
    const auto at = std::find(cols.begin(), cols.end(), std::string(f.csv_column));
    ASSERT_NE(at, cols.end()) << f.csv_column;
    RunResult r;
    r.spec = with(f, f.example.front());
    EXPECT_EQ(csvRow(r).at(static_cast<size_t>(at - cols.begin())), f.cell(r.spec)) << f.name;
  }
  EXPECT_EQ(csvRow(RunResult{}).size(), cols.size());
}

// Every field's words together, as the charts' context lines and the report say a spec.
std::string allWords(const WorkloadSpec& s) {
  std::string out;
  for (const SpecField& f : specFields()) out += f.wordsText(s) + "|";
  return out;
}

// summary(), the chart context and the report's words are built from the table: a field whose
// value is not the default shows in both (a new field is covered without touching this file).
TEST(SpecFieldTable, EveryFieldShowsInTheSummaryAndInWords) {
  const WorkloadSpec defaults;
  for (const SpecField& f : specFields())
    for (std::string_view v : f.example) {
      const WorkloadSpec ctx = base(f), s = with(f, v);
      if (f.format(s) == f.format(ctx)) continue;  // the example is the default
      EXPECT_NE(summary(s), summary(ctx)) << f.name << "=" << v << ": " << summary(s);
      EXPECT_NE(allWords(s), allWords(ctx)) << f.name << "=" << v << ": " << allWords(s);
      EXPECT_EQ(summary(s).find("  "), std::string::npos) << summary(s);
    }
  // The labels of a forward attention call without a scale or seed stay as they always were.
  EXPECT_EQ(summary(defaults), "B1 H8/8 L1024x1024 D64 fp32 none");
  WorkloadSpec train = defaults;
  ASSERT_FALSE(setField(train, "pass", "train"));
  ASSERT_FALSE(setField(train, "checkpoint", "attention"));
  ASSERT_FALSE(setField(train, "mask", "dense:0.5"));
  ASSERT_FALSE(setField(train, "scale", "0.25"));
  ASSERT_FALSE(setField(train, "seed", "7"));
  EXPECT_EQ(summary(train), "train checkpoint:attention B1 H8/8 L1024x1024 D64 fp32 dense:0.5/broadcast scale:0.25 seed:7");
  EXPECT_EQ(findSpecField("seed")->wordsText(train), "seed 7");
  EXPECT_EQ(findSpecField("scale")->wordsText(train), "scale 0.25");
  EXPECT_EQ(findSpecField("scale")->wordsText(defaults), "");
}

// The resolved spec (CSV cells, the torch worker's request) applies every "same as" default.
TEST(SpecFieldTable, ResolvedSpecAppliesTheSameAsDefaults) {
  WorkloadSpec s;
  ASSERT_FALSE(setField(s, "heads", "6"));
  ASSERT_FALSE(setField(s, "seq", "100"));
  ASSERT_FALSE(setField(s, "head_dim", "16"));
  const WorkloadSpec r = resolvedSpec(s);
  EXPECT_EQ(r.kv_heads, 6);
  EXPECT_EQ(r.seq_kv, 100);
  EXPECT_EQ(r.head_dim, 16);
  EXPECT_EQ(r.width, 96);
  ASSERT_TRUE(r.scale);
  EXPECT_DOUBLE_EQ(*r.scale, 0.25);
  EXPECT_EQ(findSpecField("seq_kv")->cell(s), "100");
  EXPECT_EQ(findSpecField("kv_heads")->cell(s), "6");
  ASSERT_FALSE(setField(s, "width", "48"));  // width given: head_dim = 48 / 6
  EXPECT_EQ(resolvedSpec(s).head_dim, 8);
  EXPECT_EQ(findSpecField("head_dim")->cell(s), "8");
}

TEST(SpecFieldTable, EveryFieldIsStoredInItsColumnsAndReadBack) {
  const std::string dir = tempDir("fieldtable");
  const std::string path = dir + "/runs.sqlite";
  {
    Store store(path);
    SweepSpec sw;
    sw.backends = {"cpu.flash"};
    const int64_t sweep = store.createSweep(sw, store.saveEnvironment(Environment{}));
    std::vector<std::pair<int64_t, WorkloadSpec>> saved;
    for (const SpecField& f : specFields())
      for (std::string_view v : f.example) {
        RunResult r;
        r.backend = "cpu.flash";
        r.device = "cpu";
        r.spec = with(f, v);
        saved.emplace_back(store.saveRun(sweep, r), r.spec);
      }
    for (const auto& [id, spec] : saved) EXPECT_EQ(store.run(id)->spec, spec) << summary(spec);
  }
  // The runs table has every column the table names.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::set<std::string> columns;
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('runs')", -1, &q, nullptr), SQLITE_OK);
  while (sqlite3_step(q) == SQLITE_ROW) columns.insert(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)));
  sqlite3_finalize(q);
  sqlite3_close(db);
  for (const SpecField& f : specFields())
    for (const StoreColumn& c : f.columns) EXPECT_TRUE(columns.count(std::string(c.name))) << c.name;
  fs::remove_all(dir);
}

TEST(SpecFieldTable, EveryFieldIsAnOptionOfEveryCommandThatTakesASpec) {
  for (const char* command : {"backends", "run", "sweep", "explain"}) {
    const CliResult help = runCli({command, "--help"});
    ASSERT_EQ(help.code, 0) << command << ": " << help.err;
    for (const SpecField& f : specFields()) {
      const std::string lists = std::string(command) == "sweep" && f.sweepable ? ",..." : "";
      const std::string option = "--" + std::string(f.cli) + " " + std::string(f.metavar) + lists + " ";
      EXPECT_NE(help.out.find(option), std::string::npos) << command << " lacks '" << option << "'";
      EXPECT_NE(help.out.find(std::string(f.help)), std::string::npos) << command << " lacks the help of " << f.name;
    }
  }
}

TEST(SpecFieldTable, CheckpointAttentionNeedsPassTrain) {
  WorkloadSpec s;
  ASSERT_FALSE(setField(s, "checkpoint", "attention"));
  const auto errs = validate(s);
  ASSERT_EQ(errs.size(), 1u) << describe(errs);
  EXPECT_EQ(errs[0].field, "checkpoint");
  EXPECT_NE(errs[0].message.find("needs pass train"), std::string::npos) << errs[0].message;
  ASSERT_FALSE(setField(s, "pass", "train"));
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  // On the command line: exit 2 with the reason, for a run and for a grid that sweeps checkpoint
  // but not pass over train. (A grid that sweeps pass over train leaves the forward-with-checkpoint
  // points out instead: tests/core SweepSpec.PassOverTrainLeavesOutForwardCheckpoints.)
  const std::string dir = tempDir("checkpoint");
  CliResult r = runCli({"run", "--backend", "cpu.flash", "--checkpoint", "attention", "--db", dir + "/r.sqlite"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("error: checkpoint: checkpoint attention needs pass train"), std::string::npos) << r.err;
  r = runCli({"sweep", "--backends", "cpu.flash", "--checkpoint", "none,attention", "--db", dir + "/r.sqlite"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("needs pass train"), std::string::npos) << r.err;
  r = runCli({"run", "--backend", "cpu.flash", "--pass", "backward", "--db", dir + "/r.sqlite"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown pass 'backward' (allowed: forward, train)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/r.sqlite")) << "a refused spec created the database";
  fs::remove_all(dir);
}

// A spec as JSON written before kind, pass and checkpoint existed (sweeps keep their spec as JSON).
TEST(SpecFieldTable, OldJsonReadsAsAForwardAttentionCall) {
  const auto old = nlohmann::json::parse(R"({"batch":2,"dtype":"fp16","head_dim":64,"heads":8,"kv_heads":0,
      "mask":"causal","mask_layout":"broadcast","scale":null,"seed":0,"seq":512,"seq_kv":0,"width":0})");
  const WorkloadSpec s = workloadSpecFromJson(old);
  EXPECT_EQ(s.kind, WorkloadKind::attention);
  EXPECT_EQ(s.pass, Pass::forward);
  EXPECT_EQ(s.checkpoint, Checkpoint::none);
  EXPECT_EQ(s.batch, 2);
  EXPECT_EQ(summary(s), "B2 H8/8 L512x512 D64 fp16 causal");  // labels of old runs unchanged
}

TEST(SpecParseError, NamesTheFieldItBlames) {
  auto blamed = [](const nlohmann::json& j) -> std::string {
    try {
      (void)workloadSpecFromJson(j);
    } catch (const SpecParseError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("workload spec: ", 0), 0u) << e.what();
      return e.field();
    }
    ADD_FAILURE() << j.dump() << " was accepted";
    return {};
  };
  EXPECT_EQ(blamed({{"dtype", "fp64"}}), "dtype");
  EXPECT_EQ(blamed({{"heads", "eight"}}), "heads");
  EXPECT_EQ(blamed({{"heads", nullptr}}), "heads");
  EXPECT_EQ(blamed({{"mask", nlohmann::json::array()}}), "mask");
  EXPECT_EQ(blamed({{"colour", "red"}}), "colour");
  EXPECT_EQ(blamed({{"seq", 8}, {"seq_q", 9}}), "seq");  // an alias and its name both given
  EXPECT_EQ(blamed(nlohmann::json::array()), "");
  try {
    (void)workloadSpecFromJson({{"dtype", "fp64"}});
  } catch (const SpecParseError& e) {
    EXPECT_NE(std::string(e.what()).find("fp32, fp16, bf16"), std::string::npos) << e.what();
  }
  // Null means the default only where the field has one; missing keys keep their defaults.
  EXPECT_EQ(workloadSpecFromJson({{"scale", nullptr}}), WorkloadSpec{});
  EXPECT_EQ(workloadSpecFromJson(nlohmann::json::object()), WorkloadSpec{});
}

}  // namespace
}  // namespace attnscope
