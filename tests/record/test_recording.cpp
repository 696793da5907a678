// Recordings without torch: the recorder's JSON read and refused field by field, a real SQLite
// store round trip (and a damaged row), each recorded call mapped to a workload and explained
// exactly as `explain` explains that workload, for the recorded torch and for another release and
// GPU, and the program runner's exit, stderr tail and signal forwarding on real processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/record/program_run.h"
#include "core/record/recording_explain.h"
#include "core/store/store.h"
#include "tests/support/recorder_json.h"
#include "tests/support/temp_dir.h"

namespace attnscope {
namespace {

using namespace torch_dispatch;
using nlohmann::json;

json tensor(std::vector<int64_t> shape, const std::string& dtype = "float16", const std::string& device = "cpu") {
  return test::recordedTensor(std::move(shape), dtype, device);
}
json call(int64_t heads, int64_t seq, int64_t d, json mask, const std::string& ran = "flash", int64_t kv_heads = 0) {
  return test::recordedCall(heads, seq, d, std::move(mask), ran, kv_heads);
}
json boolMask(std::vector<int64_t> shape) { return test::recordedBoolMask(std::move(shape)); }
using test::recorderFile;

Recording cliffRecording() {
  const json mask = boolMask({1, 1, 1024, 1024});
  Recording r = recordingFromRecorderJson(recorderFile({call(8, 1024, 8, mask), call(16, 1024, 4, mask)}));
  r.name = "heads_cliff.py";
  r.program = {"examples/heads_cliff.py", "--seq", "1024"};
  r.cwd = "/work";
  r.exit_status = 0;
  r.started_unix_ms = 1000;
  r.ended_unix_ms = 2000;
  return r;
}

TEST(RecordingJson, ReadsTheRecordersFile) {
  const Recording r = cliffRecording();
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls_seen, 6);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.torch.value("torch", ""), "2.15.0+cpu");
  const RecordedCall& c = r.calls[1];
  EXPECT_EQ(c.row, 2);
  EXPECT_EQ(c.site, "model.py:26");
  EXPECT_EQ(c.q.shape, (std::vector<int64_t>{1, 16, 1024, 4}));
  EXPECT_EQ(c.mask.kind, "bool");
  EXPECT_TRUE(c.mask.broadcast);
  EXPECT_EQ(c.forward.count, 3);
  EXPECT_DOUBLE_EQ(c.forward.meanTime(), 0.01);
  EXPECT_EQ(c.forward.bytes_max, 1200);
  EXPECT_FALSE(c.backward);
}

TEST(RecordingJson, RefusesABadFieldByName) {
  auto refused = [](json j, const std::string& field) {
    try {
      (void)recordedCallFromJson(j, 1);
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  json c = call(8, 64, 8, boolMask({1, 1, 64, 64}));
  json bad = c;
  bad["q"]["shape"] = {1, -2, 3, 4};
  refused(bad, "q.shape");
  bad = c;
  bad["count"] = "many";
  refused(bad, "count");
  bad = c;
  bad["mask"]["kind"] = "int";
  refused(bad, "mask.kind");
  bad = c;
  bad["time_total_s"] = -1;
  refused(bad, "time_total_s");
  bad = c;
  bad.erase("k");
  refused(bad, "k");
  EXPECT_THROW(recordingFromRecorderJson(json::array()), std::invalid_argument);
}

TEST(RecordingStore, SavesAndReadsBackEveryField) {
  test::TempDir dir;
  const std::string db = dir.file("rec.sqlite");
  Recording r = cliffRecording();
  r.interrupted = true;
  r.stderr_tail = "Traceback ...\nValueError: x\n";
  int64_t id = 0;
  {
    Store store(db);
    id = store.saveRecording(r);
    EXPECT_EQ(store.recordings().size(), 1u);
  }
  Store store(db, StoreMode::read);
  const auto list = store.recordings();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].idText(), "REC" + std::to_string(id));
  EXPECT_TRUE(list[0].calls.empty()) << "the list comes without calls";
  const auto back = store.recording(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, r.name);
  EXPECT_EQ(back->program, r.program);
  EXPECT_EQ(back->cwd, r.cwd);
  EXPECT_EQ(back->exit_status, 0);
  EXPECT_TRUE(back->interrupted);
  EXPECT_EQ(back->stderr_tail, r.stderr_tail);
  EXPECT_EQ(back->torch, r.torch);
  ASSERT_EQ(back->calls.size(), 2u);
  EXPECT_EQ(back->calls[1].raw, r.calls[1].raw);
  EXPECT_EQ(back->calls[1].q.shape, r.calls[1].q.shape);
  EXPECT_EQ(back->exitText(), "interrupted (exited with status 0)");
  EXPECT_FALSE(store.recording(id + 1));
}

