// analysis/device_idle.cpp: see device_idle.h.
#include "analysis/device_idle.h"

#include "analysis/python_frame_rules.h"
#include "analysis/quantity_text.h"
#include "reader/warmup_names.h"

#include <algorithm>
#include <utility>

namespace gapwatch::analysis {
namespace {

// How long a call's work may take to show up before the call is forgotten. Longer than the
// reordering window, so only work that never comes (dropped records) expires in practice.
constexpr uint64_t kQueueAgeNs = 10'000'000'000ull;
// Pruning every thread's history is O(threads); do it now and then, and on each thread's own
// appends.
constexpr uint64_t kPruneEvery = 1024;
// Activities that end on the same nanosecond, kept as what a sync may have waited for.
constexpr std::size_t kMaxFinishers = 16;

constexpr IdleCause kCauseOfCategory[kCallCategoryCount] = {IdleCause::kSyncCopy, IdleCause::kNcclHost,
                                                             IdleCause::kLaunchOverhead, IdleCause::kCudaApi};

bool isDeviceWork(v1::ActivityKind kind) {
  return kind == v1::ACTIVITY_KIND_KERNEL || kind == v1::ACTIVITY_KIND_MEMCPY || kind == v1::ACTIVITY_KIND_MEMSET;
}

std::size_t causeIndex(IdleCause cause) { return static_cast<std::size_t>(cause); }

uint64_t gapLength(const IdleGap& gap) { return gap.end_ns - gap.start_ns; }

// Orders the longest-gap heap so that its front is the gap to drop first: the shortest, and of
// equal ones the latest.
bool keepsBetter(const IdleGap& a, const IdleGap& b) {
  if (gapLength(a) != gapLength(b)) return gapLength(a) > gapLength(b);
  return a.start_ns < b.start_ns;
}

}  // namespace

CallCategory categorizeCall(const ApiCallEvent& call) {
  const bool copy_or_memset = call.kind == v1::API_KIND_MEMCPY || call.kind == v1::API_KIND_MEMCPY_ASYNC ||
                              call.kind == v1::API_KIND_MEMSET || call.kind == v1::API_KIND_MEMSET_ASYNC;
  if (copy_or_memset && call.blocked) return CallCategory::kSyncCopy;
  if (copy_or_memset || call.kind == v1::API_KIND_LAUNCH || call.kind == v1::API_KIND_GRAPH_LAUNCH ||
      call.kind == v1::API_KIND_EVENT_RECORD || call.kind == v1::API_KIND_STREAM_WAIT_EVENT) {
    return CallCategory::kLaunch;
  }
  return CallCategory::kCudaApi;
}

DeviceIdleStage::DeviceIdleStage(const AnalysisOptions& options)
    : options_(options), queued_by_(std::max(options.reorder_window_ns, kQueueAgeNs)) {}

void DeviceIdleStage::begin(const RecordingFacts& facts) { facts_ = facts; }

void DeviceIdleStage::noteStreamOrder(const ApiCallEvent& call) {
  if (call.kind == v1::API_KIND_EVENT_RECORD) {
    last_event_record_ = EventRecordCall{call.start_ns, call.thread_id, call.api_name_id};
    if (call.correlation_id != 0) {
      if (event_record_calls_.size() >= kMaxCopiesAfterWait) event_record_calls_.clear();
      event_record_calls_[call.correlation_id] = *last_event_record_;
    }
    return;
  }
  const CallCategory category = categorizeCall(call);
  if (category == CallCategory::kCudaApi) return;
  const bool copy = call.kind == v1::API_KIND_MEMCPY || call.kind == v1::API_KIND_MEMCPY_ASYNC ||
                    call.kind == v1::API_KIND_MEMSET || call.kind == v1::API_KIND_MEMSET_ASYNC;
  OrderedCall& last = last_ordered_call_[call.thread_id];
  if (copy && call.correlation_id != 0 && last.kind == v1::API_KIND_STREAM_WAIT_EVENT && last.stream == call.stream) {
    if (copies_after_wait_.size() >= kMaxCopiesAfterWait) copies_after_wait_.clear();
    copies_after_wait_[call.correlation_id] = last;
  }
  last = OrderedCall{call.kind, call.stream, call.start_ns, call.correlation_id, call.api_name_id,
                     call.kind == v1::API_KIND_STREAM_WAIT_EVENT ? last_event_record_ : std::nullopt};
}

void DeviceIdleStage::onApiCall(const ApiCallEvent& call) {
  if (!facts_.device_timeline) return;
  advance(call.start_ns);
  queued_by_.add(call);
  // Warm-up calls by kind (the recorder's module loads, graph capture) or by name (a trace's
  // cuDNN and cuBLAS set-up, which no kind names).
  const bool warmup = call.kind == v1::API_KIND_MODULE_LOAD || call.kind == v1::API_KIND_CAPTURE_BEGIN ||
                      call.kind == v1::API_KIND_CAPTURE_END || call.kind == v1::API_KIND_GRAPH_INSTANTIATE ||
                      (call.api_name_id != 0 && isWarmupName(v1::STRING_KIND_API_NAME, call.api_name_id));
  const std::optional<SyncPointKind> sync_kind = classifySyncPoint(call);
  const bool sync_call = sync_kind && (*sync_kind == SyncPointKind::kStreamSync || *sync_kind == SyncPointKind::kDeviceSync ||
                                       *sync_kind == SyncPointKind::kEventSync);
  noteThreadCall(call.thread_id, call.start_ns, call.end_ns, categorizeCall(call), sync_call, call.api_name_id, warmup);
  noteStreamOrder(call);
  if (notePoll(call)) return;
  if (const std::optional<SyncPointKind> kind = sync_kind) {
    BlockedCall blocked;
    blocked.enter_ns = call.start_ns;
    blocked.exit_ns = call.end_ns;
    blocked.correlation_id = call.correlation_id;
    blocked.kind = *kind;
    blocked.waits_own_work = categorizeCall(call) == CallCategory::kSyncCopy;
    blocked.site = siteKey(call);
    blocked_calls_.push_back(blocked);
  }
}

bool DeviceIdleStage::notePoll(const ApiCallEvent& call) {
  BlockedCall** open = open_loops_.empty() ? nullptr : open_loops_.find(call.thread_id);
  if (!isPoll(call)) {
    if (open) {
      (*open)->open = false;  // the thread's loop ended with its previous poll
      open_loops_.erase(call.thread_id);
    }
    return false;
  }
  // A poll that saw the work done ends its loop, so one poll of a thread that then stops calling
  // CUDA does not hold every later blocked call until the end of the run.
  const bool done = pollSawWorkDone(call);
  if (open) {
    (*open)->exit_ns = std::max((*open)->exit_ns, call.end_ns);
    if (done) {
      (*open)->open = false;
      open_loops_.erase(call.thread_id);
    }
    return true;
  }
  // A polling loop waits, like a device sync, for any work queued before its first poll.
  BlockedCall loop;
  loop.enter_ns = call.start_ns;
  loop.exit_ns = call.end_ns;
  loop.kind = SyncPointKind::kQueryPolling;
  loop.site = siteKey(call);
  loop.open = !done;
  blocked_calls_.push_back(loop);
  if (!done) open_loops_.tryEmplace(call.thread_id, &blocked_calls_.back());  // deque elements do not move
  return true;
}

void DeviceIdleStage::onNcclCall(const NcclCallEvent& call) {
  if (!facts_.device_timeline) return;
  advance(call.start_ns);
  noteThreadCall(call.thread_id, call.start_ns, call.end_ns, CallCategory::kNcclHost, false, 0, false);
}

void DeviceIdleStage::onHostRange(const HostRangeEvent& range) {
  if (!facts_.device_timeline) return;
  advance(range.start_ns);
  host_ranges_seen_ = true;
  // A kind a newer recorder added says nothing this engine can use; empty ranges cover nothing.
  if (range.kind != v1::HOST_RANGE_KIND_INPUT_PIPELINE && range.kind != v1::HOST_RANGE_KIND_FRAMEWORK_OP &&
      range.kind != v1::HOST_RANGE_KIND_ANNOTATION) {
    return;
  }
  if (range.end_ns <= range.start_ns) return;
  auto& by_thread = range.kind == v1::HOST_RANGE_KIND_FRAMEWORK_OP ? thread_ops_ : thread_ranges_;
  RingQueue<HostSpan>& spans = by_thread[range.thread_id];
  const uint64_t h = horizon();
  while (!spans.empty() && spans.front().end_ns <= h) spans.pop_front();
  if (range.end_ns <= h) return;  // no gap still to come can overlap it
  const uint64_t max_end = std::max(spans.empty() ? 0 : spans.back().max_end_ns, range.end_ns);
  const bool warmup = range.name_id != 0 && isWarmupName(v1::STRING_KIND_HOST_RANGE_NAME, range.name_id);
  spans.push_back({range.start_ns, range.end_ns, max_end, range.kind, range.name_id, warmup});
}

void DeviceIdleStage::onPythonSample(const PythonSampleEvent& sample) {
  if (!facts_.device_timeline) return;
  advance(sample.time_ns);
  samples_seen_ = true;
  const uint64_t t = sample.time_ns;
  uint64_t start = sample.period_ns < t ? t - sample.period_ns : 0;
  // The stretch it sampled began when the thread's last recorded call returned.
  if (const RingQueue<CallSpan>* calls = thread_calls_.find(sample.thread_id); calls && !calls->empty()) {
    const uint64_t last_exit = calls->back().max_exit_ns;
    // Read while a recorded call was still open (an NCCL call the sampler does not count, or clocks
    // a hair apart): it says nothing about time outside calls, the only time it could split.
    if (last_exit > t) return;
    start = std::max(start, last_exit);
  }
  const uint64_t end = eventEnd(t, sample.period_ns);
  RingQueue<SampleSpan>& spans = thread_samples_[sample.thread_id];
  const uint64_t h = horizon();
  while (!spans.empty() && spans.front().end_ns <= h) spans.pop_front();
  if (!spans.empty() && spans.back().end_ns > start) {
    // Two samples of one stretch closer than their periods allow: each takes the time nearer to it.
    SampleSpan& previous = spans.back();
    const uint64_t middle = previous.time_ns + (t - previous.time_ns) / 2;
    previous.end_ns = std::max(previous.start_ns, std::min(previous.end_ns, middle));
    start = std::max(start, previous.end_ns);
  }
  if (end <= start || end <= h) return;  // a period of 0 speaks for nothing; no later gap reaches it
  spans.push_back({start, end, t, sampleClassOf(sample.python_stack_id), 0});
}

void DeviceIdleStage::endSampleStretch(uint32_t thread_id, uint64_t enter_ns) {
  RingQueue<SampleSpan>* spans = thread_samples_.find(thread_id);
  if (!spans || spans->empty()) return;
  SampleSpan& last = spans->back();
  if (last.time_ns <= enter_ns && last.end_ns > enter_ns) last.end_ns = std::max(last.start_ns, enter_ns);
}

uint32_t DeviceIdleStage::sampleClassOf(uint32_t python_stack_id) {
  if (python_stack_id == 0) return kUnreadSample;
  if (auto it = stack_classes_.find(python_stack_id); it != stack_classes_.end()) return it->second;
  const std::string* text = strings_ ? strings_->find(v1::STRING_KIND_PYTHON_STACK, python_stack_id) : nullptr;
  if (!text) return kUnreadSample;
  const PythonStackClass c = classifyPythonStack(*text, options_.input_pipeline_frames);
  uint32_t index = kUnreadSample;
  if (c.part != HostPart::kUnknown) {
    index = static_cast<uint32_t>(sample_classes_.size());
    sample_classes_.push_back({c.part, sampleLabelId(c.label), c.warmup, c.warmup ? sampleLabelId(c.warmup_frame) : 0});
  }
  stack_classes_.emplace(python_stack_id, index);
  return index;
}

uint32_t DeviceIdleStage::sampleLabelId(const std::string& label) {
  const uint32_t next_id = static_cast<uint32_t>(sample_labels_.size()) | kSampleLabelBit;
  auto [it, inserted] = sample_label_ids_.try_emplace(label, next_id);
  if (inserted) sample_labels_.push_back(label);
  return it->second;
}

std::string DeviceIdleStage::labelText(uint32_t name_id) const {
  if (name_id & kSampleLabelBit) {
    const uint32_t index = name_id & ~kSampleLabelBit;
    return index < sample_labels_.size() ? sample_labels_[index] : std::string();
  }
  const std::string* name =
      strings_ && name_id != 0 ? strings_->find(v1::STRING_KIND_HOST_RANGE_NAME, name_id) : nullptr;
  return name ? *name : (name_id != 0 ? "#" + std::to_string(name_id) : std::string());
}

bool DeviceIdleStage::isWarmupName(v1::StringKind kind, uint32_t name_id) {
  std::vector<uint8_t>& cache = kind == v1::STRING_KIND_API_NAME ? warmup_api_names_ : warmup_range_names_;
  if (name_id < cache.size() && cache[name_id] != 0) return cache[name_id] == 2;
  const std::string* name = strings_ ? strings_->find(kind, name_id) : nullptr;
  if (!name) return false;
  const bool warmup = kind == v1::STRING_KIND_API_NAME ? isWarmupApiName(*name) : isWarmupHostRangeName(*name);
  if (name_id < kMaxNameBits) {
    if (name_id >= cache.size()) cache.resize(name_id + 1, 0);
    cache[name_id] = warmup ? 2 : 1;
  }
  return warmup;
}

void DeviceIdleStage::noteThreadCall(uint32_t thread_id, uint64_t enter_ns, uint64_t exit_ns,
                                     CallCategory category, bool sync, uint32_t api_name_id, bool warmup) {
  if (samples_seen_) endSampleStretch(thread_id, enter_ns);
  RingQueue<CallSpan>& calls = thread_calls_[thread_id];
  const uint64_t h = horizon();
  while (!calls.empty() && calls.front().exit_ns <= h) calls.pop_front();
  if (exit_ns <= h) return;  // no gap still to come can overlap it
  const uint64_t max_exit = std::max(calls.empty() ? 0 : calls.back().max_exit_ns, exit_ns);
  calls.push_back({enter_ns, exit_ns, max_exit, category, api_name_id, warmup, sync});
}

void DeviceIdleStage::onActivity(const DeviceActivityEvent& activity) {
  if (!facts_.device_timeline) return;
  if (activity.kind == v1::ACTIVITY_KIND_SYNC) return noteSyncRecord(activity);
  if (!isDeviceWork(activity.kind)) return;
  advance(activity.start_ns);
  DeviceState& device = deviceState(activity.device);
  // Nothing below adds to or takes from the index before matched(): one lookup serves them all.
  const QueuingCall* call = queued_by_.find(activity.correlation_id);
  if (!call && !queued_by_.probablyExpired(activity.correlation_id)) ++device.result.work_without_call;
  switch (activity.kind) {
    case v1::ACTIVITY_KIND_KERNEL:
      ++device.result.kernels;
      break;
    case v1::ACTIVITY_KIND_MEMCPY:
      ++device.result.memcpys;
      break;
    default:
      ++device.result.memsets;
      break;
  }
  // A zero-length record is counted but is not activity: it neither ends a gap nor adds busy time
  // (the ground truth's definition).
  if (activity.end_ns > activity.start_ns) {
    if (!device.any_activity) {
      device.any_activity = true;
      device.result.window_start_ns = activity.start_ns;
      device.covered_until_ns = activity.start_ns;
    }
    if (activity.kind == v1::ACTIVITY_KIND_KERNEL && activity.name_id < kMaxNameBits &&
        !(activity.name_id < device.kernel_names_seen.size() && device.kernel_names_seen[activity.name_id])) {
      ++device.result.first_runs;
    }
    if (activity.start_ns > device.covered_until_ns) {
      closeGap(device, device.covered_until_ns, activity.start_ns, activity, call);
    }
    if (activity.kind == v1::ACTIVITY_KIND_KERNEL && activity.name_id < kMaxNameBits) {
      std::vector<bool>& seen = device.kernel_names_seen;
      if (activity.name_id >= seen.size()) seen.resize(std::max<std::size_t>(activity.name_id + 1, seen.size() * 2), false);
      seen[activity.name_id] = true;
    }
    noteFinisher(device, activity, call);
    if (activity.end_ns > device.covered_until_ns) {
      device.result.busy_ns += activity.end_ns - std::max(activity.start_ns, device.covered_until_ns);
      device.covered_until_ns = activity.end_ns;
      device.frontier = {activity.kind,     activity.name_id,        activity.start_ns, activity.end_ns,
                         activity.stream,   activity.correlation_id, activity.bytes,    activity.copy_kind};
    }
    noteHtaInterval(device, activity, call);
  } else if (device.any_activity && activity.start_ns > device.covered_until_ns &&
             device.empty_after_frontier.size() < kMaxFinishers) {
    device.empty_after_frontier.push_back({activity.stream, activity.correlation_id, call ? call->enter_ns : 0});
  } else if (device.any_activity && activity.start_ns == device.covered_until_ns &&
             device.finishers.size() < kMaxFinishers) {
    // A zero-length record right at the frontier (item()'s 4-byte copy) ends there too: the copy
    // that waited for it drained the queue at g0.
    device.finishers.push_back({activity.stream, activity.correlation_id, call ? call->enter_ns : 0});
  }
  queued_by_.matched(activity.correlation_id);
  if (activity.kind != v1::ACTIVITY_KIND_KERNEL && !copies_after_wait_.empty()) {
    copies_after_wait_.erase(activity.correlation_id);
  }
}

DeviceIdleStage::DeviceState& DeviceIdleStage::deviceState(uint32_t device) {
  if (last_device_ && last_device_id_ == device) return *last_device_;
  auto [it, inserted] = devices_.try_emplace(device);
  it->second.result.device = device;
  if (inserted) device_list_.push_back(&it->second);  // map nodes do not move
  last_device_id_ = device;
  last_device_ = &it->second;
  return it->second;
}

void DeviceIdleStage::closeGap(DeviceState& device, uint64_t g0, uint64_t g1, const DeviceActivityEvent& next,
                               const QueuingCall* next_call) {
  IdleGap gap;
  gap.start_ns = g0;
  gap.end_ns = g1;
  attribute(device, gap, next, next_call);
  const bool first_run = next.kind == v1::ACTIVITY_KIND_KERNEL && next.name_id < kMaxNameBits &&
                         !(next.name_id < device.kernel_names_seen.size() && device.kernel_names_seen[next.name_id]);
  noteFirstLaunch(device, gap, next);
  const uint64_t length = g1 - g0;
  DeviceAnalysis& r = device.result;
  const uint64_t one_time = length >= kLongGapNs ? oneTimeIdle(gap, first_run) : 0;
  r.one_time_ns += one_time;
  r.cuda_api_in_syncs_ns += gap.cuda_api_in_syncs_ns;
  r.gaps.add(length);
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) r.idle_by_cause_ns[c] += gap.by_cause_ns[c];
  for (std::size_t p = 0; p < kHostPartCount; ++p) r.host_cpu_by_part_ns[p] += gap.host_by_part_ns[p];
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) r.warmup_by_cause_ns[c] += gap.warmup_by_cause_ns[c];
  for (std::size_t p = 0; p < kHostPartCount; ++p) r.warmup_host_by_part_ns[p] += gap.warmup_host_by_part_ns[p];
  if (length >= kLongGapNs) r.unknown_host_in_long_gaps_ns += gap.host_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)];
  // A long stretch of host time: where the host came back from it, when the launch that ended it
  // carries the thread's Python stack (the recorder takes one at such a launch).
  const uint64_t host_cpu_ns = gap.by_cause_ns[causeIndex(IdleCause::kHostCpu)];
  if (host_cpu_ns >= options_.long_host_gap_ns) {
    ++r.long_host_gaps;
    if (next_call && next_call->python_stack_id) {
      ReturnTotals& t = long_gap_returns_[device.result.device][next_call->python_stack_id];
      ++t.gaps;
      t.host_cpu_ns += host_cpu_ns;
    }
  }
  if (const BlockedCall* sync = drainingSync(device, g0, g1, next, next_call)) {
    gap.after_sync = true;
    r.after_sync_ns += length;
    ++r.after_sync_gaps;
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) r.after_sync_by_cause_ns[c] += gap.by_cause_ns[c];
    for (std::size_t p = 0; p < kHostPartCount; ++p) r.after_sync_host_by_part_ns[p] += gap.host_by_part_ns[p];
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) r.after_sync_warmup_by_cause_ns[c] += gap.warmup_by_cause_ns[c];
    for (std::size_t p = 0; p < kHostPartCount; ++p) {
      r.after_sync_warmup_host_by_part_ns[p] += gap.warmup_host_by_part_ns[p];
    }
    // Had the host not waited, it would have done this gap's host work during the wait. The wait
    // is the longest call of the gap's thread that was waiting when the device went idle and
    // returned inside the gap: for `.item()` the pageable copy (hundreds of us), not the short
    // stream sync that follows it and returns first.
    r.after_sync_hideable_ns += std::min(length, longestDrainedWait(next_call, g0, g1, sync->exit_ns - sync->enter_ns));
    idle_after_sync_[static_cast<std::size_t>(sync->kind)] += length;
    idle_after_sync_by_site_[static_cast<std::size_t>(sync->kind)][sync->site] += length;
  }
  if (length >= kLongGapNs) {
    r.launch_overhead_long_gaps_ns += gap.by_cause_ns[causeIndex(IdleCause::kLaunchOverhead)];
  } else if (gap.by_cause_ns[causeIndex(IdleCause::kLaunchOverhead)] > 0) {
    ++r.launch_overhead_short_gaps;
  }
  if (one_time > 0 && device.first_pass_marks.size() < kMaxFirstPassMarks) {
    FirstPassMark& mark = device.first_pass_marks.emplace_back();
    mark.gap_start_ns = g0;
    mark.counters = r;
    mark.counters.window_end_ns = g1;
  }
  if (gap_listener_) gap_listener_(device.result.device, gap);
  if (length >= options_.min_gap_ns && wouldKeep(device, gap)) {
    noteNeighbours(device, gap, next, next_call);
    keepLongest(device, gap);
  }
}

