// sim_driver.h: the simulated driver's internal interface, shared by the four simulated libraries.
//
// libcuda.so.1 (this directory) owns all process-wide state, as the real driver does: the virtual
// device, API tracing (CUPTI callbacks fire from inside the driver, which is why CUPTI sees calls
// that bypass the runtime) and the logs behind simcuda/timeline.h. libcudart.so.13, libcupti.so.13
// and libnccl.so.2 call in through this header. None of it is part of the real CUDA API.
//
// Threads: any user thread may call anything here. One mutex (DeviceState::mu in
// virtual_device.cpp) guards the device; it is never held while a CUPTI callback runs or while a
// thread sleeps waiting for the device.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "simcuda/timeline.h"

#define SIMCUDA_EXPORT __attribute__((visibility("default")))

namespace simcuda {

// ---- clock -------------------------------------------------------------------------------------
SIMCUDA_EXPORT uint64_t now_ns();
// Returns once CLOCK_MONOTONIC >= t: sleeps for most of the wait, spins the last stretch so a
// simulated sync returns within a microsecond or two of the device time it waited for.
SIMCUDA_EXPORT void wait_until(uint64_t t);
// Returns once CLOCK_MONOTONIC >= t, sleeping all the way (a blocking-sync wait: no spinning).
SIMCUDA_EXPORT void sleep_until(uint64_t t);
// Host time spent inside an API call (the runtime's own cost): spins, as a real call would.
SIMCUDA_EXPORT void spend(int64_t ns);
SIMCUDA_EXPORT int32_t current_tid();

// ---- initialisation ----------------------------------------------------------------------------
// cuInit's work: creates the virtual device, then loads CUDA_INJECTION64_PATH and calls its
// InitializeInjection, once per process. Every runtime entry point calls it first.
SIMCUDA_EXPORT CUresult ensure_initialized();
SIMCUDA_EXPORT int device_count();
SIMCUDA_EXPORT int current_device();  // this thread's device (cudaSetDevice)
SIMCUDA_EXPORT void set_current_device(int device);
SIMCUDA_EXPORT const SimDeviceConfig& config();
// The primary context of a device (created on first use, after a cudaDeviceReset again).
SIMCUDA_EXPORT CUcontext primary_context(int device);
SIMCUDA_EXPORT void reset_device(int device);  // cudaDeviceReset: sync, destroy-starting callback
// A live context made by cuCtxCreate: its CUPTI context id (above every primary context's
// device + 1) and device; false for primary contexts and unknown handles.
SIMCUDA_EXPORT bool created_context_id(CUcontext ctx, uint32_t* id, int* device);

// ---- CUPTI's hook into the driver ----------------------------------------------------------------
struct CuptiSink {
  // API enter/exit in the driver and runtime domains.
  void (*api)(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data);
  // Resource domain (context created / destroy starting, stream created).
  void (*resource)(CUpti_CallbackId cbid, const CUpti_ResourceData* data);
  // Whether an activity kind is enabled right now: decides if a new op is traced.
  bool (*activity_enabled)(CUpti_ActivityKind kind);
};
// libcupti installs its sink when it is loaded and subscribed; nullptr removes it (cuptiFinalize).
SIMCUDA_EXPORT void set_cupti_sink(const CuptiSink* sink);

// ---- API tracing -------------------------------------------------------------------------------
// One traced API call. Construct at entry (fires the ENTER callback and assigns the correlation id:
// a call nested in another traced call on the same thread, e.g. the cuLaunchKernel inside
// cudaLaunchKernel, shares the outer call's id), finish() at exit (fires EXIT, logs the call).
class SIMCUDA_EXPORT ApiScope {
 public:
  ApiScope(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name, SimCallKind kind,
           const void* params, void* return_value, const char* symbol = nullptr);
  ~ApiScope();
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;

  uint32_t correlation_id() const { return correlation_id_; }
  void set_op(int64_t op_index) { op_index_ = op_index; }
  void set_stream(uint64_t stream_id) { stream_id_ = stream_id; }
  void set_bytes(uint64_t bytes) { bytes_ = bytes; }
  void set_blocked(uint64_t waited_until_ns) { blocked_ = true; waited_until_ = waited_until_ns; }
  void finish();

 private:
  void fire(CUpti_ApiCallbackSite site);

