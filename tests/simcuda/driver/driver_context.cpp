// Contexts through the driver API: primary contexts (cuDevicePrimaryCtx*), contexts of their own
// (cuCtxCreate_v4, CUDA 13's signature), and each thread's context stack (cuCtxSetCurrent,
// cuCtxPushCurrent_v2, cuCtxPopCurrent_v2).
//
// A context is a device plus a CUPTI context id (CUpti_CallbackData::contextUid, resource callbacks
// CONTEXT_CREATED / CONTEXT_DESTROY_STARTING). Primary contexts are the ones the runtime uses
// (primary_context()); one made by cuCtxCreate gets its own id. Device work is per device in the
// simulator, so two contexts on one device share its streams' ordering (the legacy stream is per
// device), and a device op's CUPTI record names the device's primary context.
#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "driver_internal.h"

namespace simcuda {
namespace {

// The thread's stack; `set` becomes true once the thread chose a context itself.
struct ThreadContexts {
  std::vector<CUcontext> stack;
  bool set = false;
};
thread_local ThreadContexts t_ctx;

struct PrimaryState {
  int retains = 0;
  unsigned flags = 0;
};
std::mutex g_primary_mu;
PrimaryState g_primary[64];

void make_current(CUcontext ctx) {
  int d = context_device(ctx);
  if (d >= 0) set_current_device(d);
}

}  // namespace

CUcontext current_context() {
  if (t_ctx.set) {
    if (t_ctx.stack.empty()) return nullptr;
    // Every entry was validated when it was pushed; only whether it is still alive can change.
    CUcontext top = t_ctx.stack.back();
    return context_live(top) ? top : nullptr;
  }
  int d = current_device();
  return primary_context_exists(d) ? primary_context(d) : nullptr;
}

}  // namespace simcuda

namespace simcuda::driver {

void sync_record(ApiScope& scope, CUpti_ActivitySynchronizationType type, uint64_t enter, Stream* stream,
                 const Event* event) {
  SyncRecord r{};
  r.type = type;
  r.start_ns = enter;
  r.end_ns = now_ns();
  r.correlation_id = scope.correlation_id();
  r.context_id = uint32_t(current_device() + 1);
  r.stream_id = stream ? uint32_t(stream_id(stream)) : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  r.event_id = event ? event_id(event) : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  add_sync_record(r);
}

}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

// cuCtxCreate's work, whichever ABI was called: a new context, pushed onto the calling thread's
// stack and made current.
static CUresult create_and_push(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUcontext ctx = create_context(dev, flags);
  if (!t_ctx.set) {
    t_ctx.set = true;
    int d = current_device();
    if (primary_context_exists(d)) t_ctx.stack.push_back(primary_context(d));
  }
  t_ctx.stack.push_back(ctx);
  make_current(ctx);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

extern "C" {

SIMCUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  cuCtxGetCurrent_params params{ctx};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
                  *ctx = current_context();
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  cuCtxSetCurrent_params params{ctx};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent, "cuCtxSetCurrent", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (ctx && !is_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
                  // Replaces the top of the stack (an empty stack gets one entry); NULL unbinds.
                  t_ctx.set = true;
                  if (!ctx) {
                    if (!t_ctx.stack.empty()) t_ctx.stack.pop_back();
                    return CUDA_SUCCESS;
                  }
                  if (t_ctx.stack.empty()) t_ctx.stack.push_back(ctx);
                  else t_ctx.stack.back() = ctx;
                  make_current(ctx);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {  // cuCtxPushCurrent_v2
  cuCtxPushCurrent_v2_params params{ctx};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!ctx || !is_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!t_ctx.set) {  // the implicit (runtime) context stays below the pushed one
                    t_ctx.set = true;
                    int d = current_device();
                    if (primary_context_exists(d)) t_ctx.stack.push_back(primary_context(d));
                  }
                  t_ctx.stack.push_back(ctx);
                  make_current(ctx);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxPopCurrent(CUcontext* out) {  // cuCtxPopCurrent_v2
  cuCtxPopCurrent_v2_params params{out};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  CUcontext cur = current_context();
                  if (!cur) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!t_ctx.set) {
                    t_ctx.set = true;  // popping the implicit context leaves none
                  } else {
                    t_ctx.stack.pop_back();
                  }
                  if (out) *out = cur;
                  if (CUcontext next = current_context()) make_current(next);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxCreate(CUcontext* pctx, CUctxCreateParams* create_params, unsigned int flags,
                                    CUdevice dev) {  // cuCtxCreate_v4
  cuCtxCreate_v4_params params{pctx, create_params, flags, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4, "cuCtxCreate_v4", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (create_params && create_params->execAffinityParams && create_params->cigParams)
                    return CUDA_ERROR_INVALID_VALUE;  // the two are mutually exclusive
                  return create_and_push(pctx, flags, dev);
                });
}

// The older ABIs of cuCtxCreate, still exported by the real driver for binaries built against
// older headers (CUDA 12's cuda.h maps cuCtxCreate to _v2; _v3 adds execution affinity, which the
// simulated device ignores). CUDA 13's cuda.h declares them only for the driver's own build.
SIMCUDA_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  cuCtxCreate_v2_params params{pctx, flags, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2, "cuCtxCreate_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return create_and_push(pctx, flags, dev); });
}

SIMCUDA_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* params_array, int num_params,
                                       unsigned int flags, CUdevice dev) {
  cuCtxCreate_v3_params params{pctx, params_array, num_params, flags, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3, "cuCtxCreate_v3", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (num_params < 0 || (num_params > 0 && !params_array)) return CUDA_ERROR_INVALID_VALUE;
                  return create_and_push(pctx, flags, dev);
                });
}