// The fields of a gap's neighbour, from the device state's frontier or from the activity itself
// (two types with the same field names).
template <class Activity>
static GapActivity gapActivityOf(const Activity& a) {
  GapActivity g;
  g.kind = a.kind;
  g.name_id = a.name_id;
  g.start_ns = a.start_ns;
  g.end_ns = a.end_ns;
  g.stream = a.stream;
  g.correlation_id = a.correlation_id;
  g.bytes = a.bytes;
  g.copy_kind = a.copy_kind;
  return g;
}

void DeviceIdleStage::noteNeighbours(const DeviceState& device, IdleGap& gap, const DeviceActivityEvent& next,
                                     const QueuingCall* next_call) const {
  gap.before = gapActivityOf(device.frontier);
  gap.after = gapActivityOf(next);
  gap.call = {};
  gap.queued_by = {};
  if (!next_call) return;
  gap.queued_by.known = true;
  gap.queued_by.api_name_id = next_call->api_name_id;
  gap.queued_by.thread_id = next_call->thread_id;
  gap.queued_by.enter_ns = next_call->enter_ns;
  gap.queued_by.exit_ns = next_call->exit_ns;
  gap.queued_by.python_stack_id = next_call->python_stack_id;
  const uint64_t a = std::max(next_call->enter_ns, gap.start_ns);
  const uint64_t b = std::min(next_call->exit_ns, gap.end_ns);
  gap.queued_by.in_gap_ns = b > a ? b - a : 0;
  // Queued before the gap (a dependency): what the thread did meanwhile did not hold the work.
  if (next_call->exit_ns <= gap.start_ns) {
    gap.call = gap.queued_by;
    return;
  }
  // The launching thread's call that covered most of the gap: what it sat in (a 3 s launch, a
  // malloc) or the launch it was making at the end of its host work.
  if (const RingQueue<CallSpan>* calls = thread_calls_.find(next_call->thread_id)) {
    // max_exit_ns never decreases along the queue: the first call that may reach past the start.
    std::size_t lo = 0, hi = calls->size();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (gap.start_ns < (*calls)[mid].max_exit_ns) hi = mid;
      else lo = mid + 1;
    }
    for (std::size_t i = lo; i < calls->size(); ++i) {
      const CallSpan& c = (*calls)[i];
      if (c.enter_ns >= gap.end_ns) break;
      const uint64_t a = std::max(c.enter_ns, gap.start_ns);
      const uint64_t b = std::min(c.exit_ns, gap.end_ns);
      if (a >= b || b - a <= gap.call.in_gap_ns) continue;
      gap.call.known = true;
      gap.call.api_name_id = c.api_name_id;
      gap.call.thread_id = next_call->thread_id;
      gap.call.enter_ns = c.enter_ns;
      gap.call.exit_ns = c.exit_ns;
      gap.call.in_gap_ns = b - a;
    }
  }
  if (!gap.call.known) gap.call = gap.queued_by;  // it queued the work before the gap: nothing in it
}

