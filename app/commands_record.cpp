// attnscope record: the user's own PyTorch program run under AttnScope's recorder
// (python/attnscope_record.py), every attention call it makes saved as a recording; and the
// recording shown (`show REC`), re-explained for another torch and GPU, and turned into a sweep.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/cli_common.h"
#include "app/cli_table.h"
#include "app/commands.h"
#include "app/commands_record.h"
#include "core/base/format.h"
#include "core/record/program_run.h"
#include "core/record/recording_explain.h"
#include "core/result/environment.h"
#include "kernels/builtin_session.h"

namespace attnscope::cli {

using namespace torch_dispatch;
namespace fs = std::filesystem;

const CommandDef kRecordDef{
    "record", "record [--db FILE] [--name N] [--python P] [--samples K] [--json] -- SCRIPT.py [ARGS...] | -- -m MODULE [ARGS...]",
    "Run your own PyTorch program and record every attention call it makes: what torch ran, why, what it cost, "
    "and the cheaper fix.",
    {{"name", "NAME", "recording name (default: the script and the time)"},
     {"samples", "K", "calls of each signature measured in full (memory on the CPU, kept samples; default 3, 1..1000)"},
     pythonOption(),
     dbOption(),
     jsonOption()},
    0,
    "The program runs in the Python the torch backends use (--python, ATTNSCOPE_PYTHON, python3 on PATH) with its "
    "own stdin and stdout; its stderr passes through and its last lines are kept. Calls of "
    "torch.nn.functional.scaled_dot_product_attention are recorded, also those made inside nn.MultiheadAttention "
    "and nn.TransformerEncoderLayer; identical calls (same site, shapes, dtypes, mask, arguments) are one row. The "
    "report goes to stderr after the program ends (--json: one JSON object on stdout after the program's own "
    "output; 'attnscope show REC<n> --json' prints it alone). Not seen: attention inside a torch.compile'd region, "
    "flash_attn or xformers called directly. Ctrl-C reaches the program; what it recorded is kept, marked "
    "interrupted. Exit status: the program's (128 + N when killed by signal N); 2 bad input, a missing script, or "
    "no torch 2.0+ in that Python; 1 when the recording could not be saved."};

namespace {

// "heads_cliff.py 2026-12-02 04:10:00"
std::string defaultName(const std::vector<std::string>& program, int64_t unix_ms) {
  std::string what = program[0] == "-m" && program.size() > 1 ? program[1] : fs::path(program[0]).filename().string();
  if (what.size() > 80) what.resize(80);
  return what + " " + formatLocalTime(unix_ms);
}

std::string cwdText() {
  std::error_code ec;
  return fs::current_path(ec).string();
}

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/attnscope-record-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("cannot make a temporary folder in " + pattern.substr(0, pattern.rfind('/')));
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string bytesCell(int64_t b) { return b < 0 ? "-" : formatBytes(b); }

std::string mean(const RecordedStats& s) { return s.count > 0 ? formatDuration(s.meanTime()) : "-"; }

}  // namespace

std::optional<TorchTarget> retarget(const Args& args, const Recording& r) {
  const auto torch_arg = args.value("torch"), gpu_arg = args.value("gpu"), cudnn_arg = args.value("cudnn");
  std::optional<TorchVersion> version;
  std::optional<CudnnVersion> cudnn;
  if (torch_arg && !(version = parseTorchVersion(*torch_arg)))
    throw UsageError("--torch: unknown version '" + printable(*torch_arg) + "' (allowed: " + std::string(kTorchVersionChoices) + ")");
  if (gpu_arg && *gpu_arg != "cpu" && !parseGpu(*gpu_arg))
    throw UsageError("--gpu: unknown GPU '" + printable(*gpu_arg) + "' (allowed: cpu, " + gpuChoices() + ")");
  if (cudnn_arg && !(cudnn = parseCudnnVersion(*cudnn_arg)))
    throw UsageError("--cudnn: unknown version '" + printable(*cudnn_arg) + "' (allowed: " + std::string(kCudnnVersionChoices) + ")");
  return retargetRecording(r, version, gpu_arg, cudnn);
}

void printRecording(const Recording& r, const std::optional<TorchTarget>& target, std::ostream& out) {
  std::string program;
  for (const auto& a : r.program) program += (program.empty() ? "" : " ") + a;
  out << "recording " << r.idText() << " '" << printable(r.name) << "': " << printable(program) << "\n"
      << "  " << r.exitText() << (r.complete ? "" : ", the recorder's last write kept (the program was killed)") << ", "
      << r.calls.size() << " call signature" << (r.calls.size() == 1 ? "" : "s") << ", " << r.calls_seen << " call"
      << (r.calls_seen == 1 ? "" : "s") << (r.calls_dropped > 0 ? " (" + std::to_string(r.calls_dropped) + " not kept: too many signatures)" : "")
      << ", recorder overhead " << formatDuration(r.overhead_s) << "\n";
  std::string problem;
  const std::optional<TorchTarget> recorded = recordedTarget(r, &problem);
  out << "  recorded on " << (recorded ? recorded->describe() : "? (" + problem + ")") << "\n";
  if (target) out << "  explained for " << target->describe() << "\n";
  if (!r.note.empty()) out << "  note: " << printable(r.note) << "\n";
  if (r.calls.empty()) {
    out << "\nno attention calls seen. Not seen by the recorder: attention inside a torch.compile'd region, a "
           "library such as flash_attn or xformers called directly, or a program that never reached its model.\n";
  } else {
    // Columns that would say nothing are left out: k/v when they are shaped as q, the backward
    // when no call had one.
    const bool any_backward = std::any_of(r.calls.begin(), r.calls.end(), [](const RecordedCall& c) { return c.backward.has_value(); });
    const bool any_kv = std::any_of(r.calls.begin(), r.calls.end(), [](const RecordedCall& c) { return c.k.shape != c.q.shape; });
    std::vector<std::string> header = {"row", "site", "module", "count", "q [B,H,L,D]"};
    if (any_kv) header.push_back("k/v");
    for (const char* h : {"dtype", "mask", "torch ran", "predicted", "measured", "predicted mem", "time"}) header.push_back(h);
    if (any_backward) header.push_back("backward");
    if (target) {
      header.push_back("on target");
      header.push_back("change");
    }
    header.push_back("cheapest fix");
    Table t(header);
    // Sorted by memory, the largest first: where the program's attention memory goes.
    std::vector<const RecordedCall*> order;
    for (const auto& c : r.calls) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(), [](const RecordedCall* a, const RecordedCall* b) {
      return a->forward.bytes_max > b->forward.bytes_max;
    });
    std::vector<std::string> details;
    for (const RecordedCall* c : order) {
      const CallVerdict v = recorded ? explainRecordedCall(*c, *recorded, true) : CallVerdict{};
      std::string predicted = v.predicted.empty() ? "?" : v.predicted;
      if (v.mismatch) predicted += " (WRONG)";
      const std::string mask = recordedMaskText(*c);
      std::vector<std::string> row = {std::to_string(c->row), c->site, c->module.empty() ? "-" : c->module,
                                      std::to_string(c->forward.count), shapeText(c->q.shape)};
      if (any_kv) row.push_back(shapeText(c->k.shape));
      for (std::string cell : {c->q.dtype, mask, ranKernel(*c).empty() ? "?" : ranKernel(*c), predicted,
                               c->forward.memory_measured > 0 ? formatBytes(c->forward.bytes_max) : "-",
                               bytesCell(v.predicted_bytes), mean(c->forward)})
        row.push_back(std::move(cell));
      if (any_backward) row.push_back(c->backward ? mean(*c->backward) : "-");
      if (target) {
        const CallVerdict tv = explainRecordedCall(*c, *target, false);
        row.push_back(onTargetText(tv));
        const std::string change = kernelChange(v, tv);
        row.push_back(change.empty() ? "-" : change);
        if (!tv.first_rejection.empty() && tv.predicted != v.predicted)
          details.push_back(r.idText() + ":" + std::to_string(c->row) + " on target: " + tv.first_rejection);
      }
      row.push_back(v.cheapest ? v.cheapest->change + " (" + formatBytes(v.cheapest->extra_bytes) + ")" : "-");
      t.add(row);
      const std::string ref = r.idText() + ":" + std::to_string(c->row);
      if (v.mismatch)
        details.push_back(ref + ": torch ran " + ranKernel(*c) + " but the explainer predicts " + v.predicted +
                          ": a defect in AttnScope's rules for this torch (please report it)");
      if (!v.first_rejection.empty()) details.push_back(ref + ": " + v.first_rejection);
      if (!c->raised.empty()) details.push_back(ref + ": the call raised " + c->raised);
      if (!v.workload.problem.empty()) details.push_back(ref + ": not explained: " + v.workload.problem);
      for (const auto& n : v.workload.notes) details.push_back(ref + ": " + n);
      for (const auto& n : c->notes) details.push_back(ref + ": " + n);
    }
    out << "\n" << t.render();
    if (!details.empty()) out << "\n";
    for (const auto& d : details) out << "  " << printable(d) << "\n";
    out << "\nmeasured: what the call allocated at its peak above what was allocated when it began ("
        << (r.calls.front().memory_method == "cuda_peak" ? "torch.cuda.max_memory_allocated" : "torch.profiler's memory events, first calls of each row")
        << "); predicted: the explainer's figure for the same. Sweep a call: attnscope sweep --from " << r.idText()
        << ":ROW --heads 8,16,32 ...\n";
  }
  if (!r.stderr_tail.empty() && (!r.exit_status || *r.exit_status != 0)) {
    out << "\nthe program's last words on stderr:\n";
    std::istringstream lines(r.stderr_tail);
    for (std::string line; std::getline(lines, line);) out << "  | " << printable(line) << "\n";
  }
}

