// An NCCL job that makes its communicators the way PyTorch's ProcessGroupNCCL does, for
// nccl_routes_test.py. Run without RANK, it starts `ranks` copies of itself (argv[1], default 2)
// with RANK, WORLD_SIZE and two NCCL unique ids in their environment, and exits with the first
// failure among them. Each rank:
//   - makes the default communicator with ncclCommInitRankConfig, non-blocking (ncclInProgress,
//     then polled with ncclCommGetAsyncError), named "default_pg";
//   - splits it (every rank one color, keys reversed: a split rank is world - 1 - rank), as
//     torch.distributed.new_group does;
//   - makes a third with ncclCommInitRankScalable;
//   - calls all-reduce, all-to-all, gather, scatter, bcast on the default communicator, an
//     all-reduce on each of the other two, and a send/recv ring in a group.
// With NCCL_STYLE_UNHOOKED_INIT=1 the default communicator is made through NCCL's profiling name
// pncclCommInitRankConfig, which no LD_PRELOAD hook sees: its first sight is in a collective.
// `nccl_pytorch_style all N` instead runs one process with N devices (SIMCUDA_DEVICES=N): one
// ncclCommInitAll, then one all-reduce per communicator in a group (one thread drives all ranks).
// It prints one line per call site it used, so a test can compare: "call <op> <rank> <nranks>".
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace {

int fail(const char* what, int code) {
  fprintf(stderr, "nccl_pytorch_style: %s failed (%d)\n", what, code);
  return 1;
}

std::string to_hex(const ncclUniqueId& id) {
  std::string s;
  char b[3];
  for (unsigned char c : id.internal) snprintf(b, sizeof b, "%02x", c), s += b;
  return s;
}

bool from_hex(const char* hex, ncclUniqueId* id) {
  if (!hex || strlen(hex) != 2 * sizeof id->internal) return false;
  for (size_t i = 0; i < sizeof id->internal; ++i) {
    unsigned v = 0;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return false;
    id->internal[i] = char(v);
  }
  return true;
}

int launch(int ranks, const char* self) {
  ncclUniqueId a, b;
  if (ncclGetUniqueId(&a) != ncclSuccess || ncclGetUniqueId(&b) != ncclSuccess) return fail("ncclGetUniqueId", 0);
  std::string ha = to_hex(a), hb = to_hex(b);
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) return fail("fork", errno);
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      setenv("NCCL_STYLE_ID", ha.c_str(), 1);
      setenv("NCCL_STYLE_ID2", hb.c_str(), 1);
      execl(self, self, (char*)nullptr);
      _exit(127);
    }
    children.push_back(pid);
  }
  int result = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (result == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) result = 1;
  }
  return result;
}

