// Programs written the way NVIDIA's CUDA samples are (vectorAdd, asyncAPI, simpleStreams,
// simpleMultiCopy, simpleCallback, simpleZeroCopy, simpleCudaGraphs, simpleHyperQ, matrixMul,
// and helper_cuda.h's findCudaDevice / checkCudaErrors / getLastCudaError), using the same runtime
// calls in the same patterns; our own code, not the samples'. Compiled by real nvcc with
// `-cudart shared` and run on the simulated stack by nvcc_samples_test.py. The simulator models
// time, not data (kernels do not execute), so results are never verified here: every call must
// succeed and each program must run to its end ("<name>: done").
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <thread>
#include <vector>

// ---- helper_cuda.h-style error checking and device selection ----------------------------------
#define check(call) check_result((call), #call, __FILE__, __LINE__)
static void check_result(cudaError_t result, const char* what, const char* file, int line) {
  if (result != cudaSuccess) {
    fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\": %s\n", file, line, int(result), cudaGetErrorName(result),
            what, cudaGetErrorString(result));
    exit(EXIT_FAILURE);
  }
}
static void last_error(const char* message) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: getLastCudaError: (%d) %s\n", message, int(e), cudaGetErrorString(e));
    exit(EXIT_FAILURE);
  }
}
static int cores_per_sm(int major, int minor) { return major >= 9 ? 128 : 64; }
static int pick_device() {
  int count = 0;
  check(cudaGetDeviceCount(&count));
  int best = 0;
  unsigned long long best_perf = 0;
  for (int d = 0; d < count; ++d) {
    int mode = -1, major = 0, minor = 0, sms = 0, clock = 0;
    check(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d));
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
    check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d));
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
    if (cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, d) != cudaSuccess) clock = 1;
    if (mode == cudaComputeModeProhibited) continue;
    unsigned long long perf = (unsigned long long)sms * cores_per_sm(major, minor) * clock;
    if (perf > best_perf) best_perf = perf, best = d;
  }
  check(cudaSetDevice(best));
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, best));
  printf("GPU Device %d: \"%s\" with compute capability %d.%d\n", best, prop.name, prop.major, prop.minor);
  return best;
}

// ---- kernels -------------------------------------------------------------------------------------
__global__ void add_vectors(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void increment(int* data, int by, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += by;
}
__global__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
template <int BLOCK>
__global__ void matmul(float* c, const float* a, const float* b, int wa, int wb) {
  __shared__ float as[BLOCK][BLOCK];
  __shared__ float bs[BLOCK][BLOCK];
  int tx = threadIdx.x, ty = threadIdx.y;
  float sum = 0;
  for (int k = 0; k < wa; k += BLOCK) {
    as[ty][tx] = a[(blockIdx.y * BLOCK + ty) * wa + k + tx];
    bs[ty][tx] = b[(k + ty) * wb + blockIdx.x * BLOCK + tx];
    __syncthreads();
    for (int j = 0; j < BLOCK; ++j) sum += as[ty][j] * bs[j][tx];
    __syncthreads();
  }
  c[(blockIdx.y * BLOCK + ty) * wb + blockIdx.x * BLOCK + tx] = sum;
}
__constant__ float scale_factors[32];
__device__ int device_counter;

// ---- the programs ----------------------------------------------------------------------------------
static void vector_add() {
  const int n = 50000;
  size_t bytes = n * sizeof(float);
  float *ha = (float*)malloc(bytes), *hb = (float*)malloc(bytes), *hc = (float*)malloc(bytes);
  for (int i = 0; i < n; ++i) ha[i] = rand() / (float)RAND_MAX, hb[i] = rand() / (float)RAND_MAX;
  float *da, *db, *dc;
  check(cudaMalloc(&da, bytes));
  check(cudaMalloc(&db, bytes));
  check(cudaMalloc(&dc, bytes));
  check(cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice));
  check(cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice));
  int threads = 256, blocks = (n + threads - 1) / threads;
  add_vectors<<<blocks, threads>>>(da, db, dc, n);
  last_error("add_vectors launch");
  check(cudaMemcpy(hc, dc, bytes, cudaMemcpyDeviceToHost));
  check(cudaFree(da));
  check(cudaFree(db));
  check(cudaFree(dc));
  free(ha), free(hb), free(hc);
}

