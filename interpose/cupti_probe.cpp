#include "cupti_probe.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <vector>

#include <cupti.h>

#include "cuda_api_map.h"
#include "cupti_records.h"
#include "cupti_sharing.h"
#include "host_clock.h"
#include "process_info.h"
#include "recorder.h"
#include "string_interner.h"
#include "symbol_hooks.h"

namespace gapwatch {
namespace {

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
void* g_library = nullptr;
const CuptiRecordReader* g_records = nullptr;  // the layouts of the loaded libcupti's version
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_active{false};
int64_t g_clock_offset = 0;  // added to CUPTI timestamps when the timestamp callback was refused
bool g_owns_timestamps = false;  // CUPTI's timestamp callback is gapwatch's (cupti_sharing::timestamp)

// What gapwatch itself enabled: with another client's subscription in the process, the real
// subscriber also gets the callbacks only that client wants (cupti_sharing.h).
constexpr int kCbidLimit = 2048;
bool g_own_callback[CUPTI_CB_DOMAIN_SIZE][kCbidLimit];
constexpr CUpti_ActivityKind kOwnKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                            CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

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

// Which libcupti was opened and why that one: every message about CUPTI names both, since a
// CUPTI that does not belong to the process's CUDA fails with nothing but CUPTI_ERROR_UNKNOWN.
struct CuptiChoice {
  std::string path;  // as opened; the file the dynamic linker mapped once it is open
  std::string how;   // "already loaded by the process", "GAPWATCH_CUPTI_PATH", "beside the process's libcudart"...
  std::vector<std::string> tried;  // what failed before it, each with why
};

// The directory a library the process has already mapped was loaded from, "" when it has none.
// Lexical (the path as the dynamic linker found it, not its real path): the toolkit's lib64 is a
// link, and its extras/CUPTI sits beside the link, not beside the link's target.
std::string loaded_directory(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return {};
  std::string dir;
  link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
    dir = map->l_name;
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string() : dir.substr(0, slash);
  }
  dlclose(h);
  return dir;
}

std::string mapped_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) {
    char real[4096];
    return realpath(map->l_name, real) ? std::string(real) : std::string(map->l_name);
  }
  return fallback;
}

// Where the CUPTI of the CUDA the process uses lives, given the directory of its libcudart (or
// libcuda): the same directory (toolkit 13's lib64, conda's lib, pip's nvidia/cu13/lib), the
// toolkit 12 layout (lib64/../extras/CUPTI/lib64), and pip's cu12 wheels (nvidia/cuda_runtime/lib
// beside nvidia/cuda_cupti/lib).
void add_beside(const std::string& dir, std::vector<std::string>* dirs) {
  if (dir.empty()) return;
  dirs->push_back(dir);
  size_t slash = dir.rfind('/');
  if (slash != std::string::npos) dirs->push_back(dir.substr(0, slash) + "/extras/CUPTI/lib64");
  const std::string pip = "/nvidia/cuda_runtime/lib";
  if (dir.size() > pip.size() && dir.compare(dir.size() - pip.size(), pip.size(), pip) == 0)
    dirs->push_back(dir.substr(0, dir.size() - pip.size()) + "/nvidia/cuda_cupti/lib");
}

void* try_open(const std::string& path, const std::string& how, CuptiChoice* choice) {
  // A path that is not there is no news; one that is there and fails to load is (a missing
  // dependency, another architecture): its dlerror goes into the message.
  bool named = path.find('/') != std::string::npos;
  if (named && access(path.c_str(), F_OK) != 0) return nullptr;
  if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    choice->path = mapped_path(h, path);
    choice->how = how;
    return h;
  }
  const char* e = dlerror();
  choice->tried.push_back(path + " (" + how + "): " + (named && e ? e : "not found"));
  return nullptr;
}

