// analysis/hta_view.cpp: see hta_view.h.
#include "analysis/hta_view.h"

#include "reader/api_name.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace gapwatch::analysis {
namespace {

// Calls whose work has not shown up by then are forgotten: as long as the other stages keep them
// (the idle attribution's queue age), so a deep queue still joins.
constexpr uint64_t kCallMaxAgeNs = 10'000'000'000ull;
// How long GPU work that started before its call waits for it (clock skew between CPU and GPU
// timestamps is microseconds to milliseconds).
constexpr uint64_t kAwaitCallNs = 1'000'000'000ull;

// HTA's times, as its parser makes them (hta/common/trace_parser.py, round_down_time_stamps): in
// float64, end = ts + dur, then ts = ceil(ts) and end = floor(end). At an absolute timestamp of
// 1.7e15 us a float64 holds a quarter of a microsecond, so the end is rounded to that before it is
// floored: [505583.0, +4.928) ends at 505588, not 505587 (HTA's ns_resolution trace: exact
// rounding gave 2.94 % idle where HTA gives 2.63 %). A time's double is the nearest one to its
// decimal value, as the JSON parser makes it: whole microseconds exactly (below 2^53), the
// fraction added in one rounding.
double usDouble(uint64_t ns) { return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0; }
int64_t ceilUs(uint64_t ns) { return static_cast<int64_t>(std::ceil(usDouble(ns))); }
int64_t floorEndUs(uint64_t start_ns, uint64_t end_ns) {
  return static_cast<int64_t>(std::floor(usDouble(start_ns) + usDouble(end_ns - start_ns)));
}

// HTA's round(x, 2) of a percentage.
double round2(double x) { return std::round(x * 100.0) / 100.0; }

// Calls that never have a GPU record of their own (allocations, polls, event records, module
// loads, capture bounds) are not kept for the join: they are many of a trace's calls. Every other
// call is, unknown ones too: HTA joins whatever call carries a record's id.
bool mayHaveGpuRecord(v1::ApiKind kind) {
  switch (kind) {
    case v1::API_KIND_QUERY:
    case v1::API_KIND_EVENT_RECORD:
    case v1::API_KIND_MALLOC:
    case v1::API_KIND_FREE:
    case v1::API_KIND_HOST_ALLOC:
    case v1::API_KIND_HOST_FREE:
    case v1::API_KIND_MODULE_LOAD:
    case v1::API_KIND_CAPTURE_BEGIN:
    case v1::API_KIND_CAPTURE_END: return false;
    default: return true;
  }
}

}  // namespace

const char* htaReleaseName(HtaRelease release) { return release == HtaRelease::k0_5_0 ? "0.5.0" : "0.6.1"; }

HtaViewStage::HtaViewStage(const AnalysisOptions& options)
    : options_(options), call_max_age_ns_(std::max(options.reorder_window_ns, kCallMaxAgeNs)) {}

bool HtaViewStage::launchStatName(uint32_t api_name_id) {
  if (api_name_id < api_name_launch_.size() && api_name_launch_[api_name_id] >= 0) {
    return api_name_launch_[api_name_id] == 1;
  }
  const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_API_NAME, api_name_id) : nullptr;
  if (name == nullptr) return false;  // not defined yet: ask again next time
  const std::string_view n = withoutApiVersionSuffix(*name);  // exact names otherwise, as HTA
  const bool yes = n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" || n == "cudaMemcpyAsync" ||
                   n == "cudaMemsetAsync";
  if (api_name_id >= api_name_launch_.size()) api_name_launch_.resize(api_name_id + 1, -1);
  api_name_launch_[api_name_id] = yes ? 1 : 0;
  return yes;
}

HtaKernelClass HtaViewStage::kernelClass(uint32_t name_id) {
  if (name_id < kernel_class_.size() && kernel_class_[name_id] >= 0) {
    return static_cast<HtaKernelClass>(kernel_class_[name_id]);
  }
  const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_KERNEL_NAME, name_id) : nullptr;
  // A kernel without a name matches none of HTA's patterns: computation.
  const HtaKernelClass cls = htaKernelClass(name ? std::string_view(*name) : std::string_view(), options_.hta_release);
  if (name != nullptr) {
    if (name_id >= kernel_class_.size()) kernel_class_.resize(name_id + 1, -1);
    kernel_class_[name_id] = static_cast<int8_t>(cls);
  }
  return cls;
}