static void async_api() {
  int dev = pick_device();
  (void)dev;
  const int n = 16 * 1024 * 1024;
  size_t bytes = n * sizeof(int);
  int* host = nullptr;
  check(cudaMallocHost(&host, bytes));
  memset(host, 0, bytes);
  int* d = nullptr;
  check(cudaMalloc(&d, bytes));
  check(cudaMemset(d, 255, bytes));
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start));
  check(cudaEventCreate(&stop));
  check(cudaDeviceSynchronize());
  float gpu_ms = 0;
  check(cudaProfilerStart());
  cudaEventRecord(start, 0);
  cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, 0);
  increment<<<n / 512, 512, 0, 0>>>(d, 26, n);
  cudaMemcpyAsync(host, d, bytes, cudaMemcpyDeviceToHost, 0);
  cudaEventRecord(stop, 0);
  unsigned long counter = 0;
  while (cudaEventQuery(stop) == cudaErrorNotReady) counter++;
  check(cudaEventElapsedTime(&gpu_ms, start, stop));
  check(cudaProfilerStop());
  printf("time spent executing by the GPU: %.2f ms; CPU executed %lu iterations while waiting\n", gpu_ms, counter);
  check(cudaEventDestroy(start));
  check(cudaEventDestroy(stop));
  check(cudaFreeHost(host));
  check(cudaFree(d));
}

static void simple_streams() {
  pick_device();
  check(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  const int nstreams = 4, n = 16 * 1024 * 1024;
  size_t bytes = n * sizeof(int);
  // Registered (page-locked) memory, as the sample does with its aligned allocation.
  void* raw = nullptr;
  if (posix_memalign(&raw, 4096, bytes) != 0) exit(EXIT_FAILURE);
  int* host = (int*)raw;
  check(cudaHostRegister(host, bytes, cudaHostRegisterMapped));
  int* d = nullptr;
  check(cudaMalloc(&d, bytes));
  check(cudaMemset(d, 0, bytes));
  std::vector<cudaStream_t> streams(nstreams);
  for (auto& s : streams) check(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  check(cudaEventCreateWithFlags(&start, cudaEventBlockingSync));
  check(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));
  cudaEventRecord(start, 0);
  for (int k = 0; k < 5; ++k) {
    for (int i = 0; i < nstreams; ++i) increment<<<n / nstreams / 512, 512, 0, streams[i]>>>(d + i * n / nstreams, 5, n / nstreams);
    for (int i = 0; i < nstreams; ++i)
      cudaMemcpyAsync(host + i * n / nstreams, d + i * n / nstreams, bytes / nstreams, cudaMemcpyDeviceToHost, streams[i]);
  }
  cudaEventRecord(stop, 0);
  check(cudaEventSynchronize(stop));
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop));
  printf("%d streams: %.2f ms\n", nstreams, ms);
  for (auto& s : streams) check(cudaStreamDestroy(s));
  check(cudaEventDestroy(start));
  check(cudaEventDestroy(stop));
  check(cudaHostUnregister(host));
  free(raw);
  check(cudaFree(d));
}

static void simple_multi_copy() {
  int dev = pick_device();
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, dev));
  printf("asyncEngineCount %d, concurrentKernels %d\n", prop.asyncEngineCount, prop.concurrentKernels);
  const int streams_n = 4, n = 1 << 22;
  size_t bytes = n * sizeof(int);
  std::vector<int*> h_in(streams_n), h_out(streams_n), d_in(streams_n), d_out(streams_n);
  std::vector<cudaStream_t> s(streams_n);
  for (int i = 0; i < streams_n; ++i) {
    check(cudaHostAlloc(&h_in[i], bytes, 0));
    check(cudaHostAlloc(&h_out[i], bytes, 0));
    check(cudaMalloc(&d_in[i], bytes));
    check(cudaMalloc(&d_out[i], bytes));
    check(cudaStreamCreate(&s[i]));
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start));
  check(cudaEventCreate(&stop));
  check(cudaEventRecord(start, 0));
  for (int iter = 0; iter < 8; ++iter) {
    int cur = iter % streams_n;
    check(cudaMemcpyAsync(d_in[cur], h_in[cur], bytes, cudaMemcpyHostToDevice, s[cur]));
    increment<<<n / 256, 256, 0, s[cur]>>>(d_in[cur], 1, n);
    check(cudaMemcpyAsync(h_out[cur], d_in[cur], bytes, cudaMemcpyDeviceToHost, s[cur]));
  }
  check(cudaEventRecord(stop, 0));
  check(cudaDeviceSynchronize());
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop));
  printf("overlapped: %.2f ms\n", ms);
  for (int i = 0; i < streams_n; ++i) {
    check(cudaFreeHost(h_in[i]));
    check(cudaFreeHost(h_out[i]));
    check(cudaFree(d_in[i]));
    check(cudaFree(d_out[i]));
    check(cudaStreamDestroy(s[i]));
  }
}

