// analysis/sync_stats.h: the host calls that waited for the device, by type.
//
// A sync point is a call that returned only once the device had caught up (ARCHITECTURE.md
// section 6): the recorder's `blocked` flag, and async copies that the pipeline marked blocked
// after joining their activity record (a pageable host side). Types are analysis/sync_points.h's.
// Per type: count, total blocked time (the calls' durations), p50 and p99 by nearest rank (exact
// for the first 4096 calls of a type, within 1% after; see duration_percentiles.h), the idle
// time of the gaps these calls drained (from DeviceIdleStage, after_sync by type) and the top call
// sites. The recorder does not record call sites yet (call_site_id 0): those calls are listed as
// "(not recorded)", and the per-site table is ready for when it does.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/duration_percentiles.h"
#include "analysis/sync_points.h"

#include <array>
#include <cstdint>
#include <unordered_map>

namespace gapwatch::analysis {

class DeviceIdleStage;

inline constexpr const char* kCallSiteNotRecorded = "(not recorded)";

class SyncStatsStage final : public AnalysisStage {
 public:
  // `device_idle` (may be null) supplies the idle time after each type of sync.
  SyncStatsStage(const AnalysisOptions& options, const DeviceIdleStage* device_idle);

  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  // Writes `sync_points`: one entry per SyncPointKind, in the enum's order, zero counts included.
  void contribute(ProcessAnalysis& result) override;

 private:
  struct SiteTotals {
    uint64_t count = 0;
    uint64_t total_ns = 0;
  };
  struct TypeState {
    uint64_t count = 0;
    uint64_t total_ns = 0;
    uint64_t small_reads = 0;
    DurationPercentiles durations;
    std::unordered_map<uint32_t, SiteTotals> sites;  // call_site_id -> totals
  };

  AnalysisOptions options_;
  const DeviceIdleStage* device_idle_;
  const StringTable* strings_ = nullptr;
  std::array<TypeState, kSyncPointKindCount> types_;
};

}  // namespace gapwatch::analysis
