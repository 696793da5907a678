#include "app/cli_table.h"

#include <algorithm>
#include <cctype>

namespace attnscope::cli {
namespace {
bool numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
}
}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    static const char hex[] = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      escape(c);
      escape(static_cast<unsigned char>(text[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void Table::add(std::vector<std::string> row) {
  for (auto& cell : row) cell = printable(cell);
  rows_.push_back(std::move(row));
}

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