static std::string gapActivityName(const GapActivity& a, const StringTable* strings) {
  switch (a.kind) {
    case v1::ACTIVITY_KIND_KERNEL:
      if (a.name_id == 0) return "(unnamed kernel)";
      return strings ? strings->display(v1::STRING_KIND_KERNEL_NAME, a.name_id) : "#" + std::to_string(a.name_id);
    case v1::ACTIVITY_KIND_MEMCPY: {
      static const char* const kKinds[] = {"", " HtoD", " DtoH", " DtoD", " HtoH", " PtoP"};
      const auto k = static_cast<std::size_t>(a.copy_kind);
      // A size of 0 is one the trace does not give (ROCm's copy records, Kineto's memsets): none
      // is shown rather than "0 B".
      std::string name = std::string("memcpy") + (k < 6 ? kKinds[k] : "");
      return a.bytes == 0 ? name : name + " " + formatCount(a.bytes) + " B";
    }
    case v1::ACTIVITY_KIND_MEMSET:
      return a.bytes == 0 ? std::string("memset") : "memset " + formatCount(a.bytes) + " B";
    default:
      return "";
  }
}

void DeviceIdleStage::nameNeighbours(IdleGap& gap) const {
  gap.before.name = gapActivityName(gap.before, strings_);
  gap.after.name = gapActivityName(gap.after, strings_);
  for (GapCall* c : {&gap.call, &gap.queued_by}) {
    if (c->known && c->api_name_id != 0 && strings_) c->api_name = strings_->display(v1::STRING_KIND_API_NAME, c->api_name_id);
    if (c->python_stack_id) c->python_site = siteName((uint64_t(1) << 32) | c->python_stack_id, strings_);
  }
  // The warm-up evidence by name: the call, else the compile range, else the first launch.
  if (gap.warmup_api_name_id != 0 && strings_) {
    gap.warmup_evidence = strings_->display(v1::STRING_KIND_API_NAME, gap.warmup_api_name_id);
  } else if (gap.warmup_range_name_id != 0 && strings_) {
    const std::string* name = strings_->find(v1::STRING_KIND_HOST_RANGE_NAME, gap.warmup_range_name_id);
    gap.warmup_evidence = name ? *name : "a torch.compile range";
  } else if (gap.warmup_sample_label_id != 0) {
    gap.warmup_evidence = labelText(gap.warmup_sample_label_id) + " (a sampled Python stack)";
  } else if (gap.warmup_first_launch) {
    gap.warmup_evidence = "first launch of " + (gap.after.name.empty() ? std::string("a kernel") : gap.after.name);
  }
}

