// Kernel launches through the driver API: cuLaunchKernel, cuLaunchKernelEx (CUlaunchConfig and its
// attributes) and cuLaunchCooperativeKernel. A launch queues one kernel op on its stream exactly as
// the runtime's launches do (same API time, same OpRequest), so the CUPTI kernel record has the
// same shape on both paths, named by the CUfunction's mangled name, with the launch's correlation
// id. Its device time comes from kernel_duration_ns() (a per-name table, a duration argument, or
// the grid's shape). Arguments come from kernelParams or from `extra`
// (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE, the packed argument buffer: its first bytes are the
// first argument); giving both is CUDA_ERROR_INVALID_VALUE, as documented.
//
// Not simulated: stream capture of driver launches (the capture state lives in the runtime), and
// launch attributes that change how a kernel runs (clusters, priorities, programmatic
// serialization) are checked for validity but do not change the device model.
#include <algorithm>

#include "driver_internal.h"

namespace simcuda::driver {
namespace {

struct Shape {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
};

// The arguments kernel_duration_ns() sees: kernelParams itself, or a one-entry array pointing at
// the packed buffer of `extra`.
CUresult resolve_args(void** kernel_params, void** extra, void** packed[1], void*** out) {
  *out = kernel_params;
  if (!extra) return CUDA_SUCCESS;
  if (kernel_params) return CUDA_ERROR_INVALID_VALUE;
  void* buffer = nullptr;
  size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = static_cast<size_t*>(extra[i + 1]);
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (buffer && size && *size) {
    packed[0] = static_cast<void**>(buffer);
    *out = reinterpret_cast<void**>(packed);
  }
  return CUDA_SUCCESS;
}

CUresult validate(const Function* f, const Shape& s, bool cooperative) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < 3; ++i)
    if (!s.grid[i] || !s.block[i]) return CUDA_ERROR_INVALID_VALUE;
  if (s.block[0] > 1024 || s.block[1] > 1024 || s.block[2] > 64 ||
      uint64_t(s.block[0]) * s.block[1] * s.block[2] > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (s.grid[1] > 65535 || s.grid[2] > 65535 || s.grid[0] > 2147483647u) return CUDA_ERROR_INVALID_VALUE;
  if (s.shared > unsigned(f->max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
  if (cooperative) {
    // Every block must be resident at once: 132 SMs x (2048 / threads per block, at most 32).
    uint64_t threads = uint64_t(s.block[0]) * s.block[1] * s.block[2];
    uint64_t per_sm = std::min<uint64_t>(32, std::max<uint64_t>(1, 2048 / threads));
    if (uint64_t(s.grid[0]) * s.grid[1] * s.grid[2] > 132 * per_sm) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  return CUDA_SUCCESS;
}

CUresult launch(ApiScope& scope, const Function* f, const Shape& s, CUstream handle, void** kernel_params,
                void** extra, bool cooperative) {
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult r = validate(f, s, cooperative); r != CUDA_SUCCESS) return r;
  void** packed[1] = {nullptr};
  void** args = nullptr;
  if (CUresult r = resolve_args(kernel_params, extra, packed, &args); r != CUDA_SUCCESS) return r;
  Stream* stream = stream_of(handle);
  scope.set_stream(stream_id(stream));
  spend(config().launch_api_ns);
  OpRequest request;
  request.kind = SIM_OP_KERNEL;
  request.stream = stream;
  request.duration_ns = kernel_duration_ns(f->name, s.grid, s.block, args);
  request.name = f->name;
  request.correlation_id = scope.correlation_id();
  for (int i = 0; i < 3; ++i) {
    request.grid[i] = int(s.grid[i]);
    request.block[i] = int(s.block[i]);
  }
  scope.set_op(enqueue(request));
  return CUDA_SUCCESS;
}

// The symbolName CUPTI gives a launch callback: the kernel's name, when the handle is valid.
const char* symbol_of(CUfunction f) {
  const Function* fn = as_function(f);
  return fn ? fn->name : nullptr;
}

}  // namespace
}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

extern "C" {

SIMCUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                       CUstream stream, void** kernel_params, void** extra) {
  cuLaunchKernel_params params{f, gx, gy, gz, bx, by, bz, shared, stream, kernel_params, extra};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", SIM_CALL_LAUNCH, &params,
                [&](ApiScope& s) {
                  return launch(s, as_function(f), Shape{{gx, gy, gz}, {bx, by, bz}, shared}, stream,
                                kernel_params, extra, false);
                },
                symbol_of(f));
}

SIMCUDA_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                  unsigned int bx, unsigned int by, unsigned int bz,
                                                  unsigned int shared, CUstream stream, void** kernel_params) {
  cuLaunchCooperativeKernel_params params{f, gx, gy, gz, bx, by, bz, shared, stream, kernel_params};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", SIM_CALL_LAUNCH,
                &params,
                [&](ApiScope& s) {
                  return launch(s, as_function(f), Shape{{gx, gy, gz}, {bx, by, bz}, shared}, stream,
                                kernel_params, nullptr, true);
                },
                symbol_of(f));
}

SIMCUDA_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernel_params,
                                         void** extra) {
  cuLaunchKernelEx_params params{config, f, kernel_params, extra};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", SIM_CALL_LAUNCH, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!config) return CUDA_ERROR_INVALID_VALUE;
                  if (config->numAttrs && !config->attrs) return CUDA_ERROR_INVALID_VALUE;
                  bool cooperative = false;
                  for (unsigned i = 0; i < config->numAttrs; ++i) {
                    const CUlaunchAttribute& a = config->attrs[i];
                    switch (a.id) {
                      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: cooperative = a.value.cooperative != 0; break;
                      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
                        unsigned cx = a.value.clusterDim.x, cy = a.value.clusterDim.y, cz = a.value.clusterDim.z;
                        if (!cx || !cy || !cz || config->gridDimX % cx || config->gridDimY % cy ||
                            config->gridDimZ % cz || cx * cy * cz > 16)
                          return CUDA_ERROR_INVALID_CLUSTER_SIZE;
                        break;
                      }
                      default:
                        break;  // the rest are accepted and do not change the model
                    }
                  }
                  Shape shape{{config->gridDimX, config->gridDimY, config->gridDimZ},
                              {config->blockDimX, config->blockDimY, config->blockDimZ},
                              config->sharedMemBytes};
                  return launch(s, as_function(f), shape, config->hStream, kernel_params, extra, cooperative);
                },
                symbol_of(f));
}

}  // extern "C"
