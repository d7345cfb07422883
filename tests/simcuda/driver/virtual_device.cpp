// The virtual device: streams, events and the op log, with device times computed, not slept.
//
// Every op's device interval follows from what it waits for: start = max(handed over + launch
// latency, end of the previous op on its stream, legacy default stream ordering, the event a
// stream-wait marker waits for); end = start + duration. Streams therefore run concurrently and in
// order, on CLOCK_MONOTONIC, without a thread per stream. Only NCCL kernels need more: their end
// depends on when the other ranks' kernels start, which another process decides later. Such ops
// (and everything after them on their stream) stay unresolved until every rank has published its
// start; a device thread keeps resolving them while any are pending, as a real GPU keeps running
// while the host does something else.
//
// Host functions (cudaLaunchHostFunc, cudaStreamAddCallback, graph host nodes) are the other
// exception: a real thread must run them, and their end is the moment the function returns. Such
// an op stays unresolved, like an NCCL kernel waiting for peers, until the device's callback
// thread (one per device, started with its first host function, as the real runtime has one per
// context) has run it: that thread takes, in the order they become ready, the host functions whose
// dependencies have all finished (on CLOCK_MONOTONIC), runs each to completion, one at a time, with
// no lock held (so a callback may call CUDA or start threads), and records start = when it called
// the function and end = when it returned. Everything after it on its stream then resolves from that end.
//
// Copy engines: host-to-device and device-to-host copies each go through a limited set of copy
// engines (kCopyEnginesPerDirection); a copy starts no earlier than the earliest moment one of its
// direction's engines is free, so copies in one direction on different streams queue behind each
// other. Engines are handed out as copies resolve, in op order (the order they are queued, unless
// an earlier copy still waits for something unresolved). Kernels, device-to-device copies and
// memsets have no such limit.
//
// Lock: DeviceState::mu guards everything below. It is never held while sleeping, while a CUPTI
// callback runs, or while calling into another library, except CuptiSink::activity_enabled (an
// atomic read in libcupti, which never calls back into the driver).
#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <cuda_runtime_api.h>

#include "sim_driver.h"
#include "sim_driver_state.h"

