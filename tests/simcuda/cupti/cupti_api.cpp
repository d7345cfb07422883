// The simulated libcupti.so.13: the subset of the Callback and Activity APIs a tracing profiler
// uses, with the real entry points, structs, callback ids and error codes of CUDA 13.0.
//
// Faithful where a profiler can trip:
//   - one subscriber per process: a second cuptiSubscribe(_v2) fails with
//     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and names the holder in oldSubscriberName;
//     SIMCUDA_CUPTI_HELD_BY=<tool> simulates a tool (Nsight Systems, Kineto...) that got there first;
//   - activity records reach the client only through its buffers. CUPTI's own worker thread fills
//     them as work finishes and hands a buffer back only when it is full: the flush period, too,
//     "can return only those activity buffers which are full" (cupti_activity.h, CUDA 13.0). A
//     partly filled buffer comes back only from cuptiActivityFlushAll: flag 0 returns the records
//     of finished work; CUPTI_ACTIVITY_FLAG_FLUSH_FORCED also returns records of work still in
//     flight, with start = end = 0, and those records are never delivered again. Records that find
//     no buffer are dropped and counted;
//   - the activity API is process-wide, not per subscriber: cuptiActivityRegisterCallbacks
//     replaces the previous client's callbacks (a buffer being filled goes, when it is handed back,
//     to whoever is registered then), cuptiActivityEnable/Disable switch a kind for every client,
//     and a timestamp callback is the clock of every record from its registration on (the last
//     registration wins). Current Kineto calls these directly when torch.profiler starts, without
//     subscribing (cupti-field-notes.md section 3);
//   - timestamps are CLOCK_REALTIME ns unless a timestamp callback was registered (the documented
//     Linux default), so a client must align clocks itself; cuptiGetTimestamp reads the same clock;
//   - SIMCUDA_CUPTI_VERSION=<n> makes cuptiGetVersion report another version, to test the check.
// Built twice: as libcupti.so.13 against the CUDA 13 headers, and as libcupti.so.12 against CUPTI
// 12.9's (in its own folder, simcuda/cupti12/), where it reports version 28, writes CUDA 12's record
// structs, has no cuptiSubscribe_v2 and knows no CUDA 13 callback id (docs/simcuda.md, "CUPTI 12").
// The driver (libcuda.so.1) calls in through simcuda::CuptiSink; records are pulled from the
// driver's op log with simcuda::collect_completed.
//
// Locks: g_deliver_mu (recursive: a client may flush from its own completion callback) serialises
// buffer filling and delivery. Enable flags are atomics, read by the driver on every API call.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <cupti.h>

#include "../driver/sim_driver.h"

// CUPTI 12.x numbers its API versions 19..28; 13.0 went to 130001.
#if CUPTI_API_VERSION < 100
#define SIMCUDA_CUPTI12 1
// CUPTI 12 has no cuptiSubscribe_v2 (it arrived in 13.0) and so none of its declarations: these
// are the simulator's own, for the one subscribe function both builds share, never exported.
#define CUPTI_SUBSCRIBER_NAME_MAX_LEN 53
#define CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN 64
struct CUpti_SubscriberParams {
  const char* subscriberName;
  char* oldSubscriberName;
  size_t oldSubscriberSize;
};
#define SUBSCRIBE_V2_EXPORT static
using KernelRecord = CUpti_ActivityKernel9;  // what CUPTI 12.x emits for kernels
#else
#define SIMCUDA_CUPTI12 0
#define SUBSCRIBE_V2_EXPORT CUPTI_EXPORT
using KernelRecord = CUpti_ActivityKernel10;
#endif