SIMCUDA_EXPORT CUresult cuCtxDestroy(CUcontext ctx) {  // cuCtxDestroy_v2
  cuCtxDestroy_v2_params params{ctx};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2, "cuCtxDestroy_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!ctx || !is_context(ctx) || is_primary_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
                  wait_device(context_device(ctx));  // its work finishes first
                  destroy_context(ctx);
                  // Gone from this thread's stack (other threads see it as invalid from now on).
                  auto& st = t_ctx.stack;
                  for (size_t i = st.size(); i-- > 0;)
                    if (st[i] == ctx) st.erase(st.begin() + long(i));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  cuCtxGetDevice_params params{device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, "cuCtxGetDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!device) return CUDA_ERROR_INVALID_VALUE;
                  CUcontext ctx = current_context();
                  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
                  *device = context_device(ctx);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  cuCtxGetApiVersion_params params{ctx, version};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetApiVersion, "cuCtxGetApiVersion", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!version) return CUDA_ERROR_INVALID_VALUE;
                  CUcontext c = ctx ? ctx : current_context();
                  if (!c || !is_context(c)) return CUDA_ERROR_INVALID_CONTEXT;
                  *version = 3020;  // the context API version every context since CUDA 3.2 reports
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  cuCtxGetId_params params{ctx, id};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetId, "cuCtxGetId", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!id) return CUDA_ERROR_INVALID_VALUE;
                  CUcontext c = ctx ? ctx : current_context();
                  if (!c || !is_context(c)) return CUDA_ERROR_INVALID_CONTEXT;
                  *id = context_uid(c);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  cuCtxGetFlags_params params{flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetFlags, "cuCtxGetFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!flags) return CUDA_ERROR_INVALID_VALUE;
                  CUcontext c = current_context();
                  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
                  *flags = context_flags(c);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxSynchronize(void) {
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", SIM_CALL_DEVICE_SYNC, nullptr,
                [&](ApiScope& s) -> CUresult {
                  CUcontext c = current_context();
                  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
                  uint64_t enter = now_ns();
                  spend(config().sync_api_ns);
                  s.set_blocked(wait_device(context_device(c)));
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, enter, nullptr, nullptr);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  cuCtxGetStreamPriorityRange_params params{least, greatest};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> CUresult {
                  if (least) *least = 0;  // as on Hopper: 0 is the lowest priority, -5 the highest
                  if (greatest) *greatest = -5;
                  return CUDA_SUCCESS;
                });
}

