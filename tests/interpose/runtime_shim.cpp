// Another library that defines a CUDA runtime symbol and forwards it, as some frameworks' shims
// and other tools do: put ahead of libgapwatch.so in LD_PRELOAD, the process resolves
// cudaLaunchKernel to it, not to gapwatch (probe_line_test.py).
#include <dlfcn.h>

#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"))) cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block,
                                                                              void** args, size_t shared_mem,
                                                                              cudaStream_t stream) {
  using Launch = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  static Launch next = reinterpret_cast<Launch>(dlsym(RTLD_NEXT, "cudaLaunchKernel"));
  return next ? next(func, grid, block, args, shared_mem, stream) : cudaErrorUnknown;
}
