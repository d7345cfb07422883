// Overlapping CPU and GPU work: queue a copy, a kernel and a copy back on the default stream, record
// an event, and count how often the CPU polls the event before the GPU is done. The kernel is long
// (the test's kernel duration table makes it 20 ms), so the polling loop runs thousands of times.
//
// gapwatch-env: SIMCUDA_KERNEL_DURATIONS=increment_kernel=20ms
// gapwatch-expect: api.host_alloc=1 api.malloc=1 api.memset=1 api.memcpy_async=2 api.launch=1
// gapwatch-expect: api.event_record=2 api.host_free=1 api.free=1
// One polling loop of many polls: the recording holds it as one query record with its poll count.
// gapwatch-expect: api.query=1 report.polling_loops=1 report.polls>=2
// gapwatch-expect: device.kernel=1 device.memcpy=2 device.memset=1
// gapwatch-expect: report.launches=1 report.steps=0
// gapwatch-output: CPU executed
#include "sample_helpers.h"

__global__ void increment_kernel(int* g_data, int inc_value) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  g_data[idx] = g_data[idx] + inc_value;
}

int main() {
  findCudaDevice();
  const int n = 16 * 1024 * 1024;
  const int nbytes = n * sizeof(int);
  const int value = 26;

  int* a = nullptr;
  checkCudaErrors(cudaMallocHost(reinterpret_cast<void**>(&a), nbytes));
  memset(a, 0, nbytes);
  int* d_a = nullptr;
  checkCudaErrors(cudaMalloc(reinterpret_cast<void**>(&d_a), nbytes));
  checkCudaErrors(cudaMemset(d_a, 255, nbytes));

  dim3 threads(512, 1);
  dim3 blocks(n / threads.x, 1);
  cudaEvent_t start, stop;
  checkCudaErrors(cudaEventCreate(&start));
  checkCudaErrors(cudaEventCreate(&stop));
  checkCudaErrors(cudaDeviceSynchronize());

  cudaEventRecord(start, 0);
  cudaMemcpyAsync(d_a, a, nbytes, cudaMemcpyHostToDevice, 0);
  increment_kernel<<<blocks, threads, 0, 0>>>(d_a, value);
  cudaMemcpyAsync(a, d_a, nbytes, cudaMemcpyDeviceToHost, 0);
  cudaEventRecord(stop, 0);

  unsigned long int counter = 0;
  while (cudaEventQuery(stop) == cudaErrorNotReady) counter++;

  float gpu_time = 0.0f;
  checkCudaErrors(cudaEventElapsedTime(&gpu_time, start, stop));
  printf("time spent executing by the GPU: %.2f ms\n", gpu_time);
  printf("CPU executed %lu iterations while waiting for GPU to finish\n", counter);

  checkCudaErrors(cudaEventDestroy(start));
  checkCudaErrors(cudaEventDestroy(stop));
  checkCudaErrors(cudaFreeHost(a));
  checkCudaErrors(cudaFree(d_a));
  return 0;
}
