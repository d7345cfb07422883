#include "recorder.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <unordered_map>

#include <gapwatch/recording_name.h>

#include "call_site.h"
#include "process_info.h"
#include "python_stack.h"

namespace gapwatch {

std::atomic<Recorder*> Recorder::active_{nullptr};
std::atomic<Recorder*> Recorder::ending_{nullptr};
thread_local EventRing* Recorder::t_ring_ = nullptr;
thread_local bool Recorder::t_internal_ = false;
thread_local uint64_t Recorder::t_last_exit_ticks_ = 0;

namespace {

constexpr auto kFlushPeriod = std::chrono::milliseconds(50);
// Between two flushes the flusher looks at the rings' fill levels, and drains at once when one is
// an eighth full. A thread launching as fast as a runtime lets it (a few hundred thousand calls a
// second) fills the default ring (8192 slots) in well under one flush period. Checks come every
// 5 ms, and every 1 ms after a drain that a filling ring brought forward (a storm is on): the
// slack, seven eighths of a ring, then covers the flusher being kept off a core, or blocked in a
// write, for some 30 ms at 200,000 calls a second per thread. The producers do nothing for it: the
// flusher reads the head and tail they keep anyway. An idle process pays a wake-up every 5 ms.
constexpr auto kFillCheckPeriod = std::chrono::milliseconds(5);
constexpr auto kStormFillCheckPeriod = std::chrono::milliseconds(1);
constexpr size_t kDrainAtFillDivisor = 8;
constexpr uint32_t kDropSourceThreadRing = wire::DropSource::kThreadRing;
constexpr uint32_t kDropSourceCupti = wire::DropSource::kCupti;
constexpr uint32_t kDropSourceTransport = wire::DropSource::kTransport;
constexpr uint32_t kDropSourceCuptiIncomplete = wire::DropSource::kCuptiIncomplete;
constexpr uint32_t kDropSourcePythonStack = wire::DropSource::kPythonStack;
constexpr uint32_t kDropSourcePythonSample = wire::DropSource::kPythonSample;
// CUPTI is asked for finished records every 100 ms, by the clock rather than by flush rounds (a
// launch storm brings rounds forward to every millisecond): a record reaches the output at most
// about that long after its work ended (docs/performance.md measures it), at ten
// cuptiActivityFlushAll calls a second, as often as others call it (cupti-field-notes.md 1).
constexpr auto kDevicePullPeriod = std::chrono::milliseconds(100);
constexpr const char* kBlindClient = "another client of CUPTI's activity API";

pthread_key_t g_ring_key;

// The sink's descriptor and what it is (device, inode), for close_sink_in_child(). Written when
// recording starts (under the start lock) and when the stream moves to the fallback file (flusher
// thread), cleared when the sink closes; read in a forked child. The device and inode let the
// child close only what the number still names: a fork between the sink's change and the store
// here leaves the child a stale number, which then names another file or none.
std::atomic<int> g_sink_fd{-1};
std::atomic<uint64_t> g_sink_dev{0}, g_sink_ino{0};

void note_sink_descriptor(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    g_sink_fd.store(-1, std::memory_order_release);
    return;
  }
  g_sink_dev.store(uint64_t(st.st_dev), std::memory_order_relaxed);
  g_sink_ino.store(uint64_t(st.st_ino), std::memory_order_relaxed);
  g_sink_fd.store(fd, std::memory_order_release);
}

// Runs when a thread that claimed a ring exits: the flusher drains the ring, then frees it. A CUDA
// call from a later destructor of the thread claims a ring anew rather than write into this one.
void on_thread_exit(void* ring) {
  Recorder::forget_thread_ring();
  static_cast<EventRing*>(ring)->state.store(EventRing::kGone, std::memory_order_release);
}

// "run.gwt" as "run-<pid>.gwt": this process's own name beside a name another process has.
std::string with_pid(std::string path) {
  const std::string pid = "-" + std::to_string(getpid());
  const size_t dot = path.size() >= 4 && path.compare(path.size() - 4, 4, ".gwt") == 0 ? path.size() - 4 : path.size();
  return path.insert(dot, pid);
}

// GAPWATCH_OUTPUT: a file name, where %p becomes the pid and %r the rank (so every rank of a
// torchrun job can share one setting), or a directory (ending in '/' or existing) that gets the
// default name. A forked child's fixed name (no %p) gets "-<pid>" before its ".gwt": the parent
// may write the name it was given, and the child must not truncate the parent's recording.
std::string output_path(const std::string& setting, bool forked_child) {
  if (setting.empty()) return default_output_name();
  struct stat st;
  if (setting.back() == '/' || (stat(setting.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
    return setting + (setting.back() == '/' ? "" : "/") + default_output_name();
  std::string out;
  for (size_t i = 0; i < setting.size(); ++i) {
    if (setting[i] == '%' && i + 1 < setting.size() && (setting[i + 1] == 'p' || setting[i + 1] == 'r')) {
      const char* rank = getenv("RANK");
      out += setting[i + 1] == 'p' ? std::to_string(getpid()) : std::string(rank && *rank ? rank : "0");
      ++i;
    } else {
      out += setting[i];
    }
  }
  if (forked_child && setting.find("%p") == std::string::npos) out = with_pid(out);
  return out;
}

size_t round_down_pow2(size_t n) {
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

Recorder::Recorder(const Settings& settings)
    : settings_(settings),
      pid_(uint32_t(getpid())),
      ring_capacity_(round_down_pow2(std::max<size_t>(settings.ring_bytes / sizeof(RawEvent), 64))) {
  stack_mail_.reserve(kStackMailBytes);
  stack_mail_taken_.reserve(kStackMailBytes);
}

namespace {

// DropCounter ids of DROP_SOURCE_PYTHON_STACK (events.proto) by miss; 0: not a miss.
uint32_t stack_miss_id(PythonStackMiss miss) {
  switch (miss) {
    case PythonStackMiss::kUnknownVersion: return 1;
    case PythonStackMiss::kSubinterpreter: return 2;
    case PythonStackMiss::kNoFrame: return 3;
    case PythonStackMiss::kInvalid: return 4;
    case PythonStackMiss::kUnreadable: return 7;  // an object outside every readable mapping
    case PythonStackMiss::kFreeThreaded: return 8;
    case PythonStackMiss::kLayoutMismatch: return 9;
    default: return 0;  // no interpreter, or a thread that runs no Python: nothing was missed
  }
}
constexpr uint32_t kStackMailFull = 5;
constexpr uint32_t kStackLetGo = 6;

}  // namespace

uint32_t Recorder::post_python_stack() {
  if (!settings_.python_stacks) return 0;  // GAPWATCH_PY_STACKS=0
  char text[kMaxPythonStackText];
  PythonStackMiss miss;
  const size_t length = capture_python_stack(text, sizeof text, &miss);
  if (length == 0) {
    if (uint32_t id = stack_miss_id(miss)) stack_misses_[id].fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint32_t number = post_stack_text(text, length);
  if (number == 0) stack_misses_[kStackMailFull].fetch_add(1, std::memory_order_relaxed);
  return number;
}

uint32_t Recorder::post_stack_text(const char* text, size_t length) {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  const uint32_t header[2] = {next_stack_number_ + 1 ? next_stack_number_ + 1 : 1, uint32_t(length)};
  if (stack_mail_.size() + sizeof header + length > stack_mail_.capacity()) return 0;
  next_stack_number_ = header[0];
  const char* h = reinterpret_cast<const char*>(header);
  stack_mail_.insert(stack_mail_.end(), h, h + sizeof header);
  stack_mail_.insert(stack_mail_.end(), text, text + length);
  return header[0];
}

void Recorder::take_stack_mail() {
  stack_mail_taken_.clear();
  {
    std::lock_guard<std::mutex> lock(stacks_mu_);
    stack_mail_.swap(stack_mail_taken_);  // both keep their reserved capacity
  }
  const char* p = stack_mail_taken_.data();
  const char* const end = p + stack_mail_taken_.size();
  while (end - p >= 8) {
    uint32_t header[2];
    memcpy(header, p, sizeof header);
    p += sizeof header;
    if (uint64_t(end - p) < header[1]) break;  // cannot happen: entries are written whole
    stack_ids_[header[0]] = {strings_.intern(wire::StringKind::kPythonStack, std::string_view(p, header[1])),
                             stack_generation_};
    p += header[1];
  }
}

uint32_t Recorder::python_stack_id(uint32_t number) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it = stack_ids_.find(number);
    if (it != stack_ids_.end()) {
      const uint32_t id = it->second.id;
      stack_ids_.erase(it);
      return id;
    }
    // Posted before its record was published, so in the mail now if not before.
    take_stack_mail();
  }
  return 0;  // let go before its record came (the caller counts it)
}

Recorder* Recorder::start(const Settings& settings, std::vector<uint32_t> probes, uint32_t cupti_version,
                          const std::string& cupti_note) {
  static std::mutex start_mu;
  std::lock_guard<std::mutex> lock(start_mu);
  if (Recorder* r = active()) return r;
  auto* r = new Recorder(settings);  // lives until the process exits: threads may still hold it
  const std::string path = output_path(settings.output_path, settings.forked_child);
  std::string socket = settings.socket_path;
  // No socket named and no file either: a collector of this user's at the default place, if one
  // listens (GAPWATCH_OUTPUT asks for a file, and gets one).
  if (socket.empty() && settings.output_path.empty()) socket = default_collector_socket();
  bool open = !socket.empty() && socket != "off" && r->sink_.connect_socket(socket, path);
  if (!open) {
    // Never into an existing file (another live process's, with one GAPWATCH_OUTPUT name and no
    // %p, or an earlier run's): the sink makes a name of our own beside it.
    if (!r->sink_.open_file(path)) {
      log_line(settings, LogLevel::kWarn, "cannot write the recording %s: %s; not recording", path.c_str(),
               strerror(errno));
      return nullptr;
    }
    if (r->sink_.path() != path)
      log_line(settings, LogLevel::kWarn, "%s exists (gapwatch never overwrites a file): recording to %s", path.c_str(),
               r->sink_.path().c_str());
  }
  note_sink_descriptor(r->sink_.fd());
  HelloInfo hello;
  fill_process_info(&hello);
  if (r->sink_.is_socket())
    r->collector_recording_ = collectorRecordingBaseName(hello.host, hello.pid, hello.has_rank, hello.rank) + ".gwt";
  hello.probes = std::move(probes);
  hello.cupti_version = cupti_version;
  hello.cupti_unavailable = cupti_note;
  r->encoder_.hello(hello, r->frame_);
  if (!r->sink_.write(r->frame_)) {
    log_line(settings, LogLevel::kWarn, "cannot write the recording %s; not recording", r->sink_.path().c_str());
    return nullptr;
  }
  r->ticks_.calibrate();
  pthread_key_create(&g_ring_key, on_thread_exit);
  r->top_up_spares();
  if (settings.python_sampling && settings.python_stacks) {
    r->sampler_ = std::make_unique<PythonSampler>(*r, uint64_t(settings.python_sample_us) * 1000,
                                                   uint64_t(settings.python_sample_after_us) * 1000);
  }
  r->flusher_ = std::thread(&Recorder::flusher_main, r);
  active_.store(r, std::memory_order_release);
  return r;
}

void Recorder::mark_internal_thread() { t_internal_ = true; }

EventRing* Recorder::map_ring(uint32_t state) {
  // Slots after the ring's own fields, 64-byte aligned. MAP_POPULATE faults every page in now: an
  // untouched page would fault inside a user's CUPTI callback once every 4 KiB of events (a 2-7 us
  // stall on the hot path); anonymous pages are zero, which is what a fresh slot is.
  const size_t header = (sizeof(EventRing) + 63) & ~size_t(63);
  const size_t bytes = header + ring_capacity_ * sizeof(RawEvent);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  size_t index = ring_count_.fetch_add(1, std::memory_order_acq_rel);
  if (index >= kMaxRings) {
    ring_count_.fetch_sub(1, std::memory_order_acq_rel);
    munmap(memory, bytes);
    return nullptr;
  }
  auto* ring = new (memory) EventRing(reinterpret_cast<RawEvent*>(static_cast<char*>(memory) + header), ring_capacity_);
  ring->state.store(state, std::memory_order_relaxed);
  rings_[index].store(ring, std::memory_order_release);  // publishes the ring and its state
  return ring;
}

void Recorder::top_up_spares() {
  size_t free_rings = 0;
  size_t n = std::min(ring_count_.load(std::memory_order_acquire), kMaxRings);
  for (size_t i = 0; i < n && free_rings < kSpares; ++i)
    if (EventRing* ring = rings_[i].load(std::memory_order_acquire))
      free_rings += ring->state.load(std::memory_order_relaxed) == EventRing::kFree;
  for (; free_rings < kSpares; ++free_rings)
    if (!map_ring(EventRing::kFree)) break;
}

EventRing* Recorder::take_free_ring() {
  size_t n = std::min(ring_count_.load(std::memory_order_acquire), kMaxRings);
  for (size_t i = 0; i < n; ++i) {
    EventRing* ring = rings_[i].load(std::memory_order_acquire);
    uint32_t expected = EventRing::kFree;
    if (ring && ring->state.load(std::memory_order_relaxed) == expected &&
        ring->state.compare_exchange_strong(expected, EventRing::kOwned, std::memory_order_acq_rel))
      return ring;
  }
  return nullptr;
}

void Recorder::forget_thread_ring() { t_ring_ = nullptr; }

void Recorder::close_sink_in_child() {
  const int fd = g_sink_fd.exchange(-1, std::memory_order_acq_rel);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && uint64_t(st.st_dev) == g_sink_dev.load(std::memory_order_relaxed) &&
      uint64_t(st.st_ino) == g_sink_ino.load(std::memory_order_relaxed))
    close(fd);
}

EventRing* Recorder::claim_ring() {
  if (t_internal_) return nullptr;
  // Once per thread: a free ring or a ring of its own (a pool of threads may start all at once,
  // faster than the flusher could keep rings ready), its id (a system call), its exit notification.
  EventRing* ring = take_free_ring();
  if (!ring) ring = map_ring(EventRing::kOwned);
  if (!ring) {
    // Out of memory, or kMaxRings threads alive at once: this event is lost (counted).
    no_ring_drops_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  ring->owner_tid.store(uint32_t(syscall(SYS_gettid)), std::memory_order_relaxed);
  pthread_setspecific(g_ring_key, ring);
  t_ring_ = ring;
  return ring;
}

void Recorder::add_activities(const DeviceActivityFields* events, size_t count) {
  std::lock_guard<std::mutex> lock(activity_mu_);
  activities_.insert(activities_.end(), events, events + count);
}

void Recorder::note_activity_api_span(uint32_t state, uint64_t start_ns, uint64_t end_ns, const std::string& client) {
  std::lock_guard<std::mutex> lock(span_mu_);
  spans_.push_back({state, start_ns, end_ns, client});
}

void Recorder::note_nccl_comm(uint64_t comm, int32_t rank, int32_t nranks) {
  std::lock_guard<std::mutex> lock(comm_mu_);
  for (auto& c : comms_)
    if (c.handle == comm) {
      if (nranks > 0) c.rank = rank, c.nranks = nranks;
      return;
    }
  comms_.push_back({comm, rank, nranks});
}

void Recorder::flusher_main() {
  mark_internal_thread();
  // The user's signal handlers must never run on this thread.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "gapwatch-flush");
  std::unique_lock<std::mutex> lock(flusher_mu_);
  bool storm = false;
  const auto sample_period = std::chrono::microseconds(settings_.python_sample_us);
  auto next_sample = std::chrono::steady_clock::now() + sample_period;
  // An _exit's request (finish_from_exit_call) is an atomic, not the lock: its caller may have been
  // interrupted anywhere, and the waits below are at most kFillCheckPeriod, so it is seen within one.
  auto exit_called = [this] { return exit_requested_.load(std::memory_order_acquire); };
  while (!stopping_ && !exit_called()) {
    // Wait out the flush period, or less when a ring fills fast (kFillCheckPeriod above), and
    // sample the launching thread's Python stack when a sample is due (python_sampler.h).
    const auto due = std::chrono::steady_clock::now() + kFlushPeriod;
    const auto check = storm ? kStormFillCheckPeriod : kFillCheckPeriod;
    storm = false;
    while (!stopping_ && !exit_called() && std::chrono::steady_clock::now() < due && !(storm = a_ring_filling())) {
      auto wake = std::min(due, std::chrono::steady_clock::now() + check);
      // A sample due within the check period sets the wake-up (the fill check comes with it): one
      // wake-up a period, not one for each.
      if (sampler_ && next_sample <= wake + check) wake = std::min(due, next_sample);
      flusher_wake_.wait_until(lock, wake);
      if (sampler_ && !stopping_) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= next_sample) {
          lock.unlock();
          sampler_->poll();
          lock.lock();
          // Late by more than a period (a flush round, a busy machine): on from now, no burst.
          next_sample = now - next_sample > sample_period ? now + sample_period : next_sample + sample_period;
        }
      }
    }
    if (stopping_ || exit_called()) break;
    lock.unlock();
    if (auto pull = device_record_pull_.load(std::memory_order_acquire))
      if (std::chrono::steady_clock::now() >= next_pull_) {
        pull();
        ++pulls_done_;
        next_pull_ = std::chrono::steady_clock::now() + kDevicePullPeriod;
      }
    flush_once(false);
    top_up_spares();
    lock.lock();
  }
  if (!stopping_ && exit_called()) {
    lock.unlock();
    exit_round();
  }
}

// What finish_from_exit_call() touches must be plain loads and stores, never a lock in disguise.
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free &&
              std::atomic<uint64_t>::is_always_lock_free && std::atomic<Recorder*>::is_always_lock_free);

void Recorder::finish_from_exit_call(int exit_status) {
  // A second _exit (another thread, a signal during this one) or an _exit during finish(): the
  // recording is someone else's to end, and this thread must not wait for it.
  if (finished_.exchange(true, std::memory_order_acq_rel)) return;
  ending_.store(this, std::memory_order_release);
  active_.store(nullptr, std::memory_order_release);  // the hooks stop recording from here on
  const uint64_t deadline = monotonic_ns() + uint64_t(kExitCallBoundMs) * 1000000;
  exit_call_status_.store(exit_status, std::memory_order_relaxed);
  exit_deadline_ns_.store(deadline, std::memory_order_relaxed);
  exit_requested_.store(true, std::memory_order_release);
  while (!exit_round_done_.load(std::memory_order_acquire) && monotonic_ns() < deadline) {
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
}

void Recorder::exit_round() {
  const uint64_t deadline = exit_deadline_ns_.load(std::memory_order_relaxed);
  const int status = exit_call_status_.load(std::memory_order_relaxed);
  // The rings first: they need no lock but the recorder's own, which only a thread inside a hook
  // can hold. CUPTI next, from this thread, never from the exiting one (which may have been
  // interrupted inside CUDA or CUPTI, holding their locks): the forced flush exit() makes there.
  flush_once(true);
  if (device_record_pull_.load(std::memory_order_acquire))
    if (auto last = device_record_last_pull_.load(std::memory_order_relaxed)) {
      last();
      ++pulls_done_;
    }
  last_pull_taken_ = true;
  if (sampler_) sampler_->log_summary();
  flush_once(true);
  ending_.store(nullptr, std::memory_order_release);
  // The collector gets what is left of the bound, less the time a fallback file needs.
  constexpr int64_t kFallbackMarginNs = 50000000;
  const int64_t left_ns = int64_t(deadline) - int64_t(monotonic_ns()) - kFallbackMarginNs;
  end_recording(wire::ExitReason::kNormal, &status, int(std::max<int64_t>(0, left_ns / 1000000)));
  exit_round_done_.store(true, std::memory_order_release);
}

bool Recorder::a_ring_filling() const {
  const size_t n = std::min(ring_count_.load(std::memory_order_acquire), kMaxRings);
  for (size_t i = 0; i < n; ++i)
    if (EventRing* ring = rings_[i].load(std::memory_order_acquire))
      if (ring->fill() >= ring_capacity_ / kDrainAtFillDivisor) return true;
  return false;
}

ApiCallFields Recorder::translate(const ApiCallRecord& r, uint32_t tid) {
  static thread_local std::unordered_map<const char*, uint32_t> api_names;  // flusher/exit thread only
  ApiCallFields f;
  f.kind = r.kind;
  f.copy_kind = r.copy_kind;
  f.src_memory = r.src_memory;
  f.dst_memory = r.dst_memory;
  f.blocked = (r.flags & kFlagBlocked) != 0;
  translate_times(r, tid, f);
  f.correlation_id = r.correlation;
  f.bytes = r.bytes;
  f.return_code = r.return_code;
  auto [it, inserted] = api_names.try_emplace(r.api_name, 0);
  if (inserted) it->second = r.api_name ? strings_.intern(wire::StringKind::kApiName, r.api_name) : 0;
  f.api_name_id = it->second;
  // Call sites only where a report lists them (sync points, and async copies that may turn out
  // pageable): on every launch they would cost the bytes-per-event budget.
  if (r.call_site && (f.blocked || r.kind == wire::ApiKind::kMemcpyAsync)) {
    auto [where, fresh] = call_sites_.try_emplace(r.call_site, 0);
    if (fresh) where->second = strings_.intern(wire::StringKind::kCallSite, describe_call_site(r.call_site));
    f.call_site_id = where->second;
  }
  if (r.python_stack) {
    f.python_stack_id = python_stack_id(r.python_stack);
    if (f.python_stack_id == 0) stack_misses_[kStackLetGo].fetch_add(1, std::memory_order_relaxed);
  }
  return f;
}

NcclCallFields Recorder::translate(const NcclCallRecord& r, uint32_t tid, std::vector<Comm>& comms) {
  NcclCallFields f;
  f.op = r.op;
  f.data_type = r.data_type;
  translate_times(r, tid, f);
  f.bytes = r.bytes;
  f.count = r.count;
  f.peer = r.peer;
  f.stream = r.stream;
  f.return_code = r.return_code;
  f.group_depth = r.group_depth;
  // Communicators travel as small ids (their order of first appearance), with their rank.
  const uint64_t handle = reinterpret_cast<uint64_t>(r.comm);
  size_t k = 0;
  while (k < comms.size() && comms[k].handle != handle) ++k;
  if (k == comms.size()) {
    // Noted after this flush copied the list (a hook learned it just before publishing), or never:
    // the shared list has it, or gets it now, and the copy is refreshed so ids stay in step.
    note_nccl_comm(handle, -1, 0);
    std::lock_guard<std::mutex> lock(comm_mu_);
    comms = comms_;
    k = 0;
    while (k < comms.size() && comms[k].handle != handle) ++k;
  }
  f.rank = comms[k].rank;
  f.nranks = comms[k].nranks;
  f.comm_id = handle ? uint32_t(k + 1) : 0;
  return f;
}

void Recorder::flush_once(bool final) {
  BatchContent& b = batch_;
  ticks_.calibrate();
  // From the second calibration on the clock line has a slope worth converting with.
  if (sequence_ > 0 && settings_.python_gap_ms > 0)
    long_host_gap_ticks_.store(ticks_.ticks_in(uint64_t(settings_.python_gap_ms) * 1000000), std::memory_order_relaxed);
  if (sequence_ > 0 && sampler_) sampler_->set_threshold_ticks(std::max<uint64_t>(1, ticks_.ticks_in(sampler_->threshold_ns())));
  b.strings.clear();
  b.api_calls.clear();
  b.nccl_calls.clear();
  b.drops.clear();
  b.python_samples.clear();
  std::vector<Comm> comms;
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    comms = comms_;
  }
  size_t n = std::min(ring_count_.load(std::memory_order_acquire), kMaxRings);
  if (ring_drops_sent_.size() < n) ring_drops_sent_.resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    EventRing* ring = rings_[i].load(std::memory_order_acquire);
    if (!ring) continue;
    bool gone = ring->state.load(std::memory_order_acquire) == EventRing::kGone;
    // The producer does not write its thread id into every event: the ring knows it (read after
    // the drain's acquire of the events, so a freshly claimed ring's new owner is seen).
    uint32_t tid = 0;
    ring->drain([&](const RawEvent& e) {
      if (!tid) tid = ring->owner_tid.load(std::memory_order_relaxed);
      switch (e.header.type) {
        case EventType::kApiCall:
          b.api_calls.push_back(translate(e.api, tid));
          track_launch(e.api, b.api_calls.back().start_ns, tid);
          note_proof_of_completion(e.api, b.api_calls.back(), tid);
          break;
        case EventType::kNcclCall: b.nccl_calls.push_back(translate(e.nccl, tid, comms)); break;
      }
    });
    uint64_t dropped = ring->dropped();
    uint32_t owner = ring->owner_tid.load(std::memory_order_relaxed);
    if (dropped != ring_drops_sent_[i]) {
      b.drops.push_back({kDropSourceThreadRing, owner, dropped});
      ring_drops_sent_[i] = dropped;
    }
    if (gone && !final) {
      // Drained after its thread exited: free for the next thread, its drops kept for Goodbye.
      if (dropped) retired_drops_.push_back({kDropSourceThreadRing, owner, dropped});
      ring->forget_drops();
      ring->exit_call();  // a thread cancelled inside a call left it set
      last_launch_by_thread_.erase(owner);  // its blindness evidence goes with it
      capturing_.erase(owner);
      ring_drops_sent_[i] = 0;
      ring->owner_tid.store(0, std::memory_order_relaxed);
      ring->state.store(EventRing::kFree, std::memory_order_release);
    }
  }
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    b.activities.swap(activities_);
    activities_.clear();
  }
  track_activities(b.activities);
  if (device_record_pull_.load(std::memory_order_relaxed)) watch_for_blindness(b.activities);
  {
    std::lock_guard<std::mutex> lock(span_mu_);
    b.activity_api_spans.swap(spans_);
    spans_.clear();
  }
  if (sampler_) {
    // Taken after the rings: a sample's stack was posted before the sample was queued, so its
    // number is in the mail by now. Before the strings are taken: a stack interned here is
    // defined in this batch, with its first use.
    samples_taken_.clear();
    sampler_->take(&samples_taken_);
    for (const PythonSampleRecord& s : samples_taken_) {
      PythonSampleFields f;
      f.thread_id = s.thread_id;
      f.time_ns = ticks_.to_ns(s.ticks);
      f.python_stack_id = s.stack_number ? python_stack_id(s.stack_number) : 0;
      f.period_ns = sampler_->period_ns();
      b.python_samples.push_back(f);
    }
    for (uint32_t id = 1; id < PythonSampler::kMissKinds; ++id) {
      if (uint64_t missed = sampler_->missed(id); missed != sample_misses_sent_[id]) {
        b.drops.push_back({kDropSourcePythonSample, id, missed});
        sample_misses_sent_[id] = missed;
      }
    }
  }
  strings_.take_new(&b.strings);
  uint64_t cupti_dropped = cupti_dropped_.load(std::memory_order_relaxed);
  if (cupti_dropped != cupti_dropped_sent_) {
    b.drops.push_back({kDropSourceCupti, 0, cupti_dropped});
    cupti_dropped_sent_ = cupti_dropped;
  }
  uint64_t incomplete = cupti_incomplete_.load(std::memory_order_relaxed);
  if (incomplete != cupti_incomplete_sent_) {
    b.drops.push_back({kDropSourceCuptiIncomplete, 0, incomplete});
    cupti_incomplete_sent_ = incomplete;
  }
  if (uint64_t lost = no_ring_drops_.load(std::memory_order_relaxed)) b.drops.push_back({kDropSourceThreadRing, 0, lost});
  for (uint32_t id = 1; id < kStackMissKinds; ++id)
    if (uint64_t missed = stack_misses_[id].load(std::memory_order_relaxed); missed != stack_misses_sent_[id]) {
      b.drops.push_back({kDropSourcePythonStack, id, missed});
      stack_misses_sent_[id] = missed;
    }
  // Numbers whose records never came (a full ring dropped them) are let go, two flushes old, only
  // when more than kMaxHeldStacks are held: a polling loop's record comes when the loop ends.
  ++stack_generation_;
  if (stack_ids_.size() > kMaxHeldStacks) {
    for (auto it = stack_ids_.begin(); it != stack_ids_.end();) {
      it = it->second.generation + 2 <= stack_generation_ ? stack_ids_.erase(it) : std::next(it);
    }
  }
  if (undelivered_) b.drops.push_back({kDropSourceTransport, 0, undelivered_});
  size_t events = b.api_calls.size() + b.activities.size() + b.nccl_calls.size() + b.python_samples.size();
  if (!final) maybe_heartbeat();
  if (events == 0 && b.strings.empty() && b.drops.empty() && b.activity_api_spans.empty()) return;
  b.sequence = sequence_;
  frame_.clear();
  encoder_.batch(b, frame_);
  const bool delivered = sink_.write(frame_);
  note_fallback();
  if (delivered) {
    ++sequence_;
    api_calls_sent_ += b.api_calls.size();
    activities_sent_ += b.activities.size();
    nccl_calls_sent_ += b.nccl_calls.size();
  } else {
    undelivered_ += events;
  }
}