// The process's own libcupti first, whichever version: a second copy beside it would be a second
// CUPTI in one process. Then GAPWATCH_CUPTI_PATH; then the CUPTI beside the CUDA runtime (else
// driver) the process loaded, which is the one that belongs to it; then $CUDA_HOME, $CUDA_PATH and
// /usr/local/cuda (13, then 12); then the dynamic linker's search path.
void* open_cupti(const Settings& s, CuptiChoice* choice, bool* already_loaded) {
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) {
      choice->path = mapped_path(h, name);
      choice->how = "already loaded by the process";
      *already_loaded = true;
      return h;
    }
  if (!s.cupti_path.empty()) {
    *already_loaded = dlopen(s.cupti_path.c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr;
    if (void* h = dlopen(s.cupti_path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      choice->path = mapped_path(h, s.cupti_path);
      choice->how = "GAPWATCH_CUPTI_PATH";
      return h;
    }
    const char* e = dlerror();
    choice->tried.push_back(s.cupti_path + " (GAPWATCH_CUPTI_PATH): " + (e ? e : "not found"));
    return nullptr;  // named by the user: nothing else stands in for it
  }
  std::vector<std::pair<std::string, std::string>> dirs;  // directory, how it was chosen
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libcuda.so.1"}) {
    std::vector<std::string> beside;
    add_beside(loaded_directory(lib), &beside);
    for (auto& d : beside) dirs.emplace_back(d, std::string("beside the process's ") + lib);
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = getenv(var); root && *root) {
      dirs.emplace_back(std::string(root) + "/lib64", std::string("$") + var);
      dirs.emplace_back(std::string(root) + "/extras/CUPTI/lib64", std::string("$") + var);
    }
  dirs.emplace_back("/usr/local/cuda/lib64", "the toolkit's default location");
  dirs.emplace_back("/usr/local/cuda/extras/CUPTI/lib64", "the toolkit's default location");
  for (const auto& [dir, how] : dirs)
    for (const char* soname : {"libcupti.so.13", "libcupti.so.12"})
      if (void* h = try_open(dir + "/" + soname, how, choice)) return h;
  for (const char* soname : {"libcupti.so.13", "libcupti.so.12"})
    if (void* h = try_open(soname, "the dynamic linker's search path", choice)) return h;
  return nullptr;
}

// " (libcupti /x/libcupti.so.13, beside the process's libcudart.so.13)": for every message after
// the library is open.
std::string which_cupti(const CuptiChoice& c) { return " (libcupti " + c.path + ", " + c.how + ")"; }

template <class F>
bool resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

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
void record_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
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
      r.python_stack = recorder->post_python_stack();  // a loop that waits: where it is
      t_poll_run.handle = handle;
      t_poll_run.open = true;
      // Between two polls the thread is still in the loop: keep it marked as the call in progress.
      recorder->enter_call(r.start_ticks, d->functionName, d->correlationId);
      return;
    }
  }
  ApiCallRecord* e = recorder->reserve_api_call();
  const int code = d->functionReturnValue ? *static_cast<const int*>(d->functionReturnValue) : 0;
  if (!e) {  // dropped (counted): the table of pinned host ranges still follows the call
    note_host_memory(domain, cbid, d->functionParams, code);
    return;
  }
  if (!classify_api_call(domain, cbid, d->functionParams, e)) return;  // reserved, never published
  // Pinning and unpinning calls (rare): the table async copies are classified by.
  if (__builtin_expect(e->kind == wire::ApiKind::kHostAlloc || e->kind == wire::ApiKind::kHostFree, 0))
    note_host_memory(domain, cbid, d->functionParams, code);
  if (poll) e->bytes = 1;
  e->start_ticks = *d->correlationData;
  e->end_ticks = exit_ticks;
  e->correlation = d->correlationId;
  e->api_name = d->functionName;
  e->return_code = code;
  if (runtime) e->call_site = t_call_site;  // set when a preloaded hook is around this call
  e->symbol_name = d->symbolName;
  recorder->attach_python_stack(e);
  recorder->publish();
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (__builtin_expect(!cupti_sharing::has_foreign_subscriber(), 1)) return record_callback(domain, cbid, data);
  // Another client's callback runs outside gapwatch's timing of the call: before it at the
  // entry, after it at the exit.
  const bool api = domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const bool enter = api && static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER;
  if (enter) cupti_sharing::forward_callback(domain, cbid, data);
  if (cupti_own_callback(domain, cbid)) record_callback(domain, cbid, data);
  if (!enter) cupti_sharing::forward_callback(domain, cbid, data);
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

