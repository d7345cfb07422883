// nccl_profiler_api.h: the NCCL profiler plugin interface, versions 4 to 6, in our own words.
//
// NCCL (2.23+) dlopens a profiler plugin named by NCCL_PROFILER_PLUGIN (default
// libnccl-profiler.so) and looks up the newest struct it knows, `ncclProfiler_v6`, then v5, v4...
// NVIDIA ships these declarations only as example headers (ext-profiler/example/nccl/), not with
// nccl.h, so both sides here (libgapwatch.so's plugin and the simulated libnccl that drives it)
// use these. Field order and types follow NVIDIA's profiler_v4.h/v5.h/v6.h exactly: they are an
// ABI. Versions, as NCCL introduced them (NVIDIA/nccl src/plugin/profiler.cc and release notes,
// cupti-field-notes.md 8): v4 in NCCL 2.27.3 (kernel channel events with GPU timers), v5 in 2.28.3
// (API-level events: group, collective, p2p API calls and kernel launches), v6 in 2.29.2
// (copy-engine collectives).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nccl.h>

namespace gapwatch::nccl_profiler {

// Event types: a descriptor's `type`, and the bits of the activation mask init() returns.
enum EventType : uint64_t {
  kGroup = 1u << 0,         // a group of tasks (v1-v4: the task's parent)
  kColl = 1u << 1,          // a collective task, once NCCL enqueued it
  kP2p = 1u << 2,           // a send or receive task
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,      // one channel of an NCCL kernel, with GPU globaltimer stamps (v4+)
  kNetPlugin = 1u << 7,
  kGroupApi = 1u << 8,      // ncclGroupStart..ncclGroupEnd as the user called them (v5+)
  kCollApi = 1u << 9,       // a collective API call, entry to return (v5+)
  kP2pApi = 1u << 10,       // ncclSend/ncclRecv API call (v5+)
  kKernelLaunch = 1u << 11, // NCCL's kernel launch on a stream (v5+)
  kCeColl = 1u << 12,       // copy-engine collective (v6)
  kCeSync = 1u << 13,
  kCeBatch = 1u << 14,
};

// The event states recordEventState() is given that this code uses (NVIDIA's
// ncclProfilerEventState_t values; the enum is int-sized in the ABI).
enum EventState : int {
  kKernelChStop = 22,        // eStateArgs->kernelCh.pTimer is the channel's GPU end
  kGroupStartApiStop = 23,   // ncclGroupStart returned (GroupApi event)
  kGroupEndApiStart = 24,    // ncclGroupEnd entered (GroupApi event)
};

// NCCL's logger (ncclDebugLogger_t); its level is an int-sized enum.
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct ProxyOpDescr {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct ProxyStepDescr {
  int step;
};
struct KernelChDescr {
  uint8_t channelId;
  uint64_t pTimer;  // the channel's start, GPU globaltimer nanoseconds
};
struct NetPluginDescr {
  int64_t id;
  void* data;
};

struct CollDescrV4 {
  uint64_t seqNumber;
  const char* func;  // "AllReduce", "AllGather", ...
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;  // "ncclFloat32", ...
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct P2pDescrV4 {
  const char* func;  // "Send" or "Recv"
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};

// v4 (NCCL 2.27.3).
struct EventDescrV4 {
  uint8_t type;  // one EventType bit
  void* parentObj;
  int rank;
  union {
    CollDescrV4 coll;
    P2pDescrV4 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

union EventStateArgs {  // the same for v4, v5 and v6
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

struct CollApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graphCaptured;
};
struct P2pApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};
struct KernelLaunchDescr {
  void* stream;
};
struct CollDescrV5 {
  CollDescrV4 v4;
  void* parentGroup;
};
struct P2pDescrV5 {
  P2pDescrV4 v4;
  void* parentGroup;
};
struct CeCollDescr {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  const char* syncStrategy;
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void* stream;
};

// v5 (NCCL 2.28.3) and v6 (NCCL 2.29.2): the same members in the same places; v6 appends the
// copy-engine descriptors to the union (and spells groupApi.graphCaptured as bool, v5 as int:
// either way groupDepth is at offset 4). One struct serves both here.
struct EventDescrV6 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    CollApiDescr collApi;
    P2pApiDescr p2pApi;
    KernelLaunchDescr kernelLaunch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
    CeCollDescr ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
};

// The exported structs: `ncclProfiler_v4` is a ProfilerV4, `ncclProfiler_v5`/`_v6` ProfilerV6
// (their function tables have the same shape; only the descriptor they pass differs).
struct ProfilerV4 {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, Logger logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, EventDescrV4* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, EventStateArgs* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};
struct ProfilerV6 {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, Logger logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, EventDescrV6* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, EventStateArgs* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

// The offsets NCCL reads and writes (x86-64 and aarch64 LP64), checked against NVIDIA's
// definitions when this header was written: a change here would break the ABI silently.
static_assert(offsetof(EventDescrV4, rank) == 16 && offsetof(EventDescrV4, coll) == 24);
static_assert(offsetof(EventDescrV4, coll.count) == 56 && offsetof(EventDescrV4, coll.datatype) == 72);
static_assert(offsetof(EventDescrV4, p2p.count) == 48 && offsetof(EventDescrV4, p2p.peer) == 56);
static_assert(offsetof(EventDescrV4, kernelCh.pTimer) == 32 && sizeof(EventDescrV4) == 104);
static_assert(offsetof(EventDescrV6, collApi.count) == 32 && offsetof(EventDescrV6, collApi.root) == 48);
static_assert(offsetof(EventDescrV6, collApi.stream) == 56 && offsetof(EventDescrV6, p2pApi.stream) == 48);
static_assert(offsetof(EventDescrV6, coll.parentGroup) == 104 && offsetof(EventDescrV6, p2p.parentGroup) == 64);
static_assert(offsetof(EventDescrV6, groupApi.groupDepth) == 28 && offsetof(EventDescrV6, kernelCh.pTimer) == 32);
static_assert(offsetof(ProfilerV4, finalize) == 40 && offsetof(ProfilerV6, finalize) == 40);

}  // namespace gapwatch::nccl_profiler
