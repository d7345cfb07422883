// Vector addition, the first sample everyone runs: three device buffers, two copies in, one kernel,
// one copy out, three frees. Nothing loops.
//
// gapwatch-expect: api.malloc=3 api.memcpy=3 api.launch=1 api.free=3
// gapwatch-expect: device.kernel=1 device.memcpy=3 device.memset=0
// gapwatch-expect: report.launches=1 report.steps=0
// gapwatch-output: Done
#include "sample_helpers.h"

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] + 0.0f;
}

int main() {
  const int numElements = 50000;
  const size_t size = numElements * sizeof(float);
  printf("[Vector addition of %d elements]\n", numElements);
  float* h_A = static_cast<float*>(malloc(size));
  float* h_B = static_cast<float*>(malloc(size));
  float* h_C = static_cast<float*>(malloc(size));
  for (int i = 0; i < numElements; ++i) h_A[i] = rand() / float(RAND_MAX), h_B[i] = rand() / float(RAND_MAX);

  float *d_A = nullptr, *d_B = nullptr, *d_C = nullptr;
  checkCudaErrors(cudaMalloc(&d_A, size));
  checkCudaErrors(cudaMalloc(&d_B, size));
  checkCudaErrors(cudaMalloc(&d_C, size));
  checkCudaErrors(cudaMemcpy(d_A, h_A, size, cudaMemcpyHostToDevice));
  checkCudaErrors(cudaMemcpy(d_B, h_B, size, cudaMemcpyHostToDevice));

  int threadsPerBlock = 256;
  int blocksPerGrid = (numElements + threadsPerBlock - 1) / threadsPerBlock;
  printf("CUDA kernel launch with %d blocks of %d threads\n", blocksPerGrid, threadsPerBlock);
  vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_B, d_C, numElements);
  getLastCudaError("vectorAdd launch failed");

  checkCudaErrors(cudaMemcpy(h_C, d_C, size, cudaMemcpyDeviceToHost));
  checkCudaErrors(cudaFree(d_A));
  checkCudaErrors(cudaFree(d_B));
  checkCudaErrors(cudaFree(d_C));
  free(h_A);
  free(h_B);
  free(h_C);
  printf("Done\n");
  return 0;
}
