// analysis/device_idle.h: per device, when it was idle and why.
//
// The stage sweeps each device's activities in start order (ARCHITECTURE.md section 6, made exact
// by the ground truth in docs/scenarios.md and by docs/analysis.md):
//   - activity = a kernel, copy or memset with end > start; window = first start to last end;
//     busy = the union of the activities; idle = window - busy, made of maximal gaps [g0, g1);
//   - each gap is attributed, nanosecond by nanosecond, to one IdleCause. A is the activity that
//     starts at g1 (the lowest correlation id on a tie), call_A the recorded call that queued it
//     (same correlation id) and T its thread. call_A returned at or before g0: all `dependency`.
//     Otherwise the gap is split by what T was doing: inside a blocked copy or memset
//     (`sync_copy`), else an NCCL host call (`nccl_host`), else a launch, graph launch, copy or
//     memset that did not block, event record or stream-wait-event (`launch_overhead`), else any
//     other recorded CUDA call (`cuda_api`); in no call, `launch_overhead` when the whole gap is
//     shorter than the launch threshold, else `host_cpu`. No recorded call_A (dropped, or queued
//     before recording began): the whole gap by the in-no-call rule, as no thread is known;
//   - a gap is `after_sync` when a blocked call (any thread) waited for the work that ended at g0:
//     the sync drained the queue right where the gap began. The ground truth knows what each call
//     waited for (waited_until == g0); the recording does not, so the stage reconstructs it: the
//     call returned at or after g0 and entered before g1, and one of the activities that ended
//     exactly at g0 was its to wait for: its own copy or memset (same correlation id); for a
//     stream sync, work on that stream (from the call's SYNC record) queued before the call
//     entered; for device syncs, malloc, free and other blocked calls, any work queued before
//     it entered. A call still blocked after g1 qualifies only if the work at g1 was queued after
//     it entered (else it waited for that too), and none that waited for a zero-length record
//     after g0 (what it waited for ended later). Of several, the one that returned first drained
//     the queue: its type gets the gap's idle (idleAfterSync()), and min(gap, its blocked time) is
//     the gap's hideable part (after_sync_hideable_ns);
//   - a polling loop (a thread's consecutive cudaEventQuery / cudaStreamQuery calls) is one
//     blocked call from its first poll's entry to its last poll's exit, for after_sync like a
//     device sync;
//   - host_cpu time is split further by what T was doing (HostPart), from T's host ranges (a
//     trace's ops, annotations and data-loading ranges; events.proto HostRange): inside an
//     input-pipeline range `input_pipeline`, else inside a framework op `framework`, else
//     `other` (outside any op; named by the innermost annotation around it), where the recording
//     holds host ranges at all; where it holds none, from T's sampled Python stacks (a live
//     recording's PythonSample), each classified by python_frame_rules.h: a sample at t with
//     period P speaks for [t - P, t + P], but not across a recorded call of T (the sampler reads
//     a stack only outside CUDA calls, so a call ends the stretch it sampled), and two samples of
//     one stretch closer than 2P share the time between them at their midpoint; time no sample
//     speaks for, or whose sample could not be read, is `unknown` (no sample is not "outside any
//     op"), as is all of it where the recording holds neither, or no thread is known;
//   - HTA's per-stream breakdown: on each stream, the interval between one activity's end and
//     the next one's start is host_wait when the next one's call entered after the previous end,
//     else kernel_wait when shorter than HTA's consecutive-kernel delay, else other.
// Memory: each thread's calls are kept only while some device's busy frontier has not passed their
// exit (no later gap can overlap them), at most kMaxLookbackNs; the call index expires likewise,
// and so do host ranges and sample spans. A sample's class is kept per stack id (bounded by the
// recording's strings, like names).
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/correlation_index.h"
#include "analysis/flat_u64_map.h"
#include "analysis/ring_queue.h"
#include "analysis/sync_points.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gapwatch::analysis {

// What a thread's call says about idle time while it runs, in precedence order: where calls
// nest or overlap, the lowest value wins (an NCCL host call around its driver launch is nccl_host).
enum class CallCategory : uint8_t { kSyncCopy = 0, kNcclHost, kLaunch, kCudaApi };
inline constexpr std::size_t kCallCategoryCount = 4;