int cmdRecord(const std::vector<std::string>& argv) {
  const auto dashes = std::find(argv.begin(), argv.end(), "--");
  const std::vector<std::string> options(argv.begin(), dashes);
  std::vector<std::string> program;
  if (dashes != argv.end()) program.assign(dashes + 1, argv.end());
  Args args(kRecordDef, options);
  if (dashes == argv.end() || program.empty())
    throw UsageError("record needs the program after --: attnscope record [OPTIONS] -- SCRIPT.py [ARGS...] (or -- -m MODULE)");
  if (program[0] == "-m") {
    if (program.size() < 2 || program[1].empty()) throw UsageError("record -- -m needs a module name");
  } else {
    struct stat st {};
    if (::stat(program[0].c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw UsageError("record: the script '" + printable(program[0]) + "' does not exist or is not a file");
  }
  const int samples = args.intValue("samples", 3, 1, 1000);
  std::string name = sweepNameOption(args);
  applyPythonOption(args);
  const RecorderPython py = builtinRecorderPython();
  if (!py.problem.empty()) throw UsageError("record: " + py.problem);
  auto store = openStore(databasePath(args));  // refused before the program runs, not after
  TempDir tmp;
  const std::string file = tmp.path() + "/recording.json";
  ProgramLaunch launch;
  launch.argv = {py.python, py.script, "--out", file, "--samples", std::to_string(samples), "--"};
  launch.argv.insert(launch.argv.end(), program.begin(), program.end());
  ProgramExit ran;
  try {
    ran = runProgram(launch);
  } catch (const std::runtime_error& e) {
    std::cerr << "error: " << printable(e.what()) << "\n";
    return 1;
  }
  Recording rec;
  nlohmann::json j;
  bool have_file = false;
  {
    std::ifstream in(file);
    if (in) {
      try {
        j = nlohmann::json::parse(in);
        have_file = true;
      } catch (const nlohmann::json::exception& e) {
        rec.note = std::string("the recorder's file could not be read: ") + e.what();
      }
    }
  }
  if (have_file) {
    // No torch, or one too old: nothing was recorded, and that is the user's Python to fix.
    if (ran.status == 3 && !j.value("error", std::string()).empty()) {
      std::cerr << "error: " << printable(py.shown) << " (" << py.source << ") cannot record: "
                << printable(j.value("error", std::string())) << "\n";
      return 2;
    }
    try {
      rec = recordingFromRecorderJson(j);
    } catch (const std::invalid_argument& e) {
      rec.note = std::string("the recorder's file is not a recording: ") + e.what();
    }
  } else if (rec.note.empty()) {
    rec.note = "the recorder wrote nothing (the program ended before torch was imported, or was killed first)";
  }
  rec.name = name.empty() ? defaultName(program, ran.started_unix_ms) : name;
  rec.program = program;
  rec.cwd = cwdText();
  rec.started_unix_ms = ran.started_unix_ms;
  rec.ended_unix_ms = ran.ended_unix_ms;
  rec.exit_status = ran.status;
  rec.exit_signal = ran.signal;
  rec.interrupted = rec.interrupted || ran.interrupted;
  rec.stderr_tail = ran.stderr_tail;
  if (rec.torch.empty() || !rec.torch.contains("python")) rec.torch["python"] = py.shown;
  try {
    rec.environment_id = store->saveEnvironment(captureEnvironment());
    rec.id = store->saveRecording(rec);
  } catch (const std::exception& e) {
    std::cerr << "error: the recording could not be saved in " << printable(store->path()) << ": " << printable(e.what())
              << "\n";
    return rec.exitCode() != 0 ? rec.exitCode() : 1;
  }
  if (args.flag("json")) std::cout << jsonOutput(recordingJson(rec, std::nullopt)) << "\n";
  else printRecording(rec, std::nullopt, std::cerr);
  if (!args.flag("json")) std::cerr << "saved as " << rec.idText() << " in " << printable(store->path()) << "\n";
  return rec.exitCode();
}

int showRecording(const Args& args, int64_t id) {
  auto store = openStore(databasePath(args), StoreMode::read);
  auto rec = store->recording(id);
  if (!rec) throw UsageError("no recording REC" + std::to_string(id) + " in " + printable(store->path()) + " (see attnscope runs)");
  if (!rec->error.empty()) {
    std::cerr << "error: " << printable(rec->error) << "\n";
    return 1;
  }
  const auto target = retarget(args, *rec);
  if (args.flag("json")) std::cout << jsonOutput(recordingJson(*rec, target)) << "\n";
  else printRecording(*rec, target, std::cout);
  return 0;
}

WorkloadSpec specOfRecordedCall(const std::string& db, const std::string& ref) {
  const size_t colon = ref.find(':');
  const std::string rec_text = ref.substr(0, colon);
  const ItemId id = parseId(rec_text, true);
  int64_t row = 0;
  try {
    size_t used = 0;
    row = colon == std::string::npos ? 0 : std::stoll(ref.substr(colon + 1), &used);
    if (colon == std::string::npos || used != ref.size() - colon - 1 || row <= 0) throw std::invalid_argument("row");
  } catch (const std::exception&) {
    throw UsageError("--from: '" + printable(ref) + "' is not a recorded call: use REC<n>:ROW (see attnscope show REC<n>)");
  }
  if (!id.is_recording) throw UsageError("--from: '" + printable(ref) + "' is not a recorded call: use REC<n>:ROW");
  auto store = openStore(db, StoreMode::read);
  auto rec = store->recording(id.id);
  if (!rec) throw UsageError("--from: no recording " + rec_text + " in " + printable(store->path()));
  for (const RecordedCall& c : rec->calls) {
    if (c.row != row) continue;
    std::string problem;
    const auto target = recordedTarget(*rec, &problem);
    const RecordedWorkload w = recordedWorkload(c, target ? target->version : kNewestTorch);
    if (!w.spec)
      throw UsageError("--from: " + printable(ref) + " cannot be a workload: " +
                       (w.problem.empty() ? (w.notes.empty() ? std::string("?") : w.notes.back()) : w.problem));
    return *w.spec;
  }
  throw UsageError("--from: " + rec_text + " has no row " + std::to_string(row) + " (it has " + std::to_string(rec->calls.size()) + ")");
}

}  // namespace attnscope::cli
