// A launch loop on the simulated runtime that counts, on its own thread and inside a marked
// window, every heap allocation and every mutex lock the process makes. Run with and without
// libgapwatch.so preloaded: the difference is what gapwatch adds to the user's hot path (the
// simulator's own allocations and locks are the same in both runs). The window is marked by two
// getppid() calls so strace can count the thread's system calls between them.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void** __cudaRegisterFatBinary(void*);
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
void simcuda_kernel_duration_from_argument(const char* mangled_name);  // the simulator's: ns in the first argument
}

namespace {
thread_local bool t_counting = false;
std::atomic<long> g_allocations{0};
std::atomic<long> g_locks{0};
int (*g_real_lock)(pthread_mutex_t*) = nullptr;
char g_kernel_stub;
}  // namespace

extern "C" {
void* malloc(size_t n) {
  if (t_counting) ++g_allocations;
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  if (t_counting) ++g_allocations;
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  if (t_counting) ++g_allocations;
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t a, size_t n) {
  if (t_counting) ++g_allocations;
  return __libc_memalign(a, n);
}
int pthread_mutex_lock(pthread_mutex_t* m) {
  if (t_counting) ++g_locks;
  if (!g_real_lock) g_real_lock = reinterpret_cast<int (*)(pthread_mutex_t*)>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  return g_real_lock(m);
}
}

static void launch_loop(int launches, cudaStream_t stream, void* dev, void* pinned) {
  for (int i = 0; i < launches; ++i) {
    int64_t ns = 2000;
    void* args[] = {&ns};
    cudaLaunchKernel(&g_kernel_stub, dim3(1), dim3(1), args, 0, stream);
    if (i % 64 == 0) cudaMemcpyAsync(dev, pinned, 4096, cudaMemcpyHostToDevice, stream);
  }
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 20000;
  g_real_lock = reinterpret_cast<int (*)(pthread_mutex_t*)>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  static char fatbin[8];
  void** handle = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(handle, &g_kernel_stub, const_cast<char*>("_Z9hot_probev"), "_Z9hot_probev", -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  simcuda_kernel_duration_from_argument("_Z9hot_probev");
  cudaStream_t stream;
  void *dev, *pinned;
  cudaStreamCreate(&stream);
  cudaMalloc(&dev, 1 << 20);
  cudaMallocHost(&pinned, 1 << 20);
  launch_loop(1000, stream, dev, pinned);  // warm: this thread's ring is claimed, lookups are cached
  cudaStreamSynchronize(stream);

  getppid();  // window start, for strace
  t_counting = true;
  launch_loop(launches, stream, dev, pinned);
  t_counting = false;
  getppid();  // window end

  cudaStreamSynchronize(stream);
  printf("allocations=%ld locks=%ld launches=%d\n", g_allocations.load(), g_locks.load(), launches);
  return 0;
}
