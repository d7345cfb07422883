// The few helpers NVIDIA's samples take from helper_cuda.h, written here: error checks that end the
// program with the failing call's name, and a device pick that queries properties the way the
// samples' findCudaDevice does. The programs in this directory use nothing else.
#pragma once

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define checkCudaErrors(call) checkCuda((call), #call, __FILE__, __LINE__)

inline void checkCuda(cudaError_t result, const char* what, const char* file, int line) {
  if (result == cudaSuccess) return;
  fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\"\n", file, line, int(result), cudaGetErrorName(result), what);
  exit(EXIT_FAILURE);
}

#define getLastCudaError(message) checkCuda(cudaGetLastError(), message, __FILE__, __LINE__)

// Cores per SM by compute capability, for the start-up banner the samples print.
inline int coresPerSm(int major, int minor) {
  if (major == 9) return 128;
  if (major == 8) return minor == 0 ? 64 : 128;
  if (major == 7) return 64;
  return 128;
}

// Picks the device with the most SMs, prints what it is, makes it current.
inline int findCudaDevice() {
  int count = 0;
  checkCudaErrors(cudaGetDeviceCount(&count));
  if (count == 0) {
    fprintf(stderr, "no CUDA device\n");
    exit(EXIT_FAILURE);
  }
  int best = 0, best_sms = -1;
  for (int d = 0; d < count; ++d) {
    int sms = 0, mode = 0;
    checkCudaErrors(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
    checkCudaErrors(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d));
    if (mode != cudaComputeModeProhibited && sms > best_sms) best = d, best_sms = sms;
  }
  cudaDeviceProp prop;
  checkCudaErrors(cudaGetDeviceProperties(&prop, best));
  checkCudaErrors(cudaSetDevice(best));
  printf("GPU Device %d: \"%s\" with compute capability %d.%d, %d SMs, %d cores\n", best, prop.name, prop.major,
         prop.minor, prop.multiProcessorCount, prop.multiProcessorCount * coresPerSm(prop.major, prop.minor));
  return best;
}
