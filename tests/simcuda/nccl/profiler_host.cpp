// The simulated libnccl's profiler plugin host. As NCCL 2.28 does: NCCL_PROFILER_PLUGIN=none
// disables plugins; a value is dlopened as given, then as libnccl-profiler-<value>.so; unset, the
// default libnccl-profiler.so. The newest struct the library exports wins, ncclProfiler_v6 down to
// v1; this simulator drives v4 to v6 and says so (NCCL_DEBUG=INFO) when it finds only older ones.
// Loaded once per process, at the first communicator's init, as NCCL does.
// init runs once per communicator; the plugin's activation mask decides which events it gets.
#include "profiler_host.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "../../../interpose/nccl_profiler_api.h"

namespace simnccl {
namespace {

namespace np = gapwatch::nccl_profiler;

struct Loaded {
  int version = 0;
  const np::ProfilerV4* v4 = nullptr;
  const np::ProfilerV6* v6 = nullptr;  // v5 and v6
};

bool debug_info() {
  const char* d = getenv("NCCL_DEBUG");
  return d && (!strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE"));
}

void info(const char* fmt, ...) {
  if (!debug_info()) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "simnccl:%d NCCL INFO %s\n", int(getpid()), line);
}

void logger(int, unsigned long, const char*, int, const char* fmt, ...) {
  if (!debug_info()) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "simnccl:%d NCCL INFO PROFILER/Plugin: ", int(getpid()));
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

Loaded load() {
  Loaded l;
  const char* env = getenv("NCCL_PROFILER_PLUGIN");
  if (env && !strcasecmp(env, "none")) {
    info("PROFILER/Plugin: NCCL_PROFILER_PLUGIN=none, no profiler plugin");
    return l;
  }
  void* lib = nullptr;
  std::string tried;
  if (env && *env) {
    lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    tried = env;
    if (!lib) {
      std::string named = std::string("libnccl-profiler-") + env + ".so";
      lib = dlopen(named.c_str(), RTLD_NOW | RTLD_LOCAL);
      tried += " " + named;
    }
  } else {
    tried = "libnccl-profiler.so";
    lib = dlopen(tried.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    info("PROFILER/Plugin: could not find:%s%s", tried.empty() ? "" : " ", tried.c_str());
    return l;
  }
  // GAPWATCH_SIM_NCCL_PROFILER_MAX=N plays an older NCCL, whose newest interface is vN (2.27: 4).
  int newest = 6;
  if (const char* max = getenv("GAPWATCH_SIM_NCCL_PROFILER_MAX")) newest = atoi(max) >= 1 && atoi(max) <= 6 ? atoi(max) : 6;
  for (int v = newest; v >= 1; --v) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
    void* s = dlsym(lib, sym);
    if (!s) continue;
    if (v < 4) {
      info("PROFILER/Plugin: %s found, but this simulated NCCL drives v4 to v6 only: plugin disabled", sym);
      return l;
    }
    l.version = v;
    if (v == 4) l.v4 = static_cast<const np::ProfilerV4*>(s);
    else l.v6 = static_cast<const np::ProfilerV6*>(s);
    const char* name = v == 4 ? l.v4->name : l.v6->name;
    info("PROFILER/Plugin: Loaded %s (v%d)", name ? name : "(unnamed)", v);
    return l;
  }
  info("PROFILER/Plugin: no ncclProfiler_v6..v1 symbol in %s: plugin disabled", tried.c_str());
  return l;
}

const Loaded& plugin() {
  static Loaded l = load();
  return l;
}

const char* type_string(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return "ncclUint8";
  }
}

// Starts one event if the plugin asked for its type. Descriptors live on the caller's stack, as
// NCCL's do: a plugin must copy what it keeps.
void* start(ProfilerComm& pc, np::EventDescrV6& d6, np::EventDescrV4* d4) {
  if (!pc.live || !(uint64_t(pc.mask) & d6.type)) return nullptr;
  void* handle = nullptr;
  const Loaded& l = plugin();
  if (l.v6) {
    d6.rank = pc.rank;
    l.v6->startEvent(pc.context, &handle, &d6);
  } else if (l.v4 && d4) {
    d4->rank = pc.rank;
    l.v4->startEvent(pc.context, &handle, d4);
  }
  return handle;
}

void stop(ProfilerComm& pc, void* handle) {
  if (!pc.live || !handle) return;
  const Loaded& l = plugin();
  if (l.v6) l.v6->stopEvent(handle);
  else if (l.v4) l.v4->stopEvent(handle);
}

}  // namespace

