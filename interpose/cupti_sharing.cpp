#include "cupti_sharing.h"

#include <dlfcn.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <string>

#include "cupti_probe.h"
#include "host_clock.h"
#include "recorder.h"
#include "symbol_hooks.h"

namespace gapwatch {
namespace cupti_sharing {
namespace {

constexpr int kDomains = CUPTI_CB_DOMAIN_SIZE;
constexpr int kCbids = 2048;
constexpr int kKinds = 128;

// ---- the real libcupti ---------------------------------------------------------------------------
// The copy gapwatch opened when it has one (so calls reach the same library gapwatch uses), else
// the next definition after this library.
void* real_symbol(const char* name) {
  if (void* lib = cupti_library())
    if (void* f = dlsym(lib, name)) return f;
  return dlsym(RTLD_NEXT, name);
}

template <class F>
F real(std::atomic<F>& cache, const char* name) {
  F f = cache.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<F>(real_symbol(name));
    cache.store(f, std::memory_order_release);
  }
  return f;
}

#define REAL(fn)                                           \
  static std::atomic<decltype(&fn)> real_##fn{nullptr};    \
  auto real_fn = real(real_##fn, #fn);                     \
  if (!real_fn) return CUPTI_ERROR_NOT_INITIALIZED

// Whether gapwatch holds CUPTI and serves the other client. The first CUPTI call of another
// client starts recording if CUDA has not yet (a profiler started before the first CUDA call), so
// that gapwatch is the one real subscriber from the start.
bool serving() {
  if (Recorder::on_internal_thread() || starting_on_this_thread()) return false;
  if (!g_start_attempted.load(std::memory_order_acquire)) ensure_started();
  return cupti_active();
}

// The name of the library a client's function lives in, for the report ("libtorch_cuda.so").
std::string client_name(const void* function) {
  Dl_info info{};
  std::string where = "another client of CUPTI";
  if (function && dladdr(function, &info) && info.dli_fname) {
    const char* base = strrchr(info.dli_fname, '/');
    where = base ? base + 1 : info.dli_fname;
  }
  if (where.find("torch") != std::string::npos || where.find("kineto") != std::string::npos)
    return "torch.profiler (Kineto, in " + where + ")";
  return where;
}

// ---- the other client's subscription -------------------------------------------------------------
struct ForeignSubscriber {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::atomic<uint8_t> enabled[kDomains][kCbids];
};
ForeignSubscriber g_subscriber_storage;  // one other subscriber, as CUPTI allows one
std::atomic<ForeignSubscriber*> g_subscriber{nullptr};
std::mutex g_subscribe_mu;

CUpti_SubscriberHandle foreign_handle() { return reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_storage); }
bool is_foreign(CUpti_SubscriberHandle h) { return h == foreign_handle(); }

// The real subscriber has (domain, cbid) on while either client wants it.
void apply_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  static std::atomic<decltype(&cuptiEnableCallback)> cache{nullptr};
  auto enable = real(cache, "cuptiEnableCallback");
  if (!enable) return;
  bool wanted = cupti_own_callback(domain, cbid) ||
                (g_subscriber.load() && g_subscriber_storage.enabled[domain][cbid].load());
  enable(wanted ? 1 : 0, cupti_subscriber(), domain, cbid);
}

// Correlation data of the other subscriber's calls in progress on this thread, by nesting depth
// (a runtime call's nested driver call is a second level).
thread_local uint64_t t_correlation[16] __attribute__((tls_model("initial-exec")));
thread_local int t_depth __attribute__((tls_model("initial-exec"))) = 0;

// ---- the other client's activity ----------------------------------------------------------------
std::atomic<CUpti_BuffersCallbackRequestFunc> g_request{nullptr};
std::atomic<CUpti_BuffersCallbackCompleteFunc> g_complete{nullptr};
std::atomic<uint8_t> g_kinds[kKinds];
std::atomic<int> g_kind_count{0};

// The buffer being filled for the other client. Layout: kMagic, then for each record an 8-byte
// length (of the record, padded to 8) and the record's bytes: our cuptiActivityGetNextRecord walks
// it; the client only ever sees record pointers.
//
// g_out_mu guards the buffer and nothing else: the client's request and completion callbacks are
// called with it released. They may call back into CUPTI (flush, read records), which takes
// CUPTI's own locks, and CUPTI's delivery thread holds those while it waits for g_out_mu in
// copy_record(): a callback under g_out_mu would take the locks in the other order.
constexpr char kMagic[8] = {'g', 'w', 's', 'h', 'a', 'r', 'e', '1'};
std::mutex g_out_mu;
uint8_t* g_out = nullptr;
size_t g_out_size = 0, g_out_used = 0, g_out_max_records = 0, g_out_records = 0;

bool is_shared_buffer(const uint8_t* buffer, size_t valid) {
  return buffer && valid >= sizeof kMagic && memcmp(buffer, kMagic, sizeof kMagic) == 0;
}

// A buffer taken out of g_out under g_out_mu, handed to the client after the lock is released. The
// completion function is the one registered when it was taken (a re-registration hands the buffer
// filled so far to the callbacks that gave it).
struct TakenBuffer {
  uint8_t* buffer = nullptr;
  size_t size = 0, used = 0;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  void hand_back() {
    if (buffer && complete) complete(nullptr, 0, buffer, size, used);
  }
};

TakenBuffer take_out_locked() {
  TakenBuffer taken;
  if (!g_out) return taken;
  taken = {g_out, g_out_size, g_out_used, g_complete.load()};
  g_out = nullptr;
  g_out_size = g_out_used = g_out_records = g_out_max_records = 0;
  return taken;
}

// Hands the partly filled buffer back to the client (its flush, a re-registration, finalize).
void deliver_out() {
  TakenBuffer taken;
  {
    std::lock_guard<std::mutex> lock(g_out_mu);
    taken = take_out_locked();
  }
  taken.hand_back();
}

// ---- the other client's clock ---------------------------------------------------------------------
std::atomic<CUpti_TimestampCallbackFunc> g_clock{nullptr};
// Two readings of (other clock, CLOCK_MONOTONIC): the latest and the one before, for a local
// linear map. Written by the flusher, read where buffers are decoded.
std::mutex g_clock_mu;
struct Reading {
  uint64_t other = 0, mono = 0;
};
Reading g_prev, g_last;
std::atomic<uint64_t> g_mono_floor{0};  // no record of this process is older

Reading read_clocks(CUpti_TimestampCallbackFunc clock) {
  Reading best;
  uint64_t tightest = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t before = monotonic_ns(), other = clock(), after = monotonic_ns();
    if (after - before < tightest) tightest = after - before, best = {other, before + (after - before) / 2};
  }
  return best;
}

