// A process that forks many times while other threads keep launching, as a PyTorch job forks
// DataLoader workers mid-training. Children never touch CUDA (PyTorch forbids it after fork); half
// leave through exit() (atexit handlers run, gapwatch's among them), half through _exit().
// The parent must finish, and every child must exit promptly: no deadlock, no recording.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

extern "C" {
void** __cudaRegisterFatBinary(void*);
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
void simcuda_kernel_duration_from_argument(const char* mangled_name);  // the simulator's: ns in the first argument
}

static char g_stub;

int main(int argc, char** argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 200;
  static char fatbin[8];
  void** h = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(h, &g_stub, const_cast<char*>("_Z5stormv"), "_Z5stormv", -1, nullptr, nullptr, nullptr,
                         nullptr, nullptr);
  simcuda_kernel_duration_from_argument("_Z5stormv");
  std::atomic<bool> stop{false};
  std::vector<std::thread> launchers;
  for (int t = 0; t < 4; ++t)
    launchers.emplace_back([&] {
      cudaStream_t s;
      cudaStreamCreate(&s);
      while (!stop.load()) {
        int64_t ns = 1000;
        void* args[] = {&ns};
        cudaLaunchKernel(&g_stub, dim3(1), dim3(1), args, 0, s);
        cudaStreamSynchronize(s);
      }
    });
  int failures = 0;
  for (int i = 0; i < forks; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<char> work(4096, char(i));  // a worker allocates and computes, no CUDA
      if (i % 2) exit(work[0] == char(i) ? 0 : 1);
      _exit(0);
    }
    if (pid < 0) {
      ++failures;
      continue;
    }
    int status = 0;
    alarm(10);  // a child stuck in a deadlock fails the test instead of hanging it
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    alarm(0);
  }
  stop = true;
  for (auto& t : launchers) t.join();
  printf("forks=%d failures=%d\n", forks, failures);
  return failures ? 1 : 0;
}