std::vector<HostReturnSite> DeviceIdleStage::longHostGapSites(uint32_t device) const {
  std::vector<HostReturnSite> sites;
  auto it = long_gap_returns_.find(device);
  if (it == long_gap_returns_.end()) return sites;
  // Stacks that differ only below the named frame are one site.
  for (const auto& [stack, totals] : it->second) {
    const std::string name = siteName((uint64_t(1) << 32) | stack, strings_);
    auto same = std::find_if(sites.begin(), sites.end(), [&](const HostReturnSite& s) { return s.name == name; });
    if (same == sites.end()) same = sites.insert(sites.end(), HostReturnSite{name, 0, 0, stack, {}});
    same->gaps += totals.gaps;
    same->host_cpu_ns += totals.host_cpu_ns;
  }
  std::sort(sites.begin(), sites.end(), [](const HostReturnSite& a, const HostReturnSite& b) {
    return a.host_cpu_ns != b.host_cpu_ns ? a.host_cpu_ns > b.host_cpu_ns : a.name < b.name;
  });
  if (sites.size() > options_.top_n) sites.resize(options_.top_n);
  for (HostReturnSite& site : sites) site.python_stack = stackFrames(site.python_stack_id, strings_);
  return sites;
}

uint64_t DeviceIdleStage::longestDrainedWait(const QueuingCall* next_call, uint64_t g0, uint64_t g1,
                                             uint64_t at_least) const {
  uint64_t longest = at_least;
  if (!next_call) return longest;
  if (const RingQueue<CallSpan>* calls = thread_calls_.find(next_call->thread_id)) {
    for (std::size_t i = 0; i < calls->size(); ++i) {
      const CallSpan& c = (*calls)[i];
      if (c.enter_ns < g0 && c.exit_ns >= g0 && c.exit_ns < g1) longest = std::max(longest, c.exit_ns - c.enter_ns);
    }
  }
  return longest;
}

