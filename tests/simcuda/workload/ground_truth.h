// ground_truth.h: what the run really did to the GPU's timeline, from the simulator's own logs.
//
// The definitions (docs/scenarios.md, "Ground truth") are ARCHITECTURE.md section 6 made exact, so
// that gapwatch's measurement of the same run can be compared with these numbers to the nanosecond.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "idle_cause.h"
#include "simcuda/timeline.h"
#include "workload_runner.h"

namespace gapwatch_sim {

// Copies of the simulator's logs (the name pointers stay valid until the process exits).
struct Timeline {
  std::vector<SimDeviceOp> ops;
  std::vector<SimApiCall> calls;
};
Timeline snapshot_timeline();

using CauseNs = std::array<uint64_t, kCauseCount>;

struct Gap {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t next_op = 0;    // index of the op whose start ends the gap (A)
  bool after_sync = false;
  CauseNs cause_ns{};
};

struct HistogramBucket {
  uint64_t lo_ns = 0;
  uint64_t hi_ns = 0;      // exclusive; 0 for the last, open-ended bucket
  uint64_t count = 0;
  uint64_t total_ns = 0;
};

struct DeviceTruth {
  uint32_t device = 0;
  uint64_t window_start_ns = 0;
  uint64_t window_end_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t nccl_kernel_ns = 0;  // summed durations of NCCL kernels (a rank waiting for its peers spins in them)
  uint64_t idle_ns = 0;
  int64_t leading_ns = 0;
  double idle_fraction = 0;
  CauseNs idle_by_cause{};
  std::map<std::string, uint64_t> host_cpu_by_label;  // host_cpu time by the host work it fell in
  uint64_t after_sync_ns = 0;
  uint64_t after_sync_gaps = 0;
  std::vector<HistogramBucket> histogram;
  std::map<std::string, uint64_t> op_counts;
  std::vector<Gap> gaps;
};

struct SyncStats {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p99_ns = 0;
};

struct ProcessTruth {
  std::map<std::string, uint64_t> api_call_counts;
  std::vector<std::pair<std::string, SyncStats>> sync_points;  // fixed order of types
  std::vector<DeviceTruth> devices;
};

struct TruthInputs {
  const Timeline* timeline = nullptr;
  const std::vector<HostSpan>* host_spans = nullptr;
  uint64_t main_start_ns = 0;
  uint64_t launch_threshold_ns = 30000;
};

ProcessTruth compute_truth(const TruthInputs& inputs);

// Names the truth file uses for SimOpKind and SimCallKind values.
const char* op_kind_name(uint32_t kind);
const char* call_kind_name(uint32_t kind);
// Sync point types, in the file's order.
const std::vector<std::string>& sync_point_types();

}  // namespace gapwatch_sim
