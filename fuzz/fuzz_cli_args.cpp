// Fuzzes the command-line parser (app/cli_args) the way the run and sweep commands use it: the
// input is an argv with NUL between arguments; values then go through intValue, parseBytes,
// splitList and the spec fields. Bad input must be a UsageError (exit 2), never anything else.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "app/cli_args.h"
#include "core/spec/workload_spec.h"
#include "fuzz/fuzz_support.h"

using namespace attnscope;
using namespace attnscope::cli;

namespace {

// The shape of `attnscope sweep`: list-valued spec options, counts, a size, flags, positionals.
const CommandDef& sweepLikeDef() {
  static const CommandDef def = [] {
    CommandDef d{"sweep", "sweep --backends ID,... [SPEC,...]", "fuzzed", {}, 1, {}};
    for (const char* name : {"batch", "heads", "kv-heads", "seq", "seq-kv", "head-dim", "width", "dtype", "mask",
                             "mask-layout", "scale", "seed"})
      d.options.push_back({name, "V,...", "spec field"});
    d.options.push_back({"backends", "ID,...", "backends"});
    d.options.push_back({"reps", "N", "repetitions"});
    d.options.push_back({"warmup", "N", "warm-up runs"});
    d.options.push_back({"budget", "BYTES", "memory budget"});
    d.options.push_back({"json", "", "flag"});
    d.options.push_back({"db", "FILE", "database"});
    return d;
  }();
  return def;
}

// The run hardening gives splitList the option's name (for its messages) and intValue a maximum;
// either form is accepted so this target builds on both sides of that change.
template <typename S>
std::vector<std::string> listItems(const S& option, const S& text) {
  if constexpr (requires { splitList(option, text); }) return splitList(option, text);
  else return splitList(text);
}

template <typename A>
int intOption(const A& args, const std::string& name, int fallback, int min_value) {
  if constexpr (requires { args.intValue(name, fallback, min_value, 1000000); })
    return args.intValue(name, fallback, min_value, 1000000);
  else return args.intValue(name, fallback, min_value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> argv = fuzz::splitNul({reinterpret_cast<const char*>(data), size});
  const CommandDef& def = sweepLikeDef();
  try {
    Args args(def, argv);
    if (args.positionals().size() > static_cast<size_t>(def.max_positionals)) abort();
    (void)args.flag("json");
    (void)intOption(args, "reps", 3, 1);
    (void)intOption(args, "warmup", 1, 0);
    if (auto b = args.value("budget"))
      if (parseBytes("budget", *b) < 0) {
        std::fprintf(stderr, "fuzz_cli_args: parseBytes accepted '%s' as a negative size\n", b->c_str());
        abort();
      }
    for (const auto& o : def.options) {
      auto v = args.value(o.name);
      if (!v || o.metavar != "V,...") continue;
      WorkloadSpec spec;
      for (const std::string& item : listItems(o.name, *v)) {
        if (item.empty()) abort();  // splitList promises no empty items
        (void)setField(spec, o.name, item);
      }
    }
  } catch (const UsageError&) {
  }
  (void)helpText(def);
  return 0;
}