void DeviceIdleStage::attribute(DeviceState& device, IdleGap& gap, const DeviceActivityEvent& next,
                                const QueuingCall* call) {
  std::array<uint64_t, kIdleCauseCount>& causes = gap.by_cause_ns;
  const uint64_t length = gap.end_ns - gap.start_ns;
  if (call) {
    if (call->exit_ns <= gap.start_ns) {
      causes[causeIndex(IdleCause::kDependency)] = length;  // queued before the device went idle
    } else {
      splitByThread(device, call->thread_id, gap);
      // A blocking copy (or memset) that held the gap right after a stream wait on an event was
      // issued on its stream, while its own transfer is short, waited for that event: work on
      // another stream, or queued before the window. That wait is a dependency, not the copy's
      // staging (a 60-byte copy behind a hipStreamWaitEvent once read as a one-time stall, and
      // would read as "pageable copies": pin memory would not shorten it). The stream wait is
      // the evidence: without it a slow copy stays a blocking copy (a loaded host stages a
      // pageable copy slowly too, and the simulator's pageable-copies scenario does).
      const std::size_t copy = causeIndex(IdleCause::kSyncCopy);
      const bool copy_call = call->kind == v1::API_KIND_MEMCPY || call->kind == v1::API_KIND_MEMCPY_ASYNC ||
                             call->kind == v1::API_KIND_MEMSET || call->kind == v1::API_KIND_MEMSET_ASYNC;
      const uint64_t transfer = next.end_ns - next.start_ns;
      if (copy_call && causes[copy] >= kLongGapNs && transfer * 10 < causes[copy]) {
        const auto wait = copies_after_wait_.find(next.correlation_id);
        if (wait != copies_after_wait_.end() && wait->second.start_ns <= call->enter_ns) {
          const uint64_t moved = causes[copy];
          causes[causeIndex(IdleCause::kDependency)] += moved;
          device.result.copy_wait_ns += moved;
          ++device.result.copy_waits;
          causes[copy] = 0;
          CopyWait& longest = device.result.longest_copy_wait;
          if (moved > longest.wait_ns) {
            longest = CopyWait{};
            longest.wait_ns = moved;
            longest.copy_enter_ns = call->enter_ns;
            longest.bytes = next.bytes;
            longest.thread_id = call->thread_id;
            longest.copy_api_name_id = call->api_name_id;
            longest.stream_wait_ns = wait->second.start_ns;
            longest.wait_api_name_id = wait->second.api_name_id;
            std::optional<EventRecordCall> record = wait->second.record_before;
            const auto named = wait->second.correlation_id != 0 ? wait_events_.find(wait->second.correlation_id)
                                                                : wait_events_.end();
            if (named != wait_events_.end()) {
              // The source named the event: its record, in the window or not, not the latest one.
              longest.event_named = true;
              longest.event_record_correlation_id = named->second.record_correlation_id;
              longest.event_record_stream = named->second.stream;
              const auto found = event_record_calls_.find(named->second.record_correlation_id);
              record = found != event_record_calls_.end() ? std::optional<EventRecordCall>(found->second) : std::nullopt;
            }
            if (record) {
              longest.event_record_seen = true;
              longest.event_record_ns = record->start_ns;
              longest.event_record_thread = record->thread_id;
              longest.event_record_api_name_id = record->api_name_id;
            }
          }
        }
      }
    }
  } else if (queued_by_.probablyExpired(next.correlation_id)) {
    causes[causeIndex(IdleCause::kDependency)] = length;  // queued long ago: it waited on something
  } else {
    // No call known: no thread to look at, so the gap is what a thread in no call would make it,
    // and what the host did is unknown.
    const IdleCause outside = length < options_.launch_threshold_ns ? IdleCause::kLaunchOverhead : IdleCause::kHostCpu;
    causes[causeIndex(outside)] = length;
    if (outside == IdleCause::kHostCpu) gap.host_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] = length;
  }
}

void DeviceIdleStage::splitByThread(DeviceState& device, uint32_t thread_id, IdleGap& gap) {
  const uint64_t g0 = gap.start_ns, g1 = gap.end_ns;
  std::array<uint64_t, kIdleCauseCount>& causes = gap.by_cause_ns;
  std::vector<Edge>& edges = edges_;
  edges.clear();
  if (const RingQueue<CallSpan>* found = thread_calls_.find(thread_id)) {
    const RingQueue<CallSpan>& calls = *found;
    // max_exit_ns never decreases along the queue: the first call that may reach past g0.
    std::size_t lo = 0, hi = calls.size();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (g0 < calls[mid].max_exit_ns) hi = mid;
      else lo = mid + 1;
    }
    for (std::size_t i = lo; i < calls.size() && calls[i].enter_ns < g1; ++i) {
      const CallSpan& c = calls[i];
      const uint64_t a = std::max(c.enter_ns, g0);
      const uint64_t b = std::min(c.exit_ns, g1);
      if (a >= b) continue;
      edges.push_back({a, c.category, +1, &c});
      edges.push_back({b, c.category, -1, &c});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.t < y.t; });
  const IdleCause outside = g1 - g0 < options_.launch_threshold_ns ? IdleCause::kLaunchOverhead : IdleCause::kHostCpu;
  std::array<int, kCallCategoryCount> active{};
  int active_warmup = 0;
  int active_sync = 0;
  const CallSpan* warmup_call = nullptr;  // the warm-up call that covered most of the gap
  uint64_t warmup_call_ns = 0;
  uint64_t cursor = g0;
  std::size_t e = 0;
  while (cursor < g1) {
    while (e < edges.size() && edges[e].t <= cursor) {
      active[static_cast<std::size_t>(edges[e].category)] += edges[e].delta;
      if (edges[e].call->sync) active_sync += edges[e].delta;
      if (edges[e].call->warmup) {
        active_warmup += edges[e].delta;
        const uint64_t covered = std::min(edges[e].call->exit_ns, g1) - std::max(edges[e].call->enter_ns, g0);
        if (edges[e].delta > 0 && covered > warmup_call_ns) {
          warmup_call = edges[e].call;
          warmup_call_ns = covered;
        }
      }
      ++e;
    }
    const uint64_t next_edge = e < edges.size() ? edges[e].t : g1;
    std::size_t category = 0;
    while (category < kCallCategoryCount && active[category] == 0) ++category;
    const IdleCause cause = category < kCallCategoryCount ? kCauseOfCategory[category] : outside;
    causes[causeIndex(cause)] += next_edge - cursor;
    // Time inside a call that loads code or sets a library up is warm-up, whatever the call's
    // category made it (a module load is cuda_api, a capture inside a launch launch_overhead).
    if (active_warmup > 0 && cause != IdleCause::kHostCpu) gap.warmup_by_cause_ns[causeIndex(cause)] += next_edge - cursor;
    if (active_sync > 0 && cause == IdleCause::kCudaApi) gap.cuda_api_in_syncs_ns += next_edge - cursor;
    if (cause == IdleCause::kHostCpu) splitHost(device, thread_id, cursor, next_edge, gap);
    cursor = next_edge;
  }
  if (warmup_call && gap.warmup_api_name_id == 0) gap.warmup_api_name_id = warmup_call->api_name_id;
}

