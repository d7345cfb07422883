// Test helper: registers simulated kernels the way nvcc's start-up code does, and launches them
// with a device duration, through the real runtime API of the simulated libcudart.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

extern "C" {
void** __cudaRegisterFatBinary(void* fat_cubin);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun, const char* device_name,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bdim, dim3* gdim, int* wsize);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_stub);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                               cudaStream_t stream);
void simcuda_kernel_duration_from_argument(const char* mangled_name);
}

namespace simtest {

// A kernel "stub": only its address matters, as with nvcc's host stubs.
struct TestKernel {
  char stub = 0;
  const char* name;
};

inline void register_kernel(TestKernel& k, const char* mangled_name) {
  static char fatbin[16];
  static void** handle = __cudaRegisterFatBinary(fatbin);
  k.name = mangled_name;
  simcuda_kernel_duration_from_argument(mangled_name);
  __cudaRegisterFunction(handle, &k.stub, const_cast<char*>(mangled_name), mangled_name, -1, nullptr, nullptr,
                         nullptr, nullptr, nullptr);
}

inline cudaError_t launch(const TestKernel& k, int64_t duration_ns, cudaStream_t stream = nullptr) {
  void* args[] = {&duration_ns};
  return cudaLaunchKernel(&k.stub, dim3(1), dim3(32), args, 0, stream);
}

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace simtest