namespace {

using simcuda::now_ns;

constexpr int kMaxCbid = 1024;
constexpr int kMaxDomain = CUPTI_CB_DOMAIN_SIZE;
constexpr int kMaxKind = 128;

struct Subscriber {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  char name[CUPTI_SUBSCRIBER_NAME_MAX_LEN + 1] = {};
};

std::mutex g_subscribe_mu;
std::atomic<Subscriber*> g_subscriber{nullptr};
std::atomic<uint8_t> g_enabled[kMaxDomain][kMaxCbid];
std::atomic<bool> g_activity[kMaxKind];
std::atomic<bool> g_latency_timestamps{false};
std::atomic<CUpti_TimestampCallbackFunc> g_timestamp_cb{nullptr};
CUpti_ActivityThreadIdType g_thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;

std::recursive_mutex g_deliver_mu;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
uint8_t* g_buffer = nullptr;
size_t g_buffer_size = 0, g_buffer_used = 0, g_buffer_max_records = 0, g_buffer_records = 0;
uint64_t g_op_cursor = 0, g_sync_cursor = 0;
std::atomic<uint64_t> g_dropped{0};
int64_t g_gridId = 0;

// Never destroyed: a forked child inherits the condition variable with the parent's worker
// counted as a waiter, and destroying it at exit() would wait for that waiter forever.
std::mutex& g_worker_mu = *new std::mutex;
std::condition_variable& g_worker_wake = *new std::condition_variable;
bool g_worker_started = false;
std::atomic<uint32_t> g_flush_period_ms{0};

// ---- time ----------------------------------------------------------------------------------------
uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The map from the device's clock (CLOCK_MONOTONIC) to the clock CUPTI reports in, as the real
// CUPTI converts GPU timestamps into the CPU domain: linear, with the rate of the target clock
// (a timestamp callback may count TSC ticks, as Kineto's does), measured between a reading taken
// when the clock was chosen and one taken now. The reading bracketed most tightly by two
// device-clock readings wins, so the conversion adds tens of nanoseconds of error.
struct ClockMap {
  uint64_t mono = 0, target = 0;  // a reading of both clocks
  double rate = 1.0;              // target units per device ns
  uint64_t operator()(uint64_t t) const {
    if (rate == 1.0) return target + (t - mono);
    return uint64_t(int64_t(target) + int64_t(double(int64_t(t - mono)) * rate));
  }
};

std::mutex g_clock_mu;
ClockMap g_anchor;                       // the first reading of the current clock
CUpti_TimestampCallbackFunc g_anchor_cb = nullptr;

ClockMap read_clock(CUpti_TimestampCallbackFunc cb) {
  ClockMap best;
  uint64_t tightest = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t before = now_ns();
    uint64_t target = cb ? cb() : realtime_ns();
    uint64_t after = now_ns();
    if (after - before < tightest) tightest = after - before, best.mono = before + (after - before) / 2, best.target = target;
  }
  return best;
}

// A rate is measured over at least this long: a reading is off by up to the time it took (a
// preemption between its clock reads on a busy machine: tens of microseconds), which over 1 ms
// was a 5% error in a duration (cupti_sharing_test saw one kernel 5% too long under load).
constexpr uint64_t kRateIntervalNs = 20000000;

// The anchor of a newly registered clock, with a first rate from a second reading kRateIntervalNs
// later (the registering call waits that once), for the records stamped before the interval.
ClockMap anchor_with_rate(CUpti_TimestampCallbackFunc cb) {
  ClockMap anchor = read_clock(cb);
  const uint64_t until = anchor.mono + kRateIntervalNs;
  while (now_ns() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const ClockMap later = read_clock(cb);
  anchor.rate = double(int64_t(later.target - anchor.target)) / double(int64_t(later.mono - anchor.mono));
  return anchor;
}

ClockMap clock_map() {
  CUpti_TimestampCallbackFunc cb = g_timestamp_cb.load();
  ClockMap now = read_clock(cb);
  std::lock_guard<std::mutex> lock(g_clock_mu);
  if (!g_anchor.mono || g_anchor_cb != cb) {
    // Not set at registration (the default clock, or a callback unregistered): measured later.
    g_anchor = now;
    g_anchor_cb = cb;
    g_anchor.rate = 1.0;
    return now;  // rate 1 until there is a second reading
  }
  now.rate = g_anchor.rate;
  if (now.mono - g_anchor.mono > kRateIntervalNs)
    now.rate = double(int64_t(now.target - g_anchor.target)) / double(int64_t(now.mono - g_anchor.mono));
  // A clock of nanoseconds (CLOCK_REALTIME, CLOCK_MONOTONIC: the same rate but for NTP's slewing,
  // under 500 ppm) keeps durations exactly; only another unit (TSC ticks) is scaled. And it keeps
  // the anchor's offset: a fresh reading is off by its own jitter (a few ns, more under load), so
  // two records handed out in different flushes were stamped with different offsets, and a graph's
  // second kernel could start 5 ns before its predecessor ended (runtime_cupti_test under load).
  // Real CUPTI stamps every record from one device clock; so must this.
  if (now.rate > 0.999 && now.rate < 1.001) {
    ClockMap fixed = g_anchor;
    fixed.rate = 1.0;
    return fixed;
  }
  return now;
}

// ---- the driver's hook -----------------------------------------------------------------------------
#if SIMCUDA_CUPTI12
// The simulated runtime is CUDA 13's and passes CUDA 13's ids (cupti_runtime_cbid.h of 13.0:
// __cudaLaunchKernel_v13000 = 505, _ptsz = 506). A CUDA 12 program's <<<>>> calls cudaLaunchKernel
// (CUDA 12's crt/host_runtime.h), so CUPTI 12 reports those launches under that id and name;
// other ids CUPTI 12 does not have are never reported. The params are passed on as they are: no
// client here reads a launch's params.
// Returns the callback data to pass on (`mapped`, filled here, when the id changed), or nullptr for
// an id CUPTI 12 does not have.
const CUpti_CallbackData* as_cuda12(CUpti_CallbackDomain domain, CUpti_CallbackId* cbid, const CUpti_CallbackData* data,
                                    CUpti_CallbackData* mapped) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && (*cbid == 505 || *cbid == 506)) {
    const bool ptsz = *cbid == 506;
    *cbid = ptsz ? CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 : CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    *mapped = *data;  // correlationData and the return value are pointers: enter and exit still share them
    mapped->functionName = ptsz ? "cudaLaunchKernel_ptsz" : "cudaLaunchKernel";
    return mapped;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && *cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE) return nullptr;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && *cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return nullptr;
  return data;
}
#endif

