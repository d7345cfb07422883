// Streams and events through the driver API, on the virtual device's streams and event markers
// (virtual_device.cpp), exactly as the runtime uses them: a stream's work runs in order, the legacy
// stream orders with blocking streams, an event record is a marker op, cuStreamWaitEvent queues a
// marker that waits for the event's. The sync calls spend their API time, really block until the
// device time they wait for, and leave a CUPTI synchronization record.
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "driver_internal.h"

namespace simcuda::driver {

namespace {

// What the virtual device does not keep about a driver-created stream.
struct StreamInfo {
  CUcontext ctx = nullptr;
  int priority = 0;
};
std::mutex g_streams_mu;
std::unordered_map<Stream*, StreamInfo>& stream_info() {
  static auto* m = new std::unordered_map<Stream*, StreamInfo>;
  return *m;
}

Event* as_event(CUevent e) { return reinterpret_cast<Event*>(e); }

CUresult create(CUstream* out, unsigned flags, int priority) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx = current_context();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  Stream* s = create_stream(current_device(), flags);
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    stream_info()[s] = StreamInfo{ctx, std::clamp(priority, -5, 0)};  // clamped to the range, as documented
  }
  *out = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult record(ApiScope& s, CUevent event, CUstream handle) {
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = stream_of(handle);
  s.set_stream(stream_id(stream));
  OpRequest r;
  r.kind = SIM_OP_MARKER;
  r.stream = stream;
  r.correlation_id = s.correlation_id();
  int64_t op = enqueue(r);
  record_event(as_event(event), op);
  s.set_op(op);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

extern "C" {

// ---- streams -------------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuStreamCreate(CUstream* out, unsigned int flags) {
  cuStreamCreate_params params{out, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamCreate, "cuStreamCreate", SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return create(out, flags, 0); });
}

SIMCUDA_EXPORT CUresult cuStreamCreateWithPriority(CUstream* out, unsigned int flags, int priority) {
  cuStreamCreateWithPriority_params params{out, flags, priority};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority, "cuStreamCreateWithPriority", SIM_CALL_OTHER,
                &params, [&](ApiScope&) { return create(out, flags, priority); });
}

SIMCUDA_EXPORT CUresult cuStreamDestroy(CUstream handle) {  // cuStreamDestroy_v2
  cuStreamDestroy_v2_params params{handle};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2, "cuStreamDestroy_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!handle || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD)
                    return CUDA_ERROR_INVALID_HANDLE;
                  // Work already queued still runs, and the call does not wait for it (documented).
                  destroy_stream(reinterpret_cast<Stream*>(handle));
                  std::lock_guard<std::mutex> lock(g_streams_mu);
                  stream_info().erase(reinterpret_cast<Stream*>(handle));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamQuery(CUstream handle) {
  cuStreamQuery_params params{handle};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, "cuStreamQuery", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  return stream_done(stream_of(handle)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
                });
}

