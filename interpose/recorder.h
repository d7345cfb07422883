// recorder.h: the one small core every probe writes into.
//
// Threads and ownership:
//  - user threads (CUPTI callbacks, symbol hooks) call reserve_api_call() or reserve_nccl_call(),
//    fill the record (raw_event.h) and publish() it: the event goes into the thread's own ring,
//    host times in host_clock.h ticks. A thread's first event claims a free ring (one the flusher
//    mapped in advance, or one a thread that exited left behind, drained) or, when none is free,
//    maps one itself: once per thread, like reading its thread id. After that: no allocation, no
//    lock, no system call. The flusher translates each record into the schema's fields
//    (frame_encoder.h).
//  - CUPTI's buffer thread calls add_activities() and interns kernel names (both take a mutex).
//  - the flusher thread drains the rings and the activity queue every kFlushPeriod, encodes one
//    batch frame and writes it; it frees the rings of exited threads once drained and keeps a few
//    free rings ready.
//  - the exit path (on_exit, or a context being destroyed) calls finish() once.
//  - the _exit hook calls finish_from_exit_call(), possibly from a signal handler on a thread
//    interrupted inside any of the above: it takes no lock and only asks the flusher, which does
//    the last round itself, for a bounded time.
// Lock order: activity_mu_ and the interner's mutex are never held together.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "event_ring.h"
#include "frame_encoder.h"
#include "host_clock.h"
#include "output_sink.h"
#include "python_sampler.h"
#include "settings.h"
#include "string_interner.h"

namespace gapwatch {

class Recorder {
 public:
  // The recorder while recording, else nullptr: one acquire load on the hot path.
  static Recorder* active() { return active_.load(std::memory_order_acquire); }
  // The recorder while the flusher ends it for an _exit (finish_from_exit_call), else nullptr:
  // where CUPTI's buffers still go then, the hooks having stopped.
  static Recorder* ending() { return ending_.load(std::memory_order_acquire); }

  // Starts recording (idempotent): opens the output, writes Hello, starts the flusher. `probes`
  // are gapwatch.v1.Probe values; `cupti_note` says why CUPTI is not in use, when it is not.
  static Recorder* start(const Settings& settings, std::vector<uint32_t> probes, uint32_t cupti_version,
                         const std::string& cupti_note);

  // Hot path: a zeroed record in this thread's ring (nullptr: dropped, counted), to fill and then
  // publish(); a reserved record that is not published is not recorded. Safe from any thread but
  // the library's own.
  ApiCallRecord* reserve_api_call() { return reserve_record(&RawEvent::api, EventType::kApiCall); }
  NcclCallRecord* reserve_nccl_call() { return reserve_record(&RawEvent::nccl, EventType::kNcclCall); }
  void publish() { t_ring_->publish(); }
  // Hot path, at the entry and exit of the outermost recorded call of a thread: what the flusher's
  // heartbeat reports as the call in progress (event_ring.h). A few stores; the entry claims the
  // thread's ring if it has none yet.
  void enter_call(uint64_t start_ticks, const char* name, uint64_t correlation) {
    EventRing* ring = t_ring_;
    if (__builtin_expect(ring == nullptr, 0)) ring = claim_ring();
    if (ring) ring->enter_call(start_ticks, name, correlation);
  }
  static void exit_call() {
    if (EventRing* ring = t_ring_) ring->exit_call();
  }

  // A user thread, inside a call that waits for the device or copies (never on the launch path):
  // the thread's Python stack (python_stack.h), handed over to the flusher. Returns the number to
  // put in ApiCallRecord::python_stack, 0 when there is none; a miss is counted for the drops.
  // Takes stacks_mu_, never with another lock, for one bounded copy; allocates nothing.
  uint32_t post_python_stack();
  // A stack's text into the flusher's mailbox: its number, 0 when the mailbox is full. The
  // sampler's way in (it runs on the flusher); takes stacks_mu_.
  uint32_t post_stack_text(const char* text, size_t length);
  // Hot path, for every call record before publish(): which calls carry the thread's Python stack.
  // Those that wait for the device (by their documented semantics), async copies that can block
  // the host (pageable memory, host to host, a host side not known pinned), and a launch, or an
  // async copy that only enqueues (kFlagEnqueuesOnly at classification: device to device, pinned
  // host memory), that ends a stretch of host time of at least GAPWATCH_PY_GAP_MS since the
  // thread's previous recorded call (where the host was when it came back to the device: a data
  // loader's batch often comes back as a pinned copy). A launch pays two thread-local accesses
  // and a compare, as before; the walk itself only happens on those calls.
  void attach_python_stack(ApiCallRecord* e) {
    const uint64_t previous_exit = t_last_exit_ticks_;
    t_last_exit_ticks_ = e->end_ticks;
    t_ring_->note_exit(e->end_ticks);  // reserved from it: not null
    const bool launch = e->kind == wire::ApiKind::kLaunch || e->kind == wire::ApiKind::kGraphLaunch;
    if (launch || (e->flags & kFlagEnqueuesOnly)) {
      if (launch)
        if (PythonSampler* sampler = sampler_.get()) sampler->note_launch(t_ring_);
      const uint64_t gap = long_host_gap_ticks_.load(std::memory_order_relaxed);
      if (__builtin_expect(!gap || !previous_exit || e->start_ticks - previous_exit < gap, 1)) return;
    } else if (!(e->flags & kFlagBlocked) && e->kind != wire::ApiKind::kMemcpyAsync) {
      return;
    }
    e->python_stack = post_python_stack();
  }