void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  Subscriber* s = g_subscriber.load(std::memory_order_acquire);
  if (!s || domain >= kMaxDomain || cbid >= kMaxCbid) return;
#if SIMCUDA_CUPTI12
  CUpti_CallbackData mapped;
  data = as_cuda12(domain, &cbid, data, &mapped);
  if (!data) return;
#endif
  if (!g_enabled[domain][cbid].load(std::memory_order_relaxed)) return;
  s->callback(s->userdata, domain, cbid, data);
}

void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  Subscriber* s = g_subscriber.load(std::memory_order_acquire);
  if (!s || cbid >= kMaxCbid) return;
  if (!g_enabled[CUPTI_CB_DOMAIN_RESOURCE][cbid].load(std::memory_order_relaxed)) return;
  s->callback(s->userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, data);
}

bool activity_enabled(CUpti_ActivityKind kind) {
  return int(kind) < kMaxKind && g_activity[kind].load(std::memory_order_relaxed);
}

const simcuda::CuptiSink g_sink = {on_api, on_resource, activity_enabled};

void install_sink() { simcuda::set_cupti_sink(&g_sink); }

// ---- records --------------------------------------------------------------------------------------
size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(KernelRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    default: return 0;
  }
}

uint8_t cupti_copy_kind(uint32_t sim_copy_kind) {
  switch (sim_copy_kind) {
    case SIM_COPY_H2D: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case SIM_COPY_D2H: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case SIM_COPY_D2D: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    case SIM_COPY_H2H: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    default: return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
  }
}

void deliver_locked() {
  if (!g_buffer) return;
  uint8_t* buffer = g_buffer;
  size_t size = g_buffer_size, used = g_buffer_used;
  g_buffer = nullptr;
  g_buffer_size = g_buffer_used = g_buffer_records = 0;
  if (g_complete) g_complete(nullptr, 0, buffer, size, used);
}

// Room for one record of `bytes`, asking the client for a buffer when needed; nullptr means the
// record is dropped.
uint8_t* reserve_locked(size_t bytes) {
  bool full = g_buffer && (g_buffer_used + bytes > g_buffer_size ||
                           (g_buffer_max_records && g_buffer_records >= g_buffer_max_records));
  if (full) deliver_locked();
  if (!g_buffer) {
    if (!g_request) return nullptr;
    uint8_t* b = nullptr;
    size_t size = 0, max_records = 0;
    g_request(&b, &size, &max_records);
    if (!b || size < bytes) return nullptr;  // too small for even one record: dropped, as CUPTI does
    g_buffer = b;
    g_buffer_size = size;
    g_buffer_max_records = max_records;
    g_buffer_used = g_buffer_records = 0;
  }
  uint8_t* at = g_buffer + g_buffer_used;
  g_buffer_used += bytes;
  ++g_buffer_records;
  return at;
}