SIMCUDA_EXPORT CUresult cuStreamSynchronize(CUstream handle) {
  cuStreamSynchronize_params params{handle};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize", SIM_CALL_STREAM_SYNC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  uint64_t enter = now_ns();
                  Stream* stream = stream_of(handle);
                  s.set_stream(stream_id(stream));
                  spend(config().sync_api_ns);
                  s.set_blocked(wait_stream(stream));
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, enter, stream, nullptr);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamWaitEvent(CUstream handle, CUevent event, unsigned int flags) {
  cuStreamWaitEvent_params params{handle, event, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, "cuStreamWaitEvent", SIM_CALL_STREAM_WAIT_EVENT,
                &params, [&](ApiScope& s) -> CUresult {
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  if (!event) return CUDA_ERROR_INVALID_HANDLE;
                  if (flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
                  uint64_t enter = now_ns();
                  Stream* stream = stream_of(handle);
                  s.set_stream(stream_id(stream));
                  OpRequest r;
                  r.kind = SIM_OP_MARKER;
                  r.stream = stream;
                  r.correlation_id = s.correlation_id();
                  r.wait_event = as_event(event);
                  s.set_op(enqueue(r));
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, enter, stream, as_event(event));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamGetId(CUstream handle, unsigned long long* id) {
  cuStreamGetId_params params{handle, id};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamGetId, "cuStreamGetId", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!id) return CUDA_ERROR_INVALID_VALUE;
                  *id = stream_id(stream_of(handle));  // the id CUPTI's records carry
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamGetFlags(CUstream handle, unsigned int* flags) {
  cuStreamGetFlags_params params{handle, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags, "cuStreamGetFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!flags) return CUDA_ERROR_INVALID_VALUE;
                  *flags = stream_flags(stream_of(handle));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamGetPriority(CUstream handle, int* priority) {
  cuStreamGetPriority_params params{handle, priority};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority, "cuStreamGetPriority", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!priority) return CUDA_ERROR_INVALID_VALUE;
                  std::lock_guard<std::mutex> lock(g_streams_mu);
                  auto it = stream_info().find(stream_of(handle));
                  *priority = it == stream_info().end() ? 0 : it->second.priority;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamGetCtx(CUstream handle, CUcontext* pctx) {
  cuStreamGetCtx_params params{handle, pctx};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx, "cuStreamGetCtx", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
                  Stream* s = stream_of(handle);
                  {
                    std::lock_guard<std::mutex> lock(g_streams_mu);
                    auto it = stream_info().find(s);
                    if (it != stream_info().end()) {
                      *pctx = it->second.ctx;
                      return CUDA_SUCCESS;
                    }
                  }
                  // The NULL stream and runtime-made streams belong to the device's primary context
                  // (the NULL stream: the current context).
                  if (!handle || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
                    CUcontext c = current_context();
                    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
                    *pctx = c;
                  } else {
                    *pctx = primary_context(stream_device(s));
                  }
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuStreamGetDevice(CUstream handle, CUdevice* device) {
  cuStreamGetDevice_params params{handle, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuStreamGetDevice, "cuStreamGetDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!device) return CUDA_ERROR_INVALID_VALUE;
                  if (!handle || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
                    CUcontext c = current_context();
                    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
                    *device = context_device(c);
                  } else {
                    *device = stream_device(stream_of(handle));
                  }
                  return CUDA_SUCCESS;
                });
}

// ---- events --------------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuEventCreate(CUevent* out, unsigned int flags) {
  cuEventCreate_params params{out, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventCreate, "cuEventCreate", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!out) return CUDA_ERROR_INVALID_VALUE;
                  constexpr unsigned kKnown =
                      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
                  if (flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
                  if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
                    return CUDA_ERROR_INVALID_VALUE;  // interprocess events must disable timing
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  *out = reinterpret_cast<CUevent>(create_event(current_device(), flags));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuEventDestroy(CUevent event) {  // cuEventDestroy_v2
  cuEventDestroy_v2_params params{event};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2, "cuEventDestroy_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!event) return CUDA_ERROR_INVALID_HANDLE;
                  destroy_event(as_event(event));
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuEventRecord(CUevent event, CUstream handle) {
  cuEventRecord_params params{event, handle};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, "cuEventRecord", SIM_CALL_EVENT_RECORD, &params,
                [&](ApiScope& s) { return record(s, event, handle); });
}

SIMCUDA_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream handle, unsigned int flags) {
  cuEventRecordWithFlags_params params{event, handle, flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, "cuEventRecordWithFlags", SIM_CALL_EVENT_RECORD,
                &params, [&](ApiScope& s) -> CUresult {
                  if (flags & ~unsigned(CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
                  return record(s, event, handle);
                });
}

SIMCUDA_EXPORT CUresult cuEventQuery(CUevent event) {
  cuEventQuery_params params{event};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventQuery, "cuEventQuery", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!event) return CUDA_ERROR_INVALID_HANDLE;
                  return op_done(event_op(as_event(event))) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
                });
}

SIMCUDA_EXPORT CUresult cuEventSynchronize(CUevent event) {
  cuEventSynchronize_params params{event};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize", SIM_CALL_EVENT_SYNC, &params,
                [&](ApiScope& s) -> CUresult {
                  if (!event) return CUDA_ERROR_INVALID_HANDLE;
                  uint64_t enter = now_ns();
                  spend(config().sync_api_ns);
                  int64_t op = event_op(as_event(event));
                  s.set_blocked(op >= 0 ? wait_op(op) : 0);  // never recorded: returns at once
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, enter, nullptr, as_event(event));
                  return CUDA_SUCCESS;
                });
}

// CUDA 13's cuEventElapsedTime is cuEventElapsedTime_v2 (same signature as the old one).
SIMCUDA_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  cuEventElapsedTime_v2_params params{ms, start, end};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime_v2, "cuEventElapsedTime_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!ms) return CUDA_ERROR_INVALID_VALUE;
                  if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
                  if ((event_flags(as_event(start)) | event_flags(as_event(end))) & CU_EVENT_DISABLE_TIMING)
                    return CUDA_ERROR_INVALID_HANDLE;
                  int64_t a = event_op(as_event(start)), b = event_op(as_event(end));
                  if (a < 0 || b < 0) return CUDA_ERROR_INVALID_HANDLE;  // not recorded
                  if (!op_done(a) || !op_done(b)) return CUDA_ERROR_NOT_READY;
                  uint64_t as = 0, ae = 0, bs = 0, be = 0;
                  if (!op_interval(a, &as, &ae) || !op_interval(b, &bs, &be)) return CUDA_ERROR_NOT_READY;
                  *ms = float((double(be) - double(ae)) / 1e6);
                  return CUDA_SUCCESS;
                });
}

}  // extern "C"
