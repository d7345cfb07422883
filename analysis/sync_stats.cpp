// analysis/sync_stats.cpp: see sync_stats.h.
#include "analysis/sync_stats.h"

#include "analysis/device_idle.h"

#include <algorithm>
#include <vector>

namespace gapwatch::analysis {

SyncStatsStage::SyncStatsStage(const AnalysisOptions& options, const DeviceIdleStage* device_idle)
    : options_(options), device_idle_(device_idle) {}

void SyncStatsStage::onApiCall(const ApiCallEvent& call) {
  const std::optional<SyncPointKind> kind = classifySyncPoint(call);
  if (!kind) return;
  const uint64_t blocked_ns = call.end_ns > call.start_ns ? call.end_ns - call.start_ns : 0;
  TypeState& type = types_[static_cast<std::size_t>(*kind)];
  ++type.count;
  type.total_ns += blocked_ns;
  if (call.copy_kind == v1::COPY_KIND_D2H && call.bytes <= kSmallReadBytes) ++type.small_reads;
  type.durations.add(blocked_ns);
  SiteTotals& site = type.sites[call.call_site_id];
  ++site.count;
  site.total_ns += blocked_ns;
}

void SyncStatsStage::contribute(ProcessAnalysis& result) {
  result.sync_points.clear();
  for (std::size_t k = 0; k < kSyncPointKindCount; ++k) {
    const TypeState& type = types_[k];
    SyncTypeStats stats;
    stats.kind = static_cast<SyncPointKind>(k);
    stats.count = type.count;
    stats.total_ns = type.total_ns;
    stats.small_reads = type.small_reads;
    stats.p50_ns = type.durations.percentile(50);
    stats.p99_ns = type.durations.percentile(99);
    if (device_idle_) stats.idle_after_ns = device_idle_->idleAfterSync()[k];
    std::vector<CallSite> sites;
    for (const auto& [id, totals] : type.sites) {
      CallSite site;
      if (id == 0) {
        site.name = kCallSiteNotRecorded;
      } else {
        site.name = strings_ ? strings_->display(v1::STRING_KIND_CALL_SITE, id) : "#" + std::to_string(id);
      }
      site.count = totals.count;
      site.total_ns = totals.total_ns;
      sites.push_back(std::move(site));
    }
    // The sites that cost the most blocked time first.
    std::sort(sites.begin(), sites.end(), [](const CallSite& a, const CallSite& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    if (sites.size() > options_.top_n) sites.resize(options_.top_n);
    stats.top_call_sites = std::move(sites);
    result.sync_points.push_back(std::move(stats));
  }
}

}  // namespace gapwatch::analysis