namespace simcuda {

struct Stream {
  int device = 0;
  uint64_t id = 0;
  unsigned flags = 0;  // cudaStreamNonBlocking: does not order with the legacy default stream
  bool legacy = false;
  int64_t tail = -1;   // last op queued on it
};

struct Event {
  int device = 0;  // flags: cudaEventBlockingSync, cudaEventDisableTiming, cudaEventInterprocess
  unsigned flags = 0;
  uint32_t id = 0;
  int64_t op = -1;  // the marker op of the last record
};

namespace {

struct OpState {
  std::vector<int64_t> deps;
  uint64_t not_before = 0;
  int64_t duration = 0;
  std::unique_ptr<Rendezvous> rendezvous;
  bool published = false;
  bool resolved = false;
  bool traced = false;
  bool delivered = false;
  uint32_t graph_id = 0;
  // SIM_OP_HOST_FUNC: run by the callback thread; resolved once it has returned.
  void (*host_fn)(void*) = nullptr;
  void* host_user_data = nullptr;
  bool host_done = false;
};

// Copy engines per direction (H2D, D2H). An H200 reports asyncEngineCount 3, and the driver by
// default gives each direction (H2D, D2H, peer-to-peer) its own engine, so concurrent copies in one
// direction serialise (NVIDIA developer forum, "Three concurrent cudaMemcpyAsync(HtoD) calls still
// serialized on H100/H20 even when asyncEngineCount == 3", thread 365145; docs/simcuda.md).
constexpr int kCopyEnginesPerDirection = 1;

struct DeviceState {
  std::mutex mu;
  std::condition_variable work_pending;  // wakes the device thread
  std::vector<SimDeviceOp> ops;
  std::vector<OpState> states;
  uint64_t first_unresolved = 0;
  std::vector<Stream*> streams;  // every live stream, legacy ones included
  std::vector<Stream*> legacy;   // per device
  std::vector<SyncRecord> syncs;
  uint64_t next_stream_id = 13;  // CUPTI numbers created streams after the default one (7)
  uint32_t next_event_id = 1;
  bool device_thread_started = false;
  // Per device: when each copy engine of a direction (0: H2D, 1: D2H) is next free.
  std::vector<std::array<std::array<uint64_t, kCopyEnginesPerDirection>, 2>> engine_free;
  // Per device: host-function ops not yet run, and whether its callback thread runs.
  std::vector<std::vector<uint64_t>> host_pending;
  std::vector<bool> callback_thread_started;
  std::condition_variable host_work;  // wakes the callback threads
};

// Never destroyed: the device thread and late CUPTI flushes may run while static destructors do.
DeviceState& state() {
  static DeviceState* s = new DeviceState;
  return *s;
}

CUpti_ActivityKind activity_kind_of(uint32_t kind) {
  switch (kind) {
    case SIM_OP_KERNEL: return CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    case SIM_OP_MEMCPY: return CUPTI_ACTIVITY_KIND_MEMCPY;
    case SIM_OP_MEMSET: return CUPTI_ACTIVITY_KIND_MEMSET;
    default: return CUPTI_ACTIVITY_KIND_INVALID;
  }
}

Stream* legacy_locked(DeviceState& s, int device) {
  if (s.legacy.empty()) {
    s.engine_free.assign(size_t(device_count()), {});
    s.host_pending.assign(size_t(device_count()), {});
    s.callback_thread_started.assign(size_t(device_count()), false);
    for (int d = 0; d < device_count(); ++d) {
      auto* st = new Stream;
      st->device = d;
      st->id = 7;
      st->legacy = true;
      s.legacy.push_back(st);
      s.streams.push_back(st);
    }
  }
  return s.legacy.at(size_t(std::clamp(device, 0, int(s.legacy.size()) - 1)));
}

// The copy-engine direction of an op: 0 (H2D), 1 (D2H), or -1 when it uses no engine.
int engine_direction(const SimDeviceOp& op) {
  if (op.kind != SIM_OP_MEMCPY) return -1;
  if (op.copy_kind == SIM_COPY_H2D) return 0;
  if (op.copy_kind == SIM_COPY_D2H) return 1;
  return -1;
}

bool try_resolve(DeviceState& s, uint64_t i) {
  OpState& st = s.states[i];
  if (st.resolved) return true;
  if (st.host_fn) {
    // Its times were set by the callback thread when the function returned.
    if (!st.host_done) return false;
    st.resolved = true;
    return true;
  }
  uint64_t start = st.not_before;
  for (int64_t d : st.deps) {
    if (!s.states[size_t(d)].resolved) return false;
    start = std::max(start, s.ops[size_t(d)].end_ns);
  }
  int dir = engine_direction(s.ops[i]);
  if (dir >= 0) {
    auto& engines = s.engine_free.at(s.ops[i].device)[size_t(dir)];
    auto engine = std::min_element(engines.begin(), engines.end());
    start = std::max(start, *engine);
    *engine = start + uint64_t(st.duration);
  }
  uint64_t end = start + uint64_t(st.duration);
  if (st.rendezvous) {
    if (!st.published) {
      st.rendezvous->publish(start);
      st.published = true;
    }
    uint64_t latest = 0;
    if (!st.rendezvous->collect(&latest)) return false;
    // The kernel runs (spinning) from its own start until the last rank arrives, then does the
    // transfer: a fast rank shows a long NCCL kernel, exactly as on real GPUs.
    end = std::max(start, latest) + uint64_t(st.duration);
  }
  s.ops[i].start_ns = start;
  s.ops[i].end_ns = end;
  st.resolved = true;
  return true;
}

void resolve_locked(DeviceState& s) {
  for (uint64_t i = s.first_unresolved; i < s.ops.size(); ++i) try_resolve(s, i);
  while (s.first_unresolved < s.ops.size() && s.states[s.first_unresolved].resolved) ++s.first_unresolved;
}

// The rendezvous that holds resolution up (the first unresolved op waiting for peers), and its
// epoch now; nullptr when nothing waits for another process.
Rendezvous* blocking_rendezvous(DeviceState& s, uint32_t* epoch) {
  for (uint64_t i = s.first_unresolved; i < s.ops.size(); ++i)
    if (!s.states[i].resolved && s.states[i].rendezvous) {
      *epoch = s.states[i].rendezvous->epoch();
      return s.states[i].rendezvous.get();
    }
  return nullptr;
}

// Waits until a peer publishes (or a short while passes). Called without the lock; the Rendezvous
// outlives the wait (ops are never removed from the log).
void wait_for_peers(Rendezvous* rv, uint32_t seen) {
  constexpr uint64_t kMaxWaitNs = 200000;
  if (rv) rv->wait_for_epoch_change(seen, kMaxWaitNs);
  else std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void device_thread_main() {
  DeviceState& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    resolve_locked(s);
    if (s.first_unresolved < s.ops.size()) {
      uint32_t epoch = 0;
      Rendezvous* rv = blocking_rendezvous(s, &epoch);
      lock.unlock();
      wait_for_peers(rv, epoch);
      lock.lock();
    } else {
      s.work_pending.wait(lock);
    }
  }
}

// When a pending host-function op may start: the latest end of what it waits for; false while
// one of those is unresolved.
bool host_ready_at(DeviceState& s, uint64_t i, uint64_t* ready) {
  const OpState& st = s.states[i];
  uint64_t t = st.not_before;
  for (int64_t d : st.deps) {
    if (!s.states[size_t(d)].resolved) return false;
    t = std::max(t, s.ops[size_t(d)].end_ns);
  }
  *ready = t;
  return true;
}

void callback_thread_main(int device) {
  DeviceState& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    resolve_locked(s);
    auto& pending = s.host_pending[size_t(device)];
    if (pending.empty()) {
      s.host_work.wait(lock);
      continue;
    }
    size_t best = pending.size();
    uint64_t best_ready = UINT64_MAX;
    for (size_t k = 0; k < pending.size(); ++k) {
      uint64_t ready;
      if (host_ready_at(s, pending[k], &ready) && ready < best_ready) {
        best = k;
        best_ready = ready;
      }
    }
    if (best == pending.size()) {
      // Everything pending waits for something unresolved (another host function, peers).
      uint32_t epoch = 0;
      Rendezvous* rv = blocking_rendezvous(s, &epoch);
      lock.unlock();
      wait_for_peers(rv, epoch);
      lock.lock();
      continue;
    }
    uint64_t now = now_ns();
    if (best_ready > now + 200000) {
      // Sleep towards it; new work (which may be ready sooner) wakes the thread.
      s.host_work.wait_for(lock, std::chrono::nanoseconds(best_ready - now - 200000));
      continue;
    }
    uint64_t index = pending[best];
    pending.erase(pending.begin() + std::ptrdiff_t(best));
    void (*fn)(void*) = s.states[index].host_fn;
    void* user_data = s.states[index].host_user_data;
    lock.unlock();
    wait_until(best_ready);
    uint64_t start = now_ns();
    fn(user_data);
    uint64_t end = now_ns();
    lock.lock();
    s.ops[index].start_ns = start;
    s.ops[index].end_ns = end;
    s.states[index].host_done = true;
  }
}

// Blocks until every op in `ops` is resolved; returns the latest end (0 when `ops` is empty).
uint64_t resolved_end(const std::vector<int64_t>& ops) {
  DeviceState& s = state();
  for (;;) {
    Rendezvous* rv = nullptr;
    uint32_t epoch = 0;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      resolve_locked(s);
      uint64_t latest = 0;
      bool all = true;
      for (int64_t i : ops) {
        if (i < 0) continue;
        if (!s.states[size_t(i)].resolved) {
          all = false;
          break;
        }
        latest = std::max(latest, s.ops[size_t(i)].end_ns);
      }
      if (all) return latest;
      rv = blocking_rendezvous(s, &epoch);
    }
    wait_for_peers(rv, epoch);
  }
}