  // CUPTI's buffer thread: decoded device activities.
  void add_activities(const DeviceActivityFields* events, size_t count);
  uint32_t intern(uint32_t kind, std::string_view text) { return strings_.intern(kind, text); }
  void set_cupti_dropped(uint64_t total) { cupti_dropped_.store(total, std::memory_order_relaxed); }
  // Records CUPTI handed back unfinished (a forced flush), not recorded.
  void count_cupti_incomplete(uint64_t n) { cupti_incomplete_.fetch_add(n, std::memory_order_relaxed); }
  // What the flusher calls every kDevicePullPeriod (100 ms), before it drains, to make CUPTI hand
  // back the records of finished work (its own flushing returns full buffers only); and `last`,
  // what the exit paths call once for everything CUPTI still holds (a forced flush). Set once,
  // before the first round can need them.
  void set_device_record_pull(void (*pull)(), void (*last)()) {
    device_record_last_pull_.store(last, std::memory_order_relaxed);
    device_record_pull_.store(pull, std::memory_order_release);
  }
  // How gapwatch stands with CUPTI's activity API while another client uses it (wire::
  // ActivityApiState): written with the next batch. Any thread; not a hot path.
  void note_activity_api_span(uint32_t state, uint64_t start_ns, uint64_t end_ns, const std::string& client);
  // NCCL communicators: id and rank, filled at communicator init (not a hot path).
  void note_nccl_comm(uint64_t comm, int32_t rank, int32_t nranks);

  // Flushes what is left, writes Goodbye, closes, says where the recording is. Once.
  // `exit_status`: what the process passed to exit(), or nullptr when not known.
  void finish(uint32_t exit_reason, const int* exit_status = nullptr);
  // The _exit hook's finish, async-signal-safe: _exit is what signal and crash handlers leave by,
  // on a thread that may have been interrupted holding any lock (the recorder's, the CUDA stack's,
  // malloc's). On this thread only atomics, clock_gettime and nanosleep: it marks the recording
  // finished (once; a second _exit, or one during finish(), returns at once), stops the hooks and
  // hands the last round to the flusher (exit_round()), then waits for it at most kExitCallBoundMs.
  // Whatever the flusher has not written by then is lost; the process exits regardless.
  void finish_from_exit_call(int exit_status);
  static constexpr int kExitCallBoundMs = 1000;
  // In a forked child: forget everything without touching threads or locks (they are the parent's),
  // and close the child's copy of the sink's descriptor (close_sink_in_child).
  void abandon_in_child() {
    active_.store(nullptr, std::memory_order_release);
    close_sink_in_child();
  }
  // In a forked child (the atfork handler; async-signal-safe): closes the descriptor the child
  // inherited of the parent's collector connection or .gwt file. fork keeps it although it is
  // O_CLOEXEC: a long-lived child would hold the parent's connection open after the parent said
  // Goodbye (the collector saw no end of stream). Only the child's descriptor: the parent's stream
  // is untouched. Also for a start in progress
  // at the fork (no recorder yet). A descriptor number the parent has since reused for something
  // else (not the same open file) is left alone.
  static void close_sink_in_child();

  uint32_t pid() const { return pid_; }
  const Settings& settings() const { return settings_; }

  // Marks the calling thread as the library's own: its events are never recorded.
  static void mark_internal_thread();
  static bool on_internal_thread() { return t_internal_; }
  // At thread exit: the calling thread no longer writes into the ring it had.
  static void forget_thread_ring();

 private:
  struct Comm {
    uint64_t handle;
    int32_t rank, nranks;
  };

