// analysis/sync_stats.h: the host calls that waited for the device, by type.
//
// A sync point is a call that returned only once the device had caught up (ARCHITECTURE.md
// section 6): the recorder's `blocked` flag, and async copies that the pipeline marked blocked
// after joining their activity record (a pageable host side). Types are analysis/sync_points.h's.
// A call's blocked time is the time it waited for device work: from its entry to the end of the
// last work queued before it entered (on its stream for a stream sync whose stream is known; its
// own operation for a blocking copy or memset), clipped to the call; 0 when that work had ended
// before it entered. The rest of the call is host time in a CUDA call. Without a device timeline
// (symbol hooks only) nothing tells, and the whole call counts, an upper bound. The stage therefore holds a
// blocked call until the window has released every activity that starts before its exit.
// Per type: count, total blocked time, p50 and p99 by nearest rank (exact
// for the first 4096 calls of a type, within 1% after; see duration_percentiles.h), the idle
// time of the gaps these calls drained (from DeviceIdleStage, after_sync by type) and the top call
// sites. A polling loop (consecutive cudaEventQuery / cudaStreamQuery calls of one thread, no other
// call between) is one sync point of type query polling, from its first poll's entry to its last
// poll's exit, with its number of polls; its blocked time follows the same rule (the work queued
// before its first poll). Per site (the user's Python line when the call carries a Python stack,
// else its native call site, else "(not recorded)"; sites with the same name are one): calls,
// blocked time and the idle of the gaps they drained, costliest first.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/correlation_index.h"
#include "analysis/duration_percentiles.h"
#include "analysis/flat_u64_map.h"
#include "analysis/sync_points.h"

#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace gapwatch::analysis {

class DeviceIdleStage;

inline constexpr const char* kCallSiteNotRecorded = "(not recorded)";

class SyncStatsStage final : public AnalysisStage {
 public:
  // `device_idle` (may be null) supplies the idle time after each type of sync.
  SyncStatsStage(const AnalysisOptions& options, const DeviceIdleStage* device_idle);

  void begin(const RecordingFacts& facts) override { facts_ = facts; }
  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void finish() override;
  // Writes `sync_points`: one entry per SyncPointKind, in the enum's order, zero counts included.
  void contribute(ProcessAnalysis& result) override { write(result); }
  // The calls whose wait is known so far (those still waiting for their records are not in it).
  void snapshot(ProcessAnalysis& result) const override { write(result); }
  // Sync points still waiting for the activities that settle them: a handful at any time (tests
  // check it stays bounded).
  std::size_t pendingCalls() const { return pending_.size(); }

 private:
  void write(ProcessAnalysis& result) const;
  struct SiteTotals {
    uint64_t count = 0;
    uint64_t total_ns = 0;
  };
  struct TypeState {
    uint64_t count = 0;
    uint64_t total_ns = 0;
    uint64_t small_reads = 0;
    uint64_t polls = 0, polling_ns = 0;
    DurationPercentiles durations;
    std::unordered_map<uint64_t, SiteTotals> sites;  // siteKey() -> totals
  };

  // A blocked call waiting for the activities that tell how long it waited.
  struct PendingCall {
    ApiCallEvent call;
    SyncPointKind kind = SyncPointKind::kOther;
    bool waits_own_work = false;  // a blocking copy or memset
    bool stream_known = false;
    uint64_t stream = 0;
    uint64_t waited_until_ns = 0;  // the latest end of the work it waited for, so far
    uint64_t polls = 0;            // a polling loop: its polls (call spans first to last)
    bool open = false;             // a polling loop that may still go on
  };

  void settle(uint64_t now_ns);  // counts the calls whose exit `now_ns` has passed
  // Joins a thread's consecutive polls into one loop; true when `call` was a poll.
  bool notePoll(const ApiCallEvent& call);
  uint64_t streamEnd(uint64_t stream) const;
  void count(const PendingCall& pending);

  AnalysisOptions options_;
  const DeviceIdleStage* device_idle_;
  RecordingFacts facts_;
  CorrelationIndex queued_by_;
  std::deque<PendingCall> pending_;  // in entry order
  FlatU64Map<PendingCall*> open_loops_;  // thread -> its polling loop in pending_
  // The latest end of the work seen so far, on any stream and per stream (one entry per stream).
  uint64_t latest_end_ns_ = 0;
  std::unordered_map<uint64_t, uint64_t> stream_end_ns_;
  const StringTable* strings_ = nullptr;
  std::array<TypeState, kSyncPointKindCount> types_;
};

}  // namespace gapwatch::analysis
