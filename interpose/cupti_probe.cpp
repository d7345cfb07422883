#include "cupti_probe.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <vector>

#include <cupti.h>

#include "cuda_api_map.h"
#include "host_clock.h"
#include "process_info.h"
#include "recorder.h"
#include "string_interner.h"
#include "symbol_hooks.h"

namespace gapwatch {
namespace {

namespace copy_kind = wire::CopyKind;
namespace activity_kind = wire::ActivityKind;

// The CUPTI entry points gapwatch uses, resolved from the dlopen'ed library.
struct CuptiApi {
  decltype(&cuptiGetVersion) GetVersion;
  decltype(&cuptiGetResultString) GetResultString;
  decltype(&cuptiSubscribe) Subscribe;
  decltype(&cuptiSubscribe_v2) Subscribe_v2;
  decltype(&cuptiEnableCallback) EnableCallback;
  decltype(&cuptiEnableDomain) EnableDomain;
  decltype(&cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks;
  decltype(&cuptiActivityEnable) ActivityEnable;
  decltype(&cuptiActivityFlushAll) ActivityFlushAll;
  decltype(&cuptiActivityFlushPeriod) ActivityFlushPeriod;
  decltype(&cuptiActivityGetNextRecord) ActivityGetNextRecord;
  decltype(&cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords;
  decltype(&cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback;
  decltype(&cuptiGetTimestamp) GetTimestamp;
};

CuptiApi g_api;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_active{false};
int64_t g_clock_offset = 0;  // added to CUPTI timestamps when the timestamp callback was refused

// Depth of recorded runtime calls on this thread: a driver call made inside one (the runtime's own
// cuLaunchKernel) is the same call, not a second one.
thread_local int t_runtime_depth __attribute__((tls_model("initial-exec"))) = 0;

// Activity buffers come from a fixed pool: CUPTI may ask for one on the user's launching thread,
// which must not allocate or lock. An empty pool makes CUPTI drop (and count) records.
constexpr size_t kBufferBytes = 2 * 1024 * 1024;
constexpr size_t kBuffers = 8;
uint8_t* g_buffers[kBuffers];
std::atomic<bool> g_buffer_busy[kBuffers];

constexpr uint32_t kFlushPeriodMs = 100;

void* open_cupti(const Settings& s, std::string* tried) {
  if (!s.cupti_path.empty()) {
    *tried = s.cupti_path;
    return dlopen(s.cupti_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  for (const char* name : {"libcupti.so.13", "libcupti.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return h;  // the process's own copy first
  std::vector<std::string> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = getenv(var)) {
      candidates.push_back(std::string(root) + "/lib64/libcupti.so.13");
      candidates.push_back(std::string(root) + "/extras/CUPTI/lib64/libcupti.so.13");
    }
  candidates.push_back("/usr/local/cuda/lib64/libcupti.so.13");
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  candidates.push_back("libcupti.so.13");
  for (const auto& c : candidates) {
    *tried = c;
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <class F>
bool resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

uint64_t CUPTIAPI monotonic_timestamp() { return monotonic_ns(); }

// A polling loop (cudaEventQuery until it is done) makes tens of thousands of calls in a few
// milliseconds, more than a ring holds between two drains. The thread's consecutive polls of one
// handle that return "not ready" are held here and reach the ring as one record, spanning the
// first poll's entry to the last one's exit, with the number of polls in `bytes`; it is written
// by the poll that returns anything else (the one that saw the work done), by the thread's next
// recorded call, or by a poll of another handle. A loop still running when the thread stops
// calling CUDA is not written as a record; while it runs, the ring's call-in-progress mark holds
// it from its first poll, so a heartbeat shows a program that hangs polling.
struct PollRun {
  bool open = false;
  const void* handle = nullptr;
  ApiCallRecord record;
};
thread_local PollRun t_poll_run __attribute__((tls_model("initial-exec")));

void write_poll_run(Recorder* recorder) {
  t_poll_run.open = false;
  ApiCallRecord* e = recorder->reserve_api_call();
  if (!e) return;
  *e = t_poll_run.record;
  recorder->publish();
}

// ---- callbacks: on the user's thread --------------------------------------------------------------
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    // The context's work is about to go: hand over what CUPTI still holds (cudaDeviceReset).
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && Recorder::active()) cupti_flush();
    return;
  }
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (runtime) ++t_runtime_depth;
    else if (t_runtime_depth > 0) return;
    uint64_t enter_ticks = host_ticks();
    *d->correlationData = enter_ticks;  // CUPTI keeps it for this call's EXIT
    // The outermost call: the one a heartbeat shows if the thread is still inside it later. A
    // poll that continues a polling loop shows the loop, from its first poll: a program that hangs
    // polling (while (cudaStreamQuery(s) == cudaErrorNotReady);) is inside that loop, not inside
    // a call that never lasts.
    if (t_runtime_depth <= 1 && !Recorder::on_internal_thread())
      if (Recorder* recorder = Recorder::active()) {
        uint64_t shown = enter_ticks;
        if (t_poll_run.open && is_poll(domain, cbid) && polled_handle(d->functionParams) == t_poll_run.handle)
          shown = t_poll_run.record.start_ticks;
        recorder->enter_call(shown, d->functionName, d->correlationId);
      }
    return;
  }
  if (runtime) --t_runtime_depth;
  else if (t_runtime_depth > 0) return;  // the nested driver half of a runtime call: no clock read
  uint64_t exit_ticks = host_ticks();
  if (t_runtime_depth == 0) Recorder::exit_call();
  Recorder* recorder = Recorder::active();
  if (!recorder || Recorder::on_internal_thread()) return;
  const bool poll = is_poll(domain, cbid);
  const void* handle = poll ? polled_handle(d->functionParams) : nullptr;
  if (t_poll_run.open && !(poll && handle == t_poll_run.handle)) write_poll_run(recorder);
  if (poll) {
    const int code = d->functionReturnValue ? *static_cast<const int*>(d->functionReturnValue) : 0;
    if (t_poll_run.open) {  // the same handle again
      t_poll_run.record.end_ticks = exit_ticks;
      ++t_poll_run.record.bytes;
      t_poll_run.record.return_code = code;
      if (code != kNotReady) write_poll_run(recorder);
      else recorder->enter_call(t_poll_run.record.start_ticks, d->functionName, d->correlationId);
      return;
    }
    if (code == kNotReady) {
      ApiCallRecord& r = t_poll_run.record;
      r = ApiCallRecord{};
      r.type = EventType::kApiCall;
      classify_api_call(domain, cbid, d->functionParams, &r);
      r.start_ticks = *d->correlationData;
      r.end_ticks = exit_ticks;
      r.correlation = d->correlationId;
      r.api_name = d->functionName;
      r.return_code = code;
      r.bytes = 1;
      if (runtime) r.call_site = t_call_site;
      t_poll_run.handle = handle;
      t_poll_run.open = true;
      // Between two polls the thread is still in the loop: keep it marked as the call in progress.
      recorder->enter_call(r.start_ticks, d->functionName, d->correlationId);
      return;
    }
  }
  ApiCallRecord* e = recorder->reserve_api_call();
  if (!e) return;
  if (!classify_api_call(domain, cbid, d->functionParams, e)) return;  // reserved, never published
  if (poll) e->bytes = 1;
  e->start_ticks = *d->correlationData;
  e->end_ticks = exit_ticks;
  e->correlation = d->correlationId;
  e->api_name = d->functionName;
  if (d->functionReturnValue) e->return_code = *static_cast<const int*>(d->functionReturnValue);
  if (runtime) e->call_site = t_call_site;  // set when a preloaded hook is around this call
  e->symbol_name = d->symbolName;
  recorder->publish();
}

// ---- activity buffers: on CUPTI's own thread (or at a flush) -----------------------------------
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  for (size_t i = 0; i < kBuffers; ++i) {
    bool expected = false;
    if (g_buffer_busy[i].compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      *buffer = g_buffers[i];
      *size = kBufferBytes;
      return;
    }
  }
}

// MemoryKind has CUPTI's numbers (proto_schema_test checks it); newer CUPTI kinds are not known.
uint8_t memory_kind(uint8_t cupti_kind) { return cupti_kind <= wire::MemoryKind::kMaxValue ? cupti_kind : 0; }

uint8_t copy_kind_from(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return copy_kind::kH2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return copy_kind::kD2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return copy_kind::kD2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return copy_kind::kH2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return copy_kind::kP2P;
    default: return copy_kind::kUnspecified;
  }
}

bool decode(const CUpti_Activity* r, Recorder* recorder, DeviceActivityFields* e) {
  *e = DeviceActivityFields{};
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      e->kind = activity_kind::kKernel;
      e->start_ns = k->start, e->end_ns = k->end;
      e->device = k->deviceId;
      e->stream = k->streamId;
      e->correlation_id = k->correlationId;
      e->graph_id = k->graphId;
      e->name_id = recorder->intern(wire::StringKind::kKernelName, k->name ? k->name : "?");
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      e->kind = activity_kind::kMemcpy;
      e->start_ns = m->start, e->end_ns = m->end;
      e->device = m->deviceId;
      e->stream = m->streamId;
      e->correlation_id = m->correlationId;
      e->bytes = m->bytes;
      e->copy_kind = copy_kind_from(m->copyKind);
      e->src_memory = memory_kind(m->srcKind);
      e->dst_memory = memory_kind(m->dstKind);
      e->graph_id = m->graphId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      e->kind = activity_kind::kMemset;
      e->start_ns = m->start, e->end_ns = m->end;
      e->device = m->deviceId;
      e->stream = m->streamId;
      e->correlation_id = m->correlationId;
      e->bytes = m->bytes;
      e->dst_memory = memory_kind(uint8_t(m->memoryKind));
      e->graph_id = m->graphId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
      e->kind = activity_kind::kSync;
      e->start_ns = y->start, e->end_ns = y->end;
      e->stream = y->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : y->streamId;
      e->correlation_id = y->correlationId;
      e->sync_kind = uint8_t(y->type);  // SyncKind has CUPTI's numbers
      return true;
    }
    default:
      return false;
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Recorder* recorder = Recorder::active();
  if (recorder) {
    static thread_local std::vector<DeviceActivityFields> events;  // CUPTI's thread, not the user's
    events.clear();
    CUpti_Activity* r = nullptr;
    DeviceActivityFields e;
    while (g_api.ActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
      if (!decode(r, recorder, &e)) continue;
      e.start_ns += uint64_t(g_clock_offset);
      e.end_ns += uint64_t(g_clock_offset);
      events.push_back(e);
    }
    if (!events.empty()) recorder->add_activities(events.data(), events.size());
    size_t dropped = 0;
    if (g_api.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) recorder->set_cupti_dropped(dropped);
  }
  for (size_t i = 0; i < kBuffers; ++i)
    if (g_buffers[i] == buffer) g_buffer_busy[i].store(false, std::memory_order_release);
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (g_api.GetResultString && g_api.GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(int(r));
}

}  // namespace

CuptiAttach cupti_attach(const Settings& settings) {
  CuptiAttach out;
  std::string tried;
  void* lib = open_cupti(settings, &tried);
  if (!lib) {
    out.why_not = "libcupti could not be loaded (" + tried + ": " + (dlerror() ? "not found" : "?") + ")";
    return out;
  }
  bool ok = resolve(lib, "cuptiGetVersion", &g_api.GetVersion) &&
            resolve(lib, "cuptiGetResultString", &g_api.GetResultString) &&
            resolve(lib, "cuptiSubscribe", &g_api.Subscribe) &&
            resolve(lib, "cuptiEnableCallback", &g_api.EnableCallback) &&
            resolve(lib, "cuptiEnableDomain", &g_api.EnableDomain) &&
            resolve(lib, "cuptiActivityRegisterCallbacks", &g_api.ActivityRegisterCallbacks) &&
            resolve(lib, "cuptiActivityEnable", &g_api.ActivityEnable) &&
            resolve(lib, "cuptiActivityFlushAll", &g_api.ActivityFlushAll) &&
            resolve(lib, "cuptiActivityGetNextRecord", &g_api.ActivityGetNextRecord) &&
            resolve(lib, "cuptiActivityGetNumDroppedRecords", &g_api.ActivityGetNumDroppedRecords) &&
            resolve(lib, "cuptiGetTimestamp", &g_api.GetTimestamp);
  resolve(lib, "cuptiSubscribe_v2", &g_api.Subscribe_v2);
  resolve(lib, "cuptiActivityFlushPeriod", &g_api.ActivityFlushPeriod);
  resolve(lib, "cuptiActivityRegisterTimestampCallback", &g_api.ActivityRegisterTimestampCallback);
  if (!ok) {
    out.why_not = "libcupti (" + tried + ") lacks entry points gapwatch needs";
    return out;
  }
  uint32_t version = 0;
  g_api.GetVersion(&version);
  out.version = version;
  // Activity records are read by their CUDA 13 layouts: another major version would misread them.
  if (version / 10000 != CUPTI_API_VERSION / 10000) {
    out.why_not = "libcupti reports version " + std::to_string(version) + ", gapwatch was built for " +
                  std::to_string(CUPTI_API_VERSION) + " (CUDA " + std::to_string(CUPTI_API_VERSION / 10000) + ")";
    return out;
  }
  CUptiResult r;
  if (g_api.Subscribe_v2) {
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = {};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "gapwatch";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof holder;
    r = g_api.Subscribe_v2(&g_subscriber, on_callback, nullptr, &params);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      out.why_not = std::string("CUPTI is held by ") + (holder[0] ? holder : "another tool") +
                    " (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)";
      return out;
    }
  } else {
    r = g_api.Subscribe(&g_subscriber, on_callback, nullptr);
  }
  if (r != CUPTI_SUCCESS) {
    out.why_not = "cuptiSubscribe failed: " + result_text(r);
    return out;
  }
  // Records in CLOCK_MONOTONIC, like the host times, registered before any activity is enabled as
  // CUPTI requires. If refused, measure the offset from cuptiGetTimestamp instead.
  bool same_clock = g_api.ActivityRegisterTimestampCallback &&
                    g_api.ActivityRegisterTimestampCallback(monotonic_timestamp) == CUPTI_SUCCESS;
  if (!same_clock) {
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 16; ++i) {
      uint64_t before = monotonic_ns(), cupti = 0;
      g_api.GetTimestamp(&cupti);
      uint64_t after = monotonic_ns();
      if (after - before < best_gap) best_gap = after - before, g_clock_offset = int64_t((before + after) / 2 - cupti);
    }
  }
  for (size_t i = 0; i < kBuffers; ++i) g_buffers[i] = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  out.ok = true;
  return out;
}

void cupti_enable() {
  for (const CUpti_CallbackId* id = kRecordedRuntimeCbids; *id; ++id)
    g_api.EnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  for (const CUpti_CallbackId* id = kRecordedDriverCbids; *id; ++id)
    g_api.EnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  g_api.EnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  g_api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    g_api.ActivityEnable(kind);
  // Buffers come back at least this often, so a recording grows while the job runs.
  if (g_api.ActivityFlushPeriod) g_api.ActivityFlushPeriod(kFlushPeriodMs);
  g_active.store(true, std::memory_order_release);
}

void cupti_flush() {
  if (g_active.load(std::memory_order_acquire)) g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

bool cupti_active() { return g_active.load(std::memory_order_acquire); }

}  // namespace gapwatch