// `finished` false: a record of work still in flight, which a forced flush hands out with
// start = end = 0 (the device has not written its times yet).
void emit_op(const SimDeviceOp& timed_op, uint32_t graph_id, const ClockMap& to_cupti, bool finished) {
  SimDeviceOp op = timed_op;
  if (!finished) {
    op.start_ns = op.end_ns = op.queued_ns = 0;
  }
  auto stamp = [&](uint64_t t) { return finished ? to_cupti(t) : 0; };
  if (op.kind == SIM_OP_KERNEL) {
    auto* r = reinterpret_cast<KernelRecord*>(reserve_locked(sizeof(KernelRecord)));
    if (!r) return void(g_dropped++);
    memset(r, 0, sizeof *r);
    r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r->start = stamp(op.start_ns);
    r->end = stamp(op.end_ns);
    r->completed = r->end;
    r->deviceId = op.device;
    r->contextId = op.device + 1;
    r->streamId = uint32_t(op.stream);
    r->gridX = r->gridY = r->gridZ = 1;
    r->blockX = r->blockY = r->blockZ = 1;
    r->correlationId = uint32_t(op.correlation_id);
    r->gridId = ++g_gridId;
    r->name = op.name;
    if (g_latency_timestamps) r->queued = r->submitted = stamp(op.queued_ns);
    r->graphId = graph_id;
  } else if (op.kind == SIM_OP_MEMCPY) {
    auto* r = reinterpret_cast<CUpti_ActivityMemcpy6*>(reserve_locked(sizeof(CUpti_ActivityMemcpy6)));
    if (!r) return void(g_dropped++);
    memset(r, 0, sizeof *r);
    r->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r->copyKind = cupti_copy_kind(op.copy_kind);
    r->srcKind = uint8_t(op.src_kind);
    r->dstKind = uint8_t(op.dst_kind);
    r->flags = op.is_async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r->bytes = op.bytes;
    r->start = stamp(op.start_ns);
    r->end = stamp(op.end_ns);
    r->deviceId = op.device;
    r->contextId = op.device + 1;
    r->streamId = uint32_t(op.stream);
    r->correlationId = uint32_t(op.correlation_id);
    r->runtimeCorrelationId = uint32_t(op.correlation_id);
    r->graphId = graph_id;
    r->copyCount = 1;
  } else if (op.kind == SIM_OP_MEMSET) {
    auto* r = reinterpret_cast<CUpti_ActivityMemset4*>(reserve_locked(sizeof(CUpti_ActivityMemset4)));
    if (!r) return void(g_dropped++);
    memset(r, 0, sizeof *r);
    r->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r->bytes = op.bytes;
    r->start = stamp(op.start_ns);
    r->end = stamp(op.end_ns);
    r->deviceId = op.device;
    r->contextId = op.device + 1;
    r->streamId = uint32_t(op.stream);
    r->correlationId = uint32_t(op.correlation_id);
    r->flags = op.is_async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    r->memoryKind = uint16_t(op.dst_kind);
    r->graphId = graph_id;
  }
}

void emit_sync(const simcuda::SyncRecord& s, const ClockMap& to_cupti) {
  auto* r = reinterpret_cast<CUpti_ActivitySynchronization2*>(reserve_locked(sizeof(CUpti_ActivitySynchronization2)));
  if (!r) return void(g_dropped++);
  memset(r, 0, sizeof *r);
  r->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  r->type = s.type;
  r->start = to_cupti(s.start_ns);
  r->end = to_cupti(s.end_ns);
  r->correlationId = s.correlation_id;
  r->contextId = s.context_id;
  r->streamId = s.stream_id;
  r->cudaEventId = s.event_id;
  r->cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
}

enum class Pump {
  kWorker,  // CUPTI's worker: finished work into buffers, full buffers back
  kFlush,   // cuptiActivityFlushAll(0): and the partly filled buffer back
  kForced,  // cuptiActivityFlushAll(FORCED): and work still in flight, with zero times
};

