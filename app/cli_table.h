#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::cli {

// `text` safe to print on a terminal: control characters (C0, DEL and the UTF-8-encoded C1 range,
// which includes the escape-sequence introducers) become \xNN, a backslash stays a backslash.
// Names and notes come from users and files; printed raw, "\x1b]2;..." retitles the terminal.
std::string printable(std::string_view text);

// A plain-text table for people: columns padded to their widest cell; numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Cells are passed through printable().
  void add(std::vector<std::string> row);
  std::string render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace attnscope::cli
