// The few real driver entry points the simulator offers: cuInit (which runs the injection) and what
// a profiler or the runtime asks of the driver at start-up.
#include <string.h>

#include "sim_driver.h"

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

SIMCUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  ensure_initialized();
  *count = device_count();
  return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  strncpy(name, "gapwatch simulated GPU", size_t(len) - 1);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = primary_context(current_device());
  return CUDA_SUCCESS;
}

SIMCUDA_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = error == CUDA_SUCCESS ? "no error" : "simulated driver error";
  return CUDA_SUCCESS;
}

}  // extern "C"