  explicit Recorder(const Settings& settings);
  // Makes `view` the slot's active record, zeroed but for its type.
  template <class Record>
  Record* reserve_record(Record RawEvent::*view, EventType type) {
    EventRing* ring = t_ring_;
    if (__builtin_expect(ring == nullptr, 0)) ring = claim_ring();
    if (!ring) return nullptr;
    RawEvent* slot = ring->reserve();
    if (!slot) return nullptr;
    Record& record = slot->*view;
    record = Record{};
    record.type = type;
    return &record;
  }
  EventRing* claim_ring();
  // The flusher's one translation per record type, raw capture to the schema's fields; the thread
  // and the host times of every type the same way.
  template <class Record, class Fields>
  void translate_times(const Record& r, uint32_t tid, Fields& f) {
    f.thread_id = tid;
    f.start_ns = ticks_.to_ns(r.start_ticks);
    f.end_ns = ticks_.to_ns(r.end_ticks);
  }
  ApiCallFields translate(const ApiCallRecord& r, uint32_t tid);
  NcclCallFields translate(const NcclCallRecord& r, uint32_t tid, std::vector<Comm>& comms);
  void flusher_main();
  // The flusher's last round for finish_from_exit_call(): what the rings hold, then what CUPTI has
  // finished, the Goodbye and the close, within the caller's deadline. It may block on a lock the
  // interrupted thread holds: the caller's bound, not this, ends the process then.
  void exit_round();
  // After the last flush: the Goodbye, the close (waiting at most `drain_ms` for the collector),
  // the line on stderr. The thread that owns the sink: the flusher, or finish() after the join.
  void end_recording(uint32_t exit_reason, const int* exit_status, int drain_ms);
  // Whether some thread's ring is full enough that the flusher should drain now, not at its period.
  bool a_ring_filling() const;
  void flush_once(bool final);
  // Launches without a device record yet, from the drained records (flusher only).
  void track_launch(const ApiCallRecord& r, uint64_t start_ns, uint32_t tid);
  void track_activities(const std::vector<DeviceActivityFields>& activities);
  // Writes a Heartbeat when it is due: a call in progress for longer than a flush period that the
  // last heartbeat did not show, or a second since the last one.
  void maybe_heartbeat();
  // Says once on stderr that the collector stalled or went away and where the stream went.
  void note_fallback();
  bool fallback_noted_ = false;
  // The collector's name for this process's recording (gapwatch/recording_name.h): after a
  // fallback, the exit line names it beside the file that holds the rest.
  std::string collector_recording_;
  void top_up_spares();
  // A zeroed, pre-faulted ring from mmap (not malloc: a user thread may call it), registered in
  // rings_ in `state`; nullptr when the registry is full or the memory cannot be had.
  EventRing* map_ring(uint32_t state);
  EventRing* take_free_ring();

  static std::atomic<Recorder*> active_;
  static std::atomic<Recorder*> ending_;
  static thread_local EventRing* t_ring_ __attribute__((tls_model("initial-exec")));
  static thread_local bool t_internal_ __attribute__((tls_model("initial-exec")));
  static thread_local uint64_t t_last_exit_ticks_ __attribute__((tls_model("initial-exec")));
  // GAPWATCH_PY_GAP_MS in host ticks, set by the flusher once its clock line has a slope; 0: not
  // yet, or off.
  std::atomic<uint64_t> long_host_gap_ticks_{0};

  // Rings are reused after their thread exits, so this bounds the threads alive at once.
  static constexpr size_t kMaxRings = 16384;
  static constexpr size_t kSpares = 8;  // free rings the flusher keeps ready

  Settings settings_;
  uint32_t pid_;
  size_t ring_capacity_;
  std::atomic<EventRing*> rings_[kMaxRings] = {};
  std::atomic<size_t> ring_count_{0};
  std::atomic<uint64_t> no_ring_drops_{0};  // events of threads that could get no ring at all

  std::mutex activity_mu_;
  std::vector<DeviceActivityFields> activities_;

  std::mutex span_mu_;
  std::vector<ActivityApiSpanFields> spans_;  // not yet written

  // Blindness: device records that should have come and did not (flusher only; recorder.cpp).
  struct AwaitedLaunch {
    uint64_t correlation;
    uint64_t launch_ns;
    uint64_t proven_at_pull;  // the pull after which its record must be here
    bool by_device_sync;      // proven by a wait for the whole device, not for one stream
  };
  void note_proof_of_completion(const ApiCallRecord& r, const ApiCallFields& f, uint32_t tid);
  void watch_for_blindness(const std::vector<DeviceActivityFields>& activities);
  std::vector<AwaitedLaunch> awaited_;
  // Per thread: its first launch since its last wait for the device (correlation 0: none).
  std::unordered_map<uint32_t, AwaitedLaunch> last_launch_by_thread_;
  std::unordered_map<uint32_t, bool> capturing_;  // tid -> inside stream capture
  uint64_t pulls_done_ = 0;       // device pulls made (flusher thread)
  uint64_t last_record_pull_ = 0; // the pull after which a device record last arrived
  uint64_t blind_since_ns_ = 0;  // 0: not blind
  // CUPTI's last pull is done (the exit paths): a record still missing after it never came. Set
  // by the thread that does the final flush, before it.
  bool last_pull_taken_ = false;
  uint64_t cupti_dropped_at_check_ = 0;