// ---- spans for the report --------------------------------------------------------------------------
std::mutex g_span_mu;
uint64_t g_span_start = 0;
std::string g_span_client;

void span_changed(bool active, const void* client_function) {
  Recorder* recorder = Recorder::active();
  std::lock_guard<std::mutex> lock(g_span_mu);
  const uint64_t now = monotonic_ns();
  if (active && !g_span_start) {
    g_span_start = now;
    g_span_client = client_name(client_function);
    if (recorder) {
      recorder->note_activity_api_span(wire::ActivityApiState::kShared, g_span_start, 0, g_span_client);
      log_line(recorder->settings(), LogLevel::kInfo, "sharing CUPTI with %s: both get every record",
               g_span_client.c_str());
    }
  } else if (!active && g_span_start) {
    if (recorder) recorder->note_activity_api_span(wire::ActivityApiState::kShared, g_span_start, now, g_span_client);
    g_span_start = 0;
  }
}

}  // namespace

std::atomic<bool> g_foreign_subscribed{false};

void forward_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  ForeignSubscriber* s = g_subscriber.load(std::memory_order_acquire);
  if (!s || domain >= kDomains || cbid >= kCbids || !s->enabled[domain][cbid].load(std::memory_order_relaxed)) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) {
    s->callback(s->userdata, domain, cbid, data);
    return;
  }
  // The same call data but a correlation-data slot of its own: gapwatch keeps its entry time in
  // CUPTI's slot between entry and exit.
  CUpti_CallbackData copy = *static_cast<const CUpti_CallbackData*>(data);
  if (copy.callbackSite == CUPTI_API_ENTER) {
    copy.correlationData = &t_correlation[t_depth++ & 15];
  } else {
    copy.correlationData = &t_correlation[--t_depth & 15];
  }
  s->callback(s->userdata, domain, cbid, &copy);
}

