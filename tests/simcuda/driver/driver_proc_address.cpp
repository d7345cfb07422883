// cuGetProcAddress (CUDA 13: cuGetProcAddress_v2): how the runtime and libraries (cuBLAS, NCCL,
// Triton through cudaGetDriverEntryPoint) find driver entry points. `symbol` is the base name
// ("cuMemAlloc"); the answer is the entry point with the ABI of that name as of `cudaVersion`
// (cuMemAlloc -> cuMemAlloc_v2 for 3.2 and later, cuCtxCreate -> cuCtxCreate_v4 for 12.5 and
// later, ...). The simulator exports the newest ABI of each call, and the older ones only where
// binaries built against older headers are common (cuCtxCreate_v2 and _v3: CUDA 12's samples and
// libraries create contexts through them); a request for an older ABI it lacks is
// CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND (this driver has no such
// function), and so is a name it does not export at all. Per-thread-stream variants (_ptsz/_ptds) are not exported, so
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM gets the default-stream entry point. The lookup is
// dlsym on libcuda.so.1 itself, so whatever it returns is what dlsym(libcuda, name) would.
#include <dlfcn.h>
#include <string.h>

#include <string>

#include "driver_internal.h"

namespace {

struct Versioned {
  const char* base;
  const char* symbol;
  int since;  // the CUDA version that introduced this ABI
};

// The versioned names cuda.h maps base names to, for the calls this driver exports; several ABIs of
// one name newest first.
const Versioned kVersioned[] = {
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020},
    {"cuCtxCreate", "cuCtxCreate_v4", 12050},
    {"cuCtxCreate", "cuCtxCreate_v3", 11040},
    {"cuCtxCreate", "cuCtxCreate_v2", 3020},
    {"cuCtxDestroy", "cuCtxDestroy_v2", 4000},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000},
    {"cuModuleGetGlobal", "cuModuleGetGlobal_v2", 3020},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020},
    {"cuMemAlloc", "cuMemAlloc_v2", 3020},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020},
    {"cuMemFree", "cuMemFree_v2", 3020},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020},
    {"cuMemAllocHost", "cuMemAllocHost_v2", 3020},
    {"cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2", 3020},
    {"cuMemHostRegister", "cuMemHostRegister_v2", 6050},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", 3020},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", 3020},
    {"cuMemcpyDtoD", "cuMemcpyDtoD_v2", 3020},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", 3020},
    {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", 3020},
    {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", 3020},
    {"cuMemsetD8", "cuMemsetD8_v2", 3020},
    {"cuMemsetD16", "cuMemsetD16_v2", 3020},
    {"cuMemsetD32", "cuMemsetD32_v2", 3020},
    {"cuStreamDestroy", "cuStreamDestroy_v2", 4000},
    {"cuEventDestroy", "cuEventDestroy_v2", 4000},
    {"cuEventElapsedTime", "cuEventElapsedTime_v2", 12080},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 11000},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", 11000},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000},
};

void* self_handle() {
  static void* handle = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&self_handle), &info) || !info.dli_fname) return static_cast<void*>(nullptr);
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return handle;
}

CUresult lookup(const char* symbol, void** pfn, int version, CUdriverProcAddressQueryResult* status) {
  auto fail = [&](CUdriverProcAddressQueryResult why) {
    *pfn = nullptr;
    if (status) *status = why;
    return CUDA_ERROR_NOT_FOUND;
  };
  if (strncmp(symbol, "cu", 2) != 0 || strncmp(symbol, "cuda", 4) == 0) return fail(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  std::string name = symbol;
  bool versioned = false, found = false;
  for (const Versioned& v : kVersioned)
    if (name == v.base) {
      versioned = true;
      if (version < v.since) continue;  // an older ABI: perhaps the next entry
      name = v.symbol;
      found = true;
      break;
    }
  if (versioned && !found) return fail(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);  // the older ABI: not here
  void* handle = self_handle();
  void* f = handle ? dlsym(handle, name.c_str()) : nullptr;
  if (!f) return fail(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  *pfn = f;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

using namespace simcuda;

extern "C" {

SIMCUDA_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {  // cuGetProcAddress_v2
  auto body = [&]() -> CUresult {
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~cuuint64_t(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
      return CUDA_ERROR_INVALID_VALUE;
    return lookup(symbol, pfn, cuda_version, status);
  };
  // Works before cuInit (the runtime finds cuInit itself this way); traced once the driver is up.
  if (!driver_initialized()) return body();
  cuGetProcAddress_v2_params params{symbol, pfn, cuda_version, flags, status};
  return driver::traced(CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2, "cuGetProcAddress_v2", SIM_CALL_OTHER, &params,
                        [&](ApiScope&) { return body(); });
}

}  // extern "C"
