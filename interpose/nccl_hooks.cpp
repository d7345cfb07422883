// NCCL host-call hooks (LD_PRELOAD only): CUPTI does not see NCCL's host API, only the kernels it
// launches, so these are recorded in every mode. The real function is found with
// dlsym(RTLD_NEXT), else under its profiling name pnccl* (NCCL exports both). Conda builds of
// PyTorch link NCCL statically: then nothing here is called, and the profiler plugin route
// (nccl_profiler_plugin.cpp) is the one that sees the calls.
//
// Every NCCL 2.28 collective and point-to-point call is hooked, and every way to create a
// communicator. A communicator first seen in a call (created before recording started, or by a
// creation call that is not hooked) is asked its rank and size once, through the real
// ncclCommUserRank/ncclCommCount, outside any lock of ours.
#include <nccl.h>

#include "host_clock.h"
#include "nccl_comm_cache.h"
#include "nccl_route.h"
#include "symbol_hooks.h"

namespace gapwatch {
thread_local int t_nccl_hook_depth __attribute__((tls_model("initial-exec"))) = 0;
}

using namespace gapwatch;

namespace {

namespace op = wire::NcclOp;

thread_local int t_group_depth __attribute__((tls_model("initial-exec"))) = 0;

// Communicators whose rank and size the recorder has (nccl_comm_cache.h): read without a lock on
// every call.
NcclCommCache<> g_known_comms;

bool comm_known(uint64_t handle) { return g_known_comms.known(handle); }
void remember_comm(uint64_t handle) { g_known_comms.remember(handle); }
// Called before the real destroy or abort, never after: the real call frees the communicator, and
// from then on another thread's new one may have its address. Forgotten after, a new one made in
// between by a call the hooks do not see (ncclCommShrink, a pnccl* name) was taken for the old one
// and kept its rank. A destroy that fails leaves a live communicator forgotten: asked again at its
// next call, which costs one lookup.
void forget_comm(const void* comm) { g_known_comms.forget(reinterpret_cast<uint64_t>(comm)); }

void note_comm(Recorder* recorder, const void* comm, int rank, int nranks) {
  if (!comm) return;
  recorder->note_nccl_comm(reinterpret_cast<uint64_t>(comm), rank, nranks);
  remember_comm(reinterpret_cast<uint64_t>(comm));
}

size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

template <class F>
F real_nccl(std::atomic<F>& cache, const char* name, const char* profiling_name) {
  F f = real_function(cache, name);
  if (!f) {
    f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, profiling_name));
    cache.store(f, std::memory_order_release);
  }
  return f;
}

struct NcclCallInfo {
  uint8_t op;
  const void* comm;
  size_t count;
  ncclDataType_t type;
  int peer;
  cudaStream_t stream;
};

// Rank and size of a communicator the recorder has not seen created (once per communicator).
void learn_comm(Recorder* recorder, ncclComm_t comm) {
  using RankFn = ncclResult_t (*)(const ncclComm_t, int*);
  static std::atomic<RankFn> user_rank{nullptr}, count{nullptr};
  RankFn rank_fn = real_nccl(user_rank, "ncclCommUserRank", "pncclCommUserRank");
  RankFn count_fn = real_nccl(count, "ncclCommCount", "pncclCommCount");
  int rank = -1, nranks = 0;
  if (!rank_fn || !count_fn || rank_fn(comm, &rank) != ncclSuccess || count_fn(comm, &nranks) != ncclSuccess)
    rank = -1, nranks = 0;
  note_comm(recorder, comm, rank, nranks);
}

// `exit` is read by the caller right after the real call returns: the recorded interval is NCCL's,
// not NCCL's plus the hook's own bookkeeping. A communicator is asked about only after a call NCCL
// accepted (a handle it refused may not be a communicator at all), and never after its destroy.
void record(const NcclCallInfo& c, uint64_t enter, uint64_t exit, ncclResult_t result) {
  Recorder* recorder = Recorder::active();
  if (!recorder || Recorder::on_internal_thread()) return;
  if (c.comm && c.op != op::kCommDestroy && (result == ncclSuccess || result == ncclInProgress) &&
      __builtin_expect(!comm_known(reinterpret_cast<uint64_t>(c.comm)), 0))
    learn_comm(recorder, static_cast<ncclComm_t>(const_cast<void*>(c.comm)));
  NcclCallRecord* e = recorder->reserve_nccl_call();
  if (!e) return;
  e->op = c.op;
  e->start_ticks = enter;
  e->end_ticks = exit;
  e->comm = c.comm;
  e->bytes = c.count * (c.count ? type_bytes(c.type) : 0);
  e->count = c.count;
  e->data_type = c.count ? uint8_t(int(c.type) + 1) : 0;  // NcclDataType = ncclDataType_t + 1
  e->peer = c.peer;
  e->stream = reinterpret_cast<uint64_t>(c.stream);
  e->return_code = int32_t(result);
  e->group_depth = uint32_t(t_group_depth);
  recorder->publish();
}

// Marks the real call as recorded by a hook (nccl_route.h), for the plugin route to leave alone.
struct HookScope {
  HookScope() { ++t_nccl_hook_depth; }
  ~HookScope() { --t_nccl_hook_depth; }
};

bool created(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }  // non-blocking: InProgress