uint64_t wait_for(const std::vector<int64_t>& ops) {
  uint64_t end = resolved_end(ops);
  wait_until(end);
  return end;
}

}  // namespace

int64_t enqueue(const OpRequest& r) {
  DeviceState& s = state();
  const SimDeviceConfig& cfg = config();
  const CuptiSink* sink = cupti_sink();
  std::lock_guard<std::mutex> lock(s.mu);
  Stream* stream = r.stream ? r.stream : legacy_locked(s, current_device());
  uint64_t now = now_ns();
  SimDeviceOp op{};
  op.index = s.ops.size();
  op.kind = r.kind;
  op.device = uint32_t(stream->device);
  op.stream = stream->id;
  op.correlation_id = r.correlation_id;
  op.tid = current_tid();
  op.queued_ns = now;
  op.bytes = r.bytes;
  op.copy_kind = r.copy_kind;
  op.src_kind = r.src_kind;
  op.dst_kind = r.dst_kind;
  op.is_async = r.is_async ? 1 : 0;
  op.name = r.name ? r.name : "";

  OpState st;
  st.not_before = now + uint64_t(cfg.launch_latency_ns);
  st.duration = std::max<int64_t>(0, r.duration_ns);
  st.graph_id = r.graph_id;
  st.host_fn = r.kind == SIM_OP_HOST_FUNC ? r.host_fn : nullptr;
  st.host_user_data = r.host_user_data;
  if (stream->tail >= 0) st.deps.push_back(stream->tail);
  for (size_t k = 0; k < r.num_after_ops; ++k)
    if (r.after_ops[k] >= 0) st.deps.push_back(r.after_ops[k]);
  if (stream->legacy) {
    // The legacy default stream waits for all work queued on blocking streams before it.
    for (Stream* other : s.streams)
      if (other != stream && other->device == stream->device && !(other->flags & cudaStreamNonBlocking) &&
          other->tail >= 0)
        st.deps.push_back(other->tail);
  } else if (!(stream->flags & cudaStreamNonBlocking)) {
    // ...and blocking streams wait for the legacy default stream's work queued before.
    Stream* leg = legacy_locked(s, stream->device);
    if (leg->tail >= 0) st.deps.push_back(leg->tail);
  }
  if (r.wait_event && r.wait_event->op >= 0) st.deps.push_back(r.wait_event->op);
  if (r.rendezvous) st.rendezvous.reset(r.rendezvous);
  CUpti_ActivityKind ak = activity_kind_of(r.kind);
  st.traced = ak != CUPTI_ACTIVITY_KIND_INVALID && sink && sink->activity_enabled && sink->activity_enabled(ak);

  bool host_fn = st.host_fn != nullptr;
  s.ops.push_back(op);
  s.states.push_back(std::move(st));
  if (!r.detached) stream->tail = int64_t(op.index);
  if (host_fn) {
    size_t d = size_t(stream->device);
    s.host_pending[d].push_back(op.index);
    if (!s.callback_thread_started[d]) {
      s.callback_thread_started[d] = true;
      std::thread(callback_thread_main, int(d)).detach();
    }
  }
  resolve_locked(s);
  if (host_fn || !s.host_pending[size_t(stream->device)].empty()) s.host_work.notify_all();
  if (r.rendezvous) {
    if (!s.device_thread_started) {
      s.device_thread_started = true;
      std::thread(device_thread_main).detach();
    }
    s.work_pending.notify_one();
  }
  return int64_t(op.index);
}

