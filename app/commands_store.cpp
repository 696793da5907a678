// runs, show, compare, export, report: the commands that read saved results.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "app/cli_common.h"
#include "app/commands_record.h"
#include "app/cli_results.h"
#include "app/commands.h"
#include "core/export/chrome_trace.h"
#include "core/base/format.h"
#include "core/trace/kernel_summary.h"
#include "core/files/output_file.h"
#include "core/trace/phase_summary.h"
#include "core/export/sweep_compare.h"
#include "core/export/results_export.h"
#ifdef ATTNSCOPE_HAVE_GUI
#include "ui/gui_entry.h"
#endif

namespace attnscope::cli {
namespace {

// A sweep whose row cannot be read is an error here (exit 1, one line); `runs` lists it.
SweepInfo requireSweep(Store& store, int64_t id) {
  auto sw = store.sweep(id);
  if (!sw) throw UsageError("no sweep S" + std::to_string(id) + " in " + store.path() + " (see attnscope runs)");
  if (!sw->error.empty()) throw std::runtime_error(sw->error);
  return *sw;
}

RunResult requireRun(Store& store, int64_t id, bool events) {
  auto r = store.run(id, events);
  if (!r) throw UsageError("no run R" + std::to_string(id) + " in " + store.path() + " (see attnscope runs)");
  return *r;
}

std::string backendsOf(const SweepInfo& sw) {
  std::vector<std::string> b = sw.spec.value("backends", std::vector<std::string>{});
  return join(b, ",");
}

std::string gridOf(const SweepInfo& sw) {
  std::string out;
  for (const auto& a : sw.spec.value("axes", nlohmann::json::array()))
    out += (out.empty() ? "" : " x ") + a.value("field", "") + "[" + join(a.value("values", std::vector<std::string>{}), ",") + "]";
  return out.empty() ? "single point" : out;
}

// The runs table's ok column: the count, and how many of them were not checked on every row.
std::string okCell(const SweepInfo& sw) {
  const int64_t partial = sw.ok_count - sw.ok_every_row;
  return std::to_string(sw.ok_count) + (partial > 0 ? " (" + std::to_string(partial) + " not every row checked)" : "");
}

// A key identifying a point across sweeps: backend plus the resolved spec without the seed.
std::string pointKey(const RunResult& r) { return r.backend + " " + summary(r.spec); }

}  // namespace

const CommandDef kRunsDef{"runs", "runs [--db FILE] [--json]", "List the saved sweeps with their runs, and the recordings.",
                          {dbOption(), jsonOption()}, 0,
                          "Ids: S<n> is a sweep, R<n> a run, REC<n> a recording (attnscope record); 'show' takes any, "
                          "'compare' and 'export' sweeps and runs. --json: the sweeps, then the recordings (\"kind\": "
                          "\"recording\")."};

int cmdRuns(const std::vector<std::string>& argv) {
  Args args(kRunsDef, argv);
  auto store = openStore(databasePath(args), StoreMode::read);
  auto sweeps = store->sweeps();
  auto recordings = store->recordings();
  if (args.flag("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& sw : sweeps) {
      nlohmann::json runs = nlohmann::json::array();
      for (const auto& r : store->runs(sw.id))
        runs.push_back({{"id", r.id}, {"backend", r.backend}, {"summary", summary(r.spec)}, {"status", toString(r.status)},
                        {"status_text", statusText(r)}, {"checked_fraction", r.accuracy.checkedFraction()}});
      out.push_back({{"id", sw.id}, {"name", sw.name}, {"created_unix_ms", sw.created_unix_ms}, {"state", sw.state},
                     {"tags", sw.tags}, {"notes", sw.notes}, {"run_count", sw.run_count}, {"ok_count", sw.ok_count},
                     {"ok_every_row_count", sw.ok_every_row},
                     {"runs", runs}});
      if (!sw.error.empty()) out.back()["error"] = sw.error;
    }
    // Recordings follow the sweeps, told apart by "kind" (a sweep's entry has none).
    for (const auto& r : recordings) {
      out.push_back({{"kind", "recording"}, {"id", r.idText()}, {"name", r.name}, {"created_unix_ms", r.started_unix_ms},
                     {"program", r.program}, {"exit", r.exitText()}, {"interrupted", r.interrupted},
                     {"calls_seen", r.calls_seen}});
      if (!r.error.empty()) out.back()["error"] = r.error;
    }
    std::cout << jsonOutput(out) << "\n";
    const bool bad = std::any_of(sweeps.begin(), sweeps.end(), [](const SweepInfo& sw) { return !sw.error.empty(); }) ||
                     std::any_of(recordings.begin(), recordings.end(), [](const Recording& r) { return !r.error.empty(); });
    return bad ? 1 : 0;
  }
  if (sweeps.empty() && recordings.empty()) {
    std::cout << "no saved sweeps in " << store->path() << "\n";
    return 0;
  }
  Table t({"id", "name", "created", "state", "runs", "ok", "backends", "grid", "tags"});
  std::vector<std::string> unreadable;
  for (const auto& sw : sweeps) {
    const bool bad = !sw.error.empty();
    if (bad) unreadable.push_back(sw.error);
    t.add({"S" + std::to_string(sw.id), sw.name, formatLocalTime(sw.created_unix_ms), sw.state, std::to_string(sw.run_count),
           okCell(sw), bad ? "?" : backendsOf(sw), bad ? "unreadable (see below)" : gridOf(sw),
           join(sw.tags, ",")});
  }
  if (!sweeps.empty()) std::cout << t.render();
  if (!recordings.empty()) {
    Table rt({"id", "name", "created", "program", "exit", "calls"});
    for (const auto& r : recordings) {
      if (!r.error.empty()) unreadable.push_back(r.error);
      rt.add({r.idText(), r.name, formatLocalTime(r.started_unix_ms), r.error.empty() ? join(r.program, " ") : "unreadable (see below)",
              r.error.empty() ? r.exitText() : "?", std::to_string(r.calls_seen)});
    }
    std::cout << (sweeps.empty() ? "" : "\n") << "recordings:\n" << rt.render();
  }
  for (const auto& e : unreadable) std::cerr << "error: " << printable(e) << "\n";
  return unreadable.empty() ? 0 : 1;
}

const CommandDef kShowDef{"show", "show ID [--kernels] [--phases] [--torch V] [--gpu G] [--cudnn V] [--db FILE] [--json]",
                          "Show one sweep (S<n>), run (R<n>) or recording (REC<n>) in full: spec, environment, results, "
                          "memory (predicted, allocator and CUPTI peaks side by side).",
                          {{"kernels", "", "list the run's kernels: count, total and mean time, grid, block, registers, shared memory"},
                           {"phases", "", "a run's phases (scores, softmax, backward, ...): count, total and mean time, share, peak memory inside; for a sweep, each point's phases side by side"},
                           {"torch", "V", "a recording: explain every call for torch V as well (2.0 .. 2.15; default the recorded one)"},
                           {"gpu", "G", "a recording: ... and for GPU G (a name such as V100, or smXY, or cpu; default the recorded device)"},
                           {"cudnn", "V", "a recording: ... with cuDNN V (default the PyPI wheel's of that torch)"},
                           dbOption(), jsonOption()},
                          1,
                          "A recording lists its calls sorted by memory: the kernel torch ran, the explainer's prediction "
                          "(WRONG where it differs: a defect in AttnScope's rules), measured and predicted memory, time, "
                          "and the cheapest fix. With --torch/--gpu, what each call would do there and what changes "
                          "(\"flash -> math: +6.2 GiB\")."};

namespace {
// Shares are of the top-level phases; a nested phase ("recompute/scores") is indented.
void printPhases(const RunResult& r, std::ostream& out) {
  const auto phases = summarizePhases(r.trace.events);
  if (phases.empty()) {
    out << "\nno phases recorded for R" << r.id << "\n";
    return;
  }
  Table t({"phase", "count", "total", "mean", "share", "peak memory"});
  for (const auto& p : phases) {
    char share[16];
    std::snprintf(share, sizeof share, "%.1f %%", 100.0 * p.share);
    t.add({std::string(2 * static_cast<size_t>(p.depth), ' ') + p.name, std::to_string(p.count),
           formatDuration(static_cast<double>(p.total_ns) * 1e-9), formatDuration(static_cast<double>(p.meanNs()) * 1e-9),
           share, formatBytes(p.peak_bytes)});
  }
  out << "\n" << t.render();
}

// A sweep's phases, one row per run that recorded any: each top-level phase's mean time per
// occurrence and its share of the run, so the points compare at a glance (the Breakdown view's
// stacked bars, in text). The runs' events are read one run at a time.
struct SweepPhases {
  std::vector<RunResult> runs;  // without events
  std::vector<std::vector<PhaseStats>> phases;
};

SweepPhases sweepPhases(Store& store, const std::vector<RunResult>& runs) {
  SweepPhases sp;
  for (const auto& r : runs) {
    auto full = store.run(r.id, true);
    auto phases = full ? summarizePhases(full->trace.events) : std::vector<PhaseStats>{};
    if (phases.empty()) continue;
    sp.runs.push_back(r);
    sp.phases.push_back(std::move(phases));
  }
  return sp;
}

void printSweepPhases(int64_t sweepId, const SweepPhases& sp, std::ostream& out) {
  if (sp.runs.empty()) {
    out << "\nno phases recorded in S" << sweepId << "\n";
    return;
  }
  const PhaseMatrix m = phaseMatrix(sp.phases);
  const auto columns = specColumns(sp.runs);
  std::vector<std::string> header = {"id", "backend"};
  for (const SpecField* f : columns) header.push_back(columnHeader(*f));
  for (const auto& name : m.names) header.push_back(name);
  header.emplace_back("peak memory");
  Table t(header);
  for (size_t i = 0; i < sp.runs.size(); ++i) {
    const RunResult& r = sp.runs[i];
    std::vector<std::string> row = {"R" + std::to_string(r.id), r.backend};
    for (const SpecField* f : columns) row.push_back(f->cell(r.spec));
    int64_t peak = 0;
    for (const auto& cell : m.cells[i]) {
      if (!cell) {
        row.emplace_back("-");
        continue;
      }
      char share[16];
      std::snprintf(share, sizeof share, " %.0f%%", 100.0 * cell->share);
      row.push_back(formatDuration(static_cast<double>(cell->meanNs()) * 1e-9) + share);
      peak = std::max(peak, cell->peak_bytes);
    }
    row.push_back(formatBytes(peak));
    t.add(row);
  }
  out << "\nphases (mean time per occurrence, share of the run)\n" << t.render();
}
}  // namespace

int cmdShow(const std::vector<std::string>& argv) {
  Args args(kShowDef, argv);
  if (args.positionals().empty()) throw UsageError("show needs an id (S<n>, R<n> or REC<n>; see attnscope runs)");
  ItemId id = parseId(args.positionals()[0], true);
  if (id.is_recording) return showRecording(args, id.id);
  for (const char* o : {"torch", "gpu", "cudnn"})
    if (args.value(o)) throw UsageError(std::string("--") + o + " is for a recording (REC<n>)");
  auto store = openStore(databasePath(args), StoreMode::read);
  const bool json = args.flag("json");
  if (!id.is_run) {
    SweepInfo sw = requireSweep(*store, id.id);
    auto runs = store->runs(sw.id);
    Environment env = store->environment(sw.environment_id);
    if (json) {
      nlohmann::json j = sweepToJson(sw, env, runs);
      if (args.flag("phases")) {
        const SweepPhases sp = sweepPhases(*store, runs);
        nlohmann::json phases = nlohmann::json::array();
        for (size_t i = 0; i < sp.runs.size(); ++i) phases.push_back({{"run", sp.runs[i].id}, {"phases", toJson(sp.phases[i])}});
        j["phases"] = std::move(phases);
      }
      std::cout << jsonOutput(j) << "\n";
      return 0;
    }
    std::cout << "sweep S" << sw.id << " '" << printable(sw.name) << "' (" << sw.state << "), created " << formatLocalTime(sw.created_unix_ms) << "\n"
              << "  base spec   " << summary(workloadSpecFromJson(sw.spec.at("base"))) << "\n"
              << "  grid        " << gridOf(sw) << "\n  backends    " << backendsOf(sw) << "\n"
              << "  check       " << toString(sweepSpecFromJson(sw.spec).check) << "\n";
    if (!sw.notes.empty()) std::cout << "  notes       " << printable(sw.notes) << "\n";
    if (!sw.tags.empty()) std::cout << "  tags        " << printable(join(sw.tags, ", ")) << "\n";
    std::cout << "  machine     " << env.host << ", " << env.cpu << " (" << env.cpu_threads << " threads), "
              << formatBytes(env.memory_total) << ", " << env.os << "\n";
    for (const auto& g : env.gpus)
      std::cout << "  gpu         " << g.name << " (sm_" << g.cc_major << g.cc_minor << ", " << formatBytes(g.memory_total) << ")\n";
    if (!env.gpu_note.empty()) std::cout << "  gpu         " << env.gpu_note << "\n";
    std::cout << "  app         " << env.app_version << " (" << env.git_revision << ")\n\n" << resultsTable(runs).render();
    if (args.flag("phases")) printSweepPhases(sw.id, sweepPhases(*store, runs), std::cout);
    return 0;
  }
  RunResult r = requireRun(*store, id.id, true);
  if (json) {
    nlohmann::json j = toJson(r);
    if (args.flag("kernels")) j["kernels"] = toJson(summarizeKernels(r.trace.events));
    if (args.flag("phases")) j["phases"] = toJson(summarizePhases(r.trace.events));
    std::cout << jsonOutput(j) << "\n";
    return 0;
  }
  printRunDetails(r, std::cout);
  if (auto sw = store->sweepOfRun(r.id)) std::cout << "  sweep             S" << *sw << "\n";
  if (args.flag("phases")) printPhases(r, std::cout);
  if (args.flag("kernels")) {
    auto kernels = summarizeKernels(r.trace.events);
    if (kernels.empty()) {
      std::cout << "\nno kernels recorded for R" << r.id
                << (r.trace.capture_note.empty() ? std::string(" (CPU backends record phases, not kernels)") : " (" + r.trace.capture_note + ")") << "\n";
    } else {
      Table t({"kernel", "count", "total", "mean", "grid", "block", "regs", "smem"});
      auto dim = [](const int32_t* d) { return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]); };
      for (const auto& k : kernels)
        t.add({k.name.size() > 60 ? k.name.substr(0, 57) + "..." : k.name, std::to_string(k.count),
               formatDuration(static_cast<double>(k.total_ns) * 1e-9), formatDuration(k.meanNs() * 1e-9), dim(k.config.grid),
               dim(k.config.block), std::to_string(k.config.registers), formatBytes(k.sharedMemory())});
      std::cout << "\n" << t.render();
    }
  }
  return 0;
}

