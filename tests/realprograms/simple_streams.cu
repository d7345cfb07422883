// Streams over generic host memory pinned with cudaHostRegister: a kernel and a copy back timed
// alone, then nreps rounds without streams (kernel + synchronous copy), then nreps rounds split
// over nstreams streams so that one stream's copy overlaps another's kernel.
//
// gapwatch-expect: api.host_alloc=1 api.host_free=1 api.malloc=1 api.free=1
// gapwatch-expect: api.launch=51 api.memcpy=10 api.memcpy_async=41 api.event_record=8 api.event_sync=4
// gapwatch-expect: device.kernel=51 device.memcpy=51 device.memset=0
// gapwatch-expect: report.launches=51
// gapwatch-output: streamed version
#include <string.h>

#include "sample_helpers.h"

__global__ void init_array(int* g_data, const int* factor, int num_iterations) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < num_iterations; i++) g_data[idx] += *factor;
}

int main() {
  const int nstreams = 4, nreps = 10, niterations = 5;
  const int n = 16 * 1024 * 1024;
  const size_t nbytes = n * sizeof(int);
  findCudaDevice();
  checkCudaErrors(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));

  // Generic memory, page aligned, pinned after the fact: what a framework does with its own buffers.
  void* h_a_raw = nullptr;
  if (posix_memalign(&h_a_raw, 4096, nbytes) != 0) return EXIT_FAILURE;
  int* h_a = static_cast<int*>(h_a_raw);
  memset(h_a, 0, nbytes);
  checkCudaErrors(cudaHostRegister(h_a, nbytes, cudaHostRegisterMapped));

  int *d_a = nullptr, *d_c = nullptr;
  checkCudaErrors(cudaMalloc(&d_a, nbytes + sizeof(int)));
  d_c = d_a + n;

  cudaStream_t streams[nstreams];
  for (int i = 0; i < nstreams; i++) checkCudaErrors(cudaStreamCreate(&streams[i]));
  cudaEvent_t start_event, stop_event;
  checkCudaErrors(cudaEventCreateWithFlags(&start_event, cudaEventBlockingSync));
  checkCudaErrors(cudaEventCreateWithFlags(&stop_event, cudaEventBlockingSync));

  float time_memcpy, time_kernel, elapsed;
  checkCudaErrors(cudaEventRecord(start_event, 0));
  checkCudaErrors(cudaMemcpyAsync(h_a, d_a, nbytes, cudaMemcpyDeviceToHost, streams[0]));
  checkCudaErrors(cudaEventRecord(stop_event, 0));
  checkCudaErrors(cudaEventSynchronize(stop_event));
  checkCudaErrors(cudaEventElapsedTime(&time_memcpy, start_event, stop_event));
  printf("memcopy:\t%.2f\n", time_memcpy);

  dim3 threads(512, 1), blocks(n / threads.x, 1);
  checkCudaErrors(cudaEventRecord(start_event, 0));
  init_array<<<blocks, threads, 0, streams[0]>>>(d_a, d_c, niterations);
  checkCudaErrors(cudaEventRecord(stop_event, 0));
  checkCudaErrors(cudaEventSynchronize(stop_event));
  checkCudaErrors(cudaEventElapsedTime(&time_kernel, start_event, stop_event));
  printf("kernel:\t\t%.2f\n", time_kernel);

  checkCudaErrors(cudaEventRecord(start_event, 0));
  for (int k = 0; k < nreps; k++) {
    init_array<<<blocks, threads>>>(d_a, d_c, niterations);
    checkCudaErrors(cudaMemcpy(h_a, d_a, nbytes, cudaMemcpyDeviceToHost));
  }
  checkCudaErrors(cudaEventRecord(stop_event, 0));
  checkCudaErrors(cudaEventSynchronize(stop_event));
  checkCudaErrors(cudaEventElapsedTime(&elapsed, start_event, stop_event));
  printf("non-streamed:\t%.2f\n", elapsed / nreps);

  blocks = dim3(n / (nstreams * threads.x), 1);
  checkCudaErrors(cudaEventRecord(start_event, 0));
  for (int k = 0; k < nreps; k++) {
    for (int i = 0; i < nstreams; i++)
      init_array<<<blocks, threads, 0, streams[i]>>>(d_a + i * n / nstreams, d_c, niterations);
    for (int i = 0; i < nstreams; i++)
      checkCudaErrors(cudaMemcpyAsync(h_a + i * n / nstreams, d_a + i * n / nstreams, nbytes / nstreams,
                                      cudaMemcpyDeviceToHost, streams[i]));
  }
  checkCudaErrors(cudaEventRecord(stop_event, 0));
  checkCudaErrors(cudaEventSynchronize(stop_event));
  checkCudaErrors(cudaEventElapsedTime(&elapsed, start_event, stop_event));
  printf("%d streams:\t%.2f (streamed version)\n", nstreams, elapsed / nreps);

  for (int i = 0; i < nstreams; i++) checkCudaErrors(cudaStreamDestroy(streams[i]));
  checkCudaErrors(cudaEventDestroy(start_event));
  checkCudaErrors(cudaEventDestroy(stop_event));
  checkCudaErrors(cudaHostUnregister(h_a));
  free(h_a);
  checkCudaErrors(cudaFree(d_a));
  return 0;
}
