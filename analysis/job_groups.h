// analysis/job_groups.h: which of the processes given together are one job.
//
// `gapwatch report DIR` or `gapwatch report gapwatch-*.gwt` can be given the files of several
// jobs: two runs of the same script, traces collected from different experiments. Their processes
// must not join one cross-rank table: "rank 0" three times, NCCL waits measured between clocks of
// different days, shares of a window far over 100 %. Processes are one job when they can be ranks
// of one run:
//   - every one has a rank, and no rank is there twice;
//   - their world sizes agree (where known) and every rank is below it;
//   - their windows overlap in time: on the wall clock where both say when they started
//     (Hello.start_unix_ns), else on the recording clock where both are recordings of one host
//     (CLOCK_MONOTONIC is per host), else it cannot be told and ranks that fit are taken as one
//     job.
// A process without a rank is a job of its own unless it is the only process. Jobs are formed
// greedily in the order given: each process joins the first job all of whose processes it fits,
// else starts one. Each job's first difference with the others is said in one line
// (JobGroups::why), for the report to print.
#pragma once

#include "analysis/analysis_result.h"
#include "analysis/recording_overview.h"

#include <cstddef>
#include <string>
#include <vector>

namespace gapwatch::analysis {

struct JobGroups {
  std::vector<std::vector<std::size_t>> jobs;  // process indices, each job's in the order given
  std::string why;                             // "" for one job; else what split them
};

// `overviews` is parallel to `processes` (RunReport).
JobGroups groupIntoJobs(const std::vector<ProcessAnalysis>& processes, const std::vector<RecordingOverview>& overviews);

}  // namespace gapwatch::analysis
