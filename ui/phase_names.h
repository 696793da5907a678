#pragma once
// What a phase's name says about it, the same in Breakdown and the Timeline: a stack's layers are
// top-level phases named L<n> ("L3", with the layer's phases inside), and a tensor-parallel run's
// communication is a phase named "comm" (possibly nested: "L2/comm").

#include <algorithm>
#include <string_view>

namespace attnscope::ui {

inline bool isLayerPhase(std::string_view name) {
  if (name.size() < 2 || name.size() > 5 || name[0] != 'L' || name[1] == '0') return false;
  return std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A path ("L2/comm") or a name: its last part is "comm".
inline bool isCommPhase(std::string_view path) {
  const size_t slash = path.rfind('/');
  return path.substr(slash == std::string_view::npos ? 0 : slash + 1) == "comm";
}

}  // namespace attnscope::ui
