// analysis/cross_rank.h: across the ranks of one job, whom the others waited for.
//
// In a collective no rank can finish before the last one has arrived, so a rank that launches
// its part early waits (inside its NCCL kernel, which spins on the device) for the last one. SPMD
// programs, and NCCL itself, issue the collectives of a communicator in the same order on every
// rank, so the k-th NCCL kernel of a communicator on one rank is the same collective as the k-th
// on every other. For each such collective:
//   - the rank whose kernel started last is the one the others waited for (collectives_last);
//   - rank r waited (latest start - r's start): the sum over the collectives is r's waited_ns, the
//     sum over r that of the last rank's waited_for_ns.
// A collective in which nobody waited (all started at the same nanosecond) names nobody. Each
// rank's lateness in a collective (its start - the median of the other ranks' starts) is what the
// straggler test reads (diagnosis.h, docs/analysis.md "Across ranks").
//
// Two steps, so that each rank is still read in one pass:
//   1. CollectiveArrivalStage, one per rank's pipeline, keeps a compact summary while it reads:
//      per communicator, the start and end of each NCCL kernel (16 bytes per collective; the one
//      thing here that grows with the recording, bounded by the number of collectives);
//   2. attributeRankWaits() combines the summaries of all ranks into AnalysisReport::rank_waits.
//
// Communicators are matched across ranks by their identity text when the recorder learned one
// that is the same on every rank; otherwise by order of first use among communicators of the
// same size (SPMD programs create and use them in the same order). Ranks on different hosts have
// unrelated clocks: a collective's kernels end together on every rank (the ring completes once
// the last rank has joined), so each other host's clock offset is estimated as the median
// difference of kernel ends and taken off its starts.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/nccl_stats.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gapwatch::analysis {

// The NCCL kernels of one communicator on one rank, in start order.
struct CommunicatorKernels {
  std::string identity;  // the communicator's text; "" when the recorder sent none
  int32_t nranks = 0;    // from its host calls; 0 when unknown
  std::vector<uint64_t> starts_ns;
  std::vector<uint64_t> ends_ns;  // parallel to starts_ns
};

// What one rank contributes to the cross-rank analysis.
struct RankCollectives {
  int32_t rank = -1;  // the process's rank (Hello), else its rank in its largest communicator
  std::string host;   // ranks on the same host share a clock
  std::vector<CommunicatorKernels> communicators;  // in order of first kernel
};

class CollectiveArrivalStage final : public AnalysisStage {
 public:
  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override { launches_.onApiCall(call); }
  void onActivity(const DeviceActivityEvent& activity) override;
  void onNcclCall(const NcclCallEvent& call) override;
  // Writes nothing: the result needs every rank (attributeRankWaits). Reads the process's rank
  // and host from `result`, which the pipeline has filled from Hello.
  void contribute(ProcessAnalysis& result) override;

  // The summary, once contribute() has run (or without it: rank from the NCCL calls, no host).
  RankCollectives take();

 private:
  struct Communicator {
    uint32_t comm_id = 0;
    uint64_t stream = 0;  // the key when the communicator is not known
    CommunicatorKernels kernels;
  };

  bool isNcclKernel(uint32_t name_id);
  Communicator& communicatorFor(uint32_t comm_id, uint64_t stream);

  const StringTable* strings_ = nullptr;
  NcclLaunchTracker launches_;
  std::unordered_map<uint32_t, bool> nccl_kernel_names_;
  std::vector<Communicator> communicators_;
  std::map<uint32_t, int32_t> comm_nranks_;  // comm id -> size, from the host calls
  int32_t rank_from_calls_ = -1;
  int32_t largest_comm_ = 0;
  std::optional<int32_t> rank_;
  std::string host_;
};

// The batches of consecutive collectives the straggler test splits each rank's lateness into
// (RankWait::lateness_se_ns): enough for a t-test with 19 degrees of freedom, few enough that a
// batch spans a step or more of a job's collectives once there are a few hundred of them.
inline constexpr uint32_t kStragglerBatches = 20;
// A short profile (3 to 20 steps, the norm) has fewer collectives than 2 x kStragglerBatches: from
// this many on, they are tested in batches of two consecutive collectives (a step's, often), so a
// rank the others waited for in most of 24 collectives, by tens of milliseconds, is found; below
// it, too few to test.
inline constexpr uint32_t kStragglerMinCollectives = 8;

// Whom the ranks waited for: one RankWait per rank of `ranks`, by rank; empty with fewer than two
// ranks. Ranks without a rank number are numbered by their position in `ranks`. Besides the waits,
// each rank's arrival data for the straggler test: in each collective, who arrived last, and each
// rank's lateness (its start - the median of the others' starts), summarized (RankWait).
std::vector<RankWait> attributeRankWaits(const std::vector<RankCollectives>& ranks);

}  // namespace gapwatch::analysis
