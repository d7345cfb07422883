// analysis/nccl_stats.h: how much of a process's GPU time is NCCL communication, and
// how much of it hides behind computation.
//
// One pass over the time-ordered events of one process fills NcclStats (ARCHITECTURE.md section 6,
// HTA's definitions in research/profiler-anchors.md section 2):
//   - per collective type: host calls, bytes and host time from the NCCL host calls; kernels and
//     device time (summed durations) from the NCCL kernels, typed by their name
//     (nccl_kernel_name.h). A kernel whose name does not tell (ncclDevKernel_Generic) takes the
//     type of the host call that launched it. Group end, communicator set-up and tear-down are
//     host time too: a group's end (where NCCL launches the fused kernel) counts as host time of
//     the group's collective; init and destroy are types of their own ("comm_init",
//     "comm_destroy"); anything else is "other";
//   - comm_ns: the union of NCCL kernel intervals; comm_share_of_busy = comm_ns / the union of all
//     device work (kernels, copies, memsets);
//   - compute_comm_overlap (HTA): time in which a compute kernel (any kernel that is not NCCL's)
//     runs while an NCCL kernel runs, over comm_ns. Copies and memsets are neither.
// Unions and overlap are per device, then summed over the process's devices.
//
// Memory: activities arrive in start order, so each device keeps a sweep of O(1) state: the
// position up to which everything is final and how far each class (NCCL, compute, any) is covered
// beyond it. Launches waiting for their kernel are kept by correlation id until it arrives.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/flat_u64_map.h"
#include "analysis/nccl_kernel_name.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

namespace gapwatch::analysis {

// Which NCCL host call launched an NCCL kernel: the collective it performs and its communicator.
// NCCL launches its kernel from inside the host call (or, for grouped calls, inside the outermost
// ncclGroupEnd) on the calling thread; the driver launch carries the kernel's correlation id.
// Shared by the stages that need a kernel's communicator or collective.
class NcclLaunchTracker {
 public:
  struct Launcher {
    std::optional<NcclCollective> collective;  // unknown for a group of mixed collectives
    uint32_t comm_id = 0;                      // 0: not known
  };

  // Returns the group's launcher when `call` ends the outermost group (its kernels launch there).
  std::optional<Launcher> onNcclCall(const NcclCallEvent& call);
  void onApiCall(const ApiCallEvent& call);
  // The launcher of an NCCL kernel; forgets its correlation id. Falls back to the communicator
  // that last used the kernel's stream when the launch was not seen.
  Launcher launcherOf(const DeviceActivityEvent& kernel);

  // Launches held for their kernel (tests check that this stays bounded).
  std::size_t pendingLaunches() const { return std::max(by_correlation_.size(), correlation_order_.size()); }

 private:
  // Launches whose kernel never shows up (a dropped record) must not pile up.
  static constexpr std::size_t kMaxPendingLaunches = 4096;

  struct ThreadState {
    uint32_t group_depth = 0;
    uint32_t group_collectives = 0;  // bit per NcclCollective seen inside the open group
    uint32_t group_comm = 0;
    // The call now running on the thread that may launch a kernel.
    uint64_t call_start_ns = 0, call_end_ns = 0;
    Launcher call_launcher;
  };

  // Looked up on every launch call: a flat map (empty, and so free, without NCCL calls).
  FlatU64Map<ThreadState> threads_;
  std::unordered_map<uint64_t, uint32_t> comm_of_stream_;
  std::unordered_map<uint64_t, Launcher> by_correlation_;
  std::deque<uint64_t> correlation_order_;
};

class NcclStatsStage final : public AnalysisStage {
 public:
  // No option changes what this stage computes; taken so that every stage is built the same way.
  explicit NcclStatsStage(const AnalysisOptions& /*options*/ = {}) {}

  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void onNcclCall(const NcclCallEvent& call) override;
  void finish() override;
  // Writes `nccl`.
  void contribute(ProcessAnalysis& result) override;
  // Communication time as far as each device's sweep has come, and the calls so far.
  void snapshot(ProcessAnalysis& result) const override;

  const NcclStats& stats() const { return stats_; }

 private:
  static std::string typeName(std::size_t type);  // NcclTypeStats::op of a by_type_ slot
  // Types beyond the collectives, in NcclTypeStats order after them.
  enum ExtraType : std::size_t { kCommInit = kNcclCollectiveCount, kCommDestroy, kOther, kTypeCount };

  // The sweep of one device: everything before `position_ns` is final.
  struct DeviceSweep {
    uint64_t position_ns = 0;
    uint64_t comm_end_ns = 0, compute_end_ns = 0, any_end_ns = 0;  // coverage from position on
    uint64_t comm_ns = 0, compute_during_comm_ns = 0, busy_ns = 0;
    bool started = false;
    void advanceTo(uint64_t time_ns);
  };

  // The collective of a kernel name, cached per name id once the name is known.
  std::optional<NcclCollective> collectiveOfKernel(uint32_t name_id);

  const StringTable* strings_ = nullptr;
  NcclLaunchTracker launches_;
  FlatU64Map<int8_t> kernel_kind_;  // name id -> NcclCollective, or -1: not NCCL (every kernel looks)
  std::map<uint32_t, DeviceSweep> devices_;
  // The device of the last activity: consecutive activities are mostly on the same one.
  uint32_t last_device_id_ = 0;
  DeviceSweep* last_device_ = nullptr;
  std::array<NcclTypeStats, kTypeCount> by_type_{};
  std::unordered_map<uint32_t, uint64_t> group_host_ns_;  // per thread: host time of the open group
  NcclStats stats_;
};

}  // namespace gapwatch::analysis
