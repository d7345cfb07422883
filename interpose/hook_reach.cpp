#include "hook_reach.h"

#include <dlfcn.h>
#include <string.h>

#include "symbol_hooks.h"

extern "C" int InitializeInjection(void);

namespace gapwatch {

namespace {

std::string file_of(void* address) {
  Dl_info info{};
  if (!dladdr(address, &info) || !info.dli_fname) return "";
  const char* slash = strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

}  // namespace

HookReach hook_reach(const char* name) {
  HookReach reach;
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&InitializeInjection), &self) || !self.dli_fname) return reach;
  void* own = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  void* ours = own ? dlsym(own, name) : nullptr;
  if (own) dlclose(own);
  if (!ours) return reach;
  // How the process binds the name: its global scope, which is what the program, its libraries and
  // every library loaded later search first. Not dlsym(RTLD_DEFAULT) from here: that searches this
  // library's own local scope as well, so loaded by the driver alone (CUDA_INJECTION64_PATH,
  // RTLD_LOCAL) it would find gapwatch's own definition whenever the real library is not global.
  void* global = dlopen(nullptr, RTLD_NOW);
  void* bound = global ? dlsym(global, name) : nullptr;
  const bool in_global_scope =
      global && dlsym(global, "InitializeInjection") == reinterpret_cast<void*>(&InitializeInjection);
  if (bound == ours) {
    reach.live = true;
    return reach;
  }
  // Another library ahead of gapwatch (earlier in LD_PRELOAD) defines it. Its forwarding call
  // (RTLD_NEXT) reaches gapwatch's when gapwatch is in the global scope with the real definition
  // after it; the real library itself coming first reaches nothing of gapwatch's.
  void* next = dlsym(RTLD_NEXT, name);
  if (bound && in_global_scope && next && file_of(bound) != file_of(next)) {
    reach.live = true;
    reach.behind = file_of(bound);
  }
  return reach;
}

}  // namespace gapwatch
