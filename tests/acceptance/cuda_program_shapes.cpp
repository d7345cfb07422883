// The shapes of small real CUDA programs that gapwatch once got wrong, on the simulated runtime
// (real_program_shapes_test.py records each and checks the report):
//   vector-add   two copies in, one kernel, one copy out: no loop, so no steps;
//   matrix-mul   a warm-up kernel, then 300 timed launches of one kernel between two events;
//   graph        a stream captured into a graph (three kernels and a memset), then the graph
//                launched 10 times;
//   poll         cudaEventQuery polled until a 20 ms kernel finishes, then a cudaFreeHost on the
//                idle device. Prints "polls N", the polls made, for the test to compare.
// A kernel's device time is its first argument (the simulator's convention), and the same times by
// name in SIMCUDA_KERNEL_DURATIONS for a simulator that takes them from there (the test sets both).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
void** __cudaRegisterFatBinary(void* fat_cubin);
void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun, const char* device_name,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bdim, dim3* gdim, int* wsize);
}

namespace {

char g_vector_add, g_matrix_mul, g_step_a, g_step_b, g_long_kernel;

void registerKernel(char* stub, const char* name) {
  static char fatbin[16];
  static void** handle = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(handle, stub, const_cast<char*>(name), name, -1, nullptr, nullptr, nullptr, nullptr, nullptr);
}

int check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(status));
    std::exit(1);
  }
  return 0;
}

void launch(const char* stub, int64_t duration_ns, cudaStream_t stream = nullptr) {
  void* args[] = {&duration_ns};
  check(cudaLaunchKernel(stub, dim3(1), dim3(32), args, 0, stream), "cudaLaunchKernel");
}

int vectorAdd() {
  constexpr size_t kBytes = 1 << 20;
  std::vector<char> a(kBytes), b(kBytes), c(kBytes);
  void *da, *db, *dc;
  check(cudaMalloc(&da, kBytes), "cudaMalloc");
  check(cudaMalloc(&db, kBytes), "cudaMalloc");
  check(cudaMalloc(&dc, kBytes), "cudaMalloc");
  check(cudaMemcpy(da, a.data(), kBytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(db, b.data(), kBytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  launch(&g_vector_add, 50'000);
  check(cudaMemcpy(c.data(), dc, kBytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(da), "cudaFree");
  check(cudaFree(db), "cudaFree");
  check(cudaFree(dc), "cudaFree");
  return 0;
}

int matrixMul() {
  launch(&g_matrix_mul, 100'000);  // warm-up
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, nullptr), "cudaEventRecord");
  for (int i = 0; i < 300; ++i) launch(&g_matrix_mul, 100'000);
  check(cudaEventRecord(stop, nullptr), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  return 0;
}

int graph() {
  // One captured stream: the simulated runtime captures only the capturing stream's own work
  // (forked streams are covered by the unit tests).
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaEvent_t mark;
  check(cudaEventCreate(&mark), "cudaEventCreate");
  void* dev;
  check(cudaMalloc(&dev, 4096), "cudaMalloc");
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  launch(&g_step_a, 50'000, stream);
  check(cudaMemsetAsync(dev, 0, 4096, stream), "cudaMemsetAsync");
  launch(&g_step_b, 50'000, stream);
  launch(&g_step_b, 50'000, stream);
  cudaGraph_t captured;
  check(cudaStreamEndCapture(stream, &captured), "cudaStreamEndCapture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, captured, 0), "cudaGraphInstantiate");
  for (int i = 0; i < 10; ++i) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return 0;
}

int poll() {
  void* pinned;
  check(cudaMallocHost(&pinned, 64 << 20), "cudaMallocHost");
  cudaEvent_t done;
  check(cudaEventCreate(&done), "cudaEventCreate");
  launch(&g_long_kernel, 20'000'000);
  check(cudaEventRecord(done, nullptr), "cudaEventRecord");
  uint64_t polls = 0;
  cudaError_t status;
  do {
    status = cudaEventQuery(done);
    ++polls;
  } while (status == cudaErrorNotReady);
  check(status, "cudaEventQuery");
  check(cudaFreeHost(pinned), "cudaFreeHost");  // nothing queued: it waits for nothing
  launch(&g_step_a, 50'000);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::printf("polls %llu\n", static_cast<unsigned long long>(polls));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  registerKernel(&g_vector_add, "_Z9vectorAddPKfS0_Pfi");
  registerKernel(&g_matrix_mul, "_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii");
  registerKernel(&g_step_a, "_Z6step_av");
  registerKernel(&g_step_b, "_Z6step_bv");
  registerKernel(&g_long_kernel, "_Z11long_kernelv");
  const char* shape = argc > 1 ? argv[1] : "";
  if (std::strcmp(shape, "vector-add") == 0) return vectorAdd();
  if (std::strcmp(shape, "matrix-mul") == 0) return matrixMul();
  if (std::strcmp(shape, "graph") == 0) return graph();
  if (std::strcmp(shape, "poll") == 0) return poll();
  std::fprintf(stderr, "usage: %s vector-add|matrix-mul|graph|poll\n", argv[0]);
  return 2;
}