TEST(RecordingStore, ADamagedCallReadsAsACallThatSaysWhy) {
  test::TempDir dir;
  const std::string db = dir.file("rec.sqlite");
  int64_t id = 0;
  {
    Store store(db);
    id = store.saveRecording(cliffRecording());
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "UPDATE recording_calls SET call = '{\"q\": 5' WHERE row = 1", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  Store store(db, StoreMode::read);
  const auto back = store.recording(id);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->calls.size(), 2u);
  ASSERT_FALSE(back->calls[0].notes.empty());
  EXPECT_NE(back->calls[0].notes[0].find("cannot be read"), std::string::npos);
  EXPECT_EQ(back->calls[1].q.shape[1], 16);
  // attnscope check reads every recording and call too.
  const auto problems = store.check();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("REC" + std::to_string(id) + " call 1"), std::string::npos) << problems[0];
}

TEST(RecordingStore, DeleteAndRename) {
  test::TempDir dir;
  Store store(dir.file("rec.sqlite"));
  const int64_t id = store.saveRecording(cliffRecording());
  store.renameRecording(id, "renamed");
  EXPECT_EQ(store.recording(id)->name, "renamed");
  EXPECT_THROW(store.renameRecording(id, std::string(300, 'x')), StoreError);
  store.deleteRecording(id);
  EXPECT_TRUE(store.recordings().empty());
  EXPECT_THROW(store.deleteRecording(id), StoreError);
}

TEST(RecordedWorkload, MapsShapesMasksAndHeads) {
  const TorchVersion v{2, 15, 0};
  RecordedCall c = recordedCallFromJson(call(16, 128, 4, boolMask({1, 1, 128, 128})), 1);
  RecordedWorkload w = recordedWorkload(c, v);
  ASSERT_TRUE(w.spec) << w.problem;
  EXPECT_EQ(w.spec->heads, 16);
  EXPECT_EQ(w.spec->head_dim, 4);
  EXPECT_EQ(w.spec->dtype, DType::fp16);
  EXPECT_EQ(w.spec->mask.kind, MaskKind::dense);
  EXPECT_EQ(w.spec->mask_layout, MaskLayout::broadcast);
  EXPECT_EQ(w.call.mask, SdpaMaskPassing::bool_tensor);
  EXPECT_EQ(w.call.mask_shape, (std::vector<int64_t>{1, 1, 128, 128}));

  json per_head = call(4, 64, 16, boolMask({2, 4, 64, 64}));
  per_head["q"] = tensor({2, 4, 64, 16});
  per_head["k"] = per_head["v"] = tensor({2, 4, 64, 16});
  w = recordedWorkload(recordedCallFromJson(per_head, 1), v);
  ASSERT_TRUE(w.spec) << w.problem;
  EXPECT_EQ(w.spec->batch, 2);
  EXPECT_EQ(w.spec->mask_layout, MaskLayout::per_head);

  json causal = call(8, 64, 8, {{"kind", "none"}});
  causal["is_causal"] = true;
  w = recordedWorkload(recordedCallFromJson(causal, 1), v);
  EXPECT_EQ(w.spec->mask.kind, MaskKind::causal);
  EXPECT_EQ(w.call.mask, SdpaMaskPassing::is_causal);

  w = recordedWorkload(recordedCallFromJson(call(8, 64, 16, {{"kind", "none"}}, "flash", 2), 1), v);
  EXPECT_EQ(w.spec->kv_heads, 2);
  EXPECT_TRUE(w.call.enable_gqa);

  json key_padding = call(8, 64, 8, boolMask({1, 1, 1, 64}));
  w = recordedWorkload(recordedCallFromJson(key_padding, 1), v);
  ASSERT_TRUE(w.spec);
  EXPECT_EQ(w.call.mask_shape, (std::vector<int64_t>{1, 1, 1, 64}));
  EXPECT_FALSE(w.notes.empty()) << "a mask unlike the spec's layouts is said to be priced as given";

  // Key padding [B,H,1,S] is not a per-head [B,H,L,S] mask, and not a causal one either.
  json padding = call(4, 64, 16, boolMask({2, 4, 1, 64}));
  padding["q"] = tensor({2, 4, 64, 16});
  padding["k"] = padding["v"] = tensor({2, 4, 64, 16});
  const RecordedCall pad_call = recordedCallFromJson(padding, 1);
  w = recordedWorkload(pad_call, v);
  ASSERT_TRUE(w.spec);
  EXPECT_EQ(w.spec->mask_layout, MaskLayout::broadcast);
  const CallVerdict pv = explainRecordedCall(pad_call, defaultTorchTarget(v, TorchDevice::cpu), false);
  ASSERT_TRUE(pv.x);
  for (const auto& g : pv.x->suggestions) EXPECT_FALSE(g.change.starts_with("is_causal")) << g.change;

  json f64 = call(8, 64, 8, {{"kind", "none"}});
  f64["q"] = f64["k"] = f64["v"] = tensor({1, 8, 64, 8}, "float64");
  w = recordedWorkload(recordedCallFromJson(f64, 1), v);
  EXPECT_FALSE(w.spec);
  EXPECT_NE(w.problem.find("float64"), std::string::npos) << w.problem;

  json five = call(8, 64, 8, {{"kind", "none"}});
  five["q"] = five["k"] = five["v"] = tensor({1, 1, 8, 64, 8});
  EXPECT_NE(recordedWorkload(recordedCallFromJson(five, 1), v).problem.find("dimensions"), std::string::npos);
}

