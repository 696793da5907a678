#pragma once
// A recording: every attention call of the user's own PyTorch program, as AttnScope's recorder
// (python/attnscope_record.py, started by `attnscope record`) saw it, one entry per call
// signature (the same site, module, shapes, dtypes, mask and arguments), with what torch ran and
// what each call cost. Read from the recorder's JSON file, kept in the store, explained by
// core/record.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnscope {

struct RecordedTensor {
  std::vector<int64_t> shape, stride;
  int64_t offset = 0;       // storage offset, in elements
  std::string dtype;        // torch's name: "float16"
  std::string device;       // "cpu", "cuda:0"
  bool contiguous = true;
};

struct RecordedMask {
  std::string kind = "none";  // none, bool, float
  std::vector<int64_t> shape, stride;
  bool broadcast = false;     // a dimension of size 1 or stride 0 where q has more: [1,1,L,S], expand()
  bool materialised = false;  // a contiguous [B,H,L,S] tensor: repeated or expand().contiguous()
};

// Time and memory of the calls of one signature (or of their backward passes).
struct RecordedStats {
  int64_t count = 0;
  double time_total_s = 0, time_min_s = 0, time_max_s = 0;
  int64_t memory_measured = 0;  // calls whose memory was measured (on the CPU the first few only)
  int64_t bytes_min = 0, bytes_max = 0;
  double meanTime() const { return count > 0 ? time_total_s / static_cast<double>(count) : 0; }
};

struct RecordedCall {
  int64_t row = 0;          // 1-based, in the order first seen
  std::string op;           // scaled_dot_product_attention, _native_multi_head_attention, ...
  std::string site;         // "model.py:42": the first frame outside torch
  std::string module;       // "TransformerEncoder.layers.0.self_attn"; "" outside any nn.Module
  RecordedTensor q, k, v;
  RecordedMask mask;
  bool is_causal = false;
  double dropout_p = 0;
  std::optional<double> scale;  // as given; nullopt: torch's default 1/sqrt(D)
  bool enable_gqa = false;
  bool requires_grad = false;
  std::string fused_choice;     // torch._fused_sdp_choice on the same arguments; "" when it raised
  std::string ran;              // the kernel that ran: flash, efficient, cudnn, math, or an op's name
  std::vector<std::string> aten_ops;
  std::vector<std::string> notes;
  std::string raised;           // the call raised this ("RuntimeError: ..."); "" when it returned
  std::string memory_method;    // cuda_peak or profiler
  RecordedStats forward;
  std::optional<RecordedStats> backward;
  nlohmann::json raw;           // the recorder's object, kept as stored
};

struct Recording {
  int64_t id = 0;
  std::string name;
  int64_t started_unix_ms = 0, ended_unix_ms = 0;
  std::vector<std::string> program;  // the Python and its arguments as started (SCRIPT or -m MODULE, ARGS)
  std::string cwd;
  std::optional<int> exit_status;    // nullopt: killed by exit_signal
  int exit_signal = 0;
  bool interrupted = false;          // Ctrl-C or SIGTERM reached the program
  bool complete = false;             // the recorder's final write happened (false: killed)
  std::string stderr_tail;           // the last lines the program wrote to stderr
  std::string note;                  // what went wrong with the recording itself; "" when nothing
  nlohmann::json torch = nlohmann::json::object();  // torch, torch_cuda, torch_cudnn, cuda_devices, threads, python
  int64_t calls_seen = 0, calls_dropped = 0;
  double overhead_s = 0;
  int64_t environment_id = 0;
  std::string uuid;  // identity across databases (schema 6): a merge adds a recording once
  std::vector<RecordedCall> calls;
  std::string error;                 // the stored row could not be read: why

  std::string idText() const { return "REC" + std::to_string(id); }
  // "exited with status 1", "killed by signal 9", "interrupted (exit status 130)"
  std::string exitText() const;
  // What `attnscope record` exits with: the program's status, 128 + signal when it was killed.
  int exitCode() const;
};

// The recorder's limits: more than this many signatures in a file, or a shape of more than 8
// dimensions, is refused as not written by our recorder.
inline constexpr size_t kMaxRecordedCalls = 100000;

// One signature from the recorder's JSON; throws std::invalid_argument naming the field.
RecordedCall recordedCallFromJson(const nlohmann::json& j, int64_t row);
// The recorder's file into a recording (its calls, torch facts and counters); the program, its
// exit and the times are the caller's. Throws std::invalid_argument naming what is wrong.
Recording recordingFromRecorderJson(const nlohmann::json& j);
// The recorder's facts about torch, kept as the recording's `torch` object.
nlohmann::json recorderTorchFacts(const nlohmann::json& j);

// "[2,8,128,64]"
std::string shapeText(const std::vector<int64_t>& shape);

}  // namespace attnscope
