// libgapwatch.so as an NCCL profiler plugin (NCCL_PROFILER_PLUGIN=/path/to/libgapwatch.so): the
// route that needs no LD_PRELOAD and sees NCCL linked statically into PyTorch too. NCCL takes the
// newest of ncclProfiler_v6, _v5, _v4 it knows.
//
// What it records: each collective and point-to-point call once, as an NcclCall with its
// communicator, rank, size, count, bytes and root or peer. v5 and v6 give API-level events
// (CollApi, P2pApi: the user's call, entry to return, on the calling thread), which are the calls
// themselves; v4 has only task events (Coll, P2p: NCCL enqueueing the work), recorded instead. In
// both, the event's stop means NCCL queued the work, not that it ran: the device time comes from
// CUPTI's kernel records, as under the hooks. A call made inside one of gapwatch's LD_PRELOAD hooks
// is the hook's to record (nccl_route.h), so with both routes a call is recorded once.
//
// Started in a process where gapwatch is not recording yet (NCCL loaded the plugin, nothing
// preloaded it), init starts recording the same way the runtime hooks do (ensure_started):
// the user asked for gapwatch by naming it. When recording is off (GAPWATCH_DISABLE, a forked
// child), init succeeds with an empty activation mask and NCCL sends no event.
//
// Hot path: startEvent and stopEvent take a slot of a thread-local pool and write one ring record;
// no allocation, lock or system call. Kernel channel events are not asked for (left out: their
// GPU timestamps would need a clock mapping to CUPTI's).
#include <string.h>

#include "host_clock.h"
#include "nccl_profiler_api.h"
#include "nccl_route.h"
#include "symbol_hooks.h"

using namespace gapwatch;
namespace np = gapwatch::nccl_profiler;