const CommandDef kCompareDef{"compare", "compare ID ID [--db FILE] [--json]",
                             "Compare two sweeps point by point (memory, time, status) with their environments side "
                             "by side, or two runs field by field.",
                             {dbOption(), jsonOption()}, 2, {}};

int cmdCompare(const std::vector<std::string>& argv) {
  Args args(kCompareDef, argv);
  if (args.positionals().size() != 2) throw UsageError("compare needs two ids (S<n> or R<n>)");
  ItemId a = parseId(args.positionals()[0]), b = parseId(args.positionals()[1]);
  if (a.is_run != b.is_run) throw UsageError("compare two sweeps or two runs, not one of each");
  auto store = openStore(databasePath(args), StoreMode::read);
  std::vector<RunResult> ra, rb;
  nlohmann::json envs = nlohmann::json::array();
  if (a.is_run) {
    ra = {requireRun(*store, a.id, false)};
    rb = {requireRun(*store, b.id, false)};
  } else {
    SweepInfo sa = requireSweep(*store, a.id), sb = requireSweep(*store, b.id);
    ra = store->runs(sa.id);
    rb = store->runs(sb.id);
    envs = {toJson(store->environment(sa.environment_id)), toJson(store->environment(sb.environment_id))};
  }
  // Sweeps pair up by core's compareSweeps (the GUI's Compare tab uses the same rule): on the
  // backend and the swept fields, so fp16 and bf16 sweeps pair, and points only in B are kept.
  // Two runs pair up whatever they are.
  struct Pair { const RunResult* a; const RunResult* b; std::string label; };
  std::vector<Pair> pairs;
  // The fixed fields that differ (what is being compared) with their values, above the table.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> differing;
  if (a.is_run) {
    pairs.push_back({&ra[0], &rb[0], pointKey(ra[0])});
    const nlohmann::json ja = toJson(ra[0].spec), jb = toJson(rb[0].spec);
    for (const std::string& f : differingFields(ra[0].spec, rb[0].spec))
      differing.push_back({f, {ja.value(f, nlohmann::json()).dump(), jb.value(f, nlohmann::json()).dump()}});
  } else {
    const SweepComparison cmp = compareSweeps({&ra, &rb});
    for (const auto& p : cmp.points) pairs.push_back({p.runs[0], p.runs[1], p.label});
    for (size_t i = 0; i < cmp.differing_fields.size(); ++i)
      differing.push_back({cmp.differing_fields[i], {cmp.differing_values[i][0], cmp.differing_values[i][1]}});
  }
  // A pair of another kind is marked, not silently divided (an attention call against a layer).
  auto pairProblem = [](const Pair& p) -> std::optional<std::string> {
    if (!p.a || !p.b) return std::nullopt;
    return notComparable(p.a->spec, p.b->spec);
  };
  std::optional<std::string> not_comparable;
  for (const auto& p : pairs)
    if (!not_comparable) not_comparable = pairProblem(p);
  // core's torchEnvironment, which the GUI's Compare tab shows too.
  const nlohmann::json torch_a = torchEnvironment(ra), torch_b = torchEnvironment(rb);
  if (args.flag("json")) {
    nlohmann::json out = {{"a", a.text()}, {"b", b.text()}, {"environments", envs}, {"points", nlohmann::json::array()}};
    if (!torch_a.empty() || !torch_b.empty()) out["torch_environments"] = {torch_a, torch_b};
    out["differing_fields"] = nlohmann::json::object();
    for (const auto& [field, values] : differing) out["differing_fields"][field] = {values.first, values.second};
    for (const auto& p : pairs) {
      nlohmann::json j = {{"point", p.label}, {"a", p.a ? toJson(*p.a) : nlohmann::json()},
                          {"b", p.b ? toJson(*p.b) : nlohmann::json()}};
      if (auto why = pairProblem(p)) {
        j["not_comparable"] = *why;
      } else if (p.a && p.b && p.a->status == RunStatus::ok && p.b->status == RunStatus::ok) {
        j["time_ratio"] = p.a->timing.median_s > 0 ? p.b->timing.median_s / p.a->timing.median_s : 0;
        j["peak_difference"] = p.b->memory.measured_peak - p.a->memory.measured_peak;
      }
      out["points"].push_back(j);
    }
    std::cout << jsonOutput(out) << "\n";
    return 0;
  }
  if (!a.is_run) {
    Table env({"environment", a.text(), b.text(), ""});
    for (auto it = envs[0].begin(); it != envs[0].end(); ++it) {
      std::string va = it->dump(), vb = envs[1].value(it.key(), nlohmann::json()).dump();
      if (va.size() > 60) va = va.substr(0, 57) + "...";
      if (vb.size() > 60) vb = vb.substr(0, 57) + "...";
      env.add({it.key(), va, vb, va == vb ? "" : "differs"});
    }
    std::cout << env.render() << "\n";
  }
  if (!torch_a.empty() || !torch_b.empty()) {
    Table te({"torch (as the runs saw it)", a.text(), b.text(), ""});
    nlohmann::json keys = torch_a;
    keys.update(torch_b);
    for (auto it = keys.begin(); it != keys.end(); ++it) {
      const std::string va = torch_a.value(it.key(), "-"), vb = torch_b.value(it.key(), "-");
      te.add({it.key(), va, vb, va == vb ? "" : "differs"});
    }
    std::cout << te.render() << "\n";
  }
  if (!differing.empty()) {
    std::cout << "fixed fields that differ:";
    for (size_t i = 0; i < differing.size(); ++i)
      std::cout << (i ? "," : "") << " " << differing[i].first << " (" << printable(differing[i].second.first) << " in "
                << a.text() << ", " << printable(differing[i].second.second) << " in " << b.text() << ")";
    std::cout << "\n";
  }
  if (not_comparable) std::cout << "not comparable point for point: " << *not_comparable << "; no ratios are shown\n";
  if (!differing.empty() || not_comparable) std::cout << "\n";
  Table t({"point", "status " + a.text(), "status " + b.text(), "time " + a.text(), "time " + b.text(), "B/A time",
           "peak " + a.text(), "peak " + b.text(), "peak B-A"});
  auto status = [](const RunResult* r) { return r ? statusText(*r) : std::string("absent"); };
  auto peak = [](const RunResult* r) { return r ? bytesCell(r->status == RunStatus::ok ? r->memory.measured_peak : -1) : std::string("-"); };
  for (const auto& p : pairs) {
    std::string ratio = "-", diff = "-";
    if (p.a && p.b && p.a->status == RunStatus::ok && p.b->status == RunStatus::ok && p.a->timing.median_s > 0 &&
        !pairProblem(p)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx", p.b->timing.median_s / p.a->timing.median_s);
      ratio = buf;
      diff = formatBytes(p.b->memory.measured_peak - p.a->memory.measured_peak);
    }
    t.add({p.label, status(p.a), status(p.b), p.a ? timeCell(*p.a) : "-", p.b ? timeCell(*p.b) : "-", ratio, peak(p.a),
           peak(p.b), diff});
  }
  std::cout << t.render();
  return 0;
}