void Recorder::track_launch(const ApiCallRecord& r, uint64_t start_ns, uint32_t tid) {
  if ((r.kind != wire::ApiKind::kLaunch && r.kind != wire::ApiKind::kGraphLaunch) || !r.correlation ||
      r.return_code != 0)
    return;
  LaunchSlot& slot = launch_slots_[r.correlation & (kLaunchSlots - 1)];
  if (slot.correlation == r.correlation && slot.finished) slot = LaunchSlot{};
  else slot = LaunchSlot{r.correlation, start_ns, r.symbol_name, tid, false};
}

void Recorder::track_activities(const std::vector<DeviceActivityFields>& activities) {
  for (const DeviceActivityFields& a : activities) {
    if (a.kind != wire::ActivityKind::kKernel || !a.correlation_id) continue;
    LaunchSlot& slot = launch_slots_[a.correlation_id & (kLaunchSlots - 1)];
    // Every kernel of a graph launch shares its id: the first one frees the slot, the others mark
    // it finished, which no later launch of that id can mistake.
    if (slot.correlation == a.correlation_id && !slot.finished) slot = LaunchSlot{};
    else slot = LaunchSlot{a.correlation_id, 0, nullptr, 0, true};
  }
}

// A launch is proven finished when its thread then returns from a call that waits for the device
// (a sync, a synchronous copy). From the pull after that, CUPTI owes gapwatch its record.
void Recorder::note_proof_of_completion(const ApiCallRecord& r, const ApiCallFields& f, uint32_t tid) {
  if (r.return_code != 0) return;
  if (r.kind == wire::ApiKind::kCaptureBegin) capturing_[tid] = true;
  if (r.kind == wire::ApiKind::kCaptureEnd) capturing_[tid] = false;
  if (r.kind == wire::ApiKind::kLaunch && r.correlation && !capturing_[tid]) {
    auto& last = last_launch_by_thread_[tid];
    if (!last.correlation) last = {r.correlation, f.start_ns, 0, false};
    return;
  }
  if (!(r.flags & kFlagBlocked)) return;
  auto it = last_launch_by_thread_.find(tid);
  if (it == last_launch_by_thread_.end() || !it->second.correlation) return;
  constexpr size_t kMaxAwaited = 64;
  if (awaited_.size() < kMaxAwaited)
    awaited_.push_back({it->second.correlation, it->second.launch_ns, pulls_done_ + 1,
                        r.kind == wire::ApiKind::kDeviceSync});
  it->second = {};
}