void HtaViewStage::onApiCall(const ApiCallEvent& call) {
  // Forget calls older than the age limit (they come in order of entry).
  while (!call_ages_.empty() && call_ages_.front().first + call_max_age_ns_ < call.start_ns) {
    calls_.erase(call_ages_.front().second);
    call_ages_.pop_front();
  }
  stopAwaiting(call.start_ns, false);
  if (call.correlation_id == 0 || !mayHaveGpuRecord(call.kind)) return;
  CallTimes times;
  times.graph_launch = call.kind == v1::API_KIND_GRAPH_LAUNCH;
  times.start_us = ceilUs(call.start_ns);
  times.end_us = floorEndUs(call.start_ns, std::max(call.end_ns, call.start_ns));
  times.launch_stat = launchStatName(call.api_name_id);
  // Of two calls with one id (a driver call inside a runtime call), the first, outer one stays.
  if (!calls_.tryEmplace(call.correlation_id, times).second) return;
  call_ages_.push_back({call.start_ns, call.correlation_id});
  if (const AwaitingChain* chain = awaiting_.find(call.correlation_id)) {
    uint64_t seq = chain->first;
    awaiting_.erase(call.correlation_id);
    while (seq != kNoNext) {
      Work& work = held_[seq - held_popped_];
      seq = work.next_awaiting;
      work.next_awaiting = kNoNext;
      work.awaiting_call = false;
      work.has_call = true;
      work.call = times;
      if (any_step_ && work.call.start_us < last_step_start_us_) work.fate = Fate::kKept;
    }
    release();
  }
}

void HtaViewStage::settleWithoutCall(Work& work) const {
  // HTA joins GPU work to the CPU calls it keeps, and so drops work without a call, but only when
  // the trace has two or more steps: with fewer it filters nothing (HTA 0.5.0 and 0.6.1 as
  // released; `_filter_irrelevant_gpu_kernels` returns early). So such work waits for the second
  // step (dropped) or the end (kept).
  work.awaiting_call = false;
  work.has_call = false;
  if (distinct_steps_) work.fate = Fate::kDropped;
}

void HtaViewStage::stopAwaiting(uint64_t now_ns, bool all) {
  bool settled = false;
  while (!awaiting_order_.empty() && (all || awaiting_order_.front().first + kAwaitCallNs < now_ns)) {
    uint64_t seq = awaiting_order_.front().second;
    awaiting_order_.pop_front();
    if (seq < held_popped_) continue;
    if (!held_[seq - held_popped_].awaiting_call) continue;  // its call came
    awaiting_.erase(held_[seq - held_popped_].correlation_id);
    // The whole chain: the records after the first await the same call.
    while (seq != kNoNext) {
      Work& work = held_[seq - held_popped_];
      seq = work.next_awaiting;
      work.next_awaiting = kNoNext;
      settleWithoutCall(work);
    }
    settled = true;
  }
  if (settled) release();
}

void HtaViewStage::decide(Work& work, int64_t cut_start_us) const {
  // Called when a step begins at cut_start_us. Whatever the last step turns out to be, it begins
  // at or after this one, so work whose call began before it is kept under every rule.
  if (work.fate != Fate::kPending || work.awaiting_call) return;
  if (!work.has_call) {
    // Only HTA 0.5.0 holds work without a call, until the trace proves to have two steps.
    if (distinct_steps_) work.fate = Fate::kDropped;
  } else if (work.call.start_us < cut_start_us) {
    work.fate = Fate::kKept;
  }
}

void HtaViewStage::onActivity(const DeviceActivityEvent& activity) {
  stopAwaiting(activity.start_ns, false);
  const CallTimes* call = calls_.find(activity.correlation_id);
  Work work;
  work.correlation_id = activity.correlation_id;
  work.start_us = ceilUs(activity.start_ns);
  // A record shorter than a microsecond can round to an end before its start: [20.2, 20.7) is
  // [21, 20). HTA keeps that length of -1 in every sum (merged intervals, idle per stream, launch
  // GPU time), and so does this view; newer Kineto's ns timestamps make such records common.
  work.end_us = floorEndUs(activity.start_ns, std::max(activity.end_ns, activity.start_ns));
  work.stream = static_cast<int64_t>(activity.stream);
  work.sync_record = activity.kind == v1::ACTIVITY_KIND_SYNC;
  switch (activity.kind) {
    case v1::ACTIVITY_KIND_MEMCPY:
    case v1::ACTIVITY_KIND_MEMSET: work.cls = HtaKernelClass::kMemory; break;
    case v1::ACTIVITY_KIND_SYNC:
      // By the name Kineto gives the record: "Stream Wait Event" is computation under HTA
      // 0.5.0's patterns; "Stream Sync", "Context Sync", "Event Sync" are other under both.
      work.cls = activity.sync_kind == v1::SYNC_KIND_STREAM_WAIT_EVENT
                     ? htaKernelClass("Stream Wait Event", options_.hta_release)
                     : HtaKernelClass::kOther;
      break;
    default: work.cls = kernelClass(activity.name_id); break;
  }
  if (call != nullptr) {
    // The call stays until it ages out: a graph launch's id is on every kernel of the graph, and
    // HTA joins every record that carries a call's id, however many there are.
    work.call = *call;
    if (any_step_ && work.call.start_us < last_step_start_us_) work.fate = Fate::kKept;
  } else if (activity.correlation_id != 0) {
    const uint64_t seq = held_popped_ + held_.size();
    work.awaiting_call = true;
    if (AwaitingChain* chain = awaiting_.find(activity.correlation_id)) {
      held_[chain->last - held_popped_].next_awaiting = seq;
      chain->last = seq;
    } else {
      awaiting_.tryEmplace(activity.correlation_id, AwaitingChain{seq, seq});
      awaiting_order_.push_back({activity.start_ns, seq});
    }
  } else {
    settleWithoutCall(work);
  }
  if (work.fate == Fate::kDropped && held_.empty()) {
    ++dropped_;
    return;
  }
  held_.push_back(work);
  release();
}

