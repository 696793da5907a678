#include "kernels/builtin_session.h"

#include "kernels/builtin_backends.h"
#ifdef ATTNSCOPE_HAVE_CUPTI
#include "core/cupti/cupti_capture.h"
#endif

namespace attnscope {

Session& builtinSession() {
  // Never destroyed, like the CUPTI capture it holds (CUPTI's thread may call back during exit).
  static Session* session = new Session(
      []() -> TraceCapture* {
#ifdef ATTNSCOPE_HAVE_CUPTI
        return &CuptiCapture::start();
#else
        return nullptr;
#endif
      },
      [](BackendRegistry& r) { registerBuiltinBackends(r); });
  return *session;
}

}  // namespace attnscope
