// A communicator made at the address of one being destroyed on another thread (nccl_comm_reuse_test.py).
// The simulated NCCL frees a destroyed communicator and gives its memory to the next one made; with
// SIMCUDA_NCCL_DESTROY_LINGER_MS the destroy returns only that long after the free. So:
//   - one ncclCommInitAll over two devices (SIMCUDA_DEVICES=2): rank 1 of 2 is `old`;
//   - a thread destroys `old` (ncclCommDestroy, lingering);
//   - meanwhile this thread makes a one-rank communicator through NCCL's profiling name
//     pncclCommInitRank, which no LD_PRELOAD hook sees (a creation gapwatch does not hook: its
//     first sight is in a collective), until it gets `old`'s address; then an all-reduce on it.
// That all-reduce is rank 0 of 1. Prints "reused" when the address came back (the test needs it),
// "call all_reduce 0 1" for the call it made, and exits 0; 1 on a failure, said on stderr.
#include <stdio.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

extern "C" ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);

namespace {

int fail(const char* what, int code) {
  fprintf(stderr, "nccl_comm_reuse: %s failed (%d)\n", what, code);
  return 1;
}

}  // namespace

int main() {
  ncclComm_t comms[2];
  ncclResult_t r;
  if ((r = ncclCommInitAll(comms, 2, nullptr)) != ncclSuccess) return fail("ncclCommInitAll", r);
  ncclComm_t old = comms[1];
  std::thread destroyer([old] { ncclCommDestroy(old); });
  // Until the destroy has freed it (at once here; bounded: the linger is seconds, this 10 s).
  ncclComm_t fresh = nullptr;
  std::vector<ncclComm_t> others;  // made before the free: kept, so the free list is old's alone
  for (int tries = 0; tries < 10000; ++tries) {
    ncclUniqueId id;
    if ((r = ncclGetUniqueId(&id)) != ncclSuccess) return fail("ncclGetUniqueId", r);
    ncclComm_t c = nullptr;
    if ((r = pncclCommInitRank(&c, 1, id, 0)) != ncclSuccess) return fail("pncclCommInitRank", r);
    if (c == old) {
      fresh = c;
      break;
    }
    others.push_back(c);
    usleep(1000);
  }
  if (!fresh) return fail("waiting for the destroyed communicator's address", 0);
  printf("reused\n");
  cudaStream_t stream;
  if (cudaSetDevice(0) != cudaSuccess) return fail("cudaSetDevice", 0);
  if (cudaStreamCreate(&stream) != cudaSuccess) return fail("cudaStreamCreate", 0);
  void* buf = nullptr;
  if (cudaMalloc(&buf, 4096) != cudaSuccess) return fail("cudaMalloc", 0);
  if ((r = ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, fresh, stream)) != ncclSuccess)
    return fail("ncclAllReduce", r);
  printf("call all_reduce 0 1\n");
  cudaStreamSynchronize(stream);
  destroyer.join();
  return 0;
}