namespace {

// The first range of a queue whose max_end_ns passes `t`: every earlier one ended by then.
template <typename Queue>
std::size_t firstReaching(const Queue& spans, uint64_t t) {
  std::size_t lo = 0, hi = spans.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (t < spans[mid].max_end_ns) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

}  // namespace

void DeviceIdleStage::noteFirstLaunch(DeviceState& device, IdleGap& gap, const DeviceActivityEvent& next) {
  // Only a launch call that itself held the gap for a millisecond or more: a launch returns in
  // microseconds unless it loads the kernel's module (lazy loading) or JIT-compiles it. Its own
  // time is the evidence; a gap of data loading before a kernel's first launch is not.
  const std::size_t launch = causeIndex(IdleCause::kLaunchOverhead);
  if (next.kind != v1::ACTIVITY_KIND_KERNEL || gap.by_cause_ns[launch] < kLongGapNs) return;
  if (next.name_id >= kMaxNameBits) return;
  const std::vector<bool>& seen = device.kernel_names_seen;
  if (next.name_id < seen.size() && seen[next.name_id]) return;
  gap.warmup_by_cause_ns[launch] = gap.by_cause_ns[launch];
  gap.warmup_first_launch = true;
}

uint64_t DeviceIdleStage::oneTimeIdle(const IdleGap& gap, bool first_run) {
  const uint64_t length = gap.end_ns - gap.start_ns;
  uint64_t warm = 0;
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) warm += std::min(gap.warmup_by_cause_ns[c], gap.by_cause_ns[c]);
  // An op's first call that sets a library up (cuDNN's handles and workspace: a long cudaFree
  // inside the first convolution) shows as CUDA calls holding the gap before a kernel never run
  // before. The calls' own time is the evidence; host time before a first kernel is not.
  uint64_t setup = 0;
  if (first_run) {
    const uint64_t in_calls = gap.by_cause_ns[causeIndex(IdleCause::kCudaApi)] +
                              gap.by_cause_ns[causeIndex(IdleCause::kLaunchOverhead)];
    if (in_calls * 2 >= length) setup = in_calls;
  }
  return std::min(length, std::max(warm, setup));
}

const DeviceIdleStage::FirstPassMark* DeviceIdleStage::firstPassEnd(const DeviceState& device,
                                                                    uint64_t window_end_ns) {
  // The latest mark that (a) begins in the window's first half (a first pass is the start of a
  // run, not most of it), (b) leaves at most a quarter as much one-time idle after it as up to it
  // (the run settled: what recurs later is the steady state's warm-up, recompiles), and (c) whose
  // one-time idle is at least a quarter of the first pass's idle (one slow first launch late in a
  // long run does not make everything before it a first pass).
  const uint64_t start = device.result.window_start_ns;
  if (window_end_ns <= start) return nullptr;
  const uint64_t half = start + (window_end_ns - start) / 2;
  const uint64_t total = device.result.one_time_ns;
  for (auto it = device.first_pass_marks.rbegin(); it != device.first_pass_marks.rend(); ++it) {
    if (it->gap_start_ns >= half) continue;
    const DeviceAnalysis& c = it->counters;
    const uint64_t after = total - c.one_time_ns;
    const uint64_t idle = (c.window_end_ns - start) - c.busy_ns;
    if (after * 4 > c.one_time_ns || c.one_time_ns * 4 < idle) continue;
    // Then on through the marks that follow while the stretch to each is mostly one-time idle
    // (one cold pass through a model: each op's first call allocates and sets up in turn, past
    // the window's first half). A stretch of ordinary work between two marks ends it.
    const FirstPassMark* end = &*it;
    for (auto next = it.base(); next != device.first_pass_marks.end(); ++next) {
      const uint64_t stretch = next->counters.window_end_ns - end->counters.window_end_ns;
      if ((next->counters.one_time_ns - end->counters.one_time_ns) * 2 < stretch) break;
      end = &*next;
    }
    return end;
  }
  return nullptr;
}

void DeviceIdleStage::splitHost(DeviceState& device, uint32_t thread_id, uint64_t a, uint64_t b, IdleGap& gap) {
  std::array<uint64_t, kHostPartCount>& parts = gap.host_by_part_ns;
  constexpr std::size_t kInput = static_cast<std::size_t>(HostPart::kInputPipeline);
  constexpr std::size_t kFramework = static_cast<std::size_t>(HostPart::kFramework);
  constexpr std::size_t kOther = static_cast<std::size_t>(HostPart::kOther);
  if (!host_ranges_seen_) {
    if (RingQueue<SampleSpan>* samples = samples_seen_ ? thread_samples_.find(thread_id) : nullptr) {
      return splitBySamples(device, *samples, a, b, gap);
    }
    parts[static_cast<std::size_t>(HostPart::kUnknown)] += b - a;  // nothing says what the host did
    return;
  }
  host_spans_.clear();
  host_edges_.clear();
  for (const auto* queues : {&thread_ops_, &thread_ranges_}) {
    const RingQueue<HostSpan>* spans = queues->find(thread_id);
    if (!spans) continue;
    for (std::size_t i = firstReaching(*spans, a); i < spans->size() && (*spans)[i].start_ns < b; ++i) {
      const HostSpan& s = (*spans)[i];
      if (s.end_ns <= a) continue;
      const uint32_t index = static_cast<uint32_t>(host_spans_.size());
      host_spans_.push_back(&s);
      host_edges_.push_back({std::max(s.start_ns, a), index, +1});
      host_edges_.push_back({std::min(s.end_ns, b), index, -1});
    }
  }
  std::sort(host_edges_.begin(), host_edges_.end(), [](const HostEdge& x, const HostEdge& y) { return x.t < y.t; });
  // Per HostRangeKind (1..3): how many ranges are open, and the one opened last (the innermost
  // where they nest), whose name the time goes under.
  std::array<int, 4> open{};
  std::array<const HostSpan*, 4> last{};
  int open_warmup = 0;  // open torch.compile ranges: their time is warm-up (reader/warmup_names.h)
  uint64_t cursor = a;
  std::size_t e = 0;
  while (cursor < b) {
    while (e < host_edges_.size() && host_edges_[e].t <= cursor) {
      const HostSpan* s = host_spans_[host_edges_[e].span];
      const std::size_t kind = static_cast<std::size_t>(s->kind);  // 1..3: onHostRange keeps no other
      open[kind] += host_edges_[e].delta;
      if (host_edges_[e].delta > 0) last[kind] = s;
      if (s->warmup) {
        open_warmup += host_edges_[e].delta;
        if (host_edges_[e].delta > 0 && gap.warmup_range_name_id == 0) gap.warmup_range_name_id = s->name_id;
      }
      ++e;
    }
    const uint64_t next = e < host_edges_.size() ? host_edges_[e].t : b;
    // The innermost open range of a kind: the last one opened, if still open, else the open one
    // that started latest (ranges that do not nest, seldom).
    const auto innermost = [&](std::size_t kind) -> uint32_t {
      if (open[kind] <= 0) return 0;
      if (last[kind] && last[kind]->start_ns <= cursor && last[kind]->end_ns > cursor) return last[kind]->name_id;
      const HostSpan* best = nullptr;
      for (const HostSpan* s : host_spans_) {
        if (static_cast<std::size_t>(s->kind) == kind && s->start_ns <= cursor && s->end_ns > cursor &&
            (!best || s->start_ns > best->start_ns)) {
          best = s;
        }
      }
      return best ? best->name_id : 0;
    };
    std::size_t part = kOther;
    uint32_t name = 0;
    if (open[v1::HOST_RANGE_KIND_INPUT_PIPELINE] > 0) {
      part = kInput;
      name = innermost(v1::HOST_RANGE_KIND_INPUT_PIPELINE);
    } else if (open[v1::HOST_RANGE_KIND_FRAMEWORK_OP] > 0) {
      part = kFramework;
      name = innermost(v1::HOST_RANGE_KIND_FRAMEWORK_OP);
    } else {
      name = innermost(v1::HOST_RANGE_KIND_ANNOTATION);
    }
    parts[part] += next - cursor;
    if (open_warmup > 0) {
      gap.warmup_host_by_part_ns[part] += next - cursor;
      gap.warmup_by_cause_ns[causeIndex(IdleCause::kHostCpu)] += next - cursor;
    }
    device.part_names[part][name] += next - cursor;
    cursor = next;
  }
}

