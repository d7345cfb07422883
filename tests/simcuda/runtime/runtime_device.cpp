// Device management, errors and versions of the simulated runtime.
#include "runtime_internal.h"

namespace simcuda::runtime {
namespace {
thread_local cudaError_t t_last_error = cudaSuccess;
}

cudaError_t record_error(cudaError_t error) {
  if (error != cudaSuccess) t_last_error = error;
  return error;
}

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  cudaGetDeviceCount_v3020_params params{count};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, "cudaGetDeviceCount", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!count) return cudaErrorInvalidValue;
                  *count = device_count();
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGetDevice(int* device) {
  cudaGetDevice_v3020_params params{device};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!device) return cudaErrorInvalidValue;
                  *device = current_device();
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaSetDevice(int device) {
  cudaSetDevice_v3020_params params{device};
  ensure_initialized();
  if (device < 0 || device >= device_count()) return record_error(cudaErrorInvalidDevice);
  set_current_device(device);
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020, "cudaSetDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return cudaSuccess; });
}

SIMCUDA_EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t e = traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, "cudaGetLastError", SIM_CALL_OTHER,
                         nullptr, [&](ApiScope&) { return t_last_error; });
  t_last_error = cudaSuccess;  // after traced(), which would record the error it returns again
  return e;
}

SIMCUDA_EXPORT cudaError_t cudaPeekAtLastError(void) {
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, "cudaPeekAtLastError", SIM_CALL_OTHER, nullptr,
                [&](ApiScope&) { return t_last_error; });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceReset(void) {
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, "cudaDeviceReset", SIM_CALL_OTHER, nullptr,
                [&](ApiScope&) {
                  reset_device(current_device());
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDriverGetVersion(int* version) {
  cudaDriverGetVersion_v3020_params params{version};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020, "cudaDriverGetVersion", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!version) return cudaErrorInvalidValue;
                  *version = CUDA_VERSION;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  cudaRuntimeGetVersion_v3020_params params{version};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020, "cudaRuntimeGetVersion", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!version) return cudaErrorInvalidValue;
                  *version = CUDART_VERSION;
                  return cudaSuccess;
                });
}

}  // extern "C"
