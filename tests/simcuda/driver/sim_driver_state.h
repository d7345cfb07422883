// State private to libcuda.so.1 that its own files share (not exported to the other sim libs).
#pragma once

#include "sim_driver.h"

namespace simcuda {

const CuptiSink* cupti_sink();  // the installed sink, or nullptr
uint32_t context_uid(CUcontext ctx);

}  // namespace simcuda