void HtaViewStage::onMarker(const MarkerEvent& marker) {
  if (marker.kind != v1::MARKER_KIND_STEP_BEGIN) return;
  ++steps_;
  if (!any_step_) {
    first_step_ = marker.step;
  } else if (marker.step != first_step_ || first_step_ == 0) {
    // Kineto's ProfilerStep#N are numbered; a recorder's markers without numbers (0) are taken as
    // distinct steps.
    distinct_steps_ = true;
  }
  any_step_ = true;
  last_step_start_us_ = ceilUs(marker.time_ns);
  for (std::size_t i = 0; i < held_.size(); ++i) decide(held_[i], last_step_start_us_);
  release();
}

void HtaViewStage::release() {
  while (!held_.empty() && held_.front().fate != Fate::kPending) {
    ++held_popped_;
    const Work& work = held_.front();
    if (work.fate == Fate::kKept) {
      fold(work);
    } else {
      ++dropped_;
    }
    held_.pop_front();
  }
}

void HtaViewStage::Union::add(int64_t s, int64_t e, RingQueue<std::pair<int64_t, int64_t>>* closed) {
  if (open && s <= end) {
    end = std::max(end, e);
    return;
  }
  close(closed);
  open = true;
  start = s;
  end = e;
}

void HtaViewStage::Union::close(RingQueue<std::pair<int64_t, int64_t>>* closed) {
  if (!open) return;
  total += end - start;
  if (closed != nullptr) closed->push_back({start, end});
  open = false;
}

void HtaViewStage::overlapClosed(bool final) {
  // Both unions close their intervals in order of start, so the two lists are walked like a merge.
  while (!comm_closed_.empty() && !compute_closed_.empty()) {
    const auto a = comm_closed_.front();
    const auto b = compute_closed_.front();
    overlap_us_ += std::max<int64_t>(0, std::min(a.second, b.second) - std::max(a.first, b.first));
    if (a.second <= b.second) {
      comm_closed_.pop_front();
    } else {
      compute_closed_.pop_front();
    }
  }
  if (final) return;
  // An interval of one list that ends before anything the other list can still add starts
  // (its open interval, or the latest start seen) overlaps nothing more.
  const int64_t frontier = last_start_us_;
  const int64_t comm_from = comm_.open ? comm_.start : frontier;
  while (!compute_closed_.empty() && comm_closed_.empty() && compute_closed_.front().second <= comm_from) {
    compute_closed_.pop_front();
  }
  const int64_t compute_from = compute_.open ? compute_.start : frontier;
  while (!comm_closed_.empty() && compute_closed_.empty() && comm_closed_.front().second <= compute_from) {
    // A closed communication interval with no computation left to meet it: whatever overlaps it
    // later must start before its end, and nothing will.
    comm_closed_.pop_front();
  }
}

