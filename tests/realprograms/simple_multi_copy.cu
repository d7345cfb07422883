// Copy/compute overlap over several streams: each iteration copies a buffer in, runs a kernel on it
// and copies the result out, on stream i % STREAM_COUNT, so one stream's upload, another's kernel
// and a third's download can run at once on a GPU with copy engines in both directions.
//
// gapwatch-expect: api.host_alloc=8 api.host_free=8 api.malloc=8 api.free=8
// gapwatch-expect: api.memcpy_async=32 api.launch=16 api.event_record=2 api.event_sync=1
// gapwatch-expect: device.kernel=16 device.memcpy=32
// gapwatch-expect: report.launches=16
// gapwatch-output: Measured time
#include "sample_helpers.h"

#define STREAM_COUNT 4

__global__ void incKernel(int* g_out, const int* g_in, int N, int inner_reps) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < N)
    for (int i = 0; i < inner_reps; ++i) g_out[idx] = g_in[idx] + 1;
}

int main() {
  const int N = 1 << 22, iterations = 16, inner_reps = 5;
  const size_t memsize = N * sizeof(int);
  findCudaDevice();
  int *h_in[STREAM_COUNT], *h_out[STREAM_COUNT], *d_in[STREAM_COUNT], *d_out[STREAM_COUNT];
  cudaStream_t stream[STREAM_COUNT];
  for (int i = 0; i < STREAM_COUNT; ++i) {
    checkCudaErrors(cudaHostAlloc(&h_in[i], memsize, cudaHostAllocDefault));
    checkCudaErrors(cudaHostAlloc(&h_out[i], memsize, cudaHostAllocDefault));
    checkCudaErrors(cudaMalloc(&d_in[i], memsize));
    checkCudaErrors(cudaMalloc(&d_out[i], memsize));
    checkCudaErrors(cudaStreamCreate(&stream[i]));
  }
  cudaEvent_t start, stop;
  checkCudaErrors(cudaEventCreate(&start));
  checkCudaErrors(cudaEventCreate(&stop));

  dim3 block(512), grid((N + block.x - 1) / block.x);
  checkCudaErrors(cudaEventRecord(start, 0));
  for (int i = 0; i < iterations; ++i) {
    int s = i % STREAM_COUNT;
    checkCudaErrors(cudaMemcpyAsync(d_in[s], h_in[s], memsize, cudaMemcpyHostToDevice, stream[s]));
    incKernel<<<grid, block, 0, stream[s]>>>(d_out[s], d_in[s], N, inner_reps);
    checkCudaErrors(cudaMemcpyAsync(h_out[s], d_out[s], memsize, cudaMemcpyDeviceToHost, stream[s]));
  }
  checkCudaErrors(cudaEventRecord(stop, 0));
  checkCudaErrors(cudaEventSynchronize(stop));
  float elapsed = 0;
  checkCudaErrors(cudaEventElapsedTime(&elapsed, start, stop));
  printf("Measured time for %d iterations over %d streams: %.3f ms\n", iterations, STREAM_COUNT, elapsed);

  for (int i = 0; i < STREAM_COUNT; ++i) {
    checkCudaErrors(cudaFreeHost(h_in[i]));
    checkCudaErrors(cudaFreeHost(h_out[i]));
    checkCudaErrors(cudaFree(d_in[i]));
    checkCudaErrors(cudaFree(d_out[i]));
    checkCudaErrors(cudaStreamDestroy(stream[i]));
  }
  checkCudaErrors(cudaEventDestroy(start));
  checkCudaErrors(cudaEventDestroy(stop));
  return 0;
}
