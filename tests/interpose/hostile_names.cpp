// Names that are not UTF-8, as a real process can have them: a thread named with bytes of another
// encoding (pthread names are any 15 bytes), a kernel whose name holds invalid UTF-8 (names come
// from the binary). Launches a few of it from that thread and syncs (hostile_names_test.py).
#include <pthread.h>

#include <thread>

#include <cuda_runtime_api.h>

extern "C" {
void** __cudaRegisterFatBinary(void*);
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
void simcuda_kernel_duration_from_argument(const char* mangled_name);  // the simulator's: ns in the first argument
}

static char g_stub;
// Latin-1 bytes, a lone continuation byte, an overlong '/', a surrogate, a quote and a backslash.
static const char kKernel[] = "_Z4k\xe9rn\x80\xc0\xaf\xed\xa0\x80\"q\\v";

int main() {
  static char fatbin[8];
  void** h = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(h, &g_stub, const_cast<char*>(kKernel), kKernel, -1, nullptr, nullptr, nullptr, nullptr,
                         nullptr);
  simcuda_kernel_duration_from_argument(kKernel);
  std::thread worker([] {
    pthread_setname_np(pthread_self(), "w\xff\xfe\xe9rker");
    for (int i = 0; i < 30; ++i) {
      int64_t ns = 20000;
      void* args[] = {&ns};
      cudaLaunchKernel(&g_stub, dim3(1), dim3(1), args, 0, nullptr);
      if (i % 10 == 9) cudaDeviceSynchronize();
    }
  });
  worker.join();
  cudaDeviceSynchronize();
  return 0;
}
