// analysis/sync_stats.cpp: see sync_stats.h.
#include "analysis/sync_stats.h"

#include "analysis/device_idle.h"

#include <algorithm>
#include <vector>

namespace gapwatch::analysis {

namespace {

// How long a call's work may take to show up before the call is forgotten (as device_idle.cpp).
constexpr uint64_t kQueueAgeNs = 10'000'000'000ull;

bool isDeviceWork(v1::ActivityKind kind) {
  return kind == v1::ACTIVITY_KIND_KERNEL || kind == v1::ACTIVITY_KIND_MEMCPY || kind == v1::ACTIVITY_KIND_MEMSET;
}

}  // namespace

SyncStatsStage::SyncStatsStage(const AnalysisOptions& options, const DeviceIdleStage* device_idle)
    : options_(options), device_idle_(device_idle), queued_by_(std::max(options.reorder_window_ns, kQueueAgeNs)) {}

void SyncStatsStage::onApiCall(const ApiCallEvent& call) {
  queued_by_.add(call);
  queued_by_.expire(call.start_ns);
  if (notePoll(call)) return settle(call.start_ns);
  settle(call.start_ns);
  const std::optional<SyncPointKind> kind = classifySyncPoint(call);
  if (!kind) return;
  PendingCall pending;
  pending.call = call;
  pending.kind = *kind;
  pending.waits_own_work = *kind == SyncPointKind::kSyncCopy || *kind == SyncPointKind::kPageableAsyncCopy ||
                           *kind == SyncPointKind::kMemset;
  // The recorder does not record a stream sync's stream (its SYNC record does); a feed that
  // does gives it on the call.
  if (*kind == SyncPointKind::kStreamSync && call.stream != 0) {
    pending.stream_known = true;
    pending.stream = call.stream;
  }
  // Work already seen started before the call entered, so it was queued before: what still ran
  // then is waited for. A copy's own operation starts after its call.
  if (!pending.waits_own_work) pending.waited_until_ns = pending.stream_known ? streamEnd(pending.stream) : latest_end_ns_;
  pending_.push_back(pending);
}

namespace {

// The recorder writes a run of polls of one handle as one record, with the polls in `bytes`.
uint64_t pollsIn(const ApiCallEvent& poll) { return poll.bytes != 0 ? poll.bytes : 1; }

}  // namespace

bool SyncStatsStage::notePoll(const ApiCallEvent& call) {
  PendingCall** open = open_loops_.empty() ? nullptr : open_loops_.find(call.thread_id);
  if (!isPoll(call)) {
    // Any other call of the thread ends its loop: the poll before it saw the work done.
    if (open) {
      (*open)->open = false;
      open_loops_.erase(call.thread_id);
    }
    return false;
  }
  // A poll that returned anything but "not ready" saw the work done: its loop ends there (the
  // recorder writes a run when that poll returns). Left open, a thread that polled once and then
  // stopped calling CUDA would hold every later sync point pending until the end of the run.
  const bool done = pollSawWorkDone(call);
  if (open) {
    (*open)->call.end_ns = std::max((*open)->call.end_ns, call.end_ns);
    (*open)->polls += pollsIn(call);
    if (done) {
      (*open)->open = false;
      open_loops_.erase(call.thread_id);
    }
    return true;
  }
  PendingCall loop;
  loop.call = call;
  loop.kind = SyncPointKind::kQueryPolling;
  loop.polls = pollsIn(call);
  loop.open = !done;
  // Which event or stream is polled is not recorded: the loop waits, like a device sync, for the
  // work queued before its first poll.
  loop.waited_until_ns = latest_end_ns_;
  pending_.push_back(loop);
  if (!done) open_loops_.tryEmplace(call.thread_id, &pending_.back());  // deque elements do not move
  return true;
}

void SyncStatsStage::onActivity(const DeviceActivityEvent& activity) {
  if (activity.kind == v1::ACTIVITY_KIND_SYNC) {
    if (activity.sync_kind != v1::SYNC_KIND_STREAM_SYNCHRONIZE || activity.correlation_id == 0) return;
    for (PendingCall& p : pending_) {
      if (p.call.correlation_id != activity.correlation_id || p.stream_known) continue;
      p.stream_known = true;
      p.stream = activity.stream;
      p.waited_until_ns = streamEnd(activity.stream);  // the record comes right after its call
    }
    return;
  }
  if (!isDeviceWork(activity.kind)) return;
  settle(activity.start_ns);
  const QueuingCall* queued = queued_by_.find(activity.correlation_id);
  for (PendingCall& p : pending_) {
    bool waited;
    if (p.waits_own_work) {
      waited = activity.correlation_id != 0 && activity.correlation_id == p.call.correlation_id;
    } else if (p.stream_known && activity.stream != p.stream) {
      waited = false;
    } else {
      // Queued before the call entered; without its call, work that started before it did.
      waited = queued ? queued->enter_ns < p.call.start_ns : activity.start_ns < p.call.start_ns;
    }
    if (waited) p.waited_until_ns = std::max(p.waited_until_ns, activity.end_ns);
  }
  latest_end_ns_ = std::max(latest_end_ns_, activity.end_ns);
  uint64_t& stream_end = stream_end_ns_[activity.stream];
  stream_end = std::max(stream_end, activity.end_ns);
  queued_by_.matched(activity.correlation_id);
}

uint64_t SyncStatsStage::streamEnd(uint64_t stream) const {
  const auto it = stream_end_ns_.find(stream);
  return it == stream_end_ns_.end() ? 0 : it->second;
}

void SyncStatsStage::settle(uint64_t now_ns) {
  // Events leave the window by start time: once `now_ns` passes a call's exit, every activity
  // that started before it returned, or as it returned, has been seen. Calls are settled in entry order.
  while (!pending_.empty() && !pending_.front().open && pending_.front().call.end_ns < now_ns) {
    count(pending_.front());
    pending_.pop_front();
  }
}

void SyncStatsStage::finish() {
  open_loops_.forEach([](uint64_t, PendingCall* loop) { loop->open = false; });
  open_loops_.clear();
  settle(UINT64_MAX);
}

void SyncStatsStage::count(const PendingCall& pending) {
  const ApiCallEvent& call = pending.call;
  const uint64_t until = facts_.device_timeline ? std::min(pending.waited_until_ns, call.end_ns) : call.end_ns;
  const uint64_t blocked_ns = until > call.start_ns ? until - call.start_ns : 0;
  TypeState& type = types_[static_cast<std::size_t>(pending.kind)];
  ++type.count;
  type.polls += pending.polls;
  if (pending.polls > 0) type.polling_ns += call.end_ns - std::min(call.start_ns, call.end_ns);
  type.total_ns += blocked_ns;
  if (call.copy_kind == v1::COPY_KIND_D2H && call.bytes <= kSmallReadBytes) ++type.small_reads;
  type.durations.add(blocked_ns);
  SiteTotals& site = type.sites[siteKey(call)];
  ++site.count;
  site.total_ns += blocked_ns;
}

void SyncStatsStage::write(ProcessAnalysis& result) const {
  result.sync_points.clear();
  for (std::size_t k = 0; k < kSyncPointKindCount; ++k) {
    const TypeState& type = types_[k];
    SyncTypeStats stats;
    stats.kind = static_cast<SyncPointKind>(k);
    stats.count = type.count;
    stats.total_ns = type.total_ns;
    stats.small_reads = type.small_reads;
    stats.polls = type.polls;
    stats.polling_ns = type.polling_ns;
    stats.p50_ns = type.durations.percentile(50);
    stats.p99_ns = type.durations.percentile(99);
    if (device_idle_) stats.idle_after_ns = device_idle_->idleAfterSync()[k];
    std::vector<CallSite> sites;
    const std::unordered_map<uint64_t, uint64_t>* idle_by_site = device_idle_ ? &device_idle_->idleAfterSyncBySite()[k] : nullptr;
    std::unordered_map<std::string, std::size_t> by_name;
    std::vector<uint64_t> shown_stack_ns;  // per site: the blocked time of the stack it shows
    for (const auto& [key, totals] : type.sites) {
      const std::string name = key == 0 ? std::string(kCallSiteNotRecorded) : siteName(key, strings_);
      auto [at, fresh] = by_name.try_emplace(name, sites.size());
      if (fresh) sites.push_back(CallSite{name, 0, 0, 0, 0, {}}), shown_stack_ns.push_back(0);
      CallSite& site = sites[at->second];
      // The whole stack shown for the site is that of its costliest stack.
      if (pythonStackOfSite(key) && (site.python_stack_id == 0 || totals.total_ns > shown_stack_ns[at->second])) {
        site.python_stack_id = pythonStackOfSite(key);
        shown_stack_ns[at->second] = totals.total_ns;
      }
      site.count += totals.count;
      site.total_ns += totals.total_ns;
      if (idle_by_site)
        if (auto idle = idle_by_site->find(key); idle != idle_by_site->end()) site.idle_after_ns += idle->second;
    }
    // The sites that cost the most first: blocked time and the idle after it.
    std::sort(sites.begin(), sites.end(), [](const CallSite& a, const CallSite& b) {
      const uint64_t ca = a.total_ns + a.idle_after_ns, cb = b.total_ns + b.idle_after_ns;
      return ca != cb ? ca > cb : a.name < b.name;
    });
    if (sites.size() > options_.top_n) sites.resize(options_.top_n);
    for (CallSite& site : sites) site.python_stack = stackFrames(site.python_stack_id, strings_);
    stats.top_call_sites = std::move(sites);
    result.sync_points.push_back(std::move(stats));
  }
}

}  // namespace gapwatch::analysis
