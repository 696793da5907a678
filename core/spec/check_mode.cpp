#include "core/spec/check_mode.h"

namespace attnscope {

std::string_view toString(CheckMode m) {
  switch (m) {
    case CheckMode::automatic: return "auto";
    case CheckMode::full: return "full";
    case CheckMode::sampled: return "sampled";
    case CheckMode::off: return "off";
  }
  return "?";
}

std::optional<CheckMode> parseCheckMode(std::string_view text) {
  for (auto m : {CheckMode::automatic, CheckMode::full, CheckMode::sampled, CheckMode::off})
    if (toString(m) == text) return m;
  return std::nullopt;
}

}  // namespace attnscope
