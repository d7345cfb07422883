// simcuda/timeline.h: what the simulated CUDA stack exposes beyond the real CUDA API.
//
// The simulated driver (libcuda.so.1 in tests/simcuda) keeps a log of everything it did: every
// operation the virtual device ran (kernels, copies, memsets, event markers, host-side sync
// records) and every API call a user thread made (runtime, driver-level and NCCL host calls). The
// workload driver (gapwatch-sim) reads that log after a run to write the ground truth, and tests
// read it to check the simulator against itself. Nothing in libgapwatch may use this header: the
// product must only see what the real CUDA stack shows.
//
// How a program asks the virtual device for work: through the real CUDA API only. Kernels are
// registered the way nvcc's generated code registers them (__cudaRegisterFatBinary, then
// __cudaRegisterFunction with the host stub's address and the kernel's mangled name), or loaded
// through the driver API (cuModuleLoadData, cuModuleGetFunction). A kernel's device duration comes
// from a per-name table (SIMCUDA_KERNEL_DURATIONS, SIMCUDA_KERNEL_DURATIONS_FILE), else, for a
// kernel registered with simcuda_kernel_duration_from_argument, from its first argument, an
// int64_t of nanoseconds (what gapwatch-sim and the simulator's tests use):
//   void* args[] = {&duration_ns};  cudaLaunchKernel(stub, grid, block, args, 0, stream);
// else from its grid and block shape (docs/simcuda.md gives the model). Copies and memsets take
// their device time from the bandwidths in SimDeviceConfig. Device memory from cudaMalloc is
// address space only: the virtual device models time, not data.
//
// Times are CLOCK_MONOTONIC nanoseconds, the virtual device's own clock. Thread ids are Linux tids.
// The log only grows while the process runs; read it after the work is done (after a device
// synchronise), from one thread. The pointers stay valid until the process exits.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// What a device operation is.
typedef enum SimOpKind {
  SIM_OP_KERNEL = 1,   // a compute kernel, including NCCL kernels (name starts with ncclDevKernel_)
  SIM_OP_MEMCPY = 2,   // a copy; copy_kind and the memory kinds say which
  SIM_OP_MEMSET = 3,
  SIM_OP_MARKER = 4,   // an event record: zero duration, not device work, never busy time
  SIM_OP_HOST_FUNC = 5,  // cudaLaunchHostFunc / cudaStreamAddCallback / a graph host node: the
                         // stream is held from start to end while the function runs on the host
                         // (on the runtime's callback thread); not device work, never busy time
} SimOpKind;

// Copy directions, numerically equal to cudaMemcpyKind (1 = H2D, 2 = D2H, 3 = D2D, 0 = H2H).
typedef enum SimCopyKind {
  SIM_COPY_H2H = 0,
  SIM_COPY_H2D = 1,
  SIM_COPY_D2H = 2,
  SIM_COPY_D2D = 3,
} SimCopyKind;

// Memory kinds of a copy's ends, numerically equal to CUpti_ActivityMemoryKind.
typedef enum SimMemKind {
  SIM_MEM_UNKNOWN = 0,
  SIM_MEM_PAGEABLE = 1,
  SIM_MEM_PINNED = 2,
  SIM_MEM_DEVICE = 3,
  SIM_MEM_MANAGED = 5,      // cudaMallocManaged (CUPTI_ACTIVITY_MEMORY_KIND_MANAGED)
} SimMemKind;

typedef struct SimDeviceOp {
  uint64_t index;           // position in the log, from 0
  uint32_t kind;            // SimOpKind
  uint32_t device;          // device ordinal
  uint64_t stream;          // stream id as CUPTI reports it (legacy default stream = 7, created streams from 13)
  uint64_t correlation_id;  // the API call that queued it (the same id CUPTI gives both)
  int32_t tid;              // thread that queued it
  uint64_t queued_ns;       // when the API call handed it to the device
  uint64_t start_ns;        // device start
  uint64_t end_ns;          // device end (== start for a marker)
  uint64_t bytes;           // copies and memsets; NCCL kernels carry the collective's bytes
  uint32_t copy_kind;       // SimCopyKind, copies only
  uint32_t src_kind;        // SimMemKind, copies only
  uint32_t dst_kind;        // SimMemKind, copies (and memsets: the target)
  uint32_t is_async;        // queued by an *Async call
  const char* name;         // kernel name (mangled as the compiler would), or "" for other kinds
} SimDeviceOp;