TEST(RecordedTarget, IsTheRecordedTorchAndDevice) {
  std::string problem;
  auto t = recordedTarget(cliffRecording(), &problem);
  ASSERT_TRUE(t) << problem;
  EXPECT_EQ(t->version, (TorchVersion{2, 15, 0}));
  EXPECT_EQ(t->device, TorchDevice::cpu);
  EXPECT_EQ(t->cpu_threads, 2);

  json gpu = recorderFile({call(8, 64, 8, {{"kind", "none"}})}, "2.5.1+cu124");
  gpu["calls"][0]["q"]["device"] = "cuda:0";
  gpu["cuda_devices"] = {{{"name", "NVIDIA A100-SXM4-80GB"}, {"capability", "8.0"}, {"memory", 1}}};
  gpu["torch_cudnn"] = "90100";
  t = recordedTarget(recordingFromRecorderJson(gpu), &problem);
  ASSERT_TRUE(t) << problem;
  EXPECT_EQ(t->device, TorchDevice::cuda);
  EXPECT_EQ(t->capability, (ComputeCapability{8, 0}));
  EXPECT_EQ(t->cudnn, (CudnnVersion{9, 1, 0}));

  json future = recorderFile({}, "3.1.0");
  EXPECT_FALSE(recordedTarget(recordingFromRecorderJson(future), &problem));
  EXPECT_NE(problem.find("3.1.0"), std::string::npos) << problem;
}

// Call by call, a recording explained for a target says what `explain` says for the same spec.
TEST(RecordedExplain, IsExplainForTheSameSpec) {
  const Recording r = cliffRecording();
  const TorchTarget v100 = defaultTorchTarget(TorchVersion{2, 1, 0}, TorchDevice::cuda, parseGpu("V100")->capability);
  std::string problem;
  const TorchTarget here = *recordedTarget(r, &problem);
  for (const RecordedCall& c : r.calls) {
    for (const TorchTarget& t : {here, v100}) {
      const CallVerdict v = explainRecordedCall(c, t, false);
      ASSERT_TRUE(v.x) << v.workload.problem;
      const SdpaExplanation e = explainSdpa(*v.workload.spec, t);
      ASSERT_TRUE(e.chosen);
      EXPECT_EQ(v.predicted, std::string(toString(*e.chosen))) << c.site << " on " << t.describe();
      EXPECT_EQ(v.predicted_bytes, e.extraBytes()) << c.site << " on " << t.describe();
    }
  }
  // The classic report: head_dim 4 falls back to math on a V100 with torch 2.1, head_dim 8 does not.
  EXPECT_EQ(explainRecordedCall(r.calls[1], v100, false).predicted, "math");
  EXPECT_NE(explainRecordedCall(r.calls[0], v100, false).predicted, "math");
  const json j = recordingJson(r, v100);
  ASSERT_EQ(j["calls"].size(), 2u);
  EXPECT_EQ(j["calls"][1]["target_kernel"], "math");
  EXPECT_NE(j["calls"][1]["change"].get<std::string>().find(" -> math: +"), std::string::npos) << j["calls"][1]["change"];
  for (const char* key : {"site", "module", "count", "q_shape", "k_shape", "v_shape", "dtype", "mask", "is_causal", "torch_ran",
                          "predicted_kernel", "measured_bytes", "predicted_bytes", "time_s", "suggestions"})
    EXPECT_TRUE(j["calls"][0].contains(key)) << key;
  EXPECT_EQ(j["id"], "REC0");
  EXPECT_EQ(j["exit_status"], 0);
}

