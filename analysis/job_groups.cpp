// analysis/job_groups.cpp: see job_groups.h.
#include "analysis/job_groups.h"

#include "analysis/quantity_text.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace gapwatch::analysis {
namespace {

struct Window {
  uint64_t start = 0, end = 0;
};

std::string labelOf(const ProcessAnalysis& p) {
  return p.rank ? "rank " + std::to_string(*p.rank) : "pid " + std::to_string(p.pid);
}

std::optional<int32_t> worldSizeOf(const RecordingOverview& o) {
  if (o.hello && o.hello->has_world_size() && o.hello->world_size() > 0) return o.hello->world_size();
  return std::nullopt;
}

// The process's window on the wall clock, when its start is known there.
std::optional<Window> wallWindow(const RecordingOverview& o) {
  if (!o.hello || o.hello->start_unix_ns() == 0) return std::nullopt;
  const uint64_t start = o.hello->start_unix_ns();
  // span_start is the Hello's start on the recording clock (or the first event): the wall clock
  // moves with it.
  const uint64_t offset = o.hello->start_time_ns() <= o.span_start_ns ? o.span_start_ns - o.hello->start_time_ns() : 0;
  return Window{start + offset, start + offset + o.spanNs()};
}

bool overlap(const Window& a, const Window& b) { return a.start <= b.end && b.start <= a.end; }

// "" when `b` can be a rank of the job `a` is in; else why not, in a few words.
std::string misfit(const ProcessAnalysis& a, const RecordingOverview& oa, const ProcessAnalysis& b,
                   const RecordingOverview& ob) {
  if (!a.rank || !b.rank) return (a.rank ? labelOf(b) : labelOf(a)) + " has no rank";
  if (*a.rank == *b.rank) return "rank " + std::to_string(*a.rank) + " is there more than once";
  const std::optional<int32_t> wa = worldSizeOf(oa), wb = worldSizeOf(ob);
  if (wa && wb && *wa != *wb) return "world sizes " + std::to_string(*wa) + " and " + std::to_string(*wb) + " differ";
  // Where one says its world's size, both ranks must be in it (the other may not have said).
  if (const std::optional<int32_t> world = wa ? wa : wb) {
    for (const ProcessAnalysis* p : {&a, &b}) {
      if (*p->rank >= *world) return "rank " + std::to_string(*p->rank) + " is outside a world of " + std::to_string(*world);
    }
  }
  const std::optional<Window> ua = wallWindow(oa), ub = wallWindow(ob);
  if (ua && ub) {
    if (!overlap(*ua, *ub)) {
      const uint64_t apart = ua->start > ub->end ? ua->start - ub->end : ub->start - ua->end;
      return labelOf(a) + " and " + labelOf(b) + " ran " + formatDuration(apart) + " apart";
    }
    return "";
  }
  const bool recordings = !a.source.kineto_trace && !b.source.kineto_trace;
  if (recordings && a.host == b.host && oa.hello && ob.hello && oa.hello->clock() == ob.hello->clock()) {
    if (!overlap({oa.span_start_ns, oa.span_end_ns}, {ob.span_start_ns, ob.span_end_ns})) {
      return labelOf(a) + " and " + labelOf(b) + " do not overlap in time";
    }
  }
  return "";
}

}  // namespace

JobGroups groupIntoJobs(const std::vector<ProcessAnalysis>& processes, const std::vector<RecordingOverview>& overviews) {
  JobGroups groups;
  if (processes.size() <= 1) {
    if (!processes.empty()) groups.jobs.push_back({0});
    return groups;
  }
  for (std::size_t i = 0; i < processes.size(); ++i) {
    bool placed = false;
    std::string first_misfit;
    for (std::vector<std::size_t>& job : groups.jobs) {
      std::string why;
      for (std::size_t member : job) {
        why = misfit(processes[member], overviews[member], processes[i], overviews[i]);
        if (!why.empty()) break;
      }
      if (why.empty()) {
        job.push_back(i);
        placed = true;
        break;
      }
      if (first_misfit.empty()) first_misfit = why;
    }
    if (!placed) {
      groups.jobs.push_back({i});
      if (groups.why.empty()) groups.why = first_misfit;
    }
  }
  return groups;
}

}  // namespace gapwatch::analysis
