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
//
// ncclCommDestroy and ncclCommAbort free the communicator, as real NCCL does: the handle is invalid
// from then on, and the next communicator made in the process may get its address. Which one does
// is an allocator's choice; here it is always the next one made, by any thread (the memory of the
// communicator freed last is taken first), so that a tool keying anything by the handle sees the
// reuse. SIMCUDA_NCCL_DESTROY_LINGER_MS=N keeps the destroying call from returning for N ms after
// the free, as a slow teardown's tail would: another thread's new communicator can take the
// address while the destroy is still in progress (docs/simcuda.md, knobs).
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stddef.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../driver/sim_driver.h"
#include "profiler_host.h"

namespace {

using namespace simcuda;

constexpr int kMaxRanks = 64;
constexpr int kSlots = 4096;
constexpr int64_t kHostCallNs = 5000;  // host time of a collective call, on top of the launch
constexpr uint64_t kInitTimeoutNs = 60ull * 1000000000ull;
constexpr const char* kIdMagic = "gapwatch-simnccl:";
constexpr unsigned kConfigMagic = 0xcafebeef;  // what NCCL_CONFIG_INITIALIZER writes
constexpr int kSplitSlots = 16;

struct Slot {
  std::atomic<uint64_t> seq_plus_one[kMaxRanks];
  std::atomic<uint64_t> start_ns[kMaxRanks];
};

// ncclCommSplit is collective over the parent: each rank posts its color and key under the
// split's sequence number, then reads everyone's.
struct SplitSlot {
  std::atomic<uint64_t> seq_plus_one[kMaxRanks];
  int32_t color[kMaxRanks];
  int32_t key[kMaxRanks];
};

struct SharedComm {
  std::atomic<uint32_t> joined;
  std::atomic<uint32_t> epoch;  // bumped by every publish; a process-shared futex word
  Slot slots[kSlots];
  SplitSlot splits[kSplitSlots];
};

}  // namespace

struct ncclComm {
  SharedComm* shared = nullptr;
  std::string segment;  // the shared segment's name, which split communicators derive theirs from
  uint64_t hash = 0;    // what NCCL calls commHash: the same on every rank
  int nranks = 0;
  int rank = 0;
  int device = 0;
  bool nonblocking = false;
  uint64_t next_seq = 0;
  uint64_t next_split = 0;
  std::string last_error;
  simnccl::ProfilerComm profiler;
};

namespace {

// Freed communicators' memory, the last freed on top; taken by the next communicator made.
std::mutex g_freed_comms_mu;
std::vector<void*> g_freed_comms;

ncclComm* new_comm() {
  void* memory = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_freed_comms_mu);
    if (!g_freed_comms.empty()) {
      memory = g_freed_comms.back();
      g_freed_comms.pop_back();
    }
  }
  return memory ? new (memory) ncclComm : new ncclComm;
}

// The end of ncclCommDestroy/ncclCommAbort. The shared segment stays mapped: device ops still
// pending hold their rendezvous slots in it.
void free_comm(ncclComm* comm) {
  comm->~ncclComm();
  {
    std::lock_guard<std::mutex> lock(g_freed_comms_mu);
    g_freed_comms.push_back(comm);
  }
  if (const char* linger = getenv("SIMCUDA_NCCL_DESTROY_LINGER_MS"))
    if (int ms = atoi(linger); ms > 0) usleep(useconds_t(ms) * 1000);
}

