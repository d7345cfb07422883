// reader/kineto_api_table.h: what kind of call a trace's runtime or driver event is, by its name.
//
// A Kineto trace names its host calls as the CUDA runtime and driver (and, on ROCm, HIP) name them:
// cudaLaunchKernel, cuLaunchKernel, hipMemcpyWithStream, ... Each maps to the ApiKind the
// recorder gives the same call (interpose/cuda_api_map.cpp decides it there from CUPTI's callback
// ids and parameters), and to whether it waits for the device by its nature. A name not listed is
// API_KIND_OTHER: kept, joined to its GPU work by correlation, but no launch, copy or sync.
//
// Two forms of one rule, on purpose: the recorder classifies on the user's thread by a switch on
// the callback id, this reader by a table of names. tests/unit/api_classification_agreement_test.cpp
// reads every callback id the recorder enables, with its name from CUPTI's headers, and holds the
// two to the same kind and blocking (it found 12 disagreements when it was written, in issue 20).
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
