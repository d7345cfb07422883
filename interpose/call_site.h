// call_site.h: a return address as a person reads it, "c10::cuda::stream_synchronize()+0x2c
// (libc10_cuda.so)". Flusher thread only: dladdr takes the loader's lock and demangling allocates.
#pragma once

#include <string>

namespace gapwatch {

std::string describe_call_site(const void* address);

}  // namespace gapwatch