#define NCCL_REAL(fn)                                                   \
  static std::atomic<decltype(&fn)> real_##fn{nullptr};                 \
  auto real = real_nccl(real_##fn, #fn, "p" #fn);                       \
  if (!real) return ncclInternalError;                                  \
  HookScope hook_scope;                                                 \
  uint64_t enter = Recorder::active() ? host_ticks() : 0

}  // namespace

GAPWATCH_HOOK ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclAllReduce);
  ncclResult_t r = real(sendbuff, recvbuff, count, datatype, op, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kAllReduce, comm, count, datatype, -1, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclBroadcast);
  ncclResult_t r = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kBroadcast, comm, count, datatype, root, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclReduce);
  ncclResult_t r = real(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kReduce, comm, count, datatype, root, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclAllGather);
  ncclResult_t r = real(sendbuff, recvbuff, sendcount, datatype, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kAllGather, comm, sendcount, datatype, -1, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                             cudaStream_t stream) {
  NCCL_REAL(ncclReduceScatter);
  ncclResult_t r = real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kReduceScatter, comm, recvcount, datatype, -1, stream}, enter, exit, r);
  return r;
}

// The in-place broadcast: recorded as a broadcast.
GAPWATCH_HOOK ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  NCCL_REAL(ncclBcast);
  ncclResult_t r = real(buff, count, datatype, root, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kBroadcast, comm, count, datatype, root, stream}, enter, exit, r);
  return r;
}

// `count` is per peer, as NCCL takes it.
GAPWATCH_HOOK ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclAlltoAll);
  ncclResult_t r = real(sendbuff, recvbuff, count, datatype, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kAllToAll, comm, count, datatype, -1, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclGather);
  ncclResult_t r = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kGather, comm, count, datatype, root, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclScatter);
  ncclResult_t r = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kScatter, comm, count, datatype, root, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclComm_t comm, cudaStream_t stream) {
  NCCL_REAL(ncclSend);
  ncclResult_t r = real(sendbuff, count, datatype, peer, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kSend, comm, count, datatype, peer, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                    cudaStream_t stream) {
  NCCL_REAL(ncclRecv);
  ncclResult_t r = real(recvbuff, count, datatype, peer, comm, stream);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kRecv, comm, count, datatype, peer, stream}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclGroupStart() {
  NCCL_REAL(ncclGroupStart);
  ncclResult_t r = real();
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kGroupStart, nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  ++t_group_depth;
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclGroupEnd() {
  NCCL_REAL(ncclGroupEnd);
  if (t_group_depth > 0) --t_group_depth;
  ncclResult_t r = real();
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kGroupEnd, nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  NCCL_REAL(ncclCommInitRank);
  ncclResult_t r = real(comm, nranks, id, rank);
  uint64_t exit = enter ? host_ticks() : 0;
  if (Recorder* recorder = Recorder::active(); recorder && created(r) && comm) note_comm(recorder, *comm, rank, nranks);
  if (enter) record({op::kCommInit, comm ? *comm : nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

// PyTorch's way (ProcessGroupNCCL): a config, often non-blocking (then ncclInProgress, and the
// communicator is already there to be polled).
GAPWATCH_HOOK ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                  ncclConfig_t* config) {
  NCCL_REAL(ncclCommInitRankConfig);
  ncclResult_t r = real(comm, nranks, id, rank, config);
  uint64_t exit = enter ? host_ticks() : 0;
  if (Recorder* recorder = Recorder::active(); recorder && created(r) && comm) note_comm(recorder, *comm, rank, nranks);
  if (enter) record({op::kCommInit, comm ? *comm : nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int myrank, int nId,
                                                    ncclUniqueId* ids, ncclConfig_t* config) {
  NCCL_REAL(ncclCommInitRankScalable);
  ncclResult_t r = real(comm, nranks, myrank, nId, ids, config);
  uint64_t exit = enter ? host_ticks() : 0;
  if (Recorder* recorder = Recorder::active(); recorder && created(r) && comm)
    note_comm(recorder, *comm, myrank, nranks);
  if (enter) record({op::kCommInit, comm ? *comm : nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  NCCL_REAL(ncclCommInitAll);
  ncclResult_t r = real(comms, ndev, devlist);
  uint64_t exit = enter ? host_ticks() : 0;
  if (Recorder* recorder = Recorder::active(); recorder && created(r) && comms)
    for (int i = 0; i < ndev; ++i) note_comm(recorder, comms[i], i, ndev);
  if (enter && comms)
    for (int i = 0; i < ndev; ++i) record({op::kCommInit, comms[i], 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

// The new communicator's rank and size are not in the arguments: asked from NCCL (init-time).
GAPWATCH_HOOK ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                         ncclConfig_t* config) {
  NCCL_REAL(ncclCommSplit);
  ncclResult_t r = real(comm, color, key, newcomm, config);
  uint64_t exit = enter ? host_ticks() : 0;
  if (Recorder* recorder = Recorder::active(); recorder && created(r) && newcomm && *newcomm)
    learn_comm(recorder, *newcomm);
  // NCCL_SPLIT_NOCOLOR: this rank has no new communicator; the call is still recorded.
  if (enter) record({op::kCommInit, newcomm ? *newcomm : nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NCCL_REAL(ncclCommAbort);
  forget_comm(comm);  // before the free: see forget_comm
  ncclResult_t r = real(comm);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kCommDestroy, comm, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NCCL_REAL(ncclCommDestroy);
  forget_comm(comm);  // before the free: see forget_comm
  ncclResult_t r = real(comm);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kCommDestroy, comm, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}