// The category of a recorded API call (`blocked` already joined for async copies).
CallCategory categorizeCall(const ApiCallEvent& call);

class DeviceIdleStage final : public AnalysisStage {
 public:
  // A gap may look back at most this far for the calls that explain it: bounds memory when one
  // device stops while others go on. A gap longer than this sees no calls in its older part.
  static constexpr uint64_t kMaxLookbackNs = 60'000'000'000ull;

  explicit DeviceIdleStage(const AnalysisOptions& options);

  void begin(const RecordingFacts& facts) override;
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void onNcclCall(const NcclCallEvent& call) override;
  void onHostRange(const HostRangeEvent& range) override;
  void onPythonSample(const PythonSampleEvent& sample) override;
  // For the names of the longest gaps' neighbours, looked up once, at the end.
  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void finish() override;
  // Blocked calls kept until the gaps they may explain are decided: a handful at any time (tests
  // check it stays bounded).
  std::size_t blockedCallsPending() const { return blocked_calls_.size(); }
  // Writes `devices` (empty without a device timeline).
  void contribute(ProcessAnalysis& result) override { write(result); }
  // The gaps closed so far; a device's window ends at its busy frontier.
  void snapshot(ProcessAnalysis& result) const override { write(result); }

  // Idle time of after_sync gaps by the type of the blocked call that drained the queue (the one
  // that returned first, when several did): SyncTypeStats::idle_after_ns.
  const std::array<uint64_t, kSyncPointKindCount>& idleAfterSync() const { return idle_after_sync_; }
  // The same by the draining call's site (siteKey()), per type.
  const std::array<std::unordered_map<uint64_t, uint64_t>, kSyncPointKindCount>& idleAfterSyncBySite() const {
    return idle_after_sync_by_site_;
  }

  // Calls held for attribution right now (tests check that this stays bounded).
  std::size_t heldCalls() const;

  // Hears every gap as it closes (device, the gap with its causes and after_sync; no neighbours),
  // in time order per device: an exporter draws the gaps as the report attributes them without a
  // second attribution of its own.
  using GapListener = std::function<void(uint32_t device, const IdleGap& gap)>;
  void setGapListener(GapListener listener) { gap_listener_ = std::move(listener); }

