// cuInit (which runs the injection) and cuDriverGetVersion. The rest of the driver API is in
// driver_device.cpp, driver_context.cpp, driver_memory.cpp, driver_stream.cpp, driver_module.cpp,
// driver_launch.cpp, driver_errors.cpp and driver_proc_address.cpp.
#include "driver_internal.h"

using namespace simcuda;

extern "C" {

SIMCUDA_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return ensure_initialized();
}

SIMCUDA_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

}  // extern "C"