void HtaViewStage::fold(const Work& work) {
  ++kept_;
  if (!any_kept_) {
    any_kept_ = true;
    first_start_us_ = work.start_us;
  }
  first_start_us_ = std::min(first_start_us_, work.start_us);
  last_end_us_ = std::max(last_end_us_, work.end_us);
  last_start_us_ = std::max(last_start_us_, work.start_us);
  all_.add(work.start_us, work.end_us, nullptr);
  if (work.cls == HtaKernelClass::kComputation) compute_.add(work.start_us, work.end_us, &compute_closed_);
  if (work.cls == HtaKernelClass::kCommunication) comm_.add(work.start_us, work.end_us, &comm_closed_);
  overlapClosed(false);

  if (!work.sync_record) {
    StreamGaps& gaps = streams_[work.stream];
    gaps.idle.stream = work.stream;
    if (gaps.has_prev) {
      // HTA's gap is to the previous piece of work's end on the stream, which may be negative
      // when records overlap; HTA sums it as it is.
      const int64_t interval = work.start_us - gaps.prev_end_us;
      const int64_t delay_us = static_cast<int64_t>(options_.hta_consecutive_kernel_delay_ns / 1000);
      if (work.has_call && work.call.start_us > gaps.prev_end_us) {
        gaps.idle.has_host_wait = true;
        gaps.idle.host_wait_us += interval;
      } else if (interval < delay_us) {
        gaps.idle.has_kernel_wait = true;
        gaps.idle.kernel_wait_us += interval;
      } else {
        gaps.idle.other_us += interval;
      }
    }
    gaps.has_prev = true;
    gaps.prev_end_us = work.end_us;
  }

  if (work.has_call && work.call.launch_stat) {
    ++launches_;
    const int64_t cpu_us = work.call.end_us - work.call.start_us;
    const int64_t gpu_us = work.end_us - work.start_us;
    const int64_t delay_us = std::max<int64_t>(0, work.start_us - work.call.end_us);
    const auto runtime_cutoff = static_cast<int64_t>(options_.hta_runtime_cutoff_ns / 1000);
    const auto delay_cutoff = static_cast<int64_t>(options_.hta_launch_delay_cutoff_ns / 1000);
    if (cpu_us <= runtime_cutoff && gpu_us < cpu_us) ++short_;
    if (cpu_us > runtime_cutoff) ++runtime_outliers_;
    if (delay_us > delay_cutoff) ++delay_outliers_;
    delay_total_us_ += delay_us;
  }
}

void HtaViewStage::finish() {
  // The last rule, now that the number of steps is known (hta/common/trace.py). With two or more
  // distinct steps, work launched at or after the last step's start is left out (the pending
  // work is exactly that). With fewer, HTA keeps everything: both released versions (0.5.0 and
  // 0.6.1, checked live) skip the filter. HTA's later source cuts a one-step trace at the step's
  // end instead; no release does that yet (docs/hta-parity.md, rule 3).
  stopAwaiting(0, true);
  for (std::size_t i = 0; i < held_.size(); ++i) {
    Work& work = held_[i];
    if (work.fate != Fate::kPending) continue;
    work.fate = distinct_steps_ ? Fate::kDropped : Fate::kKept;
  }
  release();
  all_.close(nullptr);
  compute_.close(&compute_closed_);
  comm_.close(&comm_closed_);
  overlapClosed(true);
}

void HtaViewStage::contribute(ProcessAnalysis& result) {
  HtaView view;
  view.profiler_steps = steps_;
  view.release = options_.hta_release;
  view.cut = distinct_steps_ ? "before_last_step_start" : "all";
  view.gpu_events = kept_;
  view.gpu_events_dropped = dropped_;
  if (any_kept_) {
    const int64_t kernel_time = last_end_us_ - first_start_us_;
    const int64_t idle = kernel_time - all_.total;
    view.kernel_time_us = static_cast<uint64_t>(kernel_time);
    view.idle_time_us = static_cast<uint64_t>(std::max<int64_t>(0, idle));
    view.compute_time_us = compute_.total;
    view.non_compute_time_us = static_cast<uint64_t>(std::max<int64_t>(0, kernel_time - compute_.total - idle));
    view.hta_asserts_non_compute = kernel_time - compute_.total - idle < 0;
    if (kernel_time > 0) {
      const auto share = [&](int64_t part) { return round2(100.0 * static_cast<double>(part) / static_cast<double>(kernel_time)); };
      view.idle_time_pctg = share(static_cast<int64_t>(view.idle_time_us));
      view.compute_time_pctg = share(view.compute_time_us);
      view.non_compute_time_pctg = share(static_cast<int64_t>(view.non_compute_time_us));
    }
  }
  for (const auto& [stream, gaps] : streams_) view.idle_breakdown.push_back(gaps.idle);
  view.launches = launches_;
  view.short_kernels = short_;
  view.runtime_outliers = runtime_outliers_;
  view.launch_delay_outliers = delay_outliers_;
  view.mean_launch_delay_us = launches_ > 0 ? static_cast<double>(delay_total_us_) / static_cast<double>(launches_) : 0.0;
  // A communication kernel under a microsecond can make the total -1 (HTA: -0.0 then).
  if (comm_.total != 0) view.comm_comp_overlap_pctg = round2(100.0 * static_cast<double>(overlap_us_) / static_cast<double>(comm_.total));
  result.hta = std::move(view);
}

}  // namespace gapwatch::analysis