// Moves work from the driver into client buffers and hands buffers back as `how` says.
void pump(Pump how) {
  std::lock_guard<std::recursive_mutex> lock(g_deliver_mu);
  simcuda::Completed done;
  simcuda::collect_completed(now_ns(), &g_op_cursor, &g_sync_cursor, &done, how == Pump::kForced);
  const ClockMap to_cupti = clock_map();
  for (size_t i = 0; i < done.ops.size(); ++i) emit_op(done.ops[i], done.op_graph_ids[i], to_cupti, done.op_finished[i]);
  for (const auto& s : done.syncs) emit_sync(s, to_cupti);
  if (how != Pump::kWorker) deliver_locked();
}

// The flush period changes nothing here: a periodic flush returns full buffers only, and a buffer
// is handed back as soon as it is full.
void worker_main() {
  std::unique_lock<std::mutex> lock(g_worker_mu);
  for (;;) {
    g_worker_wake.wait_for(lock, std::chrono::milliseconds(1));
    lock.unlock();
    pump(Pump::kWorker);
    lock.lock();
  }
}

void ensure_worker() {
  std::lock_guard<std::mutex> lock(g_worker_mu);
  if (g_worker_started) return;
  g_worker_started = true;
  std::thread(worker_main).detach();  // CUPTI's own delivery thread; lives as long as the process
}

}  // namespace

#define CUPTI_EXPORT extern "C" __attribute__((visibility("default")))

CUPTI_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  const char* v = getenv("SIMCUDA_CUPTI_VERSION");
  *version = v && *v ? uint32_t(strtoul(v, nullptr, 10)) : CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

SUBSCRIBE_V2_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata,
                                           CUpti_SubscriberParams* params) {
  if (!handle || !callback) return CUPTI_ERROR_INVALID_PARAMETER;
  // A subscribe that takes its time (a real libcupti's first one loads its tables): holds a tool's
  // start open for as long, for tests of what happens meanwhile (a fork).
  if (const char* delay = getenv("SIMCUDA_CUPTI_SUBSCRIBE_DELAY_MS"); delay && atoi(delay) > 0) {
    usleep(static_cast<useconds_t>(atoi(delay)) * 1000);
  }
  std::lock_guard<std::mutex> lock(g_subscribe_mu);
  // A libcupti that does not belong to the process's driver says no more than this: the toolkit's
  // real one, loaded beside this simulated driver, did (the case gapwatch's message must explain).
  if (const char* fails = getenv("SIMCUDA_CUPTI_SUBSCRIBE_FAILS"); fails && *fails == '1') return CUPTI_ERROR_UNKNOWN;
  const char* held_by = getenv("SIMCUDA_CUPTI_HELD_BY");
  Subscriber* current = g_subscriber.load();
  if (current || (held_by && *held_by)) {
    const char* holder = current ? current->name : held_by;
    if (params && params->oldSubscriberName && params->oldSubscriberSize >= CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN) {
      snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", holder);
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  auto* s = new Subscriber;
  s->callback = callback;
  s->userdata = userdata;
  if (params && params->subscriberName) snprintf(s->name, sizeof s->name, "%s", params->subscriberName);
  else snprintf(s->name, sizeof s->name, "%s", "unnamed CUPTI subscriber");
  for (auto& domain : g_enabled)
    for (auto& cb : domain) cb.store(0);
  g_subscriber.store(s, std::memory_order_release);
  *handle = reinterpret_cast<CUpti_SubscriberHandle>(s);
  install_sink();
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata) {
  return cuptiSubscribe_v2(handle, callback, userdata, nullptr);
}

CUPTI_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle) {
  std::lock_guard<std::mutex> lock(g_subscribe_mu);
  if (!handle || reinterpret_cast<Subscriber*>(handle) != g_subscriber.load()) return CUPTI_ERROR_INVALID_PARAMETER;
  g_subscriber.store(nullptr);
  // The Subscriber is not freed: a callback may be running on another thread right now.
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain,
                                             CUpti_CallbackId cbid) {
  if (!handle || reinterpret_cast<Subscriber*>(handle) != g_subscriber.load()) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= kMaxDomain || cbid >= kMaxCbid) return CUPTI_ERROR_INVALID_PARAMETER;
#if SIMCUDA_CUPTI12
  // Ids of CUDA 13 calls are not callbacks this CUPTI has.
  if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE) ||
      (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
#endif
  g_enabled[domain][cbid].store(enable ? 1 : 0);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain) {
  if (!handle || reinterpret_cast<Subscriber*>(handle) != g_subscriber.load()) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= kMaxDomain) return CUPTI_ERROR_INVALID_PARAMETER;
  for (auto& cb : g_enabled[domain]) cb.store(enable ? 1 : 0);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle handle) {
  for (int d = CUPTI_CB_DOMAIN_DRIVER_API; d < kMaxDomain; ++d) {
    CUptiResult r = cuptiEnableDomain(enable, handle, CUpti_CallbackDomain(d));
    if (r != CUPTI_SUCCESS) return r;
  }
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetCallbackState(uint32_t* enable, CUpti_SubscriberHandle handle,
                                               CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (!enable || !handle || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= kMaxDomain || cbid >= kMaxCbid)
    return CUPTI_ERROR_INVALID_PARAMETER;
  *enable = g_enabled[domain][cbid].load();
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                        CUpti_BuffersCallbackCompleteFunc completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::recursive_mutex> lock(g_deliver_mu);
  g_request = requested;
  g_complete = completed;
  return CUPTI_SUCCESS;
}

static bool supported_kind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL ||
         kind == CUPTI_ACTIVITY_KIND_MEMCPY || kind == CUPTI_ACTIVITY_KIND_MEMSET ||
         kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
}

