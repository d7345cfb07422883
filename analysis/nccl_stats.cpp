// analysis/nccl_stats.cpp: see nccl_stats.h.
#include "analysis/nccl_stats.h"

#include <algorithm>
#include <string>

namespace gapwatch::analysis {
namespace {

uint32_t collectiveBit(NcclCollective collective) { return 1u << static_cast<unsigned>(collective); }

// The one collective a group performed, or nullopt when it mixed several (NCCL then launches a
// Generic kernel).
std::optional<NcclCollective> singleCollective(uint32_t bits) {
  if (bits == 0 || (bits & (bits - 1)) != 0) return std::nullopt;
  for (std::size_t i = 0; i < kNcclCollectiveCount; ++i) {
    if (bits == (1u << i)) return static_cast<NcclCollective>(i);
  }
  return std::nullopt;
}

}  // namespace

// --- NcclLaunchTracker --------------------------------------------------------------------------

std::optional<NcclLaunchTracker::Launcher> NcclLaunchTracker::onNcclCall(const NcclCallEvent& call) {
  ThreadState& thread = threads_[call.thread_id];
  const auto collective = ncclCollectiveOfOp(call.op);
  if (call.comm_id != 0 && call.stream != 0) comm_of_stream_[call.stream] = call.comm_id;

  if (call.op == v1::NCCL_OP_GROUP_START) {
    if (thread.group_depth++ == 0) {
      thread.group_collectives = 0;
      thread.group_comm = 0;
    }
    return std::nullopt;
  }
  if (call.op == v1::NCCL_OP_GROUP_END) {
    if (thread.group_depth == 0) return std::nullopt;  // unbalanced (recording began inside a group)
    if (--thread.group_depth != 0) return std::nullopt;
    Launcher group{singleCollective(thread.group_collectives), thread.group_comm};
    thread.call_start_ns = call.start_ns;
    thread.call_end_ns = call.end_ns;
    thread.call_launcher = group;
    return group;
  }
  if (!collective) return std::nullopt;
  if (thread.group_depth > 0) {
    // Queued until the group ends: NCCL launches nothing here.
    thread.group_collectives |= collectiveBit(*collective);
    if (call.comm_id != 0) thread.group_comm = call.comm_id;
    return std::nullopt;
  }
  thread.call_start_ns = call.start_ns;
  thread.call_end_ns = call.end_ns;
  thread.call_launcher = Launcher{collective, call.comm_id};
  return std::nullopt;
}

void NcclLaunchTracker::onApiCall(const ApiCallEvent& call) {
  if (call.kind != v1::API_KIND_LAUNCH || call.correlation_id == 0) return;
  const ThreadState* found = threads_.find(call.thread_id);
  if (!found) return;
  const ThreadState& thread = *found;
  if (call.start_ns < thread.call_start_ns || call.start_ns > thread.call_end_ns) return;
  if (by_correlation_.emplace(call.correlation_id, thread.call_launcher).second) {
    correlation_order_.push_back(call.correlation_id);
  }
  // Ids already matched leave stale entries in the order queue; drop them from the front.
  while (!correlation_order_.empty() && !by_correlation_.contains(correlation_order_.front())) {
    correlation_order_.pop_front();
  }
  // A launch more than kMaxPendingLaunches launches old lost its kernel (a dropped record).
  while (correlation_order_.size() > kMaxPendingLaunches) {
    by_correlation_.erase(correlation_order_.front());
    correlation_order_.pop_front();
  }
}

NcclLaunchTracker::Launcher NcclLaunchTracker::launcherOf(const DeviceActivityEvent& kernel) {
  if (const auto it = by_correlation_.find(kernel.correlation_id); it != by_correlation_.end()) {
    Launcher launcher = it->second;
    by_correlation_.erase(it);
    if (launcher.comm_id == 0) {
      if (const auto s = comm_of_stream_.find(kernel.stream); s != comm_of_stream_.end()) {
        launcher.comm_id = s->second;
      }
    }
    return launcher;
  }
  Launcher launcher;
  if (const auto s = comm_of_stream_.find(kernel.stream); s != comm_of_stream_.end()) {
    launcher.comm_id = s->second;
  }
  return launcher;
}

// --- NcclStatsStage -----------------------------------------------------------------------------

void NcclStatsStage::DeviceSweep::advanceTo(uint64_t time_ns) {
  if (time_ns <= position_ns) return;
  // Every interval that covers [position, time) started at or before position, so each class
  // covers a prefix of it: up to the class's furthest end.
  const auto covered = [&](uint64_t end_ns) { return end_ns > position_ns ? std::min(end_ns, time_ns) - position_ns : 0; };
  comm_ns += covered(comm_end_ns);
  busy_ns += covered(any_end_ns);
  compute_during_comm_ns += covered(std::min(comm_end_ns, compute_end_ns));
  position_ns = time_ns;
}

std::optional<NcclCollective> NcclStatsStage::collectiveOfKernel(uint32_t name_id) {
  if (name_id == 0) return std::nullopt;
  if (const int8_t* kind = kernel_kind_.find(name_id)) {
    if (*kind < 0) return std::nullopt;
    return static_cast<NcclCollective>(*kind);
  }
  const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_KERNEL_NAME, name_id) : nullptr;
  if (!name) return std::nullopt;  // not defined yet: do not cache the guess
  const auto collective = parseNcclKernelName(*name);
  kernel_kind_[name_id] = collective ? static_cast<int8_t>(*collective) : int8_t{-1};
  return collective;
}

void NcclStatsStage::onApiCall(const ApiCallEvent& call) { launches_.onApiCall(call); }

