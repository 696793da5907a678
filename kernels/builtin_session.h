#pragma once
// The process's Session (core/engine/session.h) with this build's capture and backends: CUPTI when
// the build has it, then registerBuiltinBackends. Made on first use; the CLI and the GUI share
// this one function so their set-up cannot drift apart.

#include "core/engine/session.h"

namespace attnscope {

Session& builtinSession();

}  // namespace attnscope