// KERNEL (serialising) is kept as CONCURRENT_KERNEL: gapwatch has that on already, and it does not
// serialise the user's kernels; its records carry CONCURRENT_KERNEL.
CUpti_ActivityKind stored_kind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_KERNEL ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : kind;
}

bool foreign_wants(CUpti_ActivityKind kind) {
  return int(kind) < kKinds && g_kinds[kind].load(std::memory_order_relaxed);
}

namespace {

// Appends the record to g_out when it has room (g_out_mu held).
bool append_locked(const CUpti_Activity* record, size_t bytes, size_t padded) {
  const size_t need = 8 + padded;
  if (!g_out || g_out_used + need > g_out_size || (g_out_max_records && g_out_records >= g_out_max_records))
    return false;
  uint64_t length = padded;
  memcpy(g_out + g_out_used, &length, 8);
  memcpy(g_out + g_out_used + 8, record, bytes);
  if (padded > bytes) memset(g_out + g_out_used + 8 + bytes, 0, padded - bytes);
  g_out_used += need;
  ++g_out_records;
  return true;
}

}  // namespace

// The client's callbacks run with g_out_mu released (see g_out_mu). Two of CUPTI's threads may
// deliver at once; each step below re-checks g_out under the lock, so a record goes into exactly
// one buffer, and a buffer asked for while another thread installed one (or while the client
// registered other callbacks) goes back empty to the callbacks that gave it (only the magic: its
// reads find no record), as CUPTI may hand back a buffer with nothing in it.
void copy_record(const CUpti_Activity* record, size_t bytes) {
  const size_t padded = (bytes + 7) & ~size_t(7);
  const size_t need = 8 + padded;
  for (int attempt = 0; attempt < 4; ++attempt) {
    TakenBuffer full;
    {
      std::lock_guard<std::mutex> lock(g_out_mu);
      if (append_locked(record, bytes, padded)) return;
      full = take_out_locked();
    }
    if (full.buffer) {
      full.hand_back();
      continue;  // another thread may have installed a buffer meanwhile
    }
    auto request = g_request.load();
    auto complete = g_complete.load();  // the pair that gives this buffer takes it back
    if (!request) return;
    uint8_t* b = nullptr;
    size_t size = 0, max_records = 0;
    request(&b, &size, &max_records);
    if (!b || size < sizeof kMagic + need) return;  // no room given: lost, as CUPTI drops it
    memcpy(b, kMagic, sizeof kMagic);
    TakenBuffer spare;
    {
      std::lock_guard<std::mutex> lock(g_out_mu);
      if (!g_out && g_request.load() == request) {
        g_out = b, g_out_size = size, g_out_used = sizeof kMagic, g_out_max_records = max_records, g_out_records = 0;
        append_locked(record, bytes, padded);
        return;
      }
      spare = {b, size, sizeof kMagic, complete};  // another thread's buffer, or other callbacks now
    }
    spare.hand_back();
  }
  // Every round lost to other threads (each of which delivered records): this one is lost, as
  // CUPTI drops a record that finds no buffer.
}

void pass_foreign_buffer(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  if (auto complete = g_complete.load()) complete(context, stream, buffer, size, valid);
}

uint64_t CUPTIAPI timestamp() { return monotonic_ns(); }