// What an API call was, as far as idle-gap causes go.
typedef enum SimCallKind {
  SIM_CALL_LAUNCH = 1,        // cudaLaunchKernel, __cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel(Ex)
  SIM_CALL_GRAPH_LAUNCH = 2,  // cudaGraphLaunch
  SIM_CALL_MEMCPY = 3,        // cudaMemcpy, cudaMemcpy2D, cudaMemcpy{To,From}Symbol (synchronous API)
  SIM_CALL_MEMCPY_ASYNC = 4,  // cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemcpy{To,From}SymbolAsync
  SIM_CALL_MEMSET = 5,        // cudaMemset
  SIM_CALL_MEMSET_ASYNC = 6,  // cudaMemsetAsync
  SIM_CALL_DEVICE_SYNC = 7,   // cudaDeviceSynchronize
  SIM_CALL_STREAM_SYNC = 8,   // cudaStreamSynchronize
  SIM_CALL_EVENT_SYNC = 9,    // cudaEventSynchronize
  SIM_CALL_EVENT_RECORD = 10, // cudaEventRecord
  SIM_CALL_STREAM_WAIT_EVENT = 11,
  SIM_CALL_MALLOC = 12,       // cudaMalloc, cudaMallocManaged
  SIM_CALL_FREE = 13,         // cudaFree
  SIM_CALL_HOST_ALLOC = 14,   // cudaMallocHost, cudaHostAlloc, cudaHostRegister
  SIM_CALL_HOST_FREE = 15,    // cudaFreeHost, cudaHostUnregister
  SIM_CALL_NCCL = 16,         // an NCCL host call (collective, p2p, group start/end, comm init)
  SIM_CALL_OTHER = 17,        // stream/event creation, get/set device, get last error, ...
  SIM_CALL_HOST_FUNC = 18,    // cudaLaunchHostFunc, cudaStreamAddCallback: queue a host function
} SimCallKind;

typedef struct SimApiCall {
  uint64_t index;           // position in the log, from 0
  uint32_t kind;            // SimCallKind
  uint32_t domain;          // CUpti_CallbackDomain of the call (RUNTIME_API = 2, DRIVER_API = 1); 0 for NCCL
  uint32_t cbid;            // CUPTI callback id in that domain (0 for NCCL)
  int32_t tid;
  uint64_t enter_ns;
  uint64_t exit_ns;
  uint64_t correlation_id;  // 0 for NCCL host calls (CUPTI does not trace them)
  uint64_t stream;          // CUPTI stream id the call acted on, 0 when none
  uint64_t bytes;           // copies, memsets, allocations, NCCL collectives
  int64_t op_index;         // the device op it queued, -1 when none
  uint32_t blocked;         // 1 when the call waited for the device (a sync point)
  uint64_t waited_until_ns; // when blocked: the device time it waited for (the call returns at or after it)
  const char* name;         // the API's name ("cudaMemcpyAsync", "ncclAllReduce", ...)
} SimApiCall;

// The logs. Each returns the number of entries and stores a pointer to the first.
size_t simcuda_device_ops(const SimDeviceOp** first);
size_t simcuda_api_calls(const SimApiCall** first);

// The moment the process's virtual device was created (first cuInit), CLOCK_MONOTONIC ns.
uint64_t simcuda_init_ns(void);

// How the simulated hardware behaves. Set before the first CUDA call; each field <= 0 keeps its
// default. gapwatch-sim sets it from the scenario's "device" object.
typedef struct SimDeviceConfig {
  int64_t launch_api_ns;      // host time a launch call spends in the runtime (default 3000)
  int64_t launch_latency_ns;  // from a launch call handing work over to the earliest device start (default 2000)
  int64_t copy_api_ns;        // host time of a copy or memset call before it hands work over (default 4000)
  int64_t sync_api_ns;        // host time of a sync call on top of the wait (default 1000)
  int64_t alloc_api_ns;       // host time of malloc/free on top of the device sync they imply (default 10000)
  double h2d_gbps;            // copy bandwidth host to device, pinned (default 20)
  double d2h_gbps;            // device to host, pinned (default 20)
  double d2d_gbps;            // on the device (default 1000)
  double pageable_factor;     // pageable copies run this much slower than pinned (default 2)
  double memset_gbps;         // (default 1000)
  double nccl_gbps;           // NCCL bus bandwidth (default 50)
  int64_t nccl_latency_ns;    // NCCL kernel fixed cost (default 10000)
} SimDeviceConfig;

void simcuda_configure(const SimDeviceConfig* config);

// Marks a kernel (by mangled name) as one whose first argument is its device duration in ns, an
// int64_t. Call before its first launch; a per-name table entry still takes precedence.
void simcuda_kernel_duration_from_argument(const char* mangled_name);

#ifdef __cplusplus
}
#endif
