// The simulated libnccl.so.2: communicators across processes, collectives and point-to-point calls
// that queue NCCL kernels on the caller's stream, and the pnccl* profiling names.
//
// As in real NCCL: the host call returns once the kernel is queued; the kernel is launched through
// the driver's cuLaunchKernelEx (never through libcudart, so only CUPTI sees it); its name starts
// with ncclDevKernel_ and is mangled; a kernel cannot finish before every rank's kernel has
// started, so a rank that arrives early shows a long NCCL kernel (it spins on the device). Calls
// between ncclGroupStart/End are launched as one kernel at the outermost ncclGroupEnd.
//
// The ranks of a communicator meet in a POSIX shared-memory segment named from the unique id. Each
// collective on a communicator has a sequence number; every rank's device publishes its kernel's
// start under it, and the kernel ends at the latest start + transfer time. SPMD programs call the
// same collectives in the same order on every rank, which is what this relies on.
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../driver/sim_driver.h"

namespace {

using namespace simcuda;

constexpr int kMaxRanks = 64;
constexpr int kSlots = 4096;
constexpr int64_t kHostCallNs = 5000;  // host time of a collective call, on top of the launch
constexpr uint64_t kInitTimeoutNs = 60ull * 1000000000ull;
constexpr const char* kIdMagic = "gapwatch-simnccl:";

struct Slot {
  std::atomic<uint64_t> seq_plus_one[kMaxRanks];
  std::atomic<uint64_t> start_ns[kMaxRanks];
};

struct SharedComm {
  std::atomic<uint32_t> joined;
  std::atomic<uint32_t> epoch;  // bumped by every publish; a process-shared futex word
  Slot slots[kSlots];
};

}  // namespace

struct ncclComm {
  SharedComm* shared = nullptr;
  int nranks = 0;
  int rank = 0;
  int device = 0;
  uint64_t next_seq = 0;
  std::string last_error;
};

namespace {

struct PendingOp {
  std::string collective;  // "AllReduce", "Send", ...
  uint64_t wire_bytes;     // bytes each rank moves (bus bytes)
  uint64_t bytes;          // the call's own payload
  ncclComm_t comm;
  cudaStream_t stream;
};

thread_local int t_group_depth = 0;
thread_local std::vector<PendingOp> t_group;

class NcclRendezvous : public Rendezvous {
 public:
  NcclRendezvous(SharedComm* shared, uint64_t seq, int rank, int nranks)
      : shared_(shared), slot_(shared->slots[seq % kSlots]), seq_(seq), rank_(rank), nranks_(nranks) {}
  void publish(uint64_t start_ns) override {
    slot_.start_ns[rank_].store(start_ns, std::memory_order_relaxed);
    slot_.seq_plus_one[rank_].store(seq_ + 1, std::memory_order_release);
    shared_->epoch.fetch_add(1, std::memory_order_acq_rel);
    // Not FUTEX_PRIVATE: the waiters are in the other ranks' processes too.
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&shared_->epoch), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
  uint32_t epoch() override { return shared_->epoch.load(std::memory_order_acquire); }
  void wait_for_epoch_change(uint32_t seen, uint64_t max_ns) override {
    timespec timeout{time_t(max_ns / 1000000000ull), long(max_ns % 1000000000ull)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&shared_->epoch), FUTEX_WAIT, seen, &timeout, nullptr, 0);
  }
  bool collect(uint64_t* latest) override {
    uint64_t m = 0;
    for (int r = 0; r < nranks_; ++r) {
      if (slot_.seq_plus_one[r].load(std::memory_order_acquire) != seq_ + 1) return false;
      m = std::max(m, slot_.start_ns[r].load(std::memory_order_relaxed));
    }
    *latest = m;
    return true;
  }

 private:
  SharedComm* shared_;
  Slot& slot_;
  uint64_t seq_;
  int rank_, nranks_;
};

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

const char* type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "i8";
    case ncclUint8: return "u8";
    case ncclInt32: return "i32";
    case ncclUint32: return "u32";
    case ncclInt64: return "i64";
    case ncclUint64: return "u64";
    case ncclFloat16: return "f16";
    case ncclFloat32: return "f32";
    case ncclFloat64: return "f64";
    case ncclBfloat16: return "bf16";
    default: return "u8";
  }
}

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "Sum";
    case ncclProd: return "Prod";
    case ncclMax: return "Max";
    case ncclMin: return "Min";
    case ncclAvg: return "Avg";
    default: return "Sum";
  }
}

// What CUPTI's Kernel10.name carries for NCCL >= 2.19: a C++-mangled ncclDevKernel_* symbol.
const char* kernel_name(const std::string& plain) {
  std::string mangled = "_Z" + std::to_string(plain.size()) + plain + "24ncclDevKernelArgsStorageILm4096EE";
  return intern(mangled);
}