bool to_monotonic(uint64_t* t) {
  const uint64_t floor = g_mono_floor.load(std::memory_order_relaxed);
  const uint64_t ceiling = monotonic_ns() + 10000000000ull;
  if (*t >= floor && *t <= ceiling) return true;
  Reading a, b;
  {
    std::lock_guard<std::mutex> lock(g_clock_mu);
    a = g_prev, b = g_last;
  }
  if (!b.mono || !a.mono || b.other == a.other || b.mono == a.mono) return false;
  const double rate = double(int64_t(b.other - a.other)) / double(int64_t(b.mono - a.mono));  // other per ns
  const double mono = double(b.mono) + double(int64_t(*t - b.other)) / rate;
  if (mono < double(floor) || mono > double(ceiling)) return false;
  *t = uint64_t(mono);
  return true;
}

void calibrate() {
  if (!g_mono_floor.load(std::memory_order_relaxed)) {
    const uint64_t now = monotonic_ns();
    g_mono_floor.store(now > 3600000000000ull ? now - 3600000000000ull : 1, std::memory_order_relaxed);
  }
  CUpti_TimestampCallbackFunc clock = g_clock.load(std::memory_order_acquire);
  if (!clock) return;
  Reading r = read_clocks(clock);
  std::lock_guard<std::mutex> lock(g_clock_mu);
  if (g_last.mono && r.mono - g_last.mono < 20000000) return;  // too close for a rate
  g_prev = g_last.mono ? g_last : r;
  g_last = r;
}

// Called with the first reading at registration, so that records made before the next pull map.
static void start_clock(CUpti_TimestampCallbackFunc clock) {
  Reading r = read_clocks(clock);
  // A second reading a little later gives the first rate.
  const uint64_t until = monotonic_ns() + 2000000;
  while (monotonic_ns() < until) {
  }
  Reading s = read_clocks(clock);
  std::lock_guard<std::mutex> lock(g_clock_mu);
  g_prev = r, g_last = s;
}

}  // namespace cupti_sharing

bool cupti_sharing_reachable() {
  // Compared by library, not by address: inside this library a reference to its own exported
  // function resolves through the global scope too, to libcupti's when that one comes first.
  Dl_info first{}, self{};
  void* found = dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");
  return found && dladdr(found, &first) && dladdr(reinterpret_cast<void*>(&cupti_sharing::timestamp), &self) &&
         first.dli_fbase == self.dli_fbase;
}

}  // namespace gapwatch

// ---- the definitions another client's calls reach under LD_PRELOAD ----------------------------------
using namespace gapwatch;
using namespace gapwatch::cupti_sharing;
#define SHARED_EXPORT extern "C" __attribute__((visibility("default")))

// The other client's subscription (callers have checked serving()). Calls between the functions
// below go to these, never through the exported names, which inside this library could resolve
// to libcupti's.
static CUptiResult subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata,
                             CUpti_SubscriberParams* params) {
  if (!handle || !callback) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(g_subscribe_mu);
  if (g_subscriber.load()) {  // a third client: as CUPTI answers a second one
    if (params && params->oldSubscriberName && params->oldSubscriberSize >= CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN)
      snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", "gapwatch and another client");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  for (auto& domain : g_subscriber_storage.enabled)
    for (auto& cb : domain) cb.store(0);
  g_subscriber_storage.callback = callback;
  g_subscriber_storage.userdata = userdata;
  g_subscriber.store(&g_subscriber_storage, std::memory_order_release);
  g_foreign_subscribed.store(true, std::memory_order_release);
  *handle = foreign_handle();
  if (Recorder* recorder = Recorder::active())
    log_line(recorder->settings(), LogLevel::kInfo, "sharing CUPTI's callbacks with %s",
             client_name(reinterpret_cast<const void*>(callback)).c_str());
  return CUPTI_SUCCESS;
}

static CUptiResult unsubscribe() {
  std::lock_guard<std::mutex> lock(g_subscribe_mu);
  if (!g_subscriber.load()) return CUPTI_ERROR_INVALID_PARAMETER;
  g_subscriber.store(nullptr, std::memory_order_release);
  g_foreign_subscribed.store(false, std::memory_order_release);
  // What only the other client wanted goes off again. The struct stays: a callback may be running.
  for (int d = 0; d < kDomains; ++d)
    for (int c = 0; c < kCbids; ++c)
      if (g_subscriber_storage.enabled[d][c].exchange(0)) apply_callback(CUpti_CallbackDomain(d), CUpti_CallbackId(c));
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback,
                                            void* userdata, CUpti_SubscriberParams* params) {
  REAL(cuptiSubscribe_v2);
  if (!serving()) return real_fn(handle, callback, userdata, params);
  return subscribe(handle, callback, userdata, params);
}

SHARED_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata) {
  REAL(cuptiSubscribe);
  if (!serving()) return real_fn(handle, callback, userdata);
  return subscribe(handle, callback, userdata, nullptr);
}

