// analysis/cross_rank.cpp: see cross_rank.h.
#include "analysis/cross_rank.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gapwatch::analysis {

// --- CollectiveArrivalStage ---------------------------------------------------------------------

bool CollectiveArrivalStage::isNcclKernel(uint32_t name_id) {
  if (name_id == 0) return false;
  if (const auto it = nccl_kernel_names_.find(name_id); it != nccl_kernel_names_.end()) return it->second;
  const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_KERNEL_NAME, name_id) : nullptr;
  if (!name) return false;
  const bool nccl = isNcclKernelName(*name);
  nccl_kernel_names_[name_id] = nccl;
  return nccl;
}

CollectiveArrivalStage::Communicator& CollectiveArrivalStage::communicatorFor(uint32_t comm_id, uint64_t stream) {
  // A handful of communicators per process: a linear search is the cheapest map.
  for (Communicator& c : communicators_) {
    if (comm_id != 0 ? c.comm_id == comm_id : (c.comm_id == 0 && c.stream == stream)) return c;
  }
  Communicator& c = communicators_.emplace_back();
  c.comm_id = comm_id;
  c.stream = comm_id != 0 ? 0 : stream;
  return c;
}

void CollectiveArrivalStage::onNcclCall(const NcclCallEvent& call) {
  launches_.onNcclCall(call);
  if (call.comm_id != 0 && call.nranks > 0) comm_nranks_[call.comm_id] = call.nranks;
  // The process's rank, when Hello did not say: its rank in the largest communicator (the world).
  if (call.nranks > largest_comm_ && call.rank >= 0) {
    largest_comm_ = call.nranks;
    rank_from_calls_ = call.rank;
  }
}

void CollectiveArrivalStage::onActivity(const DeviceActivityEvent& activity) {
  if (activity.kind != v1::ACTIVITY_KIND_KERNEL || !isNcclKernel(activity.name_id)) return;
  const NcclLaunchTracker::Launcher launcher = launches_.launcherOf(activity);
  Communicator& c = communicatorFor(launcher.comm_id, activity.stream);
  c.kernels.starts_ns.push_back(activity.start_ns);
  c.kernels.ends_ns.push_back(std::max(activity.end_ns, activity.start_ns));
}

void CollectiveArrivalStage::contribute(ProcessAnalysis& result) {
  rank_ = result.rank;
  host_ = result.host;
}

RankCollectives CollectiveArrivalStage::take() {
  RankCollectives summary;
  summary.rank = rank_ ? *rank_ : rank_from_calls_;
  summary.host = host_;
  for (Communicator& c : communicators_) {
    if (c.comm_id != 0) {
      if (const std::string* text = strings_ ? strings_->find(v1::STRING_KIND_COMM, c.comm_id) : nullptr) {
        c.kernels.identity = *text;
      }
      if (const auto it = comm_nranks_.find(c.comm_id); it != comm_nranks_.end()) c.kernels.nranks = it->second;
    }
    summary.communicators.push_back(std::move(c.kernels));
  }
  communicators_.clear();
  return summary;
}

// --- attributeRankWaits -------------------------------------------------------------------------

namespace {

struct Participant {
  std::size_t rank_index;
  const CommunicatorKernels* kernels;
};

// The same communicator as seen by each rank that has it.
using CommunicatorGroup = std::vector<Participant>;

std::vector<CommunicatorGroup> matchCommunicators(const std::vector<RankCollectives>& ranks) {
  std::vector<CommunicatorGroup> groups;
  std::map<std::string, CommunicatorGroup> by_identity;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommunicatorKernels& c : ranks[r].communicators) {
      if (!c.identity.empty()) by_identity[c.identity].push_back({r, &c});
    }
  }
  // An identity only one rank has is a process-local handle, not a shared name: match by order.
  std::vector<std::vector<const CommunicatorKernels*>> unnamed(ranks.size());
  for (auto& [identity, group] : by_identity) {
    if (group.size() >= 2) {
      groups.push_back(std::move(group));
    } else {
      for (const Participant& p : group) unnamed[p.rank_index].push_back(p.kernels);
    }
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const CommunicatorKernels& c : ranks[r].communicators) {
      if (c.identity.empty()) unnamed[r].push_back(&c);
    }
    // Back into order of first kernel, which is the order of use.
    std::stable_sort(unnamed[r].begin(), unnamed[r].end(), [](const auto* a, const auto* b) {
      const uint64_t a_first = a->starts_ns.empty() ? UINT64_MAX : a->starts_ns.front();
      const uint64_t b_first = b->starts_ns.empty() ? UINT64_MAX : b->starts_ns.front();
      return a_first < b_first;
    });
  }
  // The j-th unnamed communicator of size n on one rank is the j-th of size n on every rank.
  std::map<std::pair<int32_t, std::size_t>, CommunicatorGroup> by_order;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::map<int32_t, std::size_t> seen_of_size;
    for (const CommunicatorKernels* c : unnamed[r]) {
      by_order[{c->nranks, seen_of_size[c->nranks]++}].push_back({r, c});
    }
  }
  for (auto& [key, group] : by_order) {
    if (group.size() >= 2) groups.push_back(std::move(group));
  }
  return groups;
}