uint64_t wait_op(int64_t op_index) { return wait_for({op_index}); }

uint64_t resolve_op(int64_t op_index) { return resolved_end({op_index}); }


uint64_t wait_stream(Stream* stream) {
  DeviceState& s = state();
  int64_t tail;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!stream) stream = legacy_locked(s, current_device());
    tail = stream->tail;
  }
  return wait_for({tail});
}

uint64_t wait_device(int device) {
  DeviceState& s = state();
  std::vector<int64_t> tails;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    legacy_locked(s, device);
    for (Stream* st : s.streams)
      if (st->device == device && st->tail >= 0) tails.push_back(st->tail);
  }
  return wait_for(tails);
}

bool op_done(int64_t op_index) {
  if (op_index < 0) return true;
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  resolve_locked(s);
  return s.states[size_t(op_index)].resolved && s.ops[size_t(op_index)].end_ns <= now_ns();
}

bool stream_done(Stream* stream) {
  int64_t tail;
  {
    DeviceState& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!stream) stream = legacy_locked(s, current_device());
    tail = stream->tail;
  }
  return op_done(tail);
}

Stream* create_stream(int device, unsigned flags) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  legacy_locked(s, device);
  auto* st = new Stream;
  st->device = device;
  st->flags = flags;
  st->id = s.next_stream_id++;
  s.streams.push_back(st);
  return st;
}