// ---- primary contexts ----------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  cuDevicePrimaryCtxRetain_params params{pctx, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  *pctx = primary_context(dev);
                  std::lock_guard<std::mutex> lock(g_primary_mu);
                  ++g_primary[dev].retains;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {  // _v2
  cuDevicePrimaryCtxRelease_v2_params params{dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> CUresult {
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  std::lock_guard<std::mutex> lock(g_primary_mu);
                  if (g_primary[dev].retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
                  // At zero the real driver destroys it; the simulator keeps it (the runtime may
                  // still hold it implicitly), so records keep naming one context per device.
                  --g_primary[dev].retains;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {  // _v2
  cuDevicePrimaryCtxReset_v2_params params{dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset_v2", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  reset_device(dev);  // what cudaDeviceReset does: sync, DESTROY_STARTING
                  std::lock_guard<std::mutex> lock(g_primary_mu);
                  g_primary[dev] = PrimaryState{};
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  cuDevicePrimaryCtxGetState_params params{dev, flags, active};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  std::lock_guard<std::mutex> lock(g_primary_mu);
                  *flags = g_primary[dev].flags;
                  *active = primary_context_exists(dev) ? 1 : 0;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {  // _v2
  cuDevicePrimaryCtxSetFlags_v2_params params{dev, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxSetFlags_v2, "cuDevicePrimaryCtxSetFlags_v2",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> CUresult {
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  constexpr unsigned kKnown = CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE |
                                              CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;
                  if (flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
                  std::lock_guard<std::mutex> lock(g_primary_mu);
                  g_primary[dev].flags = flags;
                  if (primary_context_exists(dev)) set_context_flags(primary_context(dev), flags);
                  return CUDA_SUCCESS;
                });
}

}  // extern "C"

// ---- limits, cache configuration, peer access ------------------------------------------------------
namespace {

struct ContextSettings {
  size_t limits[10] = {1024, 1048576, 8388608, 2, 2048, 64, 0, 0, 0, 1};  // by CUlimit, the defaults
  CUfunc_cache cache = CU_FUNC_CACHE_PREFER_NONE;
  std::vector<std::pair<CUcontext, CUcontext>> peers;  // (context, peer) with access enabled
};
std::mutex g_settings_mu;
ContextSettings g_settings;  // one set for the process: limits are per context, contexts share a device here

}  // namespace

extern "C" {

SIMCUDA_EXPORT CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  cuCtxGetLimit_params params{value, limit};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetLimit, "cuCtxGetLimit", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!value) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (unsigned(limit) >= 10) return CUDA_ERROR_UNSUPPORTED_LIMIT;
                  std::lock_guard<std::mutex> lock(g_settings_mu);
                  *value = g_settings.limits[limit];
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  cuCtxSetLimit_params params{limit, value};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxSetLimit, "cuCtxSetLimit", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (unsigned(limit) >= 10) return CUDA_ERROR_UNSUPPORTED_LIMIT;
                  if (limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED) return CUDA_ERROR_INVALID_VALUE;
                  if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128) return CUDA_ERROR_INVALID_VALUE;
                  bool valid = false;
                  if (limit == CU_LIMIT_PERSISTING_L2_CACHE_SIZE &&
                      value > size_t(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, &valid)))
                    return CUDA_ERROR_INVALID_VALUE;
                  std::lock_guard<std::mutex> lock(g_settings_mu);
                  g_settings.limits[limit] = value;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache* config) {
  cuCtxGetCacheConfig_params params{config};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCacheConfig, "cuCtxGetCacheConfig", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!config) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  std::lock_guard<std::mutex> lock(g_settings_mu);
                  *config = g_settings.cache;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  cuCtxSetCacheConfig_params params{config};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxSetCacheConfig, "cuCtxSetCacheConfig", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (unsigned(config) > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
                  std::lock_guard<std::mutex> lock(g_settings_mu);
                  g_settings.cache = config;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceCanAccessPeer(int* can_access, CUdevice dev, CUdevice peer) {
  cuDeviceCanAccessPeer_params params{can_access, dev, peer};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!can_access) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev) || !valid_device(peer)) return CUDA_ERROR_INVALID_DEVICE;
                  *can_access = dev != peer ? 1 : 0;  // NVLink between every pair, as in an HGX H200
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  cuCtxEnablePeerAccess_params params{peer, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (flags) return CUDA_ERROR_INVALID_VALUE;
                  CUcontext cur = current_context();
                  if (!cur) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!peer || !is_context(peer)) return CUDA_ERROR_INVALID_CONTEXT;
                  if (context_device(peer) == context_device(cur)) return CUDA_ERROR_INVALID_DEVICE;
                  std::lock_guard<std::mutex> lock(g_settings_mu);
                  auto& v = g_settings.peers;
                  if (std::find(v.begin(), v.end(), std::make_pair(cur, peer)) != v.end())
                    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
                  v.emplace_back(cur, peer);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  cuCtxDisablePeerAccess_params params{peer};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuCtxDisablePeerAccess, "cuCtxDisablePeerAccess", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  CUcontext cur = current_context();
                  if (!cur) return CUDA_ERROR_INVALID_CONTEXT;
                  std::lock_guard<std::mutex> lock(g_settings_mu);
                  auto& v = g_settings.peers;
                  auto it = std::find(v.begin(), v.end(), std::make_pair(cur, peer));
                  if (it == v.end()) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
                  v.erase(it);
                  return CUDA_SUCCESS;
                });
}

}  // extern "C"