 private:
  struct CallSpan {
    uint64_t enter_ns = 0;
    uint64_t exit_ns = 0;
    uint64_t max_exit_ns = 0;  // the largest exit of this call and every earlier one of the thread
    CallCategory category = CallCategory::kCudaApi;
    uint32_t api_name_id = 0;  // for the longest gaps' call
    bool warmup = false;       // a call that loads code or sets a library up (reader/warmup_names.h)
    bool sync = false;         // a synchronize (stream, device, event): its cuda_api time is a sync's
  };
  // The activity that ended at a device's busy frontier (the first to reach it): the longest
  // gaps' `before`. Ids only: names are looked up for the few gaps kept.
  struct FrontierActivity {
    v1::ActivityKind kind = v1::ACTIVITY_KIND_UNSPECIFIED;
    uint32_t name_id = 0;
    uint64_t start_ns = 0, end_ns = 0, stream = 0, correlation_id = 0, bytes = 0;
    v1::CopyKind copy_kind = v1::COPY_KIND_UNSPECIFIED;
  };
  // A host range of a thread, as splitHost needs it.
  struct HostSpan {
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint64_t max_end_ns = 0;  // the largest end of this range and every earlier one of the thread
    v1::HostRangeKind kind = v1::HOST_RANGE_KIND_UNSPECIFIED;
    uint32_t name_id = 0;
    bool warmup = false;  // a torch.compile range (reader/warmup_names.h)
  };
  // What a sample's time went to, per stack id (python_frame_rules.h); labels are the stage's own
  // ids (kSampleLabelBit set), as samples' lines are not in the recording's string table.
  struct SampleClass {
    HostPart part = HostPart::kUnknown;
    uint32_t label_id = 0;
    bool warmup = false;
    uint32_t warmup_label_id = 0;  // the compiler frame, for the gap's warm-up evidence
  };
  static constexpr uint32_t kSampleLabelBit = 1u << 31;
  static constexpr uint32_t kUnreadSample = UINT32_MAX;  // SampleSpan::class_index of an unread stack
  // The stretch of a thread's time one sample speaks for, [start_ns, end_ns) around time_ns. A
  // thread's spans never overlap and are in time order (onPythonSample), so ends rise too.
  struct SampleSpan {
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint64_t time_ns = 0;
    uint32_t class_index = kUnreadSample;  // into sample_classes_
    uint64_t devices_counted = 0;  // a bit per device (63: any above) whose count has this sample
  };
  struct BlockedCall {
    uint64_t enter_ns = 0;
    uint64_t exit_ns = 0;
    uint64_t correlation_id = 0;
    SyncPointKind kind = SyncPointKind::kOther;
    bool waits_own_work = false;  // a blocking copy or memset: it waited for its own operation
    bool stream_known = false;    // a stream sync whose SYNC record named the stream
    uint64_t stream = 0;
    bool open = false;            // a polling loop that may go on (its exit grows with each poll)
    uint64_t site = 0;            // siteKey() of the call
  };
  // An activity that ended exactly at a device's busy frontier: what a sync may have waited for.
  struct Finisher {
    uint64_t stream = 0;
    uint64_t correlation_id = 0;
    uint64_t queued_ns = 0;  // entry of the call that queued it; 0 when not known
  };
  struct StreamState {
    bool has_previous = false;
    uint64_t previous_end_ns = 0;
    StreamIdle idle;
  };
  // Where a first pass may end: the counters right after a gap with one-time evidence closed.
  struct FirstPassMark {
    uint64_t gap_start_ns = 0;
    DeviceAnalysis counters;  // device.result then (window_end_ns = the gap's end); no lists
  };
  // Marks kept per device: one-time evidence in more gaps than this is no first pass that
  // settles, and the first pass is then chosen among these (docs/analysis.md).
  static constexpr std::size_t kMaxFirstPassMarks = 1024;
  struct DeviceState {
    DeviceAnalysis result;
    std::vector<FirstPassMark> first_pass_marks;
    bool any_activity = false;
    uint64_t covered_until_ns = 0;  // end of the busy run so far
    std::vector<Finisher> finishers;  // the activities that end at covered_until_ns
    // Zero-length records after the frontier (a 4-byte copy): not activity, but a sync that
    // waited for one waited past g0, so it did not drain the queue at g0.
    std::vector<Finisher> empty_after_frontier;
    std::map<uint64_t, StreamState> streams;
    // The stream of the last activity: consecutive activities are mostly on the same stream.
    uint64_t last_stream_id = 0;
    StreamState* last_stream = nullptr;
    std::vector<IdleGap> longest;  // min-heap by length, at most top_n
    // Kernel names launched on this device so far, by string id: a slow first launch is lazy
    // module loading. A bit per id (ids are dense); ids past kMaxNameBits count as seen.
    std::vector<bool> kernel_names_seen;
    // Host time by name, per part (HostLabel): name id -> ns; bounded by the names in the trace.
    std::array<std::unordered_map<uint32_t, uint64_t>, kHostPartCount> part_names;
    FrontierActivity frontier;
    uint64_t python_samples = 0;  // readable samples whose span held some of its host_cpu time
  };

  // An edge of a call's span inside a gap, for splitByThread.
  struct Edge {
    uint64_t t;
    CallCategory category;
    int delta;
    const CallSpan* call;  // for warm-up evidence
  };