void destroy_stream(Stream* stream) {
  if (!stream || stream->legacy) return;
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  // Work already queued still runs (as cudaStreamDestroy documents); the ops keep their deps by
  // index, so the Stream object itself can go. It is kept alive in case a handle is reused in error.
  s.streams.erase(std::remove(s.streams.begin(), s.streams.end(), stream), s.streams.end());
}

uint64_t stream_id(Stream* stream) {
  if (stream) return stream->id;
  return 7;
}

int stream_device(Stream* stream) { return stream ? stream->device : current_device(); }

Stream* legacy_stream(int device) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return legacy_locked(s, device);
}

Stream* per_thread_stream(int device) {
  // One blocking stream per thread and device, created on first use, like cudaStreamPerThread.
  static thread_local std::vector<Stream*> mine;
  if (mine.size() <= size_t(device)) mine.resize(size_t(device) + 1, nullptr);
  if (!mine[size_t(device)]) mine[size_t(device)] = create_stream(device, 0);
  return mine[size_t(device)];
}

Stream* resolve_stream(void* handle, int device) {
  if (handle == nullptr || handle == reinterpret_cast<void*>(cudaStreamLegacy)) return legacy_stream(device);
  if (handle == reinterpret_cast<void*>(cudaStreamPerThread)) return per_thread_stream(device);
  return static_cast<Stream*>(handle);
}

Event* create_event(int device, unsigned flags) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto* e = new Event;
  e->device = device;
  e->flags = flags;
  e->id = s.next_event_id++;
  return e;
}

void destroy_event(Event* event) { delete event; }

void record_event(Event* event, int64_t marker_op_index) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  event->op = marker_op_index;
}

int64_t event_op(const Event* event) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return event->op;
}

uint32_t event_id(const Event* event) { return event->id; }

unsigned event_flags(const Event* event) { return event ? event->flags : 0; }

unsigned stream_flags(Stream* stream) { return stream ? stream->flags : 0; }

bool op_interval(int64_t op_index, uint64_t* start_ns, uint64_t* end_ns) {
  if (op_index < 0) return false;
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  resolve_locked(s);
  if (size_t(op_index) >= s.ops.size() || !s.states[size_t(op_index)].resolved) return false;
  *start_ns = s.ops[size_t(op_index)].start_ns;
  *end_ns = s.ops[size_t(op_index)].end_ns;
  return true;
}

void add_sync_record(const SyncRecord& record) {
  // Traced only while CUPTI has the kind enabled, like every other record.
  const CuptiSink* sink = cupti_sink();
  if (!sink || !sink->activity_enabled || !sink->activity_enabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) return;
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.syncs.push_back(record);
}

void collect_completed(uint64_t now, uint64_t* op_cursor, uint64_t* sync_cursor, Completed* out, bool in_flight_too) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  resolve_locked(s);
  bool prefix = true;  // the cursor only moves past ops that need nothing more
  for (uint64_t i = *op_cursor; i < s.ops.size(); ++i) {
    OpState& st = s.states[i];
    bool settled = !st.traced || st.delivered;
    const bool finished = st.resolved && s.ops[i].end_ns <= now;
    if (!settled && (finished || in_flight_too)) {
      out->ops.push_back(s.ops[i]);
      out->op_graph_ids.push_back(st.graph_id);
      out->op_finished.push_back(finished);
      st.delivered = true;
      settled = true;
    }
    if (prefix && settled) *op_cursor = i + 1;
    else prefix = false;
  }
  for (uint64_t i = *sync_cursor; i < s.syncs.size(); ++i) out->syncs.push_back(s.syncs[i]);
  *sync_cursor = s.syncs.size();
}

void forget_traced() {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& st : s.states) st.traced = false;
}

const char* intern(const std::string& text) {
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>;
  std::lock_guard<std::mutex> lock(mu);
  return names->insert(text).first->c_str();
}

}  // namespace simcuda

extern "C" SIMCUDA_EXPORT size_t simcuda_device_ops(const SimDeviceOp** first) {
  auto& s = simcuda::state();
  std::lock_guard<std::mutex> lock(s.mu);
  simcuda::resolve_locked(s);
  *first = s.ops.data();
  return s.ops.size();
}
