// attnscope_explain_check: holds `attnscope explain` against one real torch release on the CPU.
//   attnscope_explain_check --python PY [--device cpu|cuda] [--grid wide|quick] [--threads N]
//                           [--show N] [--markdown FILE] [--json FILE]
// Asks PY's torch for its version (and, with --device cuda, its GPU, CUDA and cuDNN), builds the
// grid (core/torch_dispatch/explain_grid.h), runs it through scripts/sdpa_measure.py, and prints
// per kernel and pass how many cases agree: the kernel torch ran (and torch._fused_sdp_choice
// where the release has one) in every case, and memory within kGridToleranceBytes on the CPU,
// kGridCudaToleranceBytes on CUDA (forward peak; with training also what the forward keeps and
// the backward's peak). Exit 0: every case agrees; 1: some disagree (listed); 2: bad arguments;
// 3: PY has no torch, a torch outside the explainer's range, or (cuda) no usable GPU.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/torch_dispatch/explain_grid.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;

namespace {

int usage(const std::string& why) {
  std::cerr << "attnscope_explain_check: " << why << "\n"
            << "usage: attnscope_explain_check --python PY [--device cpu|cuda] [--grid wide|quick] [--threads N]\n"
               "                               [--show N] [--markdown FILE] [--json FILE]\n";
  return 2;
}

std::string shellQuoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Group {
  int cases = 0, kernel_ok = 0, memory_ok = 0;
  int64_t worst = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string python, markdown, json_out, grid_name = "wide", device_name = "cpu";
  int threads = 2, show = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(what) + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--python") python = value("--python");
      else if (a == "--grid") grid_name = value("--grid");
      else if (a == "--device") device_name = value("--device");
      else if (a == "--threads") threads = std::stoi(value("--threads"));
      else if (a == "--show") show = std::stoi(value("--show"));
      else if (a == "--markdown") markdown = value("--markdown");
      else if (a == "--json") json_out = value("--json");
      else if (a == "--help" || a == "-h") return usage("holds explain against a torch release"), 0;
      else return usage("unknown argument '" + a + "'");
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (python.empty()) return usage("--python is required (a Python with torch; scripts/torch-release-venv.sh X.Y.Z makes one)");
  if (grid_name != "wide" && grid_name != "quick") return usage("--grid must be wide or quick (got '" + grid_name + "')");
  if (threads < 1 || threads > 256) return usage("--threads must be in 1..256");
  if (device_name != "cpu" && device_name != "cuda") return usage("--device must be cpu or cuda (got '" + device_name + "')");
  const TorchDevice device = device_name == "cuda" ? TorchDevice::cuda : TorchDevice::cpu;

  char dir_template[] = "/tmp/attnscope-explain-check-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return std::perror("mkdtemp"), 1;
  const std::string d = dir;
  const std::string version_file = d + "/version.txt";
  if (std::system((shellQuoted(python) + " -c 'import torch; print(torch.__version__)' > " + shellQuoted(version_file) + " 2>/dev/null").c_str()) != 0) {
    std::cerr << "attnscope_explain_check: " << python << " cannot import torch\n";
    return 3;
  }
  std::string version_text = slurp(version_file);
  while (!version_text.empty() && (version_text.back() == '\n' || version_text.back() == '\r')) version_text.pop_back();
  const auto version = parseTorchVersion(version_text);
  if (!version) {
    std::cerr << "attnscope_explain_check: torch " << version_text << " is outside the explainer's range (" << kTorchVersionRange << ")\n";
    return 3;
  }
  TorchTarget target = defaultTorchTarget(*version, TorchDevice::cpu);
  target.cpu_threads = threads;
  applyLocalCpu(target);  // torch runs here: its CPU flash packs for this CPU's AMX
  std::string gpu_text;
  if (device == TorchDevice::cuda) {
    // The GPU torch sees (device 0) and the CUDA and cuDNN its build carries.
    const std::string gpu_file = d + "/gpu.txt";
    const std::string probe =
        "import torch\n"
        "assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'\n"
        "p = torch.cuda.get_device_properties(0)\n"
        "print('%d.%d' % (p.major, p.minor)); print(p.name); print(torch.version.cuda or '')\n"
        "print(torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else '')\n";
    std::ofstream(d + "/gpu.py") << probe;
    if (std::system((shellQuoted(python) + " " + shellQuoted(d + "/gpu.py") + " > " + shellQuoted(gpu_file) + " 2>&1").c_str()) != 0) {
      std::cerr << "attnscope_explain_check: no usable GPU in " << python << "'s torch:\n" << slurp(gpu_file);
      return 3;
    }
    std::istringstream lines(slurp(gpu_file));
    std::string cc, name, cuda, cudnn;
    std::getline(lines, cc);
    std::getline(lines, name);
    std::getline(lines, cuda);
    std::getline(lines, cudnn);
    const auto gpu = parseGpu(cc);
    if (!gpu) {
      std::cerr << "attnscope_explain_check: the explainer does not know compute capability " << cc << " (" << name << ")\n";
      return 3;
    }
    target = defaultTorchTarget(*version, TorchDevice::cuda, gpu->capability);
    target.gpu_name = name;
    if (auto c = parseCudnnVersion(cudnn)) target.cudnn = *c;
    if (int major = std::atoi(cuda.c_str()); major > 0) target.cuda_major = major;
    gpu_text = " " + name + " (sm" + std::to_string(gpu->capability.number()) + ", CUDA " + cuda + ", cuDNN " + cudnn + ")";
  }
  const int64_t tolerance = device == TorchDevice::cuda ? kGridCudaToleranceBytes : kGridToleranceBytes;

  const auto grid = explainGrid(grid_name == "wide" ? GridSize::wide : GridSize::quick);
  nlohmann::json cases = nlohmann::json::array();
  for (size_t i = 0; i < grid.size(); ++i) cases.push_back(measureCaseJson(grid[i], *version, threads, i, device));
  const std::string in = d + "/cases.json", out = d + "/results.json";
  std::ofstream(in) << cases.dump();
  std::cerr << "attnscope_explain_check: torch " << version_text << ", " << grid.size() << " cases through sdpa_measure.py\n";
  const std::string cmd = shellQuoted(python) + " " + shellQuoted(ATTNSCOPE_SOURCE_DIR "/scripts/sdpa_measure.py") + " < " + shellQuoted(in) +
                          " > " + shellQuoted(out) + " 2> " + shellQuoted(d + "/stderr.txt");
  const time_t t0 = time(nullptr);
  if (std::system(cmd.c_str()) != 0) {
    std::cerr << "attnscope_explain_check: sdpa_measure.py failed:\n" << slurp(d + "/stderr.txt");
    return 1;
  }
  const long seconds = static_cast<long>(time(nullptr) - t0);
  nlohmann::json measured;
  try {
    measured = nlohmann::json::parse(slurp(out));
  } catch (const std::exception& e) {
    std::cerr << "attnscope_explain_check: sdpa_measure.py's output is not JSON: " << e.what() << "\n";
    return 1;
  }
  if (measured["results"].size() != grid.size()) {
    std::cerr << "attnscope_explain_check: " << measured["results"].size() << " results for " << grid.size() << " cases\n";
    return 1;
  }

  std::map<std::string, Group> groups;
  Group all;
  std::vector<std::string> failures;
  for (size_t i = 0; i < grid.size(); ++i) {
    const GridPrediction p = predictGridCase(grid[i], target);
    const GridVerdict v = compareGridCase(grid[i], p, measured["results"][i], tolerance);
    std::string key = (p.kernel ? std::string(toString(*p.kernel)) : std::string("raises")) + " | " +
                      (grid[i].training ? "train" : "forward") + " | " + (grid[i].force ? "forced" : "chosen");
    for (Group* g : {&groups[key], &all}) {
      ++g->cases;
      g->kernel_ok += v.kernel_ok;
      g->memory_ok += v.memory_ok;
      g->worst = std::max(g->worst, v.worst_diff);
    }
    if (!v.problem.empty()) failures.push_back(describeGridCase(grid[i]) + ": " + v.problem);
  }

  char date[32];
  const time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  std::ostringstream table;
  table << "torch " << version_text << (device == TorchDevice::cuda ? " on CUDA" + gpu_text : " on the CPU (" + std::to_string(threads) + " threads)")
        << ", " << grid.size() << " cases (" << grid_name << " grid), measured " << date << " in " << seconds
        << " s; memory tolerance " << tolerance << " B\n\n"
        << "| explain predicts | pass | kernel | cases | kernel agrees | memory agrees | largest difference (B) |\n"
        << "|---|---|---|---:|---:|---:|---:|\n";
  for (const auto& [key, g] : groups) {
    std::string k = key;
    for (size_t pos; (pos = k.find(" | ")) != std::string::npos;) k.replace(pos, 3, "\x1f");
    std::string a, b, c;
    std::stringstream ks(k);
    std::getline(ks, a, '\x1f');
    std::getline(ks, b, '\x1f');
    std::getline(ks, c, '\x1f');
    table << "| " << a << " | " << b << " | " << c << " | " << g.cases << " | " << g.kernel_ok << " | " << g.memory_ok << " | "
          << g.worst << " |\n";
  }
  table << "| **all** | | | " << all.cases << " | " << all.kernel_ok << " | " << all.memory_ok << " | " << all.worst << " |\n";
  std::cout << table.str();
  if (!failures.empty()) {
    std::cout << "\n" << failures.size() << " cases disagree";
    if (static_cast<int>(failures.size()) > show) std::cout << " (first " << show << ")";
    std::cout << ":\n";
    for (int i = 0; i < static_cast<int>(failures.size()) && i < show; ++i) std::cout << "  " << failures[i] << "\n";
  }
  if (!markdown.empty()) std::ofstream(markdown) << table.str();
  if (!json_out.empty())
    std::ofstream(json_out) << nlohmann::json{{"torch", version_text}, {"date", date},         {"cases", all.cases},
                                              {"kernel_ok", all.kernel_ok}, {"memory_ok", all.memory_ok},
                                              {"worst_bytes", all.worst}, {"failures", failures}}
                                   .dump(1)
                            << "\n";
  std::system(("rm -rf " + shellQuoted(d)).c_str());
  return failures.empty() ? 0 : 1;
}