struct Workload {
  int id;
  int* d;
  int* h;
  cudaStream_t stream;
  bool done;
  std::thread post;
};
static void post_process(Workload* w) {
  check(cudaSetDevice(0));
  w->done = true;
}
static void CUDART_CB on_stream_done(cudaStream_t, cudaError_t status, void* p) {
  check(status);
  auto* w = static_cast<Workload*>(p);
  w->post = std::thread(post_process, w);  // as the sample: a thread per callback
}
static void simple_callback() {
  pick_device();
  const int workloads = 8, n = 1 << 20;
  std::vector<Workload> w(workloads);
  for (int i = 0; i < workloads; ++i) {
    w[i].id = i;
    w[i].done = false;
    check(cudaStreamCreate(&w[i].stream));
    check(cudaMalloc(&w[i].d, n * sizeof(int)));
    check(cudaMallocHost(&w[i].h, n * sizeof(int)));
  }
  for (int i = 0; i < workloads; ++i) {
    check(cudaMemcpyAsync(w[i].d, w[i].h, n * sizeof(int), cudaMemcpyHostToDevice, w[i].stream));
    increment<<<n / 256, 256, 0, w[i].stream>>>(w[i].d, 1, n);
    last_error("increment");
    check(cudaMemcpyAsync(w[i].h, w[i].d, n * sizeof(int), cudaMemcpyDeviceToHost, w[i].stream));
    check(cudaStreamAddCallback(w[i].stream, on_stream_done, &w[i], 0));
  }
  check(cudaDeviceSynchronize());
  for (int i = 0; i < workloads; ++i) {
    while (!w[i].post.joinable()) std::this_thread::yield();
    w[i].post.join();
    if (!w[i].done) exit(EXIT_FAILURE);
    check(cudaFree(w[i].d));
    check(cudaFreeHost(w[i].h));
    check(cudaStreamDestroy(w[i].stream));
  }
}

static void simple_zero_copy() {
  int dev = pick_device();
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, dev));
  if (!prop.canMapHostMemory) exit(EXIT_FAILURE);
  check(cudaSetDeviceFlags(cudaDeviceMapHost));
  const int n = 1 << 20;
  float *a, *b, *c, *da, *db, *dc;
  check(cudaHostAlloc(&a, n * sizeof(float), cudaHostAllocMapped));
  check(cudaHostAlloc(&b, n * sizeof(float), cudaHostAllocMapped | cudaHostAllocWriteCombined));
  check(cudaHostAlloc(&c, n * sizeof(float), cudaHostAllocMapped));
  check(cudaHostGetDevicePointer((void**)&da, a, 0));
  check(cudaHostGetDevicePointer((void**)&db, b, 0));
  check(cudaHostGetDevicePointer((void**)&dc, c, 0));
  add_vectors<<<n / 256, 256>>>(da, db, dc, n);
  last_error("zero-copy add");
  check(cudaDeviceSynchronize());
  check(cudaFreeHost(a));
  check(cudaFreeHost(b));
  check(cudaFreeHost(c));
}