int profiler_version() { return plugin().version; }

void profiler_init_comm(ProfilerComm& pc, uint64_t comm_id, const char* comm_name, int nranks, int rank) {
  pc = ProfilerComm{};
  const Loaded& l = plugin();
  if (!l.version) return;
  pc.rank = rank;
  ncclResult_t r = l.v6 ? l.v6->init(&pc.context, comm_id, &pc.mask, comm_name, 1, nranks, rank, logger)
                        : l.v4->init(&pc.context, &pc.mask, comm_name, comm_id, 1, nranks, rank, logger);
  // As in NCCL: an init that fails leaves this communicator unprofiled.
  pc.live = r == ncclSuccess;
  if (!pc.live) info("PROFILER/Plugin: init returned %d, communicator not profiled", int(r));
}

void profiler_finalize_comm(ProfilerComm& pc) {
  if (!pc.live) return;
  const Loaded& l = plugin();
  if (l.v6) l.v6->finalize(pc.context);
  else l.v4->finalize(pc.context);
  pc.live = false;
}

void* profiler_api_start(ProfilerComm& pc, const ProfilerOp& op) {
  if (plugin().version < 5) return nullptr;  // API events are v5+
  np::EventDescrV6 d{};
  d.type = op.p2p ? np::kP2pApi : np::kCollApi;
  if (op.p2p) d.p2pApi = {op.func, op.count, type_string(op.datatype), op.stream, false};
  else d.collApi = {op.func, op.count, type_string(op.datatype), op.root_or_peer, op.stream, false};
  return start(pc, d, nullptr);
}

void profiler_api_stop(ProfilerComm& pc, void* handle) { stop(pc, handle); }

void* profiler_task_start(ProfilerComm& pc, const ProfilerOp& op, void* parent) {
  np::EventDescrV6 d6{};
  np::EventDescrV4 d4{};
  d6.type = op.p2p ? np::kP2p : np::kColl;
  d4.type = uint8_t(d6.type);
  d6.parentObj = d4.parentObj = parent;
  if (op.p2p) {
    d4.p2p = {op.func, op.recv_buff, type_string(op.datatype), op.count, op.root_or_peer, 1};
    d6.p2p = {d4.p2p, nullptr};
  } else {
    d4.coll = {op.seq, op.func, op.send_buff, op.recv_buff, op.count, op.root_or_peer, type_string(op.datatype),
               2, 16, "RING", "LL"};
    d6.coll = {d4.coll, nullptr};
  }
  return start(pc, d6, &d4);
}

void profiler_task_stop(ProfilerComm& pc, void* handle) { stop(pc, handle); }

void* profiler_group_start(ProfilerComm& pc) {
  np::EventDescrV6 d6{};
  np::EventDescrV4 d4{};
  d6.type = np::kGroup;
  d4.type = uint8_t(np::kGroup);
  return start(pc, d6, &d4);
}

void profiler_group_stop(ProfilerComm& pc, void* handle) { stop(pc, handle); }

void* profiler_launch_start(ProfilerComm& pc, void* stream, void* parent) {
  if (plugin().version < 5) return nullptr;
  np::EventDescrV6 d{};
  d.type = np::kKernelLaunch;
  d.parentObj = parent;
  d.kernelLaunch.stream = stream;
  return start(pc, d, nullptr);
}

void profiler_launch_stop(ProfilerComm& pc, void* handle) { stop(pc, handle); }

}  // namespace simnccl
