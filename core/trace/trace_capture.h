#pragma once
// A seam for device-side trace capture (CUPTI today; an injected process later). The engine
// brackets each run with beginRun/endRun; the capture returns plain events.

#include <string>

#include "core/trace/trace_event.h"

namespace attnscope {

class TraceCapture {
 public:
  virtual ~TraceCapture() = default;
  // False when capture could not start; note() says why (shown once and stored with runs).
  virtual bool active() const = 0;
  virtual std::string note() const = 0;
  virtual void beginRun() = 0;
  // Flushes and returns the device events since beginRun (events, dropped count, note).
  virtual Trace endRun() = 0;
};

}  // namespace attnscope