// Where torch ran another kernel than the rules predict, the row says so: never hidden.
TEST(RecordedExplain, AKernelOtherThanPredictedIsAMismatch) {
  const Recording r = cliffRecording();
  std::string problem;
  const TorchTarget here = *recordedTarget(r, &problem);
  const CallVerdict ok = explainRecordedCall(r.calls[0], here, true);
  EXPECT_FALSE(ok.mismatch) << "torch ran " << r.calls[0].ran << ", predicted " << ok.predicted;
  RecordedCall other = r.calls[0];
  other.ran = ok.predicted == "math" ? "flash" : "math";
  EXPECT_TRUE(explainRecordedCall(other, here, true).mismatch);
  EXPECT_FALSE(explainRecordedCall(other, here, false).mismatch) << "only the recorded environment can disagree";
}

TEST(ProgramRun, PassesTheExitAndKeepsTheLastStderrLines) {
  ProgramExit e = runProgram({{"/bin/sh", "-c", "echo to-stdout; i=0; while [ $i -lt 60 ]; do echo line$i >&2; i=$((i+1)); done; exit 3"}, {}});
  ASSERT_TRUE(e.status);
  EXPECT_EQ(*e.status, 3);
  EXPECT_FALSE(e.interrupted);
  EXPECT_NE(e.stderr_tail.find("line59\n"), std::string::npos);
  EXPECT_EQ(e.stderr_tail.find("line0\n"), std::string::npos) << "only the last lines are kept";
  EXPECT_LE(e.ended_unix_ms - e.started_unix_ms, 10000);

  // Past the tail's 8 KiB (40 KB written): still the end that is kept.
  e = runProgram({{"/bin/sh", "-c", "i=0; while [ $i -lt 4000 ]; do echo long-line-$i >&2; i=$((i+1)); done"}, {}});
  EXPECT_NE(e.stderr_tail.find("long-line-3999\n"), std::string::npos);
  EXPECT_EQ(e.stderr_tail.find("long-line-0\n"), std::string::npos);
  EXPECT_LE(e.stderr_tail.size(), 8192u);

  e = runProgram({{"/bin/sh", "-c", "kill -9 $$"}, {}});
  EXPECT_FALSE(e.status);
  EXPECT_EQ(e.signal, SIGKILL);

  e = runProgram({{"/bin/sh", "-c", "echo \"$ATTNSCOPE_TEST_VALUE\" >&2"}, {{"ATTNSCOPE_TEST_VALUE", "given"}}});
  EXPECT_EQ(e.stderr_tail, "given\n");

  EXPECT_THROW(runProgram({{"/nonexistent/python"}, {}}), std::runtime_error);
}

// A SIGTERM sent to AttnScope alone (a batch system, kill) reaches the program, which decides
// how it ends; the run is marked interrupted.
TEST(ProgramRun, ASignalSentToUsReachesTheProgram) {
  std::thread killer([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(::getpid(), SIGTERM);
  });
  const ProgramExit e = runProgram({{"/bin/sh", "-c", "trap 'echo got-term >&2; exit 7' TERM; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; exit 0"}, {}});
  killer.join();
  ASSERT_TRUE(e.status);
  EXPECT_EQ(*e.status, 7);
  EXPECT_TRUE(e.interrupted);
  EXPECT_NE(e.stderr_tail.find("got-term"), std::string::npos);
}

}  // namespace
}  // namespace attnscope
