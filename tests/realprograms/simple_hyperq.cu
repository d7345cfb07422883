// Hyper-Q: 32 streams, each running kernel_A then kernel_B; on a GPU with enough hardware queues
// every stream's pair runs concurrently with the others, so the whole takes about two kernels' time
// instead of 64. Then one kernel sums what the 64 wrote and one copy brings the sum back.
//
// gapwatch-env: SIMCUDA_KERNEL_DURATIONS=kernel_A=1ms,kernel_B=1ms
// gapwatch-expect: api.launch=65 api.memcpy=1 api.event_record=2 api.event_sync=1 api.malloc=1 api.free=1
// gapwatch-expect: device.kernel=65 device.memcpy=1
// gapwatch-expect: report.launches=65
// gapwatch-output: Measured time for sample
#include "sample_helpers.h"

__device__ void clock_block(clock_t* d_o, clock_t clock_count) {
  clock_t start_clock = clock();
  clock_t clock_offset = 0;
  while (clock_offset < clock_count) clock_offset = clock() - start_clock;
  d_o[0] = clock_offset;
}

__global__ void kernel_A(clock_t* d_o, clock_t clock_count) { clock_block(d_o, clock_count); }
__global__ void kernel_B(clock_t* d_o, clock_t clock_count) { clock_block(d_o, clock_count); }

__global__ void sum(clock_t* d_clocks, int N) {
  __shared__ clock_t s_clocks[32];
  clock_t my_sum = 0;
  for (int i = threadIdx.x; i < N; i += blockDim.x) my_sum += d_clocks[i];
  s_clocks[threadIdx.x] = my_sum;
  __syncthreads();
  if (threadIdx.x == 0) d_clocks[0] = s_clocks[0];
}

int main() {
  const int nstreams = 32;
  const float kernel_time = 10;  // ms, on a real GPU
  findCudaDevice();
  int clock_khz = 0;  // CUDA 13 dropped cudaDeviceProp::clockRate; the attribute stays
  checkCudaErrors(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  clock_t time_clocks = (clock_t)(kernel_time * clock_khz);

  clock_t* d_a = nullptr;
  checkCudaErrors(cudaMalloc((void**)&d_a, 2 * nstreams * sizeof(clock_t)));
  cudaStream_t* streams = (cudaStream_t*)malloc(nstreams * sizeof(cudaStream_t));
  for (int i = 0; i < nstreams; i++) checkCudaErrors(cudaStreamCreate(&streams[i]));
  cudaEvent_t start_event, stop_event;
  checkCudaErrors(cudaEventCreate(&start_event));
  checkCudaErrors(cudaEventCreate(&stop_event));

  checkCudaErrors(cudaEventRecord(start_event, 0));
  for (int i = 0; i < nstreams; ++i) {
    kernel_A<<<1, 1, 0, streams[i]>>>(&d_a[2 * i], time_clocks);
    kernel_B<<<1, 1, 0, streams[i]>>>(&d_a[2 * i + 1], time_clocks);
  }
  checkCudaErrors(cudaEventRecord(stop_event, 0));
  checkCudaErrors(cudaEventSynchronize(stop_event));
  float elapsed_time = 0;
  checkCudaErrors(cudaEventElapsedTime(&elapsed_time, start_event, stop_event));

  sum<<<1, 32>>>(d_a, 2 * nstreams);
  clock_t a = 0;
  checkCudaErrors(cudaMemcpy(&a, d_a, sizeof(clock_t), cudaMemcpyDeviceToHost));
  printf("Measured time for sample = %.3fs\n", elapsed_time / 1000.0f);

  for (int i = 0; i < nstreams; i++) checkCudaErrors(cudaStreamDestroy(streams[i]));
  free(streams);
  checkCudaErrors(cudaEventDestroy(start_event));
  checkCudaErrors(cudaEventDestroy(stop_event));
  checkCudaErrors(cudaFree(d_a));
  return 0;
}