int run_rank(int rank, int world) {
  ncclUniqueId id, id2;
  if (!from_hex(getenv("NCCL_STYLE_ID"), &id) || !from_hex(getenv("NCCL_STYLE_ID2"), &id2))
    return fail("reading the unique ids", 0);
  if (cudaSetDevice(0) != cudaSuccess) return fail("cudaSetDevice", 0);
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) return fail("cudaStreamCreate", 0);
  void* buf = nullptr;
  if (cudaMalloc(&buf, 1 << 20) != cudaSuccess) return fail("cudaMalloc", 0);

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "default_pg";
  ncclComm_t world_comm = nullptr;
  auto init = &ncclCommInitRankConfig;
  if (getenv("NCCL_STYLE_UNHOOKED_INIT"))
    init = reinterpret_cast<decltype(init)>(dlsym(RTLD_DEFAULT, "pncclCommInitRankConfig"));
  if (!init) return fail("dlsym pncclCommInitRankConfig", 0);
  ncclResult_t r = init(&world_comm, world, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) return fail("ncclCommInitRankConfig", r);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress)
    if ((r = ncclCommGetAsyncError(world_comm, &state)) != ncclSuccess) return fail("ncclCommGetAsyncError", r);
  if (state != ncclSuccess) return fail("non-blocking init", state);

  ncclConfig_t split_config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t split = nullptr;
  if ((r = ncclCommSplit(world_comm, 0, world - rank, &split, &split_config)) != ncclSuccess)
    return fail("ncclCommSplit", r);
  ncclComm_t scalable = nullptr;
  if ((r = ncclCommInitRankScalable(&scalable, world, rank, 1, &id2, nullptr)) != ncclSuccess)
    return fail("ncclCommInitRankScalable", r);

  const size_t n = 1024;
  auto* f = static_cast<float*>(buf);
  if ((r = ncclAllReduce(f, f, n, ncclFloat32, ncclSum, world_comm, stream)) != ncclSuccess) return fail("AllReduce", r);
  printf("call all_reduce %d %d\n", rank, world);
  if ((r = ncclAlltoAll(f, f + n, n / world, ncclFloat32, world_comm, stream)) != ncclSuccess) return fail("AlltoAll", r);
  printf("call all_to_all %d %d\n", rank, world);
  if ((r = ncclGather(f, f + n, 64, ncclFloat32, 0, world_comm, stream)) != ncclSuccess) return fail("Gather", r);
  printf("call gather %d %d\n", rank, world);
  if ((r = ncclScatter(f, f + n, 64, ncclFloat32, 0, world_comm, stream)) != ncclSuccess) return fail("Scatter", r);
  printf("call scatter %d %d\n", rank, world);
  if ((r = ncclBcast(f, 128, ncclBfloat16, 0, world_comm, stream)) != ncclSuccess) return fail("Bcast", r);
  printf("call broadcast %d %d\n", rank, world);
  if ((r = ncclAllReduce(f, f, n, ncclFloat32, ncclSum, split, stream)) != ncclSuccess) return fail("split AllReduce", r);
  printf("call all_reduce %d %d\n", world - 1 - rank, world);
  if ((r = ncclAllReduce(f, f, n, ncclFloat32, ncclSum, scalable, stream)) != ncclSuccess)
    return fail("scalable AllReduce", r);
  printf("call all_reduce %d %d\n", rank, world);
  ncclGroupStart();
  if ((r = ncclSend(f, 256, ncclFloat32, (rank + 1) % world, world_comm, stream)) != ncclSuccess) return fail("Send", r);
  if ((r = ncclRecv(f + n, 256, ncclFloat32, (rank + world - 1) % world, world_comm, stream)) != ncclSuccess)
    return fail("Recv", r);
  if ((r = ncclGroupEnd()) != ncclSuccess) return fail("GroupEnd", r);
  printf("call send %d %d\ncall recv %d %d\n", rank, world, rank, world);
  if (cudaStreamSynchronize(stream) != cudaSuccess) return fail("cudaStreamSynchronize", 0);
  ncclCommDestroy(scalable);
  ncclCommDestroy(split);
  ncclCommDestroy(world_comm);
  return 0;
}

int run_all(int ndev) {
  const size_t n = static_cast<size_t>(ndev);
  std::vector<ncclComm_t> comms(n, nullptr);
  std::vector<cudaStream_t> streams(n);
  std::vector<void*> bufs(n);
  for (int d = 0; d < ndev; ++d) {
    if (cudaSetDevice(d) != cudaSuccess || cudaStreamCreate(&streams[size_t(d)]) != cudaSuccess ||
        cudaMalloc(&bufs[size_t(d)], 4096) != cudaSuccess)
      return fail("setting up a device", d);
  }
  ncclResult_t r = ncclCommInitAll(comms.data(), ndev, nullptr);
  if (r != ncclSuccess) return fail("ncclCommInitAll", r);
  ncclGroupStart();
  for (int d = 0; d < ndev; ++d)
    if ((r = ncclAllReduce(bufs[size_t(d)], bufs[size_t(d)], 1024, ncclFloat32, ncclSum, comms[size_t(d)],
                           streams[size_t(d)])) != ncclSuccess)
      return fail("AllReduce", r);
  if ((r = ncclGroupEnd()) != ncclSuccess) return fail("GroupEnd", r);
  for (int d = 0; d < ndev; ++d) {
    cudaSetDevice(d);
    if (cudaStreamSynchronize(streams[size_t(d)]) != cudaSuccess) return fail("cudaStreamSynchronize", d);
    printf("call all_reduce %d %d\n", d, ndev);
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && !strcmp(argv[1], "all")) return run_all(atoi(argv[2]) > 0 ? atoi(argv[2]) : 2);
  const char* rank = getenv("RANK");
  if (!rank) {
    int ranks = argc > 1 ? atoi(argv[1]) : 2;
    if (ranks < 1 || ranks > 8) {
      fprintf(stderr, "usage: nccl_pytorch_style [ranks 1..8]\n");
      return 2;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return fail("readlink /proc/self/exe", errno);
    self[len] = 0;
    return launch(ranks, self);
  }
  const char* world = getenv("WORLD_SIZE");
  return run_rank(atoi(rank), world ? atoi(world) : 1);
}