SHARED_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle) {
  REAL(cuptiUnsubscribe);
  if (!is_foreign(handle)) return real_fn(handle);
  return unsubscribe();
}

SHARED_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle handle,
                                              CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  REAL(cuptiEnableCallback);
  if (!is_foreign(handle)) return real_fn(enable, handle, domain, cbid);
  if (!g_subscriber.load() || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= kDomains || cbid >= kCbids)
    return CUPTI_ERROR_INVALID_PARAMETER;
  g_subscriber_storage.enabled[domain][cbid].store(enable ? 1 : 0);
  apply_callback(domain, cbid);
  return CUPTI_SUCCESS;
}

static CUptiResult enable_domain(uint32_t enable, CUpti_CallbackDomain domain) {
  static std::atomic<decltype(&cuptiEnableDomain)> cache{nullptr};
  auto real_fn = real(cache, "cuptiEnableDomain");
  if (!real_fn) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!g_subscriber.load() || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= kDomains)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (int c = 0; c < kCbids; ++c) g_subscriber_storage.enabled[domain][c].store(enable ? 1 : 0);
  if (enable) {
    real_fn(1, cupti_subscriber(), domain);
  } else {
    for (int c = 0; c < kCbids; ++c) apply_callback(domain, CUpti_CallbackId(c));
  }
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain) {
  REAL(cuptiEnableDomain);
  if (!is_foreign(handle)) return real_fn(enable, handle, domain);
  return enable_domain(enable, domain);
}

SHARED_EXPORT CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle handle) {
  REAL(cuptiEnableAllDomains);
  if (!is_foreign(handle)) return real_fn(enable, handle);
  for (int d = CUPTI_CB_DOMAIN_DRIVER_API; d < kDomains; ++d) {
    CUptiResult r = enable_domain(enable, CUpti_CallbackDomain(d));
    if (r != CUPTI_SUCCESS) return r;
  }
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiGetCallbackState(uint32_t* enable, CUpti_SubscriberHandle handle,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  REAL(cuptiGetCallbackState);
  if (!is_foreign(handle)) return real_fn(enable, handle, domain, cbid);
  if (!enable || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= kDomains || cbid >= kCbids)
    return CUPTI_ERROR_INVALID_PARAMETER;
  *enable = g_subscriber_storage.enabled[domain][cbid].load();
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                         CUpti_BuffersCallbackCompleteFunc completed) {
  REAL(cuptiActivityRegisterCallbacks);
  if (!serving()) return real_fn(requested, completed);
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  TakenBuffer previous;
  {
    // A buffer filled for the previous callbacks goes back to them (after the lock is released).
    std::lock_guard<std::mutex> lock(g_out_mu);
    previous = take_out_locked();
    g_request.store(requested);
    g_complete.store(completed);
  }
  previous.hand_back();
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  REAL(cuptiActivityEnable);
  if (!serving()) return real_fn(kind);
  if (int(kind) >= kKinds) return CUPTI_ERROR_INVALID_KIND;
  // Records of work that finished before go to gapwatch alone, as CUPTI would not have made them
  // for a kind the other client had not enabled yet.
  static std::atomic<decltype(&cuptiActivityFlushAll)> flush_cache{nullptr};
  if (g_kind_count.load() == 0)
    if (auto flush = real(flush_cache, "cuptiActivityFlushAll")) flush(0);
  CUptiResult r = cupti_own_kind(kind) ? CUPTI_SUCCESS : real_fn(kind);
  if (r != CUPTI_SUCCESS) return r;
  kind = stored_kind(kind);
  if (!g_kinds[kind].exchange(1) && g_kind_count.fetch_add(1) == 0)
    span_changed(true, reinterpret_cast<const void*>(g_complete.load()));
  return CUPTI_SUCCESS;
}

static CUptiResult activity_disable(CUpti_ActivityKind kind) {
  static std::atomic<decltype(&cuptiActivityDisable)> cache{nullptr};
  auto real_fn = real(cache, "cuptiActivityDisable");
  if (!real_fn) return CUPTI_ERROR_NOT_INITIALIZED;
  if (int(kind) >= kKinds) return CUPTI_ERROR_INVALID_KIND;
  if (!cupti_own_kind(kind)) {
    CUptiResult r = real_fn(kind);
    if (r != CUPTI_SUCCESS) return r;
  }
  kind = stored_kind(kind);
  // The other client's clock stays CUPTI's after its last kind goes off: a client may register its
  // clock once and trace many sessions (and CUPTI may refuse a new clock while kinds are on).
  // gapwatch keeps mapping its records back, and keeps calibrating.
  if (g_kinds[kind].exchange(0) && g_kind_count.fetch_sub(1) == 1) span_changed(false, nullptr);
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  REAL(cuptiActivityDisable);
  if (!serving()) return real_fn(kind);
  return activity_disable(kind);
}

SHARED_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  REAL(cuptiActivityFlushAll);
  if (!serving()) return real_fn(flag);
  // CUPTI hands gapwatch's buffers back (their records are copied on the way), then the partly
  // filled buffer of the other client goes back to it, as its flush asks.
  CUptiResult r = real_fn(flag);
  deliver_out();
  return r;
}

