#pragma once
// Thrown from inside long work (a backend's run, input generation, the accuracy check) when the
// user cancelled it; the engine turns it into status cancelled.

#include <stdexcept>

namespace attnscope {

struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace attnscope
