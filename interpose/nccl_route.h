// nccl_route.h: which of gapwatch's two NCCL routes records a call. The LD_PRELOAD hooks
// (nccl_hooks.cpp) see every call made through the dynamic symbols, with the communicator's handle;
// the profiler plugin (nccl_profiler_plugin.cpp) sees every call NCCL makes, statically linked or
// not. A call is recorded once: by the hook when one is around it on this thread, else by the
// plugin.
#pragma once

namespace gapwatch {

// > 0 while an NCCL hook is inside the real function on this thread.
extern thread_local int t_nccl_hook_depth __attribute__((tls_model("initial-exec")));

inline bool nccl_hook_records_this_call() { return t_nccl_hook_depth > 0; }

}  // namespace gapwatch