const CommandDef kExportDef{
    "export", "export ID --format csv|json|trace|png|svg|pdf --out FILE [--db FILE]",
    "Export a sweep or run: data as CSV or JSON, the trace as Chrome trace JSON (Perfetto UI, chrome://tracing), "
    "or the memory charts as PNG, SVG or PDF.",
    {{"format", "F", "csv, json, trace, png, svg or pdf"},
     {"out", "FILE", "output file; - writes csv, json and trace to standard output"},
     {"size", "WxH", "printed size of png/svg/pdf: 7x3.5in, 183x90mm, 12x6cm, 504x252pt or 1600x700px (pixels "
                     "at --dpi); png gets size x dpi pixels, pdf a page of that many points; instead of --width/--height"},
     {"width", "PX", "image width for png/svg/pdf, 100 to 20000 (default 1600); svg/pdf at 96 px per inch"},
     {"height", "PX", "image height, 100 to 20000 (default 700)"},
     {"dpi", "N", "resolution for png, 24 to 2400 (default 96): with --size, more pixels for the same inches"},
     dbOption()},
    1,
    "A sweep's trace export writes one file with a process per run. The file is written under a temporary name in "
    "the same folder and renamed when complete; a symbolic link is followed (the file it points to is replaced); "
    "csv, json and trace go straight into a FIFO or character device, png, svg and pdf need a regular file. An "
    "output that is the database (by any path), one of its -wal, -shm, -journal names, or any other SQLite "
    "database is refused."};