void NcclStatsStage::onNcclCall(const NcclCallEvent& call) {
  const auto group = launches_.onNcclCall(call);
  const uint64_t host_ns = call.end_ns > call.start_ns ? call.end_ns - call.start_ns : 0;

  if (call.op == v1::NCCL_OP_GROUP_START || call.op == v1::NCCL_OP_GROUP_END) {
    // A group's host time (mostly its end, where the kernels launch) belongs to what it did,
    // known only once the outermost group ends.
    uint64_t& pending = group_host_ns_[call.thread_id];
    pending += host_ns;
    if (group) {
      const std::size_t type = group->collective ? static_cast<std::size_t>(*group->collective)
                                                 : static_cast<std::size_t>(NcclCollective::kGeneric);
      by_type_[type].host_ns += pending;
      pending = 0;
    }
    return;
  }
  std::size_t type = kOther;
  if (const auto collective = ncclCollectiveOfOp(call.op)) {
    type = static_cast<std::size_t>(*collective);
  } else if (call.op == v1::NCCL_OP_COMM_INIT) {
    type = kCommInit;
  } else if (call.op == v1::NCCL_OP_COMM_DESTROY) {
    type = kCommDestroy;
  }
  NcclTypeStats& stats = by_type_[type];
  ++stats.calls;
  stats.bytes += call.bytes;
  stats.host_ns += host_ns;
}

void NcclStatsStage::onActivity(const DeviceActivityEvent& activity) {
  if (activity.kind == v1::ACTIVITY_KIND_SYNC || activity.kind == v1::ACTIVITY_KIND_UNSPECIFIED) return;
  const uint64_t end_ns = std::max(activity.end_ns, activity.start_ns);

  std::optional<NcclCollective> collective;
  if (activity.kind == v1::ACTIVITY_KIND_KERNEL) {
    collective = collectiveOfKernel(activity.name_id);
    if (collective) {
      const NcclLaunchTracker::Launcher launcher = launches_.launcherOf(activity);
      // A generic kernel takes its host call's collective; so does a SendRecv kernel that an
      // all-to-all, gather or scatter launched (NCCL runs them as point-to-point transfers).
      if (launcher.collective &&
          (*collective == NcclCollective::kGeneric ||
           (*collective == NcclCollective::kSendRecv && *launcher.collective >= NcclCollective::kAllToAll)))
        collective = launcher.collective;
      NcclTypeStats& stats = by_type_[static_cast<std::size_t>(*collective)];
      ++stats.kernels;
      stats.device_ns += end_ns - activity.start_ns;
    }
  }

  if (!last_device_ || last_device_id_ != activity.device) {
    last_device_ = &devices_[activity.device];  // map nodes do not move
    last_device_id_ = activity.device;
  }
  DeviceSweep& sweep = *last_device_;
  if (!sweep.started) {
    sweep.started = true;
    sweep.position_ns = activity.start_ns;
  }
  sweep.advanceTo(activity.start_ns);
  sweep.any_end_ns = std::max(sweep.any_end_ns, end_ns);
  if (collective) {
    sweep.comm_end_ns = std::max(sweep.comm_end_ns, end_ns);
  } else if (activity.kind == v1::ACTIVITY_KIND_KERNEL) {
    sweep.compute_end_ns = std::max(sweep.compute_end_ns, end_ns);
  }
}

std::string NcclStatsStage::typeName(std::size_t type) {
  if (type < kNcclCollectiveCount) return std::string(ncclCollectiveName(static_cast<NcclCollective>(type)));
  return type == kCommInit ? "comm_init" : type == kCommDestroy ? "comm_destroy" : "other";
}

void NcclStatsStage::finish() {
  stats_ = NcclStats{};
  // Groups still open when the recording ended: their host time was still spent in NCCL.
  for (auto& [thread, pending] : group_host_ns_) {
    by_type_[static_cast<std::size_t>(NcclCollective::kGeneric)].host_ns += pending;
    pending = 0;
  }
  uint64_t busy_ns = 0, overlap_ns = 0;
  for (auto& [device, sweep] : devices_) {
    sweep.advanceTo(sweep.any_end_ns);
    stats_.comm_ns += sweep.comm_ns;
    busy_ns += sweep.busy_ns;
    overlap_ns += sweep.compute_during_comm_ns;
  }
  if (busy_ns > 0) stats_.comm_share_of_busy = static_cast<double>(stats_.comm_ns) / static_cast<double>(busy_ns);
  if (stats_.comm_ns > 0) {
    stats_.compute_comm_overlap = static_cast<double>(overlap_ns) / static_cast<double>(stats_.comm_ns);
  }
  for (std::size_t type = 0; type < kTypeCount; ++type) {
    NcclTypeStats stats = by_type_[type];
    if (stats.calls == 0 && stats.kernels == 0 && stats.host_ns == 0) continue;
    stats.op = typeName(type);
    stats_.by_type.push_back(std::move(stats));
  }
}

void NcclStatsStage::contribute(ProcessAnalysis& result) { result.nccl = stats_; }

void NcclStatsStage::snapshot(ProcessAnalysis& result) const {
  NcclStats stats;
  for (const auto& [device, sweep] : devices_) stats.comm_ns += sweep.comm_ns;
  for (std::size_t type = 0; type < kTypeCount; ++type) {
    NcclTypeStats s = by_type_[type];
    if (s.calls == 0 && s.kernels == 0 && s.host_ns == 0) continue;
    s.op = typeName(type);
    stats.by_type.push_back(std::move(s));
  }
  result.nccl = std::move(stats);
}

}  // namespace gapwatch::analysis
