// NCCL host-call hooks (LD_PRELOAD only): CUPTI does not see NCCL's host API, only the kernels it
// launches, so these are recorded in every mode. The real function is found with
// dlsym(RTLD_NEXT), else under its profiling name pnccl* (NCCL exports both). Conda builds of
// PyTorch link NCCL statically: then nothing here is called, and only the kernels are recorded.
#include <nccl.h>

#include "host_clock.h"
#include "symbol_hooks.h"

using namespace gapwatch;

namespace {

namespace op = wire::NcclOp;

thread_local int t_group_depth __attribute__((tls_model("initial-exec"))) = 0;

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

// `exit` is read by the caller right after the real call returns: the recorded interval is NCCL's,
// not NCCL's plus the hook's own bookkeeping.
void record(const NcclCallInfo& c, uint64_t enter, uint64_t exit, ncclResult_t result) {
  Recorder* recorder = Recorder::active();
  if (!recorder || Recorder::on_internal_thread()) return;
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

#define NCCL_REAL(fn)                                                   \
  static std::atomic<decltype(&fn)> real_##fn{nullptr};                 \
  auto real = real_nccl(real_##fn, #fn, "p" #fn);                       \
  if (!real) return ncclInternalError;                                  \
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
  if (Recorder* recorder = Recorder::active(); recorder && r == ncclSuccess && comm)
    recorder->note_nccl_comm(reinterpret_cast<uint64_t>(*comm), rank, nranks);
  if (enter) record({op::kCommInit, comm ? *comm : nullptr, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}

GAPWATCH_HOOK ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NCCL_REAL(ncclCommDestroy);
  ncclResult_t r = real(comm);
  uint64_t exit = enter ? host_ticks() : 0;
  if (enter) record({op::kCommDestroy, comm, 0, ncclInt8, -1, nullptr}, enter, exit, r);
  return r;
}