// Device records stop arriving, although the work is proven finished, when another client of
// CUPTI's process-wide activity API has replaced gapwatch's buffer callbacks (Kineto when
// torch.profiler starts, without LD_PRELOAD putting gapwatch in front of it: cupti_sharing.h).
// Then gapwatch is blind until records come again; the span goes into the recording and one line
// to stderr. Not blind: a record CUPTI counted as dropped, or any device record in the last two
// pulls; and at least one device-wide wait or three waits in a row (below).
void Recorder::watch_for_blindness(const std::vector<DeviceActivityFields>& activities) {
  uint64_t first_record_ns = UINT64_MAX;
  for (const DeviceActivityFields& a : activities)
    if (a.kind != wire::ActivityKind::kSync) first_record_ns = std::min(first_record_ns, a.start_ns);
  if (first_record_ns != UINT64_MAX) {
    last_record_pull_ = pulls_done_;
    if (blind_since_ns_) {
      note_activity_api_span(wire::ActivityApiState::kBlind, blind_since_ns_, std::max(first_record_ns, blind_since_ns_),
                             kBlindClient);
      log_line(settings_, LogLevel::kWarn, "device records arrive again; the recording lacks them for %.2f s",
               double(std::max(first_record_ns, blind_since_ns_) - blind_since_ns_) / 1e9);
      blind_since_ns_ = 0;
    }
  }
  auto arrived = [&](const AwaitedLaunch& a) {
    const LaunchSlot& slot = launch_slots_[a.correlation & (kLaunchSlots - 1)];
    return slot.correlation != a.correlation || slot.finished;
  };
  awaited_.erase(std::remove_if(awaited_.begin(), awaited_.end(), arrived), awaited_.end());
  const uint64_t dropped = cupti_dropped_.load(std::memory_order_relaxed);
  const bool drops_explain = dropped != cupti_dropped_at_check_;
  cupti_dropped_at_check_ = dropped;
  if (blind_since_ns_ || awaited_.empty()) return;
  const AwaitedLaunch& oldest = awaited_.front();
  // The forced flush at exit is a last pull: what is still missing after it never came.
  const bool last_pull = last_pull_taken_ && first_record_ns == UINT64_MAX;
  if (!last_pull && (pulls_done_ < oldest.proven_at_pull + 1 || pulls_done_ < last_record_pull_ + 2)) return;
  // A wait for one stream proves its thread's launch finished only if the launch was on that
  // stream, which the recorder does not know: one such proof could be a kernel still running on
  // another stream (a collective waiting for a slow rank). A device-wide wait proves it; so do
  // three launches in a row, each followed by a wait that returned, none of them with a record.
  constexpr size_t kStreamProofs = 3;
  const bool proven = awaited_.size() >= kStreamProofs ||
                      std::any_of(awaited_.begin(), awaited_.end(), [](const AwaitedLaunch& a) { return a.by_device_sync; });
  if (!proven) return;
  if (drops_explain) {
    awaited_.clear();
    return;
  }
  blind_since_ns_ = oldest.launch_ns;
  awaited_.clear();
  note_activity_api_span(wire::ActivityApiState::kBlind, blind_since_ns_, 0, kBlindClient);
  log_line(settings_, LogLevel::kWarn,
           "device records stopped arriving although the work finished: another client of CUPTI's activity "
           "API (torch.profiler?) has taken it over, and gapwatch records host calls only until it lets go. "
           "Preload libgapwatch.so (LD_PRELOAD) so that both get every record, or set GAPWATCH_DISABLE=1 to "
           "leave CUPTI to the other profiler");
}

