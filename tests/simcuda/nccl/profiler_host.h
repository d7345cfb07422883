// profiler_host.h: the simulated libnccl's side of the NCCL profiler plugin interface: finding and
// loading a plugin as NCCL does, one context per communicator, and the events NCCL emits around
// its API calls and the tasks it enqueues.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <nccl.h>

namespace simnccl {

// One communicator's plugin context; inert (every call a no-op) when no plugin is loaded or its
// init failed.
struct ProfilerComm {
  void* context = nullptr;
  int mask = 0;
  int rank = 0;
  bool live = false;
};

// What an event describes; the fields each event type does not use are ignored.
struct ProfilerOp {
  const char* func;      // NCCL's function name: "AllReduce", "Send", ...
  size_t count;
  ncclDataType_t datatype;
  int root_or_peer;
  const void* send_buff;
  void* recv_buff;
  void* stream;
  uint64_t seq;
  bool p2p;
};

// Loads the plugin on the first call in the process (NCCL_PROFILER_PLUGIN; `none` disables it)
// and calls its init for a new communicator.
void profiler_init_comm(ProfilerComm& pc, uint64_t comm_id, const char* comm_name, int nranks, int rank);
void profiler_finalize_comm(ProfilerComm& pc);

// API-level event (v5+: CollApi, P2pApi): started at the call's entry, stopped at its return.
void* profiler_api_start(ProfilerComm& pc, const ProfilerOp& op);
void profiler_api_stop(ProfilerComm& pc, void* handle);

// A task as NCCL enqueues it (Coll or P2p; v4 inside a Group event, v5+ child of its API event),
// then the kernel launch (v5+ KernelLaunch). Stopped once enqueued, not when it finished.
void* profiler_task_start(ProfilerComm& pc, const ProfilerOp& op, void* api_parent);
void profiler_task_stop(ProfilerComm& pc, void* handle);
void* profiler_group_start(ProfilerComm& pc);
void profiler_group_stop(ProfilerComm& pc, void* handle);
void* profiler_launch_start(ProfilerComm& pc, void* stream, void* parent);
void profiler_launch_stop(ProfilerComm& pc, void* handle);

// The version of the interface in use, 0 when none.
int profiler_version();

}  // namespace simnccl
