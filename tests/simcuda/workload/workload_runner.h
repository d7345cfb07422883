// workload_runner.h: runs one process's share of a scenario through the real CUDA and NCCL APIs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nccl.h>

#include "scenario.h"

namespace gapwatch_sim {

struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  std::optional<ncclUniqueId> nccl_id;  // from the launcher; a single process makes its own
};

// An interval of host work, for the truth: which label a host_cpu gap fell into.
struct HostSpan {
  int32_t tid = 0;
  std::string label;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t requested_ns = 0;  // what the scenario asked for: a longer span means the CPU was taken away
};

struct ThreadInfo {
  std::string name;
  int32_t tid = 0;
};

// What the run knows that the CUDA logs do not.
struct RunRecord {
  std::vector<ThreadInfo> threads;
  std::vector<HostSpan> host_spans;
  std::vector<uint64_t> step_starts_ns;  // main thread, before the step's recompiles
  int64_t workers_forked = 0;
};

// Runs warm-up, steps and recompiles, then a final cudaDeviceSynchronize and the teardown. A CUDA
// or NCCL error ends the process with one line on stderr (exit status 1).
RunRecord run_workload(const Scenario& scenario, const RankInfo& rank);

}  // namespace gapwatch_sim