void Recorder::note_fallback() {
  if (fallback_noted_ || sink_.fell_back_because() == FallbackReason::kNone) return;
  fallback_noted_ = true;
  note_sink_descriptor(sink_.fd());  // the fallback file's now: a child forked later closes that
  const char* what =
      sink_.fell_back_because() == FallbackReason::kStalled ? "stopped taking the stream" : "went away";
  if (sink_.fd() < 0 && sink_.failed()) {
    log_line(settings_, LogLevel::kWarn,
             "the collector at %s %s, and the file for the rest of the stream, %s, could not be made (%s): the "
             "rest of the recording is lost",
             sink_.socket_path().c_str(), what, sink_.path().c_str(), strerror(sink_.error()));
    return;
  }
  log_line(settings_, LogLevel::kWarn, "the collector at %s %s; the rest of the stream goes to %s",
           sink_.socket_path().c_str(), what, sink_.path().c_str());
}

void Recorder::maybe_heartbeat() {
  constexpr uint64_t kFlushPeriodNs = std::chrono::nanoseconds(kFlushPeriod).count();
  constexpr uint64_t kQuietPeriodNs = 1000000000;  // the end time of a killed process, to a second
  constexpr size_t kMaxUnfinished = 4;
  const uint64_t now = monotonic_ns();
  HeartbeatInfo& h = heartbeat_;
  h.calls.clear();
  h.unfinished.clear();
  uint64_t digest = 0;
  size_t n = std::min(ring_count_.load(std::memory_order_acquire), kMaxRings);
  for (size_t i = 0; i < n; ++i) {
    EventRing* ring = rings_[i].load(std::memory_order_acquire);
    uint64_t start_ticks, correlation;
    const char* name;
    if (!ring || ring->state.load(std::memory_order_acquire) != EventRing::kOwned ||
        !ring->call_in_progress(&start_ticks, &name, &correlation))
      continue;
    uint64_t start_ns = ticks_.to_ns(start_ticks);
    if (start_ns + kFlushPeriodNs > now) continue;  // an ordinary call, not a wait worth showing
    uint32_t tid = ring->owner_tid.load(std::memory_order_relaxed);
    h.calls.push_back({tid, start_ns, correlation, name});
    digest = digest * 1000003 + start_ticks + tid;
  }
  const bool new_wait = !h.calls.empty() && digest != last_heartbeat_calls_;
  if (!new_wait && now < last_heartbeat_ns_ + kQuietPeriodNs) return;
  for (const LaunchSlot& launch : launch_slots_) {
    if (!launch.correlation || launch.finished || launch.launch_ns + kFlushPeriodNs > now) continue;
    h.unfinished.push_back({launch.correlation, launch.launch_ns, launch.kernel_name, launch.tid});
  }
  // The oldest first: the work everything later waits behind.
  std::sort(h.unfinished.begin(), h.unfinished.end(),
            [](const UnfinishedLaunchFields& a, const UnfinishedLaunchFields& b) { return a.launch_ns < b.launch_ns; });
  if (h.unfinished.size() > kMaxUnfinished) h.unfinished.resize(kMaxUnfinished);
  h.time_ns = now;
  frame_.clear();
  encoder_.heartbeat(h, frame_);
  sink_.write(frame_);  // a lost heartbeat costs nothing the next one does not repeat
  note_fallback();
  last_heartbeat_ns_ = now;
  last_heartbeat_calls_ = digest;
}

