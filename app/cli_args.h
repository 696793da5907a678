#pragma once
// A small command-line parser: --name value, --name=value, flags and positionals, with --help
// text generated from the same option table the parser uses.

#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnscope::cli {

// Bad input: the message goes to stderr and the process exits with 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptionDef {
  std::string name;     // without dashes: "heads"
  std::string metavar;  // empty for a flag
  std::string help;
  bool repeatable = false;  // may be given several times (Args::values)
};

struct CommandDef {
  std::string name;
  std::string synopsis;  // "run --backend ID [SPEC] ..."
  std::string summary;   // one line
  std::vector<OptionDef> options;
  int max_positionals = 0;
  std::string details;  // extra help text
};

class Args {
 public:
  // Throws UsageError naming the unknown option or the missing value.
  Args(const CommandDef& def, const std::vector<std::string>& argv);
  bool flag(const std::string& name) const { return values_.count(name) > 0; }
  std::optional<std::string> value(const std::string& name) const;
  // Every value of a repeatable option, in the order given.
  std::vector<std::string> values(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  // Throws UsageError naming the option and the allowed range.
  int intValue(const std::string& name, int fallback, int min_value,
               int max_value = std::numeric_limits<int>::max()) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
  std::vector<std::string> positionals_;
};

// Where in the user guide (docs/USER_GUIDE.md, in the checkout and the docs) a command is
// described: "docs/USER_GUIDE.md#anchor"; the guide itself for "" (attnscope --help).
std::string guideSection(const std::string& command);
// The command's usage, options and details, ending with its guide section.
std::string helpText(const CommandDef& def);
// "a,b,c" or "a, b, c" -> {a, b, c} (core's splitAxisList, the window's grammar too). Throws
// UsageError naming --option for an empty item ("a,,c", "", "a,") or an item given twice.
std::vector<std::string> splitList(const std::string& option, const std::string& text);
// "512MiB", "8GiB", "1e9", "1000000" -> bytes, at most kMaxBytesOption. Throws UsageError
// naming the option.
inline constexpr int64_t kMaxBytesOption = int64_t{1} << 60;
int64_t parseBytes(const std::string& option, const std::string& text);

}  // namespace attnscope::cli