static int g_host_node_runs = 0;
static void CUDART_CB host_node(void*) { g_host_node_runs++; }
static void simple_cuda_graphs() {
  pick_device();
  const int n = 1 << 20;
  float *d_in, *d_out, *h;
  check(cudaMalloc(&d_in, n * sizeof(float)));
  check(cudaMalloc(&d_out, n * sizeof(float)));
  check(cudaMallocHost(&h, n * sizeof(float)));
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Explicitly built: memcpy -> memset -> kernel -> memcpy -> host.
  cudaGraph_t g;
  check(cudaGraphCreate(&g, 0));
  cudaGraphNode_t copy_in, zero, k, copy_out, host;
  cudaMemcpy3DParms cp = {0};
  cp.srcPtr = make_cudaPitchedPtr(h, n * sizeof(float), n, 1);
  cp.dstPtr = make_cudaPitchedPtr(d_in, n * sizeof(float), n, 1);
  cp.extent = make_cudaExtent(n * sizeof(float), 1, 1);
  cp.kind = cudaMemcpyHostToDevice;
  check(cudaGraphAddMemcpyNode(&copy_in, g, nullptr, 0, &cp));
  cudaMemsetParams mp = {0};
  mp.dst = d_out;
  mp.value = 0;
  mp.elementSize = sizeof(float);
  mp.width = n;
  mp.height = 1;
  check(cudaGraphAddMemsetNode(&zero, g, nullptr, 0, &mp));
  int count = n;
  void* args[] = {&d_in, &d_in, &d_out, &count};
  cudaKernelNodeParams kp = {0};
  kp.func = (void*)add_vectors;
  kp.gridDim = dim3(n / 256);
  kp.blockDim = dim3(256);
  kp.kernelParams = args;
  std::vector<cudaGraphNode_t> deps = {copy_in, zero};
  check(cudaGraphAddKernelNode(&k, g, deps.data(), deps.size(), &kp));
  check(cudaGraphAddMemcpyNode1D(&copy_out, g, &k, 1, h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  cudaHostNodeParams hp = {host_node, nullptr};
  check(cudaGraphAddHostNode(&host, g, &copy_out, 1, &hp));
  size_t nodes = 0;
  check(cudaGraphGetNodes(g, nullptr, &nodes));
  printf("explicit graph: %zu nodes\n", nodes);
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, g, 0));
  cudaGraph_t clone;
  check(cudaGraphClone(&clone, g));
  cudaGraphExec_t clone_exec;
  check(cudaGraphInstantiate(&clone_exec, clone, 0));
  for (int i = 0; i < 3; ++i) check(cudaGraphLaunch(exec, s));
  check(cudaGraphLaunch(clone_exec, s));
  check(cudaStreamSynchronize(s));
  // Captured with a fork to a second stream and a join back.
  cudaStream_t s1;
  check(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  check(cudaEventCreate(&fork));
  check(cudaEventCreate(&join));
  cudaGraph_t captured;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  check(cudaMemcpyAsync(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice, s));
  check(cudaEventRecord(fork, s));
  check(cudaStreamWaitEvent(s1, fork, 0));
  check(cudaMemsetAsync(d_out, 0, n * sizeof(float), s1));
  check(cudaEventRecord(join, s1));
  check(cudaStreamWaitEvent(s, join, 0));
  add_vectors<<<n / 256, 256, 0, s>>>(d_in, d_in, d_out, n);
  check(cudaMemcpyAsync(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  check(cudaLaunchHostFunc(s, host_node, nullptr));
  check(cudaStreamEndCapture(s, &captured));
  cudaGraphExec_t captured_exec;
  check(cudaGraphInstantiate(&captured_exec, captured, 0));
  for (int i = 0; i < 3; ++i) check(cudaGraphLaunch(captured_exec, s));
  check(cudaStreamSynchronize(s));
  printf("host nodes ran %d times\n", g_host_node_runs);
  if (g_host_node_runs != 7) exit(EXIT_FAILURE);
  check(cudaGraphExecDestroy(exec));
  check(cudaGraphExecDestroy(clone_exec));
  check(cudaGraphExecDestroy(captured_exec));
  check(cudaGraphDestroy(g));
  check(cudaGraphDestroy(clone));
  check(cudaGraphDestroy(captured));
  check(cudaStreamDestroy(s));
  check(cudaStreamDestroy(s1));
  check(cudaFree(d_in));
  check(cudaFree(d_out));
  check(cudaFreeHost(h));
}

static void simple_hyperq() {
  int dev = pick_device();
  int clock_khz = 0;
  check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  const int nstreams = 32;
  std::vector<cudaStream_t> s(nstreams);
  for (auto& x : s) check(cudaStreamCreate(&x));
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start));
  check(cudaEventCreate(&stop));
  check(cudaEventRecord(start, 0));
  long long cycles = (long long)clock_khz * 10;  // 10 ms at the device clock
  for (int i = 0; i < nstreams; ++i) {
    spin<<<1, 1, 0, s[i]>>>(cycles);
    spin<<<1, 1, 0, s[i]>>>(cycles);
  }
  check(cudaEventRecord(stop, 0));
  check(cudaEventSynchronize(stop));
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop));
  printf("%d streams: %.3f ms\n", nstreams, ms);
  for (auto& x : s) check(cudaStreamDestroy(x));
}

