// A thread pool starting at once: 64 worker threads, each with its own stream, run 4 rounds of a
// kernel followed by a synchronisation of their stream. All 64 start within a millisecond or so, as
// a DataLoader's or a serving framework's pool does; every one of their calls must be recorded.
//
// gapwatch-expect: api.launch=256 api.stream_sync=256
// gapwatch-expect: device.kernel=256
// gapwatch-expect: report.launches=256
// gapwatch-output: 64 workers done
#include <atomic>
#include <thread>
#include <vector>

#include "sample_helpers.h"

__global__ void work(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 2.0f + 1.0f;
}

int main() {
  const int kWorkers = 64, kRounds = 4, kElements = 1 << 16;
  findCudaDevice();
  float* d_data = nullptr;
  checkCudaErrors(cudaMalloc(&d_data, size_t(kWorkers) * kElements * sizeof(float)));
  std::atomic<int> done{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < kWorkers; ++w)
    pool.emplace_back([&, w] {
      checkCudaErrors(cudaSetDevice(0));
      cudaStream_t stream;
      checkCudaErrors(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      for (int r = 0; r < kRounds; ++r) {
        work<<<kElements / 256, 256, 0, stream>>>(d_data + size_t(w) * kElements, kElements);
        checkCudaErrors(cudaStreamSynchronize(stream));
      }
      checkCudaErrors(cudaStreamDestroy(stream));
      ++done;
    });
  for (std::thread& t : pool) t.join();
  checkCudaErrors(cudaFree(d_data));
  printf("%d workers done\n", done.load());
  return done == kWorkers ? EXIT_SUCCESS : EXIT_FAILURE;
}
