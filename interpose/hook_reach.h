// hook_reach.h: whether the process's calls of a symbol reach gapwatch's hook of it, decided once
// at start so that Hello's probe list and the stderr line say what is really recorded.
#pragma once

#include <string>

namespace gapwatch {

struct HookReach {
  bool live = false;
  // When another library defines the symbol ahead of gapwatch: its file name. The hook is live
  // then only because that library forwards to the next definition (dlsym(RTLD_NEXT)), as shims
  // do, and gapwatch's is the next one.
  std::string behind;
};

// `name`: a symbol gapwatch defines as a hook (cudaLaunchKernel, ncclAllReduce).
HookReach hook_reach(const char* name);

}  // namespace gapwatch