namespace {

namespace op = wire::NcclOp;

// One communicator's context: its address is the communicator's identity in the recording
// (there is no ncclComm_t here).
struct PluginComm {
  int rank;
  int nranks;
  uint64_t comm_id;
};

// An API call (or v4 task) between its start and stop.
struct OpenCall {
  std::atomic<bool> busy;
  uint8_t op;
  uint8_t data_type;  // wire::NcclDataType
  int32_t peer;
  uint64_t start_ticks;
  uint64_t count;
  uint64_t bytes;
  uint64_t stream;
  const PluginComm* comm;
};

// Calls open at once, all threads together: a few per thread that calls NCCL. A process-wide pool
// claimed with one compare-and-swap (not thread-local: the library may be dlopened, where static
// TLS is scarce). Out of slots, an event is not recorded.
constexpr size_t kOpenCalls = 256;
OpenCall g_open[kOpenCalls];
thread_local uint32_t t_pool_hint __attribute__((tls_model("initial-exec"))) = 0;

uint8_t op_of(const char* func) {
  if (!func) return op::kOther;
  struct Name {
    const char* text;
    uint8_t op;
  };
  static constexpr Name kNames[] = {
      {"AllReduce", op::kAllReduce}, {"Broadcast", op::kBroadcast},         {"Reduce", op::kReduce},
      {"AllGather", op::kAllGather}, {"ReduceScatter", op::kReduceScatter}, {"Send", op::kSend},
      {"Recv", op::kRecv},           {"AlltoAll", op::kAllToAll},           {"Gather", op::kGather},
      {"Scatter", op::kScatter},
  };
  for (const Name& n : kNames)
    if (!strcmp(func, n.text)) return n.op;
  return op::kOther;
}

// NCCL names element types as in nccl.h ("ncclFloat32"). Returns the wire type (ncclDataType_t + 1)
// and the element size; 0 when unknown.
uint8_t data_type_of(const char* name, uint32_t* size) {
  struct Type {
    const char* text;
    uint8_t wire;
    uint32_t size;
  };
  static constexpr Type kTypes[] = {
      {"ncclInt8", 1, 1},    {"ncclUint8", 2, 1},   {"ncclInt32", 3, 4},    {"ncclUint32", 4, 4},
      {"ncclInt64", 5, 8},   {"ncclUint64", 6, 8},  {"ncclFloat16", 7, 2},  {"ncclFloat32", 8, 4},
      {"ncclFloat64", 9, 8}, {"ncclBfloat16", 10, 2}, {"ncclFloat8e4m3", 11, 1}, {"ncclFloat8e5m2", 12, 1},
  };
  *size = 0;
  if (!name) return 0;
  for (const Type& t : kTypes)
    if (!strcmp(name, t.text)) return *size = t.size, t.wire;
  return 0;
}

OpenCall* open_call(const PluginComm* comm, const char* func, size_t count, const char* datatype, int peer,
                    void* stream) {
  if (!t_pool_hint) t_pool_hint = uint32_t(reinterpret_cast<uintptr_t>(&t_pool_hint) >> 6) | 1;
  for (size_t n = 0; n < kOpenCalls; ++n) {
    OpenCall& c = g_open[(t_pool_hint + n) % kOpenCalls];
    bool expected = false;
    if (c.busy.load(std::memory_order_relaxed) || !c.busy.compare_exchange_strong(expected, true)) continue;
    uint32_t size = 0;
    c.op = op_of(func);
    c.data_type = data_type_of(datatype, &size);
    c.peer = peer;
    c.count = count;
    c.bytes = uint64_t(count) * size;
    c.stream = reinterpret_cast<uint64_t>(stream);
    c.comm = comm;
    c.start_ticks = host_ticks();
    return &c;
  }
  return nullptr;
}

bool recording() { return Recorder::active() && !Recorder::on_internal_thread(); }

void close_call(OpenCall* c) {
  uint64_t end = host_ticks();
  Recorder* recorder = Recorder::active();
  NcclCallRecord* e = recorder && !Recorder::on_internal_thread() ? recorder->reserve_nccl_call() : nullptr;
  if (!e) {
    c->busy.store(false, std::memory_order_release);
    return;
  }
  e->op = c->op;
  e->data_type = c->data_type;
  e->start_ticks = c->start_ticks;
  e->end_ticks = end;
  e->comm = c->comm;
  e->stream = c->stream;
  e->count = c->count;
  e->bytes = c->bytes;
  e->peer = c->peer;
  e->return_code = 0;  // the plugin is not told what the call returned
  c->busy.store(false, std::memory_order_release);
  recorder->publish();
}

// Peer or root where the op has one, -1 where not (as the hooks record it).
int peer_of(uint8_t o, int root_or_peer) {
  return o == op::kBroadcast || o == op::kReduce || o == op::kGather || o == op::kScatter || o == op::kSend ||
                 o == op::kRecv
             ? root_or_peer
             : -1;
}

ncclResult_t init_common(void** context, int* mask, int wanted, const char* comm_name, uint64_t comm_id, int nranks,
                         int rank, np::Logger logfn, int version) {
  *context = nullptr;
  *mask = 0;
  if (!g_start_attempted.load(std::memory_order_acquire)) ensure_started();
  Recorder* recorder = Recorder::active();
  if (!recorder) return ncclSuccess;  // not recording: harmless, NCCL sends nothing
  auto* comm = new PluginComm{rank, nranks, comm_id};  // once per communicator, not a hot path
  recorder->note_nccl_comm(reinterpret_cast<uint64_t>(comm), rank, nranks);
  *context = comm;
  *mask = wanted;
  if (logfn)
    logfn(3 /* INFO */, 1 /* NCCL_INIT */, __FILE__, __LINE__,
          "gapwatch profiler plugin v%d: communicator %s (%llx) rank %d of %d", version, comm_name ? comm_name : "",
          (unsigned long long)comm_id, rank, nranks);
  return ncclSuccess;
}

ncclResult_t init_v6(void** context, uint64_t comm_id, int* mask, const char* comm_name, int, int nranks, int rank,
                     np::Logger logfn) {
  return init_common(context, mask, np::kCollApi | np::kP2pApi, comm_name, comm_id, nranks, rank, logfn, 6);
}
ncclResult_t init_v5(void** context, uint64_t comm_id, int* mask, const char* comm_name, int, int nranks, int rank,
                     np::Logger logfn) {
  return init_common(context, mask, np::kCollApi | np::kP2pApi, comm_name, comm_id, nranks, rank, logfn, 5);
}
ncclResult_t init_v4(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int, int nranks, int rank,
                     np::Logger logfn) {
  return init_common(context, mask, np::kColl | np::kP2p, comm_name, comm_hash, nranks, rank, logfn, 4);
}

ncclResult_t start_v6(void* context, void** handle, np::EventDescrV6* d) {
  *handle = nullptr;
  if (!context || !d || nccl_hook_records_this_call() || !recording()) return ncclSuccess;
  const auto* comm = static_cast<const PluginComm*>(context);
  OpenCall* c = nullptr;
  if (d->type == np::kCollApi) {
    c = open_call(comm, d->collApi.func, d->collApi.count, d->collApi.datatype, d->collApi.root, d->collApi.stream);
  } else if (d->type == np::kP2pApi) {
    c = open_call(comm, d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype, -1, d->p2pApi.stream);
  }
  // v5/v6 P2pApi carries no peer: the task event has it, but only the API event is asked for.
  if (c) c->peer = peer_of(c->op, c->peer);
  *handle = c;
  return ncclSuccess;
}

ncclResult_t start_v4(void* context, void** handle, np::EventDescrV4* d) {
  *handle = nullptr;
  if (!context || !d || nccl_hook_records_this_call() || !recording()) return ncclSuccess;
  const auto* comm = static_cast<const PluginComm*>(context);
  OpenCall* c = nullptr;
  if (d->type == np::kColl) {
    c = open_call(comm, d->coll.func, d->coll.count, d->coll.datatype, d->coll.root, nullptr);
  } else if (d->type == np::kP2p) {
    c = open_call(comm, d->p2p.func, d->p2p.count, d->p2p.datatype, d->p2p.peer, nullptr);
  }
  if (c) c->peer = peer_of(c->op, c->peer);
  *handle = c;
  return ncclSuccess;
}

ncclResult_t stop(void* handle) {
  if (handle) close_call(static_cast<OpenCall*>(handle));
  return ncclSuccess;
}

ncclResult_t record_state(void*, int, np::EventStateArgs*) { return ncclSuccess; }

ncclResult_t finalize(void*) {
  // The context stays: records that name it may still be in a ring, and the flusher keys
  // communicators by its address. One small struct per communicator.
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) np::ProfilerV6 ncclProfiler_v6 = {"gapwatch", init_v6, start_v6, stop,
                                                                          record_state, finalize};
__attribute__((visibility("default"))) np::ProfilerV6 ncclProfiler_v5 = {"gapwatch", init_v5, start_v6, stop,
                                                                          record_state, finalize};
__attribute__((visibility("default"))) np::ProfilerV4 ncclProfiler_v4 = {"gapwatch", init_v4, start_v4, stop,
                                                                          record_state, finalize};
}