  CUpti_CallbackDomain domain_;
  CUpti_CallbackId cbid_;
  const char* name_;
  SimCallKind kind_;
  const void* params_;
  void* return_value_;
  const char* symbol_;
  uint32_t correlation_id_ = 0;
  uint64_t correlation_data_ = 0;
  uint64_t enter_ns_ = 0;
  uint64_t exit_ns_ = 0;
  int64_t op_index_ = -1;
  uint64_t stream_id_ = 0;
  uint64_t bytes_ = 0;
  bool blocked_ = false;
  bool outermost_ = false;
  bool finished_ = false;
  uint64_t waited_until_ = 0;
};

// NCCL host calls are not CUDA API calls (CUPTI does not trace them) but the ground truth needs
// them: libnccl logs each one, opened once the call knows its bytes and closed as it returns
// (the exit time is read then, so the logging itself counts as inside the call).
SIMCUDA_EXPORT SimApiCall* open_nccl_call(const char* name, uint64_t enter_ns, uint64_t bytes);
SIMCUDA_EXPORT void close_nccl_call(SimApiCall* call, uint64_t stream_id);

// ---- kernels -------------------------------------------------------------------------------------
// A kernel launch's device duration (kernel_duration.cpp says where it comes from: a per-name
// table, the first argument of kernels registered for it, or the launch's grid and block shape).
SIMCUDA_EXPORT int64_t kernel_duration_ns(const char* name, const unsigned grid[3], const unsigned block[3],
                                          void** args);

// ---- the virtual device ------------------------------------------------------------------------
struct Stream;  // what a cudaStream_t / CUstream points to
struct Event;   // what a cudaEvent_t / CUevent points to

// Cross-process rendezvous of an NCCL kernel: every rank's kernel ends at
// max(start of all ranks) + duration. publish() is called once with this rank's start; collect()
// returns false until every rank has published, then the latest start.
struct Rendezvous {
  virtual ~Rendezvous() = default;
  virtual void publish(uint64_t start_ns) = 0;
  virtual bool collect(uint64_t* latest_start_ns) = 0;
  // A counter that moves whenever any rank publishes, and a wait for it to move past `seen` (at
  // most `max_ns`): who waits for peers wakes as soon as one arrives, not at the next poll.
  virtual uint32_t epoch() = 0;
  virtual void wait_for_epoch_change(uint32_t seen, uint64_t max_ns) = 0;
};

struct OpRequest {
  SimOpKind kind = SIM_OP_KERNEL;
  Stream* stream = nullptr;  // nullptr: the current device's legacy default stream
  int64_t duration_ns = 0;
  const char* name = "";     // interned, lives for the process
  uint64_t bytes = 0;
  uint32_t copy_kind = 0, src_kind = 0, dst_kind = 0;
  bool is_async = false;
  uint32_t correlation_id = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
  int grid[3] = {1, 1, 1};
  int block[3] = {1, 1, 1};
  Rendezvous* rendezvous = nullptr;  // owned by the device once queued
  const Event* wait_event = nullptr; // a stream-wait marker waits for this event's marker
  // Graph launches: the op also waits for these ops (its graph dependencies); a detached op still
  // waits for its stream's earlier work but does not become the stream's last op (a graph's
  // nodes other than the one that ends it).
  const int64_t* after_ops = nullptr;
  size_t num_after_ops = 0;
  bool detached = false;
  // SIM_OP_HOST_FUNC: runs fn(user_data) on the device's callback thread once everything it
  // waits for has finished; the op starts then and ends when fn returns. Nothing on its stream
  // after it can start before. (Callbacks of cudaStreamAddCallback are wrapped into this shape.)
  void (*host_fn)(void* user_data) = nullptr;
  void* host_user_data = nullptr;
};

// Queues an op; returns its index in the op log. The device start is
// max(now + launch latency, the stream's previous op, legacy-stream ordering, awaited events).
SIMCUDA_EXPORT int64_t enqueue(const OpRequest& request);
// Blocks until the op has finished; returns its end time.
SIMCUDA_EXPORT uint64_t wait_op(int64_t op_index);
// Blocks until everything queued on a stream (nullptr: legacy) has finished; returns the latest end
// it waited for (0 when nothing was ever queued there).
SIMCUDA_EXPORT uint64_t wait_stream(Stream* stream);
SIMCUDA_EXPORT uint64_t wait_device(int device);
// Blocks until the op's device interval is known (not until it has run); returns its end.
SIMCUDA_EXPORT uint64_t resolve_op(int64_t op_index);
// The op's device interval, when known (false while it waits for a host function or peers).
SIMCUDA_EXPORT bool op_interval(int64_t op_index, uint64_t* start_ns, uint64_t* end_ns);
// Non-blocking queries: whether the work has finished by now.
SIMCUDA_EXPORT bool op_done(int64_t op_index);
SIMCUDA_EXPORT bool stream_done(Stream* stream);

SIMCUDA_EXPORT Stream* create_stream(int device, unsigned flags);
SIMCUDA_EXPORT void destroy_stream(Stream* stream);
SIMCUDA_EXPORT uint64_t stream_id(Stream* stream);  // CUPTI's stream id; legacy = 7
SIMCUDA_EXPORT int stream_device(Stream* stream);
SIMCUDA_EXPORT Stream* legacy_stream(int device);
SIMCUDA_EXPORT Stream* per_thread_stream(int device);
// Maps what users pass (0, cudaStreamLegacy, cudaStreamPerThread, a created stream) to a Stream.
SIMCUDA_EXPORT Stream* resolve_stream(void* handle, int device);

SIMCUDA_EXPORT Event* create_event(int device, unsigned flags);
SIMCUDA_EXPORT void destroy_event(Event* event);
SIMCUDA_EXPORT void record_event(Event* event, int64_t marker_op_index);
SIMCUDA_EXPORT int64_t event_op(const Event* event);  // -1 when never recorded
SIMCUDA_EXPORT uint32_t event_id(const Event* event);
SIMCUDA_EXPORT unsigned event_flags(const Event* event);  // cudaEventCreateWithFlags' flags
SIMCUDA_EXPORT unsigned stream_flags(Stream* stream);      // cudaStreamCreateWithFlags' flags

// Host-side records for CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: one per sync call, times on the host.
struct SyncRecord {
  CUpti_ActivitySynchronizationType type;
  uint64_t start_ns, end_ns;
  uint32_t correlation_id;
  uint32_t context_id;
  uint32_t stream_id;   // CUPTI_SYNCHRONIZATION_INVALID_VALUE when n/a
  uint32_t event_id;    // likewise
};
SIMCUDA_EXPORT void add_sync_record(const SyncRecord& record);

// What libcupti's worker thread pulls. Each call hands out, once, every traced op that has
// finished by `now` and every sync record, starting from the caller's cursors.
struct Completed {
  std::vector<SimDeviceOp> ops;
  std::vector<uint32_t> op_graph_ids;
  std::vector<bool> op_finished;  // false: still in flight, handed out by a forced flush
  std::vector<SyncRecord> syncs;
};
// `in_flight_too`: also hand out traced work that has not finished (a forced CUPTI flush); it is
// then delivered, and never again.
SIMCUDA_EXPORT void collect_completed(uint64_t now, uint64_t* op_cursor, uint64_t* sync_cursor, Completed* out,
                                      bool in_flight_too = false);
// Drops what was traced but not yet handed out (cuptiFinalize).
SIMCUDA_EXPORT void forget_traced();

// Interns a string for the life of the process (kernel names).
SIMCUDA_EXPORT const char* intern(const std::string& text);

// ---- memory (shared by the runtime and the driver API) ---------------------------------------------
// One registry of what every pointer is, so a cudaMalloc pointer copied with cuMemcpyDtoH (or a
// cuMemAllocHost buffer given to cudaMemcpy) has the same kinds on both paths. Device memory is
// address space in one never-backed arena; host memory is the caller's (pinned allocations,
// registered ranges). An address in no registered range is pageable host memory.
struct MemoryRange {
  uintptr_t base = 0;
  size_t size = 0;
  SimMemKind kind = SIM_MEM_UNKNOWN;
  int device = 0;
  bool managed = false;    // cuMemAllocManaged / cudaMallocManaged
  bool registered = false; // cuMemHostRegister / cudaHostRegister: the caller's memory, pinned
  unsigned flags = 0;      // the flags it was allocated or registered with (cudaHostGetFlags)
  uint64_t buffer_id = 0;  // process-wide unique id (CU_POINTER_ATTRIBUTE_BUFFER_ID)
};
// Reserves device address space (rounded up to 512 bytes) and registers it; nullptr when the
// arena is exhausted.
SIMCUDA_EXPORT void* reserve_device_memory(size_t size, int device);
// Managed memory (cudaMallocManaged, cuMemAllocManaged) is registered with kind SIM_MEM_MANAGED.
SIMCUDA_EXPORT void register_memory(const void* base, size_t size, SimMemKind kind, int device, bool managed = false,
                                    bool registered = false, unsigned flags = 0);
// Forgets the range that starts exactly at `base` if it has `kind`; false otherwise.
SIMCUDA_EXPORT bool unregister_memory(const void* base, SimMemKind kind);
SIMCUDA_EXPORT SimMemKind memory_kind_of(const void* ptr);
// The registered range holding `ptr`, if any.
SIMCUDA_EXPORT bool find_memory(const void* ptr, MemoryRange* out);
// Whether any registered range of `kind` overlaps [ptr, ptr + size).
SIMCUDA_EXPORT bool overlaps_memory(const void* ptr, size_t size, SimMemKind kind);
SIMCUDA_EXPORT size_t device_memory_in_use();

// ---- copies and memsets (shared by the runtime and the driver API) --------------------------------
// The device side of one copy or memset and whether the calling API blocks until it is done, by
// the "API synchronization behavior" rules both APIs document: a synchronous copy blocks for D2H
// and H2H, and for H2D above 64 KiB (smaller ones are staged); D2D never blocks; an async copy
// blocks when a host side is pageable, or for H2H; a synchronous memset blocks unless its target
// is device memory. `copy_kind` is a SimCopyKind, or -1 to infer it from the pointers (unified
// addressing, cudaMemcpyDefault / cuMemcpy); managed memory counts as the device's side.
struct OpPlan {
  OpRequest request;  // stream and correlation id left for the caller
  bool blocks = false;
};
SIMCUDA_EXPORT OpPlan plan_copy(const void* dst, const void* src, size_t bytes, int copy_kind, bool async);
SIMCUDA_EXPORT OpPlan plan_memset(const void* ptr, size_t bytes, bool async);

}  // namespace simcuda
