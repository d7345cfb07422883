// A child forked while another thread of its parent is inside gapwatch's start (issue 36): the
// child's first CUDA call must not wait on the start's lock, which the forking thread's sibling
// held and which nobody in the child will ever release. SIMCUDA_CUPTI_SUBSCRIBE_DELAY_MS holds the
// start open (in CUPTI's subscribe); CUDA_INJECTION64_PATH names another library, so gapwatch
// starts from its runtime hooks, not from the driver, in the parent and in the child alike.
// Exit 0: the child came back; 1: the child hung (killed after 10 s); 2: the child failed.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thread>

#include <cuda_runtime_api.h>

int main(int argc, char** argv) {
  const int wait_ms = argc > 1 ? atoi(argv[1]) : 150;  // into the start: less than the subscribe delay
  std::thread starter([] {
    void* p = nullptr;
    cudaMallocHost(&p, 64);  // the process's first CUDA call: gapwatch starts here
    cudaFreeHost(p);
  });
  usleep(static_cast<useconds_t>(wait_ms) * 1000);
  const pid_t pid = fork();
  if (pid == 0) {
    void* p = nullptr;
    cudaFreeHost(p);  // the child's first CUDA call: a gapwatch entry point
    _exit(0);
  }
  int status = 0;
  bool done = false;
  for (int i = 0; i < 1000 && !done; ++i) {  // 10 s
    done = waitpid(pid, &status, WNOHANG) == pid;
    if (!done) usleep(10000);
  }
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  starter.join();
  if (!done) {
    fprintf(stderr, "the child forked during gapwatch's start hung\n");
    return 1;
  }
  printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}