SHARED_EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms) {
  REAL(cuptiActivityFlushPeriod);
  if (!serving()) return real_fn(ms);
  return CUPTI_SUCCESS;  // gapwatch flushes on its own schedule, which is at least as often
}

SHARED_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  REAL(cuptiActivityGetNextRecord);
  if (!is_shared_buffer(buffer, valid)) return real_fn(buffer, valid, record);
  if (!record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t header = sizeof kMagic;  // where the next record's length is
  if (*record) {
    const size_t at = size_t(reinterpret_cast<uint8_t*>(*record) - buffer);
    if (at < sizeof kMagic + 8 || at > valid) return CUPTI_ERROR_INVALID_PARAMETER;
    uint64_t length = 0;
    memcpy(&length, buffer + at - 8, 8);
    if (length > valid - at) return CUPTI_ERROR_INVALID_PARAMETER;
    header = at + size_t(length);
  }
  if (header + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  uint64_t length = 0;
  memcpy(&length, buffer + header, 8);
  if (length == 0 || length > valid - header - 8) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + header + 8);
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback) {
  REAL(cuptiActivityRegisterTimestampCallback);
  if (!serving() || !cupti_owns_timestamps()) return real_fn(callback);
  // CUPTI itself gets the client's clock, registered anew so that it maps device times into that
  // clock from now on (CUPTI takes the last registration; cupti-field-notes.md 2). gapwatch maps
  // its own records back (to_monotonic) from readings of both clocks.
  CUptiResult r = real_fn(callback ? callback : timestamp);
  if (r != CUPTI_SUCCESS) return r;
  if (callback) start_clock(callback);
  g_clock.store(callback, std::memory_order_release);
  return CUPTI_SUCCESS;
}

SHARED_EXPORT CUptiResult cuptiFinalize(void) {
  REAL(cuptiFinalize);
  if (!serving()) return real_fn();
  // The other client is done with CUPTI; gapwatch is not: it lets go of what was the other's only.
  for (int k = 0; k < kKinds; ++k)
    if (g_kinds[k].load()) activity_disable(CUpti_ActivityKind(k));
  TakenBuffer last;
  {
    std::lock_guard<std::mutex> lock(g_out_mu);
    last = take_out_locked();
    g_request.store(nullptr);
    g_complete.store(nullptr);
  }
  last.hand_back();
  if (g_subscriber.load()) unsubscribe();
  return CUPTI_SUCCESS;
}
