// A program that loads NCCL only after CUDA is up, and privately (dlopen RTLD_LOCAL, calls through
// the handle), as a framework's plug-in does: a library injected by the driver alone cannot see
// those calls, and must not claim to (probe_line_test.py). One rank, one all-reduce.
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

int main() {
  cudaFree(nullptr);  // cuInit: the driver loads CUDA_INJECTION64_PATH now, before NCCL is there
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!nccl) {
    fprintf(stderr, "nccl_loaded_late: %s\n", dlerror());
    return 1;
  }
  auto get_id = reinterpret_cast<decltype(&ncclGetUniqueId)>(dlsym(nccl, "ncclGetUniqueId"));
  auto init = reinterpret_cast<decltype(&ncclCommInitRank)>(dlsym(nccl, "ncclCommInitRank"));
  auto all_reduce = reinterpret_cast<decltype(&ncclAllReduce)>(dlsym(nccl, "ncclAllReduce"));
  auto destroy = reinterpret_cast<decltype(&ncclCommDestroy)>(dlsym(nccl, "ncclCommDestroy"));
  ncclUniqueId id;
  ncclComm_t comm;
  void* buffer = nullptr;
  cudaMalloc(&buffer, 1 << 20);
  if (get_id(&id) != ncclSuccess || init(&comm, 1, id, 0) != ncclSuccess) return 1;
  if (all_reduce(buffer, buffer, 1 << 18, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 1;
  cudaDeviceSynchronize();
  destroy(comm);
  return 0;
}
