// Zero-copy host memory: the kernel reads and writes host memory mapped into the device's address
// space, so there is no copy at all, only the kernel and the synchronisation that waits for it. Two
// buffers come from cudaHostAlloc(cudaHostAllocMapped), one is malloc'ed and registered mapped.
//
// gapwatch-expect: api.host_alloc=3 api.host_free=3 api.launch=1 api.device_sync=1
// gapwatch-expect: device.kernel=1 device.memcpy=0 device.memset=0
// gapwatch-expect: report.launches=1 report.steps=0
// gapwatch-output: zero-copy kernel finished
#include <string.h>

#include "sample_helpers.h"

__global__ void vectorAddGPU(const float* a, const float* b, float* c, int N) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < N) c[idx] = a[idx] + b[idx];
}

int main() {
  checkCudaErrors(cudaSetDeviceFlags(cudaDeviceMapHost));
  int device = findCudaDevice();
  cudaDeviceProp prop;
  checkCudaErrors(cudaGetDeviceProperties(&prop, device));
  if (!prop.canMapHostMemory) {
    fprintf(stderr, "Device %d does not support mapping CPU host memory\n", device);
    return EXIT_FAILURE;
  }
  const int nelem = 1 << 20;
  const size_t bytes = nelem * sizeof(float);
  float *a, *b, *c, *d_a, *d_b, *d_c;
  checkCudaErrors(cudaHostAlloc(&a, bytes, cudaHostAllocMapped));
  checkCudaErrors(cudaHostAlloc(&b, bytes, cudaHostAllocMapped));
  void* c_raw = nullptr;
  if (posix_memalign(&c_raw, 4096, bytes) != 0) return EXIT_FAILURE;
  c = static_cast<float*>(c_raw);
  checkCudaErrors(cudaHostRegister(c, bytes, cudaHostRegisterMapped));
  for (int i = 0; i < nelem; i++) a[i] = rand() / float(RAND_MAX), b[i] = rand() / float(RAND_MAX);
  memset(c, 0, bytes);

  checkCudaErrors(cudaHostGetDevicePointer(&d_a, a, 0));
  checkCudaErrors(cudaHostGetDevicePointer(&d_b, b, 0));
  checkCudaErrors(cudaHostGetDevicePointer(&d_c, c, 0));
  unsigned int flags = 0;
  checkCudaErrors(cudaHostGetFlags(&flags, a));

  dim3 block(256), grid((unsigned)ceil(nelem / (float)block.x));
  vectorAddGPU<<<grid, block>>>(d_a, d_b, d_c, nelem);
  checkCudaErrors(cudaDeviceSynchronize());
  getLastCudaError("vectorAddGPU() execution failed");
  printf("zero-copy kernel finished (host flags %u)\n", flags);

  checkCudaErrors(cudaFreeHost(a));
  checkCudaErrors(cudaFreeHost(b));
  checkCudaErrors(cudaHostUnregister(c));
  free(c);
  return 0;
}