// Per rank, what to add to its clock to put it on the first rank's host's clock.
std::vector<int64_t> clockOffsets(const std::vector<RankCollectives>& ranks, const std::vector<CommunicatorGroup>& groups) {
  std::vector<int64_t> offsets(ranks.size(), 0);
  const std::string& reference_host = ranks.front().host;
  std::map<std::string, std::vector<int64_t>> end_differences;  // host -> reference end - its end
  for (const CommunicatorGroup& group : groups) {
    const Participant* reference = nullptr;
    for (const Participant& p : group) {
      if (ranks[p.rank_index].host == reference_host) {
        reference = &p;
        break;
      }
    }
    if (!reference) continue;
    for (const Participant& p : group) {
      const std::string& host = ranks[p.rank_index].host;
      if (host == reference_host) continue;
      const std::size_t n = std::min(p.kernels->ends_ns.size(), reference->kernels->ends_ns.size());
      for (std::size_t k = 0; k < n; ++k) {
        end_differences[host].push_back(static_cast<int64_t>(reference->kernels->ends_ns[k] - p.kernels->ends_ns[k]));
      }
    }
  }
  std::map<std::string, int64_t> host_offset;
  for (auto& [host, differences] : end_differences) {
    auto middle = differences.begin() + static_cast<std::ptrdiff_t>(differences.size() / 2);
    std::nth_element(differences.begin(), middle, differences.end());
    host_offset[host] = *middle;
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (const auto it = host_offset.find(ranks[r].host); it != host_offset.end()) offsets[r] = it->second;
  }
  return offsets;
}

// The median of `values` (the mean of the middle two for an even count); reorders them.
int64_t medianOf(std::vector<int64_t>& values) {
  const std::size_t n = values.size();
  auto upper = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), upper, values.end());
  if (n % 2 == 1) return *upper;
  const int64_t lower = *std::max_element(values.begin(), upper);
  return lower + (*upper - lower) / 2;
}

// What the straggler test reads of one rank's lateness series (in collective order): its mean,
// the standard error of that mean from kStragglerBatches batch means, the median and the MAD.
void summarizeLateness(std::vector<int64_t>& lateness, RankWait& wait) {
  const std::size_t n = lateness.size();
  wait.lateness_collectives = n;
  if (n == 0) return;
  double sum = 0;
  for (int64_t l : lateness) sum += static_cast<double>(l);
  wait.lateness_mean_ns = sum / static_cast<double>(n);
  // Batch means: consecutive collectives (one step's, or a few steps') go into one batch, so that
  // lateness that carries over from one collective to the next counts as one piece of evidence.
  if (n >= kStragglerMinCollectives) {
    const std::size_t batches = std::min<std::size_t>(kStragglerBatches, n / 2);
    std::vector<double> means(batches, 0.0);
    for (std::size_t b = 0; b < batches; ++b) {
      const std::size_t from = b * n / batches, to = (b + 1) * n / batches;
      double batch_sum = 0;
      for (std::size_t i = from; i < to; ++i) batch_sum += static_cast<double>(lateness[i]);
      means[b] = batch_sum / static_cast<double>(to - from);
    }
    double mean = 0;
    for (double m : means) mean += m;
    mean /= static_cast<double>(batches);
    double squares = 0;
    for (double m : means) squares += (m - mean) * (m - mean);
    const double variance = squares / static_cast<double>(batches - 1);
    wait.lateness_batches = static_cast<uint32_t>(batches);
    wait.lateness_se_ns = std::sqrt(variance / static_cast<double>(batches));
  }
  const int64_t median = medianOf(lateness);
  for (int64_t& l : lateness) l = l >= median ? l - median : median - l;
  wait.lateness_median_ns = median;
  wait.lateness_mad_ns = static_cast<uint64_t>(medianOf(lateness));
}

}  // namespace