static void matrix_mul() {
  pick_device();
  const int block = 32, wa = 320, ha = 320, wb = 640;
  float *a, *b, *c;
  check(cudaMallocHost(&a, wa * ha * sizeof(float)));
  check(cudaMallocHost(&b, wb * wa * sizeof(float)));
  check(cudaMallocHost(&c, wb * ha * sizeof(float)));
  float *da, *db, *dc;
  check(cudaMalloc(&da, wa * ha * sizeof(float)));
  check(cudaMalloc(&db, wb * wa * sizeof(float)));
  check(cudaMalloc(&dc, wb * ha * sizeof(float)));
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float scales[32] = {1};
  check(cudaMemcpyToSymbol(scale_factors, scales, sizeof(scales)));
  int zero = 0;
  check(cudaMemcpyToSymbolAsync(device_counter, &zero, sizeof(zero), 0, cudaMemcpyHostToDevice, s));
  check(cudaMemcpyAsync(da, a, wa * ha * sizeof(float), cudaMemcpyHostToDevice, s));
  check(cudaMemcpyAsync(db, b, wb * wa * sizeof(float), cudaMemcpyHostToDevice, s));
  dim3 threads(block, block), grid(wb / block, ha / block);
  check(cudaFuncSetCacheConfig(matmul<block>, cudaFuncCachePreferShared));
  int blocks_per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, matmul<block>, block * block, 0));
  int min_grid = 0, best_block = 0;
  check(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best_block, add_vectors, 0, 0));
  matmul<block><<<grid, threads, 0, s>>>(dc, da, db, wa, wb);
  check(cudaStreamSynchronize(s));
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start));
  check(cudaEventCreate(&stop));
  check(cudaEventRecord(start, s));
  for (int i = 0; i < 30; ++i) matmul<block><<<grid, threads, 0, s>>>(dc, da, db, wa, wb);
  check(cudaEventRecord(stop, s));
  check(cudaEventSynchronize(stop));
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop));
  printf("matrixMul: %.3f ms per multiply, %d blocks per SM, best block %d\n", ms / 30, blocks_per_sm, best_block);
  check(cudaMemcpyAsync(c, dc, wb * ha * sizeof(float), cudaMemcpyDeviceToHost, s));
  int counter = -1;
  check(cudaMemcpyFromSymbol(&counter, device_counter, sizeof(counter)));
  check(cudaStreamSynchronize(s));
  check(cudaFreeHost(a));
  check(cudaFreeHost(b));
  check(cudaFreeHost(c));
  check(cudaFree(da));
  check(cudaFree(db));
  check(cudaFree(dc));
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s vectorAdd|asyncAPI|simpleStreams|simpleMultiCopy|simpleCallback|simpleZeroCopy|"
                    "simpleCudaGraphs|simpleHyperQ|matrixMul\n", argv[0]);
    return 2;
  }
  struct { const char* name; void (*run)(); } programs[] = {
      {"vectorAdd", vector_add},         {"asyncAPI", async_api},
      {"simpleStreams", simple_streams}, {"simpleMultiCopy", simple_multi_copy},
      {"simpleCallback", simple_callback}, {"simpleZeroCopy", simple_zero_copy},
      {"simpleCudaGraphs", simple_cuda_graphs}, {"simpleHyperQ", simple_hyperq},
      {"matrixMul", matrix_mul},
  };
  for (auto& p : programs)
    if (strcmp(p.name, argv[1]) == 0) {
      p.run();
      check(cudaDeviceReset());
      printf("%s: done\n", p.name);
      return 0;
    }
  fprintf(stderr, "unknown program %s\n", argv[1]);
  return 2;
}