void DeviceIdleStage::splitBySamples(DeviceState& device, RingQueue<SampleSpan>& spans, uint64_t a, uint64_t b,
                                     IdleGap& gap) {
  std::array<uint64_t, kHostPartCount>& parts = gap.host_by_part_ns;
  constexpr std::size_t kUnknown = static_cast<std::size_t>(HostPart::kUnknown);
  // Spans are disjoint and in order, so their ends rise: the first that reaches past a.
  std::size_t lo = 0, hi = spans.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (a < spans[mid].end_ns) hi = mid;
    else lo = mid + 1;
  }
  const uint64_t device_bit = uint64_t{1} << std::min<uint32_t>(device.result.device, 63);
  uint64_t cursor = a;
  for (std::size_t i = lo; i < spans.size() && spans[i].start_ns < b; ++i) {
    SampleSpan& span = spans[i];
    const uint64_t from = std::max(span.start_ns, a), to = std::min(span.end_ns, b);
    if (from >= to) continue;
    if (from > cursor) parts[kUnknown] += from - cursor;  // between samples' reach
    cursor = to;
    if (span.class_index == kUnreadSample) {
      parts[kUnknown] += to - from;  // sampled, but what it held is not known
      continue;
    }
    const SampleClass& c = sample_classes_[span.class_index];
    const std::size_t part = static_cast<std::size_t>(c.part);
    parts[part] += to - from;
    device.part_names[part][c.label_id] += to - from;
    if (c.warmup) {
      gap.warmup_host_by_part_ns[part] += to - from;
      gap.warmup_by_cause_ns[causeIndex(IdleCause::kHostCpu)] += to - from;
      if (gap.warmup_sample_label_id == 0) gap.warmup_sample_label_id = c.warmup_label_id;
    }
    if ((span.devices_counted & device_bit) == 0) {
      span.devices_counted |= device_bit;
      ++device.python_samples;
    }
  }
  if (cursor < b) parts[kUnknown] += b - cursor;
}

void DeviceIdleStage::noteFinisher(DeviceState& device, const DeviceActivityEvent& activity, const QueuingCall* call) {
  // Called before the frontier moves: an activity that ends past it starts a new set of
  // finishers, one that ends exactly on it joins the set.
  if (activity.end_ns < device.covered_until_ns) return;
  if (activity.end_ns > device.covered_until_ns) {
    device.finishers.clear();
    device.empty_after_frontier.clear();
  }
  if (device.finishers.size() >= kMaxFinishers) return;
  device.finishers.push_back({activity.stream, activity.correlation_id, call ? call->enter_ns : 0});
}

void DeviceIdleStage::noteSyncRecord(const DeviceActivityEvent& record) {
  if (record.sync_kind == v1::SYNC_KIND_STREAM_WAIT_EVENT && record.correlation_id != 0 &&
      record.event_record_correlation_id != 0) {
    if (wait_events_.size() >= kMaxCopiesAfterWait) wait_events_.clear();
    wait_events_[record.correlation_id] = {record.event_record_correlation_id, record.event_record_stream};
    return;
  }
  // CUPTI's SYNCHRONIZATION record of a stream sync names the stream the call did not record.
  if (record.sync_kind != v1::SYNC_KIND_STREAM_SYNCHRONIZE || record.correlation_id == 0) return;
  for (auto it = blocked_calls_.rbegin(); it != blocked_calls_.rend(); ++it) {
    if (it->correlation_id != record.correlation_id) continue;
    it->stream = record.stream;
    it->stream_known = true;
    return;
  }
}

bool DeviceIdleStage::waitedFor(const BlockedCall& call, uint64_t stream, uint64_t correlation_id,
                                uint64_t queued_ns) {
  if (call.waits_own_work) return correlation_id != 0 && correlation_id == call.correlation_id;
  if (call.stream_known && stream != call.stream) return false;
  return queued_ns < call.enter_ns;  // queued before the call began to wait (0: not known, yes)
}

const DeviceIdleStage::BlockedCall* DeviceIdleStage::drainingSync(const DeviceState& device, uint64_t g0,
                                                                  uint64_t g1,
                                                                  const DeviceActivityEvent& next,
                                                                  const QueuingCall* next_call) const {
  const uint64_t next_queued_ns = next_call ? next_call->enter_ns : 0;
  const BlockedCall* first_back = nullptr;
  for (const BlockedCall& call : blocked_calls_) {
    if (call.enter_ns >= g1) break;  // in entry order: the rest entered later still
    if (call.exit_ns < g0) continue;
    // A call that entered on an idle device waited for nothing: it drained no queue.
    if (call.enter_ns >= g0) continue;
    bool drained = false;
    for (const Finisher& f : device.finishers) {
      if (waitedFor(call, f.stream, f.correlation_id, f.queued_ns)) drained = true;
    }
    for (const Finisher& z : device.empty_after_frontier) {
      if (waitedFor(call, z.stream, z.correlation_id, z.queued_ns)) drained = false;
    }
    if (!drained) continue;
    // Still blocked when the device resumed: only if it did not wait for that work too.
    if (call.exit_ns >= g1 &&
        (next_call == nullptr || waitedFor(call, next.stream, next.correlation_id, next_queued_ns))) {
      continue;
    }
    if (!first_back || call.exit_ns < first_back->exit_ns) first_back = &call;
  }
  return first_back;
}

void DeviceIdleStage::noteHtaInterval(DeviceState& device, const DeviceActivityEvent& activity,
                                      const QueuingCall* call) {
  if (!device.last_stream || device.last_stream_id != activity.stream) {
    device.last_stream = &device.streams[activity.stream];  // map nodes do not move
    device.last_stream_id = activity.stream;
  }
  StreamState& stream = *device.last_stream;
  stream.idle.stream = activity.stream;
  if (stream.has_previous && activity.start_ns > stream.previous_end_ns) {
    const uint64_t interval = activity.start_ns - stream.previous_end_ns;
    if (call && call->enter_ns > stream.previous_end_ns) {
      stream.idle.host_wait_ns += interval;  // the host had not queued it yet
    } else if (interval < options_.hta_consecutive_kernel_delay_ns) {
      stream.idle.kernel_wait_ns += interval;
    } else {
      stream.idle.other_ns += interval;
    }
  }
  // The latest end so far: on one stream that is the previous activity's, except where graph
  // branches reported on one stream overlap.
  stream.previous_end_ns = stream.has_previous ? std::max(stream.previous_end_ns, activity.end_ns) : activity.end_ns;
  stream.has_previous = true;
}