CUPTI_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (!supported_kind(kind)) return CUPTI_ERROR_NOT_COMPATIBLE;
  // KERNEL (serialising) and CONCURRENT_KERNEL both produce the same kernel records, of kind
  // CONCURRENT_KERNEL here: the virtual device has no serialised mode.
  g_activity[kind == CUPTI_ACTIVITY_KIND_KERNEL ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : kind].store(true);
  install_sink();
  ensure_worker();
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (!supported_kind(kind)) return CUPTI_ERROR_NOT_COMPATIBLE;
  g_activity[kind == CUPTI_ACTIVITY_KIND_KERNEL ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : kind].store(false);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record) {
    auto* current = reinterpret_cast<uint8_t*>(*record);
    size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = size_t(current - buffer) + size;
  }
  if (offset + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  size_t size = record_size(next->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (offset + size > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  pump(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED ? Pump::kForced : Pump::kFlush);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms) {
  g_flush_period_ms.store(ms);
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = g_dropped.load();
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t enable) {
  g_latency_timestamps = enable != 0;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) {
  const ClockMap anchor = callback ? anchor_with_rate(callback) : ClockMap{};
  std::lock_guard<std::mutex> lock(g_clock_mu);
  g_timestamp_cb.store(callback);
  g_anchor = anchor;
  g_anchor_cb = callback;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = clock_map()(now_ns());
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  g_thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (!type) return CUPTI_ERROR_INVALID_PARAMETER;
  *type = g_thread_id_type;
  return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult cuptiGetContextId(CUcontext context, uint32_t* id) {
  if (!context || !id) return CUPTI_ERROR_INVALID_PARAMETER;
  CUcontext current = nullptr;
  for (int d = 0; d < simcuda::device_count(); ++d)
    if (simcuda::primary_context(d) == context) *id = uint32_t(d + 1), current = context;
  int device = 0;
  if (!current && simcuda::created_context_id(context, id, &device)) current = context;  // cuCtxCreate's
  return current ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_CONTEXT;
}

CUPTI_EXPORT CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t* device) {
  uint32_t id = 0;
  int created_device = 0;
  if (context && device && simcuda::created_context_id(context, &id, &created_device)) {
    *device = uint32_t(created_device);
    return CUPTI_SUCCESS;
  }
  CUptiResult r = cuptiGetContextId(context, &id);
  if (r == CUPTI_SUCCESS) *device = id - 1;
  return r;
}

CUPTI_EXPORT CUptiResult cuptiFinalize(void) {
  // Everything finished is handed over first; then CUPTI detaches from the process: no subscriber,
  // no enabled activity, nothing left traced. A later cuptiSubscribe attaches again.
  pump(Pump::kForced);
  {
    std::lock_guard<std::mutex> lock(g_subscribe_mu);
    g_subscriber.store(nullptr);
  }
  for (auto& a : g_activity) a.store(false);
  simcuda::forget_traced();
  simcuda::set_cupti_sink(nullptr);
  return CUPTI_SUCCESS;
}