// The pool slot of `buffer`, or kBuffers for a buffer that is not gapwatch's.
size_t own_buffer_slot(const uint8_t* buffer) {
  size_t i = 0;
  while (i < kBuffers && g_buffers[i] != buffer) ++i;
  return i;
}

// One record of a buffer `bytes` long: decoded into `events` for gapwatch (or counted in
// `unplaced`), and copied for another client that wants its kind (cupti_sharing.h) when `share`.
void take_record(const CUpti_Activity* r, size_t bytes, bool share, Recorder* recorder,
                 std::vector<DeviceActivityFields>& events, uint64_t* unplaced) {
  if (share && bytes && cupti_sharing::foreign_wants(r->kind)) cupti_sharing::copy_record(r, bytes);
  DeviceActivityFields e;
  const char* kernel_name = nullptr;
  if (!recorder || !g_records->decode(r, &e, &kernel_name)) return;
  if (kernel_name) e.name_id = recorder->intern(wire::StringKind::kKernelName, kernel_name);
  // A forced flush hands back records of work still in flight with start = end = 0: placed at
  // time zero they would be a kernel decades long. So would a record in another client's clock
  // that cannot be mapped. Counted, not recorded.
  if (e.start_ns == 0 || e.end_ns < e.start_ns) return void(++*unplaced);
  e.start_ns += uint64_t(g_clock_offset);
  e.end_ns += uint64_t(g_clock_offset);
  if (g_owns_timestamps && !(cupti_sharing::to_monotonic(&e.start_ns) && cupti_sharing::to_monotonic(&e.end_ns)))
    return void(++*unplaced);
  events.push_back(e);
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  // An _exit's last round (on the flusher) forces a flush after the hooks stopped: its records count.
  Recorder* recorder = Recorder::active();
  if (!recorder) recorder = Recorder::ending();
  const size_t slot = own_buffer_slot(buffer);
  const bool own = slot < kBuffers;
  // Not thread_local: a flush at exit runs after the exiting thread's thread_local objects are
  // destroyed. A buffer comes back on CUPTI's thread or inside a flush, never inside a launch.
  std::vector<DeviceActivityFields> events;
  CUpti_Activity* r = nullptr;
  const CUpti_Activity* previous = nullptr;
  uint64_t incomplete = 0;
  // Records of gapwatch's buffers are copied for another client; a buffer of its own (one it had
  // given CUPTI before gapwatch took the registration over) goes back to it whole, below.
  while (g_api.ActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (previous)
      take_record(previous, size_t(reinterpret_cast<const uint8_t*>(r) - reinterpret_cast<const uint8_t*>(previous)),
                  own, recorder, events, &incomplete);
    previous = r;
  }
  // The last record ends where the valid bytes do.
  if (previous)
    take_record(previous, size_t(buffer + valid - reinterpret_cast<const uint8_t*>(previous)), own, recorder, events,
                &incomplete);
  if (recorder) {
    if (!events.empty()) recorder->add_activities(events.data(), events.size());
    if (incomplete) recorder->count_cupti_incomplete(incomplete);
    size_t dropped = 0;
    if (g_api.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) recorder->set_cupti_dropped(dropped);
  }
  if (!own) return cupti_sharing::pass_foreign_buffer(context, stream, buffer, size, valid);
  g_buffer_busy[slot].store(false, std::memory_order_release);
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (g_api.GetResultString && g_api.GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(int(r));
}

}  // namespace

