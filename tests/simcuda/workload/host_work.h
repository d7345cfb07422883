// host_work.h: the host side of a training step: CPU time outside CUDA, and DataLoader-like workers.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace gapwatch_sim {

uint64_t monotonic_ns();

// Keeps the calling thread busy for `ns` without entering CUDA. Short work spins (it is CPU time);
// past a few milliseconds most of it sleeps, so several ranks and workers fit on a two-core CI
// machine, and only the last stretch spins to end on time.
void do_host_work(uint64_t ns);

// Forks `count` children that each do `ns` of CPU work and exit, never touching CUDA, as a
// DataLoader's worker processes do. Returns their pids.
std::vector<pid_t> fork_workers(int64_t count, uint64_t ns);

// Waits for the children (all of them, or only those already finished); returns false if one
// failed. Reaped pids are removed from `pids`.
bool reap_workers(std::vector<pid_t>& pids, bool block);

}  // namespace gapwatch_sim
