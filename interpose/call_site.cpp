#include "call_site.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace gapwatch {

std::string describe_call_site(const void* address) {
  Dl_info info{};
  if (!dladdr(address, &info) || !info.dli_fname) {
    char text[32];
    snprintf(text, sizeof text, "%p", address);
    return text;
  }
  const char* slash = strrchr(info.dli_fname, '/');
  std::string library = slash ? slash + 1 : info.dli_fname;
  char offset[32];
  if (info.dli_sname && info.dli_saddr) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string name = status == 0 && demangled ? demangled : info.dli_sname;
    free(demangled);
    snprintf(offset, sizeof offset, "+0x%lx",
             static_cast<unsigned long>(static_cast<const char*>(address) - static_cast<const char*>(info.dli_saddr)));
    return name + offset + " (" + library + ")";
  }
  // No exported symbol (a static function, an executable without -rdynamic): library and offset.
  snprintf(offset, sizeof offset, "+0x%lx",
           static_cast<unsigned long>(static_cast<const char*>(address) - static_cast<const char*>(info.dli_fbase)));
  return library + offset;
}

}  // namespace gapwatch
