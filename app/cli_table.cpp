#include "app/cli_table.h"

#include <algorithm>
#include <cctype>

namespace attnscope::cli {
namespace {
bool numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
}
}  // namespace

std::string Table::render() const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) w[c] = header_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, bool head) {
    std::string l;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(w[c] - std::min(w[c], cell.size()), ' ');
      const bool last = c + 1 == w.size();
      if (!head && numeric(cell)) l += pad + cell;
      else l += cell + (last ? "" : pad);
      if (!last) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_, true);
  std::vector<std::string> rule;
  for (size_t c : w) rule.push_back(std::string(c, '-'));
  line(rule, true);
  for (const auto& r : rows_) line(r, false);
  return out;
}

}  // namespace attnscope::cli
