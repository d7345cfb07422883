// reader/kineto_api_table.h: what kind of call a trace's runtime or driver event is, by its name.
//
// A Kineto trace names its host calls as the CUDA runtime and driver (and, on ROCm, HIP) name them:
// cudaLaunchKernel, cuLaunchKernel, hipMemcpyWithStream, ... Each maps to the ApiKind the
// recorder gives the same call (interpose/cuda_api_map.cpp decides it there from CUPTI's callback
// ids and parameters), and to whether it waits for the device by its nature. A name not listed is
// API_KIND_OTHER: kept, joined to its GPU work by correlation, but no launch, copy or sync.
#pragma once

#include "reader/events.h"

#include <string_view>

namespace gapwatch {

struct ApiClass {
  v1::ApiKind kind = v1::API_KIND_OTHER;
  bool blocked = false;  // the call waits for the device by its nature (as the recorder flags it)
};

// By the name without its version suffix and per-thread variant (reader/api_name.h).
ApiClass classifyApi(std::string_view full_name);

}  // namespace gapwatch