CuptiAttach cupti_attach(const Settings& settings) {
  CuptiAttach out;
  CuptiChoice choice;
  void* lib = open_cupti(settings, &choice, &out.already_loaded);
  g_library = lib;
  if (!lib) {
    out.why_not = "libcupti could not be loaded: ";
    if (choice.tried.empty()) out.why_not += "none found";
    for (size_t i = 0; i < choice.tried.size(); ++i) out.why_not += (i ? "; " : "") + choice.tried[i];
    if (settings.cupti_path.empty())
      out.why_not += " (a libcupti beside the process's libcudart, $CUDA_HOME or /usr/local/cuda is used; "
                     "GAPWATCH_CUPTI_PATH names one)";
    return out;
  }
  out.library = choice.path;
  out.how = choice.how;
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
    out.why_not = "libcupti lacks entry points gapwatch needs" + which_cupti(choice);
    return out;
  }
  uint32_t version = 0;
  g_api.GetVersion(&version);
  out.version = version;
  // Activity records are read by the struct layouts of the version that writes them.
  g_records = cupti_record_reader(version);
  if (!g_records) {
    out.why_not = "libcupti reports version " + std::to_string(version) + ", gapwatch reads " + cupti_versions_read() +
                  which_cupti(choice);
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
                    " (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)" + which_cupti(choice);
      return out;
    }
  } else {
    r = g_api.Subscribe(&g_subscriber, on_callback, nullptr);
  }
  if (r != CUPTI_SUCCESS) {
    out.why_not = "cuptiSubscribe failed: " + result_text(r) + which_cupti(choice);
    return out;
  }
  // Records in CLOCK_MONOTONIC, like the host times, registered before any activity is enabled as
  // CUPTI requires; the callback is cupti_sharing's, which gives another client its own clock
  // while it has one. If refused, measure the offset from cuptiGetTimestamp instead.
  bool same_clock = g_api.ActivityRegisterTimestampCallback &&
                    g_api.ActivityRegisterTimestampCallback(cupti_sharing::timestamp) == CUPTI_SUCCESS;
  g_owns_timestamps = same_clock;
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
  // Ids are the same numbers in CUPTI 12 and 13; those newer than the loaded version are skipped.
  auto enable = [](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (cbid < kCbidLimit) g_own_callback[domain][cbid] = true;
    g_api.EnableCallback(1, g_subscriber, domain, cbid);
  };
  for (const CUpti_CallbackId* id = kRecordedRuntimeCbids; *id; ++id)
    if (*id < g_records->runtime_cbid_end) enable(CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  for (const CUpti_CallbackId* id = kRecordedDriverCbids; *id; ++id)
    if (*id < g_records->driver_cbid_end) enable(CUPTI_CB_DOMAIN_DRIVER_API, *id);
  enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  g_api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
  for (CUpti_ActivityKind kind : kOwnKinds) g_api.ActivityEnable(kind);
  // The period makes CUPTI hand back full buffers sooner; partly filled ones come back only from
  // cuptiActivityFlushAll, which the recorder's flusher calls (cupti_flush_finished).
  if (g_api.ActivityFlushPeriod) g_api.ActivityFlushPeriod(kFlushPeriodMs);
  g_active.store(true, std::memory_order_release);
}

void cupti_flush() {
  if (g_active.load(std::memory_order_acquire)) g_api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void cupti_flush_finished() {
  if (!g_active.load(std::memory_order_acquire)) return;
  cupti_sharing::calibrate();
  g_api.ActivityFlushAll(0);
}

bool cupti_active() { return g_active.load(std::memory_order_acquire); }
void* cupti_library() { return g_library; }
CUpti_SubscriberHandle cupti_subscriber() { return g_subscriber; }
bool cupti_owns_timestamps() { return g_owns_timestamps; }
bool cupti_own_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain < CUPTI_CB_DOMAIN_SIZE && cbid < kCbidLimit && g_own_callback[domain][cbid];
}
bool cupti_own_kind(CUpti_ActivityKind kind) {
  for (CUpti_ActivityKind k : kOwnKinds)
    if (k == kind || (kind == CUPTI_ACTIVITY_KIND_KERNEL && k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return true;
  return false;
}

}  // namespace gapwatch
