// Chrome trace export: valid JSON, one process per run, a track per stream, X events for
// kernels/copies/sets/phases, C counters per memory source, microsecond timestamps from 0.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/export/chrome_trace.h"
#include "core/trace/memory_timeline.h"
#include "core/result/run_result.h"
#include "tests/trace/trace_builders.h"

using namespace attnscope;
using namespace attnscope::testing;
using nlohmann::json;

namespace {

constexpr int64_t kT0 = 1'000'000'000;  // host steady-clock ns; exported times are relative

std::vector<TraceEvent> gpuRun() {
  std::vector<TraceEvent> ev = {phase("prepare", kT0, kT0 + 4000), phase("compute", kT0 + 4000, kT0 + 20000)};
  for (int i = 0; i < 3; ++i) {
    auto k = activity(EventKind::kernel, "flash_fwd<64>", kT0 + 5000 + i * 3000, kT0 + 7000 + i * 3000, 7);
    k.kernel.grid[0] = 128;
    k.kernel.block[0] = 256;
    k.kernel.registers = 96;
    k.correlation = 100 + static_cast<uint64_t>(i);
    ev.push_back(k);
  }
  ev.push_back(activity(EventKind::kernel, "softmax", kT0 + 5500, kT0 + 6500, 13));
  ev.push_back(activity(EventKind::kernel, "softmax", kT0 + 8500, kT0 + 9500, 13));
  auto copy = activity(EventKind::memcpy, "HtoD", kT0 + 1000, kT0 + 3000, 7);
  copy.bytes = 1 << 20;
  ev.push_back(copy);
  ev.push_back(activity(EventKind::memset, "memset", kT0 + 3500, kT0 + 3600, 13));
  // The allocator's and CUPTI's views of the same buffers, plus a cuBLAS workspace.
  ev.push_back(alloc(kT0 + 500, 0xA, 4096));
  ev.push_back(alloc(kT0 + 600, 0xB, 8192));
  ev.push_back(release(kT0 + 19000, 0xA));
  ev.push_back(release(kT0 + 19500, 0xB));
  ev.push_back(alloc(kT0 + 500, 0xA, 4096, EventSource::cupti));
  ev.push_back(alloc(kT0 + 600, 0xB, 8192, EventSource::cupti));
  ev.push_back(alloc(kT0 + 600, 0xC, 1 << 20, EventSource::cupti));
  ev.push_back(release(kT0 + 19000, 0xA, 0, EventSource::cupti));
  ev.push_back(release(kT0 + 19500, 0xB, 0, EventSource::cupti));
  ev.push_back(release(kT0 + 19500, 0xC, 0, EventSource::cupti));
  return ev;
}

std::vector<TraceEvent> cpuRun() {
  const int64_t t0 = 5 * kT0;
  return {phase("compute", t0 + 100, t0 + 900), alloc(t0 + 100, 0x1, 64, EventSource::allocator, MemoryKind::host),
          release(t0 + 900, 0x1, 0, EventSource::allocator, MemoryKind::host)};
}

std::vector<json> select(const json& trace, const std::string& ph, int pid) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == ph && e["pid"] == pid) out.push_back(e);
  return out;
}

}  // namespace