  std::mutex comm_mu_;
  std::vector<Comm> comms_;

  StringInterner strings_;
  std::atomic<uint64_t> cupti_dropped_{0};
  std::atomic<uint64_t> cupti_incomplete_{0};
  uint64_t cupti_incomplete_sent_ = 0;
  std::atomic<void (*)()> device_record_pull_{nullptr};
  std::atomic<void (*)()> device_record_last_pull_{nullptr};
  std::chrono::steady_clock::time_point next_pull_{};  // flusher only

  // Flusher state.
  std::thread flusher_;
  std::mutex flusher_mu_;
  std::condition_variable flusher_wake_;
  bool stopping_ = false;
  OutputSink sink_;
  FrameEncoder encoder_;
  std::string frame_;
  BatchContent batch_;
  uint64_t sequence_ = 0;
  uint64_t api_calls_sent_ = 0, activities_sent_ = 0, nccl_calls_sent_ = 0;
  uint64_t undelivered_ = 0;  // events the sink could not take
  std::vector<uint64_t> ring_drops_sent_;
  std::vector<DropCount> retired_drops_;  // final drop totals of threads whose rings were freed
  uint64_t cupti_dropped_sent_ = 0;
  std::atomic<bool> finished_{false};
  // finish_from_exit_call() to the flusher: the request, the status and the deadline (monotonic
  // ns), written before the request is; and the flusher's answer that the Goodbye is out.
  std::atomic<bool> exit_requested_{false};
  std::atomic<bool> exit_round_done_{false};
  std::atomic<int> exit_call_status_{0};
  std::atomic<uint64_t> exit_deadline_ns_{0};
  TickConverter ticks_;  // host timestamps arrive as ticks (host_clock.h)
  // Launches whose kernel has no device record yet, direct-mapped by correlation id: a few stores
  // per launch and per kernel record, no allocation, fixed memory. A slot is overwritten by the
  // launch kLaunchSlots ids later, so an unfinished launch is remembered for that many calls.
  // `finished`: the kernel's record came before its launch's record was drained (a kernel that
  // ended while its launch call was still returning), so that launch is not pending.
  struct LaunchSlot {
    uint64_t correlation;  // 0 = empty
    uint64_t launch_ns;
    const char* kernel_name;
    uint32_t tid;
    bool finished;
  };
  static constexpr size_t kLaunchSlots = 4096;  // a power of two
  LaunchSlot launch_slots_[kLaunchSlots] = {};
  HeartbeatInfo heartbeat_;
  uint64_t last_heartbeat_ns_ = 0;
  uint64_t last_heartbeat_calls_ = 0;  // a digest of the calls the last heartbeat showed
  std::unordered_map<const void*, uint32_t> call_sites_;  // return address -> interned text

  // Python stacks on their way from user threads to the flusher: entries {u32 number, u32
  // length, text}, appended under stacks_mu_ into memory reserved at start (a full mailbox is a
  // miss, never an allocation), taken whole by the flusher.
  static constexpr size_t kStackMailBytes = 1 << 20;
  std::mutex stacks_mu_;
  std::vector<char> stack_mail_;
  uint32_t next_stack_number_ = 0;  // under stacks_mu_
  // Flusher only: the mail taken, and each number's interned stack until its record claims it.
  // A record can come long after its stack was posted (a polling loop's, published when the loop
  // ends: seconds later), so an entry is kept until claimed; only past kMaxHeldStacks are entries
  // two flushes old let go (records a full ring dropped never claim theirs), and a record that
  // then finds none counts a miss (id 6) rather than losing its stack silently.
  struct HeldStack {
    uint32_t id = 0;
    uint64_t generation = 0;  // the flush that took it from the mail
  };
  std::vector<char> stack_mail_taken_;
  std::unordered_map<uint32_t, HeldStack> stack_ids_;
  uint64_t stack_generation_ = 0;
  static constexpr size_t kMaxHeldStacks = 4096;
  uint32_t python_stack_id(uint32_t number);
  void take_stack_mail();
  // Misses by DropCounter id of DROP_SOURCE_PYTHON_STACK (events.proto), and what was sent.
  static constexpr size_t kStackMissKinds = 10;
  std::atomic<uint64_t> stack_misses_[kStackMissKinds] = {};
  uint64_t stack_misses_sent_[kStackMissKinds] = {};

  // The Python sampler (python_sampler.h), when GAPWATCH_PY_SAMPLING is on; made before the
  // recorder is published and never replaced, so hooks read it without a lock.
  std::unique_ptr<PythonSampler> sampler_;
  std::vector<PythonSampleRecord> samples_taken_;  // flusher only
  uint64_t sample_misses_sent_[PythonSampler::kMissKinds] = {};
};

}  // namespace gapwatch
