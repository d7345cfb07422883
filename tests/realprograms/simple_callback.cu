// Stream callbacks that hand results to CPU threads: each of 16 workloads uploads, runs a kernel and
// downloads on its own stream, then adds a stream callback. The callback (which must not call CUDA
// itself) starts a post-processing thread, and that thread synchronises the workload's stream and
// destroys it. Sixteen threads starting within a few hundred microseconds is what a thread pool does.
//
// gapwatch-expect: api.host_alloc=16 api.host_free=16 api.malloc=16 api.free=16
// gapwatch-expect: api.memcpy_async=32 api.launch=16 api.stream_sync=16
// gapwatch-expect: device.kernel=16 device.memcpy=32
// gapwatch-expect: report.launches=16
// gapwatch-output: all 16 workloads post-processed
#include <condition_variable>
#include <mutex>
#include <thread>

#include "sample_helpers.h"

const int kWorkloads = 16;
const int kElements = 1 << 20;

struct Workload {
  int id = 0;
  int* h_data = nullptr;
  int* d_data = nullptr;
  cudaStream_t stream = nullptr;
  std::thread postprocessor;
  bool success = false;
};

std::mutex g_mu;
std::condition_variable g_cv;
int g_started = 0, g_finished = 0;

__global__ void incKernel(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i]++;
}

void postprocess(Workload* w) {
  checkCudaErrors(cudaSetDevice(0));
  checkCudaErrors(cudaStreamSynchronize(w->stream));
  checkCudaErrors(cudaStreamDestroy(w->stream));
  w->success = true;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_finished;
  g_cv.notify_all();
}

void CUDART_CB myStreamCallback(cudaStream_t, cudaError_t status, void* data) {
  Workload* w = static_cast<Workload*>(data);
  checkCudaErrors(status);
  std::lock_guard<std::mutex> lock(g_mu);
  w->postprocessor = std::thread(postprocess, w);
  ++g_started;
  g_cv.notify_all();
}

int main() {
  findCudaDevice();
  Workload workloads[kWorkloads];
  for (int i = 0; i < kWorkloads; ++i) {
    Workload& w = workloads[i];
    w.id = i;
    checkCudaErrors(cudaMallocHost(&w.h_data, kElements * sizeof(int)));
    checkCudaErrors(cudaMalloc(&w.d_data, kElements * sizeof(int)));
    checkCudaErrors(cudaStreamCreate(&w.stream));
  }
  for (int i = 0; i < kWorkloads; ++i) {
    Workload& w = workloads[i];
    checkCudaErrors(cudaMemcpyAsync(w.d_data, w.h_data, kElements * sizeof(int), cudaMemcpyHostToDevice, w.stream));
    incKernel<<<kElements / 256, 256, 0, w.stream>>>(w.d_data, kElements);
    checkCudaErrors(cudaMemcpyAsync(w.h_data, w.d_data, kElements * sizeof(int), cudaMemcpyDeviceToHost, w.stream));
    checkCudaErrors(cudaStreamAddCallback(w.stream, myStreamCallback, &w, 0));
  }
  {
    std::unique_lock<std::mutex> lock(g_mu);
    g_cv.wait(lock, [] { return g_started == kWorkloads && g_finished == kWorkloads; });
  }
  int ok = 0;
  for (Workload& w : workloads) {
    w.postprocessor.join();
    ok += w.success;
    checkCudaErrors(cudaFreeHost(w.h_data));
    checkCudaErrors(cudaFree(w.d_data));
  }
  printf("all %d workloads post-processed\n", ok);
  return ok == kWorkloads ? EXIT_SUCCESS : EXIT_FAILURE;
}