struct PendingOp {
  std::string collective;  // "AllReduce", "Send", ...
  uint64_t wire_bytes;     // bytes each rank moves (bus bytes)
  uint64_t bytes;          // the call's own payload
  ncclComm_t comm;
  cudaStream_t stream;
  // What the profiler plugin's task event describes.
  size_t count = 0;
  ncclDataType_t datatype = ncclUint8;
  int root_or_peer = -1;
  void* api_event = nullptr;  // the call's CollApi/P2pApi event, the task's parent (v5+)
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

// What the plugin's events say about a call.
simnccl::ProfilerOp profiler_op(const PendingOp& op) {
  bool p2p = op.collective == "Send" || op.collective == "Recv";
  return {op.collective.c_str(), op.count, op.datatype, op.root_or_peer, nullptr, nullptr,
          reinterpret_cast<void*>(op.stream), op.comm->next_seq, p2p};
}

// The task events NCCL gives a plugin for one kernel's worth of enqueued work: v4 wraps them in a
// Group event; v5+ parents each to its API event and adds the KernelLaunch.
void launch_with_events(const std::vector<PendingOp*>& ops, const char* kernel, uint64_t wire, uint64_t* sid) {
  ncclComm_t comm = ops[0]->comm;
  simnccl::ProfilerComm& pc = comm->profiler;
  void* group = simnccl::profiler_version() == 4 ? simnccl::profiler_group_start(pc) : nullptr;
  std::vector<void*> tasks;
  for (PendingOp* op : ops)
    tasks.push_back(simnccl::profiler_task_start(pc, profiler_op(*op), group ? group : op->api_event));
  void* launch = simnccl::profiler_launch_start(pc, reinterpret_cast<void*>(ops[0]->stream), ops[0]->api_event);
  launch_kernel(comm, ops[0]->stream, kernel, wire, sid);
  simnccl::profiler_launch_stop(pc, launch);
  // A task's stop means NCCL enqueued it, not that it ran.
  for (void* t : tasks) simnccl::profiler_task_stop(pc, t);
  simnccl::profiler_group_stop(pc, group);
}

// Launches now, or keeps it for the group's end. `enter` is read first thing in the API entry
// point, where an interposed profiler's own clock read also is.
// The call's API event (v5+) spans it, entry to return.
ncclResult_t submit(const char* api, PendingOp op, const char* kernel, uint64_t enter) {
  if (!op.comm) return ncclInvalidArgument;
  ensure_initialized();
  SimApiCall* call = open_nccl_call(api, enter, op.bytes);
  op.api_event = simnccl::profiler_api_start(op.comm->profiler, profiler_op(op));
  uint64_t sid = 0;
  if (t_group_depth > 0) {
    t_group.push_back(op);
    sid = stream_id(resolve_stream(op.stream, op.comm->device));
  } else {
    spend(kHostCallNs);
    launch_with_events({&op}, kernel_name(kernel), op.wire_bytes, &sid);
  }
  simnccl::profiler_api_stop(op.comm->profiler, op.api_event);
  close_nccl_call(call, sid);
  return ncclSuccess;
}

bool is_p2p_kernel(const std::string& collective) {
  return collective == "Send" || collective == "Recv" || collective == "AlltoAll" || collective == "Gather" ||
         collective == "Scatter";
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

namespace {

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// What NCCL takes from a config: NCCL_CONFIG_INITIALIZER's magic must be there (an uninitialised
// config is an error), and only the fields its `size` covers are read.
struct ConfigView {
  bool nonblocking = false;
  const char* comm_name = nullptr;
};

bool read_config(const ncclConfig_t* config, ConfigView* out) {
  *out = ConfigView{};
  if (!config) return true;
  if (config->magic != kConfigMagic || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) return false;
  // blocking: 1 (and NCCL_CONFIG_UNDEF_INT, the default) blocks; 0 makes calls return
  // ncclInProgress, to be polled with ncclCommGetAsyncError.
  out->nonblocking = config->blocking == 0;
  if (config->size >= offsetof(ncclConfig_t, commName) + sizeof(const char*)) out->comm_name = config->commName;
  return true;
}

// Maps (creating) the communicator's shared segment and joins it. `wait`: block until every rank
// joined, as a blocking init does; ncclCommInitAll joins all its ranks from one thread and cannot.
ncclResult_t join(const std::string& segment, int nranks, int rank, int device, uint64_t hash, uint32_t joining,
                  bool wait, uint64_t enter, ncclComm_t* out) {
  int fd = shm_open(segment.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return ncclSystemError;
  if (ftruncate(fd, sizeof(SharedComm)) != 0) {
    close(fd);
    return ncclSystemError;
  }
  void* p = mmap(nullptr, sizeof(SharedComm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ncclSystemError;
  ncclComm* comm = new_comm();
  comm->shared = static_cast<SharedComm*>(p);
  comm->segment = segment;
  comm->hash = hash;
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->shared->joined.fetch_add(joining);
  if (wait) {
    // Init is collective: every rank waits for the others, as real NCCL does.
    while (comm->shared->joined.load() < uint32_t(nranks)) {
      if (now_ns() - enter > kInitTimeoutNs) return ncclSystemError;
      usleep(100);
    }
    // Every rank has it mapped now; leave nothing in /dev/shm.
    if (rank == 0) shm_unlink(segment.c_str());
  }
  *out = comm;
  return ncclSuccess;
}

void start_profiling(ncclComm_t comm, const char* comm_name) {
  simnccl::profiler_init_comm(comm->profiler, comm->hash, comm_name, comm->nranks, comm->rank);
}

ncclResult_t init_rank(const char* api, ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                       const ncclConfig_t* config, uint64_t enter) {
  ensure_initialized();
  ConfigView cv;
  if (!out || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (!read_config(config, &cv)) return ncclInvalidArgument;
  if (strncmp(id.internal, kIdMagic, strlen(kIdMagic)) != 0) return ncclInvalidArgument;
  std::string segment = "/" + std::string(id.internal).replace(0, strlen(kIdMagic), "gapwatch-simnccl-");
  ncclResult_t r = join(segment, nranks, rank, current_device(), fnv1a(id.internal, strlen(id.internal)), 1, true,
                        enter, out);
  if (r != ncclSuccess) return r;
  (*out)->nonblocking = cv.nonblocking;
  start_profiling(*out, cv.comm_name);
  close_nccl_call(open_nccl_call(api, enter, 0), 0);
  return cv.nonblocking ? ncclInProgress : ncclSuccess;
}

}  // namespace

NCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  uint64_t enter = now_ns();
  return init_rank("ncclCommInitRank", out, nranks, id, rank, nullptr, enter);
}
NCCL_ALIAS(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);

// How PyTorch's ProcessGroupNCCL creates its communicators (with a config, often non-blocking).
NCCL_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank,
                                                 ncclConfig_t* config) {
  uint64_t enter = now_ns();
  return init_rank("ncclCommInitRankConfig", out, nranks, id, rank, config, enter);
}
NCCL_ALIAS(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
           ncclConfig_t* config);

// Several ids only speed up real NCCL's bootstrap; the ranks meet under the first one here.
NCCL_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t* out, int nranks, int myrank, int nId,
                                                   ncclUniqueId* commIds, ncclConfig_t* config) {
  uint64_t enter = now_ns();
  if (nId < 1 || !commIds) return ncclInvalidArgument;
  return init_rank("ncclCommInitRankScalable", out, nranks, commIds[0], myrank, config, enter);
}
NCCL_ALIAS(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
           ncclUniqueId* commIds, ncclConfig_t* config);

// One process, ndev ranks, rank i on devlist[i] (or device i).
NCCL_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  uint64_t enter = now_ns();
  ensure_initialized();
  if (!comms || ndev < 1 || ndev > kMaxRanks) return ncclInvalidArgument;
  for (int i = 0; i < ndev; ++i)
    if ((devlist ? devlist[i] : i) < 0 || (devlist ? devlist[i] : i) >= device_count()) return ncclInvalidArgument;
  ncclUniqueId id;
  pncclGetUniqueId(&id);
  std::string segment = "/" + std::string(id.internal).replace(0, strlen(kIdMagic), "gapwatch-simnccl-");
  uint64_t hash = fnv1a(id.internal, strlen(id.internal));
  for (int i = 0; i < ndev; ++i) {
    ncclResult_t r = join(segment, ndev, i, devlist ? devlist[i] : i, hash, i == 0 ? uint32_t(ndev) : 0, false,
                          enter, &comms[i]);
    if (r != ncclSuccess) return r;
  }
  shm_unlink(segment.c_str());
  for (int i = 0; i < ndev; ++i) start_profiling(comms[i], nullptr);
  close_nccl_call(open_nccl_call("ncclCommInitAll", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist);

// Collective over `comm`: the ranks of one color form a communicator, ordered by key then by their
// rank in the parent; NCCL_SPLIT_NOCOLOR gets none (*newcomm = NULL). PyTorch's new_group splits
// the default communicator this way.
NCCL_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t* config) {
  uint64_t enter = now_ns();
  ConfigView cv;
  if (!comm || !newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR)) return ncclInvalidArgument;
  if (!read_config(config, &cv)) return ncclInvalidArgument;
  uint64_t seq = comm->next_split++;
  SplitSlot& slot = comm->shared->splits[seq % kSplitSlots];
  slot.color[comm->rank] = color;
  slot.key[comm->rank] = key;
  slot.seq_plus_one[comm->rank].store(seq + 1, std::memory_order_release);
  for (int r = 0; r < comm->nranks; ++r)
    while (slot.seq_plus_one[r].load(std::memory_order_acquire) < seq + 1) {
      if (now_ns() - enter > kInitTimeoutNs) return ncclSystemError;
      usleep(100);
    }
  std::vector<std::pair<int, int>> members;  // (key, parent rank) of this color
  for (int r = 0; r < comm->nranks; ++r)
    if (color != NCCL_SPLIT_NOCOLOR && slot.color[r] == color) members.push_back({slot.key[r], r});
  // Every rank has read the slot before any rank can reuse it kSplitSlots splits later: a rank
  // that gets that far has passed the joins of the splits in between, which need all ranks.
  *newcomm = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) {
    close_nccl_call(open_nccl_call("ncclCommSplit", enter, 0), 0);
    return cv.nonblocking ? ncclInProgress : ncclSuccess;
  }
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  while (members[new_rank].second != comm->rank) ++new_rank;
  std::string segment = comm->segment + "-s" + std::to_string(seq) + "c" + std::to_string(color);
  uint64_t hash = fnv1a(segment.data(), segment.size(), comm->hash);
  ncclResult_t r = join(segment, int(members.size()), new_rank, comm->device, hash, 1, true, enter, newcomm);
  if (r != ncclSuccess) return r;
  (*newcomm)->nonblocking = cv.nonblocking;
  start_profiling(*newcomm, cv.comm_name);
  close_nccl_call(open_nccl_call("ncclCommSplit", enter, 0), 0);
  return cv.nonblocking ? ncclInProgress : ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
           ncclConfig_t* config);

// A non-blocking communicator is ready once its init returned; this is where callers poll it.
NCCL_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError) return ncclInvalidArgument;
  *asyncError = ncclSuccess;
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);

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
  simnccl::profiler_finalize_comm(comm->profiler);
  free_comm(comm);
  close_nccl_call(open_nccl_call("ncclCommDestroy", enter, 0), 0);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclCommDestroy, ncclComm_t comm);

NCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  simnccl::profiler_finalize_comm(comm->profiler);
  free_comm(comm);
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
  return submit("ncclAllReduce", {"AllReduce", ring_bytes("AllReduce", bytes, comm->nranks), bytes, comm, stream, count, datatype, -1}, k, enter);
}
NCCL_ALIAS(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclBroadcast(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclBroadcast", {"Broadcast", bytes, bytes, comm, stream, count, datatype, root}, "ncclDevKernel_Broadcast_RING_LL", enter);
}
NCCL_ALIAS(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclReduce(const void*, void*, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  KernelName k("ncclDevKernel_Reduce_%s_%s_RING_LL", op_name(op), type_name(datatype));
  return submit("ncclReduce", {"Reduce", bytes, bytes, comm, stream, count, datatype, root}, k, enter);
}
NCCL_ALIAS(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclAllGather(const void*, void*, size_t sendcount, ncclDataType_t datatype,
                                        ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  uint64_t bytes = sendcount * type_size(datatype) * uint64_t(comm->nranks);
  return submit("ncclAllGather", {"AllGather", ring_bytes("AllGather", bytes, comm->nranks), bytes, comm, stream, sendcount, datatype, -1},
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
                {"ReduceScatter", ring_bytes("ReduceScatter", bytes, comm->nranks), bytes, comm, stream, recvcount, datatype, -1}, k, enter);
}
NCCL_ALIAS(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclSend(const void*, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclSend", {"Send", bytes, bytes, comm, stream, count, datatype, peer}, "ncclDevKernel_SendRecv", enter);
}
NCCL_ALIAS(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
           ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclRecv(void*, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || peer < 0 || peer >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclRecv", {"Recv", bytes, bytes, comm, stream, count, datatype, peer}, "ncclDevKernel_SendRecv", enter);
}
NCCL_ALIAS(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream);

// The in-place form of broadcast, kept by NCCL for compatibility.
NCCL_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  return submit("ncclBcast", {"Broadcast", bytes, bytes, comm, stream, count, datatype, root},
                "ncclDevKernel_Broadcast_RING_LL", enter);
}
NCCL_ALIAS(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
           cudaStream_t stream);

// All-to-all, gather and scatter run as point-to-point transfers in NCCL 2.28: one SendRecv
// kernel. `count` is per peer; each rank moves count elements to every other rank (all-to-all),
// the root receives or sends nranks - 1 blocks (gather, scatter).
NCCL_EXPORT ncclResult_t pncclAlltoAll(const void*, void*, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                                       cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype) * uint64_t(comm->nranks);
  uint64_t wire = count * type_size(datatype) * uint64_t(comm->nranks - 1);
  return submit("ncclAlltoAll", {"AlltoAll", wire, bytes, comm, stream, count, datatype, -1}, "ncclDevKernel_SendRecv",
                enter);
}
NCCL_ALIAS(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclGather(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                                     ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  uint64_t wire = comm->rank == root ? bytes * uint64_t(comm->nranks - 1) : bytes;
  return submit("ncclGather", {"Gather", wire, bytes, comm, stream, count, datatype, root}, "ncclDevKernel_SendRecv",
                enter);
}
NCCL_ALIAS(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);

NCCL_EXPORT ncclResult_t pncclScatter(const void*, void*, size_t count, ncclDataType_t datatype, int root,
                                      ncclComm_t comm, cudaStream_t stream) {
  uint64_t enter = now_ns();
  if (!comm || root < 0 || root >= comm->nranks) return ncclInvalidArgument;
  uint64_t bytes = count * type_size(datatype);
  uint64_t wire = comm->rank == root ? bytes * uint64_t(comm->nranks - 1) : bytes;
  return submit("ncclScatter", {"Scatter", wire, bytes, comm, stream, count, datatype, root}, "ncclDevKernel_SendRecv",
                enter);
}
NCCL_ALIAS(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);

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
      std::vector<PendingOp*> members;
      for (size_t j = i; j < ops.size(); ++j) {
        if (ops[j].comm != ops[i].comm || ops[j].stream != ops[i].stream) continue;
        wire += ops[j].wire_bytes;
        same &= ops[j].collective == ops[i].collective;
        members.push_back(&ops[j]);
      }
      bool p2p = is_p2p_kernel(ops[i].collective);
      std::string k = p2p ? "ncclDevKernel_SendRecv"
                          : same ? "ncclDevKernel_" + ops[i].collective + "_RING_LL" : "ncclDevKernel_Generic";
      launch_with_events(members, kernel_name(k), wire, &sid);
    }
  }
  close_nccl_call(open_nccl_call("ncclGroupEnd", enter, 0), sid);
  return ncclSuccess;
}
NCCL_ALIAS(ncclResult_t, ncclGroupEnd);
