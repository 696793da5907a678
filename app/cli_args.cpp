#include "app/cli_args.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/base/format.h"
#include "core/spec/sweep_spec.h"

namespace attnscope::cli {

Args::Args(const CommandDef& def, const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      if (static_cast<int>(positionals_.size()) >= def.max_positionals)
        throw UsageError("unexpected argument '" + a + "' for '" + def.name + "' (see attnscope " + def.name + " --help)");
      positionals_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), val;
    bool inlineValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      val = name.substr(eq + 1);
      name = name.substr(0, eq);
      inlineValue = true;
    }
    auto it = std::find_if(def.options.begin(), def.options.end(), [&](const OptionDef& o) { return o.name == name; });
    if (it == def.options.end())
      throw UsageError("unknown option '--" + name + "' for '" + def.name + "' (see attnscope " + def.name + " --help)");
    if (it->metavar.empty()) {
      if (inlineValue) throw UsageError("option '--" + name + "' takes no value");
      values_[name] = "";
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argv.size()) throw UsageError("option '--" + name + "' needs a value (" + it->metavar + ")");
      val = argv[++i];
    }
    if (it->repeatable) repeated_[name].push_back(val);
    else if (values_.count(name)) throw UsageError("option '--" + name + "' given twice");
    values_[name] = val;
  }
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = repeated_.find(name);
  return it == repeated_.end() ? std::vector<std::string>{} : it->second;
}

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

int Args::intValue(const std::string& name, int fallback, int min_value, int max_value) const {
  auto v = value(name);
  if (!v) return fallback;
  int64_t x = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (v->empty() || ec != std::errc() || end != v->data() + v->size() || x < min_value || x > max_value)
    throw UsageError("--" + name + " must be an integer in " + std::to_string(min_value) + ".." +
                     std::to_string(max_value) + " (got '" + *v + "')");
  return static_cast<int>(x);
}

std::string guideSection(const std::string& command) {
  // Each command's section of the user guide; the anchors are GitHub's for its headings (the
  // CLI test holds every one to a heading of docs/USER_GUIDE.md).
  static const std::pair<const char*, const char*> kSections[] = {
      {"gui", "the-desktop-application"},
      {"backends", "backends"},
      {"explain", "why-did-torch-pick-that-kernel-attnscope-explain"},
      {"frontier", "how-far-can-i-go-on-this-card-attnscope-frontier"},
      {"record", "your-own-program-attnscope-record"},
      {"merge", "sweeps-on-a-cluster"},
      {"slurm", "sweeps-on-a-cluster"},
  };
  std::string where = "docs/USER_GUIDE.md";
  if (command.empty()) return where;
  for (const auto& [name, anchor] : kSections)
    if (command == name) return where + "#" + anchor;
  return where + "#the-command-line";  // run, sweep, runs, show, compare, export, report, check
}

std::string helpText(const CommandDef& def) {
  std::ostringstream os;
  os << "usage: attnscope " << def.synopsis << "\n\n" << def.summary << "\n";
  if (!def.options.empty()) {
    os << "\noptions:\n";
    size_t width = 0;
    for (const auto& o : def.options) width = std::max(width, o.name.size() + o.metavar.size() + 3);
    for (const auto& o : def.options) {
      std::string left = "--" + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
      os << "  " << left << std::string(width + 2 - left.size(), ' ') << o.help << "\n";
    }
    os << "  --help" << std::string(width - 4, ' ') << "show this help\n";
  }
  if (!def.details.empty()) os << "\n" << def.details << "\n";
  os << "\nGuide: " << guideSection(def.name) << "\n";
  return os.str();
}

std::vector<std::string> splitList(const std::string& option, const std::string& text) {
  std::string problem;
  std::vector<std::string> values = splitAxisList(text, &problem);
  if (values.empty()) throw UsageError("--" + option + ": " + problem);
  return values;
}

int64_t parseBytes(const std::string& option, const std::string& text) {
  const auto bytes = parseByteSize(text);
  if (!bytes) throw UsageError("--" + option + " must be a size such as 8GiB, 512MiB or 1000000 (got '" + text + "')");
  if (!(*bytes <= static_cast<double>(kMaxBytesOption)))
    throw UsageError("--" + option + " " + text + " is too large (at most " + std::to_string(kMaxBytesOption) +
                     " bytes, 1 EiB)");
  return static_cast<int64_t>(*bytes);
}

}  // namespace attnscope::cli