TEST(ChromeTrace, OneProcessPerRunWithTracksCountsAndTimes) {
  std::vector<TraceRun> runs = {{"cuda.flash B1 H16/16 L4096x4096 D64 fp16 causal", gpuRun()},
                                {"cpu.reference B1 H2/2 L16x16 D8 fp32 none", cpuRun()}};
  const std::string text = chromeTrace(runs).dump();
  const json trace = json::parse(text);  // what Perfetto would read
  ASSERT_TRUE(trace.contains("traceEvents"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["otherData"]["runs"], 2);

  // Processes named by run.
  std::map<int, std::string> processes;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"].get<int>()] = e["args"]["name"];
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[1], runs[0].label);
  EXPECT_EQ(processes[2], runs[1].label);

  // Tracks of the GPU run: phases and one per stream.
  std::map<std::string, int> tracks;
  for (const auto& e : select(trace, "M", 1))
    if (e["name"] == "thread_name") tracks[e["args"]["name"]] = e["tid"].get<int>();
  EXPECT_EQ(tracks.size(), 3u);
  ASSERT_TRUE(tracks.count("phases"));
  ASSERT_TRUE(tracks.count("cuda:0 stream 7"));
  ASSERT_TRUE(tracks.count("cuda:0 stream 13"));

  // Complete events: 5 kernels, 1 copy, 1 set, 2 phases, each on its stream's track.
  auto xs = select(trace, "X", 1);
  std::map<std::string, int> by_cat;
  for (const auto& x : xs) {
    ++by_cat[x["cat"]];
    if (x["cat"] == "phase") {
      EXPECT_EQ(x["tid"], tracks["phases"]);
    } else {
      const std::string track = "cuda:0 stream " + std::to_string(x["args"]["stream"].get<int>());
      EXPECT_EQ(x["tid"], tracks[track]) << x.dump();
    }
  }
  EXPECT_EQ(by_cat["kernel"], 5);
  EXPECT_EQ(by_cat["memcpy"], 1);
  EXPECT_EQ(by_cat["memset"], 1);
  EXPECT_EQ(by_cat["phase"], 2);
  EXPECT_EQ(xs.size(), 9u);

  // Microseconds from the run's first event (the "prepare" phase at kT0).
  double min_ts = 1e300;
  for (const auto& e : trace["traceEvents"])
    if (e["pid"] == 1 && e.contains("ts")) min_ts = std::min(min_ts, e["ts"].get<double>());
  EXPECT_DOUBLE_EQ(min_ts, 0.0);
  bool found = false;
  for (const auto& x : xs) {
    if (x["name"] == "flash_fwd<64>" && x["args"]["correlation"] == 101) {
      found = true;
      EXPECT_DOUBLE_EQ(x["ts"].get<double>(), 8.0);
      EXPECT_DOUBLE_EQ(x["dur"].get<double>(), 2.0);
      EXPECT_EQ(x["args"]["grid"], json({128, 0, 0}));
      EXPECT_EQ(x["args"]["registers"], 96);
    }
    if (x["cat"] == "memcpy") {
      EXPECT_EQ(x["name"], "HtoD");
      EXPECT_EQ(x["args"]["bytes"], 1 << 20);
      EXPECT_DOUBLE_EQ(x["ts"].get<double>(), 1.0);
    }
  }
  EXPECT_TRUE(found);

  // Counters: one series per source, the curve of MemoryTimeline, ending at 0.
  std::map<std::string, std::vector<json>> counters;
  for (const auto& c : select(trace, "C", 1)) counters[c["name"]].push_back(c);
  ASSERT_EQ(counters.size(), 2u);
  const auto& cupti = counters["live bytes (cupti, device)"];
  const auto& allocator = counters["live bytes (allocator, device)"];
  MemoryTimeline want_cupti(runs[0].events, MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt});
  ASSERT_EQ(cupti.size(), want_cupti.curve().size());
  int64_t cupti_max = 0;
  for (const auto& c : cupti) cupti_max = std::max(cupti_max, c["args"]["bytes"].get<int64_t>());
  EXPECT_EQ(cupti_max, 4096 + 8192 + (1 << 20));
  EXPECT_EQ(cupti.back()["args"]["bytes"], 0);
  ASSERT_EQ(allocator.size(), 4u);
  EXPECT_DOUBLE_EQ(allocator[1]["ts"].get<double>(), 0.6);
  EXPECT_EQ(allocator[1]["args"]["bytes"], 4096 + 8192);

  // The CPU run: its own process, its own zero, a host counter, no stream tracks.
  auto cpu_x = select(trace, "X", 2);
  ASSERT_EQ(cpu_x.size(), 1u);
  EXPECT_DOUBLE_EQ(cpu_x[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(cpu_x[0]["dur"].get<double>(), 0.8);
  auto cpu_c = select(trace, "C", 2);
  ASSERT_EQ(cpu_c.size(), 2u);
  EXPECT_EQ(cpu_c[0]["name"], "live bytes (allocator, host)");
}

TEST(ChromeTrace, PoolsAndEmptyRuns) {
  std::vector<TraceEvent> ev = {memEvent(EventKind::pool_reserve, 10, 0x1000, 1 << 21, EventSource::cupti),
                                alloc(11, 0x1000, 512, EventSource::cupti),
                                release(12, 0x1000, 0, EventSource::cupti),
                                memEvent(EventKind::pool_release, 13, 0x1000, 1 << 21, EventSource::cupti)};
  json trace = chromeTrace({{"pooled", ev}, {"empty", {}}});
  std::set<std::string> names;
  for (const auto& c : select(trace, "C", 1)) names.insert(c["name"]);
  EXPECT_TRUE(names.count("pool reserved (cupti, device)"));
  EXPECT_TRUE(names.count("live bytes (cupti, device)"));
  EXPECT_TRUE(select(trace, "X", 2).empty());
  EXPECT_EQ(select(trace, "M", 2).size(), 2u);  // process name and sort index only
  EXPECT_TRUE(chromeTrace({})["traceEvents"].empty());
}

TEST(ChromeTrace, LabelNamesBackendAndSpec) {
  RunResult r;
  r.backend = "cuda.flash";
  r.spec.heads = 16;
  r.spec.seq_q = 4096;
  r.trace.events = cpuRun();
  TraceRun t = traceRunOf(r);
  EXPECT_EQ(t.label.rfind("cuda.flash ", 0), 0u);
  EXPECT_NE(t.label.find("4096"), std::string::npos);
  EXPECT_EQ(t.events.size(), 3u);
  r.id = 42;
  EXPECT_NE(traceRunLabel(r).find("run 42"), std::string::npos);
}