  void write(ProcessAnalysis& result) const;
  // The gap's one-time idle (DeviceAnalysis::one_time_ns); `first_run`: `next` is a kernel's first
  // run on the device.
  static uint64_t oneTimeIdle(const IdleGap& gap, bool first_run);
  // The mark that ends the device's first pass, or nullptr (docs/analysis.md).
  static const FirstPassMark* firstPassEnd(const DeviceState& device, uint64_t window_end_ns);
  // Joins a thread's consecutive polls into one blocked call; true when `call` was a poll.
  bool notePoll(const ApiCallEvent& call);
  // Keeps what a copy queued right behind a stream wait needs (last_ordered_call_, copies_after_wait_).
  void noteStreamOrder(const ApiCallEvent& call);
  void noteThreadCall(uint32_t thread_id, uint64_t enter_ns, uint64_t exit_ns, CallCategory category, bool sync,
                      uint32_t api_name_id, bool warmup);
  void advance(uint64_t now_ns);
  void prune();
  uint64_t horizon() const;
  DeviceState& deviceState(uint32_t device);
  // `next_call`: the call that queued `next` (queued_by_.find of its correlation id), or nullptr;
  // looked up once per activity and passed on, as nothing changes the index meanwhile.
  uint64_t longestDrainedWait(const QueuingCall* next_call, uint64_t g0, uint64_t g1, uint64_t at_least) const;
  void closeGap(DeviceState& device, uint64_t g0, uint64_t g1, const DeviceActivityEvent& next,
                const QueuingCall* next_call);
  // The gap's causes, and its host_cpu time by part into `gap.host_by_part_ns` (names into `device`).
  void attribute(DeviceState& device, IdleGap& gap, const DeviceActivityEvent& next, const QueuingCall* next_call);
  void splitByThread(DeviceState& device, uint32_t thread_id, IdleGap& gap);
  // [a, b) of host_cpu time on `thread_id`, split by its host ranges or its samples into `parts`.
  void splitHost(DeviceState& device, uint32_t thread_id, uint64_t a, uint64_t b, IdleGap& gap);
  // The same by the thread's sample spans (a recording without host ranges).
  void splitBySamples(DeviceState& device, RingQueue<SampleSpan>& spans, uint64_t a, uint64_t b, IdleGap& gap);
  // The class of a stack id, worked out once per id: kUnreadSample for 0, or a stack whose text
  // has no frame or has not been defined (then not cached: a later definition may come).
  uint32_t sampleClassOf(uint32_t python_stack_id);
  uint32_t sampleLabelId(const std::string& label);
  std::string labelText(uint32_t name_id) const;
  // A call of the thread began at `enter_ns`: its last sample's stretch ended there.
  void endSampleStretch(uint32_t thread_id, uint64_t enter_ns);
  // Whether a name id is warm-up evidence (reader/warmup_names.h), cached per id: the text is looked up
  // once per name, not per event. A name not defined yet is not cached.
  bool isWarmupName(v1::StringKind kind, uint32_t name_id);
  // The first launch of `next`'s kernel on the device held most of the gap: lazy loading.
  void noteFirstLaunch(DeviceState& device, IdleGap& gap, const DeviceActivityEvent& next);
  static constexpr uint32_t kMaxNameBits = 1u << 22;
  const BlockedCall* drainingSync(const DeviceState& device, uint64_t g0, uint64_t g1,
                                  const DeviceActivityEvent& next, const QueuingCall* next_call) const;
  static bool waitedFor(const BlockedCall& call, uint64_t stream, uint64_t correlation_id, uint64_t queued_ns);
  void noteSyncRecord(const DeviceActivityEvent& record);
  void noteFinisher(DeviceState& device, const DeviceActivityEvent& activity, const QueuingCall* call);
  void noteHtaInterval(DeviceState& device, const DeviceActivityEvent& activity, const QueuingCall* call);
  // True when a gap of this length would enter the longest-gaps heap (its neighbours are looked
  // up only then).
  bool wouldKeep(const DeviceState& device, const IdleGap& gap) const;
  void keepLongest(DeviceState& device, const IdleGap& gap);
  // The gap's neighbours: the work before and after it, and the launching thread's call.
  void noteNeighbours(const DeviceState& device, IdleGap& gap, const DeviceActivityEvent& next,
                      const QueuingCall* next_call) const;
  void nameNeighbours(IdleGap& gap) const;