bool DeviceIdleStage::wouldKeep(const DeviceState& device, const IdleGap& gap) const {
  if (options_.top_n == 0) return false;
  return device.longest.size() < options_.top_n || keepsBetter(gap, device.longest.front());
}

void DeviceIdleStage::keepLongest(DeviceState& device, const IdleGap& gap) {
  std::vector<IdleGap>& heap = device.longest;
  if (options_.top_n == 0) return;
  if (heap.size() < options_.top_n) {
    heap.push_back(gap);
    std::push_heap(heap.begin(), heap.end(), keepsBetter);
  } else if (keepsBetter(gap, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), keepsBetter);
    heap.back() = gap;
    std::push_heap(heap.begin(), heap.end(), keepsBetter);
  }
}

void DeviceIdleStage::advance(uint64_t now_ns) {
  now_ns_ = std::max(now_ns_, now_ns);
  if (++events_since_prune_ >= kPruneEvery) prune();
}

uint64_t DeviceIdleStage::horizon() const {
  // Every later gap of a device starts at or after its busy frontier; a device not seen yet opens
  // no gap with its first activity, which starts at or after now.
  uint64_t h = now_ns_;
  for (const DeviceState* device : device_list_) {
    if (device->any_activity) h = std::min(h, device->covered_until_ns);
  }
  if (now_ns_ > kMaxLookbackNs) h = std::max(h, now_ns_ - kMaxLookbackNs);
  return h;
}

void DeviceIdleStage::prune() {
  events_since_prune_ = 0;
  const uint64_t h = horizon();
  thread_calls_.eraseWhere([h](uint64_t, RingQueue<CallSpan>& calls) {
    while (!calls.empty() && calls.front().exit_ns <= h) calls.pop_front();
    return calls.empty();
  });
  // Not only from the front: one range around the whole run (an epoch annotation) would hold every
  // later one behind it, and keep max_end_ns high so that splitHost scans them all.
  const auto prune_spans = [h](uint64_t, RingQueue<HostSpan>& spans) {
    uint64_t max_end = 0;
    spans.eraseIf([h](const HostSpan& s) { return s.end_ns <= h; },
                  [&max_end](HostSpan& s) { s.max_end_ns = max_end = std::max(max_end, s.end_ns); });
    return spans.empty();
  };
  thread_ops_.eraseWhere(prune_spans);
  thread_ranges_.eraseWhere(prune_spans);
  thread_samples_.eraseWhere([h](uint64_t, RingQueue<SampleSpan>& spans) {
    while (!spans.empty() && spans.front().end_ns <= h) spans.pop_front();
    return spans.empty();
  });
  while (!blocked_calls_.empty() && !blocked_calls_.front().open && blocked_calls_.front().exit_ns < h) {
    blocked_calls_.pop_front();
  }
  queued_by_.expire(now_ns_);
}

std::size_t DeviceIdleStage::heldCalls() const {
  std::size_t n = blocked_calls_.size() + queued_by_.size();
  thread_calls_.forEach([&n](uint64_t, const RingQueue<CallSpan>& calls) { n += calls.size(); });
  thread_ops_.forEach([&n](uint64_t, const RingQueue<HostSpan>& spans) { n += spans.size(); });
  thread_ranges_.forEach([&n](uint64_t, const RingQueue<HostSpan>& spans) { n += spans.size(); });
  thread_samples_.forEach([&n](uint64_t, const RingQueue<SampleSpan>& spans) { n += spans.size(); });
  return n;
}

void DeviceIdleStage::finish() { prune(); }

void DeviceIdleStage::write(ProcessAnalysis& result) const {
  if (!facts_.device_timeline) return;
  for (auto& [id, device] : devices_) {
    DeviceAnalysis r = device.result;
    if (device.any_activity) {
      r.window_end_ns = device.covered_until_ns;
      const uint64_t window = r.window_end_ns - r.window_start_ns;
      r.idle_ns = window - r.busy_ns;
      r.idle_fraction = window ? static_cast<double>(r.idle_ns) / static_cast<double>(window) : 0.0;
      const uint64_t reference = facts_.process_start_ns;
      r.leading_ns = reference != 0 && r.window_start_ns > reference ? r.window_start_ns - reference : 0;
    }
    // A window that never settles (most of its kernels ran there for the first time: one cold pass
    // through a model) is a first pass whole, where it holds one-time evidence at all.
    // So is one whose steady state would be a tenth of it or less: too little to call a steady state.
    bool unsettled = device.any_activity && r.one_time_ns > 0 && r.first_runs * 2 > r.kernels;
    const FirstPassMark* mark = device.any_activity && !unsettled ? firstPassEnd(device, r.window_end_ns) : nullptr;
    if (mark && (r.window_end_ns - mark->counters.window_end_ns) * 10 <= r.window_end_ns - r.window_start_ns) {
      mark = nullptr;
      unsettled = true;
    }
    if (mark || unsettled) {
      auto first = std::make_shared<DeviceAnalysis>(mark ? mark->counters : device.result);
      if (!mark) first->window_end_ns = r.window_end_ns;
      first->window_start_ns = r.window_start_ns;
      first->leading_ns = r.leading_ns;
      first->idle_ns = (first->window_end_ns - first->window_start_ns) - first->busy_ns;
      first->idle_fraction = static_cast<double>(first->idle_ns) /
                             static_cast<double>(first->window_end_ns - first->window_start_ns);
      r.first_pass = std::move(first);
    }
    for (const auto& [stream_id, stream] : device.streams) r.streams.push_back(stream.idle);
    r.longest_gaps = device.longest;
    r.host_evidence = host_ranges_seen_         ? HostEvidence::kTraceHostEvents
                      : device.python_samples > 0 ? HostEvidence::kPythonSamples
                                                  : HostEvidence::kNone;
    r.python_samples = device.python_samples;
    for (std::size_t p = 0; p < kHostPartCount; ++p) {
      std::vector<HostLabel>& labels = r.host_part_labels[p];
      for (const auto& [name_id, ns] : device.part_names[p]) labels.push_back({labelText(name_id), ns});
      std::sort(labels.begin(), labels.end(), [](const HostLabel& x, const HostLabel& y) {
        return x.ns != y.ns ? x.ns > y.ns : x.name < y.name;
      });
      if (labels.size() > options_.top_n) labels.resize(options_.top_n);
    }
    std::sort(r.longest_gaps.begin(), r.longest_gaps.end(), keepsBetter);
    for (IdleGap& gap : r.longest_gaps) nameNeighbours(gap);
    if (CopyWait& w = r.longest_copy_wait; w.wait_ns > 0 && strings_) {
      const auto name = [&](uint32_t id) {
        return id != 0 ? strings_->display(v1::STRING_KIND_API_NAME, id) : std::string();
      };
      w.copy_api_name = name(w.copy_api_name_id);
      w.wait_api_name = name(w.wait_api_name_id);
      w.event_record_api_name = name(w.event_record_api_name_id);
    }
    r.long_host_gap_sites = longHostGapSites(id);
    result.devices.push_back(std::move(r));
  }
}

}  // namespace gapwatch::analysis
