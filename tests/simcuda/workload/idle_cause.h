// idle_cause.h: the causes an idle nanosecond can have (docs/scenarios.md, "Ground truth").
#pragma once

#include <array>
#include <string>

namespace gapwatch_sim {

enum IdleCause : int {
  kHostCpu = 0,
  kLaunchOverhead,
  kSyncCopy,
  kCudaApi,
  kNcclHost,
  kDependency,
  kCauseCount,
};

// The order is the file's column order; names are the truth file's keys.
inline const std::array<std::string, kCauseCount>& cause_names() {
  static const std::array<std::string, kCauseCount> names = {
      "host_cpu", "launch_overhead", "sync_copy", "cuda_api", "nccl_host", "dependency"};
  return names;
}

}  // namespace gapwatch_sim
