// scenario.h: a scenario file (docs/scenarios.md, format 1), parsed and fully validated.
//
// Everything that can be wrong with a scenario is found here, before any CUDA call: the runner
// trusts these structures (references resolve, counts are non-negative, frees never outnumber
// mallocs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simcuda/timeline.h"

namespace gapwatch_sim {

inline constexpr int kScenarioFormat = 1;
inline constexpr int kMaxProcesses = 16;
inline constexpr size_t kMaxKernels = 4096;

// How a kernel launch enters the runtime.
enum class LaunchEntry {
  Chevron,         // what nvcc 13 compiles <<<>>> to: __cudaGetKernel once, then __cudaLaunchKernel
  LaunchKernel,    // cudaLaunchKernel
  LaunchKernelEx,  // cudaLaunchKernelExC
};

struct KernelDef {
  std::string name;      // readable name from the scenario
  std::string mangled;   // what is registered as the device function name
  double duration_us = 0;
  double jitter_us = 0;  // uniform in [duration - jitter, duration + jitter], clipped at 0
  LaunchEntry launch = LaunchEntry::Chevron;
  int load_phase = -1;   // -1: registered at start-up; 0: by warmup; k >= 1: by recompiles[k - 1]
};

enum class OpKind { Host, Kernel, Copy, Memset, Sync, Record, Wait, Malloc, Free, Nccl, ForkWorkers, Repeat };
enum class CopyDirection { H2D, D2H, D2D };
enum class HostMemory { Pinned, Pageable };
enum class SyncKind { Device, Stream, Event, Item };
enum class NcclKind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, SendRecv };

// Stream index 0 is the legacy default stream; i >= 1 is Scenario::streams[i - 1].
struct Op {
  OpKind kind = OpKind::Host;
  std::string path;                // JSON path, for messages at run time
  std::string label;               // Host
  double duration_us = 0;          // Host, ForkWorkers
  double jitter_us = 0;            // Host
  int kernel = -1;                 // Kernel: index into Scenario::kernels
  LaunchEntry launch = LaunchEntry::Chevron;  // Kernel (the op's own or the kernel's)
  int64_t count = 1;               // Kernel, Copy, Memset, Nccl, Malloc (buffers), Free (buffers), Repeat
  int stream = 0;                  // Kernel, Copy (async), Memset (async), Sync (stream, item), Record, Wait, Nccl
  int event = -1;                  // Record, Wait, Sync (event)
  CopyDirection direction = CopyDirection::H2D;
  HostMemory memory = HostMemory::Pinned;
  bool async = false;              // Copy, Memset
  uint64_t bytes = 0;              // Copy, Memset, Sync (item), Malloc, Nccl
  SyncKind sync = SyncKind::Device;
  NcclKind nccl = NcclKind::AllReduce;
  int root = 0;                    // Nccl broadcast / reduce
  int64_t workers = 0;             // ForkWorkers
  bool wait = true;                // ForkWorkers
  int64_t from_step = 0;           // ops in step lists run at steps [from_step, until_step) only,
  int64_t until_step = INT64_MAX;  // and there at every `every`-th step counted from from_step
  int64_t every = 1;
  std::vector<Op> body;            // Repeat
};

struct ThreadPlan {
  std::string name;
  std::vector<Op> ops;
};

// Work the main thread does once: the warm-up before step 0, or a recompile at a step.
struct Phase {
  int64_t at_step = -1;          // -1 for the warm-up
  std::vector<int> load;         // kernels first registered here (a new module)
  std::vector<Op> ops;
};

struct RankOverride {
  int rank = 0;
  double host_scale = 1.0;
};

struct Expectation {
  std::optional<std::string> dominant_cause;
  std::optional<int> rank;  // judge one rank instead of the sum over all
  std::optional<double> idle_fraction_min;
  std::optional<double> idle_fraction_max;
  std::optional<double> after_sync_fraction_min;  // share of idle time in gaps that follow a sync
  std::optional<std::string> dominant_host_label;  // the host work most host_cpu time fell in
};

struct Scenario {
  std::string file;  // as given on the command line
  int format = kScenarioFormat;
  std::string name;
  std::string description;
  uint64_t seed = 1;
  int processes = 1;
  double launch_threshold_us = 30;
  SimDeviceConfig device{};  // zero fields keep the simulator's defaults
  std::vector<KernelDef> kernels;
  std::vector<std::string> streams;  // named streams, created non-blocking
  std::vector<std::string> events;
  std::vector<RankOverride> rank_overrides;
  std::optional<Phase> warmup;
  int64_t steps = 0;
  std::vector<ThreadPlan> threads;   // threads[0] runs on the main thread
  std::vector<Phase> recompiles;
  Expectation expect;

  // Sizes of the buffers the run needs, found while validating.
  uint64_t max_device_bytes = 0;
  uint64_t max_pinned_bytes = 0;
  uint64_t max_pageable_bytes = 0;
  bool uses_nccl = false;

  double host_scale(int rank) const;
};

// Whether a step-list op runs at `step` (from_step, until_step, every).
inline bool runs_at_step(const Op& op, int64_t step) {
  return step >= op.from_step && step < op.until_step && (step - op.from_step) % op.every == 0;
}

// Reads and validates a scenario file. Throws InputError with a one-line message (without the
// file name, which the caller adds).
Scenario load_scenario(const std::string& file);
// The same from text already read.
Scenario parse_scenario(const std::string& text, const std::string& file);

}  // namespace gapwatch_sim