void Recorder::finish(uint32_t exit_reason, const int* exit_status) {
  if (finished_.exchange(true)) return;
  active_.store(nullptr, std::memory_order_release);  // the hooks stop recording from here on
  {
    std::lock_guard<std::mutex> lock(flusher_mu_);
    stopping_ = true;
  }
  flusher_wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  last_pull_taken_ = true;  // the exit path's forced flush came before (entry.cpp)
  if (sampler_) sampler_->log_summary();
  flush_once(true);
  end_recording(exit_reason, exit_status, OutputSink::kExitDrainMs);
}

void Recorder::end_recording(uint32_t exit_reason, const int* exit_status, int drain_ms) {
  GoodbyeInfo g;
  g.end_time_ns = monotonic_ns();
  g.exit_reason = exit_reason;
  if (exit_status) g.has_exit_status = true, g.exit_status = *exit_status;
  g.batches = sequence_;
  g.api_calls = api_calls_sent_;
  g.activities = activities_sent_;
  g.nccl_calls = nccl_calls_sent_;
  uint64_t ring_drops = no_ring_drops_.load();
  for (const DropCount& d : retired_drops_) ring_drops += d.dropped, g.drops.push_back(d);
  size_t n = std::min(ring_count_.load(), kMaxRings);
  for (size_t i = 0; i < n; ++i)
    if (EventRing* ring = rings_[i].load()) {
      ring_drops += ring->dropped();
      if (ring->dropped()) g.drops.push_back({kDropSourceThreadRing, ring->owner_tid.load(), ring->dropped()});
    }
  g.events_dropped = ring_drops + undelivered_;
  g.cupti_records_dropped = cupti_dropped_.load();
  if (g.cupti_records_dropped) g.drops.push_back({kDropSourceCupti, 0, g.cupti_records_dropped});
  if (uint64_t incomplete = cupti_incomplete_.load()) g.drops.push_back({kDropSourceCuptiIncomplete, 0, incomplete});
  for (uint32_t id = 1; id < kStackMissKinds; ++id)
    if (uint64_t missed = stack_misses_[id].load()) g.drops.push_back({kDropSourcePythonStack, id, missed});
  if (sampler_) {
    for (uint32_t id = 1; id < PythonSampler::kMissKinds; ++id)
      if (uint64_t missed = sampler_->missed(id)) g.drops.push_back({kDropSourcePythonSample, id, missed});
  }
  frame_.clear();
  encoder_.goodbye(g, frame_);
  bool written = sink_.write(frame_);
  g_sink_fd.store(-1, std::memory_order_release);  // a child forked from now on has nothing of ours
  sink_.close(drain_ms);
  // close() may still move the stream to the file, and that may fail: the Goodbye is then lost.
  written = written && !sink_.failed();
  note_fallback();
  uint64_t total = g.api_calls + g.activities + g.nccl_calls;
  if (sink_.is_socket()) {
    log_line(settings_, LogLevel::kWarn, "streamed %llu events to the collector at %s", (unsigned long long)total,
             sink_.path().c_str());
  } else if (written && sink_.fell_back_because() != FallbackReason::kNone) {
    // The file holds the stream from the first frame the collector had not acknowledged: alone it
    // is the tail. Both files, or a directory holding both, are read as one process.
    const std::string& path = sink_.path();
    char lost[64] = "";
    if (g.events_dropped || g.cupti_records_dropped)
      snprintf(lost, sizeof lost, " (%llu lost)", (unsigned long long)(g.events_dropped + g.cupti_records_dropped));
    log_line(settings_, LogLevel::kWarn,
             "recorded %llu events%s, the start in the collector's recording of this process (%s in its output "
             "directory) and the rest in %s; report on both as one process: gapwatch report DIR/%s %s (DIR: the "
             "collector's output directory)",
             (unsigned long long)total, lost, collector_recording_.c_str(), path.c_str(), collector_recording_.c_str(),
             path.c_str());
  } else if (written) {
    const std::string& path = sink_.path();
    if (g.events_dropped || g.cupti_records_dropped)
      log_line(settings_, LogLevel::kWarn, "recorded %llu events (%llu lost) to %s; report: gapwatch report %s",
               (unsigned long long)total, (unsigned long long)(g.events_dropped + g.cupti_records_dropped),
               path.c_str(), path.c_str());
    else
      log_line(settings_, LogLevel::kWarn, "recorded %llu events to %s; report: gapwatch report %s",
               (unsigned long long)total, path.c_str(), path.c_str());
  } else {
    log_line(settings_, LogLevel::kWarn, "could not finish the recording %s (%s): it ends early",
             sink_.path().c_str(), strerror(sink_.error() ? sink_.error() : EIO));
  }
}

}  // namespace gapwatch