void launch_kernel(ncclComm_t comm, cudaStream_t stream_handle, const char* name, uint64_t wire_bytes,
                   uint64_t stream_id_out[1]) {
  const SimDeviceConfig& cfg = config();
  Stream* stream = resolve_stream(stream_handle, comm->device);
  stream_id_out[0] = stream_id(stream);
  CUlaunchConfig lc{};
  lc.gridDimX = lc.gridDimY = lc.gridDimZ = 1;
  lc.blockDimX = 640, lc.blockDimY = lc.blockDimZ = 1;
  lc.hStream = reinterpret_cast<CUstream>(stream_handle);
  cuLaunchKernelEx_params params{&lc, nullptr, nullptr, nullptr};
  CUresult ret = CUDA_SUCCESS;
  ApiScope scope(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx",
                 SIM_CALL_LAUNCH, &params, &ret, name);
  scope.set_stream(stream_id(stream));
  spend(cfg.launch_api_ns);
  OpRequest r;
  r.kind = SIM_OP_KERNEL;
  r.stream = stream;
  r.name = name;
  r.bytes = wire_bytes;
  r.duration_ns = cfg.nccl_latency_ns + int64_t(double(wire_bytes) / cfg.nccl_gbps);
  r.correlation_id = scope.correlation_id();
  if (comm->nranks > 1) r.rendezvous = new NcclRendezvous(comm->shared, comm->next_seq++, comm->rank, comm->nranks);
  scope.set_op(enqueue(r));
  scope.finish();
}

// A kernel name built on the stack: what a collective's entry point holds must need no free()
// after submit() logged the call's exit time, or the truth's call would end before the call
// returns (a heap string's destructor ran about 40 ns past the logged exit).
struct KernelName {
  char text[128];
  KernelName(const char* format, const char* a, const char* b) { snprintf(text, sizeof text, format, a, b); }
  operator const char*() const { return text; }
};

// Launches now, or keeps it for the group's end. `enter` is read first thing in the API entry
// point, where an interposed profiler's own clock read also is.
ncclResult_t submit(const char* api, PendingOp op, const char* kernel, uint64_t enter) {
  if (!op.comm) return ncclInvalidArgument;
  ensure_initialized();
  SimApiCall* call = open_nccl_call(api, enter, op.bytes);
  uint64_t sid = 0;
  if (t_group_depth > 0) {
    t_group.push_back(op);
    sid = stream_id(resolve_stream(op.stream, op.comm->device));
  } else {
    spend(kHostCallNs);
    launch_kernel(op.comm, op.stream, kernel_name(kernel), op.wire_bytes, &sid);
  }
  close_nccl_call(call, sid);
  return ncclSuccess;
}

uint64_t ring_bytes(const char* coll, uint64_t bytes, int nranks) {
  double n = nranks;
  if (!strcmp(coll, "AllReduce")) return uint64_t(double(bytes) * 2.0 * (n - 1) / n);
  if (!strcmp(coll, "AllGather") || !strcmp(coll, "ReduceScatter")) return uint64_t(double(bytes) * (n - 1) / n);
  return bytes;
}

}  // namespace

#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))
// ncclX is a weak alias of pncclX, as in NCCL, so a profiler can interpose ncclX and call pncclX.
#define NCCL_ALIAS(ret, name, ...) NCCL_EXPORT ret name(__VA_ARGS__) __attribute__((weak, alias("p" #name)))

NCCL_EXPORT ncclResult_t pncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclGetVersion, int* version);

NCCL_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::random_device rd;
  uint64_t a = (uint64_t(rd()) << 32) ^ rd(), b = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(getpid());
  memset(id->internal, 0, sizeof id->internal);
  snprintf(id->internal, sizeof id->internal, "%s%016llx%016llx", kIdMagic, (unsigned long long)a,
           (unsigned long long)b);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclGetUniqueId, ncclUniqueId* id);

NCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  uint64_t enter = now_ns();
  ensure_initialized();
  if (!out || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (strncmp(id.internal, kIdMagic, strlen(kIdMagic)) != 0) return ncclInvalidArgument;
  std::string name = "/" + std::string(id.internal).replace(0, strlen(kIdMagic), "gapwatch-simnccl-");
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return ncclSystemError;
  if (ftruncate(fd, sizeof(SharedComm)) != 0) {
    close(fd);
    return ncclSystemError;
  }
  void* p = mmap(nullptr, sizeof(SharedComm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ncclSystemError;
  auto* comm = new ncclComm;
  comm->shared = static_cast<SharedComm*>(p);
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = current_device();
  // Init is collective: every rank waits for the others, as real NCCL does.
  comm->shared->joined.fetch_add(1);
  while (comm->shared->joined.load() < uint32_t(nranks)) {
    if (now_ns() - enter > kInitTimeoutNs) return ncclSystemError;
    usleep(100);
  }
  if (rank == 0) shm_unlink(name.c_str());  // every rank has it mapped now; leave nothing in /dev/shm
  *out = comm;
  close_nccl_call(open_nccl_call("ncclCommInitRank", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);

NCCL_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  close_nccl_call(open_nccl_call("ncclCommFinalize", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommFinalize, ncclComm_t comm);

NCCL_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  // The mapping stays: device ops still pending may read their rendezvous slots.
  close_nccl_call(open_nccl_call("ncclCommDestroy", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommDestroy, ncclComm_t comm);

NCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  close_nccl_call(open_nccl_call("ncclCommAbort", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommAbort, ncclComm_t comm);

NCCL_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);

NCCL_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);

NCCL_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);

NCCL_EXPORT const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    default: return "unhandled error";
  }
}
NCCL_ALIAS(const char*, ncclGetErrorString, ncclResult_t result);

NCCL_EXPORT const char* pncclGetLastError(ncclComm_t) { return ""; }
NCCL_ALIAS(const char*, ncclGetLastError, ncclComm_t comm);

NCCL_EXPORT ncclResult_t pncclAllReduce(const void*, void*, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                                        ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  KernelName k("ncclDevKernel_AllReduce_%s_%s_RING_LL", op_name(op), type_name(datatype));
  return submit("ncclAllReduce", {"AllReduce", ring_bytes("AllReduce", bytes, comm->nranks), bytes, comm, stream}, k, enter);
}
NCCL_ALIAS(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclBroadcast(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclBroadcast", {"Broadcast", bytes, bytes, comm, stream}, "ncclDevKernel_Broadcast_RING_LL", enter);
}
NCCL_ALIAS(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclReduce(const void*, void*, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  KernelName k("ncclDevKernel_Reduce_%s_%s_RING_LL", op_name(op), type_name(datatype));
  return submit("ncclReduce", {"Reduce", bytes, bytes, comm, stream}, k, enter);
}
NCCL_ALIAS(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclAllGather(const void*, void*, size_t sendcount, ncclDataType_t datatype,
                                        ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  uint64_t bytes = sendcount * type_size(datatype) * uint64_t(comm->nranks);
  return submit("ncclAllGather", {"AllGather", ring_bytes("AllGather", bytes, comm->nranks), bytes, comm, stream},
                "ncclDevKernel_AllGather_RING_LL", enter);
}
NCCL_ALIAS(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclReduceScatter(const void*, void*, size_t recvcount, ncclDataType_t datatype,
                                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  uint64_t bytes = recvcount * type_size(datatype) * uint64_t(comm->nranks);
  KernelName k("ncclDevKernel_ReduceScatter_%s_%s_RING_LL", op_name(op), type_name(datatype));
  return submit("ncclReduceScatter",
                {"ReduceScatter", ring_bytes("ReduceScatter", bytes, comm->nranks), bytes, comm, stream}, k, enter);
}
NCCL_ALIAS(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclSend(const void*, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclSend", {"Send", bytes, bytes, comm, stream}, "ncclDevKernel_SendRecv", enter);
}
NCCL_ALIAS(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
           ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclRecv(void*, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclRecv", {"Recv", bytes, bytes, comm, stream}, "ncclDevKernel_SendRecv", enter);
}
NCCL_ALIAS(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclGroupStart() {
  uint64_t enter = now_ns();
  ++t_group_depth;
  close_nccl_call(open_nccl_call("ncclGroupStart", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclGroupStart);

NCCL_EXPORT ncclResult_t pncclGroupEnd() {
  uint64_t enter = now_ns();
  if (t_group_depth == 0) return ncclInvalidUsage;
  uint64_t sid = 0;
  if (--t_group_depth == 0 && !t_group.empty()) {
    // One kernel per communicator and stream for the whole group, as NCCL fuses grouped calls.
    std::vector<PendingOp> ops;
    ops.swap(t_group);
    spend(kHostCallNs);
    for (size_t i = 0; i < ops.size(); ++i) {
      bool seen = false;
      for (size_t j = 0; j < i; ++j) seen |= ops[j].comm == ops[i].comm && ops[j].stream == ops[i].stream;
      if (seen) continue;
      uint64_t wire = 0;
      bool same = true;
      for (size_t j = i; j < ops.size(); ++j) {
        if (ops[j].comm != ops[i].comm || ops[j].stream != ops[i].stream) continue;
        wire += ops[j].wire_bytes;
        same &= ops[j].collective == ops[i].collective;
      }
      bool p2p = ops[i].collective == "Send" || ops[i].collective == "Recv";
      std::string k = p2p ? "ncclDevKernel_SendRecv"
                          : same ? "ncclDevKernel_" + ops[i].collective + "_RING_LL" : "ncclDevKernel_Generic";
      launch_kernel(ops[i].comm, ops[i].stream, kernel_name(k), wire, &sid);
    }
  }
  close_nccl_call(open_nccl_call("ncclGroupEnd", enter, 0), sid);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclGroupEnd);