std::vector<RankWait> attributeRankWaits(const std::vector<RankCollectives>& ranks) {
  if (ranks.size() < 2) return {};
  std::vector<RankWait> waits(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    waits[r].rank = ranks[r].rank >= 0 ? ranks[r].rank : static_cast<int32_t>(r);
  }
  const std::vector<CommunicatorGroup> groups = matchCommunicators(ranks);
  const std::vector<int64_t> offsets = clockOffsets(ranks, groups);

  // Per rank, its lateness in each collective, with the collective's start (16 bytes per
  // collective, while combining): a rank in several communicators (data- and tensor-parallel
  // groups) gets its collectives group by group, and the batch means want them in time order.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> timed_lateness(ranks.size());
  std::vector<int64_t> starts;
  std::vector<std::size_t> order;
  for (const CommunicatorGroup& group : groups) {
    std::size_t collectives = SIZE_MAX;
    for (const Participant& p : group) collectives = std::min(collectives, p.kernels->starts_ns.size());
    starts.resize(group.size());
    order.resize(group.size());
    const std::size_t others = group.size() - 1;
    const double chance = 1.0 / static_cast<double>(group.size());
    for (std::size_t k = 0; k < collectives; ++k) {
      std::size_t last = 0;
      for (std::size_t i = 0; i < group.size(); ++i) {
        starts[i] = static_cast<int64_t>(group[i].kernels->starts_ns[k]) + offsets[group[i].rank_index];
        const bool later = starts[i] > starts[last];
        const bool tie_to_lower_rank = starts[i] == starts[last] &&
                                       waits[group[i].rank_index].rank < waits[group[last].rank_index].rank;
        if (later || tie_to_lower_rank) last = i;
      }
      // Lateness: a rank's start - the median of the others' starts. With the starts sorted once,
      // the others of the rank at sorted position j are the sorted list without position j.
      for (std::size_t i = 0; i < group.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return starts[a] < starts[b]; });
      const auto otherAt = [&](std::size_t j, std::size_t m) { return starts[order[m < j ? m : m + 1]]; };
      for (std::size_t j = 0; j < group.size(); ++j) {
        const int64_t low = otherAt(j, (others - 1) / 2);
        const int64_t high = otherAt(j, others / 2);
        timed_lateness[group[order[j]].rank_index].emplace_back(starts[order[j]],
                                                                starts[order[j]] - (low + (high - low) / 2));
      }
      uint64_t waited_ns = 0;
      for (std::size_t i = 0; i < group.size(); ++i) {
        const uint64_t waited = static_cast<uint64_t>(starts[last] - starts[i]);
        waits[group[i].rank_index].waited_ns += waited;
        waited_ns += waited;
      }
      if (waited_ns == 0) continue;
      for (const Participant& p : group) {
        ++waits[p.rank_index].collectives;
        waits[p.rank_index].expected_last += chance;
      }
      RankWait& culprit = waits[group[last].rank_index];
      culprit.waited_for_ns += waited_ns;
      ++culprit.collectives_last;
    }
  }
  std::vector<int64_t> lateness;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::stable_sort(timed_lateness[r].begin(), timed_lateness[r].end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    lateness.clear();
    for (const auto& [start, late] : timed_lateness[r]) lateness.push_back(late);
    std::vector<std::pair<int64_t, int64_t>>().swap(timed_lateness[r]);
    summarizeLateness(lateness, waits[r]);
  }
  std::stable_sort(waits.begin(), waits.end(), [](const RankWait& a, const RankWait& b) { return a.rank < b.rank; });
  return waits;
}

}  // namespace gapwatch::analysis