namespace {

int boundedInt(const Args& args, const std::string& name, int fallback, int lo, int hi) {
  int v = args.intValue(name, fallback, std::numeric_limits<int>::min());
  if (v < lo || v > hi)
    throw UsageError("--" + name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                     std::to_string(v) + ")");
  return v;
}

}  // namespace

int cmdExport(const std::vector<std::string>& argv) {
  Args args(kExportDef, argv);
  if (args.positionals().empty()) throw UsageError("export needs an id (S<n> or R<n>)");
  ItemId id = parseId(args.positionals()[0]);
  auto format = args.value("format");
  auto out = args.value("out");
  static const std::vector<std::string> formats{"csv", "json", "trace", "png", "svg", "pdf"};
  if (!format || std::find(formats.begin(), formats.end(), *format) == formats.end())
    throw UsageError("--format must be one of csv, json, trace, png, svg, pdf" + (format ? " (got '" + *format + "')" : std::string()));
  if (!out || out->empty()) throw UsageError("--out FILE is required");
  const bool chart = *format == "png" || *format == "svg" || *format == "pdf";
  const bool toStdout = *out == "-";
  if (toStdout && chart)
    throw UsageError("--out -: standard output takes csv, json and trace; give " + *format + " a file name");
  // Every option is checked before anything is read or written.
  const int width = boundedInt(args, "width", 1600, 100, 20000), height = boundedInt(args, "height", 700, 100, 20000);
  const int dpi = boundedInt(args, "dpi", 96, 24, 2400);
  std::optional<PrintSize> printed;
  if (auto size = args.value("size")) {
    if (args.value("width") || args.value("height"))
      throw UsageError("--size gives width and height: drop --width/--height, or --size");
    printed = parsePrintSize(*size, dpi);
    if (!printed) throw UsageError("--size must be " + std::string(kPrintSizeForms) + ", at most 200 in a side (got '" + *size + "')");
  }
  const std::string dbPath = databasePath(args);
  if (!toStdout) {
    try {
      checkOutput(*out, dbPath, chart ? OutputRule::file : OutputRule::text);
    } catch (const OutputRefused& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
  }
  auto store = openStore(dbPath, StoreMode::read);
  std::vector<RunResult> runs;
  std::optional<SweepInfo> sweep;
  if (id.is_run) {
    runs = {requireRun(*store, id.id, *format == "trace")};
  } else {
    sweep = requireSweep(*store, id.id);
    runs = store->runs(sweep->id);
    if (*format == "trace")
      for (auto& r : runs) r.trace.events = store->events(r.id);
  }
  if (chart) {
#ifdef ATTNSCOPE_HAVE_GUI
    if (id.is_run) throw UsageError("chart export takes a sweep id (S<n>); the run R" + std::to_string(id.id) + " is in S" +
                                    std::to_string(store->sweepOfRun(id.id).value_or(0)));
    store.reset();
    std::string err = printed ? exportSweepChartPrinted(dbPath, id.id, *format, *out, printed->width_in,
                                                        printed->height_in, dpi)
                              : exportSweepChart(dbPath, id.id, *format, *out, width, height, dpi);
    if (!err.empty()) throw std::runtime_error(err);
    std::cout << "wrote " << printable(*out) << "\n";
    return 0;
#else
    (void)width, (void)height, (void)dpi, (void)printed;  // checked above all the same, so a script fails the same way in every build
    throw std::runtime_error("this build has no GUI (ATTNSCOPE_GUI=OFF): chart export needs it; use csv or json");
#endif
  }
  std::string text;
  if (*format == "csv") {
    text = runsToCsv(runs);
  } else if (*format == "json") {
    text = jsonOutput(sweep ? sweepToJson(*sweep, store->environment(sweep->environment_id), runs) : toJson(runs[0])) + "\n";
  } else {
    std::vector<TraceRun> traceRuns;
    for (const auto& r : runs) traceRuns.push_back(traceRunOf(r));
    text = chromeTrace(traceRuns).dump() + "\n";
  }
  if (toStdout) {
    std::cout << text << std::flush;
    if (!std::cout) throw std::runtime_error(std::string("cannot write to standard output: ") + std::strerror(errno));
    return 0;
  }
  writeOutputFile(*out, text);
  std::cout << "wrote " << printable(*out) << " (" << runs.size() << (runs.size() == 1 ? " run" : " runs") << ")\n";
  return 0;
}

const CommandDef kReportDef{"report", "report ID --out DIR [--db FILE]",
                            "Write every chart of a sweep as PNG and one PDF report (spec, environment, charts, "
                            "results table) into DIR.",
                            {{"out", "DIR", "output folder (created)"}, dbOption()}, 1,
                            "Each file is written under a temporary name and renamed when complete; a name in DIR "
                            "taken by anything but a regular file (a link, FIFO, device or folder) is refused before "
                            "anything is written, and Ctrl-C removes the file in progress."};

int cmdReport(const std::vector<std::string>& argv) {
  Args args(kReportDef, argv);
  if (args.positionals().empty()) throw UsageError("report needs a sweep id (S<n>)");
  ItemId id = parseId(args.positionals()[0]);
  if (id.is_run) throw UsageError("report takes a sweep id (S<n>)");
  auto out = args.value("out");
  if (!out || out->empty()) throw UsageError("--out DIR is required");
  if (std::filesystem::exists(*out) && !std::filesystem::is_directory(*out))
    throw UsageError("--out: " + *out + " is a file; report writes its charts and report.pdf into a folder");
  const std::string dbPath = databasePath(args);
  try {
    checkOutput((std::filesystem::path(*out) / "report.pdf").string(), dbPath, OutputRule::entry);
  } catch (const OutputRefused& e) {
    throw UsageError(std::string("--out: ") + e.what());
  }
  {
    auto store = openStore(dbPath, StoreMode::read);
    requireSweep(*store, id.id);
  }
#ifdef ATTNSCOPE_HAVE_GUI
  std::string err;
  try {
    err = writeSweepReport(dbPath, id.id, *out);
  } catch (const OutputRefused& e) {  // a chart's name taken by a link, FIFO or device: nothing was written
    throw UsageError(std::string("--out: ") + e.what());
  }
  if (!err.empty()) throw std::runtime_error(err);
  std::cout << "wrote charts and report.pdf to " << printable(*out) << "\n";
  return 0;
#else
  throw std::runtime_error("this build has no GUI (ATTNSCOPE_GUI=OFF): reports need it");
#endif
}

const CommandDef kCheckDef{
    "check", "check [--db FILE] [--json]",
    "Check a database in full: every page (SQLite's integrity_check), every reference between rows, and every sweep, "
    "environment, run and trace event row decoded as show, export and the window decode it.",
    {dbOption(), jsonOption()},
    0,
    "Opening a database checks only its header, application id and schema, so that a large store opens at once; "
    "this reads the whole file (also done on open after a sweep's process ended uncleanly). Nothing is written. "
    "Exit status: 0 sound, 1 damaged (each problem on its own line), 2 not an AttnScope database."};

int cmdCheck(const std::vector<std::string>& argv) {
  Args args(kCheckDef, argv);
  if (!args.positionals().empty()) throw UsageError("check takes no arguments; name the database with --db FILE");
  const std::string dbPath = databasePath(args);
  std::vector<std::string> problems;
  int64_t sweepCount = 0, runCount = 0;
  try {
    auto store = openStore(dbPath, StoreMode::read);
    // Every page, then every row through the readers' own decoding (Store::check): what `show`,
    // `export` or the window would refuse, check refuses.
    problems = store->check();
    for (const auto& sw : store->sweeps()) {
      ++sweepCount;
      runCount += sw.run_count;
    }
  } catch (const StoreError& e) {
    if (e.kind() != StoreError::Kind::corrupt) throw;
    problems.push_back(e.what());
  } catch (const UsageError& e) {
    // openStore's refusal of a damaged header or schema is a finding here, not bad input.
    if (std::string_view(e.what()).find("damaged") == std::string_view::npos) throw;
    problems.push_back(e.what());
  }
  if (args.flag("json")) {
    std::cout << jsonOutput({{"database", dbPath}, {"ok", problems.empty()}, {"sweeps", sweepCount},
                             {"runs", runCount}, {"problems", problems}})
              << "\n";
  } else if (problems.empty()) {
    std::cout << printable(dbPath) << ": ok (" << sweepCount << " sweeps, " << runCount << " runs, every page read)\n";
  } else {
    std::cout << printable(dbPath) << ": damaged, " << problems.size() << (problems.size() == 1 ? " problem" : " problems")
              << "\n";
    for (const auto& p : problems) std::cout << "  " << printable(p) << "\n";
  }
  return problems.empty() ? 0 : 1;
}

}  // namespace attnscope::cli