  AnalysisOptions options_;
  RecordingFacts facts_;
  const StringTable* strings_ = nullptr;
  CorrelationIndex queued_by_;
  // Per thread, its calls in entry order: a flat map of ring buffers, as every call lands here.
  FlatU64Map<RingQueue<CallSpan>> thread_calls_;
  std::deque<BlockedCall> blocked_calls_;  // in entry order
  FlatU64Map<BlockedCall*> open_loops_;    // thread -> its polling loop in blocked_calls_
  std::map<uint32_t, DeviceState> devices_;
  // The device the last activity was on: consecutive activities are mostly on the same one.
  uint32_t last_device_id_ = 0;
  DeviceState* last_device_ = nullptr;
  // Per device state, for horizon() on every call without walking the map.
  std::vector<const DeviceState*> device_list_;
  mutable std::vector<Edge> edges_;
  // isWarmupName's cache per kind (API names, host range names): 0 not looked up, 1 no, 2 yes.
  std::vector<uint8_t> warmup_api_names_, warmup_range_names_;  // splitByThread's scratch, kept to avoid an allocation per gap
  // Per thread, its host ranges in start order (pruned like thread_calls_): the outermost ops in
  // one queue, annotations and input ranges (few, but some span a whole step or run, which would
  // hold every op behind them) in another.
  FlatU64Map<RingQueue<HostSpan>> thread_ops_;
  FlatU64Map<RingQueue<HostSpan>> thread_ranges_;
  bool host_ranges_seen_ = false;  // the recording holds host ranges: no op around = outside any op
  // Per thread, its sample spans in time order (pruned like thread_calls_).
  FlatU64Map<RingQueue<SampleSpan>> thread_samples_;
  bool samples_seen_ = false;
  std::unordered_map<uint32_t, uint32_t> stack_classes_;  // python stack id -> index in sample_classes_
  std::vector<SampleClass> sample_classes_;
  std::vector<std::string> sample_labels_;  // label id without kSampleLabelBit -> text
  std::unordered_map<std::string, uint32_t> sample_label_ids_;
  struct HostEdge {
    uint64_t t;
    uint32_t span;  // index in host_spans_
    int delta;
  };
  std::vector<HostEdge> host_edges_;          // splitHost's scratch
  std::vector<const HostSpan*> host_spans_;   // splitHost's scratch: the ranges overlapping [a, b)
  std::array<uint64_t, kSyncPointKindCount> idle_after_sync_{};
  // A copy queued right behind a stream wait (DeviceAnalysis::copy_wait_ns). Per thread, its latest
  // call that queues in stream order (launches, copies, memsets, stream waits; not event records,
  // which queue no work): a copy whose thread's previous such call was a stream wait on its stream
  // is queued behind that wait. Bounded by threads.
  struct EventRecordCall {
    uint64_t start_ns = 0;
    uint32_t thread_id = 0;
    uint32_t api_name_id = 0;
  };
  struct OrderedCall {
    v1::ApiKind kind = v1::API_KIND_UNSPECIFIED;
    uint64_t stream = 0;
    uint64_t start_ns = 0;
    uint64_t correlation_id = 0;
    uint32_t api_name_id = 0;
    std::optional<EventRecordCall> record_before;  // a stream wait: the latest event record before it
  };
  std::unordered_map<uint32_t, OrderedCall> last_ordered_call_;
  std::optional<EventRecordCall> last_event_record_;  // any thread: no trace says which event a wait is on
  // Copy correlation id -> the stream wait it was queued behind; erased as the copy's record
  // arrives, and cleared whole past kMaxCopiesAfterWait (records dropped by the recorder).
  std::unordered_map<uint64_t, OrderedCall> copies_after_wait_;
  // Where the source names a wait's event (DeviceActivityEvent::event_record_correlation_id): the
  // wait call's correlation id -> the record's id and stream, and the record calls by id. Both
  // cleared whole past kMaxCopiesAfterWait: a wait whose names were dropped keeps the latest record.
  struct NamedEvent {
    uint64_t record_correlation_id = 0;
    uint64_t stream = 0;
  };
  std::unordered_map<uint64_t, NamedEvent> wait_events_;
  std::unordered_map<uint64_t, EventRecordCall> event_record_calls_;
  static constexpr std::size_t kMaxCopiesAfterWait = 4096;
  std::array<std::unordered_map<uint64_t, uint64_t>, kSyncPointKindCount> idle_after_sync_by_site_;
  std::vector<HostReturnSite> longHostGapSites(uint32_t device) const;
  // Long host gaps by the Python stack of the launch that ended them (per device).
  struct ReturnTotals {
    uint64_t gaps = 0, host_cpu_ns = 0;
  };
  std::unordered_map<uint32_t, std::unordered_map<uint32_t, ReturnTotals>> long_gap_returns_;  // device -> stack id
  GapListener gap_listener_;
  uint64_t now_ns_ = 0;  // the latest time released to this stage
  uint64_t events_since_prune_ = 0;
};

}  // namespace gapwatch::analysis
